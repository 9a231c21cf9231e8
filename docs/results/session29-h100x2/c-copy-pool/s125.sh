set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 29, call 6: q = host copies on a kept pool of 16 threads at most (idle threads poll
# 50 us) against y = b9a9d9f, on the two-GPU machine: saxpy 2^28 on one GPU, the GPUs and
# every device, alternated; the memory-bound kernels, default against static; sessions' first
# steps and results home; Black-Scholes' ten steps.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s125.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
sx() { # name bin devices
  [ $(el) -gt 420 ] && return
  HETDSL_DEVICES=$3 timeout 60 .device/$2/saxpy 268435456 --calls 5 > $o/$1.txt 2>&1
  echo "$1 rc $? at $(el) s: $(grep -oE 'ROI [0-9.]+ ms \([0-9.]+ GB/s' $o/$1.txt | grep -oE '[0-9.]+ GB/s' | tr '\n' ' ')"
}
for r in 1 2; do for d in 1 gpu all; do for b in y q; do sx saxpy-$d-$b$r $b $d; done; done; done
pack
for b in q y; do
  [ $(el) -gt 380 ] && break
  timeout 150 .device/$b/suite --size paper --balancers default,static --devices all --reps 3 --settle 3 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound-$b.json > $o/membound-$b.txt 2>&1
  echo "membound $b rc $? at $(el) s"; pack
done
for b in q y; do
  [ $(el) -gt 470 ] && break
  timeout 40 .device/$b/iterate chain --size large --budget 3 --devices all --variants session --submit > $o/chain-$b.txt 2>&1
  echo "chain $b rc $? at $(el) s"; grep -E "first step|^session  " $o/chain-$b.txt | cut -c1-120
done
[ $(el) -lt 490 ] && { timeout 40 .device/q/iterate blackscholes --size large --budget 3 --devices gpu --variants single,session --submit > $o/bs-q.txt 2>&1; grep -E "^(single|session)  " $o/bs-q.txt | cut -c1-90; }
gzip -9 $o/*.json 2>/dev/null; pack
echo done at $(el) s
