"""Feature and label smoothing of Solitude [Lin et al., IEEE TIFS 2022, Eqs. 11-12]."""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context

from ..base import GraphTransformerMixin
from ..utils._adjacency import normalized_adjacency, scale_csr, with_remaining_self_loops
from ..utils._arrays import check_finite_features, check_finite_output
from ..utils.validation import (
    Count,
    check_adjacency,
    check_bool,
    check_int,
    refuse_graph_data,
)
from ._spmm import DTYPE_CONSTRAINT, DTYPES, N_JOBS_CONSTRAINT, check_dtype, repeated_spmm

__all__ = ["FeatureSmoothing", "smooth_features", "smooth_labels"]


def _sym_operator(A, self_loops):
    """``D_out^-1/2 A D_in^-1/2`` (eq. (12); ``D^-1/2 A D^-1/2`` when ``A`` is symmetric); a
    node without neighbours keeps its own row."""
    A = sp.csr_matrix(A, dtype=np.float64)
    if self_loops:   # an existing self loop keeps its weight
        A = with_remaining_self_loops(A)
    deg_out = np.asarray(A.sum(axis=1)).ravel()
    deg_in = np.asarray(A.sum(axis=0)).ravel()
    isolated = (deg_out == 0) & (deg_in == 0)
    if isolated.any():
        A = A + sp.diags(isolated.astype(np.float64), format="csr")
        deg_out = np.where(isolated, 1.0, deg_out)
        deg_in = np.where(isolated, 1.0, deg_in)
    with np.errstate(divide="ignore"):
        r = np.where(deg_out > 0, deg_out ** -0.5, 0.0)
        c = np.where(deg_in > 0, deg_in ** -0.5, 0.0)
    return scale_csr(A, r, c)


def _check_graph(X, A, func, what="X"):
    """Refuse what GraphData and FeatureSmoothing refuse: an adjacency that is not one
    (:func:`check_adjacency`) or does not match ``X``'s rows, and non-finite ``X``."""
    if A is None:
        raise ValueError(f"{func} needs the adjacency A of shape (n_nodes, n_nodes), "
                         "got None.")
    if X.ndim != 2:
        raise ValueError(f"{what} must be 2-D of shape (n_nodes, n_columns), got "
                         f"{X.ndim} dimensions.")
    check_adjacency(A, X.shape[0], rows=what)
    check_finite_features(X, name=f"the {what} given to {func}")


def _mean_operator(A, self_loops, dtype):
    """``D^-1 A`` of eq. (11) (``A + I`` with self loops); isolated nodes keep their row."""
    return normalized_adjacency(A, self_loops, "rw", dtype=dtype, isolated_keep_own=True)


def _check_real(values, what, convert):
    """Refuse an array whose dtype is not of real numbers (complex, text, objects): a
    dtype, not a value, so refused before any read."""
    if values.dtype.kind not in "biuf":
        raise TypeError(f"{what} must be real numbers, got dtype {values.dtype}"
                        + (" (the imaginary part would be dropped)." if values.dtype.kind == "c"
                           else f". Convert {convert}."))


def smooth_features(X, A, steps=2, self_loops=False, *, dtype="float64", n_jobs=1):
    """Feature smoothing [Lin et al., IEEE TIFS 2022, Eq. 11], applied ``steps`` times.

    Each step replaces a node's features with the mean of its neighbours'
    features, ``X <- D^-1 A X`` (with ``A + I`` if ``self_loops``). Nodes
    without neighbours keep their features. Sparse ``X`` stays sparse.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_nodes, n_features)
    A : sparse matrix of shape (n_nodes, n_nodes)
        The (server's) adjacency; row ``i`` lists the neighbours of ``i``.
    steps : int, default=2
        Number of aggregation steps ``K_x`` (0 returns ``X``).
    self_loops : bool, default=False
        Include each node in its own mean.
    dtype : {"float64", "float32"}, default="float64"
        Precision of the products and of the output.
    n_jobs : int or None, default=1
        Threads over column blocks of dense ``X`` (``None``: every CPU).

    Returns
    -------
    Z : ndarray or sparse of shape (n_nodes, n_features)
        An ndarray for dense ``X``; for sparse ``X`` a CSR ``csr_array`` (a
        scipy sparse array) or ``csr_matrix`` (a sparse matrix), as ``X`` is;
        ``X`` itself when ``steps=0``.

    Raises
    ------
    ValueError
        If ``A`` is None, not square, does not have one row per row of ``X``
        or holds NaN, infinite or negative weights, or if ``X`` holds NaN or
        inf (as :class:`~skldp.GraphData` and :class:`FeatureSmoothing`).
    TypeError
        If ``X`` or ``A`` is a :class:`~skldp.GraphData` (smooth one with
        :class:`FeatureSmoothing`), or ``X``'s dtype is not one of real numbers
        (complex, text, objects).
    InvalidParameterError
        If ``steps`` is not an integer >= 0 or ``self_loops`` not a bool.
    """
    graph_step = ("Smooth a GraphData's features with skldp.propagation.FeatureSmoothing "
                  "(GraphData in and out), or pass arrays: "
                  "smooth_features(G.features, G.adjacency).")
    refuse_graph_data(X, "smooth_features", "X", graph_step)
    refuse_graph_data(A, "smooth_features", "A", graph_step)
    steps = check_int(steps, "steps")
    self_loops = check_bool(self_loops, "self_loops")
    dtype = check_dtype(dtype)
    if not sp.issparse(X):
        X = np.asarray(X)
    _check_real(X, "features", "them first, e.g. X.astype(float)")
    _check_graph(X, A, "smooth_features")
    if steps == 0:
        return X
    # eq. (11): row-normalised D^-1 A; a node without neighbours keeps its own row.
    Z = _smooth(X, _mean_operator(A, self_loops, dtype), steps, dtype, n_jobs)
    return sp.csr_array(Z) if isinstance(X, sp.sparray) else Z


