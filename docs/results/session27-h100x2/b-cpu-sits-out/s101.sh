set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 27, second call: sessions over every device, a slow device sitting out after its
# probe (a = .device/a, 2bd-regions) against d0e7840 (z = .device/bin), alternated; then the
# GPUs alone and each GPU alone with z, the baseline of the same machine.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s101.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for b in a1 z1 a2 z2 a3; do
  left=$(( 420 - $(el) )); [ $left -lt 60 ] && break
  bin=.device/bin/iterate; [ ${b:0:1} = a ] && bin=.device/a/iterate
  timeout $left $bin all --size large --budget 4 --devices all --variants session --submit --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "^==|^session  |first step|split \(" $o/$b.txt | cut -c1-110; pack
done
left=$(( 540 - $(el) ))
timeout $left .device/bin/iterate all --size large --budget 4 --devices gpu --variants single,session --submit --json $o/gpu.json > $o/gpu.txt 2>&1
echo "gpu rc $? at $(el) s"; grep -E "^==|^session  |^single  |speedup" $o/gpu.txt | cut -c1-110
gzip -9 $o/*.json; pack
