set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 27, eighth call: g = .device/g (45e0314: a session's first launch backs up a probe
# that outlasts everyone else's work and does not wait for the losing copy) against
# f = .device/f (8ce3030), alternated, sessions over every device; NBody's first step is
# where the back-up shows (the CPU's 32-group probe ran 92-187 ms).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s107.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for b in g1 f1 g2 f2 g3; do
  left=$(( 330 - $(el) )); [ $left -lt 60 ] && break
  bin=.device/f/iterate; [ ${b:0:1} = g ] && bin=.device/g/iterate
  timeout $left $bin all --size large --budget 4 --devices all --variants session --submit --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "^session  |first step|split \(" $o/$b.txt | cut -c1-100; pack
done
for i in 1 2 3; do
  RUST_LOG=hetdsl=debug timeout 40 .device/g/iterate nbody --size large --budget 3 --devices all --variants session --submit > $o/nbody-g$i.log 2>&1
  echo "nbody-g$i rc $? at $(el) s: $(grep -E '^session  ' $o/nbody-g$i.log | awk '{print $7}') $(grep -E 'first step' $o/nbody-g$i.log | cut -c1-60)"
  gzip -9 $o/nbody-g$i.log
done
gzip -9 $o/*.json; pack
