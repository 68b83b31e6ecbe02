#!/usr/bin/env bash
# The tests against a real Kafka-protocol broker, Tansu (issue 16): the end-to-end test,
# SIGKILL recovery (Tansu drops offset-commit metadata, so restarts recover the replay point
# from the output files) and a rebalance with two daemons. Installs Tansu 0.6.0 into
# .tools/tansu when missing (about 20 minutes of compiling on 2 cores), then runs the
# ignored tests that start it. Usage: scripts/real-broker-tests.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD/.tools/tansu"
if [[ -z "${MILSTREAM_TANSU:-}" ]]; then
  if ! command -v tansu >/dev/null 2>&1 && [[ ! -x "$root/bin/tansu" ]]; then
    echo "installing tansu 0.6.0 into $root (about 20 minutes)" >&2
    cargo install tansu --version 0.6.0 --locked --features dynostore,libsql --root "$root"
  fi
  if [[ -x "$root/bin/tansu" ]]; then
    export MILSTREAM_TANSU="$root/bin/tansu"
  else
    export MILSTREAM_TANSU="$(command -v tansu)"
  fi
fi
echo "tansu: $MILSTREAM_TANSU ($("$MILSTREAM_TANSU" --version 2>&1 | head -1))" >&2
# The tests themselves need what scripts/test.sh installs (pyarrow for the readers).
if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv && .venv/bin/pip install --quiet pyarrow PyYAML
fi
# tests/stream_avro.rs: confluent-kafka's AvroSerializer and ProtobufSerializer, grpcio-tools'
# protoc and a Flask registry (as scripts/test.sh pins them).
if ! .venv/bin/python -c "import confluent_kafka.schema_registry.avro, confluent_kafka.schema_registry.protobuf, grpc_tools.protoc, flask" >/dev/null 2>&1; then
  .venv/bin/pip install --quiet "confluent-kafka[avro,schemaregistry]==2.16.2" "fastavro==1.13.1" "httpx2==2.17.0" \
    "protobuf==7.36.2" "googleapis-common-protos==1.76.0" "grpcio==1.85.4" "grpcio-tools==1.85.4" flask
fi
export MILSTREAM_PYTHON="$PWD/.venv/bin/python"
cargo test --release --test stream_e2e --test stream_recovery --test stream_avro --test stream_delta "$@" -- --ignored --test-threads 1 tansu
