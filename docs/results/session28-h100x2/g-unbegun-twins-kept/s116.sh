set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 28, seventh call: g = f with a device as fast as the thief that has not begun kept
# out of Regions' steals (f's integration launch gave one GPU the other's whole region in
# two runs of four) against d = 63eec6c, alternated; then every benchmark with g and d, and
# each GPU alone and the GPUs alone with g.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s116.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
run() { # name bin bench devices
  timeout 40 .device/$2/iterate $3 --size large --budget 3 --devices $4 --variants session --submit --json $o/$1.json > $o/$1.txt 2>&1
  echo "$1 rc $? at $(el) s: $(grep -E '^session  ' $o/$1.txt | cut -c1-100) | $(grep -E 'first step' $o/$1.txt | cut -c1-40)"
}
for i in 1 2 3 4; do run nbody-g$i g nbody all; run nbody-d$i d nbody all; done
for k in jacobi blackscholes; do for i in 1 2; do run $k-g$i g $k all; run $k-d$i d $k all; done; done
gzip -9 $o/*.json; pack
for b in g1 d1; do
  left=$(( 250 - $(el) )); [ $left -lt 40 ] && break
  timeout $left .device/${b:0:1}/iterate all --size large --budget 4 --devices all --variants session --submit --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "^session  |first step" $o/$b.txt | cut -c1-100; pack
done
left=$(( 300 - $(el) ))
timeout $left .device/g/iterate all --size large --budget 4 --devices gpu --variants single,session --submit --json $o/gpu.json > $o/gpu.txt 2>&1
echo "gpu rc $? at $(el) s"; grep -E "^session  |^single  |speedup" $o/gpu.txt | cut -c1-100
gzip -9 $o/*.json; pack
