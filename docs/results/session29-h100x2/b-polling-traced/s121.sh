set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 29, call 2: z = no polling; b = device threads and waits poll for 1 ms before they
# sleep, with finer traces (deciding, binding, how late an end is seen); c = b with a replayed
# package's buffer arguments left bound where they already are. Black-Scholes' 10 steps over
# the GPUs with single-GPU baselines, alternated; debug logs; then over every device.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s121.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
run() { # name bin bench devices variants [env...]
  local n=$1 b=$2 k=$3 d=$4 v=$5; shift 5
  [ $(el) -gt 400 ] && { echo "$n skipped (time)"; return; }
  env "$@" timeout 60 .device/$b/iterate $k --size large --budget 3 --devices $d --variants $v --submit --json $o/$n.json > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s:"; grep -E '^(single|session)  ' $o/$n.txt | cut -c1-90
}
for i in 1 2 3; do for b in z b c; do run bsg-$b$i $b blackscholes gpu single,session; done; done
pack
for b in b c; do RUST_LOG=hetdsl=debug timeout 40 .device/$b/iterate blackscholes --size large --budget 3 --devices gpu --variants session --submit > $o/bs-gpu-$b.log 2>&1; done
RUST_LOG=hetdsl=debug timeout 40 .device/c/iterate blackscholes --size large --budget 3 --devices gpu --variants single --submit > $o/bs-single-c.log 2>&1
gzip -9 $o/*.log; pack
for i in 1 2; do for b in z c; do run bsa-$b$i $b blackscholes all session; run chg-$b$i $b chain gpu session; done; done
gzip -9 $o/*.json; pack
echo done at $(el) s
