#!/usr/bin/env python3
"""Calibration of the class probabilities on the development sets (issue 73).

For each set, fits the Python package's estimator with the defaults (seed 0) on the training
part and measures, on the test part, the log loss and the expected calibration error of
  - before: the softmax of the class scores (what `predict_proba` gave before issue 73,
    and what an artifact without a calibration still gives), and
  - after: `predict_proba`, the scores times the scale fitted on held-out folds
    (temperature scaling, crates/milstream-core/src/mil/calibration.rs).
Both come from the same fitted model (the calibration does not change the scores). MUSK1
has no split: 10-fold stratified cross-validation (scikit-learn's StratifiedKFold, shuffled,
random_state 0), the out-of-fold probabilities pooled.

Log loss: the mean of -ln p(true class) (p clipped at 1e-15). ECE: the test cases put in 10
equal-width bins of their top-class probability (confidence) over [0, 1]; the sum over
bins of (cases in the bin / all cases) x |accuracy in the bin - mean confidence in it|.

    .venv/bin/python scripts/calibration.py [--out docs/CALIBRATION.md] [--resamples 5]

With --resamples R, also the series sets' resamples 1..R-1, drawn as scripts/resamples.py
draws them (per class as many training series as the published split has, from train and
test together, numpy default_rng(1000 + r)), one row a set: the mean over its resamples and,
in brackets, the worst resample's ECE. A check that the calibration is not fitted to the
published splits.

(the package installed as scripts/test.sh installs it: `pip install ./python`).
Deterministic (seed 0). Prints the markdown table; with --out also writes it there.
"""

import argparse
import os
import subprocess
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")


def load_ucr(name):
    d = np.loadtxt(os.path.join(DATA, name), delimiter=",", ndmin=2)
    return d[:, 1:], d[:, 0].astype(int)


def load_ts(name):
    from aeon.datasets import load_from_ts_file

    return load_from_ts_file(os.path.join(DATA, name))


def load_musk1():
    import pandas as pd

    df = pd.read_csv(os.path.join(DATA, "musk1.csv"))
    ids = list(dict.fromkeys(df["bag_id"].astype(str)))
    groups = {str(k): g for k, g in df.groupby(df["bag_id"].astype(str), sort=False)}
    bags = [groups[i].drop(columns=["bag_id", "label"]).to_numpy(float) for i in ids]
    labels = np.array([int(groups[i]["label"].iloc[0]) for i in ids])
    return bags, labels


def softmax(s):
    z = s - s.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def log_loss(p, y_index):
    return float(-np.mean(np.log(np.clip(p[np.arange(len(y_index)), y_index], 1e-15, 1.0))))


def ece(p, y_index, bins=10):
    conf = p.max(axis=1)
    hit = (p.argmax(axis=1) == y_index).astype(float)
    # Bin b holds confidences in (b/10, (b+1)/10]; a confidence of 0 joins the first.
    at = np.clip(np.ceil(conf * bins).astype(int) - 1, 0, bins - 1)
    total = 0.0
    for b in range(bins):
        m = at == b
        if m.any():
            total += m.mean() * abs(hit[m].mean() - conf[m].mean())
    return float(total)


def measure(clf, X, y, Xt, yt):
    t = time.perf_counter()
    clf.fit(X, y)
    seconds = time.perf_counter() - t
    classes = list(clf.classes_)
    y_index = np.array([classes.index(v) for v in yt])
    before = softmax(clf.class_scores(Xt))
    after = clf.predict_proba(Xt)
    return before, after, y_index, seconds


def row(name, n, before, after, y_index, seconds, acc):
    return (
        f"| {name} | {n} | {acc:.3f} | {log_loss(before, y_index):.3f} | "
        f"{log_loss(after, y_index):.3f} | {ece(before, y_index):.3f} | "
        f"{ece(after, y_index):.3f} | {seconds:.2f} |"
    )


