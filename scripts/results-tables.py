#!/usr/bin/env python3
"""Markdown tables for docs/RESULTS.md from the suite's output under docs/results/.

Reads each machine's suite-<set>.json (or, where the run died before writing JSON, the
suite-<set>.txt table it printed) and prints, per machine and device set: every kernel x
balancer row, the geomean of efficiency and balance per balancer, and the engine's host
overhead per GPU package (host span - input transfer - kernel time) from the JSON traces.
Files of a suite run with several sets (--devices 0,1/1,2/...) give these per set, then a
scaling summary (geomean speedup and efficiency of each balancer on each set); files with
energy add the energy and EDP ratios over the set's best device alone. inflection.json (the
inflection runner's) gives a table per kernel and a summary of the inflection points.
    python3 scripts/results-tables.py docs/results
"""
import json, math, os, statistics, sys


def rows_from_json(path):
    doc = json.load(open(path))
    for r in doc["runs"]:
        row = dict(kernel=r["kernel"], balancer=r["balancer"], roi=r["roi_seconds"] * 1e3,
                   speedup=r["speedup"], smax=r["smax"], eff=r["efficiency"],
                   balance=r["balance"], packages="+".join(map(str, r["packages"])),
                   correct=r["correct"], report=r["report"], set=r.get("set"))
        if "energy_ratio" in r:  # Suite runs with energy columns (null where unreadable).
            row.update(energy=r["energy_ratio"], edp=r["edp_ratio"])
        yield row


def number(text):
    return None if text == "n/a" else float(text)


def rows_from_text(path):
    # The layout follows the header: a leading `set` column with several sets, two trailing
    # energy columns (E/Ebest, EDP/best) when energy was measured.
    lead, energy = 0, False
    for line in open(path):
        f = line.split()
        if f[:1] in (["kernel"], ["set"]):
            lead, energy = int(f[0] == "set"), f[-1] == "EDP/best"
            continue
        if len(f) != 9 + lead + 2 * energy or f[lead + 1].startswith("alone"):
            continue
        row = dict(kernel=f[lead], balancer=f[lead + 1], roi=float(f[lead + 2]),
                   speedup=number(f[lead + 3]), smax=number(f[lead + 4]), eff=number(f[lead + 5]),
                   balance=float(f[lead + 6]), packages=f[lead + 7], correct=f[lead + 8] == "true",
                   report=None, set=f[0] if lead else None)
        if energy:
            row.update(energy=number(f[-2]), edp=number(f[-1]))
        yield row


def fmt(x, digits=3):
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def gpu_packages(rows):
    """Every GPU package's trace entry in the rows' reports."""
    for r in rows:
        rep = r["report"]
        if not rep:
            continue
        gpus = {d["index"] for d in rep["devices"] if d["kind"] == "Gpu"}
        yield from (t for t in rep["trace"] if t["device"] in gpus)


def overheads(rows):
    gaps = []
    for t in gpu_packages(rows):
        k, w = t["kernel_seconds"], t["written"]["seconds"]
        if k is not None and w is not None:
            gaps.append(max(0.0, t["host_end"] - t["host_start"] - k - w))
    return gaps


def idle_gaps(rows):
    """Each GPU package's device idle time before its kernel (reports that record it)."""
    return [t["idle_before"] for t in gpu_packages(rows) if t.get("idle_before") is not None]


