set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=$OUT
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
# The default balancer on every device (GPU + 16-core CPU), pipelining off / on (binaries of 1b0f06b).
for p in 0 1; do
  timeout 250 env HETDSL_PIPELINE=$p $b/suite --size paper --balancers default --devices all --reps 3 --settle 1 --energy off --kernels binomial,gaussian,taylor,ray1,aho,matvec,saxpy,elementwise --json $o/def-all-p$p.json > $o/def-all-p$p.txt 2>&1
done
for r in 1 2; do for p in 0 1; do
  echo "== saxpy 2^28 default GPU alone, HETDSL_PIPELINE=$p (round $r)"
  timeout 40 env HETDSL_DEVICES=1 HETDSL_PIPELINE=$p $b/saxpy 268435456 --calls 4 2>&1 | grep -E "^call|idle"
done; done > $o/saxpy.txt
sed 's/, set-up.*//' $o/saxpy.txt
grep -E " default |INVESTIGATE|alone: " $o/def-all-p*.txt
