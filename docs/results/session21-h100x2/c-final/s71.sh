set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 21, call 3 on the two-GPU + 32-core CPU machine.
# (1) MPI, two ranks against one process, the session's final binaries (696ac63).
# (2) Binomial and Taylor with the session's starting binaries (3c55794), same machine.
# (3) Mandelbrot and Binomial, final binaries, with single-copy (CMA) transfers between ranks.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
mkdir -p $o/mpi-final $o/mpi-before $o/mpi-cma
OUT=$o/mpi-final timeout 250 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 > $o/mpi-final/mpi.log 2>&1; echo "final rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-final/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
mv .device/mpi .device/mpi-final && mv .device/mpi-before .device/mpi
OUT=$o/mpi-before timeout 150 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 --kernels binomial,taylor > $o/mpi-before/mpi.log 2>&1; echo "before rc $? at $(el) s"
mv .device/mpi .device/mpi-before && mv .device/mpi-final .device/mpi
grep -E "^\| [a-z]" $o/mpi-before/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
OMPI_MCA_btl_vader_single_copy_mechanism=cma OUT=$o/mpi-cma timeout 110 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 --kernels mandelbrot,binomial > $o/mpi-cma/mpi.log 2>&1; echo "cma rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-cma/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
tar czf $OUT/s71.tgz -C $OUT r && rm -rf $o
