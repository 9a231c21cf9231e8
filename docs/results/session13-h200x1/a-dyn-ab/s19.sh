set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=$OUT
{ date -u; nvidia-smi -L; nproc; $b/devices; } > $o/machine.txt 2>&1
# Many packages (dynamic:256) on the GPU alone, pipelining off / on: GPU idle between kernels.
for p in 0 1; do
  timeout 200 env HETDSL_PIPELINE=$p $b/suite --size paper --balancers dynamic:256 --devices 1 --reps 3 --settle 1 --energy off --kernels binomial,mandelbrot,gaussian,taylor,ray1,nbody --json $o/dyn-gpu-p$p.json > $o/dyn-gpu-p$p.txt 2>&1
done
# saxpy in 512 packages and at 2^28 under the default balancer, GPU alone, off / on alternated.
for r in 1 2; do for p in 0 1; do
  echo "== saxpy 2^26 dynamic:512 GPU alone, HETDSL_PIPELINE=$p (round $r)"
  timeout 30 env HETDSL_DEVICES=1 HETDSL_PIPELINE=$p $b/saxpy 67108864 --balancer dynamic:512 --calls 3 2>&1 | grep -E "^call|host overhead|idle"
  echo "== saxpy 2^28 default GPU alone, HETDSL_PIPELINE=$p (round $r)"
  timeout 40 env HETDSL_DEVICES=1 HETDSL_PIPELINE=$p $b/saxpy 268435456 --calls 3 2>&1 | grep -E "^call|idle"
done; done > $o/saxpy.txt
sed 's/, set-up.*//' $o/saxpy.txt
grep -E "dynamic|INVESTIGATE|alone" $o/dyn-gpu-p*.txt
