set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 18, call 5 on the two-GPU + 32-core CPU machine (binaries of 51cc29b): MPI, two ranks
# against one process, remembered plans judged by time and cut without each range's fixed
# cost, median of 5 calls after the warm-up.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o/mpi; T0=$(date +%s)
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
OUT=$o/mpi timeout 200 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 5 > $o/mpi/mpi.log 2>&1; echo "mpi rc $? at $(( $(date +%s) - T0 )) s"
grep -E "^\| [a-z]" $o/mpi/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
grep -E "call [0-9]" $o/mpi/mpi-compare.txt 2>/dev/null | cut -c1-200
tar czf $OUT/s56.tgz -C $OUT r && rm -rf $o
