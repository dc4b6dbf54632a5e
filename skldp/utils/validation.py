"""Input validation shared by all estimators."""

import numbers
import warnings

import numpy as np
import scipy.sparse as sp

from .._graph_data import GraphData
from ..exceptions import InvalidParameterError, PrivacyLeakWarning

__all__ = ["check_eps", "check_int", "check_graph_data", "check_finite_features",
           "resolve_feature_range", "clip_to_range"]


def check_eps(eps, name="eps", allow_inf=True):
    """Validate a privacy budget: a real number > 0 (``inf`` = no privacy, if allowed)."""
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise TypeError(f"{name} must be a positive real number, got {eps!r}.")
    eps = float(eps)
    if np.isnan(eps):
        raise ValueError(f"{name} must be a positive real number, got NaN.")
    if eps <= 0:
        raise ValueError(f"{name} must be > 0, got {eps}. A privacy budget of 0 or less "
                         "gives no usable output.")
    if np.isinf(eps) and not allow_inf:
        raise ValueError(f"{name} must be finite for this mechanism.")
    return eps


def check_int(value, name, minimum=0, maximum=None, *, maximum_is=None, allow_none=False):
    """Validate an integer hyper-parameter in ``minimum..maximum``; returns it as ``int``.

    Booleans are refused (``True`` is an ``int`` in Python but never a count);
    numpy integers are accepted. ``maximum_is`` names the maximum in the
    message (e.g. ``"the number of features"``). Raises
    :class:`~skldp.exceptions.InvalidParameterError` (a ``ValueError`` and a
    ``TypeError``).
    """
    if value is None and allow_none:
        return None
    if maximum is None:
        expected = f"an integer >= {minimum}"
    else:
        expected = f"an integer in {minimum}..{maximum}"
        if maximum_is:
            expected += f" ({maximum_is})"
    if allow_none:
        expected += " or None"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidParameterError(f"{name} must be {expected}, got {value!r}.")
    if value < minimum or (maximum is not None and value > maximum):
        raise InvalidParameterError(f"{name} must be {expected}, got {value!r}.")
    return int(value)


def check_graph_data(X, estimator=None, require_adjacency=False, require_symmetric=False):
    """Ensure ``X`` is a :class:`GraphData` (with a graph if required)."""
    name = type(estimator).__name__ if estimator is not None else "This step"
    if not isinstance(X, GraphData):
        raise TypeError(f"{name} needs the graph: pass a skldp.GraphData, not "
                        f"{type(X).__name__}. Wrap your data as GraphData(features, adjacency).")
    if require_symmetric:
        X.require_symmetric(name)
    elif require_adjacency:
        X.require_adjacency(name)
    return X


def check_finite_features(X, name="features"):
    """Raise a clear error if a dense or sparse matrix holds NaN or inf."""
    data = X.data if sp.issparse(X) else np.asarray(X)
    if not np.all(np.isfinite(data)):
        bad = np.argwhere(~np.isfinite(X.toarray() if sp.issparse(X) else data))[0]
        raise ValueError(f"{name} contain NaN or infinite values (first at row {bad[0]}, "
                         f"column {bad[-1]}). Impute them before privatisation, e.g. with "
                         "NodeWise(SimpleImputer()).")
    return X


def _col_min_max(X):
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        lo = np.asarray(X.min(axis=0).todense()).ravel()
        hi = np.asarray(X.max(axis=0).todense()).ravel()
        return lo, hi
    return X.min(axis=0), X.max(axis=0)


def resolve_feature_range(feature_range, X, owner="mechanism"):
    """Per-column bounds (lo, hi) from the user's ``feature_range``.

    ``feature_range`` is ``(lo, hi)`` with scalars or arrays of length d. When
    it is ``None`` the bounds are read from ``X`` (the private data) with a
    :class:`PrivacyLeakWarning`.
    """
    d = X.shape[1]
    if feature_range is None:
        warnings.warn(f"{owner}: feature_range was not given, so the bounds are taken from "
                      "the private data, which leaks information about it. Pass "
                      "feature_range=(lo, hi) from public knowledge.", PrivacyLeakWarning,
                      stacklevel=3)
        lo, hi = _col_min_max(X)
        hi = np.where(hi > lo, hi, lo + 1.0)  # constant columns: any non-empty range
    else:
        try:
            lo, hi = feature_range
        except (TypeError, ValueError):
            raise ValueError(
                f"feature_range must be a pair (lo, hi), got {feature_range!r}.") from None
        lo = np.broadcast_to(np.asarray(lo, dtype=np.float64), (d,)).copy()
        hi = np.broadcast_to(np.asarray(hi, dtype=np.float64), (d,)).copy()
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError("feature_range must be finite.")
    if np.any(hi <= lo):
        raise ValueError("feature_range must have lo < hi for every feature.")
    return lo, hi


def clip_to_range(X, lo, hi, owner="mechanism"):
    """Clip features into [lo, hi] per column, warning when anything was clipped.

    Sparse input stays sparse when 0 lies inside every column's range.
    """
    if sp.issparse(X):
        if np.all(lo <= 0) and np.all(hi >= 0):
            X = sp.csr_matrix(X, copy=True)
            cols = X.indices
            clipped = np.clip(X.data, lo[cols], hi[cols])
            n_bad = np.count_nonzero(clipped != X.data)
            X.data = clipped
            if n_bad:
                _warn_clip(n_bad, owner)
            return X
        X = X.toarray()
    X = np.asarray(X, dtype=np.float64)
    clipped = np.clip(X, lo, hi)
    n_bad = np.count_nonzero(clipped != X)
    if n_bad:
        _warn_clip(n_bad, owner)
    return clipped


def _warn_clip(n_bad, owner):
    warnings.warn(f"{owner}: {n_bad} feature values lay outside feature_range and were "
                  "clipped to it.", UserWarning, stacklevel=4)
