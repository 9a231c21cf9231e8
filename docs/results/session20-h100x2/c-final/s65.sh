set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 20, call 3 on the two-GPU + 32-core CPU machine.
# (1) MPI, two ranks against one process, final binaries (f7ae3e0: queued ranges, a node's cut
#     ranges in pieces where whole ones left >= 2 % exposed and pieces compute >= 0.1 s).
# (2) The session's start on this host: b850f78 with --no-queue (no queued ranges, nodes whole).
# (3) The five memory-bound kernels on every device (stencil3d's input with a one-plane halo).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
mkdir -p $o/mpi-final $o/mpi-start
OUT=$o/mpi-final timeout 270 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 > $o/mpi-final/mpi.log 2>&1; echo "mpi final rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-final/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
grep -E "call [0-9]" $o/mpi-final/mpi-compare.txt 2>/dev/null | cut -c1-150
mv .device/mpi .device/mpi-new && mv .device/mpi-old .device/mpi
OUT=$o/mpi-start timeout 240 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 --no-queue > $o/mpi-start/mpi.log 2>&1; echo "mpi start rc $? at $(el) s"
mv .device/mpi .device/mpi-old && mv .device/mpi-new .device/mpi
grep -E "^\| [a-z]" $o/mpi-start/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
timeout 100 .device/s20/suite-new --size paper --balancers default,static --devices all --reps 3 --settle 3 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound.json > $o/membound.txt 2>&1; echo "membound rc $? at $(el) s"
grep -vE "settling|alone~|alone/" $o/membound.txt | head -40
tar czf $OUT/s65.tgz -C $OUT r && rm -rf $o
