set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=$OUT
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
# Was the CPU's quarantine after Aho (final run, f2f34fa) caused by pipelining? Aho then Binomial, off / on / off / on.
for p in 0 1 0 1; do
  echo "== HETDSL_PIPELINE=$p"
  timeout 130 env HETDSL_PIPELINE=$p $b/suite --size paper --balancers sigmoid --devices all --reps 3 --settle 1 --energy off --kernels aho,binomial 2>&1 | grep -E "sigmoid|SKIP|quarantin|alone~"
done > $o/quarantine-ab.txt
cat $o/quarantine-ab.txt
