set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 16, call 7 on 2xH200 + 32-core CPU: a Jacobi session over the two GPUs, submitted, with
# the binaries of e321bf1 (session 14's two-GPU measurement), 1c77d2d (the end of session 14) and
# 1724c46 (now): where the time per step after the first went (the host's time per queued launch
# from the debug events of the last).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/jac; o=$OUT/r; mkdir -p $o
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for r in 1 2; do
  for v in e321bf1 1c77d2d head; do
    RUST_LOG=hetdsl=debug timeout 60 $b/iterate-$v jacobi --size large --budget 8 --devices 1,2 --variants single,session --submit --json $o/$v$r.json > $o/$v$r.txt 2> $o/$v$r.err; echo "$v$r rc $?"
    grep -E "^single|^session" $o/$v$r.txt | cut -c1-120
    bash .device/gaps.sh $o/$v$r.err > $o/$v$r.gaps 2>&1; cat $o/$v$r.gaps; rm -f $o/$v$r.err
  done
done
tar czf $OUT/s43.tgz -C $OUT r && rm -rf $o
