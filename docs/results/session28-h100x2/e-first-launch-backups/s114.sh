set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 28, fifth call: e = d plus a first launch's back-up of a probe that outlasts the
# rest (session 27's 9899f4f, 45e0314), the next launch started without a device still
# computing the losing copy (its profile made by the launch), and a back-up copy costed at
# its device's own rate. NBody over every device, e and d alternated; one e debug log; then
# every benchmark over every device with e and d.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s114.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
run() { # name bin bench devices
  timeout 40 .device/$2/iterate $3 --size large --budget 3 --devices $4 --variants session --submit --json $o/$1.json > $o/$1.txt 2>&1
  echo "$1 rc $? at $(el) s: $(grep -E '^session  ' $o/$1.txt | cut -c1-90) | $(grep -E 'first step' $o/$1.txt | cut -c1-40)"
}
for i in 1 2 3; do run nbody-e$i e nbody all; run nbody-d$i d nbody all; done
RUST_LOG=hetdsl=debug timeout 40 .device/e/iterate nbody --size large --budget 3 --devices all --variants session --submit > $o/nbody-e.log 2>&1
echo "log rc $? $(grep -E '^session  |first step' $o/nbody-e.log | cut -c1-90)"; gzip -9 $o/*.log
gzip -9 $o/*.json; pack
for b in e1 d1 e2; do
  left=$(( 300 - $(el) )); [ $left -lt 40 ] && break
  timeout $left .device/${b:0:1}/iterate all --size large --budget 4 --devices all --variants session --submit --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "^session  |first step" $o/$b.txt | cut -c1-100; pack
done
gzip -9 $o/*.json; pack