def _smooth(X, T, steps, dtype, n_jobs):
    if steps == 0:
        return X
    if not sp.issparse(X):
        return repeated_spmm(T, X, steps, n_jobs)
    Z = sp.csr_matrix(X, dtype=dtype)
    for _ in range(steps):  # a loop over steps, not nodes
        Z = T @ Z
    return sp.csr_matrix(Z)


def smooth_labels(Y, A, steps=2, self_loops=True):
    """Label smoothing [Lin et al., IEEE TIFS 2022, Eq. 12], applied ``steps`` times.

    Each step computes ``P_i <- sum_{j in N(i)} P_j / sqrt(|N(i)| |N(j)|)``,
    i.e. ``P <- D^-1/2 A D^-1/2 P``, starting from ``Y`` (one-hot rows for
    the labelled nodes, zero rows for the others). The result is returned
    as a distribution per row (rows normalised to sum to 1); a row that
    received no label mass keeps its original value. On a directed graph
    ``|N(i)|`` is ``i``'s out-degree (its row) and ``|N(j)|`` is ``j``'s
    in-degree (its column): ``D_out^-1/2 A D_in^-1/2``, as DGL's ``"both"``
    normalisation; the two agree on an undirected graph.

    Parameters
    ----------
    Y : ndarray or sparse matrix of shape (n_nodes, n_classes)
        Initial label matrix (one-hot for labelled nodes, zeros elsewhere);
        a sparse one is densified (the result is dense, of its shape).
    A : sparse matrix of shape (n_nodes, n_nodes)
    steps : int, default=2
        Number of propagation steps ``K_y`` (0 returns ``Y``).
    self_loops : bool, default=True
        Use ``A + I`` so that a node's own label keeps weight (with ``False``
        a labelled node is described by its neighbours only, as in eq. (12)).

    Returns
    -------
    P : ndarray of shape (n_nodes, n_classes)

    Raises
    ------
    ValueError
        If ``A`` is None, not square, does not have one row per row of ``Y``
        or holds NaN, infinite or negative weights, or if ``Y`` holds NaN,
        inf or negative values.
    TypeError
        If ``Y`` or ``A`` is a :class:`~skldp.GraphData`, or ``Y``'s dtype is
        not one of real numbers (complex, text, objects).
    InvalidParameterError
        If ``steps`` is not an integer >= 0 or ``self_loops`` not a bool.
    """
    refuse_graph_data(Y, "smooth_labels", "Y", "Y is the label matrix (one-hot rows for the "
                      "labelled nodes, zeros elsewhere), one row per node of A.")
    refuse_graph_data(A, "smooth_labels", "A")
    steps = check_int(steps, "steps")
    self_loops = check_bool(self_loops, "self_loops")
    if sp.issparse(Y):   # (np.asarray gave a 0-d array of dtype object)
        _check_real(Y, "Y given to smooth_labels", "it first, e.g. Y.astype(float)")
        Y = Y.toarray()   # the result is dense, of Y's shape: no larger than it
    Y = np.asarray(Y)
    _check_real(Y, "Y given to smooth_labels", "it first, e.g. Y.astype(float)")
    Y = Y.astype(np.float64, copy=False)
    _check_graph(Y, A, "smooth_labels", "Y")
    if (Y < 0).any():   # a row sum could cancel, and rows would not be distributions
        r, c = np.argwhere(Y < 0)[0]
        raise ValueError("Y given to smooth_labels must be non-negative (one-hot rows or "
                         f"label distributions), got {float(Y[r, c])} at row {r}, column {c}.")
    if steps == 0:
        return Y.copy()
    T = _sym_operator(A, self_loops)
    P = Y
    for _ in range(steps):
        P = T @ P
    s = P.sum(axis=1, keepdims=True)
    return np.where(s > 0, P / np.where(s > 0, s, 1.0), Y)


