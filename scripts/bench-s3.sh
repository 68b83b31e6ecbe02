#!/usr/bin/env bash
# bench-stream to local files and to an S3 endpoint (moto's server from the project's .venv,
# as scripts/test.sh installs it), the same stream one run after the other, so the two
# lines compare on the same machine state. Extra arguments go to every bench-stream run
# (e.g. --rate 20000 for latency, --roll-age-ms 5000 for the daemon's default roll).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${MILSTREAM_BIN:-target/release/milstream}
venv=.venv/bin
[ -x "$venv/moto_server" ] || { echo "moto_server missing: run scripts/test.sh (or pip install \"moto[server]\" into .venv)" >&2; exit 1; }
port=$("$venv/python" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
"$venv/moto_server" -H 127.0.0.1 -p "$port" >/dev/null 2>&1 &
moto=$!
trap 'kill $moto' EXIT
until "$venv/python" -c "import socket; socket.create_connection(('127.0.0.1',$port))" 2>/dev/null; do sleep 0.2; done
"$venv/python" -c "import boto3; boto3.client('s3', endpoint_url='http://127.0.0.1:$port', aws_access_key_id='t', aws_secret_access_key='t', region_name='us-east-1').create_bucket(Bucket='bench')"
s3=(--output s3://bench/out --store-option "aws_endpoint=http://127.0.0.1:$port"
    --store-option aws_allow_http=true --store-option aws_access_key_id=t
    --store-option aws_secret_access_key=t --store-option aws_region=us-east-1)
args=(--points 200000 --partitions 4 "$@")
"$bin" bench-stream --json "${args[@]}" 2>/dev/null
"$bin" bench-stream --json "${args[@]}" "${s3[@]}" 2>/dev/null
