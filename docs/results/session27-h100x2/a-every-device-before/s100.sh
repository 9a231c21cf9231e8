set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 27, first call: sessions over every device against the GPUs alone, same machine,
# same build (d0e7840), alternated; debug logs of a short chain and Black-Scholes over each set.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s100.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
b=.device/bin/iterate
for r in 1 2; do
  for set in gpu all; do
    left=$(( 420 - $(el) )); [ $left -lt 60 ] && break
    v=session; [ $set = gpu ] && v=single,session
    timeout $left $b all --size large --budget 4 --devices $set --variants $v --submit --json $o/$set$r.json > $o/$set$r.txt 2>&1
    echo "$set$r rc $? at $(el) s"; grep -E "^==|^session|^single|split \(" $o/$set$r.txt | cut -c1-150; pack
  done
done
for set in gpu all; do
  for k in chain blackscholes; do
    left=$(( 520 - $(el) )); [ $left -lt 30 ] && break
    RUST_LOG=hetdsl=debug timeout $left $b $k --size large --budget 2 --steps 10 --devices $set --variants session --submit > $o/$k-$set.log 2>&1
    echo "$k-$set rc $? at $(el) s"; grep -E "^session" $o/$k-$set.log | cut -c1-150
  done
done
gzip -9 $o/*.json $o/*.log; pack
