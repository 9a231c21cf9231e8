#!/usr/bin/env bash
# Stage hetdsl-mpi's examples (mpi_samples, mpi_compare, mpi_transfer) and Open MPI (its launcher, libraries, plugins and help files) in
# .device/mpi, so that a machine with no MPI and no Rust (the GPU machines) can run the sample
# as several ranks with scripts/mpi-run.sh. Run here, from the repository root:
#   bash scripts/mpi-stage.sh
# then carry .device/mpi to the GPU machine and run there, from the repository root:
#   bash scripts/mpi-run.sh 2 all --scale 8      or      bash scripts/mpi-run.sh compare 2
# Needs Open MPI here (apt-get install libopenmpi-dev openmpi-bin libclang-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.device/mpi
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
ompi_lib=/usr/lib/$multiarch/openmpi/lib/openmpi3
pmix_lib=/usr/lib/$multiarch/pmix2/lib/pmix
cargo build --release -p hetdsl-mpi --features mpi --example mpi_samples --example mpi_compare --example mpi_transfer
rm -rf "$out" && mkdir -p "$out"/{bin,lib,ompi,pmix,share}
for b in mpi_samples mpi_compare mpi_transfer; do
    cp "target/release/examples/$b" "$out/bin/"
    strip "$out/bin/$b"
done
cp "$(readlink -f /usr/bin/mpirun)" "$out/bin/mpirun"
cp /usr/bin/orted "$out/bin/"
# Open MPI's plugins, without those for fabrics a single machine does not use (UCX, OFI,
# InfiniBand verbs, PSM): their libraries would not be there, and shared memory and TCP serve.
for so in "$ompi_lib"/*.so; do
    case $(basename "$so") in
        *ucx*|*ofi*|*openib*|*psm*|*verbs*) ;;
        *) cp "$so" "$out/ompi/" ;;
    esac
done
cp "$pmix_lib"/*.so "$out/pmix/"
# Help texts: Open MPI finds them under $OPAL_PREFIX/share/openmpi, PMIx's are for messages.
cp -r /usr/share/openmpi "$out/share/"
# Every shared library the binaries and plugins load, except the C library's own (the GPU
# machine has a compatible one: the other staged binaries run there) and the OpenCL ICD
# loader (the machine's own must find its drivers).
files=("$out"/bin/* "$out"/ompi/*.so "$out"/pmix/*.so)
ldd "${files[@]}" 2>/dev/null | awk '/=> \// { print $3 }' | sort -u | while read -r lib; do
    case $(basename "$lib") in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libOpenCL.so*) ;;
        *) cp -L "$lib" "$out/lib/" ;;
    esac
done
du -sh "$out"
echo "staged in $out; on the GPU machine: bash scripts/mpi-run.sh 2 all --scale 8, or bash scripts/mpi-run.sh compare 2"
