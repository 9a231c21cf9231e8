set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 28, ninth call: i = h with a microsecond kernel's replay following the split of the
# other kernel run or queued just before (NBody's integration and forces 16 groups apart after
# a back-up) against h = 4ed9cf1, NBody over every device alternated; then every benchmark
# over every device with i.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s118.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
run() { # name bin bench devices
  timeout 40 .device/$2/iterate $3 --size large --budget 3 --devices $4 --variants session --submit --json $o/$1.json > $o/$1.txt 2>&1
  echo "$1 rc $? at $(el) s: $(grep -E '^session  ' $o/$1.txt | cut -c1-100) | $(grep -E 'first step' $o/$1.txt | cut -c1-40)"
}
for i in 1 2 3; do run nbody-i$i i nbody all; run nbody-h$i h nbody all; done
gzip -9 $o/*.json; pack
timeout 100 .device/i/iterate all --size large --budget 4 --devices all --variants session --submit --json $o/i1.json > $o/i1.txt 2>&1
echo "i1 rc $? at $(el) s"; grep -E "^session  |first step" $o/i1.txt | cut -c1-100
gzip -9 $o/*.json; pack
