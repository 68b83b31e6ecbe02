"""The shapelet classifier as an aeon ``BaseClassifier``, for aeon's and tsml-eval's
benchmarking tools (which take aeon estimators). Needs aeon (``pip install aeon``).

``AeonShapeletClassifier`` has ``ShapeletClassifier``'s parameters and fits the same model;
aeon's base class checks and converts X (equal or unequal length, any channels) first.
"""

from __future__ import annotations

import numpy as np
from aeon.classification.base import BaseClassifier

from . import _params
from .estimators import ShapeletClassifier


class AeonShapeletClassifier(BaseClassifier):
    _tags = {
        "capability:multivariate": True,
        "capability:unequal_length": True,
        "capability:multithreading": True,
        "X_inner_type": ["np-list", "numpy3D"],
        "algorithm_type": "shapelet",
    }
    _names = ShapeletClassifier._names

    def __init__(self, **params):
        for name in params:
            if name not in self._names and name != "n_jobs":
                raise TypeError(f"AeonShapeletClassifier got an unexpected parameter {name!r}")
        for name in self._names:
            setattr(self, name, params.get(name, _params.BY_NAME[name].default))
        self.n_jobs = params.get("n_jobs", 1)
        super().__init__()

    def _classifier(self):
        return ShapeletClassifier(**{n: getattr(self, n) for n in self._names}, n_jobs=self.n_jobs)

    def _fit(self, X, y):
        # aeon passes X as a 3-D array or a list of 2-D arrays: the package's layouts.
        self.classifier_ = self._classifier().fit(_as_list(X), y)
        return self

    def _predict(self, X):
        return self.classifier_.predict(_as_list(X))

    def _predict_proba(self, X):
        return self.classifier_.predict_proba(_as_list(X))

    @classmethod
    def _get_test_params(cls, parameter_set="default"):
        return {"max_rounds": 5, "k": 10}


def _as_list(X):
    """aeon's inner X as a list of (n_channels, n_timepoints) arrays: a model fit on one
    length scores any other, as the library does."""
    return list(X) if isinstance(X, np.ndarray) else X


AeonShapeletClassifier.__init__.__signature__ = _params.signature(
    AeonShapeletClassifier._names, [("n_jobs", 1)]
)
AeonShapeletClassifier.__doc__ = ShapeletClassifier.__doc__
