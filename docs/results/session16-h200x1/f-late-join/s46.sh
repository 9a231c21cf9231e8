set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 16, call 10 on one H200 + 16-core CPU: first calls, before (1724c46) and after
# (6648d40 + slots no larger than half the largest transfer): a GPU ready no longer waits
# 100 ms for the CPU compiling its kernel. Each kernel's first call on every device, then on
# the GPU alone, the builds alternated twice.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/it6; o=$OUT/r; mkdir -p $o
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
su() { local name=$1 bin=$2; shift 2; local t0=$(date +%s); RUST_LOG=hetdsl=debug timeout 150 $b/$bin --size paper --balancers default --energy off --reps 1 --json $o/$name.json "$@" > $o/$name.txt 2> $o/$name.err; echo "$name rc $? $(( $(date +%s) - t0 )) s"; sed 's/\x1b\[[0-9;]*m//g' $o/$name.err | grep -E "device set-up|run ended" > $o/$name.phases; rm -f $o/$name.err; grep -E "first call" $o/$name.txt; }
K=binomial,nbody,gaussian,mandelbrot,taylor
for r in 1 2; do
  su all-after$r suite --kernels $K --devices all
  su all-before$r suite-1724c46 --kernels $K --devices all
done
su gpu-after suite --kernels $K --devices 1
grep -E "^[a-z0-9]+ +default" $o/all-after1.txt $o/all-before1.txt | cut -c1-140
tar czf $OUT/s46.tgz -C $OUT r && rm -rf $o
