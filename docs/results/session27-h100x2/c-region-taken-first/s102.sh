set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 27, third call: sessions over every device with a sitting-out device's region taken
# first by the device after it (b = .device/b, 072ab69) against d0e7840 (z = .device/bin),
# alternated; the GPUs alone with b; debug logs of b's first launches.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s102.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for b in b1 z1 b2 z2 b3 z3 b4; do
  left=$(( 400 - $(el) )); [ $left -lt 60 ] && break
  bin=.device/bin/iterate; [ ${b:0:1} = b ] && bin=.device/b/iterate
  timeout $left $bin all --size large --budget 4 --devices all --variants session --submit --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "^session  |first step|split \(" $o/$b.txt | cut -c1-100; pack
done
left=$(( 480 - $(el) ))
timeout $left .device/b/iterate all --size large --budget 4 --devices gpu --variants single,session --submit --json $o/gpu.json > $o/gpu.txt 2>&1
echo "gpu rc $? at $(el) s"; grep -E "^session  |^single  |speedup" $o/gpu.txt | cut -c1-100
for k in blackscholes nbody chain; do
  left=$(( 540 - $(el) )); [ $left -lt 20 ] && break
  RUST_LOG=hetdsl=debug timeout $left .device/b/iterate $k --size large --budget 2 --steps 10 --devices all --variants session --submit > $o/$k-b.log 2>&1
  echo "$k-b rc $? at $(el) s"; grep -E "^session  |first step|split \(" $o/$k-b.log | cut -c1-100
done
gzip -9 $o/*.json $o/*.log; pack
