"""Input validation shared by all estimators."""

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import is_classifier
from sklearn.utils._param_validation import HasMethods
from sklearn.utils._param_validation import Interval as _Interval
from sklearn.utils.validation import check_array

from .._graph_data import GraphData, _as_adjacency
from ..device._grid import MIN_RANGE_WIDTH
from ..exceptions import InvalidParameterError, PrivacyLeakWarning
from ._arrays import (
    canonical_csr,
    check_finite_features,
    check_not_masked,
    frame_column_names,
    refuse_graph_data,
    within_bounds,
)
from ._blocks import row_blocks

__all__ = ["Count", "Interval", "EPS_CONSTRAINT", "LABEL_MECHANISM_CONSTRAINT",
           "RANDOM_STATE_CONSTRAINT", "check_eps", "check_int", "check_bool",
           "check_graph_data",
           "check_feature_array", "check_finite_features", "resolve_feature_range",
           "MIN_RANGE_WIDTH", "check_range_width",
           "clip_to_range", "input_feature_names", "check_input_features", "check_has_features",
           "record_feature_names", "check_feature_names", "refuse_pairs", "refuse_graph_data"]


class Interval(_Interval):
    """scikit-learn's ``Interval`` constraint (``_parameter_constraints``), booleans refused:
    ``True`` is a number in Python but never a count, a rate or a budget (as in
    :func:`check_int`)."""

    def is_satisfied_by(self, val):
        return not isinstance(val, bool) and super().is_satisfied_by(val)


class Count(Interval):
    """The declared constraint of a count: an integer in ``left..right`` (no upper bound
    when ``right`` is None), booleans refused."""

    def __init__(self, left, right=None):
        super().__init__(numbers.Integral, left, right,
                         closed="left" if right is None else "both")


#: The declared constraint of a privacy budget (``_parameter_constraints``): a real
#: number > 0, ``inf`` meaning no privacy.
EPS_CONSTRAINT = Interval(numbers.Real, 0, np.inf, closed="right")

#: The declared constraint of a ``random_state`` parameter: scikit-learn's (None, an
#: integer, a RandomState) or a numpy Generator (see ``skldp.utils._random.draw_seed``).
RANDOM_STATE_CONSTRAINT = ["random_state", np.random.Generator]

#: The declared constraint of a ``label_mechanism`` parameter (e.g. a
#: :class:`~skldp.mechanisms.LabelRandomizedResponse`).
LABEL_MECHANISM_CONSTRAINT = [HasMethods(["fit", "randomize"]), None]


def check_eps(eps, name="eps", allow_inf=True):
    """Validate a privacy budget: a real number > 0 (``inf`` = no privacy, if allowed)."""
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise InvalidParameterError(f"{name} must be a positive real number, got {eps!r}.")
    eps = float(eps)
    if np.isnan(eps):
        raise InvalidParameterError(f"{name} must be a positive real number, got NaN.")
    if eps <= 0:
        raise InvalidParameterError(f"{name} must be > 0, got {eps}. A privacy budget of 0 "
                                    "or less gives no usable output.")
    if np.isinf(eps) and not allow_inf:
        raise InvalidParameterError(f"{name} must be finite for this mechanism.")
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


