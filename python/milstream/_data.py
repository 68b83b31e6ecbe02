"""X as the estimators take it, checked and converted for the native core.

Series (aeon's layouts): a NumPy array ``(n_cases, n_timepoints)`` or ``(n_cases,
n_channels, n_timepoints)``, or a list of ``(n_channels, n_timepoints_i)`` (or 1-D)
arrays for unequal lengths. Bags: a list of ``(n_instances_i, n_features)`` arrays. Every
problem is a ValueError or TypeError that names the argument and the case.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_array


def _float_array(value, what):
    """``value`` as a float64 array; TypeError/ValueError naming ``what``."""
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{what} must be array-like of numbers, got {type(value).__name__}")
    arr = np.asarray(value)
    if np.iscomplexobj(arr):
        raise ValueError(f"{what}: Complex data not supported")
    try:
        return np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{what} must hold numbers only: {e}") from None


def _check_finite(case, what):
    if not np.isfinite(case).all():
        raise ValueError(f"{what} contains NaN or infinity")


def _is_ragged_list(X):
    return isinstance(X, (list, tuple)) and any(
        isinstance(c, np.ndarray) or isinstance(c, (list, tuple)) for c in X
    )


def series_cases(X, name="X"):
    """Cases as lists (channels) of lists (time steps), and the width of a 2-D array X
    (its n_timepoints; None for other layouts)."""
    width = None
    if _is_ragged_list(X) and not _equal_shapes(X):
        arrays = [_float_array(c, f"{name}[{i}]") for i, c in enumerate(X)]
        cases = []
        for i, a in enumerate(arrays):
            if a.ndim == 1:
                a = a[None, :]
            elif a.ndim != 2:
                raise ValueError(
                    f"{name}[{i}] must be 1-D (n_timepoints) or 2-D (n_channels, "
                    f"n_timepoints), got shape {a.shape}"
                )
            cases.append(a)
    else:
        # scikit-learn's own checks (and messages) for arrays: sparse, complex, object,
        # 1-D, empty, NaN and infinity.
        arr = check_array(X, allow_nd=True, dtype=np.float64, input_name=name)
        if arr.ndim == 2:
            width = arr.shape[1]
            cases = list(arr[:, None, :])
        elif arr.ndim == 3:
            cases = list(arr)
        else:
            raise ValueError(
                f"{name} must be 2-D (n_cases, n_timepoints) or 3-D (n_cases, n_channels, "
                f"n_timepoints), or a list of (n_channels, n_timepoints) arrays; got an "
                f"array of shape {arr.shape}"
            )
    if not cases:
        raise ValueError(f"{name} holds no cases (0 samples); at least 1 is required")
    channels = cases[0].shape[0]
    for i, c in enumerate(cases):
        if c.shape[0] != channels:
            raise ValueError(
                f"{name}[{i}] has {c.shape[0]} channel(s), {name}[0] has {channels}"
            )
        if c.shape[1] == 0:
            raise ValueError(f"{name}[{i}] has no time points")
        _check_finite(c, f"{name}[{i}]")
    return [c.tolist() for c in cases], width


def _equal_shapes(X):
    shapes = {np.shape(c) for c in X}
    return len(shapes) == 1


def bag_cases(X, name="X"):
    """Bags as lists (instances) of lists (features), and the feature count."""
    if isinstance(X, np.ndarray) and X.ndim == 3:
        bags = list(X)
    elif isinstance(X, (list, tuple)):
        bags = list(X)
    else:
        raise TypeError(
            f"{name} must be a list of (n_instances, n_features) arrays, one per bag; "
            f"got {type(X).__name__}"
        )
    if not bags:
        raise ValueError(f"{name} holds no bags (0 samples); at least 1 is required")
    out = []
    dim = None
    for i, b in enumerate(bags):
        a = _float_array(b, f"{name}[{i}]")
        if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
            raise ValueError(
                f"{name}[{i}] must be a non-empty 2-D array (n_instances, n_features), "
                f"got shape {a.shape}"
            )
        if dim is None:
            dim = a.shape[1]
        elif a.shape[1] != dim:
            raise ValueError(f"{name}[{i}] has {a.shape[1]} features, {name}[0] has {dim}")
        _check_finite(a, f"{name}[{i}]")
        out.append(a.tolist())
    return out, dim
