#!/usr/bin/env bash
# Build the samples here (the GPU machines have no Rust toolchain) and stage the binaries in
# .device/bin, which .gitignore ignores and the device tool carries.
# Then, on the GPU machine:  bash scripts/gpu-measure.sh <label>
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --examples
rm -rf .device/bin && mkdir -p .device/bin
for e in devices occupancy saxpy suite inflection copyrate waves; do cp "target/release/examples/$e" .device/bin/; done
# The plots' font: the GPU machines have none and cannot install one (gpu-measure.sh points
# HETDSL_PLOT_FONT at this copy).
cp /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf .device/ 2>/dev/null || true
# Debug info makes them too large to carry (64 MiB in all); profiles need none.
strip .device/bin/*
du -sh .device/bin
