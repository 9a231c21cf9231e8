set -uo pipefail
# (The machine lent for this call was two H100s + 32 cores: see machine.txt.)
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 26, ninth call, two GPUs + 32 cores: sessions over the CPU and both GPUs, a device
# that a plan gives nothing taking nothing (f = .device/f) against taking a late device's
# block (8e16b10 = .device/bin), alternated; sessions only (each device alone: s97).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s99.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for b in f1 h1 f2; do
  left=$(( 250 - $(el) )); [ $left -lt 60 ] && break
  bin=.device/bin/iterate; [ ${b:0:1} = f ] && bin=.device/f/iterate
  timeout $left $bin all --size large --budget 4 --devices all --variants session --submit --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "^==|^session|split \(" $o/$b.txt | cut -c1-130; pack
done
gzip -9 $o/*.json; pack
