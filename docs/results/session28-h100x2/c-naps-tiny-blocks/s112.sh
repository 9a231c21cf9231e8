set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 28, third call: c = b with a queued launch's end looked at every 50 us at most (was
# 200) against b = 7f22018. Black-Scholes (10 steps) over the GPUs and over every device,
# alternated; Jacobi over every device with and without PoCL held to 28 threads; then every
# benchmark over every device with c and b, and each GPU alone and the GPUs alone with c.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s112.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; lscpu | grep -i numa; } > $o/machine.txt 2>&1
run() { # name bin bench devices [env...]
  local n=$1 b=$2 k=$3 d=$4; shift 4
  env "$@" timeout 40 .device/$b/iterate $k --size large --budget 3 --devices $d --variants session --submit --json $o/$n.json > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s: $(grep -E '^session  ' $o/$n.txt | cut -c1-90)"
}
for i in 1 2 3; do for b in c b; do run bs-gpu-$b$i $b blackscholes gpu; run bs-all-$b$i $b blackscholes all; done; done
for i in 1 2 3; do run jacobi-c$i c jacobi all; run jacobi-p$i c jacobi all POCL_MAX_PTHREAD_COUNT=28; done
gzip -9 $o/*.json; pack
for b in c1 b1; do
  left=$(( 300 - $(el) )); [ $left -lt 40 ] && break
  timeout $left .device/${b:0:1}/iterate all --size large --budget 4 --devices all --variants session --submit --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "^session  " $o/$b.txt | cut -c1-100; pack
done
left=$(( 390 - $(el) ))
timeout $left .device/c/iterate all --size large --budget 4 --devices gpu --variants single,session --submit --json $o/gpu.json > $o/gpu.txt 2>&1
echo "gpu rc $? at $(el) s"; grep -E "^session  |^single  |speedup" $o/gpu.txt | cut -c1-100
gzip -9 $o/*.json; pack
