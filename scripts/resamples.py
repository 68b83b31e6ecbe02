#!/usr/bin/env python3
"""Accuracy over stratified resamples of a UCR set's train and test series: one split is
noisy (28 Coffee test series: one is 3.6 points). Resample r > 0 draws, per class, as many
training series as the published split has from all of them; resample 0 is the published
split. Prints the mean and every resample's accuracy per (data, classifier).

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install aeon==1.6.0
    /tmp/peers/bin/python scripts/resamples.py DATA_DIR 10 GunPoint Coffee ACSF1 \\
        --milstream target/release/milstream [--option=--no-position] [--peers]

Reads DATA_DIR/<name>_TRAIN.csv / _TEST.csv (label first, then the values); writes the
resampled files to a temporary folder. milstream runs with the RAYON_NUM_THREADS it is
given; the peers (aeon's RDST and MiniRocket, seed 0) single-threaded."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np


def rows(path):
    return [l.rstrip("\n") for l in open(path) if l.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("resamples", type=int)
    ap.add_argument("names", nargs="+")
    ap.add_argument("--milstream", help="the milstream binary")
    ap.add_argument("--option", action="append", default=[], help="an eval option, repeatable")
    ap.add_argument("--peers", action="store_true", help="also RDST and MiniRocket")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="milstream-resamples-")
    for name in a.names:
        train = rows(os.path.join(a.data_dir, f"{name}_TRAIN.csv"))
        test = rows(os.path.join(a.data_dir, f"{name}_TEST.csv"))
        every = train + test
        labels = np.array([r.split(",", 1)[0] for r in every])
        train_labels = labels[: len(train)]
        acc = {}
        for r in range(a.resamples):
            if r == 0:
                chosen = set(range(len(train)))
            else:
                rng = np.random.default_rng(1000 + r)
                chosen = set()
                for c in sorted(set(labels)):
                    idx = np.where(labels == c)[0]
                    chosen |= set(rng.choice(idx, (train_labels == c).sum(), replace=False).tolist())
            tr = os.path.join(tmp, f"{name}_r{r}_TRAIN.csv")
            te = os.path.join(tmp, f"{name}_r{r}_TEST.csv")
            with open(tr, "w") as f:
                f.write("\n".join(every[i] for i in sorted(chosen)) + "\n")
            with open(te, "w") as f:
                f.write("\n".join(every[i] for i in range(len(every)) if i not in chosen) + "\n")
            if a.milstream:
                out = subprocess.run(
                    [a.milstream, "eval", "--train", tr, "--test", te, "--json", *a.option],
                    capture_output=True, text=True, check=True,
                )
                acc.setdefault("milstream", []).append(json.loads(out.stdout)["accuracy"])
            if a.peers:
                from aeon.classification.convolution_based import MiniRocketClassifier
                from aeon.classification.shapelet_based import RDSTClassifier

                def load(path):
                    rs = [l.split(",") for l in rows(path)]
                    return np.array([[float(v) for v in x[1:]] for x in rs])[:, None, :], np.array([x[0] for x in rs])

                (xtr, ytr), (xte, yte) = load(tr), load(te)
                for peer, make in [("RDST", RDSTClassifier), ("MiniRocket", MiniRocketClassifier)]:
                    clf = make(n_jobs=1, random_state=0).fit(xtr, ytr)
                    acc.setdefault(peer, []).append(float(np.mean(clf.predict(xte) == yte)))
        for who, v in acc.items():
            print(json.dumps({"data": name, "classifier": who, "mean": round(float(np.mean(v)), 4),
                              "accuracies": [round(x, 3) for x in v]}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
