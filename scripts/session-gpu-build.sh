#!/usr/bin/env bash
# Build the session example here (the GPU machines have no Rust toolchain) and stage it in
# .device/session, which .gitignore ignores. Then, on the GPU machine,
# from the repository root (the example reads kernels/saxpy.cl from ./kernels there):
#   .device/session/session_saxpy 16777216 20
# It prints each step's time and bytes moved (host->device, device->device) and exits non-zero
# on a wrong result; HETDSL_DEVICES=gpu (or 0,1) narrows the devices.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --example session_saxpy
rm -rf .device/session && mkdir -p .device/session
cp target/release/examples/session_saxpy .device/session/
# Debug info makes it too large to carry; nothing here needs it.
strip .device/session/*
du -sh .device/session
