#!/usr/bin/env bash
# CI: the MPI companion crate (hetdsl-mpi) across three ranks on this one machine. Installs
# Open MPI and libclang (the `mpi` crate's bindings need both), builds the crate's MPI test
# binary and sample, and runs each under `mpirun -n 3`; every rank uses PoCL's two CPU devices.
# A hang fails the step (timeout) instead of holding CI. Takes a minute or two.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
if ! dpkg -s libopenmpi-dev openmpi-bin libclang-dev python3 >/dev/null 2>&1; then
    apt-get update
    apt-get install -y libopenmpi-dev openmpi-bin libclang-dev python3
fi
export POCL_DEVICES="pthread basic"
# Containers often forbid the cross-memory attach Open MPI's shared-memory transport tries.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
flags=(-n 3 --oversubscribe)
[ "$(id -u)" = 0 ] && flags+=(--allow-run-as-root)
cargo build --release -p hetdsl-mpi --features mpi --example mpi_samples
test_bin=$(cargo test --release -p hetdsl-mpi --features mpi --test mpi_ranks --no-run --message-format=json |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "mpi_ranks":
        print(m["executable"])')
timeout 300 mpirun "${flags[@]}" "$test_bin"
timeout 300 mpirun "${flags[@]}" target/release/examples/mpi_samples all
