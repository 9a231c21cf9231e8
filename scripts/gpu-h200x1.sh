#!/usr/bin/env bash
# One call's measurements on the one-H200 + 16-core CPU machine (OpenCL devices: 0 = PoCL CPU,
# 1 = H200), for when the device budget allows a single short call. Stage here first:
#   bash scripts/gpu-build.sh && bash scripts/gpu-iterate.sh && bash scripts/peers-build.sh
# then on the GPU machine, from the repository root, carrying .device:
#   bash scripts/gpu-h200x1.sh
# Each step has its own time limit, and everything it prints goes to $OUT/log.txt; the JSON
# and text files go into $OUT/results.tgz (the tool brings back few files).
#   1. Jacobi 16384^2 x 500 on the H200 alone: the session submitting its launches, the same
#      session running each launch to its end, and the hand-written opencl3 loop.
#   2. The saxpy chain and Black-Scholes on the H200 alone, submitted and run.
#   3. saxpy 2^28 on the H200 alone: bytes moved over the ROI, and the call's wall time.
#   4. SUITE_ARGS, if set: the suite with those arguments (e.g. the memory-bound kernels).
#   5. PEER_KERNELS (default none): scripts/peers-run.sh on those kernels, trimmed sweeps.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-results/h200x1}/run
mkdir -p "$out"
log=${OUT:-results/h200x1}/log.txt
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd 2>/dev/null || true
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin
step() { # step NAME LIMIT COMMAND...: run it, its output into $out/NAME.txt and the log
    local name=$1 limit=$2
    shift 2
    echo "== $name: $*" | tee -a "$log"
    local t0=$SECONDS
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1
    local rc=$?
    tail -n 25 "$out/$name.txt" >> "$log"
    echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$log"
}
{ date -u; nvidia-smi -L 2>&1; nproc; git log -1 --format=%H 2>/dev/null; } > "$out/machine.txt"
cat "$out/machine.txt" >> "$log"

step jacobi-submit 60 $b/iterate jacobi --size large --devices 1 --variants single,opencl3 \
    --submit --json "$out/jacobi-submit.json"
step jacobi-run 60 $b/iterate jacobi --size large --devices 1 --variants single \
    --json "$out/jacobi-run.json"
for bench in chain blackscholes; do
    step "$bench-submit" 60 $b/iterate $bench --size large --devices 1 --variants single \
        --submit --json "$out/$bench-submit.json"
    step "$bench-run" 60 $b/iterate $bench --size large --devices 1 --variants single \
        --json "$out/$bench-run.json"
done
step saxpy-h200 60 env HETDSL_DEVICES=1 $b/saxpy 268435456 --json "$out/saxpy-h200.json"
if [ -n "${SUITE_ARGS:-}" ]; then
    # shellcheck disable=SC2086
    step suite "${SUITE_TIMEOUT:-180}" $b/suite $SUITE_ARGS --json "$out/suite.json"
fi
if [ -n "${PEER_KERNELS:-}" ]; then
    step peers "${PEER_TIMEOUT_ALL:-200}" env REPS=1 PEER_TIMEOUT=60 ENGINECL_STATIC=1.0,0.99 \
        ENGINECL_DYNAMIC=128 STARPU_SCHEDS="dmda eager" STARPU_BLOCKS=128 STARPU_DMDA_BLOCKS=128 \
        CALIBRATE_RUNS=2 KERNELS="$PEER_KERNELS" bash scripts/peers-run.sh "$out/peers"
fi
tar czf "${OUT:-results/h200x1}/results.tgz" -C "$out" . 2>/dev/null
echo "done" | tee -a "$log"