def check_bool(value, name):
    """Validate a boolean option of a function (``True``, ``False`` or a numpy bool);
    returns it as ``bool``. Anything else (``"False"``, ``None``, ``0``) would be read by its
    truth: raises :class:`~skldp.exceptions.InvalidParameterError`, as the estimators'
    ``"boolean"`` constraint does."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameterError(f"{name} must be True or False, got {value!r}.")
    return bool(value)


def check_adjacency(A, n_nodes=None, name="A", rows="X"):
    """Refuse an adjacency matrix GraphData would refuse (None, a GraphData, not square,
    NaN, infinite or negative weights, another number of nodes than the ``n_nodes`` rows
    of ``rows``); returns its number of nodes. ``A`` itself is left as it is."""
    refuse_graph_data(A, "This function", name)
    shape = getattr(A, "shape", None)
    if A is None or shape is None or len(shape) != 2:
        raise ValueError(f"{name} must be an adjacency matrix of shape (n_nodes, n_nodes), "
                         f"got {A!r:.80}.")
    if n_nodes is not None and shape[0] == shape[1] != n_nodes:
        raise ValueError(f"{rows} must have one row per node of {name} ({shape[0]}), got "
                         f"{n_nodes} rows.")
    _as_adjacency(A, shape[0], None)
    return shape[0]


def check_graph_data(X, estimator=None, require_adjacency=False, require_symmetric=False,
                     require_finite=False, require_features=False):
    """Ensure ``X`` is a :class:`GraphData` (with a graph and finite features if required).

    Parameters
    ----------
    X : object
        The input of a graph step.
    estimator : estimator or None
        Named in the error messages.
    require_adjacency : bool, default=False
        Refuse an unknown graph (``adjacency=None``). A directed adjacency is
        accepted (row ``v`` lists the nodes ``v`` aggregates), but one whose
        edges all lie on one side of the diagonal, typically an undirected
        edge list stored once, gets a ``UserWarning`` suggesting
        ``A.maximum(A.T)``, once per graph.
    require_symmetric : bool, default=False
        Refuse an unknown or directed graph.
    require_finite : bool, default=False
        Refuse NaN or infinite features anywhere in the graph (checked once
        per graph, see :meth:`skldp.GraphData.require_finite_features`).
    require_features : bool, default=False
        Refuse a graph without feature columns (``GraphData(np.zeros((n, 0)), A)``),
        on which a model of the features predicts one output for every node.

    Returns
    -------
    X : GraphData
    """
    name = type(estimator).__name__ if estimator is not None else "This step"
    if not isinstance(X, GraphData):
        raise TypeError(
            f"{name} needs the graph: pass a skldp.GraphData, not {type(X).__name__}. Wrap "
            "your data as GraphData(features, adjacency)."
            # a GraphData a scikit-learn tool turned into an array on the way
            + (" If you passed a GraphData, a scikit-learn tool converted it to an array of "
               "its rows on the way (permutation_importance, BaggingClassifier and "
               "SelfTrainingClassifier do; converting raw features charges their users a read in "
               "the clear, epsilon=inf, see privacy_report): apply the tool to the step after "
               "the graph steps, on their output (pipe[:-1].transform(X))."
               if isinstance(X, np.ndarray) else ""))
    refuse_pairs(X, estimator)
    if require_symmetric:
        X.require_symmetric(name)
    elif require_adjacency:
        X.require_adjacency(name)
        if X.is_one_sided() and X._first_warning("one_sided"):   # once per graph
            warnings.warn(
                f"{name}: every edge of the adjacency lies on one side of the diagonal, so the "
                "graph is directed and row v reaches only the nodes u with A[v, u] != 0. If it "
                "is an undirected graph whose edges were stored once, symmetrise it first: "
                "A.maximum(A.T).", UserWarning, stacklevel=3)
    if require_features:
        check_has_features(X, name)
    if require_finite:
        X._check_finite(name)
    return X


def refuse_pairs(X, estimator):
    """A node classifier given node pairs (a :class:`~skldp.model_selection.PairData`)
    refuses them: it would read one node per pair position, or fail on the shapes."""
    if hasattr(X, "pairs") and isinstance(X, GraphData) and estimator is not None and \
            is_classifier(estimator) and not getattr(estimator, "_predicts_pairs", False):
        raise TypeError(
            f"{type(estimator).__name__} classifies nodes, but X is a PairData of node pairs. "
            "Predict links with skldp.models.HadamardLinkPredictor or VGAELinkPredictor, or "
            "pass a GraphData view of the nodes.")


def check_feature_array(X, dtype=np.float64, **kwargs):
    """The features of a plain array input: scikit-learn's ``check_array`` (CSR accepted,
    ``kwargs`` passed on), a sparse matrix in canonical form (:func:`canonical_csr`, a
    copy when it was not).

    Every step reads a sparse input's stored entries as the cells' values; a cell stored
    twice would pass checks and clips entry by entry, then be read as their sum.
    """
    check_not_masked(X)
    return canonical_csr(check_array(X, accept_sparse="csr", dtype=dtype, **kwargs))



def check_has_features(X, step="This step"):
    """Raise a clear error if ``X`` (a GraphData, an array) has no feature column.

    A graph of 0 feature columns is valid (graph-only steps such as
    :class:`~skldp.baselines.StructuralFeatures`, :class:`~skldp.mechanisms.EdgeRR`
    or :class:`~skldp.baselines.LabelPropagationClassifier` need none); a step that
    reads the features says so here, before anything is computed or charged.
    """
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2 or shape[1] > 0:
        return
    raise ValueError(
        f"{step} reads the node features, but this data has 0 feature columns (shape "
        f"{tuple(shape)}). Give each node at least one feature (structural ones: "
        "skldp.baselines.StructuralFeatures), or use a step that needs only the graph "
        "(StructuralFeatures, EdgeRR, LabelPropagationClassifier).")


def input_feature_names(X):
    """Column names of ``X``, or ``None``, following scikit-learn's rule.

    A :class:`GraphData` gives its ``feature_names``; a pandas DataFrame its
    columns when all are strings (other column labels give ``None``, as in
    scikit-learn); anything else ``None``.
    """
    if isinstance(X, GraphData):
        return None if X.feature_names is None else np.asarray(X.feature_names, dtype=object)
    return frame_column_names(X)


def record_feature_names(estimator, X):
    """Set ``feature_names_in_`` to the names of ``X`` (a fit), or drop it when ``X`` has
    none, as scikit-learn's estimators do."""
    names = input_feature_names(X)
    if names is None:
        estimator.__dict__.pop("feature_names_in_", None)
    else:
        estimator.feature_names_in_ = names


