#!/usr/bin/env bash
# The test command: installs what the tests need, builds the Python package (python/) into
# .venv, runs `cargo test --release` (extra arguments go to cargo test), then the Python
# package's tests (pytest python/tests); it fails if either fails. Works on a fresh machine
# by itself:
#   - Debian packages: the C build tools of rdkafka's bundled librdkafka (libssl-dev,
#     zlib1g-dev, pkg-config, make, g++), promtool (prometheus) and docker-compose (the
#     compose file check; it needs no Docker engine), chromium (the live view's browser test,
#     tests/live_view.rs, drives it with Playwright). Installed with apt-get when missing
#     (as root; otherwise the script prints the command and stops).
#   - Python packages (pyarrow: the independent Parquet reader, also through S3; PyYAML: the
#     deployment YAML; moto[server]: a real S3-protocol server, with boto3; DuckDB and its
#     httpfs extension: the analysts' reader over s3://; River: the oracle the drift
#     detectors are checked against; maturin, pytest, NumPy, pandas, scikit-learn and aeon
#     for the Python package and its tests, Playwright for the live view's browser test,
#     pinned) into the project-local virtual
#     environment .venv, never into the system.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install the Rust toolchain (https://rustup.rs) and put it on PATH" >&2
  exit 1
fi

missing=()
for pkg in libssl-dev zlib1g-dev pkg-config make g++ prometheus docker-compose chromium; do
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
# delta-rs's Python binding reads the Delta tables back (tests/stream_delta.rs).
deltalake_pin="deltalake==1.6.6"
if ! "$venv/bin/python" -c "import pyarrow, yaml, moto, boto3, flask" >/dev/null 2>&1 \
  || [ ! -x "$venv/bin/moto_server" ] \
  || ! "$venv/bin/python" -c "import duckdb, duckdb_ext; assert duckdb.__version__ == '1.4.4'" >/dev/null 2>&1 \
  || ! "$venv/bin/python" -c "import river; assert river.__version__ == '0.26.1'" >/dev/null 2>&1 \
  || ! "$venv/bin/python" -c "import deltalake; assert deltalake.__version__ == '1.6.6'" >/dev/null 2>&1; then
  echo "installing pyarrow, PyYAML, moto[server], DuckDB with httpfs, River and deltalake into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check pyarrow pyyaml "moto[server]" "${duckdb_pins[@]}" "$river_pin" "$deltalake_pin"
fi
# The Python package's build and test dependencies, pinned (aeon is also the peer benchmark).
# Playwright drives Debian's chromium (never its own browser download: `playwright install`
# is not run) in tests/live_view.rs.
# confluent-kafka's AvroSerializer and SchemaRegistryClient (and what they import) produce the
# Avro records of tests/stream_avro.rs.
avro_pins=("confluent-kafka==2.16.2" "fastavro==1.13.1" "httpx2==2.17.0" "authlib==1.9.10" "cachetools==8.0.3" "attrs==26.1.0" "certifi==2026.10.19.post1" "requests==2.34.2")
# Its ProtobufSerializer (protobuf, googleapis-common-protos) and grpcio-tools' protoc, which
# generates the message classes from schemas/*.proto at test time (tests/protobuf_produce.py).
protobuf_pins=("protobuf==7.36.2" "googleapis-common-protos==1.76.0" "grpcio==1.85.4" "grpcio-tools==1.85.4")
python_pins=("maturin==1.16.0" "pytest==9.2.0" "numpy==2.3.5" "pandas==3.0.6" "scikit-learn==1.9.1" "aeon==1.6.0" "playwright==1.58.0" "${avro_pins[@]}" "${protobuf_pins[@]}")
pins_installed='
import sys
from importlib.metadata import version
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    assert version(name) == want, pin
'
if ! "$venv/bin/python" -c "$pins_installed" "${python_pins[@]}" >/dev/null 2>&1; then
  echo "installing ${python_pins[*]} into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${python_pins[@]}"
fi
export MILSTREAM_PYTHON="$PWD/$venv/bin/python"

# The Python package, built as a user builds it (`pip install ./python`: maturin, release
# profile, the shared target/), before cargo test: tests/python_package.rs serves a model
# fitted in Python.
echo "building and installing the Python package (python/) into $venv"
# The build backend runs `maturin` from PATH: the venv's.
PATH="$PWD/$venv/bin:$PATH" "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  --no-build-isolation ./python

status=0
cargo test --release "$@" || status=$?
echo "running the Python package's tests (pytest python/tests)"
"$venv/bin/python" -m pytest -q python/tests || status=$?
exit "$status"
