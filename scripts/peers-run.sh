#!/usr/bin/env bash
# hetdsl, EngineCL and StarPU side by side on the same kernels, inputs, sizes and devices (every
# OpenCL device of the machine), one run per kernel, each output checked against the CPU
# reference. Run from the repository root after scripts/peers-build.sh staged .device/peers:
#   bash scripts/peers-run.sh OUTDIR
# Writes OUTDIR/hetdsl_<kernel>.json (saxpy: .r<N>.json), {enginecl,starpu}_<kernel>.jsonl,
# OUTDIR/summary.json and prints the table: per kernel, each peer's fastest correct setting, its
# ROI and its ratio to hetdsl's.
# Environment (defaults in brackets):
#   SIZE [paper]   KERNELS [saxpy binomial gaussian mandelbrot nbody rap bm3d ray1 ray2]
#   REPS [3]
#   ENGINECL_STATIC [1.0,0.995,0.99,0.98,0.95,0.9]  GPU share of EngineCL's Static scheduler
#   ENGINECL_DYNAMIC [512,256,128,1024,64,32]       chunk counts of its Dynamic scheduler
#   STARPU_SCHEDS [dmda eager ws]  STARPU_BLOCKS [512,256,128,1024,64,32]
#   STARPU_DMDA_BLOCKS [512,256,128]  dmda's block counts, each calibrated by CALIBRATE_RUNS [3]
#               runs under STARPU_CALIBRATE=1 first (calibration places blocks on every worker,
#               the CPU included, until each block size is measured: few large blocks cost most)
#   CUTOFF [3]  a setting whose first run is CUTOFF x slower than the peer's best so far is not
#               repeated. A CPU beside H200s is ~100x slower than one at paper size: a GPU share
#               of 0.5, or 8 chunks of which the CPU takes one, would run for minutes, so the
#               sweeps stay where such machines can be fast and start from the likely best.
#   PEER_TIMEOUT [900]  seconds each peer's run of one kernel may take
# Where the device tool's $OUT is set, OUTDIR (without the inputs) is archived there after every
# kernel (a call cut short by its time limit keeps what it finished).
#   BIN [.device/peers/bin]  DATA [OUTDIR/data]  (inputs and references, regenerated per kernel)
set -uo pipefail
out=${1:?OUTDIR}
mkdir -p "$out"
here=$(pwd)
stage=${STAGE:-$here/.device/peers}
bin=${BIN:-$stage/bin}
data=${DATA:-$out/data}
size=${SIZE:-paper}
reps=${REPS:-3}
kernels=${KERNELS:-saxpy binomial gaussian mandelbrot nbody rap bm3d ray1 ray2}
limit=${PEER_TIMEOUT:-900}
export HETDSL_KERNELS=$here/kernels

