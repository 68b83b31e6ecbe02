"""Fit time through Python against the command line's, side by side (issue 29).

Usage: .venv/bin/python scripts/python-fit-time.py [DATASET] [REPEATS]
(default ACSF1, 3). Alternates `milstream train` (its reported train_seconds: the fit
alone, and the process's wall time) and `ShapeletClassifier().fit` (wall time of the
call: checking X, converting it, the fit) on the same training file with the same
default parameters, and prints the medians and the ratio as one JSON line. Needs the
release binary (cargo build --release) and the package (pip install ./python).
"""

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from milstream import ShapeletClassifier

repo = Path(__file__).resolve().parents[1]
name = sys.argv[1] if len(sys.argv) > 1 else "ACSF1"
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
train = repo / "tests" / "data" / f"{name}_TRAIN.csv"
binary = repo / "target" / "release" / "milstream"
d = np.loadtxt(train, delimiter=",")
X, y = d[:, 1:], d[:, 0].astype(int)

cli_fit, cli_wall, py_fit = [], [], []
with tempfile.TemporaryDirectory() as tmp:
    for _ in range(repeats):
        t = time.perf_counter()
        out = subprocess.run(
            [binary, "train", "--data", train, "--out", f"{tmp}/m.json", "--quiet", "--json"],
            capture_output=True, text=True, check=True,
        )
        cli_wall.append(time.perf_counter() - t)
        cli_fit.append(json.loads(out.stdout.splitlines()[-1])["train_seconds"])
        t = time.perf_counter()
        ShapeletClassifier().fit(X, y)
        py_fit.append(time.perf_counter() - t)

cli = statistics.median(cli_fit)
py = statistics.median(py_fit)
print(json.dumps({
    "dataset": name, "repeats": repeats,
    "cli_train_seconds": cli_fit, "cli_process_seconds": cli_wall, "python_fit_seconds": py_fit,
    "median_cli_train_seconds": round(cli, 3), "median_python_fit_seconds": round(py, 3),
    "python_over_cli": round(py / cli, 4),
}))
