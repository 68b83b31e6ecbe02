#!/usr/bin/env python3
"""Peer baselines on this machine beside milstream, in one run: aeon's RDST and MiniRocket,
single-threaded, fit timed after one warm-up fit (numba compiles on first use); milstream's
`eval` with RAYON_NUM_THREADS=1 when --milstream is given.

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install aeon==1.6.0
    /tmp/peers/bin/python scripts/peers.py DATA_DIR GunPoint Coffee ACSF1 ... \\
        [--milstream target/release/milstream] [--option=--paper] [--multirocket]

Reads DATA_DIR/<name>_TRAIN.csv / _TEST.csv (label first, then the values; rows may differ
in length) or, where a .ts file exists, the UEA .ts file. A peer that cannot take unequal
lengths (MiniRocket) is reported as skipped. Prints one JSON line per (dataset,
classifier)."""
import argparse
import json
import os
import subprocess
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np


def data_path(data_dir, name, split):
    ts = os.path.join(data_dir, f"{name}_{split}.ts")
    return ts if os.path.exists(ts) else os.path.join(data_dir, f"{name}_{split}.csv")


def load(path):
    if path.endswith(".ts"):
        from aeon.datasets import load_from_ts_file

        return load_from_ts_file(path)
    rows = [l.strip().split(",") for l in open(path) if l.strip()]
    y = np.array([r[0] for r in rows])
    xs = [np.array([[float(v) for v in r[1:]]]) for r in rows]
    if len({x.shape[1] for x in xs}) == 1:
        return np.stack(xs), y
    return xs, y


def equal_length(x):
    return isinstance(x, np.ndarray) or len({c.shape[1] for c in x}) == 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("names", nargs="+")
    ap.add_argument("--milstream", help="the milstream binary: also run its eval, single-threaded")
    ap.add_argument("--option", action="append", default=[], help="a milstream eval option, repeatable")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--multirocket", action="store_true",
                    help="also aeon's MultiRocket (equal lengths only; slower than MiniRocket)")
    ap.add_argument("--peer-seed", type=int, default=0,
                    help="the peers' random_state (RDST draws its shapelets, MiniRocket its biases' samples)")
    a = ap.parse_args()
    from aeon.classification.convolution_based import MiniRocketClassifier, MultiRocketClassifier
    from aeon.classification.shapelet_based import RDSTClassifier

    for name in a.names:
        train, test = data_path(a.data_dir, name, "TRAIN"), data_path(a.data_dir, name, "TEST")
        if a.milstream:
            t0 = time.perf_counter()
            out = subprocess.run(
                [a.milstream, "eval", "--train", train, "--test", test, "--json", *a.option],
                capture_output=True, text=True, check=True, env={**os.environ, "RAYON_NUM_THREADS": "1"},
            )
            r = json.loads(out.stdout)
            print(json.dumps({"data": name, "peer": "milstream", "accuracy": round(r["accuracy"], 3),
                              "fit_seconds": round(r["train_seconds"], 2),
                              "wall_seconds": round(time.perf_counter() - t0, 2),
                              "peak_mb": round((r.get("peak_rss_bytes") or 0) / 1e6)}), flush=True)
        if a.no_peers:
            continue
        xtr, ytr = load(train)
        xte, yte = load(test)
        peers = [
            ("RDST", lambda: RDSTClassifier(n_jobs=1, random_state=a.peer_seed)),
            ("MiniRocket", lambda: MiniRocketClassifier(n_jobs=1, random_state=a.peer_seed)),
        ]
        if a.multirocket:
            peers.append(("MultiRocket", lambda: MultiRocketClassifier(n_jobs=1, random_state=a.peer_seed)))
        for label, make in peers:
            if not (equal_length(xtr) and equal_length(xte)) and not make().get_tag("capability:unequal_length"):
                print(json.dumps({"data": name, "peer": label, "skipped": "unequal lengths"}), flush=True)
                continue
            try:
                make().fit(xtr, ytr)  # warm-up: numba compiles
                clf = make()
                t0 = time.perf_counter()
                clf.fit(xtr, ytr)
                fit = time.perf_counter() - t0
                acc = float(np.mean(clf.predict(xte) == yte))
            except ValueError as e:  # a peer that stops on this data: say so, go on
                print(json.dumps({"data": name, "peer": label, "skipped": f"error: {e}"[:80]}), flush=True)
                continue
            print(json.dumps({"data": name, "peer": label, "accuracy": round(acc, 3), "fit_seconds": round(fit, 2)}), flush=True)


if __name__ == "__main__":
    main()
