"""milstream's learning core in Python.

``ShapeletClassifier`` (series) and ``MILClassifier`` (bags) follow scikit-learn's and
aeon's conventions, fit with the command line's parameters, and save the artifact the
daemon serves (``milstream run`` with ``model.series_path``)::

    from aeon.datasets import load_gunpoint
    from milstream import ShapeletClassifier

    X, y = load_gunpoint(split="train")
    clf = ShapeletClassifier(n_jobs=2).fit(X, y)
    clf.explain(X[:1], as_frame=True)
    clf.save("gunpoint.json")
"""

from .estimators import MILClassifier, ShapeletClassifier, load

__all__ = ["MILClassifier", "ShapeletClassifier", "load"]
