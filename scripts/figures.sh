#!/usr/bin/env bash
# README's explanation figures, drawn with the defaults every user gets: GunPoint (two
# classes) and ACSF1 (ten classes, the pooled head). Deterministic (seed 0). Usage:
#   cargo build --release && scripts/figures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/milstream
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for spec in "GunPoint 0 gunpoint-explain" "ACSF1 3 acsf1-explain"; do
  set -- $spec
  "$bin" train --data "tests/data/$1_TRAIN.csv" --out "$work/$1.json" --quiet >/dev/null
  "$bin" explain --model "$work/$1.json" --data "tests/data/$1_TEST.csv" --index "$2" \
    --out "docs/$3.svg"
done
echo "figures of commit $(git rev-parse --short HEAD) in docs/"
