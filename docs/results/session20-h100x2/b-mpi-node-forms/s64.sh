set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 20, call 2 on the two-GPU + 32-core CPU machine.
# (1) MPI, two ranks against one process, binaries of 7599332 (ranks queue ahead, nodes run
#     their cut ranges whole or in pieces, whichever ran faster). (2) The same with call 1's
#     binaries (b850f78: queued ranges, nodes always whole), on this host, for an A/B.
# (3) stencil3d one-shot, its input with a one-plane halo (7599332) against whole (b850f78).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
mkdir -p $o/mpi-new $o/mpi-old
OUT=$o/mpi-new timeout 260 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 > $o/mpi-new/mpi.log 2>&1; echo "mpi new rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-new/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
grep -E "call [0-9]" $o/mpi-new/mpi-compare.txt 2>/dev/null | cut -c1-190
mv .device/mpi .device/mpi-new && mv .device/mpi-old .device/mpi
OUT=$o/mpi-old timeout 200 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 --kernels mandelbrot,binomial,taylor > $o/mpi-old/mpi.log 2>&1; echo "mpi old rc $? at $(el) s"
mv .device/mpi .device/mpi-old && mv .device/mpi-new .device/mpi
grep -E "^\| [a-z]" $o/mpi-old/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
for v in new old; do
  timeout 60 .device/s20/suite-$v --size paper --balancers default,static --devices all --reps 3 --settle 3 --energy off --kernels stencil3d --json $o/stencil-$v.json > $o/stencil-$v.txt 2>&1; echo "stencil $v rc $? at $(el) s"
  grep -vE "settling" $o/stencil-$v.txt | grep -E "stencil3d" | head -14
done
tar czf $OUT/s64.tgz -C $OUT r && rm -rf $o
