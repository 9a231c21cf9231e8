#!/usr/bin/env bash
# CI: the peers' pipeline works end to end on PoCL's two CPU devices (correctness, not speed):
# both drivers build (EngineCL from a source tree outside the repository), every kernel runs
# through hetdsl, EngineCL and StarPU at the small size and matches its CPU reference, and a
# corrupted reference is caught by both drivers' checks.
# EngineCL's source: $ENGINECL_DIR, else the development machine's copy, else the public
# repository at the snapshot the drivers were written against.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
pkgs="cmake g++ pkg-config git libstarpu-dev"
# shellcheck disable=SC2086
if ! dpkg -s $pkgs >/dev/null 2>&1; then
    apt-get update
    apt-get install -y $pkgs
fi
export POCL_DEVICES=${POCL_DEVICES:-"pthread basic"}
if [ -z "${ENGINECL_DIR:-}" ]; then
    if [ -f /work/shared/peers/EngineCL/include/EngineCL.hpp ]; then
        ENGINECL_DIR=/work/shared/peers/EngineCL
    else
        ENGINECL_DIR=target/peers-build/EngineCL-src
        if [ ! -f "$ENGINECL_DIR/include/EngineCL.hpp" ]; then
            rm -rf "$ENGINECL_DIR"
            if git clone -q https://github.com/EngineCL/EngineCL "$ENGINECL_DIR"; then
                git -C "$ENGINECL_DIR" checkout -q 28b7173
            fi
        fi
    fi
fi
# Without EngineCL's source (no copy, no network) its half is skipped, loudly; the rest runs.
enginecl=1
if [ ! -f "$ENGINECL_DIR/include/EngineCL.hpp" ]; then
    echo "peers: WARNING: no EngineCL source (set ENGINECL_DIR): EngineCL NOT BUILT, NOT CHECKED"
    enginecl=0
fi
export ENGINECL_DIR
bash scripts/peers-build.sh

out=target/peers-ci
rm -rf "$out"
SIZE=small REPS=1 CALIBRATE_RUNS=1 STARPU_BLOCKS=3,8 STARPU_DMDA_BLOCKS=3,8 ENGINECL_STATIC=0.6 \
    ENGINECL_DYNAMIC=5 \
    bash scripts/peers-run.sh "$out" > "$out.log" 2>&1 || { cat "$out.log"; exit 1; }
tail -n 28 "$out.log"
grep "WARNING" "$out.log" || true
# Every setting that ran is correct, and each kernel has a correct hetdsl, StarPU and EngineCL
# row (or EngineCL's plain refusal of a pattern it cannot express).
fail=0
if cat "$out"/*.jsonl | grep -q '"ok":false'; then
    echo "peers: a wrong result (see $out)"; fail=1
fi
python3 - "$out/summary.json" "$enginecl" <<'EOF' || fail=1
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
if sys.argv[2] == "0":
    rows = [r for r in rows if r.get("peer") != "enginecl"] + [{}] * 9
bad = [r for r in rows if r and r.get("ok") is not True and r.get("supported") is not False]
for r in bad:
    print("peers: no correct run:", r.get("kernel"), r.get("peer"), r.get("missing", ""))
    # What the driver said, so that a failure on a CI machine can be read from its log.
    err = "%s/%s_%s.err" % (sys.argv[1].rsplit("/", 1)[0], r.get("peer"), r.get("kernel"))
    try:
        print("".join(open(err).readlines()[-20:]))
    except OSError:
        print("peers: no", err)
sys.exit(1 if bad or len(rows) != 27 else 0)
EOF
# The checks can fail: one reference value changed, both drivers must report a wrong result.
bad=target/peers-ci-bad
rm -rf "$bad" && .device/peers/bin/peers_io --size small --out "$bad" --kernels rap > /dev/null
python3 - "$bad/rap/check0_ref.bin" <<'EOF'
import struct, sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
data[8:16] = struct.pack("<d", struct.unpack("<d", bytes(data[8:16]))[0] + 1)
open(path, "wb").write(bytes(data))
EOF
export LD_LIBRARY_PATH=$PWD/.device/peers/lib STARPU_OPENCL_ON_CPUS=1 STARPU_NCPU=0 STARPU_SILENT=1 STARPU_HOME=$out/starpu-home
drivers=("starpu-driver $bad/rap --sched eager --blocks 2")
[ "$enginecl" = 1 ] && drivers+=("enginecl-driver $bad/rap --dynamic 2")
for driver in "${drivers[@]}"; do
    # shellcheck disable=SC2086
    line=$(.device/peers/bin/$driver --reps 1 --warmup 0 2>/dev/null || true)
    grep -q '"ok":false' <<<"$line" || { echo "peers: a corrupted reference passed: $driver"; fail=1; }
done
[ "$fail" = 0 ] && echo "peers: all runs correct, corrupted reference caught"
exit "$fail"
