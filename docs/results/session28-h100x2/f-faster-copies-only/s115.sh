set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 28, sixth call: f = e with back-ups in a session's first launch only of packages
# of nominally slower devices (e let the CPU copy an uploading GPU's Jacobi package) against
# d = 63eec6c: each benchmark over every device, alternated; then every benchmark with f and d.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s115.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
run() { # name bin bench devices
  timeout 40 .device/$2/iterate $3 --size large --budget 3 --devices $4 --variants session --submit --json $o/$1.json > $o/$1.txt 2>&1
  echo "$1 rc $? at $(el) s: $(grep -E '^session  ' $o/$1.txt | cut -c1-100) | $(grep -E 'first step' $o/$1.txt | cut -c1-40)"
}
for k in jacobi blackscholes nbody; do for i in 1 2 3; do run $k-f$i f $k all; run $k-d$i d $k all; done; done
gzip -9 $o/*.json; pack
for b in f1 d1; do
  left=$(( 330 - $(el) )); [ $left -lt 40 ] && break
  timeout $left .device/${b:0:1}/iterate all --size large --budget 4 --devices all --variants session --submit --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "^session  |first step" $o/$b.txt | cut -c1-100; pack
done
gzip -9 $o/*.json; pack
