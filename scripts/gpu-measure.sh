#!/usr/bin/env bash
# Every measurement of docs/RESULTS.md for one machine, in one go (run on the GPU machine from
# the repository root, after scripts/gpu-build.sh here). Writes results/<label>/ and, where the
# device tool's $OUT is set, one archive of it there ($OUT/<label>.tgz, the only file).
#   bash scripts/gpu-measure.sh h200x1 [suite flags...]
# Environment (all optional; unset keeps the earlier behaviour):
#   SETS      device sets of the suite, separated by spaces: one suite run each (default all).
#             A set holding `/` (e.g. 0,1/1,2/0,1,2,3,4) is ONE suite run over several sets:
#             each device is timed alone once, then every set x balancer is co-executed.
#   BALANCERS, REPS, SUITE_TIMEOUT   the suite's balancers (all), repetitions (3), limit (1500 s)
#   SUITE=0   skip the suite;  SAXPY=0  skip the saxpy read-back/overhead runs
#   INFLECT=1 also run the inflection-point runner on INFLECT_DEVICES (1,2) with
#             INFLECT_BALANCER (sigmoid), INFLECT_KERNELS (all), INFLECT_FROM..INFLECT_TO
#             (-14..-3), INFLECT_SIZE (paper), INFLECT_REPS (REPS, else 3), limit INFLECT_TIMEOUT (900 s)
#   BUDGET    seconds this whole script may take (e.g. 560 under the device tool's 600 s limit):
#             every step's limit is cut to what is left, minus a margin for the archive, so
#             that a late step is cut short rather than the call killed before the archive is
#             written (the suite and inflection write their JSON after every kernel).
set -uo pipefail
budget_end=$(( $(date +%s) + ${BUDGET:-100000} ))
# The limit for a step that would take up to $1 seconds: what the budget leaves, 20 s kept
# for the archive; 1 when nothing is left.
limit() {
  local left=$(( budget_end - $(date +%s) - 20 ))
  (( left < 1 )) && left=1  # `timeout 0` would mean no limit
  echo $(( $1 < left ? $1 : left ))
}
label=${1:?label, e.g. h200x1}; shift || true
bin=.device/bin
out=results/$label
mkdir -p "$out/plots"
# NVIDIA's OpenCL driver must be registered with the ICD loader: the GPU machines ship the
# library but no /etc/OpenCL/vendors entry naming it.
[ -f /usr/lib/libnvidia-opencl.so.1 ] && echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export HETDSL_KERNELS=$PWD/kernels
[ -f .device/DejaVuSans.ttf ] && export HETDSL_PLOT_FONT=$PWD/.device/DejaVuSans.ttf
{ date -u; nvidia-smi -L; nproc; uname -r; } > "$out/machine.txt" 2>&1
$bin/devices > "$out/devices.txt" 2>&1; cat "$out/devices.txt"
$bin/occupancy > "$out/occupancy.txt" 2>&1
# Read-back rate and per-package overhead on a memory-bound kernel, all devices and GPUs only.
if [ "${SAXPY:-1}" != 0 ]; then
  for devs in all gpu; do
    HETDSL_DEVICES=$devs timeout $(limit 300) $bin/saxpy 268435456 --json "$out/saxpy-$devs.json" > "$out/saxpy-$devs.txt" 2>&1
  done
fi
# The suite at paper size on the device sets given by SETS (indices of the unified list printed
# in devices.txt, or all/gpu/cpu; default: every device), with the balancers in BALANCERS
# (default: all) and REPS repetitions (median ROI). Files are named after the set, `,` and `/`
# made `_` and `-` (SETS=0,1/1,2 writes suite-0_1-1_2.json).
if [ "${SUITE:-1}" != 0 ]; then
  for set in ${SETS:-all}; do
    name=${set//,/_}; name=${name//\//-}
    { date -u; echo "suite --devices $set"; } >> "$out/timeline.txt"
    timeout $(limit ${SUITE_TIMEOUT:-1500}) $bin/suite --size paper --balancers "${BALANCERS:-all}" --devices "$set" \
        --reps ${REPS:-3} --json "$out/suite-$name.json" --plots "$out/plots/$name" "$@" \
        2>&1 | tee "$out/suite-$name.txt"
  done
fi
# The inflection point (EngineCL optimisation study): the fastest device of INFLECT_DEVICES
# alone vs co-execution on them, over growing sub-ranges of each kernel.
if [ "${INFLECT:-0}" = 1 ]; then
  { date -u; echo "inflection --devices ${INFLECT_DEVICES:-1,2}"; } >> "$out/timeline.txt"
  timeout $(limit ${INFLECT_TIMEOUT:-900}) $bin/inflection --size ${INFLECT_SIZE:-paper} --devices "${INFLECT_DEVICES:-1,2}" \
      --balancer "${INFLECT_BALANCER:-sigmoid}" --kernels "${INFLECT_KERNELS:-all}" --reps ${INFLECT_REPS:-${REPS:-3}} \
      --from ${INFLECT_FROM:--14} --to ${INFLECT_TO:--3} --json "$out/inflection.json" \
      2>&1 | tee "$out/inflection.txt"
fi
date -u >> "$out/timeline.txt"
if [ -n "${OUT:-}" ]; then tar czf "$OUT/$label.tgz" "$out"; fi
