set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=$OUT
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
# Memory-bound kernels, paired rounds, pipelining off / on alternated (binaries of f2f34fa).
for p in 0 1 0 1; do
  echo "== HETDSL_PIPELINE=$p"
  timeout 70 env HETDSL_PIPELINE=$p $b/suite --size paper --balancers default --devices all --reps 3 --settle 3 --paired 5 --energy off --kernels stencil3d,matvec,elementwise,saxpy 2>&1 | grep alternated | sed 's/ on set all, 5 rounds alternated with device 1 alone (median ROI\/run() ms)://; s/(forms.*)//'
done > $o/membound-ab.txt
cat $o/membound-ab.txt
