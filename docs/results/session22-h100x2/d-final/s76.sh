set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 22, call 4 on the two-GPU + 32-core CPU machine: MPI, two ranks against one process,
# the session's final binaries (13e57a8). (1) single-copy transfers (CMA); (2) Binomial with
# session 21's final binaries (696ac63), CMA, on the same machine; (3) the script's default
# double copies.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
mkdir -p $o/mpi-cma $o/mpi-none $o/bin-s21
OMPI_MCA_btl_vader_single_copy_mechanism=cma OUT=$o/mpi-cma timeout 230 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 8 > $o/mpi-cma/mpi.log 2>&1; echo "cma rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-cma/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
mv .device/mpi .device/mpi-new && mv .device/mpi-s21 .device/mpi
OMPI_MCA_btl_vader_single_copy_mechanism=cma OUT=$o/bin-s21 timeout 60 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 --kernels binomial > $o/bin-s21/mpi.log 2>&1; echo "binomial s21 rc $? at $(el) s"
mv .device/mpi .device/mpi-s21 && mv .device/mpi-new .device/mpi
grep -E "^\| [a-z]" $o/bin-s21/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
OUT=$o/mpi-none timeout 230 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 8 > $o/mpi-none/mpi.log 2>&1; echo "none rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-none/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
grep -h "binomial call" $o/mpi-cma/mpi-compare.txt $o/mpi-none/mpi-compare.txt | cut -c1-150
