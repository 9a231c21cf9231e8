set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 18, call 4 on one GPU + 16-core CPU (binaries of 07a4b1d, whose engine is session 17's
# final one): every kernel with the default balancer against the honest baseline, medians of 3
# after 3 settling calls; then the five memory-bound kernels once more, to see their spread.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 420 .device/s18/suite --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels aho,binomial,gaussian,mandelbrot,nbody,taylor,bm3d,rap,ray1,ray2,reduction,matvec,stencil3d,saxpy,elementwise --json $o/final.json > $o/final.txt 2>&1
echo "suite rc $? at $(el) s"
grep -E "first call|^[a-z0-9]+ +(alone/one|alone/def|default)" $o/final.txt | cut -c1-110
left=$(( 560 - $(el) )); echo "membound limit $left s"
timeout $left .device/s18/suite --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels reduction,matvec,stencil3d,saxpy,elementwise --json $o/membound.json > $o/membound.txt 2>&1
echo "membound rc $? at $(el) s"
grep -E "^[a-z0-9]+ +(alone/one|alone/def|default)" $o/membound.txt | cut -c1-110
gzip -9 $o/final.json $o/membound.json 2>/dev/null
tar czf $OUT/s55.tgz -C $OUT r && rm -rf $o
