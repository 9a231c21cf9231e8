set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 18, call 3 on the two-GPU + 32-core CPU machine (binaries of 07a4b1d): (1) MPI, two
# ranks against one process, remembered plans judged by time, median of 5 calls after the
# warm-up; (2) NBody 2^21 as a session on the two GPUs against each GPU alone.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
mkdir -p $o/mpi
OUT=$o/mpi timeout 240 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 5 > $o/mpi/mpi.log 2>&1; echo "mpi rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
grep -E "call [0-9]" $o/mpi/mpi-compare.txt 2>/dev/null | cut -c1-200
n=2097152
timeout 150 .device/s18/iterate nbody --size $n --budget 12 --devices 1,2 --variants single,session --submit --json $o/nbody-$n.json > $o/nbody-$n.txt 2>&1
echo "nbody rc $? at $(el) s"; grep -E "^(single|session)|split|per step|speedup" $o/nbody-$n.txt | cut -c1-200
tar czf $OUT/s54.tgz -C $OUT r && rm -rf $o
