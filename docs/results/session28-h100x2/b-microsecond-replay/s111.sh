set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 28, second call: b = 7f22018 (a, plus microsecond kernels' splits replayed where
# they lie) against z = 7d04333. NBody and Jacobi over every device, alternated; Jacobi with
# PoCL held to 28 threads (is the CPU's runtime taking the host's cores?); one Black-Scholes
# debug log over the GPUs; then every benchmark over every device with b and z.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s111.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
run() { # name bin bench [env...]
  local n=$1 b=$2 k=$3; shift 3
  env "$@" timeout 40 .device/$b/iterate $k --size large --budget 3 --devices all --variants session --submit --json $o/$n.json > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s: $(grep -E '^session  ' $o/$n.txt | cut -c1-90)"
}
for i in 1 2 3 4; do for b in b z; do run nbody-$b$i $b nbody; done; done
for i in 1 2 3; do for b in b z; do run jacobi-$b$i $b jacobi; done; run jacobi-p$i z jacobi POCL_MAX_PTHREAD_COUNT=28; done
gzip -9 $o/*.json; pack
RUST_LOG=hetdsl=debug timeout 40 .device/b/iterate blackscholes --size large --budget 3 --devices gpu --variants session --submit > $o/bs-gpu.log 2>&1
RUST_LOG=hetdsl=debug timeout 40 .device/b/iterate blackscholes --size large --budget 3 --devices all --variants session --submit > $o/bs-all.log 2>&1
gzip -9 $o/*.log; pack
for b in b1 z1; do
  left=$(( 330 - $(el) )); [ $left -lt 40 ] && break
  timeout $left .device/${b:0:1}/iterate all --size large --budget 4 --devices all --variants session --submit --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "^session  " $o/$b.txt | cut -c1-100; pack
done
gzip -9 $o/*.json; pack
