set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 22, call 2 on the two-GPU + 32-core CPU machine: MPI, two ranks against one process.
# (1) 519a443 (staging kept across calls) with the script's default double-copy transfers.
# (2) Binomial alone, single copies (CMA): 519a443, then with each node's cut ranges in
#     pieces of >= 0.01 s, then session 21's final binaries, all on this machine.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
mkdir -p $o/mpi-kept-none $o/bin-kept $o/bin-pieces $o/bin-s21
OUT=$o/mpi-kept-none timeout 250 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 8 > $o/mpi-kept-none/mpi.log 2>&1; echo "kept none rc $? at $(el) s"
grep -E "^\| [a-z]" $o/mpi-kept-none/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
export OMPI_MCA_btl_vader_single_copy_mechanism=cma
OUT=$o/bin-kept timeout 70 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 --kernels binomial > $o/bin-kept/mpi.log 2>&1; echo "binomial kept rc $? at $(el) s"
OUT=$o/bin-pieces timeout 70 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 --kernels binomial --piece-min 0.01 > $o/bin-pieces/mpi.log 2>&1; echo "binomial pieces rc $? at $(el) s"
mv .device/mpi .device/mpi-new && mv .device/mpi-s21 .device/mpi
OUT=$o/bin-s21 timeout 70 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 --kernels binomial > $o/bin-s21/mpi.log 2>&1; echo "binomial s21 rc $? at $(el) s"
mv .device/mpi .device/mpi-s21 && mv .device/mpi-new .device/mpi
for d in bin-kept bin-pieces bin-s21; do echo "$d:"; grep -E "^\| [a-z]" $o/$d/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10; done
tar czf $OUT/s74.tgz -C $OUT r && rm -rf $o
