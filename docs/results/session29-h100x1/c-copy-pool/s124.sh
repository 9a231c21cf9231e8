set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 29, call 5: p = large host copies split over a kept pool of threads (16 at most, no
# thread started per copy) against z = b9a9d9f (a thread started per part, 8 at most).
# saxpy 2^28 on the H100 alone at several copy threads / slot sizes, alternated; then with the
# CPU too; then a session's first-step uploads and results home (chain, iterate).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s124.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
sx() { # name bin devices threads slot
  [ $(el) -gt 330 ] && return
  HETDSL_DEVICES=$3 HETDSL_COPY_THREADS=$4 HETDSL_STAGING_SLOT_MIB=$5 timeout 60 .device/$2/saxpy 268435456 --calls 5 > $o/$1.txt 2>&1
  echo "$1 rc $? at $(el) s: $(grep -oE 'ROI [0-9.]+ ms \([0-9.]+ GB/s' $o/$1.txt | grep -oE '[0-9.]+ GB/s' | tr '\n' ' ')"
}
for r in 1 2; do
  sx z-t8-s32-$r t 1 8 32; sx p-t16-s32-$r p 1 16 32; sx z-t16-s128-$r t 1 16 128; sx p-t8-s32-$r p 1 8 32; sx p-t16-s64-$r p 1 16 64
done
pack
for r in 1 2; do sx all-z-$r t all 8 32; sx all-p-$r p all 16 32; done
pack
for b in b p; do
  [ $(el) -gt 330 ] && break
  timeout 60 .device/$b/iterate chain --size large --budget 3 --devices gpu --variants session --submit > $o/chain-$b.txt 2>&1
  echo "chain $b rc $? at $(el) s"; grep -E "first step|^session  " $o/chain-$b.txt | cut -c1-120
done
pack
