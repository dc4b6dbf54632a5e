"""Estimation error of graph aggregations of private features [Sajadmanesh & Gatica-Perez 2020]."""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone

from .._graph_data import GraphData, _check_real
from ..utils.validation import check_graph_data, check_int, refuse_graph_data

__all__ = ["aggregation_mae", "aggregation_error", "mae_by_degree"]

_BLOCK_ENTRIES = 1 << 22


def _as_matrix(X, name):
    if isinstance(X, GraphData):
        # the users' own features (or what was computed from them) leave in the clear
        # in the error: charged as an array export (epsilon inf; refused under a budget)
        X._note_export(f"aggregation_mae (the features of its {name})", X.rows)
        X = X.features[X.rows]
    if not sp.issparse(X):
        X = np.asarray(X)
    _check_real(X.dtype, name)   # the imaginary part would be dropped (a ComplexWarning)
    if X.dtype.kind not in "biufO":   # text, dates, durations
        raise TypeError(f"{name} must hold numbers, got dtype {X.dtype}.")
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float64)
    if X.dtype == object:   # numpy would parse text ("2") and refuse complex numbers
        bad = [v for v in X.flat if not isinstance(v, numbers.Real)][:1]
        if bad:
            raise TypeError(f"{name} must hold real numbers, got {bad[0]!r}.")
    X = X.astype(np.float64, copy=False)
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_nodes, n_features), got shape {X.shape}.")
    return X


