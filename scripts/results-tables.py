#!/usr/bin/env python3
"""Markdown tables for docs/RESULTS.md from the suite's output under docs/results/.

Reads each machine's suite-<set>.json (or, where the run died before writing JSON, the
suite-<set>.txt table it printed) and prints, per machine and device set: every kernel x
balancer row, the geomean of efficiency and balance per balancer, and the engine's host
overhead per GPU package (host span - input transfer - kernel time) from the JSON traces.
    python3 scripts/results-tables.py docs/results
"""
import json, math, os, statistics, sys


def rows_from_json(path):
    doc = json.load(open(path))
    for r in doc["runs"]:
        yield dict(kernel=r["kernel"], balancer=r["balancer"], roi=r["roi_seconds"] * 1e3,
                   speedup=r["speedup"], smax=r["smax"], eff=r["efficiency"],
                   balance=r["balance"], packages="+".join(map(str, r["packages"])),
                   correct=r["correct"], report=r["report"])


def rows_from_text(path):
    for line in open(path):
        f = line.split()
        if len(f) != 9 or f[0] == "kernel" or f[1].startswith("alone"):
            continue
        yield dict(kernel=f[0], balancer=f[1], roi=float(f[2]), speedup=float(f[3]),
                   smax=float(f[4]), eff=float(f[5]), balance=float(f[6]), packages=f[7],
                   correct=f[8] == "true", report=None)


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def overheads(rows):
    gaps = []
    for r in rows:
        rep = r["report"]
        if not rep:
            continue
        gpus = {d["index"] for d in rep["devices"] if d["kind"] == "Gpu"}
        for t in rep["trace"]:
            k, w = t["kernel_seconds"], t["written"]["seconds"]
            if t["device"] in gpus and k is not None and w is not None:
                gaps.append(max(0.0, t["host_end"] - t["host_start"] - k - w))
    return gaps


def main(root):
    for machine in sorted(os.listdir(root)):
        d = os.path.join(root, machine)
        for name in sorted(os.listdir(d)):
            if not name.startswith("suite-") or not name.endswith(".txt"):
                continue
            stem = name[:-4]
            js = os.path.join(d, stem + ".json")
            rows = list(rows_from_json(js) if os.path.exists(js) else rows_from_text(os.path.join(d, name)))
            source = stem + (".json" if os.path.exists(js) else ".txt")
            print(f"\n#### {machine}, devices `{stem[6:]}` (from `docs/results/{machine}/{source}`)\n")
            print("| kernel | balancer | ROI ms | speedup | Smax | efficiency | balance | packages | correct |")
            print("|---|---|---:|---:|---:|---:|---:|---|---|")
            for r in rows:
                print(f"| {r['kernel']} | {r['balancer']} | {r['roi']:.1f} | {r['speedup']:.3f} | {r['smax']:.3f} "
                      f"| {r['eff']:.3f} | {r['balance']:.3f} | {r['packages']} | {r['correct']} |")
            kernels = sorted({r["kernel"] for r in rows})
            print(f"\nGeomeans over the {len(kernels)} kernels measured ({', '.join(kernels)}):\n")
            print("| balancer | efficiency | balance | speedup |")
            print("|---|---:|---:|---:|")
            for b in dict.fromkeys(r["balancer"] for r in rows):
                sel = [r for r in rows if r["balancer"] == b]
                print(f"| {b} | {geomean([r['eff'] for r in sel]):.3f} | {geomean([r['balance'] for r in sel]):.3f} "
                      f"| {geomean([r['speedup'] for r in sel]):.3f} |")
            gaps = overheads(rows)
            if gaps:
                print(f"\nHost overhead per GPU package over {len(gaps)} packages: median "
                      f"{statistics.median(gaps) * 1e6:.0f} µs, 90th percentile "
                      f"{sorted(gaps)[int(0.9 * (len(gaps) - 1))] * 1e6:.0f} µs.")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/results")
