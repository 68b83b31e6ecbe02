#!/usr/bin/env python3
"""MILES (Chen, Bi and Wang, "MILES: Multiple-Instance Learning via Embedded Instance
Selection", IEEE TPAMI 28(12), 2006) as a peer for the bag model, on the same bag CSVs
(`bag_id,label,f1..`) and the same protocol as `milstream cv --folds 10 --seed S`: 10-fold
cross-validation stratified by bag label, at seeds 0, 1, 2, mean accuracy.

    /tmp/peers/bin/python scripts/miles.py BAGS.csv [BAGS.csv ...]   # one JSON line per set

MILES embeds a bag B against every training instance x_k (the concepts):
m_k(B) = max_j exp(-||b_j - x_k||^2 / sigma^2)   (eq. 7 of the paper), then fits a 1-norm
SVM on the embedding, whose sparse weights select the concepts. Here: features
standardised on the training fold; the 1-norm SVM is scikit-learn's LinearSVC with an L1
penalty (squared hinge, where the paper solves the hinge-loss LP); sigma^2 (a multiple of the
features' count, i.e. of the mean squared distance scale) and C chosen by 3-fold
cross-validation inside each training fold. Fit time counts the distances, the grid and the
final fit. Needs numpy and scikit-learn (aeon's venv has
both)."""
import json
import sys
import time

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import LinearSVC

# Liblinear's L1 primal stops at max_iter on some grid points (large C); the grid's CV
# judges those fits like any other.
warnings.filterwarnings("ignore", category=ConvergenceWarning)
# A class of fewer bags than folds (the imbalanced variant) is what the variant is.
warnings.filterwarnings("ignore", message="The least populated class")

SIGMA_SCALES = (0.25, 1.0, 4.0)
CS = (0.1, 1.0, 10.0)


def read_bags(path):
    ids, labels, rows = [], {}, []
    with open(path) as f:
        next(f)
        for line in f:
            parts = line.strip().split(",")
            if len(parts) < 3:
                continue
            b = parts[0]
            labels[b] = int(float(parts[1]))
            ids.append(b)
            rows.append([float(v) for v in parts[2:]])
    order = list(dict.fromkeys(ids))
    x = np.asarray(rows)
    index = {b: i for i, b in enumerate(order)}
    bag_of = np.asarray([index[b] for b in ids])
    y = np.asarray([labels[b] for b in order])
    return [x[bag_of == i] for i in range(len(order))], y


def min_sq_dists(bags, concepts):
    """Per bag and concept, min_j ||b_j - x_k||^2: what eq. 7 takes the exp of."""
    out = np.empty((len(bags), len(concepts)))
    cc = (concepts ** 2).sum(1)
    for i, b in enumerate(bags):
        d = (b ** 2).sum(1)[:, None] + cc[None, :] - 2 * b @ concepts.T
        out[i] = np.maximum(d, 0).min(0)
    return out


def fit_predict(d_train, y_train, d_test, sigma2, c):
    """The 1-norm SVM on the embedding m_k(B) = exp(-min-dist / sigma^2) (eq. 7)."""
    svm = LinearSVC(penalty="l1", dual=False, C=c, max_iter=5000, random_state=0)
    svm.fit(np.exp(-d_train / sigma2), y_train)
    return svm.predict(np.exp(-d_test / sigma2))


def choose(d, owner, y, dims, seed):
    """sigma^2 and C by 3-fold CV inside the training fold: `d` holds the training bags'
    distances to every training instance, `owner` each instance's bag (the concepts of an
    inner fit are its training bags' instances)."""
    best, best_acc = (dims * SIGMA_SCALES[1], CS[1]), -1.0
    if min(np.bincount(y, minlength=2)) < 3:
        return best
    inner = StratifiedKFold(3, shuffle=True, random_state=seed)
    splits = list(inner.split(np.zeros(len(y)), y))
    for s in SIGMA_SCALES:
        for c in CS:
            acc = 0.0
            for tr, te in splits:
                cols = np.isin(owner, tr)
                pred = fit_predict(d[np.ix_(tr, cols)], y[tr], d[np.ix_(te, cols)], dims * s, c)
                acc += (pred == y[te]).mean()
            if acc > best_acc:
                best, best_acc = (dims * s, c), acc
    return best


def cv(bags, y, seed):
    folds = StratifiedKFold(10, shuffle=True, random_state=seed)
    right, fit_s = 0, 0.0
    for tr, te in folds.split(np.zeros(len(y)), y):
        train, test = standardise([bags[i] for i in tr], [bags[i] for i in te])
        t = time.process_time()
        concepts = np.vstack(train)
        owner = np.concatenate([np.full(len(b), i) for i, b in enumerate(train)])
        d_train = min_sq_dists(train, concepts)
        sigma2, c = choose(d_train, owner, y[tr], train[0].shape[1], seed)
        fit_s += time.process_time() - t
        pred = fit_predict(d_train, y[tr], min_sq_dists(test, concepts), sigma2, c)
        right += int((pred == y[te]).sum())
    return right / len(y), fit_s


def standardise(train, test):
    allx = np.vstack(train)
    mu, sd = allx.mean(0), allx.std(0)
    sd[sd == 0] = 1.0
    return [(b - mu) / sd for b in train], [(b - mu) / sd for b in test]


def main():
    for path in sys.argv[1:]:
        bags, y = read_bags(path)
        y = (y == y.max()).astype(int)
        runs = [cv(bags, y, seed) for seed in (0, 1, 2)]
        print(json.dumps({
            "data": path.rsplit("/", 1)[-1].removesuffix(".csv"),
            "peer": "MILES",
            "accuracy": float(np.mean([a for a, _ in runs])),
            "per_seed": [round(a, 3) for a, _ in runs],
            "fit_cpu_seconds_all_folds": float(np.mean([s for _, s in runs])),
            "majority": float(max(y.mean(), 1 - y.mean())),
        }), flush=True)


if __name__ == "__main__":
    main()
