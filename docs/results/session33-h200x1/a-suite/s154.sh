set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 33, call 4, asked for one H200 + 16-core CPU (binaries of bfadce5 in .device/bin):
# every kernel with the default balancer against the honest baseline (the better of the GPU
# alone in one package and under the default balancer), medians of 3 after 3 settling calls;
# then saxpy over 2^28 floats (every device, the GPU alone) and the host's cost per package.
if ! nvidia-smi -L | grep -q H200; then echo "NOT an H200: nothing run"; nvidia-smi -L; exit 0; fi
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 470 $b/suite --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels aho,binomial,gaussian,mandelbrot,nbody,taylor,bm3d,rap,ray1,ray2,reduction,matvec,stencil3d,saxpy,elementwise --json $o/final.json > $o/final.txt 2>&1
echo "suite rc $? at $(el) s"
grep -E "first call|^[a-z0-9]+ +(alone/one|alone/def|default)" $o/final.txt | cut -c1-120
gzip -9 $o/final.json; tar czf $OUT/s154.tgz -C /tmp r
timeout 25 $b/saxpy 268435456 --calls 5 > $o/saxpy-all.txt 2>&1; echo "saxpy all rc $? at $(el) s"
timeout 25 env HETDSL_DEVICES=gpu $b/saxpy 268435456 --calls 5 > $o/saxpy-gpu.txt 2>&1; echo "saxpy gpu rc $? at $(el) s"
grep -E "^call|GB/s|overhead|idle" $o/saxpy-*.txt | cut -c1-150
tar czf $OUT/s154.tgz -C /tmp r
left=$(( 585 - $(el) )); echo "dynamic limit $left s"
timeout $left $b/suite --size paper --balancers dynamic:256 --devices gpu --reps 1 --settle 1 --energy off --kernels binomial,taylor,ray1,gaussian --json $o/dyn256.json > $o/dyn256.txt 2>&1
echo "dyn rc $? at $(el) s"
grep -E "^[a-z0-9]+ +dynamic" $o/dyn256.txt | cut -c1-120
gzip -9 $o/dyn256.json; tar czf $OUT/s154.tgz -C /tmp r
