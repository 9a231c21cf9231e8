set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 20, call 1 on the two-GPU + 32-core CPU machine (binaries of b850f78).
# (1) MPI, two ranks against one process, ranks queue their next range ahead (the default).
# (2) The same with --no-queue (the old way) on Binomial and Mandelbrot, for an A/B on one host.
# (3) Memory-bound kernels on every device: default and static against each device alone.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
mkdir -p $o/mpi-queue $o/mpi-noqueue
OUT=$o/mpi-queue timeout 240 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 8 > $o/mpi-queue/mpi.log 2>&1; echo "mpi queue rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-queue/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
grep -E "call [0-9]" $o/mpi-queue/mpi-compare.txt 2>/dev/null | cut -c1-170
OUT=$o/mpi-noqueue timeout 120 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 8 --kernels binomial,mandelbrot --no-queue > $o/mpi-noqueue/mpi.log 2>&1; echo "mpi noqueue rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-noqueue/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
timeout 200 .device/s20/suite --size paper --balancers default,static --devices all --reps 3 --settle 3 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound.json > $o/membound.txt 2>&1; echo "membound rc $? at $(el) s"
grep -iE "^\| |roi|alone" $o/membound.txt | head -60
tar czf $OUT/s63.tgz -C $OUT r && rm -rf $o