def check_feature_names(estimator, X):
    """Refuse ``X`` whose column names differ from those seen in fit (scikit-learn's rule):
    the same columns in another order would otherwise be predicted on, silently wrong.
    Unnamed input, or an estimator fitted on unnamed input, is not checked."""
    fitted = getattr(estimator, "feature_names_in_", None)
    names = input_feature_names(X)
    if fitted is None or names is None:
        return
    if len(names) == len(fitted) and np.all(names == fitted):
        return
    seen_in_fit, given = set(fitted), set(names)
    unseen = [n for n in names if n not in seen_in_fit]
    missing = [n for n in fitted if n not in given]
    msg = "The feature names should match those that were passed during fit.\n"
    if unseen:
        msg += "Feature names unseen at fit time:\n" + "".join(f"- {n}\n" for n in unseen[:5])
    if missing:
        msg += ("Feature names seen at fit time, yet now missing:\n"
                + "".join(f"- {n}\n" for n in missing[:5]))
    if not unseen and not missing:
        msg += "Feature names must be in the same order as they were in fit.\n"
    raise ValueError(msg)


def warn_on_names_presence(estimator, X):
    """Warn when ``X`` has feature names and ``estimator`` was fitted without, or the
    reverse, with scikit-learn's messages (``BaseEstimator._check_feature_names``)."""
    fitted = getattr(estimator, "feature_names_in_", None) is not None
    given = input_feature_names(X) is not None
    name = type(estimator).__name__
    if given and not fitted:
        warnings.warn(f"X has feature names, but {name} was fitted without feature names",
                      UserWarning, stacklevel=3)
    elif fitted and not given:
        warnings.warn(f"X does not have valid feature names, but {name} was fitted with "
                      "feature names", UserWarning, stacklevel=3)


def check_input_features(estimator, input_features=None):
    """The input feature names of a fitted step (scikit-learn's ``get_feature_names_out`` rule).

    ``input_features=None`` gives ``feature_names_in_`` when the step was
    fitted on named columns, else ``x0 .. x{n_features_in_ - 1}``. Given names
    must have length ``n_features_in_`` and equal ``feature_names_in_`` when
    it exists.

    Returns
    -------
    names : ndarray of object
    """
    names_in = getattr(estimator, "feature_names_in_", None)
    n_in = getattr(estimator, "n_features_in_", None)
    if input_features is None:
        if names_in is not None:
            return np.asarray(names_in, dtype=object)
        if n_in is None:
            raise ValueError("Unable to generate feature names without n_features_in_.")
        return np.asarray([f"x{i}" for i in range(n_in)], dtype=object)
    input_features = np.asarray(input_features, dtype=object)
    if names_in is not None and not np.array_equal(names_in, input_features):
        raise ValueError("input_features is not equal to feature_names_in_")
    if n_in is not None and len(input_features) != n_in:
        raise ValueError("input_features should have length equal to number of features "
                         f"({n_in}), got {len(input_features)}")
    return input_features


def _col_min_max(X):
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        lo = np.asarray(X.min(axis=0).todense()).ravel()
        hi = np.asarray(X.max(axis=0).todense()).ravel()
        return lo, hi
    return X.min(axis=0), X.max(axis=0)


