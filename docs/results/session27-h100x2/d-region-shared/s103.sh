set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 27, fourth call: first a debug log of NBody on the fresh machine (a cold first run
# put NBody's forces on one GPU in s102); then sessions over every device with a sat-out
# device's region shared by speed (c = .device/c, 3e2388b) against taking it all (b),
# alternated; the GPUs alone with c; a debug log of c's Black-Scholes.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s103.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
RUST_LOG=hetdsl=debug timeout 60 .device/c/iterate nbody --size large --budget 2 --steps 10 --devices all --variants session --submit > $o/nbody-cold.log 2>&1
echo "nbody-cold rc $? at $(el) s"; grep -E "^session  |first step|split \(|kernels per" $o/nbody-cold.log | cut -c1-100
for b in c1 b1 c2 b2 c3; do
  left=$(( 400 - $(el) )); [ $left -lt 60 ] && break
  bin=.device/b/iterate; [ ${b:0:1} = c ] && bin=.device/c/iterate
  timeout $left $bin all --size large --budget 4 --devices all --variants session --submit --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "^session  |split \(" $o/$b.txt | cut -c1-100; pack
done
left=$(( 480 - $(el) ))
timeout $left .device/c/iterate all --size large --budget 4 --devices gpu --variants single,session --submit --json $o/gpu.json > $o/gpu.txt 2>&1
echo "gpu rc $? at $(el) s"; grep -E "^session  |^single  |speedup" $o/gpu.txt | cut -c1-100
RUST_LOG=hetdsl=debug timeout 40 .device/c/iterate blackscholes --size large --budget 2 --steps 10 --devices all --variants session --submit > $o/blackscholes-c.log 2>&1
echo "bs-c rc $? at $(el) s"; grep -E "^session  |first step|split \(" $o/blackscholes-c.log | cut -c1-100
gzip -9 $o/*.json $o/*.log; pack
