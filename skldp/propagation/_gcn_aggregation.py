"""The first-layer graph convolution estimator of PGC [Sajadmanesh & Gatica-Perez 2020, Eq. 4]."""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import StrOptions

from ..base import GraphTransformerMixin, note_edge_read
from ..utils._adjacency import normalized_adjacency, with_remaining_self_loops
from ..utils._arrays import check_finite_output
from ._spmm import DTYPE_CONSTRAINT, DTYPES, N_JOBS_CONSTRAINT, repeated_spmm

__all__ = ["GCNAggregation"]

# A sparse aggregate denser than this is returned as a dense array.
_DENSIFY_ABOVE = 0.25


# The declared constraints of the options GCNAggregation and KProp share.
_OPTION_CONSTRAINTS = {
    "self_loops": ["boolean"],
    "normalization": [StrOptions({"sym", "rw"}), None],
    "dtype": DTYPE_CONSTRAINT,
    "n_jobs": N_JOBS_CONSTRAINT,
}


def propagation_matrix(A, self_loops=True, normalization="sym", dtype=np.float32):
    """The aggregation operator ``P`` (CSR, ``dtype``) such that the output is ``P @ X``.

    ``"sym"``: ``D^-1/2 (A + I) D^-1/2``; ``"rw"``: ``D^-1 (A + I)``; ``None``:
    ``A + I`` (plain sum). ``I`` only with ``self_loops``, on the nodes without
    a self loop (an existing loop keeps its weight, as PyTorch Geometric's
    ``gcn_norm``); ``D`` is the
    diagonal of row sums of the (self-looped) adjacency. Rows with no
    neighbour are zero. Reuses ``skldp.utils._adjacency.normalized_adjacency``
    (the stored values scaled, no sparse products).
    """
    if normalization is None:
        if self_loops:
            return sp.csr_matrix(with_remaining_self_loops(A, dtype))
        return sp.csr_matrix(A, dtype=dtype)
    return normalized_adjacency(A, self_loops=self_loops, kind=normalization, dtype=dtype)


def graph_propagation_matrix(G, self_loops=True, normalization="sym", dtype=np.float32):
    """:func:`propagation_matrix` of the graph of ``G``, built once per graph.

    Kept with the adjacency (:meth:`skldp.GraphData.operator`): every step and
    every model that aggregates over the same graph with the same options
    (KProp at several depths, GCNAggregation, LPGNN, a search over parameters)
    normalises it once.
    """
    dtype = np.dtype(dtype)
    return G.operator(("propagation_matrix", bool(self_loops), normalization, dtype.str),
                      lambda A: propagation_matrix(A, self_loops, normalization, dtype))


def apply_propagation(P, X, steps=1, n_jobs=1):
    """``P^steps @ X`` in ``P``'s dtype.

    Sparse input stays sparse while the result has at most 25 % non-zeros
    (checked after each step), then it is made dense. Dense products run
    over column blocks in ``n_jobs`` threads (see
    :func:`skldp.propagation._spmm.repeated_spmm`).
    """
    Z = X
    for k in range(steps):
        if not sp.issparse(Z):
            return repeated_spmm(P, Z, steps - k, n_jobs)
        Z = sp.csr_matrix(P @ sp.csr_matrix(Z, dtype=P.dtype))
        if Z.nnz > _DENSIFY_ABOVE * Z.shape[0] * Z.shape[1]:
            Z = Z.toarray()
    if not sp.issparse(Z):
        Z = np.asarray(Z, dtype=P.dtype)
    return Z


