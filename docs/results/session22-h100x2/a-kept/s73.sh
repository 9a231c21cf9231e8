set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 22, call 1 on the two-GPU + 32-core CPU machine: MPI, two ranks against one process,
# with Open MPI's single-copy (CMA) transfers. (1) 519a443: each rank keeps its node's staging
# buffers across calls. (2) Session 21's final binaries (696ac63) on the same machine.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
export OMPI_MCA_btl_vader_single_copy_mechanism=cma
mkdir -p $o/mpi-kept $o/mpi-s21
OUT=$o/mpi-kept timeout 250 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 8 > $o/mpi-kept/mpi.log 2>&1; echo "kept rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-kept/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
mv .device/mpi .device/mpi-new && mv .device/mpi-s21 .device/mpi
OUT=$o/mpi-s21 timeout 250 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 8 > $o/mpi-s21/mpi.log 2>&1; echo "s21 rc $? at $(el) s"
mv .device/mpi .device/mpi-s21 && mv .device/mpi-new .device/mpi
grep -E "^\| [a-z]" $o/mpi-s21/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
tar czf $OUT/s73.tgz -C $OUT r && rm -rf $o