def set_tables(machine, label, source, rows):
    energy = any("energy" in r for r in rows)
    print(f"\n#### {machine}, devices `{label}` (from `docs/results/{machine}/{source}`)\n")
    if energy:
        print("| kernel | balancer | ROI ms | speedup | Smax | efficiency | balance | packages | correct "
              "| E/E_best | EDP/EDP_best |")
        print("|---|---|---:|---:|---:|---:|---:|---|---|---:|---:|")
    else:
        print("| kernel | balancer | ROI ms | speedup | Smax | efficiency | balance | packages | correct |")
        print("|---|---|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        line = (f"| {r['kernel']} | {r['balancer']} | {r['roi']:.1f} | {r['speedup']:.3f} | {r['smax']:.3f} "
                f"| {r['eff']:.3f} | {r['balance']:.3f} | {r['packages']} | {r['correct']} |")
        if energy:
            line += f" {fmt(r.get('energy'))} | {fmt(r.get('edp'))} |"
        print(line)
    kernels = sorted({r["kernel"] for r in rows})
    print(f"\nGeomeans over the {len(kernels)} kernels measured ({', '.join(kernels)}):\n")
    if energy:
        print("| balancer | efficiency | balance | speedup | E/E_best | EDP/EDP_best |")
        print("|---|---:|---:|---:|---:|---:|")
    else:
        print("| balancer | efficiency | balance | speedup |")
        print("|---|---:|---:|---:|")
    for b in dict.fromkeys(r["balancer"] for r in rows):
        sel = [r for r in rows if r["balancer"] == b]
        line = (f"| {b} | {geomean([r['eff'] for r in sel]):.3f} | {geomean([r['balance'] for r in sel]):.3f} "
                f"| {geomean([r['speedup'] for r in sel]):.3f} |")
        if energy:
            # Over the kernels whose energy was readable only; n/a when none was.
            line += f" {fmt(geomean([r.get('energy') for r in sel]))} | {fmt(geomean([r.get('edp') for r in sel]))} |"
        print(line)
    gaps = overheads(rows)
    if gaps:
        print(f"\nHost overhead per GPU package over {len(gaps)} packages: median "
              f"{statistics.median(gaps) * 1e6:.0f} µs, 90th percentile "
              f"{sorted(gaps)[int(0.9 * (len(gaps) - 1))] * 1e6:.0f} µs.")
    idle = idle_gaps(rows)
    if idle:
        print(f"\nGPU idle between kernels over {len(idle)} packages: median "
              f"{statistics.median(idle) * 1e6:.0f} µs, 90th percentile "
              f"{sorted(idle)[int(0.9 * (len(idle) - 1))] * 1e6:.0f} µs.")


def scaling_summary(machine, sets, rows):
    """Geomean speedup and efficiency of each balancer on each set, one row per set."""
    balancers = list(dict.fromkeys(r["balancer"] for r in rows))
    print(f"\n#### {machine}, scaling: geomean speedup / efficiency per set and balancer\n")
    print("| set | " + " | ".join(balancers) + " |")
    print("|---|" + "---:|" * len(balancers))
    for s in sets:
        cells = []
        for b in balancers:
            sel = [r for r in rows if r["set"] == s and r["balancer"] == b]
            cells.append(f"{geomean([r['speedup'] for r in sel]):.3f} / {geomean([r['eff'] for r in sel]):.3f}")
        print(f"| `{s}` | " + " | ".join(cells) + " |")


