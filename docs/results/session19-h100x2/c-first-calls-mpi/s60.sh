set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 19, call 3 on the two-GPU + 32-core CPU machine. (1) First calls, staging made at
# build (68bd6b1, suite-new) against at the first run (53fd868, suite-old), alternated twice.
# (2) MPI, two ranks against one process, binaries of 68bd6b1 (rank 0's range in pieces too).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
k=binomial,gaussian,bm3d,saxpy
for round in 1 2; do
  for v in old new; do
    timeout 150 .device/s19/suite-$v --size paper --balancers default --devices all --reps 1 --settle 0 --energy off --kernels $k --json $o/first-$v-$round.json > $o/first-$v-$round.txt 2>&1
    echo "$v round $round rc $? at $(el) s"; grep 'first call' $o/first-$v-$round.txt
  done
done
mkdir -p $o/mpi
OUT=$o/mpi timeout 300 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 8 > $o/mpi/mpi.log 2>&1; echo "mpi rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
grep -E "call [0-9]" $o/mpi/mpi-compare.txt 2>/dev/null | cut -c1-150
tar czf $OUT/s60.tgz -C $OUT r && rm -rf $o
