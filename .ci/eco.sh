#!/usr/bin/env bash
# The plots' font: plotters lays out and draws text with a TrueType font found at run time
# (src/harness/plot.rs), and the plot tests draw SVG and PNG plots.
set -euo pipefail
if ! dpkg -s fonts-dejavu-core >/dev/null 2>&1; then
    apt-get update
    apt-get install -y fonts-dejavu-core
fi