def inflection_tables(machine, name, path):
    doc = json.load(open(path))
    source = f"docs/results/{machine}/{name}"
    print(f"\n#### {machine}, inflection points on devices `{doc['devices']}` with {doc['balancer']} "
          f"(from `{source}`; sub-range runs are not verified)\n")
    print("| kernel | fastest device | whole problem alone ms | inflection: alone ms | at fraction | units "
          "| clear win (≥ 10 % faster from there on): alone ms |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for k in doc["kernels"]:
        f = k["fastest"]
        p = k["inflection"]
        where = (f"{p['alone_seconds'] * 1e3:.3f} | 2^{p['exponent']} | {p['groups']}" if p else
                 f"not reached up to {k['largest_alone_seconds'] * 1e3:.3f} | - | -")
        # The runner's point is the first size from which co-execution is faster at all; with
        # ratios within noise of 1 (a kernel whose work-groups each take 0.1 s) that says little,
        # so the smallest size from which it is at least 10 % faster is shown beside it.
        clear = None
        for i, q in enumerate(k["points"]):
            if all(r["ratio"] <= 0.9 for r in k["points"][i:]):
                clear = q
                break
        win = f"{clear['alone_seconds'] * 1e3:.3f} (2^{clear['exponent']})" if clear else "not reached"
        print(f"| {k['kernel']} | {f['device']} {f['name']} | {f['whole_seconds'] * 1e3:.1f} | {where} | {win} |")
    for k in doc["kernels"]:
        print(f"\n{k['kernel']} ({k['problem']}, {k['units']} units):\n")
        print("| fraction | units | alone ms | co-executed ms | co-exec / alone |")
        print("|---:|---:|---:|---:|---:|")
        for p in k["points"]:
            print(f"| 2^{p['exponent']} | {p['groups']} | {p['alone_seconds'] * 1e3:.3f} "
                  f"| {p['coexec_seconds'] * 1e3:.3f} | {p['ratio']:.3f} |")


def latest_summary(root, machines):
    """One row per (set, balancer) over runs of one machine made in order (`machines`): each
    kernel x set x balancer taken from the latest run that measured it, then the geomean
    efficiency and speedup with the count of kernels and the runs they came from."""
    latest = {}
    for machine in machines:
        d = os.path.join(root, machine)
        for name in sorted(os.listdir(d)):
            if name.startswith("suite-") and name.endswith(".json"):
                for r in rows_from_json(os.path.join(d, name)):
                    latest[(r["set"], r["balancer"], r["kernel"])] = (r, machine)
    sets = list(dict.fromkeys(k[0] for k in latest))
    balancers = list(dict.fromkeys(k[1] for k in latest))
    print(f"\n#### {' + '.join(machines)}: each kernel from the latest run that measured it\n")
    print("| set | balancer | kernels | geomean efficiency | geomean speedup | min efficiency (kernel) | runs |")
    print("|---|---|---:|---:|---:|---|---|")
    for s_ in sets:
        for b in balancers:
            sel = [(r, m) for (ss, bb, _), (r, m) in latest.items() if ss == s_ and bb == b]
            if not sel:
                continue
            worst = min(sel, key=lambda x: x[0]["eff"])[0]
            runs = ", ".join(sorted(set(m for _, m in sel)))
            print(f"| `{s_}` | {b} | {len(sel)} | {geomean([r['eff'] for r, _ in sel]):.3f} "
                  f"| {geomean([r['speedup'] for r, _ in sel]):.3f} "
                  f"| {worst['eff']:.3f} ({worst['kernel']}) | {runs} |")


def main(root):
    # The 4xH200 machine was measured in runs D1, D2, D3, then E (every balancer) and F (Sigmoid
    # with the cost trend); the 2xH200 machine in runs G and H (three repetitions), as
    # docs/RESULTS.md lists them. Later runs in a group win.
    groups = [["h200x4", "h200x4cpu", "h200x4c"], ["h200x4e", "h200x4f"], ["h200x2g", "h200x2h"]]
    for g in groups:
        if all(os.path.isdir(os.path.join(root, m)) for m in g):
            latest_summary(root, g)
    for machine in sorted(os.listdir(root)):
        d = os.path.join(root, machine)
        if not os.path.isdir(d):  # loose files (the cluster simulation's) hold no suite run
            continue
        for name in sorted(os.listdir(d)):
            if name.startswith("inflection") and name.endswith(".json"):
                inflection_tables(machine, name, os.path.join(d, name))
            if not name.startswith("suite-") or not name.endswith(".txt"):
                continue
            stem = name[:-4]
            js = os.path.join(d, stem + ".json")
            rows = list(rows_from_json(js) if os.path.exists(js) else rows_from_text(os.path.join(d, name)))
            source = stem + (".json" if os.path.exists(js) else ".txt")
            sets = list(dict.fromkeys(r["set"] for r in rows))
            if len(sets) <= 1:
                set_tables(machine, stem[6:], source, rows)
                continue
            for s in sets:
                set_tables(machine, s, source, [r for r in rows if r["set"] == s])
            scaling_summary(machine, sets, rows)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/results")
