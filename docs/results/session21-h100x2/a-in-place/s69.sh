set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 21, call 1 on the two-GPU + 32-core CPU machine.
# (1) MPI, two ranks against one process: rank 0's node in the caller's buffers in place (new).
# (2) The same with the session's starting binaries (3c55794), same machine.
# (3) Binomial alone, new binaries, nodes' cut ranges in pieces down to 0.01 s a piece.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
mkdir -p $o/mpi-new $o/mpi-before $o/mpi-pieces
OUT=$o/mpi-new timeout 240 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 > $o/mpi-new/mpi.log 2>&1; echo "new rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-new/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
mv .device/mpi .device/mpi-new && mv .device/mpi-before .device/mpi
OUT=$o/mpi-before timeout 220 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 > $o/mpi-before/mpi.log 2>&1; echo "before rc $? at $(el) s"
mv .device/mpi .device/mpi-before && mv .device/mpi-new .device/mpi
grep -E "^\| [a-z]" $o/mpi-before/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
OUT=$o/mpi-pieces timeout 80 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 --kernels binomial --piece-min 0.01 > $o/mpi-pieces/mpi.log 2>&1; echo "pieces rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-pieces/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
grep -E "binomial call [0-9]" $o/mpi-pieces/mpi-compare.txt 2>/dev/null | cut -c1-170
tar czf $OUT/s69.tgz -C $OUT r && rm -rf $o
