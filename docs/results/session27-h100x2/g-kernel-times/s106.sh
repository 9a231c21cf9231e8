set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 27, seventh call: f = .device/f (8ce3030: a moved launch judged by its devices' kernel
# times) - NBody over every device eight times with debug logs (e ran two of eight at 16.4 ms
# per step), then every benchmark over every device (f twice, d0e7840 once) and the GPUs
# alone with f.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s106.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for i in 1 2 3 4 5 6 7 8; do
  RUST_LOG=hetdsl=debug timeout 40 .device/f/iterate nbody --size large --budget 3 --devices all --variants session --submit > $o/nbody$i.log 2>&1
  echo "nbody$i rc $? at $(el) s: $(grep -E '^session  ' $o/nbody$i.log | awk '{print $7}') $(grep -E 'split \(' $o/nbody$i.log | cut -c40-100)"
  gzip -9 $o/nbody$i.log
done
pack
for b in f1 z1 f2; do
  left=$(( 330 - $(el) )); [ $left -lt 60 ] && break
  bin=.device/bin/iterate; [ ${b:0:1} = f ] && bin=.device/f/iterate
  timeout $left $bin all --size large --budget 4 --devices all --variants session --submit --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "^session  |split \(" $o/$b.txt | cut -c1-100; pack
done
left=$(( 420 - $(el) ))
timeout $left .device/f/iterate all --size large --budget 4 --devices gpu --variants single,session --submit --json $o/gpu.json > $o/gpu.txt 2>&1
echo "gpu rc $? at $(el) s"; grep -E "^session  |^single  |speedup" $o/gpu.txt | cut -c1-100
gzip -9 $o/*.json; pack
