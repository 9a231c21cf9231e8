set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 29, call 4: saxpy 2^28 on the H100 alone, copy threads (8, 16) x staging slot (32,
# 128 MiB), two rounds: is the host's side of the transfers bound by its copy threads here?
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s123.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for r in 1 2; do for t in 8 16; do for s in 32 128; do
  [ $(el) -gt 300 ] && break
  n=saxpy-t$t-s$s-$r
  HETDSL_DEVICES=1 HETDSL_COPY_THREADS=$t HETDSL_STAGING_SLOT_MIB=$s timeout 60 .device/t/saxpy 268435456 --calls 5 > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s: $(grep -oE 'ROI [0-9.]+ ms \([0-9.]+ GB/s' $o/$n.txt | grep -oE '[0-9.]+ GB/s' | tr '\n' ' ')"
done; done; done
pack
