set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 16, call 11 on one H200 + 16-core CPU (binaries of e8d16cc): every kernel with the
# default balancer against the honest baseline (the better of the GPU alone in one package and
# under the default balancer), medians of 3 after 3 settling calls.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/it7; o=$OUT/r; mkdir -p $o
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 560 $b/suite --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels aho,binomial,gaussian,mandelbrot,nbody,taylor,bm3d,rap,ray1,ray2,reduction,matvec,stencil3d,saxpy,elementwise --json $o/final.json > $o/final.txt 2>&1
echo "suite rc $?"
grep -E "first call|^[a-z0-9]+ +(alone/one|alone/def|default)" $o/final.txt | cut -c1-120
gzip -9 $o/final.json
tar czf $OUT/s47.tgz -C $OUT r && rm -rf $o
