"""Shared test helpers: the repository's datasets, the command line, the loaders."""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"


def cli_binary():
    """The `milstream` binary the command line tests compare with: MILSTREAM_BIN, else the
    release build (scripts/test.sh builds it before running pytest)."""
    path = Path(os.environ.get("MILSTREAM_BIN", REPO / "target" / "release" / "milstream"))
    assert path.exists(), f"{path} not found: run scripts/test.sh (or cargo build --release)"
    return path


def cli(*args):
    out = subprocess.run(
        [str(cli_binary()), *map(str, args)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, f"milstream {' '.join(map(str, args))}: {out.stderr}"
    return out.stdout


def cli_json_lines(*args):
    return [json.loads(line) for line in cli(*args).splitlines() if line.strip()]


def load_ucr(name):
    """A UCR CSV (label, values) as X (n_cases, n_timepoints) and integer labels."""
    d = np.loadtxt(DATA / name, delimiter=",", ndmin=2)
    return d[:, 1:], d[:, 0].astype(int)


def load_musk1():
    """MUSK1 as a list of (n_instances, 166) bags, labels and bag ids (file order)."""
    import pandas as pd

    df = pd.read_csv(DATA / "musk1.csv")
    ids = list(dict.fromkeys(df["bag_id"].astype(str)))
    groups = {str(k): g for k, g in df.groupby(df["bag_id"].astype(str), sort=False)}
    bags = [groups[i].drop(columns=["bag_id", "label"]).to_numpy(float) for i in ids]
    labels = np.array([int(groups[i]["label"].iloc[0]) for i in ids])
    return bags, labels, ids


@pytest.fixture(scope="session")
def gunpoint():
    return load_ucr("GunPoint_TRAIN.csv") + load_ucr("GunPoint_TEST.csv")
