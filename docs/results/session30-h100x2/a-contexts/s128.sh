set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 30, call 1: one binary (x = 'program: HETDSL_CONTEXTS=device'), the GPUs in one
# context (p, the default) or a context each (d), alternated: Black-Scholes' ten steps, Jacobi
# and the chain on the GPUs with single-GPU baselines, Black-Scholes over every device; a debug
# log of each; then the one-shot suite on the GPUs (first calls, a few kernels) in each mode.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s128.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
mode() { [ $1 = p ] && echo platform || echo device; }
run() { # name bench devices variants p|d
  local n=$1 k=$2 d=$3 v=$4 c=$5
  [ $(el) -gt 420 ] && { echo "$n skipped (time)"; return; }
  HETDSL_CONTEXTS=$(mode $c) timeout 60 .device/x/iterate $k --size large --budget 3 --devices $d --variants $v --submit --json $o/$n.json > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s:"; grep -E '^(single|session|opencl3)  |speedup|host time|kernels per' $o/$n.txt | cut -c1-100
}
for i in 1 2 3; do for c in p d; do run bsg-$c$i blackscholes gpu single,session $c; done; done
pack
for c in p d; do HETDSL_CONTEXTS=$(mode $c) RUST_LOG=hetdsl=debug timeout 40 .device/x/iterate blackscholes --size large --budget 3 --devices gpu --variants session --submit > $o/bs-gpu-$c.log 2>&1; done
gzip -9 $o/*.log; pack
for i in 1 2; do for c in p d; do
  run jac-$c$i jacobi gpu single,session,opencl3 $c
  run chg-$c$i chain gpu single,session $c
  run bsa-$c$i blackscholes all session $c
done; done
pack
for c in p d; do
  [ $(el) -gt 470 ] && break
  HETDSL_CONTEXTS=$(mode $c) timeout 60 .device/x/suite --size paper --balancers default --devices gpu --reps 3 --settle 2 --energy off --kernels binomial,taylor,gaussian,saxpy,matvec --json $o/suite-$c.json > $o/suite-$c.txt 2>&1
  echo "suite-$c rc $? at $(el) s"; grep -E "first call|default  " $o/suite-$c.txt
done
gzip -9 $o/*.json; pack
echo done at $(el) s
