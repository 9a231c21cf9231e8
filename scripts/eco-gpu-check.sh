#!/usr/bin/env bash
# On a GPU machine, after scripts/gpu-build.sh here: the NVML energy readings through
# nvml-wrapper (the suite's energy columns), the Chrome traces and PNG plots of a short suite
# run on the GPUs. Writes results/eco-check/ (and $OUT/eco-check.tgz under the device tool).
#   bash scripts/eco-gpu-check.sh
set -uo pipefail
bin=.device/bin
out=results/eco-check
mkdir -p "$out"
[ -f /usr/lib/libnvidia-opencl.so.1 ] && echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export HETDSL_KERNELS=$PWD/kernels
[ -f .device/DejaVuSans.ttf ] && export HETDSL_PLOT_FONT=$PWD/.device/DejaVuSans.ttf
$bin/devices > "$out/devices.txt" 2>&1
RUST_LOG=hetdsl=info timeout 300 $bin/suite --size paper --kernels mandelbrot,binomial \
    --balancers sigmoid,dynamic --devices gpu --reps 1 --energy on --json "$out/suite.json" \
    --plots "$out/plots" --plot-format both --trace "$out/traces" > "$out/suite.txt" 2> "$out/suite.err"
echo "suite exit $?" >> "$out/suite.txt"
# NVML read through nvml-wrapper: every GPU domain by the driver's counter or power samples.
{ echo "nvml domains:"; grep -c '"method": "nvml-' "$out/suite.json"
  echo "unreadable:"; grep -A3 '"unavailable"' "$out/suite.json" | head -20
  ls "$out/plots" "$out/traces"; } > "$out/check.txt" 2>&1
cat "$out/suite.txt" "$out/check.txt"
[ -n "${OUT:-}" ] && tar czf "$OUT/eco-check.tgz" -C results eco-check