class FeatureSmoothing(GraphTransformerMixin, BaseEstimator):
    """Feature smoothing of Solitude: ``K_x`` steps of neighbour averaging (eq. (11)).

    ``X_i <- (1 / |N(i)|) sum_{j in N(i)} X_j``, repeated ``steps`` times
    over the whole graph (the server's, e.g. the output of
    :class:`~skldp.mechanisms.EdgeRR`), then the rows of the input view are
    returned. It is post-processing of the users' reports and spends no
    privacy budget. The number of steps must be tuned: too many over-smooth.
    Equivalent to LPGNN's KProp with the mean aggregator.

    **Directed graphs** (e.g. :class:`~skldp.mechanisms.EdgeRR` with
    ``symmetrize="directed"``) are supported, not symmetrised: node ``i``
    averages the nodes ``j`` with ``A[i, j] != 0``, i.e. its own reported
    list. An adjacency whose edges all lie on one side of the diagonal (an
    undirected edge list stored once) gets a ``UserWarning``. NaN or infinite
    features raise a ``ValueError``.

    Parameters
    ----------
    steps : int, default=2
        Number of aggregation steps ``K_x`` (the paper searches {0, 2, 4, 8}).
    self_loops : bool, default=False
        Include each node in its own mean (eq. (11) averages neighbours only).
    dtype : {"float32", "float64"}, default="float32"
        Precision of the products and of the output (float32 runs about
        twice as fast and differs from float64 by a relative ~1e-7: 7e-8 in
        Frobenius norm on Facebook, 2 steps).
    n_jobs : int or None, default=None
        Threads over column blocks of dense features (``None`` or ``-1``:
        every CPU available to the process); the output does not depend on it.

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of str objects
        Names of the features, when the GraphData has ``feature_names``; the
        output keeps them.

    References
    ----------
    W. Lin, B. Li, C. Wang. Towards Private Learning on Decentralized Graphs
    With Local Differential Privacy. IEEE Transactions on Information
    Forensics and Security 17, 2022 (arXiv:2201.09398): §III-B-3, eq. (11).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skldp import GraphData
    >>> from skldp.propagation import FeatureSmoothing
    >>> A = sp.csr_array(np.array([[0, 1, 1], [1, 0, 0], [1, 0, 0]]))
    >>> G = GraphData(np.array([[0.], [3.], [6.]]), A)
    >>> np.asarray(FeatureSmoothing(steps=1).fit_transform(G)).ravel()
    array([4.5, 0. , 0. ], dtype=float32)
    """

    _graph_requirements = {"require_adjacency": True, "require_finite": True}

    def __init__(self, steps=2, *, self_loops=False, dtype="float32", n_jobs=None):
        self.steps = steps
        self.self_loops = self_loops
        self.dtype = dtype
        self.n_jobs = n_jobs

    _parameter_constraints = {
        "steps": [Count(0)],
        "self_loops": ["boolean"],
        "dtype": DTYPE_CONSTRAINT,
        "n_jobs": N_JOBS_CONSTRAINT,
    }

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check the input and the number of steps."""
        return super().fit(X, y)

    def _transform_graph(self, G):
        steps = int(self.steps)
        dtype = DTYPES[self.dtype]
        if steps == 0:   # the features in dtype (float64 ones came back as float64)
            return G.with_features(G.features.astype(dtype, copy=False),
                                   feature_names=G.feature_names)
        # the operator is built once per graph (kept with the adjacency)
        T = G.operator(("smoothing_mean", bool(self.self_loops), np.dtype(dtype).str),
                       lambda A: _mean_operator(A, self.self_loops, dtype))
        Z = check_finite_output(_smooth(G.features, T, steps, dtype, self.n_jobs),
                                "FeatureSmoothing")
        return G.with_features(Z, feature_names=G.feature_names)
