set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 28, fourth call: d = 63eec6c (the session's changes so far: edges split off only
# from blocks of 16 fills, microsecond kernels' splits replayed, 50 us naps, tiny second
# blocks joined) against z = 7d04333: every benchmark over every device, alternated twice;
# more NBody and Black-Scholes runs over every device; each GPU alone and the GPUs alone
# with d.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s113.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
run() { # name bin bench devices
  timeout 40 .device/$2/iterate $3 --size large --budget 3 --devices $4 --variants session --submit --json $o/$1.json > $o/$1.txt 2>&1
  echo "$1 rc $? at $(el) s: $(grep -E '^session  ' $o/$1.txt | cut -c1-90)"
}
for b in d1 z1 d2 z2; do
  timeout 60 .device/${b:0:1}/iterate all --size large --budget 4 --devices all --variants session --submit --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "^session  |first step" $o/$b.txt | cut -c1-100; pack
done
for i in 1 2 3; do run nbody-d$i d nbody all; run bs-d$i d blackscholes all; done
run nbody-z3 z nbody all; run bs-z3 z blackscholes all
gzip -9 $o/*.json; pack
left=$(( 330 - $(el) ))
timeout $left .device/d/iterate all --size large --budget 4 --devices gpu --variants single,session --submit --json $o/gpu.json > $o/gpu.txt 2>&1
echo "gpu rc $? at $(el) s"; grep -E "^session  |^single  |speedup" $o/gpu.txt | cut -c1-100
gzip -9 $o/*.json; pack