# NVIDIA's OpenCL driver must be registered with the ICD loader where the machine ships the
# library without a vendors entry.
if [ -f /usr/lib/libnvidia-opencl.so.1 ] && ! grep -qs nvidia /etc/OpenCL/vendors/*.icd; then
    mkdir -p /etc/OpenCL/vendors
    echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
fi
# The staged libraries, for the peers' drivers only (hetdsl's binaries and the machine's OpenCL
# drivers in them keep the machine's own); the common ones only if the machine lacks them (its
# own are newer, and its OpenCL drivers in the same process may need them).
libs=$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if LD_LIBRARY_PATH=$libs ldd "$bin/starpu-driver" "$bin/enginecl-driver" 2>/dev/null | grep -q 'not found'; then
    libs=$libs:$stage/lib-fallback
fi
peer() { LD_LIBRARY_PATH=$libs timeout "$limit" "$@"; }
# StarPU: OpenCL workers only, the CPU included through its OpenCL device (as hetdsl and EngineCL
# use it), its calibration files kept with the results.
export STARPU_OPENCL_ON_CPUS=1 STARPU_NCPU=0 STARPU_NCUDA=0 STARPU_SILENT=1
export STARPU_HOME=${STARPU_HOME:-$out/starpu-home}
mkdir -p "$STARPU_HOME"
{ date -u; nproc; command -v nvidia-smi >/dev/null && nvidia-smi -L; } > "$out/machine.txt" 2>&1

# OUTDIR without the inputs, into the device tool's $OUT where set: after every kernel, so that a
# call cut short by its time limit still brings back every kernel it finished.
archive() {
    if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
        "$bin/peers_io" --summarize "$out" > "$out/summary.txt" 2>&1
        tar czf "$OUT/$(basename "$out").tgz" --exclude=data -C "$out" .
    fi
}

for k in $kernels; do
    echo "== $k ($size)"
    rm -rf "${data:?}/$k"
    "$bin/peers_io" --size "$size" --out "$data" --kernels "$k" || { echo "peers_io failed for $k"; continue; }
    # hetdsl: no balancer given (HETDSL_BALANCER, default `default`: the suite's timed runs follow
    # an untimed one, so they are repeated calls, which start from the last run's split), no
    # tuning, every device; `sigmoid` gives every run a fresh Sigmoid, as a first call.
    if [ "$k" = saxpy ]; then
        n=$(awk '/^global /{print $2}' "$data/saxpy/desc.txt")
        # REPS runs of two calls each (the second, a repeated call, is reported), the summary
        # takes their median; any failure counts.
        rc=0
        for r in $(seq "$reps"); do
            timeout "$limit" "$bin/saxpy" "$n" --calls 2 --json "$out/hetdsl_saxpy.r$r.json" > "$out/hetdsl_saxpy.txt" 2>&1 || rc=$?
        done
        echo "$rc" > "$out/hetdsl_saxpy.ok"
    else
        timeout "$limit" "$bin/suite" --kernels "$k" --balancers "${HETDSL_BALANCER:-default}" \
            --devices all --size "$size" \
            --reps "$reps" --energy off --json "$out/hetdsl_$k.json" > "$out/hetdsl_$k.txt" 2>&1
    fi
    tail -n 3 "$out/hetdsl_$k.txt"
    # EngineCL: every device, Static over the GPU shares, Dynamic over the chunk counts.
    # A driver killed by a signal (a crash inside EngineCL) is run once more: the death, its
    # signal and the first attempt's output stay in the .err file and the WARNING below.
    if [ -x "$bin/enginecl-driver" ]; then
        : > "$out/enginecl_$k.err"
        for attempt in 1 2; do
            (cd "$here" && peer "$bin/enginecl-driver" "$data/$k" --kernels kernels --size "$size" \
                --reps "$reps" --cutoff "${CUTOFF:-3}" --static "${ENGINECL_STATIC:-1.0,0.995,0.99,0.98,0.95,0.9}" \
                --dynamic "${ENGINECL_DYNAMIC:-512,256,128,1024,64,32}") > "$out/enginecl_$k.jsonl" 2>> "$out/enginecl_$k.err"
            rc=$?
            [ "$rc" -lt 128 ] && break
            { echo "enginecl-driver: attempt $attempt died with status $rc (signal $((rc - 128)));" \
                "its output:"; cat "$out/enginecl_$k.jsonl"; } >> "$out/enginecl_$k.err"
            echo "peers: WARNING: enginecl-driver died on $k with status $rc (attempt $attempt of 2)"
        done
    fi
    cat "$out/enginecl_$k.jsonl" 2>/dev/null
    # StarPU: each scheduler over the block counts; dmda's performance models calibrated first.
    : > "$out/starpu_$k.jsonl"
    for sched in ${STARPU_SCHEDS:-dmda eager ws}; do
        blocks=${STARPU_BLOCKS:-512,256,128,1024,64,32}
        if [ "$sched" = dmda ] || [ "$sched" = dm ] || [ "$sched" = dmdas ]; then
            blocks=${STARPU_DMDA_BLOCKS:-512,256,128}
            STARPU_CALIBRATE=1 peer "$bin/starpu-driver" "$data/$k" --kernels kernels \
                --sched "$sched" --blocks "$blocks" --reps 0 --warmup "${CALIBRATE_RUNS:-3}" \
                --size "$size" >> "$out/starpu_$k.err" 2>&1
        fi
        peer "$bin/starpu-driver" "$data/$k" --kernels kernels --sched "$sched" \
            --blocks "$blocks" --reps "$reps" --warmup 1 --size "$size" --cutoff "${CUTOFF:-3}" \
            >> "$out/starpu_$k.jsonl" 2>> "$out/starpu_$k.err"
    done
    cat "$out/starpu_$k.jsonl"
    # The inputs of a paper-sized kernel take up to a GiB: only the current kernel's are kept.
    [ "$size" = paper ] && rm -rf "${data:?}/$k"
    archive
done
"$bin/peers_io" --summarize "$out" | tee "$out/summary.txt"
archive
