#!/usr/bin/env bash
# Usage: bash scripts/queued-gaps.sh LOG   (stderr of a submitted `iterate` loop run with RUST_LOG=hetdsl=debug)
# Summarise a RUST_LOG=hetdsl=debug log of a submitted session loop: per device slot, the idle
# time of the device between consecutive queued launches (device clock), and the host's time
# per queued launch (settle wait, staged, enqueued, total), medians and 90th percentiles.
set -euo pipefail
f=${1:?LOG}
sed 's/\x1b\[[0-9;]*m//g' "$f" | awk '
/queued kernels/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  s = v["slot"]; if (s in last) { n[s]++; gap[s, n[s]] = (v["first_start_ns"] - last[s]) / 1e3 } last[s] = v["last_end_ns"] }
/queued launch/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  m++; st[m] = v["settle_ms"] * 1e3; en[m] = (v["enqueued_ms"] - v["staged_ms"]) * 1e3; to[m] = (v["total_ms"] - v["settle_ms"]) * 1e3 }
function show(name, a, k,   i, j, t, b) { if (k == 0) return; for (i = 1; i <= k; i++) b[i] = a[i]; for (i = 2; i <= k; i++) { t = b[i]; j = i - 1; while (j > 0 && b[j] > t) { b[j + 1] = b[j]; j-- } b[j + 1] = t }
  printf "  %-34s median %8.1f us  p90 %8.1f us  (n=%d)\n", name, b[int(k / 2) + 1], b[int(k * 0.9) + 1], k }
END { for (s in n) { delete g; for (i = 1; i <= n[s]; i++) g[i] = gap[s, i]; show("device slot " s " idle between launches", g, n[s]) }
  show("host: waiting for old launches", st, m); show("host: devices enqueue", en, m); show("host: submit minus the wait", to, m) }'