def aggregation_mae(true_aggregate, estimated_aggregate, *, per_node=True):
    r"""Per-node MAE of an aggregation estimate [Sajadmanesh & Gatica-Perez 2020, Eq. 8].

    .. math:: MAE(v) = \frac{1}{m} \sum_{i=1}^{m}
              \left| GC(v)^{(i)} - \widehat{GC}(v)^{(i)} \right|

    Parameters
    ----------
    true_aggregate : array-like, sparse matrix or GraphData of shape (n_nodes, n_features)
        The aggregation of the true features, ``GC(v)`` (e.g. the output of
        :class:`~skldp.propagation.GCNAggregation` on the raw features). A
        GraphData contributes the features of its rows; when they are the users' own
        (or computed from them) the ledger charges those users a read in the clear
        (epsilon inf), which a population with a budget refuses.
    estimated_aggregate : same type and shape
        The estimate ``GC^(v)``, e.g. the same aggregation of the noisy
        reports of an LDP mechanism.
    per_node : bool, default=True
        Return the vector ``MAE(v)`` ([Sajadmanesh & Gatica-Perez, arXiv 2020, Fig. 3]
        averages it per
        degree); ``False`` returns its mean over nodes (Figure 2).

    Returns
    -------
    mae : ndarray of shape (n_nodes,) or float

    References
    ----------
    S. Sajadmanesh, D. Gatica-Perez. When Differential Privacy Meets Graph
    Neural Networks. arXiv:2006.05535, 2020:
    eq. (8) and Figures 2-3.

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.metrics import aggregation_mae
    >>> aggregation_mae(np.zeros((2, 2)), np.array([[1., -3.], [0., 0.5]]))
    array([2.  , 0.25])
    >>> aggregation_mae(np.zeros((2, 2)), np.array([[1., -3.], [0., 0.5]]), per_node=False)
    1.125
    """
    if not isinstance(per_node, (bool, np.bool_)):
        raise TypeError(f"per_node must be True or False, got {per_node!r}.")
    T = _as_matrix(true_aggregate, "true_aggregate")
    E = _as_matrix(estimated_aggregate, "estimated_aggregate")
    if T.shape != E.shape:
        raise ValueError(f"true_aggregate has shape {T.shape} but estimated_aggregate has "
                         f"shape {E.shape}.")
    if T.shape[1] == 0:
        raise ValueError("The aggregates have no feature column.")
    if T.shape[0] == 0:
        raise ValueError("The aggregates have no row (node): there is no error to measure.")
    if sp.issparse(T) and sp.issparse(E):
        total = np.asarray(abs(T - E).sum(axis=1)).ravel()
    else:
        # Row blocks: a sparse side is densified a few million entries at a time.
        n, d = T.shape
        total = np.empty(n)
        step = max(1, _BLOCK_ENTRIES // d)
        for s in range(0, n, step):
            Tb, Eb = T[s:s + step], E[s:s + step]
            Tb = Tb.toarray() if sp.issparse(Tb) else Tb
            Eb = Eb.toarray() if sp.issparse(Eb) else Eb
            total[s:s + step] = np.abs(Tb - Eb).sum(axis=1)
    if not np.all(np.isfinite(total)):
        raise ValueError("The aggregates contain NaN or infinite values.")
    mae = total / T.shape[1]
    return mae if per_node else float(mae.mean())


def aggregation_error(G, mechanism, aggregator=None, *, per_node=True):
    """MAE of the aggregation of a mechanism's reports against the true aggregation.

    Fits a clone of ``mechanism`` on ``G`` (all nodes), perturbs every
    node's features, aggregates the reports and the true features with the
    same ``aggregator`` (default :class:`~skldp.propagation.GCNAggregation`,
    [Sajadmanesh & Gatica-Perez, arXiv 2020, Eq. 4]) and returns :func:`aggregation_mae` over the
    rows of ``G``. This is the experiment of [Sajadmanesh & Gatica-Perez, arXiv 2020, Figs. 2-3].
    Reports that are not estimates of the features in their units are mapped back by
    the mechanism's ``estimate`` (:meth:`~skldp.mechanisms.HDSMechanism.estimate`:
    unbiased features); a mechanism without one (the codes of
    :class:`~skldp.mechanisms.GRRFSMechanism`) is refused.

    Parameters
    ----------
    G : GraphData
        The graph with its true features (and adjacency).
    mechanism : LDP mechanism
        An unfitted feature mechanism, e.g.
        :class:`~skldp.mechanisms.OneBitMechanism` (cloned, not modified).
    aggregator : graph transformer, default=None
        The aggregation; ``None`` means ``GCNAggregation()``.
    per_node : bool, default=True
        See :func:`aggregation_mae`.

    Returns
    -------
    mae : ndarray of shape (len(G),) or float

    Raises
    ------
    ValueError
        If the mechanism's reports are not in the features' units and it has
        no ``estimate`` method.

    References
    ----------
    S. Sajadmanesh, D. Gatica-Perez. When Differential Privacy Meets Graph
    Neural Networks. arXiv:2006.05535, 2020:
    eqs. (4), (8).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skldp import GraphData
    >>> from skldp.mechanisms import OneBitMechanism
    >>> from skldp.metrics import aggregation_error
    >>> A = sp.csr_array(np.array([[0, 1], [1, 0]]))
    >>> G = GraphData(np.array([[0.0, 1.0], [1.0, 1.0]]), A)
    >>> mech = OneBitMechanism(eps=np.inf, feature_range=(0, 1), random_state=0)
    >>> aggregation_error(G, mech)                 # no noise, no error
    array([0., 0.])
    """
    from ..propagation import GCNAggregation
    check_graph_data(G, mechanism, require_adjacency=True)
    if aggregator is None:
        aggregator = GCNAggregation()
    agg = clone(aggregator)
    full = G.full()
    true_agg = agg.fit(full).transform(full)
    mech = clone(mechanism).fit(full)
    noisy = mech.transform(full)
    if not getattr(mech, "_reports_in_feature_units", True):
        # (HDS's reports are C x on [-1, 1], GRR-FS's are codes): compared with the raw
        # features' aggregate, the error would measure the change of scale
        if not hasattr(mech, "estimate"):
            raise ValueError(
                f"aggregation_error needs reports that estimate the features in their own "
                f"units; {type(mech).__name__}'s reports are not (and it has no estimate "
                "method mapping them back), so their aggregate cannot be compared with the "
                "true features'.")
        noisy = noisy.with_features(mech.estimate(noisy.features), source="public")
    est_agg = agg.transform(noisy)
    return aggregation_mae(true_agg[G.rows], est_agg[G.rows], per_node=per_node)


def mae_by_degree(mae, degree, *, max_degree=None):
    """Average per-node MAE over the nodes of each degree [Sajadmanesh & Gatica-Perez 2020, Fig. 3].

    Parameters
    ----------
    mae : array-like of shape (n_nodes,)
        Per-node MAE (>= 0) from :func:`aggregation_mae` or :func:`aggregation_error`.
    degree : array-like of int of shape (n_nodes,)
        Node degrees (e.g. ``np.diff(A.indptr)``).
    max_degree : int >= 0 or None, default=None
        Largest degree kept; the paper uses the 99 % quantile of the degrees
        (``int(np.quantile(degree, 0.99))``). ``None`` keeps all.

    Returns
    -------
    degrees : ndarray of int
        The degrees that occur (between 1 and ``max_degree``; isolated nodes,
        degree 0, are kept too if present).
    mean_mae : ndarray of float
        Mean MAE of the nodes with that degree.

    Examples
    --------
    >>> from skldp.metrics import mae_by_degree
    >>> mae_by_degree([1.0, 3.0, 5.0], [1, 1, 2])
    (array([1, 2]), array([2., 5.]))
    """
    # (before np.asarray, which would charge a read of a GraphData's features)
    refuse_graph_data(mae, "mae_by_degree", "mae", "Pass the per-node MAE, e.g. of "
                      "aggregation_error(G, mechanism).")
    refuse_graph_data(degree, "mae_by_degree", "degree", "Pass the node degrees, e.g. "
                      "np.diff(G.adjacency.indptr).")
    max_degree = check_int(max_degree, "max_degree", allow_none=True)
    mae = np.asarray(mae, dtype=np.float64)
    degree = np.asarray(degree)
    if mae.ndim != 1 or degree.ndim != 1:
        raise ValueError(f"mae and degree must be 1-D (one value per node), got shapes "
                         f"{mae.shape} and {degree.shape}.")
    if not np.all(np.isfinite(mae)):
        raise ValueError("mae contains NaN or infinite values.")
    if mae.size and mae.min() < 0:   # (a signed error would average out in its degree)
        raise ValueError(f"mae must be non-negative (a mean absolute error), got "
                         f"{float(mae.min())!r}; pass aggregation_mae's per-node values.")
    if mae.shape != degree.shape:
        raise ValueError(f"mae has {mae.size} values but degree has {degree.size}.")
    if degree.dtype.kind not in "biuf":   # text, dates, complex, objects
        raise TypeError(f"degree must hold non-negative integers, got dtype {degree.dtype}.")
    if degree.size and degree.min() < 0:
        raise ValueError("degree must be non-negative.")
    if degree.dtype.kind == "f":
        if not np.all(np.isfinite(degree)):
            raise ValueError("degree contains NaN or infinite values; degrees must be "
                             "non-negative integers.")
        if not np.all(degree == np.round(degree)):
            raise ValueError("degree must hold integers.")
    if degree.size and degree.max() > np.iinfo(np.int64).max:   # uint64, floats
        raise ValueError(f"degree holds {int(degree.max())}, more than any graph's degree "
                         "(degrees must be below 2**63).")
    degree = degree.astype(np.int64, copy=False)
    if max_degree is not None:
        keep = degree <= max_degree
        mae, degree = mae[keep], degree[keep]
    counts = np.bincount(degree)
    sums = np.bincount(degree, weights=mae, minlength=len(counts))
    present = np.flatnonzero(counts)
    return present, sums[present] / counts[present]
