#!/usr/bin/env bash
# Every measurement of docs/RESULTS.md for one machine, in one go (run on the GPU machine from
# the repository root, after scripts/gpu-build.sh here). Writes results/<label>/ and, where the
# device tool's $OUT is set, one archive of it there.
#   bash scripts/gpu-measure.sh h200x1 [suite flags...]
set -uo pipefail
label=${1:?label, e.g. h200x1}; shift || true
bin=.device/bin
out=results/$label
mkdir -p "$out/plots"
# NVIDIA's OpenCL driver must be registered with the ICD loader (see ../shared/DESIGN.md).
[ -f /usr/lib/libnvidia-opencl.so.1 ] && echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export HETDSL_KERNELS=$PWD/kernels
{ date -u; nvidia-smi -L; nproc; uname -r; } > "$out/machine.txt" 2>&1
$bin/devices > "$out/devices.txt" 2>&1; cat "$out/devices.txt"
$bin/occupancy > "$out/occupancy.txt" 2>&1
# Read-back rate and per-package overhead on a memory-bound kernel, all devices and GPUs only.
for devs in all gpu; do
  HETDSL_DEVICES=$devs timeout 300 $bin/saxpy 268435456 --json "$out/saxpy-$devs.json" > "$out/saxpy-$devs.txt" 2>&1
done
# The suite at paper size on the device sets given by SETS (indices of the unified list printed
# in devices.txt, or all/gpu/cpu; default: every device), with the balancers in BALANCERS
# (default: all) and REPS repetitions (median ROI).
for set in ${SETS:-all}; do
  timeout ${SUITE_TIMEOUT:-1500} $bin/suite --size paper --balancers "${BALANCERS:-all}" --devices "$set" \
      --reps ${REPS:-3} --json "$out/suite-${set//,/_}.json" --plots "$out/plots/${set//,/_}" "$@" \
      2>&1 | tee "$out/suite-${set//,/_}.txt"
done
if [ -n "${OUT:-}" ]; then tar czf "$OUT/$label.tgz" "$out"; fi
