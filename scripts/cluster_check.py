#!/usr/bin/env python3
"""The cluster checker: reads a milstream output tree back with pyarrow (an independent
reader) and reports, as JSON on stdout, what a run of several processes must keep:

- every expected window exactly once in predictions (by key and window bounds), none
  unexpected: `windows.missing`, `windows.duplicated`, `windows.unexpected`;
- every label graded exactly once per model version in evaluations
  (by key, bounds, label, offset, version): `evaluations.duplicated`;
- every training example once in the training store (by key, segment, label offset);
- no partial or temporary file anywhere under the trees.

Usage: cluster_check.py OUTPUT [--training DIR] [--expected windows.json]
                        [--labels labels.json] [--s3-endpoint http://HOST:PORT]
`windows.json` is a list of [key, window_start_ms, window_end_ms] (bags: [bag_id, null,
null]); `labels.json` a list of [source_partition, source_offset] of the labels produced,
each of which must be graded. With --s3-endpoint, OUTPUT and DIR are `bucket/prefix` on
that S3 server (credentials "test"). Exit status 0 when nothing is lost, duplicated or
unexpected, 1 otherwise.
"""
import argparse
import collections
import json
import os
import sys

import pyarrow.fs
import pyarrow.parquet as pq

FS = pyarrow.fs.LocalFileSystem()


def files(root, tree):
    """The Parquet files under root/tree, and the temporary ones (dot-names, .tmp)."""
    done, temp = [], []
    base = os.path.join(root, tree) if tree else root
    selector = pyarrow.fs.FileSelector(base, recursive=True, allow_not_found=True)
    for info in FS.get_file_info(selector):
        if info.type != pyarrow.fs.FileType.File:
            continue
        n = info.base_name
        if n.startswith(".") or n.endswith(".tmp"):
            temp.append(info.path)
        elif n.endswith(".parquet"):
            done.append(info.path)
    return sorted(done), temp


def ms(column):
    """A timestamp column as epoch milliseconds (None stays None)."""
    return [None if v is None else v // 1000 for v in column.cast("int64").to_pylist()]


def keyed(paths, key_of):
    """Counts of each row's key over every file (read one by one: schemas evolve)."""
    counts = collections.Counter()
    for p in paths:
        counts.update(key_of(pq.read_table(p, filesystem=FS)))
    return counts


def window_keys(t):
    return zip(t.column("key").to_pylist(), ms(t.column("window_start")), ms(t.column("window_end")))


def evaluation_keys(t):
    return zip(
        t.column("key").to_pylist(),
        ms(t.column("window_start")),
        ms(t.column("window_end")),
        t.column("label").to_pylist(),
        t.column("source_partition").to_pylist(),
        t.column("source_offset").to_pylist(),
        t.column("model_version").to_pylist(),
    )


def example_keys(t):
    cols = {c: t.column(c).to_pylist() for c in ("key", "label", "source_topic", "source_partition", "source_offset")}
    return zip(*cols.values())


def dupes(counts):
    return [[*k, n] if isinstance(k, tuple) else [k, n] for k, n in counts.items() if n > 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("output")
    ap.add_argument("--training")
    ap.add_argument("--expected")
    ap.add_argument("--labels")
    ap.add_argument("--s3-endpoint")
    a = ap.parse_args()
    if a.s3_endpoint:
        global FS
        scheme, host = a.s3_endpoint.split("://")
        FS = pyarrow.fs.S3FileSystem(endpoint_override=host, scheme=scheme, access_key="test",
                                     secret_key="test", region="us-east-1")
    report = {"temp_files": []}
    preds, temp = files(a.output, "predictions")
    report["temp_files"] += temp
    windows = keyed(preds, window_keys)
    w = {"rows": sum(windows.values()), "distinct": len(windows), "duplicated": dupes(windows)}
    if a.expected:
        expected = {tuple(k) for k in json.load(open(a.expected))}
        w["expected"] = len(expected)
        w["missing"] = sorted(list(k) for k in expected - set(windows))
        w["unexpected"] = sorted(list(k) for k in set(windows) - expected)
    report["windows"] = w
    evals, temp = files(a.output, "evaluations")
    report["temp_files"] += temp
    graded = keyed(evals, evaluation_keys)
    report["evaluations"] = {"rows": sum(graded.values()), "distinct": len(graded), "duplicated": dupes(graded)}
    if a.labels:
        produced = {tuple(k) for k in json.load(open(a.labels))}
        seen = {(k[4], k[5]) for k in graded}
        report["evaluations"]["labels"] = len(produced)
        report["evaluations"]["ungraded"] = sorted(list(k) for k in produced - seen)
    for tree in ("dead_letters", "drift_events"):
        report["temp_files"] += files(a.output, tree)[1]
    if a.training:
        ex, temp = files(a.training, "")
        report["temp_files"] += temp
        examples = keyed(ex, example_keys)
        report["examples"] = {"rows": sum(examples.values()), "distinct": len(examples), "duplicated": dupes(examples)}
    json.dump(report, sys.stdout, indent=1)
    print()
    bad = report["temp_files"] or w["duplicated"] or w.get("missing") or w.get("unexpected")
    bad = bad or report["evaluations"]["duplicated"] or report["evaluations"].get("ungraded")
    bad = bad or report.get("examples", {}).get("duplicated")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