def resample(X, y, Xt, yt, r):
    """Resample r (> 0) of a split, as scripts/resamples.py draws it."""
    every_y = np.concatenate([y, yt])
    every_X = list(X) + list(Xt)
    rng = np.random.default_rng(1000 + r)
    chosen = set()
    for c in sorted(set(every_y.tolist())):
        idx = np.where(every_y == c)[0]
        chosen |= set(rng.choice(idx, int((y == c).sum()), replace=False).tolist())
    tr = sorted(chosen)
    te = [i for i in range(len(every_y)) if i not in chosen]
    pick = lambda ix: np.array([every_X[i] for i in ix])
    return pick(tr), every_y[tr], pick(te), every_y[te]


def resample_row(name, loader, train, test, count):
    X, y = loader(train)
    Xt, yt = loader(test)
    if not isinstance(X, np.ndarray) or X.dtype == object:
        return None
    from milstream import ShapeletClassifier

    eces, cells = [], []
    for r in range(1, count):
        a, b, c, d = resample(X, y, Xt, yt, r)
        before, after, yi, seconds = measure(ShapeletClassifier(), a, b, c, d)
        acc = float((after.argmax(axis=1) == yi).mean())
        cells.append((len(yi), acc, log_loss(before, yi), log_loss(after, yi), ece(before, yi),
                      ece(after, yi), seconds))
    m = np.mean(np.array(cells), axis=0)
    worst = max(c[5] for c in cells)
    return (
        f"| {name}, resamples 1-{count - 1} | {m[0]:.0f} | {m[1]:.3f} | {m[2]:.3f} | {m[3]:.3f} | "
        f"{m[4]:.3f} | {m[5]:.3f} ({worst:.3f}) | {m[6]:.2f} |"
    )


def main():
    from sklearn.model_selection import StratifiedKFold

    from milstream import MILClassifier, ShapeletClassifier

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="also write the page here (markdown)")
    ap.add_argument("--resamples", type=int, default=1, help="also resamples 1..R-1")
    args = ap.parse_args()
    rows = []
    sets = [
        ("GunPoint", "GunPoint_TRAIN.csv", "GunPoint_TEST.csv", load_ucr),
        ("Coffee", "Coffee_TRAIN.csv", "Coffee_TEST.csv", load_ucr),
        ("ACSF1 (10 classes)", "ACSF1_TRAIN.csv", "ACSF1_TEST.csv", load_ucr),
        ("BasicMotions (4 classes)", "BasicMotions_TRAIN.ts", "BasicMotions_TEST.ts", load_ts),
    ]
    for name, train, test, loader in sets:
        X, y = loader(train)
        Xt, yt = loader(test)
        before, after, yi, seconds = measure(ShapeletClassifier(), X, y, Xt, yt)
        acc = float((after.argmax(axis=1) == yi).mean())
        rows.append(row(name, len(yt), before, after, yi, seconds, acc))
        print(rows[-1], flush=True)
    bags, labels = load_musk1()
    parts = ([], [], [], 0.0)
    for tr, te in StratifiedKFold(10, shuffle=True, random_state=0).split(bags, labels):
        b, a, yi, s = measure(
            MILClassifier(),
            [bags[i] for i in tr],
            labels[tr],
            [bags[i] for i in te],
            labels[te],
        )
        parts = (parts[0] + [b], parts[1] + [a], parts[2] + [yi], parts[3] + s)
    before, after, yi = (np.concatenate(p) for p in parts[:3])
    acc = float((after.argmax(axis=1) == yi).mean())
    rows.append(row("MUSK1 (bags, 10-fold CV)", len(yi), before, after, yi, parts[3], acc))
    print(rows[-1], flush=True)
    if args.resamples > 1:
        for name, train, test, loader in sets:
            line = resample_row(name, loader, train, test, args.resamples)
            if line:
                rows.append(line)
                print(rows[-1], flush=True)
    head = (
        "| data set | test cases | accuracy | log loss before | log loss after "
        "| ECE before | ECE after | fit seconds (total) |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    commit = subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    table = head + "\n" + "\n".join(rows)
    print()
    print(table)
    if args.out:
        with open(args.out, encoding="utf-8") as f:
            page = f.read()
        start = page.index("<!-- calibration table -->")
        end = page.index("<!-- end calibration table -->")
        page = (
            page[:start]
            + "<!-- calibration table -->\n"
            + f"Written by `scripts/calibration.py` at commit {commit}.\n\n"
            + table
            + "\n"
            + page[end:]
        )
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(page)


if __name__ == "__main__":
    main()
