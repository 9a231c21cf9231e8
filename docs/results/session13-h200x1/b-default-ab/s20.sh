set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=$OUT
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
# The default balancer on every device (GPU + 16-core CPU), pipelining off / on.
for p in 0 1; do
  timeout 280 env HETDSL_PIPELINE=$p $b/suite --size paper --balancers default --devices all --reps 3 --settle 1 --energy off --kernels binomial,gaussian,taylor,nbody,ray1,aho,matvec,saxpy,elementwise --json $o/def-all-p$p.json > $o/def-all-p$p.txt 2>&1
done
grep -E " default |INVESTIGATE|alone" $o/def-all-p*.txt
