set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 16, call 3 on one H200 + 16-core CPU: why saxpy's repeated calls are slower through the
# staging ring. saxpy 2^28 on the GPU alone, four calls per process: staging the size of every
# buffer (before) against ring slots of 16, 32 and 64 MiB (HETDSL_STAGING_SLOT_MIB), and 16 MiB
# slots copied by twice the threads (share2: a copy's share per thread 2 MiB instead of 4).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/it3; o=$OUT/r; mkdir -p $o
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for r in 1 2 3; do
  for v in before s16 s32 s64 share2; do
    bin=$b/saxpy; mib=16
    case $v in before) bin=$b/saxpy-before;; s32) mib=32;; s64) mib=64;; share2) bin=$b/saxpy-share2;; esac
    HETDSL_STAGING_SLOT_MIB=$mib HETDSL_DEVICES=1 timeout 60 $bin 268435456 --calls 4 > $o/saxpy-$v$r.txt 2>&1; echo "$v$r rc $? $(grep -E '^call [123]' $o/saxpy-$v$r.txt | sed 's/.*ROI \([0-9.]*\) ms.*/\1/' | tr '\n' ' ')"
  done
done
tar czf $OUT/s38.tgz -C $OUT r && rm -rf $o
