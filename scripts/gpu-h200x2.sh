#!/usr/bin/env bash
# The measurements of docs/RESULTS.md on the two-H200 + 32-core CPU machine (OpenCL devices:
# 0 = PoCL CPU, 1 and 2 = H200), in three parts that each fit one call of the device tool.
# Stage here first (each stages into .device/, which .gitignore ignores):
#   bash scripts/gpu-build.sh && bash scripts/gpu-iterate.sh && bash scripts/mpi-stage.sh \
#     && bash scripts/peers-build.sh
# then on the GPU machine, from the repository root, carrying .device:
#   bash scripts/gpu-h200x2.sh node       # one-shot calls: kept buffers, memory-bound, suite
#   bash scripts/gpu-h200x2.sh relaunch   # repeated calls: the last run's split against Sigmoid
#   bash scripts/gpu-h200x2.sh sessions   # iterative benchmarks, submitted and run
#   bash scripts/gpu-h200x2.sh mpi        # two ranks against one process (MPI_ARGS: its options)
#   bash scripts/gpu-h200x2.sh peers      # EngineCL and StarPU beside hetdsl
# Each step has its own limit, cut to what BUDGET (seconds for the part, default 540) leaves;
# everything a step prints goes to $OUT/<part>/<step>.txt, its tail and exit status to
# $OUT/log.txt, and the part's files into $OUT/<part>.tgz (the tool brings back few files).
set -uo pipefail
cd "$(dirname "$0")/.."
part=${1:?part: node, relaunch, sessions, mpi or peers}
root=${OUT:-results/h200x2}
out=$root/$part
mkdir -p "$out"
log=$root/log.txt
budget_end=$(( $(date +%s) + ${BUDGET:-540} ))
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd 2>/dev/null || true
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin

step() { # step NAME LIMIT COMMAND...: run it within LIMIT and what the budget leaves
    local name=$1 limit=$2
    shift 2
    local left=$(( budget_end - $(date +%s) - 15 ))
    if (( left < 5 )); then
        echo "== $name: SKIPPED, the part's budget is spent" | tee -a "$log"
        return
    fi
    (( limit > left )) && limit=$left
    echo "== $name (limit $limit s): $*" | tee -a "$log"
    local t0=$SECONDS
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1
    local rc=$?
    tail -n "${TAIL:-12}" "$out/$name.txt" >> "$log"
    echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$log"
}

{ date -u; nvidia-smi -L 2>&1; nproc; git log -1 --format=%H 2>/dev/null; } > "$out/machine.txt"
cat "$out/machine.txt" >> "$log"

case $part in
node)
    # Kept buffers: the same saxpy call five times, buffers kept (the default) and freed.
    step saxpy-h200-keep 60 env HETDSL_DEVICES=1 $b/saxpy 268435456 --calls 5 \
        --json "$out/saxpy-h200-keep.json"
    step saxpy-h200-nokeep 60 env HETDSL_DEVICES=1 $b/saxpy 268435456 --calls 5 --no-keep
    step saxpy-all-keep 60 env HETDSL_DEVICES=all $b/saxpy 268435456 --calls 5 \
        --json "$out/saxpy-all-keep.json"
    # Memory-bound kernels: every balancer, every device, three repetitions, each device
    # timed alone on the whole problem.
    step suite-membound 200 $b/suite --size paper --kernels saxpy,elementwise,reduction,matvec \
        --balancers all --devices all --reps 3 --alone full --energy off \
        --json "$out/suite-membound.json"
    # The papers' kernels: the default balancer on every device and on the two GPUs.
    step suite-paper 400 $b/suite --size paper --balancers sigmoid --devices all/gpu --reps 3 \
        --energy off --json "$out/suite-paper.json" \
        --kernels "${PAPER_KERNELS:-nbody,mandelbrot,binomial,gaussian,taylor,rap,bm3d,ray1,ray2,stencil3d}"
    ;;
relaunch)
    # Repeated calls: no balancer given (`default`: Sigmoid on a first run, the last run's split
    # on a repeated one) beside a fresh Sigmoid every run (what a first call does).
    step saxpy-all-default 60 env HETDSL_DEVICES=all $b/saxpy 268435456 --calls 5 \
        --json "$out/saxpy-all-default.json"
    step suite-membound 120 $b/suite --size paper --kernels saxpy,elementwise,reduction,matvec \
        --balancers default,sigmoid,static,static-rev,linear2p --devices all --reps 3 \
        --alone full --energy off --json "$out/suite-membound.json"
    step suite-paper 420 $b/suite --size paper --balancers default,sigmoid --devices all/gpu \
        --reps 3 --energy off --json "$out/suite-paper.json" \
        --kernels "${PAPER_KERNELS:-nbody,mandelbrot,binomial,rap,gaussian,taylor,bm3d,ray1,ray2}"
    ;;
sessions)
    it=$b/iterate
    # One H200: the session's own overhead against the hand-written loop.
    step jacobi-h200 60 $it jacobi --size large --devices 1 --variants single,opencl3 --submit \
        --json "$out/jacobi-h200.json"
    # Two H200s, then every device: submitted launches, then launches run to their end.
    step iterate-gpu-submit 150 $it all --size large --budget 8 --devices 1,2 \
        --variants single,session --submit --json "$out/iterate-gpu-submit.json"
    step iterate-gpu-run 100 $it all --size large --budget 8 --devices 1,2 \
        --variants session --json "$out/iterate-gpu-run.json"
    # NBody large enough to fill both GPUs (2^17 bodies are 1024 work-groups: under one wave
    # of one H200, so halving them does not halve the time).
    step nbody-gpu-submit 120 $it nbody --size 524288 --steps 50 --budget 30 --devices 1,2 \
        --variants single,session --submit --json "$out/nbody-gpu-submit.json"
    step iterate-all-submit 100 $it all --size large --budget 8 --devices all \
        --variants session --submit --json "$out/iterate-all-submit.json"
    ;;
mpi)
    # Two ranks (one H200 and 16 cores each) against one process over every device.
    mkdir -p "$out/mpi"
    step mpi-compare "${BUDGET:-540}" env OUT="$out/mpi" bash scripts/mpi-run.sh compare 2 \
        ${MPI_ARGS:-}
    ;;
peers)
    step peers "${BUDGET:-540}" env REPS=1 PEER_TIMEOUT=75 ENGINECL_STATIC=1.0,0.97 \
        ENGINECL_DYNAMIC=128 STARPU_SCHEDS="dmda eager" STARPU_BLOCKS=128 STARPU_DMDA_BLOCKS=128 \
        CALIBRATE_RUNS=2 KERNELS="${PEER_KERNELS:-nbody mandelbrot binomial gaussian rap}" \
        bash scripts/peers-run.sh "$out/peers"
    ;;
*)
    echo "unknown part '$part': node, relaunch, sessions, mpi or peers" >&2
    exit 2
    ;;
esac
tar czf "$root/$part.tgz" -C "$root" "$part" 2>/dev/null
echo "== $part done" | tee -a "$log"