def resolve_feature_range(feature_range, X, owner="mechanism", on_read=None):
    """Per-column bounds (lo, hi) from the user's ``feature_range``.

    ``feature_range`` is ``(lo, hi)`` with scalars or arrays of length d. When
    it is ``None`` the bounds are read from ``X`` (the private data) with a
    :class:`PrivacyLeakWarning`, after ``on_read()`` (a mechanism charges the
    users that read in the clear there, and may refuse it under a budget).
    """
    d = X.shape[1]
    # before anything is read or charged: zero columns have no bounds (and no report)
    check_has_features(X, owner)
    if feature_range is None:
        warnings.warn(f"{owner}: feature_range was not given, so the bounds are read from "
                      "the private data in the clear: the ledger charges the users a read "
                      "of their features in the clear (epsilon=inf). Pass "
                      "feature_range=(lo, hi) from public knowledge.", PrivacyLeakWarning,
                      stacklevel=3)
        if on_read is not None:
            on_read()
        lo, hi = _col_min_max(X)
        # constant columns: any non-empty range (wider than 1 where lo + 1 rounds to lo)
        hi = np.where(hi > lo, hi, lo + np.maximum(1.0, np.abs(lo) * 2.0 ** -20))
    else:
        try:
            lo, hi = feature_range
        except (TypeError, ValueError):
            raise ValueError(
                f"feature_range must be a pair (lo, hi), got {feature_range!r}.") from None
        lo, hi = (_bound(b, d, name) for b, name in ((lo, "lo"), (hi, "hi")))
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError("feature_range must be finite.")
    if np.any(hi <= lo):
        raise ValueError("feature_range must have lo < hi for every feature.")
    check_range_width(lo, hi)
    return lo, hi




def check_range_width(lo, hi):
    """Refuse bounds ``lo < hi`` whose width ``hi - lo`` overflows or is below
    :data:`MIN_RANGE_WIDTH` (about 4.1e-289)."""
    with np.errstate(over="ignore"):
        width = np.asarray(hi, dtype=np.float64) - np.asarray(lo, dtype=np.float64)
    if not np.all(np.isfinite(width)):
        # the mechanisms divide by hi - lo: an overflowed width gives inf or NaN reports
        raise ValueError(f"feature_range's width hi - lo overflows to inf "
                         f"(lo={float(np.min(lo))!r}, hi={float(np.max(hi))!r}); use bounds "
                         "whose difference is a finite float (below about 1.8e308).")
    if np.any(width < MIN_RANGE_WIDTH):
        raise ValueError(f"feature_range's width hi - lo is {float(np.min(width)):.3g}, below "
                         f"{MIN_RANGE_WIDTH:.3g}: the reports' grid steps would underflow "
                         "(every report lo, or few distinct values). Rescale the features "
                         "(e.g. to a unit near their own size).")


def _bound(value, d, name):
    """One side of ``feature_range``: a scalar, or one value per feature (length ``d``)."""
    try:
        # text ("0") and booleans would be read as numbers: refused as any other non-number
        if np.asarray(value).dtype.kind in "USb":
            raise TypeError
        b = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"feature_range's {name} must be a number or an array of numbers, "
                         f"got {value!r}.") from None
    if b.ndim > 1 or (b.ndim == 1 and b.shape != (d,)):
        raise ValueError(f"feature_range's {name} must be a scalar or have one value per "
                         f"feature (length {d}), got shape {b.shape}.")
    return np.broadcast_to(b, (d,)).copy()


def clip_to_range(X, lo, hi, owner="mechanism", dtype=np.float64):
    """Clip features into [lo, hi] per column, warning when anything was clipped.

    Sparse input stays sparse when 0 lies inside every column's range. Dense
    input becomes ``dtype``; ``dtype=None`` keeps a float32 or float64 input's
    own (for readers that widen the values they take). NaN or infinite values
    raise a ``ValueError`` (:func:`check_finite_features`'s).
    """
    if sp.issparse(X):
        X = canonical_csr(X)   # each cell's value clipped, not each of its stored entries
        check_finite_features(X)
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
    if dtype is None:
        X = np.asarray(X)
        dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    X = np.asarray(X, dtype=dtype)
    # In range, the usual case, X is returned without a clipped copy after one reading
    # pass, which also shows it finite (NaN and inf are outside any finite bounds).
    # Otherwise bad values are refused, and the values outside counted in row blocks.
    if within_bounds(X, lo, hi):
        X = X.view()
        X.flags.writeable = False  # possibly the caller's array: mechanisms only read it
        return X
    check_finite_features(X)
    n_bad = sum(int(np.count_nonzero((X[rows] < lo) | (X[rows] > hi)))
                for rows in row_blocks(*X.shape, 1 << 18))
    _warn_clip(n_bad, owner)
    return np.clip(X, lo, hi)


def _warn_clip(n_bad, owner):
    warnings.warn(f"{owner}: {n_bad} feature values lay outside feature_range and were "
                  "clipped to it.", UserWarning, stacklevel=4)
