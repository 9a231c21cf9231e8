set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 17, call 3 on the two-GPU + 32-core CPU machine (binaries of the session's end):
# (1) RAP and Mandelbrot with back-ups never between devices of one model (every device, the
# GPUs only); (2) the memory-bound kernels, default against static, every device; (3) the
# session benchmarks on the two GPUs; (4) the MPI comparison (one process against two ranks)
# at 8 times the base size, with the ranks' scheduling of this session.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/s17; o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 120 $b/suite --size paper --balancers default --devices all/gpu --reps 3 --settle 3 --energy off --kernels rap,mandelbrot --json $o/paper2.json > $o/paper2.txt 2>&1
echo "suite rc $? at $(el) s"
grep -E "calls|^(all|gpu) +[a-z0-9]+ +default" $o/paper2.txt | cut -c1-160
timeout 90 $b/suite --size paper --balancers default,static --devices all --reps 3 --settle 3 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound.json > $o/membound.txt 2>&1
echo "membound rc $? at $(el) s"
grep -E "alone: | default | static |SKIP" $o/membound.txt | cut -c1-130
timeout 110 $b/iterate all --size large --budget 8 --devices 1,2 --variants single,session --submit --json $o/iterate.json > $o/sessions.txt 2>&1
echo "iterate rc $? at $(el) s"
grep -E "^==|^single|^session |speedup" $o/sessions.txt | cut -c1-140
left=$(( 585 - $(el) )); echo "mpi limit $left s"
OUT=$o timeout $left bash scripts/mpi-run.sh compare 2 --scale 8 > $o/mpi.log 2>&1; echo "mpi rc $? at $(el) s"
grep -E "^\| |balance" $o/mpi-compare.txt 2>/dev/null | cut -c1-240
tar czf $OUT/s50.tgz -C $OUT r && rm -rf $o
