set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 30, call 4, two H100s + 32 cores: y = 79f4a99 (a context per device), z = 270ce6a
# (y + a first launch leaves no far sliver). Black-Scholes' ten steps on the GPUs, alternated,
# eight each; over every device, two each; then z alone: Jacobi, the chain, NBody 2^21.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s131.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
it() { # name bin bench devices variants [extra...]
  local n=$1 b=$2 k=$3 d=$4 v=$5; shift 5
  [ $(el) -gt 480 ] && { echo "$n skipped (time)"; return; }
  timeout 90 .device/$b/iterate $k --devices $d --variants $v --submit --json $o/$n.json "$@" > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s: $(grep -E '^session  ' $o/$n.txt | awk '{print "step", $7, "MiB", $9}') $(grep -o 'speedup [0-9.]*' $o/$n.txt)"
}
for i in 1 2 3 4 5 6 7 8; do for b in y z; do it bsg-$b$i $b blackscholes gpu single,session --size large --budget 3; done; done
pack
for i in 1 2; do for b in y z; do it bsa-$b$i $b blackscholes all session --size large --budget 3; done; done
pack
it jac-z1 z jacobi gpu single,session,opencl3 --size large --budget 3
it chg-z1 z chain gpu single,session --size large --budget 3
it nbg-z1 z nbody gpu single,session --size large --budget 3
it nb2m-z1 z nbody gpu single,session --size 2097152 --budget 6
gzip -9 $o/*.json; pack
echo done at $(el) s
