set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 29, call 1: a = device threads and the host's waits poll for 1 ms before they sleep
# (hand-overs of queued launches, and their ends), against z = the same build with no polling
# (both traced). Black-Scholes' 10 steps over the GPUs with single-GPU baselines, alternated;
# then over every device; chain and Jacobi over every device; one debug log of each.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s120.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
run() { # name bin bench devices variants [env...]
  local n=$1 b=$2 k=$3 d=$4 v=$5; shift 5
  [ $(el) -gt 470 ] && { echo "$n skipped (time)"; return; }
  env "$@" timeout 60 .device/$b/iterate $k --size large --budget 3 --devices $d --variants $v --submit --json $o/$n.json > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s:"; grep -E '^(single|session)  ' $o/$n.txt | cut -c1-90
}
for i in 1 2 3; do for b in z a; do run bsg-$b$i $b blackscholes gpu single,session; done; done
pack
for i in 1 2; do for b in z a; do run bsa-$b$i $b blackscholes all session; run cha-$b$i $b chain all session; done; done
pack
for b in z a; do RUST_LOG=hetdsl=debug timeout 40 .device/$b/iterate blackscholes --size large --budget 3 --devices gpu --variants session --submit > $o/bs-gpu-$b.log 2>&1; done
gzip -9 $o/*.log; pack
for i in 1 2; do for b in z a; do run jac-$b$i $b jacobi all session; run nbg-$b$i $b nbody gpu session; done; done
gzip -9 $o/*.json; pack
echo done at $(el) s
