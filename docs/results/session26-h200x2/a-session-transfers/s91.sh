set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 26, first call, two H200s + 32 cores: a session's large moves streamed through a
# pinned ring per GPU (b = this change, a = 62afad7; both with the same iterate reporting),
# alternated, GPUs only; then a 300-step Black-Scholes loop (the re-cut of 72914f9).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s91.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; free -g; } > $o/machine.txt 2>&1
for run in 1 2; do
  for b in a b; do
    bin=.device/bin/iterate; [ $b = a ] && bin=.device/before/iterate
    timeout 110 $bin all --size large --budget 4 --devices gpu --variants single,session --submit --json $o/$b-$run.json > $o/$b-$run.txt 2>&1
    echo "$b-$run rc $? at $(el) s"; grep -E "^==|first step|speedup" $o/$b-$run.txt | cut -c1-200; pack
  done
done
timeout 150 .device/bin/iterate blackscholes --size large --steps 300 --budget 60 --devices gpu --variants single,session --submit --json $o/bs300.json > $o/bs300.txt 2>&1
echo "bs300 rc $? at $(el) s"; grep -E "^session|^single|split|speedup|kernels per|first step" $o/bs300.txt | cut -c1-200
gzip -9 $o/*.json; pack
