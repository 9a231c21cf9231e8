set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=$OUT
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt
$b/devices >> $o/machine.txt 2>&1
# Per-package cost on a memory-bound kernel: 512 packages, GPU alone and GPU + CPU, pipelining off / on, alternated.
for r in 1 2; do for p in 0 1; do
  echo "== saxpy 2^26 dynamic:512 GPU alone, HETDSL_PIPELINE=$p (round $r)"
  timeout 30 env HETDSL_DEVICES=1 HETDSL_PIPELINE=$p $b/saxpy 67108864 --balancer dynamic:512 --calls 3 2>&1 | grep -E "^call|host overhead|idle|ROI"
  echo "== saxpy 2^26 dynamic:512 all devices, HETDSL_PIPELINE=$p (round $r)"
  timeout 30 env HETDSL_PIPELINE=$p $b/saxpy 67108864 --balancer dynamic:512 --calls 3 2>&1 | grep -E "^call|host overhead|idle|ROI"
done; done > $o/saxpy-dyn.txt
# The default balancer (queues nothing yet): the writes' queue is the only change.
for p in 0 1 0 1; do echo "== saxpy 2^28 default GPU alone, HETDSL_PIPELINE=$p"; timeout 40 env HETDSL_DEVICES=1 HETDSL_PIPELINE=$p $b/saxpy 268435456 --calls 3 2>&1 | grep -E "^call|idle"; done > $o/saxpy-default.txt
# Compute-bound kernels in 256 packages on the GPU alone, off / on.
for p in 0 1; do
  timeout 150 env HETDSL_PIPELINE=$p $b/suite --size paper --balancers dynamic:256 --devices 1 --reps 3 --settle 1 --energy off --kernels binomial,mandelbrot,gaussian,taylor,ray1 --json $o/suite-dyn-p$p.json > $o/suite-dyn-p$p.txt 2>&1
done
cat $o/saxpy-dyn.txt | grep -E "==|idle|host overhead|^call" | sed 's/, set-up.*//'
cat $o/saxpy-default.txt
grep -E "dynamic" $o/suite-dyn-p*.txt
