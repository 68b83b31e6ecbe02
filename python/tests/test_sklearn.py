"""scikit-learn's conventions: every check of `check_estimator` on ShapeletClassifier (its
X is scikit-learn's 2-D array: one series per row), and `cross_val_score` on GunPoint.

MILClassifier is not run through `check_estimator`: its X is a list of bags (arrays of
different row counts), which the checks' 2-D arrays cannot express.
"""

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import parametrize_with_checks

from milstream import ShapeletClassifier

# Checks expected to fail, each with its reason. None today: scikit-learn itself skips
# check_array_api_input unless SCIPY_ARRAY_API is set (the native core reads NumPy only).
EXPECTED_FAILED_CHECKS = {}


@parametrize_with_checks(
    [ShapeletClassifier()], expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS
)
def test_sklearn_check_estimator(estimator, check):
    check(estimator)


def test_cross_val_score_on_gunpoint(gunpoint):
    X, y, _, _ = gunpoint
    scores = cross_val_score(ShapeletClassifier(), X, y, cv=5)
    assert scores.shape == (5,)
    assert scores.mean() >= 0.8, scores


def test_in_a_pipeline_with_params_through_set_params(gunpoint):
    X, y, Xt, yt = gunpoint
    pipe = make_pipeline(FunctionTransformer(lambda a: a * 2.0), ShapeletClassifier())
    pipe.set_params(shapeletclassifier__nu=0.2, shapeletclassifier__n_jobs=1)
    assert pipe.get_params()["shapeletclassifier__nu"] == 0.2
    pipe.fit(X, y)
    assert (pipe.predict(Xt) == yt).mean() >= 0.8


def test_get_params_are_the_cli_defaults():
    p = ShapeletClassifier().get_params()
    assert p["max_rounds"] == 100 and p["epsilon"] == 1e-4 and p["sigma"] == "auto"
    assert p["paper"] is False and p["n_jobs"] is None and "kind" not in p
    c = clone(ShapeletClassifier(paper=True, shapelet_length=[0.2]))
    assert c.paper is True and c.shapelet_length == [0.2]


def test_paper_form_is_a_parameter(gunpoint):
    X, y, _, _ = gunpoint
    clf = ShapeletClassifier(paper=True, max_rounds=5).fit(X, y)
    import json

    params = json.loads(clf._model.to_json())["model"]["params"]
    assert params["k"] == 100 and params["nu"] == 0.2


def test_predict_proba_is_a_monotone_map_of_the_scores(gunpoint):
    X, y, Xt, _ = gunpoint
    clf = ShapeletClassifier().fit(X, y)
    s = clf.class_scores(Xt)
    p = clf.predict_proba(Xt)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert (np.argsort(s, axis=1) == np.argsort(p, axis=1)).all()
    order = np.argsort(clf.decision_function(Xt), kind="stable")
    assert (np.diff(p[order, 1]) >= 0).all()


def test_predict_proba_is_calibrated_and_older_artifacts_give_the_softmax(gunpoint, tmp_path):
    """Issue 73: softmax(a g) with the artifact's scale a, fitted on held-out folds; the
    probabilities are no longer about 0.5 whatever the margin. An artifact without the
    calibration (older ones) loads and gives softmax(g)."""
    import json

    X, y, Xt, yt = gunpoint
    clf = ShapeletClassifier().fit(X, y)
    art = json.loads(clf._model.to_json())
    a = art["model"]["calibration"]["scale"]
    assert a > 1.0 and art["model"]["calibration"]["held_out"] == len(y)
    s = clf.class_scores(Xt)
    z = np.exp(a * (s - s.max(axis=1, keepdims=True)))
    p = clf.predict_proba(Xt)
    np.testing.assert_allclose(p, z / z.sum(axis=1, keepdims=True), rtol=1e-9)
    assert p.max(axis=1).mean() > 0.8, p.max(axis=1).mean()
    del art["model"]["calibration"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(art))
    old = ShapeletClassifier.load(path)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(old.predict_proba(Xt), e / e.sum(axis=1, keepdims=True), rtol=1e-9)


def test_explain_reads_contributions_against_the_training_mean(gunpoint):
    """Issue 73: each contribution is w (similarity - baseline), the baseline its
    hypothesis's mean similarity over the training set: over the training set every
    hypothesis's contributions average zero."""
    X, y, _, _ = gunpoint
    clf = ShapeletClassifier().fit(X, y)
    sums = {}
    for case in clf.explain(X):
        for c in case["contributions"]:
            np.testing.assert_allclose(
                c["contribution"], c["weight"] * (c["similarity"] - c["baseline"]), atol=1e-12
            )
            key = (c["class"], c["hypothesis"])
            sums[key] = sums.get(key, 0.0) + c["contribution"]
    assert sums and all(abs(v) < 1e-9 for v in sums.values()), sums
