set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 28, eighth call: h = 4ed9cf1 (g with the region before the thief spared too) -
# NBody over every device four times, d = 63eec6c once between; then every benchmark over
# every device with h.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s117.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
run() { # name bin bench devices
  timeout 40 .device/$2/iterate $3 --size large --budget 3 --devices $4 --variants session --submit --json $o/$1.json > $o/$1.txt 2>&1
  echo "$1 rc $? at $(el) s: $(grep -E '^session  ' $o/$1.txt | cut -c1-100) | $(grep -E 'first step' $o/$1.txt | cut -c1-40)"
}
run nbody-h1 h nbody all; run nbody-h2 h nbody all; run nbody-d1 d nbody all; run nbody-h3 h nbody all; run nbody-h4 h nbody all
gzip -9 $o/*.json; pack
timeout 100 .device/h/iterate all --size large --budget 4 --devices all --variants session --submit --json $o/h1.json > $o/h1.txt 2>&1
echo "h1 rc $? at $(el) s"; grep -E "^session  |first step" $o/h1.txt | cut -c1-100
gzip -9 $o/*.json; pack
