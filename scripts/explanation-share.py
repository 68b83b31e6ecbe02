#!/usr/bin/env python3
"""How much of the decision margin an explanation's top findings carry (issue 27).

For each development set, trains a model on its training part (the CLI's defaults, and the
paper's form `--paper --binary single`), runs `predict --explain --top K` on its test part
and reports the quartiles of `shown_share` (the share of the decision margin beyond the
baseline the top K findings carry, as `explain --out` titles it and prediction rows carry it). MUSK1 has no
split: its even-numbered bags train, the odd ones are measured. Writes a markdown page.

    cargo build --release && scripts/explanation-share.py [--top 5] [--out docs/EXPLANATIONS.md]

Standard library only. Deterministic (seed 0): the numbers move only with the code.
"""

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "milstream")
DATA = os.path.join(ROOT, "tests", "data")

SETS = [
    ("GunPoint", "GunPoint_TRAIN.csv", "GunPoint_TEST.csv"),
    ("Coffee", "Coffee_TRAIN.csv", "Coffee_TEST.csv"),
    ("ACSF1 (10 classes)", "ACSF1_TRAIN.csv", "ACSF1_TEST.csv"),
    ("BasicMotions (6 channels, 4 classes)", "BasicMotions_TRAIN.ts", "BasicMotions_TEST.ts"),
    ("MUSK1 (bags)", None, None),
]

FORMS = [("defaults", []), ("paper (`--paper --binary single`)", ["--paper", "--binary", "single"])]


def run(args):
    out = subprocess.run([BIN] + args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"milstream {' '.join(args)} failed: {out.stderr}")
    return out.stdout


def split_musk(work):
    """MUSK1's bags alternately into a training and a measured file (by first appearance)."""
    with open(os.path.join(DATA, "musk1.csv"), newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    order = []
    for r in body:
        if r[0] not in order:
            order.append(r[0])
    part = {b: i % 2 for i, b in enumerate(order)}
    paths = []
    for p in (0, 1):
        path = os.path.join(work, f"musk1-{p}.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(r for r in body if part[r[0]] == p)
        paths.append(path)
    return paths


def quartiles(v):
    v = sorted(v)
    q = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else [v[0]] * 3
    return q[0], q[1], q[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "EXPLANATIONS.md"))
    a = ap.parse_args()
    commit = subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        musk = split_musk(work)
        for name, train, test in SETS:
            train = musk[0] if train is None else os.path.join(DATA, train)
            test = musk[1] if test is None else os.path.join(DATA, test)
            cells = []
            for form, flags in FORMS:
                model = os.path.join(work, "model.json")
                run(["train", "--data", train, "--out", model, "--quiet"] + flags)
                lines = run(
                    ["predict", "--model", model, "--data", test, "--explain", "--top", str(a.top)]
                ).splitlines()
                shares = [json.loads(l)["shown_share"] for l in lines]
                shares = [s for s in shares if s is not None]
                q1, med, q3 = quartiles(shares)
                cells.append((med, q1, q3, len(shares)))
                print(f"{name}, {form}: median {med:.0%} (quartiles {q1:.0%}-{q3:.0%}) over {len(shares)}",
                      file=sys.stderr)
            rows.append((name, cells))
    # The page's sections after the generated table (from "## Against a baseline" on) are
    # kept as they are (scripts/explanation-baseline.py writes that one's table).
    kept = ""
    if os.path.exists(a.out):
        with open(a.out) as f:
            page = f.read()
        at = page.find("\n## Against a baseline")
        kept = page[at:] if at >= 0 else ""
    with open(a.out, "w") as f:
        f.write("# How much of a decision the explanations show\n\n")
        f.write(
            f"The share of the decision margin beyond the baseline (the score `explain --out` titles,\n"
            f"less its baseline: the bias plus each hypothesis's weight times its mean output over the\n"
            f"training set, so each finding is what this case adds beyond the average training case)\n"
            f"that the top {a.top} findings carry (`shown_share` in `explain --json`, prediction rows and\n"
            f"`predict --explain`; the model card gives it on the training set): median and\n"
            f"quartiles over the test series of each development set, with the defaults every user\n"
            f"gets and with the paper's form. MUSK1 has no split: its even-numbered bags train, the\n"
            f"odd ones are measured. Written by `scripts/explanation-share.py` at commit {commit}\n"
            f"(deterministic, seed 0).\n\n"
            f"A share above 100 % means the findings shown outvote the rest, which pulls the other way\n"
            f"(the figure's title says so); below 0, the rest outweighs them. Artifacts from before\n"
            f"the baseline (no `hypothesis_means`) read against a zero baseline: the bias alone.\n\n"
        )
        f.write("| data set | test samples | defaults: median (quartiles) | paper's form: median (quartiles) |\n")
        f.write("|---|---|---|---|\n")
        for name, cells in rows:
            f.write(
                f"| {name} | {cells[0][3]} | "
                + " | ".join(f"{m:.0%} ({q1:.0%}-{q3:.0%})" for m, q1, q3, _ in cells).replace("%", " %")
                + " |\n"
            )
        f.write(kept)
    print(f"wrote {a.out} (commit {commit})", file=sys.stderr)


if __name__ == "__main__":
    main()
