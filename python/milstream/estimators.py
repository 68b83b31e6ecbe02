"""ShapeletClassifier and MILClassifier: scikit-learn / aeon style estimators over the
native core.

Fitting, scoring and the artifact are the library's own (the same calls as ``milstream
train`` / ``predict`` / ``explain``); this module checks X and y, turns parameters into the
command line's options and maps the library's class order (names sorted as strings) to
``classes_`` (``numpy.unique(y)``).
"""

from __future__ import annotations

import json
import os

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from . import _core, _data, _params

_KINDS = ("lpboost", "miordm", "boxsvm", "misvm", "mi-svm")


def _n_threads(n_jobs):
    """``n_jobs`` as a thread count: None = the library's pool (one thread per core, as
    the command line), -1 = every core, -k = all but k - 1 (joblib's convention)."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)):
        raise TypeError(f"n_jobs must be an int or None, got {n_jobs!r}")
    cores = os.cpu_count() or 1
    n = int(n_jobs) if n_jobs > 0 else cores + 1 + int(n_jobs)
    if n_jobs == 0 or n < 1:
        raise ValueError(f"n_jobs must be a positive count, -1 or None, got {n_jobs}")
    return n


def _native_call(call, *args, **kwargs):
    """Calls the native core; its ValueError names parameters as Python does."""
    try:
        return call(*args, **kwargs)
    except ValueError as e:
        raise ValueError(_params.python_message(str(e))) from None


class _MilstreamClassifier(ClassifierMixin, BaseEstimator):
    """What both estimators share; subclasses set ``_bags`` and ``_names``."""

    _bags = False
    _names: tuple = ()

    def __init__(self, **params):
        for name in params:
            if name not in self._names and name != "n_jobs":
                raise TypeError(
                    f"{type(self).__name__} got an unexpected parameter {name!r}; "
                    f"its parameters are {', '.join(self._names)}, n_jobs"
                )
        for name in self._names:
            setattr(self, name, params.get(name, _params.BY_NAME[name].default))
        self.n_jobs = params.get("n_jobs")

    # -- data -----------------------------------------------------------------------------

    def _cases(self, X):
        if self._bags:
            return _data.bag_cases(X)
        return _data.series_cases(X)

    def _fit_args(self):
        values = {n: getattr(self, n) for n in self._names}
        if self._bags:
            if values["kind"] not in _KINDS:
                raise ValueError(f"kind must be one of {', '.join(_KINDS)}, got {values['kind']!r}")
        else:
            values["kind"] = "lpboost"
        args = _params.to_args(values)
        _native_call(_core.check_options, args)
        return args

    # -- fitting --------------------------------------------------------------------------

    def fit(self, X, y):
        """Fits on X (see the class's doc for its layouts) and labels y, exactly as
        ``milstream train`` does with the same options. The GIL is released while the
        library fits; Ctrl-C raises KeyboardInterrupt."""
        args = self._fit_args()
        n_threads = _n_threads(self.n_jobs)
        cases, width = self._cases(X)
        y = column_or_1d(y, warn=True)
        if len(y) != len(cases):
            raise ValueError(f"X holds {len(cases)} cases but y holds {len(y)} labels")
        check_classification_targets(y)
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError(
                f"y has 1 class ({classes[0]!r}); a classifier needs at least two classes"
            )
        names = [str(c) for c in classes]
        if len(set(names)) != len(names):
            raise ValueError(f"y's classes {list(classes)} are not distinct as text")
        labels = [str(v) for v in y]
        model = _native_call(_core.Model.fit, args, cases, labels, self._bags, n_threads)
        self._adopt(model, classes)
        if width is not None:
            # A 2-D array is scikit-learn's (n_samples, n_features): predict takes the same
            # width. Series of other lengths are scored when passed as a list of arrays.
            self.n_features_in_ = width
        return self

    def __sklearn_is_fitted__(self):
        # Not scikit-learn's default test (an attribute ending in "_"): `lambda_` is a
        # parameter.
        return hasattr(self, "_model")

    def _adopt(self, model, classes):
        """Holds a native model whose classes are ``classes`` (in ``classes_`` order)."""
        native = list(model.classes)
        self._model = model
        self.classes_ = np.asarray(classes)
        # column j of classes_ order is column _order[j] of the library's scores
        self._order = np.array([native.index(str(c)) for c in self.classes_])
        self._to_classes = np.argsort(self._order)
        if not self._bags:
            self.n_channels_ = model.channels

    # -- scoring --------------------------------------------------------------------------

    def _native_predict(self, X):
        cases = self._checked_cases(X)
        index, scores = _native_call(
            self._model.predict, cases, self._bags, _n_threads(self.n_jobs)
        )
        scores = np.asarray(scores, dtype=np.float64).reshape(len(cases), -1)
        return self._to_classes[np.asarray(index, dtype=np.intp)], scores[:, self._order]

    def _checked_cases(self, X):
        check_is_fitted(self)
        cases, width = self._cases(X)
        if not self._bags and len(cases[0]) != self.n_channels_:
            raise ValueError(
                f"X has {len(cases[0])} channel(s), but {type(self).__name__} was fit on "
                f"{self.n_channels_}"
            )
        expected = getattr(self, "n_features_in_", None)
        if width is not None and expected is not None and width != expected:
            raise ValueError(
                f"X has {width} features, but {type(self).__name__} is expecting {expected} "
                "features as input"
                + (
                    ""
                    if self._bags
                    else " (a 2-D array's width is its series length; series of other "
                    "lengths are scored as a 3-D array (n_cases, n_channels, n_timepoints) "
                    "or a list of arrays)"
                )
            )
        return cases

    def predict(self, X):
        """The predicted class of each case (the library's ``predict``: the class with the
        largest score)."""
        index, _ = self._native_predict(X)
        return self.classes_[index]

    def class_scores(self, X):
        """The library's class scores g, ``(n_cases, n_classes)`` in ``classes_`` order,
        the values ``milstream predict`` prints."""
        return self._native_predict(X)[1]

    def decision_function(self, X):
        """scikit-learn's convention over the class scores: with two classes the margin
        g(classes_[1]) - g(classes_[0]) (positive: classes_[1]); with more, the class
        scores ``(n_cases, n_classes)``."""
        scores = self.class_scores(X)
        if scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def predict_proba(self, X):
        """Class probabilities ``(n_cases, n_classes)`` in ``classes_`` order: softmax(a g)
        of the class scores g with one scale a fitted when the model was, on held-out folds
        of its training set (temperature scaling; the library's ``predict_proba``, the
        daemon's prediction rows' ``probabilities``). A monotone map: the argmax is
        ``predict``'s class. Artifacts from before the calibration, and the bag kinds other
        than lpboost, give the softmax of the scores (a = 1)."""
        cases = self._checked_cases(X)
        p = _native_call(self._model.predict_proba, cases, self._bags, _n_threads(self.n_jobs))
        p = np.asarray(p, dtype=np.float64).reshape(len(cases), -1)
        return p[:, self._order]

    # -- explanations -----------------------------------------------------------------------

    def explain(self, X, as_frame=False):
        """Per case the decision, the class scores and every hypothesis's contribution:
        its offset (the maximising subsequence's start, or instance for a bag), length,
        dilation, view, normalisation, channel, similarity h_j, weight w_j, baseline (h_j's
        mean over the training set) and contribution w_j (h_j - baseline): what this case
        adds beyond the training set's average one, as ``milstream explain`` gives them. A list of dicts, or with
        ``as_frame=True`` a pandas DataFrame in long form (one row per case and hypothesis,
        the class scores as ``score_<class>`` columns)."""
        check_is_fitted(self)
        cases, _ = self._cases(X)
        texts = _native_call(self._model.explain, cases, self._bags, _n_threads(self.n_jobs))
        out = []
        for text in texts:
            e = json.loads(text)
            p = e["prediction"]
            native = self._model.classes
            out.append(
                {
                    "decision": self.classes_[self._to_classes[p["class_index"]]],
                    "scores": {c: p["scores"][i] for i, c in enumerate(native)},
                    "contributions": [_contribution(c) for c in e["contributions"]],
                }
            )
        if not as_frame:
            return out
        import pandas as pd

        rows = []
        for case, e in enumerate(out):
            head = {"case": case, "decision": e["decision"]}
            head.update({f"score_{c}": s for c, s in e["scores"].items()})
            for c in e["contributions"]:
                rows.append({**head, **c})
        return pd.DataFrame(rows)

    def plot_explanation(self, x, truth=None, title="case", top=5):
        """The SVG (text) of the paper's Figure 1 for one case ``x`` (an array
        ``(n_timepoints,)`` or ``(n_channels, n_timepoints)``; for bags ``(n_instances,
        n_features)``), as ``milstream explain --index i --out fig.svg`` draws it: each
        hypothesis's matched subsequence coloured by its contribution."""
        check_is_fitted(self)
        cases, _ = self._cases([np.asarray(x)] if not self._bags else [x])
        return _native_call(
            self._model.figure_svg,
            cases[0],
            self._bags,
            title,
            None if truth is None else str(truth),
            int(top),
        )

    # -- the artifact ---------------------------------------------------------------------

    def save(self, path):
        """Writes the daemon's artifact (what ``milstream train --out`` writes, unchanged):
        ``milstream run`` serves it as ``model.series_path`` (series) or
        ``model.bags_path`` (bags)."""
        check_is_fitted(self)
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._model.to_json())

    @classmethod
    def load(cls, path):
        """A fitted estimator from an artifact (``milstream train``'s or ``save``'s).
        ``classes_`` are the artifact's class names (text); the parameters are the
        defaults (the artifact keeps the library's fit parameters, not these)."""
        with open(path, encoding="utf-8") as f:
            model = _native_call(_core.Model.from_json, f.read())
        est = cls() if cls is ShapeletClassifier else cls(kind=model.kind)
        if est._bags == (not model.takes_bags):
            raise ValueError(
                f"{path}: a {model.kind} model of {'bags' if model.takes_bags else 'series'}; "
                f"load it with {'MILClassifier' if model.takes_bags else 'ShapeletClassifier'}"
            )
        est._adopt(model, list(model.classes))
        return est

    # -- pickling: the native model travels as its artifact -----------------------------------

    def __getstate__(self):
        state = dict(super().__getstate__())  # a copy: the live model stays native
        if "_model" in state:
            state["_model"] = state["_model"].to_json()
        return state

    def __setstate__(self, state):
        if isinstance(state.get("_model"), str):
            state["_model"] = _core.Model.from_json(state["_model"])
        super().__setstate__(state)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.non_deterministic = False
        return tags


