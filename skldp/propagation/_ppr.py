"""Personalized PageRank feature propagation of PrivGE (paper 002, eq. (12))."""

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning

from ..base import GraphTransformerMixin

__all__ = ["PPRPropagation"]


def resolve_device(device):
    # imported lazily: skldp.models imports skldp.propagation
    from ..models._torch_utils import resolve_device as _resolve
    return _resolve(device)

_BLOCK_ELEMENTS = 1 << 23  # dense entries per column block (64 MiB in float64)
_BACKENDS = ("auto", "scipy", "torch")
_DTYPES = {"float32": np.float32, "float64": np.float64}


def ppr_transition(A, r=0.5, add_self_loops=False, dtype=np.float64):
    """The propagation matrix ``T = D^(r-1) A D^(-r)`` of eq. (12) as CSR.

    ``D`` holds the (weighted) row sums of ``A``. A node without any edge
    gets a self loop (degree 1) so that the normalisation is defined; its
    propagated features are then its own features. With ``add_self_loops``
    every node gets one (``A + I``), as in GCN/APPNP.
    """
    A = sp.csr_matrix(A, dtype=np.float64)
    n = A.shape[0]
    if add_self_loops:
        A = A + sp.eye(n, format="csr")
    deg = np.asarray(A.sum(axis=1)).ravel()
    isolated = deg == 0
    if isolated.any():
        A = A + sp.diags(isolated.astype(np.float64), format="csr")
        deg = np.where(isolated, 1.0, deg)
    T = sp.diags(deg ** (r - 1.0)) @ A @ sp.diags(deg ** (-r))
    T = sp.csr_matrix(T, dtype=dtype)
    T.sort_indices()
    return T


