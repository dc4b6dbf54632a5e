"""KProp: K-step aggregation of LPGNN to denoise private features."""

from sklearn.base import BaseEstimator, _fit_context

from ..base import GraphTransformerMixin
from ..utils._arrays import check_finite_output
from ..utils.validation import Count
from ._gcn_aggregation import _OPTION_CONSTRAINTS, apply_propagation, graph_propagation_matrix
from ._spmm import DTYPES

__all__ = ["KProp"]


class KProp(GraphTransformerMixin, BaseEstimator):
    r"""K-step neighbourhood aggregation (KProp) of LPGNN.

    Applies the aggregation ``P`` ``K = steps`` times, ``X^(K) = P^K X``, with
    ``P = D^-1 (A + I)`` (the mean over a node's neighbourhood) by default.
    Each step averages the noise of unbiased LDP reports over a larger
    neighbourhood while their expectation stays the aggregate of the true
    features.

    Read more in the :ref:`User Guide <kprop>`.

    Parameters
    ----------
    steps : int, default=1
        Number of aggregation steps ``K >= 0``; 0 returns the features
        unchanged, in ``dtype``.
    self_loops : bool, default=True
        Include each node in its own neighbourhood; a self loop already in the
        graph keeps its weight (no second loop is added).
    normalization : {"rw", "sym", None}, default="rw"
        ``P = D^-1 (A + I)`` (mean), ``D^-1/2 (A + I) D^-1/2`` (GCN) or
        ``A + I`` (sum).
    dtype : {"float32", "float64"}, default="float32"
        Precision of the products and of the output.
    n_jobs : int or None, default=None
        Threads over column blocks of dense features (``None`` or ``-1``:
        every CPU available to the process); the output does not depend on it.

    Attributes
    ----------
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of str objects
        Names of the features, when the GraphData has ``feature_names``; the
        output keeps them.

    See Also
    --------
    skldp.propagation.GCNAggregation : One graph convolution.
    skldp.propagation.PPRPropagation : Personalized PageRank propagation.
    skldp.models.LPGNNClassifier : KProp of features and labels inside a GNN.

    Notes
    -----
    Directed graphs are supported, not symmetrised. NaN or infinite features
    raise a ``ValueError``, even for ``steps=0``. Sparse features stay sparse
    while the aggregate has at most 25 % non-zeros.

    References
    ----------
    .. [1] S. Sajadmanesh and D. Gatica-Perez, "Locally Private Graph Neural
       Networks", ACM CCS 2021, §4 (KProp).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skldp import GraphData
    >>> from skldp.propagation import KProp
    >>> A = sp.csr_array(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
    >>> G = GraphData(np.array([[3.0], [0.0], [6.0]]), A)
    >>> np.round(np.asarray(KProp(steps=1).fit_transform(G)).ravel(), 6)
    array([1.5, 3. , 3. ], dtype=float32)
    """

    def __init__(self, steps=1, self_loops=True, normalization="rw", *, dtype="float32",
                 n_jobs=None):
        self.steps = steps
        self.self_loops = self_loops
        self.normalization = normalization
        self.dtype = dtype
        self.n_jobs = n_jobs

    _parameter_constraints = {"steps": [Count(0)],
                              **_OPTION_CONSTRAINTS}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check the options and that ``X`` is a GraphData with a graph."""
        return super().fit(X, y)

    def _transform_graph(self, G):
        K = int(self.steps)
        dtype = DTYPES[self.dtype]
        if K == 0:   # the features in dtype (float64 ones came back as float64)
            X = G.features
            if X.dtype == dtype:
                return G
            return G.with_features(X.astype(dtype), feature_names=G.feature_names)
        P = graph_propagation_matrix(G, self.self_loops, self.normalization, dtype)
        Z = apply_propagation(P, G.features, K, self.n_jobs)  # K products, not a node loop
        check_finite_output(Z, "KProp")
        return G.with_features(Z, feature_names=G.feature_names)
