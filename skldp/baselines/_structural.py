"""Node features computed from the graph structure alone (no node feature, no budget)."""

import warnings
from numbers import Real

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, eigsh
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from ..base import GraphTransformerMixin
from ..utils._adjacency import row_sums, scale_csr
from ..utils._random import collection_seed, node_normals
from ..utils.validation import RANDOM_STATE_CONSTRAINT, Count, Interval

__all__ = ["StructuralFeatures"]

_DTYPES = {"float32": np.float32, "float64": np.float64}
_DENSE_EIGH_NODES = 500  # exact dense eigendecomposition below this many nodes
_EIGSH_TOL = 1e-4        # relative accuracy of the eigenpairs (features need no more)


def _read_only_degrees(A):
    deg = row_sums(A, np.float64)
    deg.flags.writeable = False   # shared by every fit on the graph
    return deg


class StructuralFeatures(GraphTransformerMixin, BaseEstimator):
    """Node features from the graph structure only: degree, spectral and propagation blocks.

    Replaces the node features of a :class:`~skldp.GraphData` by up to three
    blocks computed from the adjacency alone: the log-binned degree, the top
    eigenvectors of the regularised normalised adjacency, and a random
    projection of each node's personalized PageRank vector. It spends no
    privacy budget: with a head such as :class:`~skldp.models.MLPHead` it
    gives the feature-free baseline a private-feature pipeline has to beat.

    Read more in the :ref:`User Guide <structural_features>`.

    Parameters
    ----------
    degree_bins : int, default=16
        Number of log2 degree bins (0 leaves the degree block out).
    n_eigenvectors : int, default=32
        Number of spectral columns (0 leaves the block out). A graph of ``n``
        nodes has only ``n`` eigenvectors: on a smaller graph the columns past
        the ``n``-th are zeros, with a warning (the output width stays
        ``n_features_out_``, so fitted steps downstream still apply). On a
        graph without edges every spectral column is zeros, with a warning.
        Where eigenvalues repeat (a symmetric graph), their eigenvectors are
        one basis of many, which may change with the order of the nodes.
    n_components : int, default=256
        Width of the random projection (0 leaves the block out).
    n_steps : int, default=30
        Number of propagation steps of the sketch.
    alpha : float in (0, 1), default=0.05
        Teleport probability of the PPR weights ``alpha (1 - alpha)^l``.
    dtype : {"float32", "float64"}, default="float32"
        Precision of the computation and of the output.
    random_state : int, RandomState, Generator or None, default=None
        Seeds the projection and the ARPACK start vector. ``None`` draws new
        ones at every ``fit``.

    Attributes
    ----------
    n_features_in_ : int
        Number of node features of the input (ignored).
    n_features_out_ : int
        Number of output columns.
    projection_seed_ : int
        Seed of the projection (a public random matrix, not a privacy secret).

    See Also
    --------
    skldp.baselines.LabelPropagationClassifier : The other feature-free baseline.
    skldp.baselines.GraphFeatureUnion : Combine with a private-feature branch.

    References
    ----------
    .. [1] T. Qin and K. Rohe, "Regularized Spectral Clustering under the
       Degree-Corrected Stochastic Blockmodel", NIPS 2013.
    .. [2] H. Chen, S. F. Sultan, Y. Tian, M. Chen and S. Skiena, "Fast and
       Accurate Network Embeddings via Very Sparse Random Projection", CIKM 2019.
    .. [3] G. Jeh and J. Widom, "Scaling Personalized Web Search", WWW 2003.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skldp import GraphData
    >>> from skldp.baselines import StructuralFeatures
    >>> A = sp.csr_array(np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]]))
    >>> G = GraphData(np.zeros((3, 2)), A)
    >>> sf = StructuralFeatures(degree_bins=4, n_eigenvectors=2, n_components=8,
    ...                         random_state=0)
    >>> sf.fit_transform(G).shape
    (3, 15)
    """

    _graph_requirements = {"require_symmetric": True}
    _reads_features = False   # the graph only

    def __init__(self, *, degree_bins=16, n_eigenvectors=32, n_components=256, n_steps=30,
                 alpha=0.05, dtype="float32", random_state=None):
        self.degree_bins = degree_bins
        self.n_eigenvectors = n_eigenvectors
        self.n_components = n_components
        self.n_steps = n_steps
        self.alpha = alpha
        self.dtype = dtype
        self.random_state = random_state

    _parameter_constraints = {
        "degree_bins": [Count(0)],
        "n_eigenvectors": [Count(0)],
        "n_components": [Count(0)],
        "n_steps": [Count(1)],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "dtype": [StrOptions(set(_DTYPES))],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def _setup_fit(self):
        width = (self.degree_bins + 1 if self.degree_bins else 0) + self.n_eigenvectors \
            + self.n_components
        if width == 0:
            raise ValueError("StructuralFeatures needs at least one block: set degree_bins, "
                             "n_eigenvectors or n_components > 0.")
        self.n_features_out_ = width

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check the parameters and the graph, and draw the projection's seed.

        Parameters
        ----------
        X : GraphData
            Any view of a graph with a symmetric adjacency.
        y : ignored

        Returns
        -------
        self
        """
        self._setup_fit()
        super().fit(X, y)
        # A public random matrix: its own stream, never shared with a mechanism's seed.
        self.projection_seed_ = collection_seed(
            self.random_state, ("skldp.baselines", "StructuralFeatures"))
        return self

    def get_feature_names_out(self, input_features=None):
        """Names of the output columns (``degree_bin<i>``, ``log_degree``, ...)."""
        check_is_fitted(self, "n_features_out_")
        names = []
        if self.degree_bins:
            names += [f"degree_bin{i}" for i in range(self.degree_bins)] + ["log_degree"]
        names += [f"spectral{i}" for i in range(self.n_eigenvectors)]
        names += [f"projection{i}" for i in range(self.n_components)]
        return np.asarray(names, dtype=object)

    # ------------------------------------------------------------------ blocks
    def _transform_graph(self, G):
        dtype = _DTYPES[self.dtype]
        # the weighted degrees in float64, kept with the adjacency (every fit on the graph)
        deg = G.operator(("skldp.baselines.structural_degrees",), _read_only_degrees)
        blocks = []
        if self.degree_bins:
            blocks.append(self._degree_block(deg, dtype))
        if self.n_eigenvectors:
            A = sp.csr_matrix(G.adjacency, dtype=np.float64)   # ARPACK's products in float64
            blocks.append(self._spectral_block(A, deg, G.node_keys, dtype))
        if self.n_components:
            blocks.append(self._projection_block(G, deg, G.node_keys, dtype))
        Z = np.hstack(blocks) if len(blocks) > 1 else blocks[0]
        return G.with_features(Z, feature_names=self.get_feature_names_out())

    def _degree_block(self, deg, dtype):
        n, b = len(deg), self.degree_bins
        bins = np.minimum(np.floor(np.log2(1.0 + deg)).astype(np.int64), b - 1)
        D = np.zeros((n, b + 1), dtype=dtype)
        D[np.arange(n), bins] = 1.0
        D[:, b] = np.log1p(deg)
        return D

    def _spectral_block(self, A, deg, keys, dtype):
        n = A.shape[0]
        k = min(self.n_eigenvectors, n)
        if k < self.n_eigenvectors:
            # the width is part of the fitted contract (n_features_out_, the names): keep it,
            # but say that the extra columns carry nothing
            warnings.warn(
                f"StructuralFeatures: n_eigenvectors={self.n_eigenvectors} but a graph of "
                f"{n} nodes has only {n} eigenvectors, so the last "
                f"{self.n_eigenvectors - k} spectral columns are all zeros. Set "
                f"n_eigenvectors <= {n}.", UserWarning, stacklevel=2)
        out = np.zeros((n, self.n_eigenvectors), dtype=dtype)
        if n and not A.count_nonzero():
            # every basis is an eigenbasis of the zero operator: the one eigh returns would
            # depend on the node order, so the columns carry nothing
            warnings.warn(
                "StructuralFeatures: the graph has no edge, so its spectral columns are "
                "all zeros.", UserWarning, stacklevel=2)
            return out
        tau = float(deg.mean())
        dt = 1.0 / np.sqrt(deg + tau) if tau > 0 else np.where(deg > 0, 1.0, 0.0)

        def matmat(x):
            x = np.asarray(x, dtype=np.float64)
            u = dt[:, None] * x.reshape(n, -1)
            out = dt[:, None] * (A @ u + (tau / n) * u.sum(axis=0, keepdims=True))
            return out.reshape(x.shape)

        if n <= _DENSE_EIGH_NODES or k >= n - 1:
            M = matmat(np.eye(n))
            _, V = scipy.linalg.eigh((M + M.T) / 2, subset_by_index=[n - k, n - 1])
            V = V[:, ::-1]
        else:
            op = LinearOperator((n, n), matvec=matmat, matmat=matmat, dtype=np.float64)
            v0 = node_normals(self.projection_seed_, np.arange(n, dtype=np.uint64), 1,
                              stream=1)[:, 0]
            w, V = eigsh(op, k=k, which="LA", v0=v0, tol=_EIGSH_TOL)
            V = V[:, np.argsort(w)[::-1]]
        # Deterministic signs: the entry of largest magnitude of each column is positive;
        # among entries that tie for it (a symmetric graph), the one of the smallest node
        # key, so that the signs do not depend on the order of the nodes
        mag = np.abs(V)
        ties = mag >= mag.max(axis=0) * (1 - 1e-6)
        keys = np.asarray(keys)
        top = np.array([rows[np.argmin(keys[rows])]
                        for rows in map(np.flatnonzero, ties.T)], dtype=np.int64)
        V = V * np.sign(V[top, np.arange(V.shape[1])])
        out[:, :k] = V * np.sqrt(n)
        return out

    def _projection_block(self, G, deg, keys, dtype):
        w, a = self.n_components, float(self.alpha)

        def build(A):
            # (1 - alpha) D^-1 A (zero rows for isolated nodes): its stored values scaled
            # row by row in float64, rounded once to dtype (no diagonal matrix product)
            inv = np.zeros_like(deg)
            np.divide(1.0, deg, out=inv, where=deg > 0)
            return scale_csr(A, (1.0 - a) * inv, None, dtype)

        # H_l = (1 - alpha)^l P^l R; P built once per graph, alpha and dtype
        P = G.operator(("skldp.baselines.structural_projection", a, np.dtype(dtype).str), build)
        H = (node_normals(self.projection_seed_, keys, w, stream=0) / np.sqrt(w)).astype(dtype)
        Z = np.zeros_like(H)
        for _ in range(self.n_steps):
            H = P @ H
            Z += H          # the common factor alpha is removed by the row scaling
        norms = np.linalg.norm(Z, axis=1, keepdims=True)
        return Z / np.where(norms > 0, norms, 1.0)
