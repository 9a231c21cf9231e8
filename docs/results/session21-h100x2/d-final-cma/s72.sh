set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 21, call 4 on the two-GPU + 32-core CPU machine: MPI, two ranks against one process,
# the session's final binaries (696ac63), with Open MPI's single-copy (CMA) transfers between
# the ranks, which this machine allows.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
mkdir -p $o/mpi-cma
OMPI_MCA_btl_vader_single_copy_mechanism=cma OUT=$o/mpi-cma timeout 215 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 8 > $o/mpi-cma/mpi.log 2>&1; echo "cma rc $? at $(( $(date +%s) - T0 )) s"
grep -E "^\| [a-z]" $o/mpi-cma/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
tar czf $OUT/s72.tgz -C $OUT r && rm -rf $o
