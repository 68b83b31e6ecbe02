"""Python and the command line agree exactly on the same saved artifact: `predict` and
`decision_function` equal `milstream predict`'s labels and scores, bit for bit, on
GunPoint, ACSF1, BasicMotions (aeon's .ts loader) and MUSK1; `explain` and
`plot_explanation` equal `milstream explain`'s."""

import numpy as np
import pytest
from conftest import DATA, cli, cli_json_lines, load_musk1, load_ucr

from milstream import MILClassifier, ShapeletClassifier, load


def assert_same_as_cli(clf, X, path, data_file, ids=None):
    """Every case's label, class scores and decision values equal the CLI's."""
    rows = cli_json_lines("predict", "--model", path, "--data", data_file, "--json")
    assert len(rows) == len(X)
    if ids is not None:
        assert [r["id"] for r in rows] == ids
    native = [str(c) for c in load(path)._model.classes]
    col = [native.index(str(c)) for c in clf.classes_]
    scores = clf.class_scores(X)
    labels = clf.predict(X)
    decision = clf.decision_function(X)
    for i, r in enumerate(rows):
        cli_scores = [r["scores"][j] for j in col]  # classes_ order
        assert scores[i].tolist() == cli_scores, f"case {i}"
        assert str(labels[i]) == r["label"], f"case {i}"
        if len(col) == 2:
            assert decision[i] == cli_scores[1] - cli_scores[0], f"case {i}"
        else:
            assert decision[i].tolist() == cli_scores, f"case {i}"
    # The artifact reloaded in Python scores the same.
    again = load(path).class_scores(X)
    assert again.tolist() == [[r["scores"][j] for j in range(len(native))] for r in rows]


def test_gunpoint_predict_equals_cli(tmp_path, gunpoint):
    X, y, Xt, _ = gunpoint
    clf = ShapeletClassifier().fit(X, y)
    path = tmp_path / "gunpoint.json"
    clf.save(path)
    assert_same_as_cli(clf, Xt, path, DATA / "GunPoint_TEST.csv")


def test_gunpoint_artifact_equals_the_cli_fit(tmp_path, gunpoint):
    """Same options, same data: Python's artifact is the CLI's, but for the timing."""
    import json

    X, y, _, _ = gunpoint
    clf = ShapeletClassifier(nu=0.2, shapelet_length=[0.2, 30], no_head=True).fit(X, y)
    mine = json.loads(clf._model.to_json())
    cli_out = tmp_path / "cli.json"
    cli("train", "--data", DATA / "GunPoint_TRAIN.csv", "--out", cli_out, "--quiet",
        "--nu", "0.2", "--shapelet-length", "0.2,30", "--no-head")
    theirs = json.loads(cli_out.read_text())
    for m in (mine, theirs):
        m["model"]["summary"].pop("train_seconds")
    assert mine == theirs


def test_acsf1_predict_equals_cli(tmp_path):
    X, y = load_ucr("ACSF1_TRAIN.csv")
    Xt, _ = load_ucr("ACSF1_TEST.csv")
    clf = ShapeletClassifier().fit(X, y)
    assert len(clf.classes_) == 10
    path = tmp_path / "acsf1.json"
    clf.save(path)
    assert_same_as_cli(clf, Xt, path, DATA / "ACSF1_TEST.csv")


def test_basicmotions_from_aeon_ts_loader_equals_cli(tmp_path):
    from aeon.datasets import load_from_ts_file

    X, y = load_from_ts_file(str(DATA / "BasicMotions_TRAIN.ts"))
    Xt, yt = load_from_ts_file(str(DATA / "BasicMotions_TEST.ts"))
    assert X.shape == (40, 6, 100)
    clf = ShapeletClassifier().fit(X, y)
    assert clf.n_channels_ == 6
    path = tmp_path / "basicmotions.json"
    clf.save(path)
    assert_same_as_cli(clf, Xt, path, DATA / "BasicMotions_TEST.ts")
    assert (clf.predict(Xt) == yt).mean() >= 0.9


def test_musk1_bags_equal_cli(tmp_path):
    bags, labels, ids = load_musk1()
    clf = MILClassifier().fit(bags, labels)
    path = tmp_path / "musk1.json"
    clf.save(path)
    assert_same_as_cli(clf, bags, path, DATA / "musk1.csv", ids=ids)


@pytest.mark.parametrize("kind", ["miordm", "misvm", "mi-svm", "boxsvm"])
def test_every_bag_kind_equals_cli(tmp_path, kind):
    bags, labels, ids = load_musk1()
    clf = MILClassifier(kind=kind).fit(bags, labels)
    path = tmp_path / f"musk1-{kind}.json"
    clf.save(path)
    assert load(path)._model.kind == kind
    assert_same_as_cli(clf, bags, path, DATA / "musk1.csv", ids=ids)


def test_explain_and_figure_equal_cli(tmp_path, gunpoint):
    X, y, Xt, yt = gunpoint
    clf = ShapeletClassifier().fit(X, y)
    path = tmp_path / "gunpoint.json"
    clf.save(path)
    rows = cli_json_lines("explain", "--model", path, "--data", DATA / "GunPoint_TEST.csv",
                          "--top", "100000")
    mine = clf.explain(Xt[:5])
    for e, r in zip(mine, rows[:5]):
        theirs = r["explanation"]
        assert str(e["decision"]) == theirs["prediction"]["label"]
        assert list(e["scores"].values()) == theirs["prediction"]["scores"]
        assert [c["contribution"] for c in e["contributions"]] == [
            c["contribution"] for c in theirs["contributions"]
        ]
        assert [c["offset"] for c in e["contributions"]] == [
            c["offset"] for c in theirs["contributions"]
        ]
    frame = clf.explain(Xt[:5], as_frame=True)
    assert set(frame["case"]) == set(range(5))
    for col in ("decision", "offset", "length", "dilation", "view", "normalisation",
                "channel", "contribution", "score_1", "score_2"):
        assert col in frame.columns
    assert len(frame) == sum(len(e["contributions"]) for e in mine)
    svg_path = tmp_path / "fig.svg"
    cli("explain", "--model", path, "--data", DATA / "GunPoint_TEST.csv", "--index", "3",
        "--out", svg_path)
    svg = clf.plot_explanation(Xt[3], truth=yt[3], title="GunPoint_TEST.csv #3")
    assert svg.startswith("<svg")
    assert svg == svg_path.read_text()