def _contribution(c):
    """A library contribution as a flat dict (`normalisation`: z or raw)."""
    return {
        "class": c["class"],
        "hypothesis": c["hypothesis"],
        "offset": c["offset"],
        "length": c["length"],
        "dilation": c.get("dilation", 1),
        "view": c.get("view", "raw"),
        "normalisation": "z" if c.get("znorm") else "raw",
        "channel": c.get("channel", 0),
        "similarity": c["similarity"],
        "weight": c["weight"],
        "baseline": c.get("baseline", 0.0),
        "contribution": c["contribution"],
        "asserts": c.get("asserts", {"kind": "match"})["kind"],
    }


def _options_doc(names):
    return "\n".join(
        f"    {n} (default {_params.BY_NAME[n].default!r}): {_params.BY_NAME[n].help}"
        for n in names
    )


class ShapeletClassifier(_MilstreamClassifier):
    _bags = False
    _names = tuple(o.name for o in _params.OPTIONS if o.name != "kind")

    def __init__(self, **params):
        super().__init__(**params)


class MILClassifier(_MilstreamClassifier):
    _bags = True
    _names = ("kind",) + tuple(o.name for o in _params.OPTIONS if o.name != "kind")

    def __init__(self, kind="lpboost", **params):
        super().__init__(kind=kind, **params)


