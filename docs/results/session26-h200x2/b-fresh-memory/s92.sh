set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 26, second call, two H200s + 32 cores: reads home and buffer uploads copied into
# fresh memory on several threads (c = .device/b2) against the ring alone (b = .device/bin,
# 1b5-ring commit), alternated, GPUs only; and what first touch costs this host.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s92.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; uname -r; } > $o/machine.txt 2>&1
timeout 120 .device/tools/fresh > $o/fresh.txt 2>&1; echo "fresh rc $? at $(el) s"; cat $o/fresh.txt; cat $o/machine.txt | tail -3
for run in 1 2; do
  for b in c b; do
    bin=.device/bin/iterate; [ $b = c ] && bin=.device/b2/iterate
    timeout 110 $bin all --size large --budget 4 --devices gpu --variants single,session --submit --json $o/$b-$run.json > $o/$b-$run.txt 2>&1
    echo "$b-$run rc $? at $(el) s"; grep -E "^==|first step|speedup" $o/$b-$run.txt | cut -c1-200; pack
  done
done
gzip -9 $o/*.json; pack
