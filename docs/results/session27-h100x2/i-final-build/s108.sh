set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 27, ninth call: the session's final build (h = .device/h, 905fd00, the tree of
# b3b9f4e) against d0e7840 (z = .device/bin) over every device, then each GPU alone and the
# GPUs alone with h: per step over the best single GPU, on whatever two-GPU machine came.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s108.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for b in h1 z1 h2; do
  left=$(( 200 - $(el) )); [ $left -lt 40 ] && break
  bin=.device/bin/iterate; [ ${b:0:1} = h ] && bin=.device/h/iterate
  timeout $left $bin all --size large --budget 4 --devices all --variants session --submit --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "^session  |first step" $o/$b.txt | cut -c1-100; pack
done
left=$(( 280 - $(el) ))
timeout $left .device/h/iterate all --size large --budget 4 --devices gpu --variants single,session --submit --json $o/gpu.json > $o/gpu.txt 2>&1
echo "gpu rc $? at $(el) s"; grep -E "^session  |^single  |speedup" $o/gpu.txt | cut -c1-100
gzip -9 $o/*.json; pack
