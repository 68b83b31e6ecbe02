#!/usr/bin/env python3
"""Explanations against a baseline (issue 73): on a 3-class case, is any finding larger than
the decision margin only because of a part that is the same for every series?

Sets: ACSF1's classes 0, 1 and 2 (3 classes, 30 training and 30 test series of 1,460
points, derived from tests/data/ACSF1_*.csv) and BasicMotions (4 classes, 6 channels).
Trains the default model (the CLI's `train`, seed 0) and, for every test case, draws its
figure's data (`explain --index i --out x.svg --json`, the findings the figure, the rows
and the margin share use) twice: with the artifact as trained (contributions read against
each hypothesis's training-set mean, the means' part joining the bias: the baseline) and
with the means removed from the artifact (a zero baseline: the definition before issue 73,
contributions w_j h_j and the bias alone). Per case: the margin m = the figure's score
(g(predicted) - g(runner-up)), the baseline b, the largest |finding|. Prints a markdown table.

    cargo build --release && scripts/explanation-baseline.py

Standard library only. Deterministic (seed 0).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "milstream")
DATA = os.path.join(ROOT, "tests", "data")


def run(args):
    out = subprocess.run([BIN] + args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"milstream {' '.join(args)} failed: {out.stderr}")
    return out.stdout


def subset(src, dst, classes):
    with open(src) as f, open(dst, "w") as g:
        for line in f:
            if line.split(",", 1)[0].strip() in classes:
                g.write(line)


def cases(model, data, n, work):
    out = []
    for i in range(n):
        fig = json.loads(
            run(["explain", "--model", model, "--data", data, "--index", str(i),
                 "--out", os.path.join(work, "x.svg"), "--json"])
        )["figure"]
        values = [f["value"] for f in fig["findings"]]
        out.append((fig["score"], fig["bias"], max(abs(v) for v in values), fig["shown_share"]))
    return out


def summary(rows):
    margin = [abs(r[0]) for r in rows]
    largest = [r[2] for r in rows]
    over = sum(1 for m, l in zip(margin, largest) if l > m)
    ratio = [l / m for m, l in zip(margin, largest) if m > 0]
    share = [r[3] for r in rows]
    above = sum(1 for s in share if s > 1.0 + 5e-3)
    return (
        f"{statistics.median(margin):.4f} | {statistics.median(abs(r[1]) for r in rows):.4f} | "
        f"{statistics.median(largest):.4f} | {statistics.median(ratio):.2f} (max {max(ratio):.2f}) | "
        f"{over} of {len(rows)} | {statistics.median(share):.0%} ({above} above 100%)"
    ).replace("%", " %")


def main():
    rows = []
    with tempfile.TemporaryDirectory() as work:
        subset(os.path.join(DATA, "ACSF1_TRAIN.csv"), os.path.join(work, "a3_train.csv"), {"0", "1", "2"})
        subset(os.path.join(DATA, "ACSF1_TEST.csv"), os.path.join(work, "a3_test.csv"), {"0", "1", "2"})
        for name, train, test in [
            ("ACSF1 classes 0-2 (3 classes)", os.path.join(work, "a3_train.csv"), os.path.join(work, "a3_test.csv")),
            ("BasicMotions (4 classes)", os.path.join(DATA, "BasicMotions_TRAIN.ts"), os.path.join(DATA, "BasicMotions_TEST.ts")),
        ]:
            model = os.path.join(work, "model.json")
            run(["train", "--data", train, "--out", model, "--quiet"])
            with open(model) as f:
                art = json.load(f)
            art["model"].pop("hypothesis_means", None)
            zero = os.path.join(work, "zero.json")
            with open(zero, "w") as f:
                json.dump(art, f)
            n = len(run(["predict", "--model", model, "--data", test, "--json"]).splitlines())
            for form, path in [("zero baseline (before)", zero), ("training-set baseline (after)", model)]:
                rows.append(f"| {name} | {form} | {summary(cases(path, test, n, work))} |")
                print(rows[-1], file=sys.stderr, flush=True)
    print("| case | contributions read against | median margin m | median abs(baseline) | "
          "median largest abs(finding) | largest / m: median (max) | cases with a finding > m | "
          "share: median |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
