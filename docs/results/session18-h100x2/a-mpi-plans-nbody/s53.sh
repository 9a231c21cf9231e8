set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 18, call 2 on the two-GPU + 32-core CPU machine (binaries of b9abddf): (1) MPI, two
# ranks against one process: repeated calls run a remembered plan (default), then the same
# binary with --fresh (every call starts from nothing, as before), then without the plan's tail;
# (2) NBody 2^20 as a session on the two GPUs with the library's debug log, to see where the
# 36 ms per step beyond the kernels go.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for v in plan fresh tail0; do
  case $v in plan) a="";; fresh) a="--fresh";; tail0) a="--plan-tail 0";; esac
  mkdir -p $o/mpi-$v
  OUT=$o/mpi-$v timeout 150 bash scripts/mpi-run.sh compare 2 --scale 8 $a > $o/mpi-$v/mpi.log 2>&1; echo "mpi $v rc $? at $(el) s"
  grep -E "^\| [a-z]" $o/mpi-$v/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10 
  grep -E "remembered plan|fresh" $o/mpi-$v/mpi-compare.txt 2>/dev/null | cut -c1-200 | head -20
done
n=1048576
RUST_LOG=hetdsl=debug timeout 90 .device/s18/iterate nbody --size $n --budget 8 --devices 1,2 --variants single,session --submit --json $o/nbody-$n.json > $o/nbody-$n.txt 2> $o/nbody-$n.log
echo "nbody rc $? at $(el) s"; grep -E "^(single|session)|split|per step|speedup" $o/nbody-$n.txt | cut -c1-200
bash scripts/queued-gaps.sh $o/nbody-$n.log > $o/nbody-$n.gaps 2>&1; cat $o/nbody-$n.gaps
gzip -9 $o/nbody-$n.log
tar czf $OUT/s53.tgz -C $OUT r && rm -rf $o
