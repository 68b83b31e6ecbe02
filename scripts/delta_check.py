"""Reads a milstream Delta table with independent readers and prints one JSON summary.

Usage: delta_check.py TABLE_URI '["app id", ...]' ['{"storage": "options"}']

- deltalake (delta-rs, PyPI) replays the table's log: its rows, version, and
  `transaction_version(app_id)` for each app id given.
- DuckDB's own Parquet reader reads the files the log names (local tables), which must
  hold the same rows.
- Data files the log names that are missing (a commit without its file; local or S3), then
  the rows only when none is. For a local table also data files present that no commit names (left by an attempt that was cut short;
  `vacuum(full=True)` removes them).
Used by tests/stream_delta.rs.
"""
import json
import os
import sys

import duckdb
from deltalake import DeltaTable


def missing_files(files, options):
    """The files of `files` (URIs the log names) that the store does not hold."""
    if options is None:
        return [f for f in files if not os.path.exists(f.removeprefix("file://"))]
    import pyarrow.fs
    endpoint = options["AWS_ENDPOINT_URL"]
    fs = pyarrow.fs.S3FileSystem(
        endpoint_override=endpoint.split("://", 1)[1], scheme=endpoint.split("://", 1)[0],
        access_key=options["AWS_ACCESS_KEY_ID"], secret_key=options["AWS_SECRET_ACCESS_KEY"],
        region=options["AWS_REGION"])
    keys = [f.removeprefix("s3://") for f in files]
    return [k for k, info in zip(keys, fs.get_file_info(keys)) if info.type == pyarrow.fs.FileType.NotFound]


def main():
    uri = sys.argv[1]
    app_ids = json.loads(sys.argv[2]) if len(sys.argv) > 2 else []
    options = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None
    dt = DeltaTable(uri, storage_options=options)
    files = dt.file_uris()
    missing = missing_files(files, options)
    if missing:
        print(json.dumps({"version": dt.version(), "rows": [], "files": len(files), "missing": missing,
                          "txn": {a: dt.transaction_version(a) for a in app_ids}}))
        return
    cols = ["key", "window_start", "window_end", "scores", "source_partition", "source_offset"]
    table = dt.to_pyarrow_table(columns=cols)
    # Milliseconds since the epoch, the records' unit (the columns hold microseconds).
    ms = {c: [None if v is None else v // 1000 for v in table.column(c).cast("int64").to_pylist()]
          for c in ("window_start", "window_end")}
    rows = [
        [r["key"], ms["window_start"][i], ms["window_end"][i], r["scores"], r["source_partition"], r["source_offset"]]
        for i, r in enumerate(table.to_pylist())
    ]
    out = {
        "version": dt.version(),
        "rows": rows,
        "files": len(files),
        "txn": {a: dt.transaction_version(a) for a in app_ids},
        "schema": [f.name for f in dt.schema().fields],
        "missing": [],
    }
    if options is None:
        local = [f.removeprefix("file://") for f in files]
        named = {os.path.realpath(f) for f in local}
        present = []
        for d, _, names in os.walk(uri):
            if "_delta_log" in d:
                continue
            present += [os.path.realpath(os.path.join(d, n)) for n in names if n.endswith(".parquet")]
        out["unreferenced"] = sorted(set(present) - named)
        if local:
            q = "select key, epoch_ms(window_start), epoch_ms(window_end), source_partition, source_offset from read_parquet(?)"
            duck = duckdb.execute(q, [local]).fetchall()
            mine = sorted((r[0], r[1], r[2], r[4], r[5]) for r in rows)
            out["duckdb_rows"] = len(duck)
            out["duckdb_same"] = sorted(tuple(r) for r in duck) == mine
        else:
            out["duckdb_rows"] = 0
            out["duckdb_same"] = not rows
    print(json.dumps(out))


if __name__ == "__main__":
    main()
    # deltalake can abort the interpreter's exit ("terminate called without an active
    # exception") after a table was read; the summary is printed whole by then.
    sys.stdout.flush()
    os._exit(0)
