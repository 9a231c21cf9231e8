set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 28, first call: a = edges split off a queued block only when it holds 16 fills
# (NBody's sub-wave forces block ran as two kernels) against z = 7d04333, NBody over every
# device six times each, alternated; then every benchmark over every device with each build,
# and the GPUs alone with a.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s110.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for i in 1 2 3 4 5 6; do for b in a z; do
  timeout 40 .device/$b/iterate nbody --size large --budget 3 --devices all --variants session --submit --json $o/nbody-$b$i.json > $o/nbody-$b$i.txt 2>&1
  echo "nbody-$b$i rc $? at $(el) s: $(grep -E '^session  ' $o/nbody-$b$i.txt | cut -c1-90)"
done; done
gzip -9 $o/*.json; pack
for b in a1 z1; do
  left=$(( 300 - $(el) )); [ $left -lt 40 ] && break
  timeout $left .device/${b:0:1}/iterate all --size large --budget 4 --devices all --variants session --submit --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "^session  |first step" $o/$b.txt | cut -c1-100; pack
done
left=$(( 380 - $(el) ))
timeout $left .device/a/iterate all --size large --budget 4 --devices gpu --variants single,session --submit --json $o/gpu.json > $o/gpu.txt 2>&1
echo "gpu rc $? at $(el) s"; grep -E "^session  |^single  |speedup" $o/gpu.txt | cut -c1-100
gzip -9 $o/*.json; pack
