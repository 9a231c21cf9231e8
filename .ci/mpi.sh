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
cargo build --release -p hetdsl-mpi --features mpi --example mpi_samples --example mpi_compare
# The unit tests of the parts only the `mpi` feature builds (rank 0's view of the caller's
# buffers), beside the pure ones the workspace's tests already ran.
cargo test --release -p hetdsl-mpi --features mpi --lib
# The path of test binary $1 (cargo names it with a hash).
test_bin() {
    cargo test --release -p hetdsl-mpi --features mpi --test "$1" --no-run --message-format=json |
        python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[1]:
        print(m["executable"])' "$1"
}
# Each case ends the job with a failure if it outlives 60 s; the timeout catches anything else.
timeout 300 mpirun "${flags[@]}" "$(test_bin mpi_ranks)"
# Launches at their edges: uneven splits, 4:1, 1:255 and wide halos, fewer groups than ranks.
timeout 300 mpirun "${flags[@]}" "$(test_bin mpi_edges)"
# Every rank returns the same verdict: a run failing after ranks were dropped or stopped idle,
# an error's kind carried from the rank that found it.
timeout 300 mpirun "${flags[@]}" "$(test_bin mpi_verdict)"
# A rank process dying mid-launch: mpirun must end the job itself, with a failure, long before
# the timeout (124), instead of leaving the other ranks waiting for it.
set +e
timeout 120 mpirun "${flags[@]}" "$(test_bin mpi_dead_rank)"
status=$?
set -e
if [ "$status" = 0 ] || [ "$status" = 124 ]; then
    echo "mpi_dead_rank: mpirun exited with $status, expected it to end the job with a failure" >&2
    exit 1
fi
echo "test a_dead_rank_process_ends_the_job_without_a_hang ... ok (mpirun exit $status)"
# A rank returning its error from main (its Cluster dropped) between two launches: the others'
# next launch must be an error, not a wait for it (before, the job hung in MPI's finalisation).
set +e
timeout 120 mpirun "${flags[@]}" "$(test_bin mpi_left_rank)" | tee /tmp/mpi_left_rank.txt
status=${PIPESTATUS[0]}
set -e
told=$(grep -c "mpi_left_rank: rank [0-9]* ok" /tmp/mpi_left_rank.txt || true)
if [ "$status" = 124 ] || [ "$told" != 2 ]; then
    echo "mpi_left_rank: exit $status, $told of 2 ranks told that a rank left" >&2
    exit 1
fi
echo "test a_rank_leaving_the_job_is_an_error_for_the_others ... ok"
timeout 300 mpirun "${flags[@]}" target/release/examples/mpi_samples all
# The GPU comparison's two halves at a tiny size, each checked against its CPU reference.
timeout 300 target/release/examples/mpi_compare single --scale 0.0002 --reps 1
timeout 300 mpirun "${flags[@]}" target/release/examples/mpi_compare ranks --scale 0.0002 --reps 1
