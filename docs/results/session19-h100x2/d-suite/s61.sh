set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 19, call 4 on the two-GPU + 32-core CPU machine: the suite at paper size on every
# device with the binaries of 68bd6b1 (staging made at build): first calls and timed calls.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 470 .device/s19/suite-new --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels nbody,mandelbrot,binomial,rap,gaussian,taylor,bm3d,ray1,ray2,reduction,matvec,stencil3d,saxpy,elementwise --json $o/paper.json > $o/paper.txt 2> $o/paper.err
echo "suite rc $? at $(( $(date +%s) - T0 )) s"
grep -E 'first call|default  ' $o/paper.txt
tar czf $OUT/s61.tgz -C $OUT r && rm -rf $o