class PPRPropagation(GraphTransformerMixin, BaseEstimator):
    """Personalized PageRank propagation of node features (PrivGE, eq. (12)).

    Computes, for all nodes of the graph,

    ``Z = sum_{l >= 0} alpha (1 - alpha)^l T^l X``,  ``T = D^(r-1) A D^(-r)``,

    i.e. the solution of ``(I - (1 - alpha) T) Z = alpha X``, by power
    iteration on blocks of feature columns (the synchronous, vectorised form
    of the backward push of Algorithm 3). The result is memoised on the graph,
    so a pipeline propagates once for ``fit`` and ``predict``. Propagation is
    post-processing of the perturbed features and spends no privacy budget.

    Parameters
    ----------
    alpha : float, default=0.1
        Teleport (decay) factor in (0, 1]; larger values keep more of each
        node's own features. 0.1 is the default of the authors' released code
        (the paper tunes it per dataset, e.g. 0.1 on Cora, 0.05 on Facebook).
    r : float, default=0.5
        Convolution coefficient in [0, 1]: 0 gives the random-walk matrix
        ``D^-1 A``, 0.5 the symmetric ``D^-1/2 A D^-1/2``, 1 gives ``A D^-1``.
        0.5 is the default of the authors' released code.
    tol : float, default=1e-6
        Stop when the estimated relative truncation error of a column block,
        ``||H_l|| (1 - alpha) / alpha / ||Z_l||`` (Frobenius norms of the
        last added term ``H_l`` and of the partial sum), is at most ``tol``.
    max_iter : int, default=1000
        Maximum number of propagation steps; a :class:`ConvergenceWarning` is
        raised if the tolerance is not reached.
    add_self_loops : bool, default=False
        Use ``A + I`` instead of ``A``. The paper's eq. (12) and the authors'
        code use ``A`` without self loops. Nodes without edges always get a
        self loop so that ``D^-r`` is defined: their output equals their input.
    dtype : {"float32", "float64"}, default="float32"
        Precision of the computation and of the output (float32 halves the
        memory of the dense n x d output).
    backend : {"auto", "scipy", "torch"}, default="auto"
        ``"scipy"``: scipy sparse products on the CPU; ``"torch"``: torch
        sparse CSR products on ``device``; ``"auto"``: torch when ``device``
        resolves to CUDA, scipy otherwise.
    device : str, default="auto"
        Torch device of the torch backend (``"auto"``: CUDA when available).

    Attributes
    ----------
    n_features_in_ : int
        Number of features.

    Notes
    -----
    Input features may be dense or sparse (e.g. the CSR reports of
    :class:`~skldp.mechanisms.HDSMechanism`); the output is dense. Degrees
    are the row sums of the adjacency (weighted degrees for weighted graphs;
    out-degrees for a directed graph, for which the series still converges
    since ``T`` is similar to the row-stochastic ``D^-1 A``).

    References
    ----------
    Z. Li, R.-H. Li, M. Liao, F. Jin, G. Wang. Privacy-Preserving Graph
    Embedding based on Local Differential Privacy. CIKM 2024
    (``papers/002_39ad2ffba99fc09f.txt``), eqs. (2) and (12), Algorithm 3.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skldp import GraphData
    >>> from skldp.propagation import PPRPropagation
    >>> A = sp.csr_array(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
    >>> G = GraphData(np.eye(3), A)
    >>> Z = PPRPropagation(alpha=0.5).fit_transform(G)
    >>> np.asarray(Z).shape
    (3, 3)
    """

    def __init__(self, alpha=0.1, r=0.5, *, tol=1e-6, max_iter=1000, add_self_loops=False,
                 dtype="float32", backend="auto", device="auto"):
        self.alpha = alpha
        self.r = r
        self.tol = tol
        self.max_iter = max_iter
        self.add_self_loops = add_self_loops
        self.dtype = dtype
        self.backend = backend
        self.device = device

    # ------------------------------------------------------------ parameters
    def _validate_params(self):
        def real(name, v):
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or np.isnan(v):
                raise TypeError(f"{name} must be a real number, got {v!r}.")
            return float(v)

        if not 0 < real("alpha", self.alpha) <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {self.alpha}.")
        if not 0 <= real("r", self.r) <= 1:
            raise ValueError(f"r must be in [0, 1], got {self.r}.")
        if not real("tol", self.tol) > 0:
            raise ValueError(f"tol must be > 0, got {self.tol}.")
        if (isinstance(self.max_iter, bool) or not isinstance(self.max_iter, numbers.Integral)
                or self.max_iter < 1):
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter!r}.")
        if self.dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {self.dtype!r}.")
        if self.backend not in _BACKENDS:
            raise ValueError(f"backend must be one of {_BACKENDS}, got {self.backend!r}.")
        device = resolve_device(self.device)
        if self.backend == "scipy" and device.type != "cpu" and self.device != "auto":
            raise ValueError(f"backend='scipy' runs on the CPU; device={self.device!r} needs "
                             "backend='torch' or 'auto'.")

    def fit(self, X, y=None):
        """Check the parameters and that ``X`` is a GraphData with a graph.

        Parameters
        ----------
        X : GraphData
            Any view of the graph (propagation learns nothing from it).
        y : ignored

        Returns
        -------
        self
        """
        self._validate_params()
        return super().fit(X, y)

    def _use_torch(self):
        if self.backend == "torch":
            return True
        if self.backend == "scipy":
            return False
        return resolve_device(self.device).type == "cuda"

    # ----------------------------------------------------------- propagation
    def _transform_graph(self, G):
        self._validate_params()
        dtype = _DTYPES[self.dtype]
        T = ppr_transition(G.adjacency, float(self.r), bool(self.add_self_loops), dtype)
        X = G.features
        if sp.issparse(X):
            X = sp.csc_matrix(X)  # cheap column blocks
        n, d = X.shape
        Z = np.empty((n, d), dtype=dtype)
        block = max(1, _BLOCK_ELEMENTS // max(n, 1))
        run = self._run_torch if self._use_torch() else self._run_scipy
        state = {"not_converged": 0}
        run(T, X, Z, block, dtype, state)
        if state["not_converged"]:
            warnings.warn(f"PPRPropagation did not reach tol={self.tol} within "
                          f"max_iter={self.max_iter} steps in {state['not_converged']} "
                          "column block(s); increase max_iter or tol.", ConvergenceWarning)
        return G.with_features(Z, feature_names=G.feature_names)

    def _stop(self, h_norm, z_norm):
        a = float(self.alpha)
        return h_norm * (1.0 - a) <= float(self.tol) * a * z_norm

    def _run_scipy(self, T, X, Z, block, dtype, state):
        a = float(self.alpha)
        for s in range(0, X.shape[1], block):
            Xb = X[:, s:s + block]
            H = np.asarray(Xb.toarray() if sp.issparse(Xb) else Xb, dtype=dtype) * dtype(a)
            acc = H.copy()
            converged = a == 1.0 or not H.any()
            for _ in range(self.max_iter if not converged else 0):
                H = T @ H
                H *= dtype(1.0 - a)
                acc += H
                if self._stop(np.linalg.norm(H), np.linalg.norm(acc)):
                    converged = True
                    break
            state["not_converged"] += not converged
            Z[:, s:s + block] = acc

    def _run_torch(self, T, X, Z, block, dtype, state):
        import torch
        device = resolve_device(self.device)
        tdtype = torch.float32 if dtype == np.float32 else torch.float64
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            Tt = torch.sparse_csr_tensor(torch.from_numpy(T.indptr.astype(np.int64)),
                                         torch.from_numpy(T.indices.astype(np.int64)),
                                         torch.from_numpy(T.data.astype(dtype)),
                                         size=T.shape, dtype=tdtype,
                                         check_invariants=False).to(device)
        a = float(self.alpha)
        if device.type == "cuda":  # bigger blocks on an accelerator
            block = max(block, (1 << 26) // max(T.shape[0], 1))
        with torch.no_grad():
            for s in range(0, X.shape[1], block):
                Xb = X[:, s:s + block]
                Xb = np.asarray(Xb.toarray() if sp.issparse(Xb) else Xb, dtype=dtype)
                H = torch.from_numpy(Xb).to(device) * a
                acc = H.clone()
                converged = a == 1.0 or not bool(H.any())
                for _ in range(self.max_iter if not converged else 0):
                    H = (Tt @ H) * (1.0 - a)
                    acc += H
                    if self._stop(float(torch.linalg.norm(H)), float(torch.linalg.norm(acc))):
                        converged = True
                        break
                state["not_converged"] += not converged
                Z[:, s:s + block] = acc.cpu().numpy()
