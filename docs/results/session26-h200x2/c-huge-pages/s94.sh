set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 26, fourth call, two H200s + 32 cores: fresh host memory asked for in huge pages
# (d = .device/bin) against the parallel copies alone (c = .device/b2, a9ee304), alternated,
# GPUs only.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s94.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; cat /sys/kernel/mm/transparent_hugepage/enabled; } > $o/machine.txt 2>&1
for run in 1 2; do
  for b in d c; do
    bin=.device/bin/iterate; [ $b = c ] && bin=.device/b2/iterate
    timeout 110 $bin all --size large --budget 4 --devices gpu --variants single,session --submit --json $o/$b-$run.json > $o/$b-$run.txt 2>&1
    echo "$b-$run rc $? at $(el) s"; grep -E "^==|first step|speedup" $o/$b-$run.txt | grep -v nbody | cut -c1-200; pack
  done
done
gzip -9 $o/*.json; pack
