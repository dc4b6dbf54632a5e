"""Checks of plain arrays and frames, below the data contract (nothing here knows graphs).

:mod:`skldp._graph_data` and :mod:`skldp.utils.validation` both use them; keeping them
apart from ``validation`` (which imports ``GraphData``) leaves no import cycle.
"""

import numpy as np
import scipy.sparse as sp

__all__ = ["check_finite_features", "frame_column_names"]


def check_finite_features(X, name="features"):
    """Raise a clear error if a dense or sparse matrix holds NaN or inf."""
    data = X.data if sp.issparse(X) else np.asarray(X)
    # Fast path without a boolean temporary of the data's size: a sum is finite only if
    # every term is (it may overflow to inf for finite terms; then check element-wise).
    with np.errstate(over="ignore", invalid="ignore"):
        if data.dtype.kind in "fc" and np.isfinite(data.sum()):
            return X
    if not np.all(np.isfinite(data)):
        bad = np.argwhere(~np.isfinite(X.toarray() if sp.issparse(X) else data))[0]
        raise ValueError(f"{name} contain NaN or infinite values (first at row {bad[0]}, "
                         f"column {bad[-1]}). Impute them before privatisation, e.g. with "
                         "NodeWise(SimpleImputer()).")
    return X


def frame_column_names(X):
    """A pandas DataFrame's column names when all are strings, else ``None``.

    scikit-learn's rule for ``feature_names_in_``: other column labels (integers, a
    mix) give ``None``; so does anything that is not a DataFrame.
    """
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "iloc"):
        return None
    names = np.asarray(columns, dtype=object)
    if len(names) and all(isinstance(c, str) for c in names):
        return names
    return None
