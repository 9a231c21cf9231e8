set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 21, call 2 on the two-GPU + 32-core CPU machine.
# (1) MPI, two ranks against one process: ranges' end pieces half the others (taper, new).
# (2) Mandelbrot and Binomial with the pieces equal (013a882: in place, no taper), same machine.
# (3) Mandelbrot and Binomial, taper, with Open MPI's single-copy transfers (CMA) between ranks.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
mkdir -p $o/mpi-taper $o/mpi-equal $o/mpi-cma
OUT=$o/mpi-taper timeout 250 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 > $o/mpi-taper/mpi.log 2>&1; echo "taper rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-taper/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
mv .device/mpi .device/mpi-taper && mv .device/mpi-inplace .device/mpi
OUT=$o/mpi-equal timeout 110 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 --kernels mandelbrot,binomial > $o/mpi-equal/mpi.log 2>&1; echo "equal rc $? at $(el) s"
mv .device/mpi .device/mpi-inplace && mv .device/mpi-taper .device/mpi
grep -E "^\| [a-z]" $o/mpi-equal/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
OMPI_MCA_btl_vader_single_copy_mechanism=cma OUT=$o/mpi-cma timeout 110 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 --kernels mandelbrot,binomial > $o/mpi-cma/mpi.log 2>&1; echo "cma rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-cma/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
grep -iE "cma|single.copy|error" $o/mpi-cma/mpi.log | head -5
tar czf $OUT/s70.tgz -C $OUT r && rm -rf $o