# The signatures scikit-learn's get_params / clone read: the command line's options.
ShapeletClassifier.__init__.__signature__ = _params.signature(
    ShapeletClassifier._names, [("n_jobs", None)]
)
MILClassifier.__init__.__signature__ = _params.signature(
    MILClassifier._names, [("n_jobs", None)]
)

ShapeletClassifier.__doc__ = f"""LPBoost over kernelized shapelets (Suehiro et al.): the
daemon's series model, fitted as ``milstream train`` fits it.

X: a NumPy array ``(n_cases, n_timepoints)`` or ``(n_cases, n_channels, n_timepoints)``, or
a list of ``(n_channels, n_timepoints_i)`` arrays of unequal lengths (aeon's layouts). A
fitted model scores series of any length (at least its longest shapelet).

Parameters are the fit options of ``milstream train``, same names (``-`` as ``_``) and
defaults; None leaves the library's default; ``paper=True`` is ``--paper``, the paper's form.
``n_jobs``: threads of the fit and of scoring (None: one per core).

{_options_doc(ShapeletClassifier._names)}
"""

MILClassifier.__doc__ = f"""A multiple-instance classifier of any kind the library fits:
``kind`` is lpboost (shapelet LPBoost over instances), miordm, boxsvm, misvm or mi-svm.

X: a list of ``(n_instances_i, n_features)`` arrays, one per bag.

Parameters are the fit options of ``milstream train`` (``--model`` is ``kind``), same
names and defaults; ``n_jobs`` as ShapeletClassifier's.

{_options_doc(MILClassifier._names)}
"""


def load(path):
    """A fitted estimator from an artifact: ShapeletClassifier for a series model,
    MILClassifier for a bag model."""
    with open(path, encoding="utf-8") as f:
        model = _native_call(_core.Model.from_json, f.read())
    cls = MILClassifier if model.takes_bags else ShapeletClassifier
    return cls.load(path)
