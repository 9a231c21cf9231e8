set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 20, call 6 on one H100 + 16 cores: stencil3d's efficiency above 1 (call 4). The same
# single package on the GPU as the default's repeated-call plan (GPU only and every device)
# against the suite's one-package baseline, twice each, binaries of 7599332.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for round in 1 2; do
  for set in gpu all; do
    timeout 60 .device/s20/suite-new --size paper --balancers default,static --devices $set --reps 5 --settle 3 --energy off --kernels stencil3d --json $o/stencil-$set-$round.json > $o/stencil-$set-$round.txt 2>&1; echo "$set round $round rc $? at $(( $(date +%s) - T0 )) s"
    grep -E "alone/|default |static |timed" $o/stencil-$set-$round.txt
  done
done
tar czf $OUT/s68.tgz -C $OUT r && rm -rf $o
