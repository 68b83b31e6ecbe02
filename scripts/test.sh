#!/usr/bin/env bash
# The test command: installs what the tests need, then runs `cargo test --release` (extra
# arguments go to cargo test). Works on a fresh machine by itself:
#   - Debian packages: the C build tools of rdkafka's bundled librdkafka (libssl-dev,
#     zlib1g-dev, pkg-config, make, g++), promtool (prometheus) and docker-compose (the
#     compose file check; it needs no Docker engine). Installed with apt-get when missing
#     (as root; otherwise the script prints the command and stops).
#   - Python packages (pyarrow: the independent Parquet reader, also through S3; PyYAML: the
#     deployment YAML; moto[server]: a real S3-protocol server, with boto3; DuckDB and its
#     httpfs extension: the analysts' reader over s3://; River: the oracle the drift
#     detectors are checked against) into the project-local virtual environment .venv,
#     never into the system.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install the Rust toolchain (https://rustup.rs) and put it on PATH" >&2
  exit 1
fi

missing=()
for pkg in libssl-dev zlib1g-dev pkg-config make g++ prometheus docker-compose; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages: ${missing[*]}" >&2
    echo "install them with: sudo apt-get install --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  echo "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

venv=.venv
if [ ! -x "$venv/bin/python" ]; then
  echo "creating the test virtual environment $venv"
  python3 -m venv "$venv"
fi
# DuckDB reads the predictions from the S3 server through its httpfs extension. DuckDB
# downloads extensions from its own site, which CI cannot reach; the PyPI package
# duckdb-ext-httpfs ships the extension, built for exactly one DuckDB release: the pins
# move together.
duckdb_pins=("duckdb==1.4.4" "duckdb-ext-httpfs==1.4.4.20260205")
river_pin="river==0.26.1"
if ! "$venv/bin/python" -c "import pyarrow, yaml, moto, boto3, flask" >/dev/null 2>&1 \
  || [ ! -x "$venv/bin/moto_server" ] \
  || ! "$venv/bin/python" -c "import duckdb, duckdb_ext; assert duckdb.__version__ == '1.4.4'" >/dev/null 2>&1 \
  || ! "$venv/bin/python" -c "import river; assert river.__version__ == '0.26.1'" >/dev/null 2>&1; then
  echo "installing pyarrow, PyYAML, moto[server], DuckDB with httpfs and River into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check pyarrow pyyaml "moto[server]" "${duckdb_pins[@]}" "$river_pin"
fi
export MILSTREAM_PYTHON="$PWD/$venv/bin/python"

exec cargo test --release "$@"
