"""aeon's conventions: aeon's estimator checks for classifiers on the aeon wrapper
(`milstream.aeon.AeonShapeletClassifier`, a BaseClassifier: equal and unequal lengths, one
and several channels, pickling, determinism, cloning), and the wrapper fits the package's
model."""

from aeon.testing.estimator_checking import parametrize_with_checks
from conftest import DATA

from milstream import ShapeletClassifier
from milstream.aeon import AeonShapeletClassifier


@parametrize_with_checks([AeonShapeletClassifier])
def test_aeon_estimator_checks(check):
    check()


def test_the_aeon_wrapper_fits_the_same_model():
    from aeon.datasets import load_from_ts_file

    X, y = load_from_ts_file(str(DATA / "BasicMotions_TRAIN.ts"))
    Xt, _ = load_from_ts_file(str(DATA / "BasicMotions_TEST.ts"))
    wrapped = AeonShapeletClassifier(max_rounds=20).fit(X, y)
    plain = ShapeletClassifier(max_rounds=20).fit(X, y)
    assert (wrapped.predict(Xt) == plain.predict(Xt)).all()
    assert (wrapped.predict_proba(Xt) == plain.predict_proba(Xt)).all()
