set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 19, call 2 on the two-GPU + 32-core CPU machine: MPI, two ranks against one process,
# 8 timed calls after the warm-up, binaries of 63d2c4e (every remote range recorded, nominal
# speeds for the first map, cuts that keep moving, remote ranges in pieces, no tails).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for v in default; do
  mkdir -p $o/mpi-$v
  OUT=$o/mpi-$v timeout 300 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 8 > $o/mpi-$v/mpi.log 2>&1; echo "mpi $v rc $? at $(el) s"
  grep -E "^\| [a-z]" $o/mpi-$v/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
  grep -E "call [0-9]" $o/mpi-$v/mpi-compare.txt 2>/dev/null | cut -c1-170
done
tar czf $OUT/s59.tgz -C $OUT r && rm -rf $o
