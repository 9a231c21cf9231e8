set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 37, call 6, two H200s + 32 cores: what the check of a launch's first packages for
# stray writes costs a first call, binaries of b158b6c (suite-old, without it) and ad7af29
# (suite-new: marks read behind the first kernel, the next package queued behind it where only
# outputs are checked), alternated three times over the memory-bound kernels.
if [ "$(nvidia-smi -L | grep -c H200)" -lt 2 ]; then echo "NOT two H200s: nothing run"; nvidia-smi -L; exit 0; fi
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin2; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s173.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1; cat $o/machine.txt
for r in 1 2 3; do for v in old new; do
  timeout 100 $b/suite-$v --size paper --balancers default --devices all --reps 1 --settle 0 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d > $o/first-$v-$r.txt 2>&1
  echo "$v $r rc $? at $(el) s"; grep "first call" $o/first-$v-$r.txt
done; pack; done
