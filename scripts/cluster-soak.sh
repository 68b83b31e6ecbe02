#!/usr/bin/env bash
# The cluster soak (issue 67): the shipped deploy/k8s topology on a real broker (Tansu) and a
# real S3 server (moto), with kills, scaling, a store outage, a broker restart and a registry
# rollback; the output read back with pyarrow. Installs Tansu 0.6.0 into .tools/tansu when
# missing (about 20 minutes of compiling on 2 cores) and the Python readers into .venv.
# Usage: scripts/cluster-soak.sh [--runs N] [--seconds S] [--out DIR]   (see cluster_soak.py)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD/.tools/tansu"
if [[ -z "${MILSTREAM_TANSU:-}" ]]; then
  if [[ ! -x "$root/bin/tansu" ]] && ! command -v tansu >/dev/null 2>&1; then
    echo "installing tansu 0.6.0 into $root (about 20 minutes)" >&2
    cargo install tansu --version 0.6.0 --locked --features dynostore,libsql --root "$root"
  fi
  if [[ -x "$root/bin/tansu" ]]; then
    export MILSTREAM_TANSU="$root/bin/tansu"
  else
    export MILSTREAM_TANSU="$(command -v tansu)"
  fi
fi
if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv
fi
.venv/bin/python -c "import pyarrow, yaml, boto3, confluent_kafka, moto" 2>/dev/null ||
  .venv/bin/pip install --quiet pyarrow PyYAML boto3 confluent-kafka 'moto[server]'
cargo build --release --bin milstream
exec .venv/bin/python scripts/cluster_soak.py --tansu "$MILSTREAM_TANSU" "$@"
