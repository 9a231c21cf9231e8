set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 17, call 1 on 2xH200 + 32-core CPU: (1) back-ups between devices alike, before
# (bfd4871) and after, on the kernels whose settling calls started a GPU late (Mandelbrot, RAP),
# every device and the GPUs only; (2) NBody sessions on the two GPUs at 2^19 and 2^20 bodies,
# each GPU's kernel time per step; (3) the MPI comparison (one process against two ranks) at 8
# times the base size.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/s17; o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for v in before after; do
  timeout 130 $b/suite-$v --size paper --balancers default --devices all/gpu --reps 3 --settle 3 --energy off --kernels mandelbrot,rap --json $o/suite-$v.json > $o/suite-$v.txt 2>&1
  echo "suite-$v rc $? at $(el) s"
  grep -E "settling|^(all|gpu) +[a-z0-9]+ +default" $o/suite-$v.txt | cut -c1-150
done
for n in 524288 1048576; do
  timeout 60 $b/iterate nbody --size $n --budget 6 --devices 1,2 --variants single,session --submit --json $o/nbody-$n.json > $o/nbody-$n.txt 2>&1
  echo "nbody $n rc $? at $(el) s"
  grep -E "^single|^session" $o/nbody-$n.txt | cut -c1-110
done
left=$(( 585 - $(el) )); echo "mpi limit $left s"
OUT=$o timeout $left bash scripts/mpi-run.sh compare 2 --scale 8 > $o/mpi.log 2>&1; echo "mpi rc $? at $(el) s"
grep -E "^\| |^single|^2 ranks|balance" $o/mpi-compare.txt 2>/dev/null | cut -c1-220
tar czf $OUT/s48.tgz -C $OUT r && rm -rf $o
