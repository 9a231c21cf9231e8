#!/usr/bin/env bash
# Build the peers' drivers (EngineCL, StarPU) and the Rust side of the comparison here, and stage
# everything a GPU machine that fetches nothing needs in .device/peers/ (ignored by git):
#   bin/  starpu-driver, enginecl-driver, peers_io, suite, saxpy (stripped)
#   lib/  the shared libraries they load that a plain machine lacks (StarPU, hwloc, GLPK, ...,
#         EngineCL's core), found with ldd; lib-fallback/ the common ones (libstdc++, zlib, ...)
#         that peers-run.sh adds only where the machine's own are missing.
# Needs (Debian): cmake g++ pkg-config ocl-icd-opencl-dev libstarpu-dev, and an EngineCL source
# tree: ENGINECL_DIR (default /work/shared/peers/EngineCL). Then, on the GPU machine:
#   bash scripts/peers-run.sh results/peers-<label>
set -euo pipefail
cd "$(dirname "$0")/.."
ENGINECL_DIR=${ENGINECL_DIR:-/work/shared/peers/EngineCL}
stage=.device/peers
build=target/peers-build
rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib" "$stage/lib-fallback" "$build"

# StarPU: one C file against its pkg-config flags.
gcc -O2 -std=gnu11 -Wall -Wextra -DCL_TARGET_OPENCL_VERSION=120 $(pkg-config --cflags starpu-1.3) \
    peers/starpu/driver.c -o "$stage/bin/starpu-driver" $(pkg-config --libs starpu-1.3) -lOpenCL -lm

# EngineCL: its core library compiled from the tree given, with the driver.
if [ -f "$ENGINECL_DIR/include/EngineCL.hpp" ]; then
    cmake -S peers/enginecl -B "$build/enginecl" -DENGINECL_DIR="$ENGINECL_DIR" >/dev/null
    cmake --build "$build/enginecl" -j "${JOBS:-2}" >/dev/null
    cp "$build/enginecl/enginecl-driver" "$stage/bin/"
    cp "$build/enginecl/libEngineCL-core.so" "$stage/lib/"
else
    echo "peers-build: WARNING: no EngineCL source at '$ENGINECL_DIR': its driver is NOT built" >&2
fi

if [ "${NO_CARGO:-0}" != 1 ]; then
    cargo build --release --example peers_io --example suite --example saxpy
    cp target/release/examples/{peers_io,suite,saxpy} "$stage/bin/"
fi
strip "$stage"/bin/*
find "$stage/lib" -name "*.so" -exec strip {} +

# The libraries ldd resolves, except the C library family and the OpenCL loader, which must be
# the machine's own (its ICD registry, its driver's dependencies).
for exe in "$stage"/bin/*; do
    ldd "$exe" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
    name=$(basename "$lib")
    case "$name" in
        libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libOpenCL.so*|libEngineCL-core.so) ;;
        libstdc++.so*|libgcc_s.so*|libz.so*|libudev.so*) cp -L "$lib" "$stage/lib-fallback/$name" ;;
        *) cp -L "$lib" "$stage/lib/$name" ;;
    esac
done
du -sh "$stage"; ls "$stage/lib" "$stage/lib-fallback"
