set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 23, call 1 on the two-GPU + 32-core CPU machine: MPI, two ranks
# against one process. (1) staging that holds a range's bytes (0b0ef07), CMA;
# (2) 13e57a8 (session 22's last measured build), CMA, same machine; (3) HEAD, double copies.
# Everything is packed into one tgz under $OUT (outputs written outside it): the device tool
# returns only a few files.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
mkdir -p $o/mpi-cma $o/mpi-prev-cma $o/mpi-none
OMPI_MCA_btl_vader_single_copy_mechanism=cma OUT=$o/mpi-cma timeout 230 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 8 > $o/mpi-cma/mpi.log 2>&1; echo "cma rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-cma/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
mv .device/mpi .device/mpi-new && mv .device/mpi-13e57a8 .device/mpi
OMPI_MCA_btl_vader_single_copy_mechanism=cma OUT=$o/mpi-prev-cma timeout 230 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 8 > $o/mpi-prev-cma/mpi.log 2>&1; echo "13e57a8 cma rc $? at $(el) s"
mv .device/mpi .device/mpi-13e57a8 && mv .device/mpi-new .device/mpi
grep -E "^\| [a-z]" $o/mpi-prev-cma/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
tar czf $OUT/s77.tgz -C /tmp r
OUT=$o/mpi-none timeout 100 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 8 --kernels binomial,mandelbrot > $o/mpi-none/mpi.log 2>&1; echo "none rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-none/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
tar czf $OUT/s77.tgz -C /tmp r
