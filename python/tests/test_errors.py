"""Errors a Python user understands: ValueError / TypeError naming the argument, never a
panic."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from milstream import MILClassifier, ShapeletClassifier, load


def small():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 30))
    X[6:, 10:15] += 3.0
    return X, np.array([0] * 6 + [1] * 6)


def test_wrong_shapes():
    X, y = small()
    with pytest.raises(ValueError, match="X must be 2-D .* 3-D"):
        ShapeletClassifier().fit(X[None, None], y)
    with pytest.raises(ValueError, match="X holds 12 cases but y holds 11"):
        ShapeletClassifier().fit(X, y[:-1])
    with pytest.raises(ValueError, match=r"X\[1\] has 2 channel\(s\), X\[0\] has 1"):
        ShapeletClassifier().fit([X[0][None], np.vstack([X[1], X[1]])[:, :20]], y[:2])
    clf = ShapeletClassifier().fit(X, y)
    with pytest.raises(ValueError, match="X has 20 features, but ShapeletClassifier is expecting 30"):
        clf.predict(X[:, :20])
    # series of another length as a 3-D array or a list of unequal lengths: scored
    assert len(clf.predict(X[:, None, :20])) == 12
    assert len(clf.predict([x[: 20 + i] for i, x in enumerate(X)])) == 12
    with pytest.raises(ValueError, match="channel"):
        clf.predict(np.stack([X, X], axis=1))


def test_nan_and_infinity():
    X, y = small()
    X[3, 4] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ShapeletClassifier().fit(X, y)
    X, y = small()
    ragged = [x[: 20 + i] for i, x in enumerate(X)]
    ragged[5] = ragged[5].copy()
    ragged[5][2] = np.inf
    with pytest.raises(ValueError, match=r"X\[5\] contains NaN or infinity"):
        ShapeletClassifier().fit(ragged, y)
    bags = [np.ones((3, 4)), np.array([[1.0, np.nan, 0, 0]])]
    with pytest.raises(ValueError, match=r"X\[1\] contains NaN"):
        MILClassifier().fit(bags, [0, 1])


def test_one_class():
    X, y = small()
    with pytest.raises(ValueError, match="y has 1 class"):
        ShapeletClassifier().fit(X, np.zeros(12, dtype=int))


def test_unknown_and_bad_parameters():
    X, y = small()
    with pytest.raises(TypeError, match="unexpected parameter 'sigmaa'"):
        ShapeletClassifier(sigmaa=1.0)
    with pytest.raises(ValueError, match="Invalid parameter 'sigmaa'"):
        ShapeletClassifier().set_params(sigmaa=1.0)
    with pytest.raises(ValueError, match="parameter 'nu'"):
        ShapeletClassifier(nu="much").fit(X, y)
    with pytest.raises(ValueError, match="nu must be in"):
        ShapeletClassifier(nu=3.0).fit(X, y)
    with pytest.raises(ValueError, match="parameter 'kernel'"):
        ShapeletClassifier(kernel="cubic").fit(X, y)
    with pytest.raises(TypeError, match="paper must be True or False"):
        ShapeletClassifier(paper="yes").fit(X, y)
    with pytest.raises(TypeError, match="max_rounds must be a number"):
        ShapeletClassifier(max_rounds=[1]).fit(X, y)
    with pytest.raises(ValueError, match="kind must be one of"):
        MILClassifier(kind="svm").fit([np.ones((2, 3)), np.zeros((2, 3))], [0, 1])
    with pytest.raises(ValueError, match="n_jobs"):
        ShapeletClassifier(n_jobs=0).fit(X, y)
    with pytest.raises(TypeError, match="n_jobs"):
        ShapeletClassifier(n_jobs="2").fit(X, y)


def test_bags_must_be_a_list_of_2d_arrays():
    with pytest.raises(TypeError, match="X must be a list of"):
        MILClassifier().fit(np.ones((4, 3)), [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"X\[1\] has 2 features, X\[0\] has 3"):
        MILClassifier().fit([np.ones((2, 3)), np.ones((2, 2))], [0, 1])
    with pytest.raises(ValueError, match=r"X\[0\] must be a non-empty 2-D array"):
        MILClassifier().fit([np.ones(3), np.ones((2, 3))], [0, 1])


def test_not_fitted_and_bad_artifacts(tmp_path):
    X, _ = small()
    with pytest.raises(NotFittedError):
        ShapeletClassifier().predict(X)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "other", "version": 1, "model": {}}')
    with pytest.raises(ValueError, match="format"):
        load(bad)
    X, y = small()
    path = tmp_path / "series.json"
    ShapeletClassifier().fit(X, y).save(path)
    with pytest.raises(ValueError, match="load it with ShapeletClassifier"):
        MILClassifier.load(path)
