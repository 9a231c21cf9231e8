set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 16, call 5 on one H200 + 16-core CPU: the staging ring's repeated calls of memory-bound
# kernels in several pieces (elementwise: 4 pieces of 136 MB each way on the GPU). Builds: before
# (whole staging, 96a2fa5), after (1724c46: 2 slots of 32 MiB each way, output parts merged
# between input slots), slots4 (4 slots each way), nopump (no merging between input slots), and
# after with 64 MiB slots (HETDSL_STAGING_SLOT_MIB=64). Two rounds, the variants alternated.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/it3; o=$OUT/r; mkdir -p $o; T0=$(date +%s)
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
M=saxpy,elementwise,reduction,matvec,stencil3d
for r in 1 2; do
  for v in after before slots4 nopump s64; do
    bin=suite; mib=32
    case $v in before) bin=suite-before;; slots4) bin=suite-slots4;; nopump) bin=suite-nopump;; s64) mib=64;; esac
    [ $(( 600 - ($(date +%s) - T0) )) -gt 60 ] || { echo "skipped $v$r"; continue; }
    t0=$(date +%s)
    HETDSL_STAGING_SLOT_MIB=$mib timeout 100 $b/$bin --size paper --balancers default --energy off --reps 5 --settle 2 --kernels $M --devices all --json $o/$v$r.json > $o/$v$r.txt 2>&1
    echo "$v$r rc $? $(( $(date +%s) - t0 )) s: $(grep -E '^[a-z0-9]+ +default' $o/$v$r.txt | awk '{printf "%s %s/%s  ", $1, $3, $4}')"
  done
done
tar czf $OUT/s41.tgz -C $OUT r && rm -rf $o
