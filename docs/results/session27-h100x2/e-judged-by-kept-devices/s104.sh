set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 27, fifth call: sessions over every device, d = .device/d (fd5caf8: a slow device
# sits out after its probe, its region shared by speed, splits judged by the devices kept)
# against z = .device/bin (d0e7840), alternated; the GPUs alone and each GPU alone with d;
# a debug log of d's Black-Scholes and NBody.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s104.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for b in d1 z1 d2 z2 d3 z3 d4; do
  left=$(( 420 - $(el) )); [ $left -lt 60 ] && break
  bin=.device/bin/iterate; [ ${b:0:1} = d ] && bin=.device/d/iterate
  timeout $left $bin all --size large --budget 4 --devices all --variants session --submit --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "^session  |split \(" $o/$b.txt | cut -c1-100; pack
done
left=$(( 500 - $(el) ))
timeout $left .device/d/iterate all --size large --budget 4 --devices gpu --variants single,session --submit --json $o/gpu.json > $o/gpu.txt 2>&1
echo "gpu rc $? at $(el) s"; grep -E "^session  |^single  |speedup" $o/gpu.txt | cut -c1-100
for k in blackscholes nbody; do
  RUST_LOG=hetdsl=debug timeout 40 .device/d/iterate $k --size large --budget 2 --steps 10 --devices all --variants session --submit > $o/$k-d.log 2>&1
  echo "$k-d rc $? at $(el) s"; grep -E "^session  |first step|split \(" $o/$k-d.log | cut -c1-100
done
gzip -9 $o/*.json $o/*.log; pack
