#!/usr/bin/env python3
"""Peer baselines on this machine: aeon's RDST and MiniRocket, single-threaded, fit timed
after one warm-up fit (numba compiles on first use).

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install aeon==1.6.0
    /tmp/peers/bin/python scripts/peers.py DATA_DIR GunPoint Coffee ACSF1 ...

Reads DATA_DIR/<name>_TRAIN.csv / _TEST.csv (label first, then the values) or, where a
.ts file exists, the UEA .ts file. Prints one JSON line per (dataset, classifier)."""
import json
import os
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np


def load(data_dir, name, split):
    ts = os.path.join(data_dir, f"{name}_{split}.ts")
    if os.path.exists(ts):
        from aeon.datasets import load_from_ts_file

        x, y = load_from_ts_file(ts)
        return x, y
    rows = [l.strip().split(",") for l in open(os.path.join(data_dir, f"{name}_{split}.csv")) if l.strip()]
    y = np.array([r[0] for r in rows])
    x = np.array([[float(v) for v in r[1:]] for r in rows])[:, None, :]
    return x, y


def main():
    from aeon.classification.shapelet_based import RDSTClassifier
    from aeon.classification.convolution_based import MiniRocketClassifier

    data_dir = sys.argv[1]
    for name in sys.argv[2:]:
        xtr, ytr = load(data_dir, name, "TRAIN")
        xte, yte = load(data_dir, name, "TEST")
        for label, make in [
            ("RDST", lambda: RDSTClassifier(n_jobs=1, random_state=0)),
            ("MiniRocket", lambda: MiniRocketClassifier(n_jobs=1, random_state=0)),
        ]:
            make().fit(xtr, ytr)  # warm-up: numba compiles
            clf = make()
            t0 = time.perf_counter()
            clf.fit(xtr, ytr)
            fit = time.perf_counter() - t0
            acc = float(np.mean(clf.predict(xte) == yte))
            print(json.dumps({"data": name, "peer": label, "accuracy": round(acc, 3), "fit_seconds": round(fit, 2)}), flush=True)


if __name__ == "__main__":
    main()
