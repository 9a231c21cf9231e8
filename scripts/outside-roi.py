#!/usr/bin/env python3
"""Where one-shot calls spend their time outside the ROI, from a run's debug log.

Reads the `run ended` events a run writes with `RUST_LOG=hetdsl::engine::run=debug` (a log
file, gzipped or not) and prints, per kernel and number of devices taking part, the median of
the milliseconds before the ROI (checking the launch, starting threads, set-up), in it, after
it (waiting for the threads, the report) and of the whole call.

    python3 scripts/outside-roi.py docs/results/session37-h200x2/c-membound-papers/membound.log.gz
"""
import gzip
import re
import statistics
import sys

FIELDS = ["before_roi_ms", "roi_ms", "after_roi_ms", "call_ms"]


def main(path):
    opener = gzip.open if path.endswith(".gz") else open
    rows = {}
    with opener(path, "rt") as log:
        for line in log:
            line = re.sub(r"\x1b\[[0-9;]*m", "", line)
            if "run ended" not in line:
                continue
            kernel = re.search(r'kernel="(\w+)"', line).group(1)
            devices = int(re.search(r"devices=(\d+)", line).group(1))
            fields = {m.group(1): float(m.group(2)) for m in re.finditer(r"(\w+_ms)=([0-9.e-]+)", line)}
            rows.setdefault((kernel, devices), []).append(fields)
    print(f"{'kernel':<12}{'devices':>8}{'calls':>7}" + "".join(f"{f:>15}" for f in FIELDS))
    for (kernel, devices), calls in sorted(rows.items()):
        medians = [statistics.median(c[f] for c in calls) for f in FIELDS]
        print(f"{kernel:<12}{devices:>8}{len(calls):>7}" + "".join(f"{m:>15.3f}" for m in medians))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
