#!/usr/bin/env bash
# The iterative benchmarks (examples/iterate.rs) on the GPU machine.
#
# Here (no GPU, no arguments): build examples/iterate in release, stage the stripped binary and
# the kernels in .device/ (ignored by .gitignore; the device tool carries it):
#   bash scripts/gpu-iterate.sh
# Then on the GPU machine (2x H200 + 32-core CPU; OpenCL devices 0 = PoCL CPU, 1,2 = H200), from
# the repository root, with the device tool's $OUT set, one line:
#   bash scripts/gpu-iterate.sh run
# which runs every benchmark at the large size on every device (each alone, one-shot, the
# session over all three, and the hand-written opencl3 jacobi loop) and writes
# $OUT/iterate.json (rewritten after each benchmark) and $OUT/iterate.txt. Extra arguments after
# `run` go to the binary (e.g. `run --devices 1,2` for the two GPUs only); environment:
#   BENCH   which benchmark (default all);  BUDGET  seconds a loop may run before it stops
#   early, its steps reported and checked (default 20: the CPU alone and the one-shot loops are
#   the slow ones);  LIMIT  seconds for the whole run (default 560, under the tool's 600 s).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" != run ]; then
  cargo build --release --example iterate
  mkdir -p .device/bin
  cp target/release/examples/iterate .device/bin/iterate
  # Debug info would make it too large to carry (64 MiB in all); a benchmark needs none.
  strip .device/bin/iterate
  rm -rf .device/kernels && cp -r kernels .device/kernels
  du -sh .device/bin/iterate .device/kernels
  echo "staged; on the GPU machine: bash scripts/gpu-iterate.sh run   (carry .device)"
  exit 0
fi
shift
out=${OUT:-results/iterate}
mkdir -p "$out"
# NVIDIA's OpenCL driver must be registered with the ICD loader: the GPU machines ship the
# library but no /etc/OpenCL/vendors entry naming it.
[ -f /usr/lib/libnvidia-opencl.so.1 ] && [ -w /etc/OpenCL/vendors ] \
  && echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export HETDSL_KERNELS=$PWD/.device/kernels
{ date -u; nvidia-smi -L 2>&1 || true; nproc; } | tee "$out/machine.txt"
timeout "${LIMIT:-560}" .device/bin/iterate "${BENCH:-all}" --size large --budget "${BUDGET:-20}" \
  --json "$out/iterate.json" "$@" 2>&1 | tee "$out/iterate.txt"
