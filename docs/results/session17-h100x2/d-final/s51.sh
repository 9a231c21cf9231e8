set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 17, call 4 on the two-GPU + 32-core CPU machine (final binaries): (1) the memory-bound
# kernels, default against static, with plans judged by time; (2) the MPI comparison with the
# outputs' path of fewer copies; (3) the one-shot suite at paper size, every device and the GPUs
# only, as far as the time allows.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/s17; o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 90 $b/suite --size paper --balancers default,static --devices all --reps 3 --settle 3 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound.json > $o/membound.txt 2>&1
echo "membound rc $? at $(el) s"
grep -E "alone: | default | static |SKIP|calls" $o/membound.txt | cut -c1-150
OUT=$o timeout 200 bash scripts/mpi-run.sh compare 2 --scale 8 > $o/mpi.log 2>&1; echo "mpi rc $? at $(el) s"
grep -E "^\| |balance" $o/mpi-compare.txt 2>/dev/null | cut -c1-240
left=$(( 470 - $(el) )); echo "suite limit $left s"
timeout $left $b/suite --size paper --balancers default --devices all/gpu --reps 3 --settle 3 --energy off --kernels mandelbrot,rap,nbody,binomial,gaussian,taylor,bm3d,ray1,ray2 --json $o/paper.json > $o/paper.txt 2>&1
echo "suite rc $? at $(el) s"
grep -E "first call|timed|^(all|gpu) +[a-z0-9]+ +default" $o/paper.txt | cut -c1-160
tar czf $OUT/s51.tgz -C $OUT r && rm -rf $o