class GCNAggregation(GraphTransformerMixin, BaseEstimator):
    r"""Graph convolution estimate of the first GCN layer, from (noisy) features.

    Replaces the features of every node :math:`v` by

    .. math:: \widehat{GC}(v) = \sum_{u \in \mathcal{N}(v)}
              \frac{\mathbf{y}^*_u}{\sqrt{d_u d_v}},

    where :math:`\mathcal{N}(v)` includes :math:`v` and :math:`d_v = |\mathcal{N}(v)|`:
    in matrix form ``P @ X`` with ``P = D^-1/2 (A + I) D^-1/2``. On the
    unbiased reports of an LDP mechanism the output is an unbiased estimate of
    the true graph convolution.

    Read more in the :ref:`User Guide <gcn_aggregation>`.

    Parameters
    ----------
    self_loops : bool, default=True
        Include each node in its own neighbourhood (``A + I``); a self loop
        already in the graph keeps its weight (no second loop is added).
    normalization : {"sym", "rw", None}, default="sym"
        ``P = D^-1/2 (A + I) D^-1/2`` (GCN), ``D^-1 (A + I)`` (the mean over
        the neighbourhood) or ``A + I`` (the sum).
    dtype : {"float32", "float64"}, default="float32"
        Precision of the product and of the output.
    n_jobs : int or None, default=None
        Threads over column blocks of dense features (``None`` or ``-1``:
        every CPU available to the process); the output does not depend on it.

    Attributes
    ----------
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of str objects
        Names of the features, when the GraphData has ``feature_names``. The
        output keeps them (:meth:`get_feature_names_out`).

    See Also
    --------
    skldp.propagation.KProp : Several aggregation steps.
    skldp.propagation.PPRPropagation : Personalized PageRank propagation.

    Notes
    -----
    Directed graphs are supported, not symmetrised. NaN or infinite features
    raise a ``ValueError``. Sparse features stay sparse unless the aggregate
    has more than 25 % non-zeros.

    References
    ----------
    .. [1] S. Sajadmanesh and D. Gatica-Perez, "When Differential Privacy
       Meets Graph Neural Networks", arXiv:2006.05535, 2020, eqs. (1) and (4),
       Lemma 2.
    .. [2] T. N. Kipf and M. Welling, "Semi-Supervised Classification with
       Graph Convolutional Networks", ICLR 2017, eq. (2).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skldp import GraphData
    >>> from skldp.propagation import GCNAggregation
    >>> A = sp.csr_array(np.array([[0, 1], [1, 0]]))
    >>> G = GraphData(np.array([[1.0], [3.0]]), A)
    >>> np.round(np.asarray(GCNAggregation().fit_transform(G)), 6)  # (1 + 3) / 2
    array([[2.],
           [2.]], dtype=float32)
    """

    def __init__(self, self_loops=True, normalization="sym", *, dtype="float32", n_jobs=None):
        self.self_loops = self_loops
        self.normalization = normalization
        self.dtype = dtype
        self.n_jobs = n_jobs

    _parameter_constraints = _OPTION_CONSTRAINTS

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check the options and that ``X`` is a GraphData with a graph."""
        return super().fit(X, y)

    def _transform_graph(self, G):
        dtype = DTYPES[self.dtype]
        P = graph_propagation_matrix(G, self.self_loops, self.normalization, dtype)
        Z = check_finite_output(apply_propagation(P, G.features, 1, self.n_jobs),
                                "GCNAggregation")
        return G.with_features(Z, feature_names=G.feature_names)

    def propagation_matrix(self, X):
        """The operator ``P`` (CSR, all nodes) used on the graph of ``X``: a copy of its
        own (the one kept with the graph for the transforms is not handed out).

        It is computed from ``X``'s edges: a read of them charged as ``transform``'s
        (refused under a budget when they are the users' true edges and an edge
        mechanism collects them).
        """
        self._validate_params()   # a public method that may run before fit
        dtype = DTYPES[self.dtype]
        from ..utils.validation import check_graph_data
        G = check_graph_data(X, self, require_adjacency=True)
        note_edge_read(self, G)   # the edges it reads, as transform (charged when due)
        # a copy: an edit of it in place would change every later output on this graph
        return graph_propagation_matrix(G, self.self_loops, self.normalization, dtype).copy()
