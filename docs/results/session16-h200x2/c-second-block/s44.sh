set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 16, call 8 on 2xH200 + 32-core CPU: Jacobi sessions over the two GPUs, submitted,
# before (1724c46) and after (662c661: a replayed split's small second block joins the block it
# adjoins), alternated three times; then every session benchmark with the new binary.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/jac; o=$OUT/r; mkdir -p $o
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for r in 1 2 3; do
  for v in head new; do
    timeout 60 $b/iterate-$v jacobi --size large --budget 8 --devices 1,2 --variants session --submit --json $o/$v$r.json > $o/$v$r.txt 2>&1; echo "$v$r rc $?"
    grep -E "^session " $o/$v$r.txt | cut -c1-130; grep -E "split by|speedup" $o/$v$r.txt
  done
done
timeout 120 $b/iterate-new all --size large --budget 8 --devices 1,2 --variants single,session --submit --json $o/all-new.json > $o/all-new.txt 2>&1; echo "all rc $?"
grep -E "^==|^single|^session|speedup" $o/all-new.txt | cut -c1-140
tar czf $OUT/s44.tgz -C $OUT r && rm -rf $o
