#!/usr/bin/env bash
# The simulator's printed output on every scenario and every committed suite run replayed,
# with and without the engine's back-ups, plus package traces, compared with the outputs
# committed under hetdsl/tests/golden/simulate (the finer, bit-level check of every run,
# losses included, is the test hetdsl/tests/sim_golden.rs).
#
#   scripts/sim-golden.sh            compare; exit 1 and show the difference if any changed
#   scripts/sim-golden.sh --write    rewrite the committed outputs (say why in the commit)
#   scripts/sim-golden.sh --out DIR  only write the outputs to DIR
set -euo pipefail
cd "$(dirname "$0")/.."
golden=hetdsl/tests/golden/simulate
mode=check
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
case "${1:-}" in
  --write) mode=write ;;
  --out) mode=out; out=$2; mkdir -p "$out"; trap - EXIT ;;
  "") ;;
  *) echo "usage: $0 [--write | --out DIR]" >&2; exit 2 ;;
esac
cargo build --release --quiet --example simulate
sim=target/release/examples/simulate
replays=()
# The runs the goldens were made from (a fixed list, as in hetdsl/tests/sim_golden.rs: a new
# measurement under docs/results must not change what this compares).
for f in h200x1b/suite-all-backups.json h200x1b/suite-all.json h200x2/suite-all.json \
         h200x2/suite-gpu.json h200x2g/suite-0_1-all-gpu.json h200x2h/suite-all.json \
         h200x4/suite-0_1-1_2-0_1_2-gpu-all.json h200x4c/suite-0_1-1_2-0_1_2-gpu-all.json \
         h200x4cpu/suite-0_1-0_1_2-all.json h200x4e/suite-gpu.json \
         h200x4f/suite-0_1-1_2-0_1_2-gpu-all.json; do
  replays+=(--replay "docs/results/$f")
done

$sim > "$out/scenarios.txt"
$sim --backups > "$out/scenarios-backups.txt"
$sim --seed 7 > "$out/scenarios-seed7.txt"
$sim "${replays[@]}" > "$out/replays.txt"
$sim "${replays[@]}" --backups > "$out/replays-backups.txt"
$sim --scenario h200 --machine "2 H200" --trace --backups \
  --balancer sigmoid --balancer dynamic:128 --balancer hguided-tuned > "$out/trace-h200-2gpu-backups.txt"
$sim --scenario batel --trace --backups > "$out/trace-batel-backups.txt"
$sim "${replays[@]}" --trace --backups --balancer sigmoid --balancer hguided-tuned \
  > "$out/trace-replays-backups.txt"
# The large traces are kept as checksums only.
for big in trace-batel-backups trace-replays-backups; do
  (cd "$out" && sha256sum "$big.txt" > "$big.sha256" && rm "$big.txt")
done

case $mode in
  out) echo "wrote $(ls "$out" | wc -l) files to $out" ;;
  write) rm -rf "$golden"; mkdir -p "$golden"; cp "$out"/* "$golden"/; echo "rewrote $golden" ;;
  check)
    if diff -ru "$golden" "$out" > "$out.diff"; then
      echo "simulator output unchanged ($(ls "$golden" | wc -l) files)"; rm -f "$out.diff"
    else
      head -100 "$out.diff"; echo "simulator output CHANGED (full diff: $out.diff)"; exit 1
    fi ;;
esac
