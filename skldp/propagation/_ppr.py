"""Personalized PageRank feature propagation of PrivGE [Li et al., CIKM 2024, Eq. 12]."""

import contextlib
import numbers
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import StrOptions

from ..base import GraphTransformerMixin
from ..utils._adjacency import _row_chunks, row_sums, scale_csr, with_remaining_self_loops
from ..utils._arrays import check_finite_output
from ..utils._blocks import aligned_empty, column_block, put_column_block
from ..utils._threads import torch_threads
from ..utils.validation import Count, Interval
from ._spmm import _BAG_COLUMNS, N_JOBS_CONSTRAINT, _product
from ._spmm import n_threads as _n_threads

__all__ = ["PPRPropagation"]


def resolve_device(device):
    # imported lazily: the scipy backend needs no torch
    from .._torch import resolve_device as _resolve
    return _resolve(device)


def read_tensor(a):
    # imported lazily, as above
    from .._torch._sparse import read_tensor as _read
    return _read(a)


_BLOCK_ELEMENTS = 1 << 23  # dense entries per column block (64 MiB in float64)
# CPU (scipy) path: blocks of at most this many columns (wider blocks gain nothing once
# the rows are in RCM order) and of at most _CPU_BLOCK_ELEMENTS entries.
_CPU_BLOCK_COLUMNS = 128
_CPU_BLOCK_ELEMENTS = 1 << 24
# Rows per chunk of the fused CG vector updates: the chunk's slices of the four
# block arrays stay in cache between the updates that read them.
_CHUNK_ELEMENTS = 1 << 16
# The float32 Chebyshev solve adds a block of features with at most 1/this of its
# entries non-zero through them (index_add_, about as fast as a dense pass at 1/10).
_SPARSE_ADD_FRACTION = 16
_BACKENDS = ("auto", "scipy", "torch")
_SOLVERS = ("auto", "chebyshev", "cg", "power")
_DTYPES = {"float32": np.float32, "float64": np.float64}


class PPRPropagation(GraphTransformerMixin, BaseEstimator):
    """Personalized PageRank propagation of node features (PrivGE).

    Computes, for all nodes of the graph, the personalized PageRank sum
    ``Z = sum_{l >= 0} alpha (1 - alpha)^l T^l X`` with
    ``T = D^(r-1) A D^(-r)``, the solution of
    ``(I - (1 - alpha) T) Z = alpha X``. The result is memoised on the graph, so
    a pipeline propagates once for ``fit`` and ``predict``. Propagation is
    post-processing of the perturbed features and spends no privacy budget.

    Read more in the :ref:`User Guide <ppr_propagation>`.

    Parameters
    ----------
    alpha : float, default=0.1
        Teleport (decay) factor in (0, 1]; larger values keep more of each
        node's own features.
    r : float, default=0.5
        Convolution coefficient in [0, 1]: 0 gives ``D^-1 A``, 0.5 the
        symmetric ``D^-1/2 A D^-1/2``, 1 gives ``A D^-1``.
    tol : float, default=1e-3
        Relative accuracy of the solution; each solver's stopping rule is in
        the User Guide.
    max_iter : int, default=1000
        Maximum number of sparse products per column block; a
        :class:`~sklearn.exceptions.ConvergenceWarning` is raised if the tolerance is not reached.
    solver : {"auto", "chebyshev", "cg", "power"}, default="auto"
        ``"auto"``: the Chebyshev series when the adjacency is symmetric,
        power iteration otherwise.
    add_self_loops : bool, default=False
        Use ``A + I`` instead of ``A`` (a self loop already in the graph keeps
        its weight). Nodes without edges always get a
        self loop: their output is their input, to the solver's ``tol``.
    dtype : {"float32", "float64"}, default="float32"
        Precision of the computation and of the output.
    backend : {"auto", "scipy", "torch"}, default="auto"
        ``"scipy"``: the CPU path (scipy's CSR arrays; see the User Guide for
        its kernels); ``"torch"``: torch sparse CSR products on ``device``;
        ``"auto"``: torch when ``device`` resolves to CUDA, scipy otherwise.
    device : str, default="auto"
        Torch device of the torch backend (``"auto"``: CUDA when available).
    n_jobs : int or None, default=None
        Threads of the scipy backend over column blocks (``None`` or ``-1``:
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
    skldp.propagation.KProp : A fixed number of aggregation steps (LPGNN).
    skldp.propagation.GCNAggregation : One graph convolution.
    skldp.mechanisms.HDSMechanism : The feature mechanism of PrivGE.
    skldp.models.MLPHead : The classification head of PrivGE.

    Notes
    -----
    Input features may be dense or sparse; the output is dense. On CUDA it
    stays on the card for the next step there, its host copy made on first
    read (:ref:`ppr_propagation`). Directed graphs are supported (power
    iteration), not symmetrised. NaN or infinite features anywhere in the
    graph raise a ``ValueError``.

    References
    ----------
    .. [1] Z. Li, R.-H. Li, M. Liao, F. Jin and G. Wang, "Privacy-Preserving
       Graph Embedding based on Local Differential Privacy", CIKM 2024,
       eqs. (2) and (12), Algorithm 3.

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

    _parameter_constraints = {
        "alpha": [Interval(numbers.Real, 0, 1, closed="right")],
        "r": [Interval(numbers.Real, 0, 1, closed="both")],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Count(1)],
        "solver": [StrOptions(set(_SOLVERS))],
        "add_self_loops": ["boolean"],
        "dtype": [StrOptions(set(_DTYPES))],
        "backend": [StrOptions(set(_BACKENDS))],
        "device": "no_validation",   # resolve_device checks it (torch is imported lazily)
        "n_jobs": N_JOBS_CONSTRAINT,
    }

    def __init__(self, alpha=0.1, r=0.5, *, tol=1e-3, max_iter=1000, solver="auto",
                 add_self_loops=False, dtype="float32", backend="auto", device="auto",
                 n_jobs=None):
        self.alpha = alpha
        self.r = r
        self.tol = tol
        self.max_iter = max_iter
        self.solver = solver
        self.add_self_loops = add_self_loops
        self.dtype = dtype
        self.backend = backend
        self.device = device
        self.n_jobs = n_jobs

    # ------------------------------------------------------------ parameters
    def _setup_fit(self):
        device = resolve_device(self.device)
        # device None means "auto" too (resolve_device): scipy then simply runs on the CPU
        if self.backend == "scipy" and device.type != "cpu" and self.device not in ("auto", None):
            raise ValueError(f"backend='scipy' runs on the CPU; device={self.device!r} needs "
                             "backend='torch' or 'auto'.")

    @_fit_context(prefer_skip_nested_validation=True)
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
        self._setup_fit()
        return super().fit(X, y)

    def _use_torch(self):
        if self.backend == "torch":
            return True
        if self.backend == "scipy":
            return False
        return resolve_device(self.device).type == "cuda"

    # ----------------------------------------------------------- propagation
    def _transform_graph(self, G):
        dtype = _DTYPES[self.dtype]
        solver = self.solver
        if solver == "auto":
            solver = "chebyshev" if G.is_symmetric() else "power"
        elif solver in ("cg", "chebyshev") and not G.is_symmetric():
            raise ValueError(f"solver={solver!r} needs a symmetric adjacency, "
                             f"{G._why_not_symmetric()} Use solver='power' for a directed "
                             "graph.")
        X = G.features
        if not self._use_torch():
            Z = check_finite_output(self._transform_cpu(G, X, dtype, solver), "PPRPropagation")
            return G.with_features(Z, feature_names=G.feature_names)
        Z = self._transform_torch(G, X, dtype, solver, resolve_device(self.device))
        check_finite_output(Z, "PPRPropagation")   # (on a device: one number comes back)
        if not isinstance(Z, np.ndarray):   # kept on the device for the next step there
            return G._with_features_on_device(Z, feature_names=G.feature_names)
        return G.with_features(Z, feature_names=G.feature_names)

    def _transform_torch(self, G, X, dtype, solver, device):
        """torch path: the operator on ``device`` once per graph, column blocks there.

        Each block of the features goes to the device once (sparse features as
        their non-zeros, densified there), is scaled, solved and scaled there.
        On CUDA the output stays there (a tensor: the next step on the card reads
        it in place, see ``_TorchOps.keeps_output``); otherwise each block comes back
        once.
        Nothing else crosses between host and device.
        """
        loops, r = bool(self.add_self_loops), float(self.r)
        sym = solver != "power"
        # r is in the key for both solvers: the symmetric ones keep D^(1/2-r), D^(r-1/2)
        key = ("ppr_torch", sym, r, loops, np.dtype(dtype).str, str(device))

        unit = device.type in _NORMALISE_ON and not loops and G._has_unit_weights()

        weighted = not sym and not _contracts(G, r)

        def build(A):
            ops = None
            if device.type in _NORMALISE_ON and not loops:   # normalised on the device
                ops = _TorchOps.normalised_on_device(A, sym, r, dtype, device, unit)
            if ops is None:
                M, left, right = _ppr_operator(A, sym, r, loops, dtype)
                ops = _TorchOps(M, dtype, device, left, right)
            ops.power_weights = None
            if weighted:   # D^-r on the device, and ||D^r 1||
                w, vnorm = _power_weights(A, r, loops)
                ops.power_weights = (ops.torch.from_numpy(w).to(device=device,
                                                               dtype=ops.tdtype)[:, None],
                                     vnorm)
            return ops

        ops = G.operator(key, build)
        if sp.issparse(X):
            X = _DeviceEntries(X, device)   # sent once; blocks of columns made there
        n, d = X.shape
        keep = ops.keeps_output(n, d)
        block = ops.block_columns(n, d, solver)
        if keep and block < d:   # (one block is its own output: nothing to reserve)
            block = ops.block_columns(n, d, solver, reserved=n * d * ops.dtype.itemsize)
        if not keep:
            Z = np.empty((n, d), dtype=dtype)
        elif block < d or d == 0:
            Z = ops.torch.empty((n, d), dtype=ops.tdtype, device=device)
        run = {"cg": self._cg, "chebyshev": self._chebyshev, "power": self._power}[solver]
        not_converged = products = 0
        staging = None
        for s in range(0, d, block):
            Fb = ops.put_block(X[:, s:s + block])     # D^(1/2 - r) X on the device
            Wb, ok, its = run(ops, Fb)
            del Fb
            products += its
            not_converged += not ok
            if keep:   # D^(r - 1/2) W, stays on the device
                if block >= d:
                    Z = ops.scale_into(Wb)
                else:
                    ops.scale_into(Wb, Z[:, s:s + block])
                continue
            if s == 0 and device.type in _TOUCH_ON:
                # while the card solves (Chebyshev queues its products without a wait),
                # the host maps the output's pages: otherwise the copy back does, at
                # half the speed or less (a fresh array's first touch). A block of
                # columns is not contiguous in the output: it comes back through one
                # contiguous buffer, mapped once (else torch maps a new one per block)
                _touch_pages(Z)
                if block < d:
                    staging = np.empty(n * block, dtype=dtype)
                    _touch_pages(staging)
            ops.get_block(Wb, Z[:, s:s + block], staging)   # D^(r - 1/2) W to the host
        self._run_info = dict(products=products, block_columns=block, n_jobs=1, order=None,
                              solver=solver)
        self._warn_not_converged(not_converged)
        return Z

    def _warn_not_converged(self, not_converged):
        if not_converged:
            warnings.warn(f"PPRPropagation did not reach tol={self.tol} within "
                          f"max_iter={self.max_iter} steps in {not_converged} column "
                          "block(s); increase max_iter or tol.", ConvergenceWarning,
                          stacklevel=3)

    def _transform_cpu(self, G, X, dtype, solver):
        """scipy/numpy path: rows in RCM order, column blocks solved in parallel threads.

        Reverse Cuthill-McKee ordering puts the neighbours of a row close to it,
        so a sparse product gathers rows of the dense block that are mostly in
        cache (about twice as fast on Facebook); the output is put back in the
        original order. The matrix is pre-scaled so that a product and the CG
        update ``Q = P - (1 - alpha) S P`` are one pass (the Chebyshev solver
        builds its own operators from ``S``, see ``_chebyshev_runner``).
        """
        n, d = X.shape
        a, tol, max_iter = float(self.alpha), float(self.tol), int(self.max_iter)
        sym = solver != "power"
        # r is in the key for both solvers: the symmetric ones keep D^(1/2-r), D^(r-1/2)
        key = ("ppr_cpu", sym, float(self.r), bool(self.add_self_loops), np.dtype(dtype).str)

        weighted = not sym and not _contracts(G, float(self.r))

        def build(A):   # the ordered operator only: the plain one is not kept
            r, loops = float(self.r), bool(self.add_self_loops)
            ordered = _ordered_operator(*_ppr_operator(A, sym, r, loops, dtype), sym)
            if not weighted:
                return ordered + (None,)
            w, vnorm = _power_weights(A, r, loops)
            return ordered + ((w[ordered[1]], vnorm),)   # (rows in the solver's order)

        Mp, perm, sl, sr, runner, weights = G.operator(key, build)   # once per graph
        if solver != "chebyshev":
            # -(1 - alpha) T for CG, (1 - alpha) T for the power series: one pass over
            # the values (alpha differs between calls)
            factor = a - 1.0 if solver == "cg" else 1.0 - a
            Mp = sp.csr_matrix((Mp.data * factor, Mp.indices, Mp.indptr), shape=Mp.shape)
            Mp.has_sorted_indices = True
        if sp.issparse(X):
            X = sp.csc_matrix(sp.csr_matrix(X)[perm])
        # float32 Chebyshev and power products run on torch's embedding-bag kernel
        # (fastest on narrow blocks), one torch thread in each of the blocks' threads
        bags = solver != "cg" and dtype == np.float32
        # (the power series keeps the blocks of float64: its stopping rule is per block)
        cols = _BAG_COLUMNS if bags and solver == "chebyshev" else _CPU_BLOCK_COLUMNS
        width = max(1, min(cols, _CPU_BLOCK_ELEMENTS // max(n, 1)))
        jobs = _n_threads(self.n_jobs)
        if d > 1 and solver == "chebyshev" and not bags:   # at least one block per thread
            # (only where a column's output does not depend on the other columns of its
            # block: the power series and CG stop per block, and float32's torch passes
            # round a block's entries by their place in it; so the output does not depend
            # on n_jobs)
            width = max(1, min(width, -(-d // jobs)))
        starts = range(0, d, width)
        Z = aligned_empty((n, d), dtype)   # (whole cache lines per row of a block)
        if solver == "chebyshev":
            run = runner()
        else:
            run = _cg_cpu if solver == "cg" else _power_cpu

        scale = (a * sl)[:, None]
        # rows are put back in order within a block (in cache), so that the output and
        # the features are read or written row after row, not at random over them
        inv = np.empty_like(perm)
        inv[perm] = np.arange(n)
        # canonical sparse features: only their stored entries are scaled and written
        entries = sp.issparse(X) and X.has_canonical_format

        if bags:   # (torch's kernel runs the products)
            import torch
            Zt, inv_t = torch.from_numpy(Z), torch.from_numpy(inv)
            sr_t = torch.from_numpy(sr[inv][:, None])   # in the output's row order
            local = threading.local()

            def put_bags(s, Wb):
                # rows back in order into a buffer of this thread's, then scaled straight
                # into the output (the products of scaling first): 1.3x faster than
                # numpy's gather into a fresh block and its copy (Facebook, 32 columns)
                buf = getattr(local, "buf", None)
                if buf is None or buf.shape != Wb.shape:
                    buf = local.buf = torch.empty(Wb.shape, dtype=Zt.dtype)
                torch.index_select(torch.from_numpy(Wb), 0, inv_t, out=buf)
                torch.mul(buf, sr_t, out=Zt[:, s:s + Wb.shape[1]])

        def one_block(s):
            # alpha D^(1/2-r) X in float64, rounded once to dtype, C order: one pass
            if entries:   # (the block's entries read from X's arrays: no scipy slice)
                ptr = X.indptr[s:s + width + 1]
                rows, values = X.indices[ptr[0]:ptr[-1]], X.data[ptr[0]:ptr[-1]]
                F = aligned_empty((n, len(ptr) - 1), dtype)
                F.fill(0)
                cols = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
                F[rows, cols] = values.astype(np.float64) * scale[rows, 0]
            else:
                Xb = X[:, s:s + width].toarray() if sp.issparse(X) else \
                    column_block(column_block(X, s, width), 0, width, perm)
                F = aligned_empty(Xb.shape, dtype)
                # float32 features are cast to float64 chunk by chunk inside the
                # product (no float64 copy of the block)
                np.multiply(Xb, scale, out=F, casting="same_kind")
            if solver == "power":
                Wb, ok, its = run(Mp, F, a, tol, max_iter, weights)
            else:
                Wb, ok, its = run(Mp, F, a, tol, max_iter)
            if bags:
                put_bags(s, Wb)
            else:
                Wb *= sr[:, None]
                put_column_block(Z, s, column_block(Wb, 0, Wb.shape[1], inv))
            return ok, its

        with torch_threads(1) if bags else contextlib.nullcontext():
            if jobs > 1 and len(starts) > 1:
                jobs = min(jobs, len(starts))
                with ThreadPoolExecutor(jobs) as pool:
                    res = list(pool.map(one_block, starts))
            else:
                jobs = 1
                res = [one_block(s) for s in starts]
        self._run_info = dict(products=sum(r[1] for r in res), block_columns=width,
                              n_jobs=jobs, order=perm, solver=solver)
        self._warn_not_converged(sum(not r[0] for r in res))
        return Z

    def _power(self, ops, X):
        """Z = sum_l alpha (1-alpha)^l T^l X, truncated (eq. (12))."""
        a, tol = float(self.alpha), float(self.tol)
        H = X * a
        Z = H.clone() if hasattr(H, "clone") else H.copy()
        if a == 1.0 or ops.norm(H) == 0:
            return Z, True, 0
        weights = getattr(ops, "power_weights", None)
        for it in range(self.max_iter):
            H = ops.spmm(H)
            H *= 1.0 - a
            Z += H
            # the remainder is at most (1 - a) / a times ||H|| (r = 1/2, undirected:
            # ||T|| <= 1) or the bound of _power_bound; the norms come back in one read
            # (each read waits for the device)
            if weights is None:
                b, z = ops.norms(H, Z)
            else:
                w, vnorm = weights
                m, z = ops.norms(ops.torch.amax(H.abs().mul_(w), dim=0), Z)
                b = vnorm * m
            if b * (1.0 - a) <= tol * a * z:
                return Z, True, it + 1
        return Z, False, self.max_iter

    def _chebyshev(self, ops, F):
        """Chebyshev series of ``(I - (1-alpha) S)^-1 alpha F`` (see Notes).

        ``F`` (a block of the caller's, used up here) holds ``alpha F`` in place;
        each step is one fused product ``2 S T_j - T_(j-1)`` and one in-place
        update of the sum: four blocks alive, no temporaries.
        """
        a = float(self.alpha)
        F = F.mul_(a)
        gamma, ok = chebyshev_coefficients(a, float(self.tol), int(self.max_iter))
        W = F * float(gamma[0])
        if len(gamma) == 1:
            return W, ok, 0
        prev, cur = F, ops.spmm(F)
        del F
        for j in range(1, len(gamma)):
            if j > 1:
                prev, cur = cur, ops.spmm_twice_minus(cur, prev)
            W.add_(cur, alpha=float(gamma[j]))
        return W, ok, len(gamma) - 1

    def _cg(self, ops, F):
        """Solve (I - (1-alpha) S) W = alpha F column by column with conjugate gradients."""
        a, tol = float(self.alpha), float(self.tol)
        F = F * a
        W = F * 0
        R = F.clone() if hasattr(F, "clone") else F.copy()
        if a == 1.0:
            return F, True, 0
        P = R.clone() if hasattr(R, "clone") else R.copy()
        rs = ops.coldot(R, R)
        # eigenvalues of I - (1-a) S lie in [a, 2-a]: a residual below
        # tol * a / (2 - a) * ||F_j|| bounds the relative error of column j by tol.
        target = (tol * a / (2.0 - a)) ** 2 * rs
        for it in range(self.max_iter + 1):
            if bool((rs <= target).all()):
                return W, True, it
            MP = P - ops.spmm(P) * (1.0 - a)
            step = ops.safe_div(rs, ops.coldot(P, MP))
            W += P * step[None, :]
            R -= MP * step[None, :]
            rs_new = ops.coldot(R, R)
            P = R + P * ops.safe_div(rs_new, rs)[None, :]
            rs = rs_new
        return W, False, self.max_iter


def _spmm_acc(Mneg, P, Q):
    """``Q += Mneg @ P`` in place (scipy's CSR kernel accumulates into its output)."""
    _sparsetools_matvecs(Mneg.shape[0], Mneg.shape[1], P.shape[1], Mneg.indptr, Mneg.indices,
                         Mneg.data, P, Q)


def _coldot(A, B):
    return np.einsum("ij,ij->j", A, B)


def _cg_cpu(Mneg, F, a, tol, max_iter):
    """Conjugate gradients for ``(I - (1-a) S) W = F`` (``Mneg = -(1-a) S``), per column.

    Same iteration as :meth:`PPRPropagation._cg`; the vector updates after each
    product run over row chunks so that each chunk is read from memory once, and
    the update of the search direction ``P`` also writes it into ``Q``, where the
    next product accumulates (no separate copy pass).
    Returns the solution, whether every column converged and the products done.
    """
    n, w = F.shape
    if a == 1.0:
        return F, True, 0
    W = np.zeros_like(F)
    R = F
    P = R.copy()
    Q = R.copy()     # holds P before each product
    rs = _coldot(R, R)
    target = (tol * a / (2.0 - a)) ** 2 * rs
    chunk = max(1, _CHUNK_ELEMENTS // max(w, 1))
    tmp = np.empty((min(chunk, n), w), dtype=F.dtype)
    for it in range(max_iter + 1):
        if bool((rs <= target).all()):
            return W, True, it
        _spmm_acc(Mneg, P, Q)                       # Q = P + Mneg P = (I - (1-a) S) P
        pq = _coldot(P, Q)
        step = (rs / np.where(pq > 0, pq, 1.0)).astype(F.dtype)
        rs_new = np.zeros_like(rs)
        for s in range(0, n, chunk):               # W += step P; R -= step Q; |R|^2
            t = tmp[:min(chunk, n - s)]
            np.multiply(P[s:s + chunk], step, out=t)
            W[s:s + chunk] += t
            np.multiply(Q[s:s + chunk], step, out=t)
            Rc = R[s:s + chunk]
            Rc -= t
            rs_new += _coldot(Rc, Rc)
        beta = (rs_new / np.where(rs > 0, rs, 1.0)).astype(F.dtype)
        for s in range(0, n, chunk):               # P = R + beta P; Q = P
            Pc = P[s:s + chunk]
            Pc *= beta
            Pc += R[s:s + chunk]
            Q[s:s + chunk] = Pc
        rs = rs_new
    return W, False, max_iter


def chebyshev_coefficients(alpha, tol, max_iter):
    """Coefficients of the Chebyshev series of ``1 / (1 - (1 - alpha) x)`` on [-1, 1].

    Returns the first ``K + 1`` coefficients, for the smallest ``K`` whose
    relative truncation error is at most ``tol`` everywhere on [-1, 1] (see
    :class:`PPRPropagation`, Notes), and whether that ``K`` is at most
    ``max_iter`` (otherwise the series is cut after ``max_iter`` terms).
    """
    if alpha == 1.0:
        return np.ones(1), True
    b = 1.0 - alpha
    s = np.sqrt(alpha * (2.0 - alpha))
    q = b / (1.0 + s)
    # max over x in [-1, 1] of (1 - b x) / |1 - q e^(i acos x)|: the ends or one critical point
    xs = [-1.0, 1.0]
    x_crit = (b + b * q * q - q) / (b * q)
    if -1.0 <= x_crit <= 1.0:
        xs.append(x_crit)
    g = max((1.0 - b * x) / np.sqrt(1.0 + q * q - 2.0 * q * x) for x in xs)
    # relative error after K terms: (2/s) q^(K+1) g <= tol
    K = max(0, int(np.ceil(np.log(tol * s / (2.0 * g)) / np.log(q))) - 1)
    ok = K <= max_iter
    K = min(K, max_iter)
    gamma = (2.0 / s) * q ** np.arange(K + 1, dtype=np.float64)
    gamma[0] = 1.0 / s
    return gamma, ok


def _chebyshev_runner(S):
    """The CPU Chebyshev solver for the operator ``S`` (CSR, rows in solver order).

    Clenshaw's recurrence ``b_k = gamma_k F + 2 S b_(k+1) - b_(k+2)`` (``k = K..1``),
    ``W = gamma_0 F + S b_1 - b_2``.

    float64 (scipy's kernel): each step is a single sparse product: the
    operator is ``[2 S, gamma_k I]`` applied to ``[b_(k+1); F]`` (so adding
    ``gamma_k F`` happens inside the product, one more entry per row), and it
    accumulates into the buffer holding ``b_(k+2)`` (scipy's CSR kernel adds into
    its output). The buffers hold ``b_k`` up to a sign
    ``c_k = -c_(k+2)``, so the ``S`` part alternates between ``2 S`` and ``-2 S``
    and no pass negates a buffer.
    The two buffers and ``F`` lie in one array ``[B_0; F; B_1]``: the product reads
    ``[B_0; F]`` (operator ``[S-part, diag]``) or ``[F; B_1]`` (``[diag, S-part]``).

    float32 (torch's embedding-bag kernel, about three times as fast on blocks of 32
    columns): the kernel cannot add into a buffer, so each step is the bare product
    ``2 S b_(k+1)`` (the operator's own arrays, no stacked blocks or diagonal to set:
    Facebook, 1.3-1.4x faster than the stacked form) and two in-place passes over
    its fresh output (one when ``F`` is sparse: it is added through its non-zeros).
    """
    n = S.shape[0]
    stacked = None   # float64's stacked arrays, made at its first solve
    # (layout, sign, dtype) -> the values of [sign 2 S, 0 I]: made once per graph, copied
    # by each block (a copy is ~10x cheaper than filling the S entries through a mask)
    base, base_lock = {}, threading.Lock()
    bags = None      # float32: torch's arrays of S and 2 S, made at its first solve

    def values(src, sign, dtype):
        s_pos = stacked["s_pos"]
        with base_lock:
            v = base.get((src, sign, dtype.str))
            if v is None:
                v = base[src, sign, dtype.str] = np.zeros(stacked["nnz"], dtype=dtype)
                v[s_pos[src]] = S.data * dtype.type(2 * sign)
        return v.copy()

    def build_stacked():
        nnz = S.indptr[-1] + n                       # one more entry per row
        itype = np.int32 if 3 * n < 2 ** 31 and nnz < 2 ** 31 else np.int64
        rows = np.arange(n, dtype=itype)
        indptr = (S.indptr + np.arange(n + 1)).astype(itype)
        last = indptr[1:] - 1                        # [S, I]: the diagonal entry ends the row
        first = indptr[:-1]                          # [I, S]: it starts the row
        s_pos = {0: np.ones(nnz, bool), 1: np.ones(nnz, bool)}   # where the S entries are
        s_pos[0][last] = s_pos[1][first] = False
        idx = {0: np.empty(nnz, itype), 1: np.empty(nnz, itype)}
        idx[0][s_pos[0]], idx[0][last] = S.indices, n + rows
        idx[1][s_pos[1]], idx[1][first] = S.indices + n, rows
        return dict(nnz=nnz, indptr=indptr, idx=idx, s_pos=s_pos, diag={0: last, 1: first})

    def run_bags(F, gamma):
        nonlocal bags
        with base_lock:
            if bags is None:
                import torch

                from .._torch._sparse import bag_matmul
                itype = np.int32 if S.nnz < 2 ** 31 and n < 2 ** 31 else np.int64
                arrays = [torch.from_numpy(np.array(a, dtype=itype))
                          for a in (S.indptr, S.indices)]
                bags = (bag_matmul, arrays, torch.from_numpy(S.data * S.dtype.type(2)),
                        torch.from_numpy(np.array(S.data)))
        import torch
        bag_matmul, (ptr, ind), two_s, one_s = bags
        K = len(gamma) - 1
        Ft = torch.from_numpy(F)
        nz = F != 0   # (a bool mask: np.flatnonzero of it is 10x faster than of F)
        if np.count_nonzero(nz) <= F.size // _SPARSE_ADD_FRACTION:
            # sparse features (HDS reports: about 1 % of Facebook's entries): gamma_k F
            # added through its non-zeros, not a pass over the block (with the
            # working set one block smaller, the products run faster too)
            where = torch.from_numpy(np.flatnonzero(nz))
            nonzeros = Ft.view(-1)[where]

            def add_f(b, g):
                b.view(-1).index_add_(0, where, nonzeros, alpha=g)
        else:
            def add_f(b, g):
                b.add_(Ft, alpha=g)
        b1, b2 = torch.mul(Ft, float(gamma[K])), None    # b_K, b_(K+1) = 0
        for k in range(K - 1, 0, -1):
            b = bag_matmul(ptr, ind, two_s, b1)        # 2 S b_(k+1), a fresh block
            add_f(b, float(gamma[k]))
            if b2 is not None:
                b.sub_(b2)
            b1, b2 = b, b1
        W = bag_matmul(ptr, ind, one_s, b1)            # W = gamma_0 F + S b_1 - b_2
        add_f(W, float(gamma[0]))
        if b2 is not None:
            W.sub_(b2)
        return W.numpy()

    def run(_unused, F, a, tol, max_iter):
        nonlocal stacked
        gamma, ok = chebyshev_coefficients(a, tol, max_iter)
        K = len(gamma) - 1
        dt = F.dtype.type
        if K == 0:
            return F * dt(gamma[0]), ok, 0
        if F.dtype == np.float32:
            return run_bags(F, gamma), ok, K
        with base_lock:
            if stacked is None:
                stacked = build_stacked()
        indptr, idx, diag = stacked["indptr"], stacked["idx"], stacked["diag"]
        w = F.shape[1]
        big = np.zeros((3 * n, w), dtype=F.dtype)
        big[n:2 * n] = F
        buf = {0: big[:n], 1: big[2 * n:]}
        data = {}   # (layout, sign of the S part) -> values (2 S), diagonal set per step

        def step(src, sign, scale, g):
            # buf[1 - src] += [sign scale S, g I] [buf[src]; F]  (layout = src)
            v = data.get((src, sign))
            if v is None:   # in practice two arrays: layout 0 with -2 S, layout 1 with 2 S
                v = data[src, sign] = values(src, sign, F.dtype)
            if scale == 1:   # the last step: S instead of 2 S
                v *= dt(0.5)
            v[diag[src]] = g
            X = big[:2 * n] if src == 0 else big[n:]
            _sparsetools_matvecs(n, 2 * n, w, indptr, idx[src], v, X, buf[1 - src])

        # b_K = gamma_K F into buffer 0 (c_K = 1); buffer 1 holds b_(K+1) = 0 (c = 1)
        np.multiply(F, dt(gamma[K]), out=buf[0])
        src, c_in, c_out = 0, 1.0, 1.0          # signs of buf[src] (b_(k+1)), buf[1-src]
        for k in range(K - 1, 0, -1):
            c_new = -c_out                      # buf[1-src] becomes c_new b_k
            step(src, int(c_new * c_in), 2, dt(c_new * gamma[k]))
            src, c_in, c_out = 1 - src, c_new, c_in
        c_new = -c_out                          # W = gamma_0 F + S b_1 - b_2
        step(src, int(c_new * c_in), 1, dt(c_new * gamma[0]))
        W = buf[1 - src]
        if c_new < 0:
            W *= dt(-1)
        return W, ok, K

    return run


def _sparsetools_matvecs(n_row, n_col, w, indptr, indices, data, X, Y):
    """``Y += A @ X`` in place for the CSR arrays of ``A`` (scipy's kernel adds into ``Y``)."""
    try:
        from scipy.sparse import _sparsetools
        _sparsetools.csr_matvecs(n_row, n_col, w, indptr, indices, data, X.ravel(), Y.ravel())
    except (ImportError, AttributeError, TypeError, ValueError):  # pragma: no cover
        Y += sp.csr_matrix((data, indices, indptr), shape=(n_row, n_col)) @ X


def _power_cpu(M, F, a, tol, max_iter, weights=None):
    """Power series ``sum_l ((1-a) T)^l F`` (``M = (1-a) T``), see ``_power``; in
    float32 the products run on torch's embedding-bag kernel (as the Chebyshev solve's).

    The same stopping rule, without a pass over ``Z`` for its norm at each step:
    ``||Z||`` is at most its last computed value plus the norms of the terms added
    since, and it is computed only once that bound would let the series stop.
    ``weights`` (``(D^-r, ||D^r 1||)``, see ``_power_weights``): the remainder is
    bounded as ``_power`` does without ``||T|| <= 1``; that bound is at least
    ``||H||``, so it is computed only once ``||H||`` would let the series stop.
    """
    Z = F.copy()
    H = F
    if a == 1.0 or not np.any(H):
        return Z, True, 0
    product, _ = _product(M, np.inf)   # float32: torch's embedding-bag kernel
    z_bound = float(np.linalg.norm(Z))
    for it in range(max_iter):
        H = product(H)
        Z += H
        h = float(np.linalg.norm(H))
        z_bound += h
        # (the bound is widened by far more than the float32 norms' rounding in practice)
        if h * (1.0 - a) <= tol * a * z_bound * 1.05:
            if weights is not None:
                w, vnorm = weights
                h = vnorm * float(np.linalg.norm((np.abs(H) * w[:, None]).max(axis=0)))
                if h * (1.0 - a) > tol * a * z_bound * 1.05:
                    continue
            z_bound = float(np.linalg.norm(Z))
            if h * (1.0 - a) <= tol * a * z_bound:
                return Z, True, it + 1
    return Z, False, max_iter


def _contracts(G, r):
    """Whether ``||T||_2 <= 1`` for the power series' ``T = D^(r-1) A D^-r``: ``r = 1/2``
    on a symmetric adjacency (``T`` symmetric, eigenvalues in [-1, 1])."""
    return r == 0.5 and G.is_symmetric()


def _power_weights(A, r, add_self_loops):
    """``(D^-r, ||D^r 1||_2)`` (float64) of the power series' ``T = D^(r-1) A D^-r``.

    ``T`` is non-negative with ``T v = v`` for ``v = D^r 1`` (``T`` is similar to the
    row-stochastic ``D^-1 A``), so ``|T x| <= v max_i |x_i| / v_i`` entry by entry:
    the remainder ``sum_(j >= 1) ((1-a) T)^j H`` of each column ``h`` is at most
    ``v (1-a) / a max_i |h_i| / v_i``, and the block's at most ``(1-a) / a ||v||``
    times the norm of those maxima, whatever ``||T||_2`` (a directed graph, ``r !=
    1/2``).
    """
    _, deg = _with_loops(A, add_self_loops)
    return deg ** -float(r), float(np.linalg.norm(deg ** float(r)))


def _with_loops(A, add_self_loops):
    """``(A', deg)``: ``A`` (plus ``I`` with ``add_self_loops``, on the nodes without a
    self loop; plus a self loop on
    each node without edges) and its row sums in float64.

    Without self loops and isolated nodes ``A`` itself is returned (no copy); the
    degrees are summed in float64 from its values (``row_sums``).
    """
    if add_self_loops:   # an existing self loop keeps its weight (PyG's rule)
        A = with_remaining_self_loops(A, np.float64)
    deg = row_sums(A, np.float64)
    isolated = deg == 0
    if isolated.any():   # a self loop, so that D^-r is defined: output = input
        A = sp.csr_matrix(A, dtype=np.float64) + sp.diags(isolated.astype(np.float64),
                                                         format="csr")
        deg = np.where(isolated, 1.0, deg)
    return A, deg


def _scaled(A, left, right, dtype):
    """``diag(left) A diag(right)`` in ``dtype`` (values computed in float64)."""
    return scale_csr(A, np.asarray(left, np.float64), np.asarray(right, np.float64), dtype)


def _ppr_operator(A, sym, r, add_self_loops, dtype):
    """``(M, left, right)``: ``S`` and ``D^(1/2-r)``, ``D^(r-1/2)`` or ``(T, None, None)``."""
    A, deg = _with_loops(A, add_self_loops)
    if sym:   # T = D^(r-1/2) S D^(1/2-r), S = D^-1/2 A D^-1/2 symmetric
        d = deg ** -0.5
        return _scaled(A, d, d, dtype), deg ** (0.5 - r), deg ** (r - 0.5)
    return _scaled(A, deg ** (r - 1.0), deg ** (-r), dtype), None, None


def _permuted(M, perm):
    """``M[perm][:, perm]`` with sorted indices: the rows gathered, the column
    indices renumbered (no column indexing pass)."""
    n = M.shape[0]
    inv = np.empty(n, dtype=np.intp)
    inv[perm] = np.arange(n)
    R = M[perm]
    P = sp.csr_matrix((R.data, inv[R.indices].astype(R.indices.dtype, copy=False), R.indptr),
                      shape=M.shape)
    P.has_sorted_indices = False
    P.sort_indices()
    return P


def _ordered_operator(M, left, right, sym):
    """The CPU solver's operator: rows and columns in reverse Cuthill-McKee order.

    Returns ``(Mp, perm, sl, sr, runner)``: the permuted operator, the order, the
    permuted scalings and a function giving the Chebyshev runner of ``Mp`` (its
    index arrays built on first use).
    """
    from scipy.sparse.csgraph import reverse_cuthill_mckee
    n = M.shape[0]
    perm = reverse_cuthill_mckee(M, symmetric_mode=sym).astype(np.intp)
    Mp = _permuted(M, perm)
    sl = left[perm] if left is not None else np.ones(n)
    sr = (right[perm] if right is not None else np.ones(n)).astype(M.dtype)
    built = []

    def runner():
        if not built:
            built.append(_chebyshev_runner(Mp))
        return built[0]

    return Mp, perm, sl, sr, runner


class _DeviceEntries:
    """The stored entries of a sparse matrix, sent to a device once as (row, column,
    value) triples; ``X[:, s:e]`` gives a block of columns that is densified there."""

    class Columns:
        def __init__(self, entries, s, e):
            self.entries, self.s, self.e = entries, s, e
            self.shape = (entries.shape[0], e - s)

        def dense(self, left=None, dtype=None):
            """The block as a dense tensor (duplicates add up, as toarray()), its rows
            scaled by the float64 column ``left`` in float64 and rounded once to ``dtype``
            (float64 when ``None``)."""
            torch, t = self.entries.torch, self.entries
            dtype = torch.float64 if dtype is None else dtype
            if self.s == 0 and self.e == t.shape[1]:
                rows, cols, vals = t.rows.long(), t.cols.long(), t.vals
            else:
                m = (t.cols >= self.s) & (t.cols < self.e)
                rows, cols, vals = t.rows[m].long(), t.cols[m].long() - self.s, t.vals[m]
            if t.canonical:
                # each entry alone in its cell: scaled and rounded entry by entry, then
                # a plain scatter into a block of the output's dtype (no float64 block)
                if left is not None:
                    vals = vals * left[:, 0].index_select(0, rows)
                F = torch.zeros(self.shape, dtype=dtype, device=t.cols.device)
                F.index_put_((rows, cols), vals.to(dtype))
                return F
            F = torch.zeros(self.shape, dtype=torch.float64, device=t.cols.device)
            F.index_put_((rows, cols), vals, accumulate=True)   # duplicates add up first
            if left is not None:
                F.mul_(left)
            return F.to(dtype)

    def __init__(self, X, device):
        import torch
        self.torch = torch
        X = sp.csr_matrix(X)
        self.shape = X.shape
        self.canonical = bool(X.has_canonical_format)   # no entry stored twice
        # int32 indices when they fit (kept through the solve; widened per block)
        idx = torch.int32 if max(X.shape) < 2**31 else torch.int64
        # the row pointers travel (int32 when they fit), not the rows' counts in int64
        ptr = read_tensor(X.indptr.astype(np.int32 if X.nnz < 2**31 else np.int64,
                                          copy=False)).to(device)
        counts = ptr[1:] - ptr[:-1]
        self.rows = torch.repeat_interleave(
            torch.arange(X.shape[0], device=device, dtype=idx), counts, output_size=X.nnz)
        self.cols = read_tensor(X.indices).to(device=device, dtype=idx)
        # (float64 values are sent as they are: no host copy first; nothing writes them)
        self.vals = read_tensor(X.data.astype(np.float64, copy=False)).to(device)

    def __getitem__(self, key):
        _, cols = key   # X[:, s:e], as the column blocks of a dense X are taken
        return self.Columns(self, cols.start, min(cols.stop, self.shape[1]))


# Devices whose solve runs beside the host (the tests add "cpu").
_TOUCH_ON = ("cuda",)


def _touch_pages(Z, page=4096):
    """Write one zero per memory page of the C-contiguous array ``Z`` (maps its pages)."""
    flat = Z.reshape(-1)
    flat[::max(1, page // Z.itemsize)] = 0


# Devices on which the torch backend's output stays, a tensor for the next step there
# (the tests add "cpu").
_KEEP_OUTPUT_ON = ("cuda",)

# Devices on which the torch backend normalises the adjacency itself (the tests add "cpu").
_NORMALISE_ON = ("cuda",)
# Device memory a block of columns may use on CUDA: a quarter of the free memory, at
# most this much. Blocks of n x width alive at once in a solve: Chebyshev's sum, its
# last two terms and the next (and one spare for the product's workspace); conjugate
# gradients and the power series keep more, with temporaries.
_CUDA_BLOCK_BYTES = 8 << 30
_LIVE_BLOCKS = {"chebyshev": 5, "cg": 8, "power": 8}


class _TorchOps:
    """The operator of one graph on one device, with its scalings (kept per graph)."""

    def __init__(self, M, dtype, device, left=None, right=None):
        import torch
        self.torch = torch
        self.device = device
        self.tdtype = torch.float32 if dtype == np.float32 else torch.float64
        self.dtype = np.dtype(dtype)
        # int32 indices when they fit: half the index traffic of every product
        idx = np.int32 if max(M.nnz, *M.shape) < 2**31 else np.int64
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            self.M = torch.sparse_csr_tensor(
                read_tensor(M.indptr.astype(idx, copy=False)).to(device),
                read_tensor(M.indices.astype(idx, copy=False)).to(device),
                read_tensor(M.data.astype(dtype, copy=False)).to(device),
                size=M.shape, dtype=self.tdtype, device=device, check_invariants=False)
        self.left = None if left is None else torch.from_numpy(
            np.asarray(left, np.float64)).to(device)[:, None]
        self.right = None if right is None else torch.from_numpy(
            np.asarray(right).astype(dtype)).to(device)[:, None]
        self._fused = True

    @classmethod
    def normalised_on_device(cls, A, sym, r, dtype, device, unit_weights=False):
        """The operator of ``A`` built on ``device`` from its raw arrays, or ``None``.

        The adjacency goes to the device as it is (its float32 values and int32
        indices: as many bytes as the normalised operator) and is normalised
        there: degrees by products with a vector of ones, then the values
        scaled in float64, as :func:`_ppr_operator` does on the host. With
        ``unit_weights`` (every stored weight is 1) only the indices travel:
        the degrees are the rows' counts, the values the two factors' product,
        the same numbers. Every float64 temporary covers one chunk of rows.
        ``None`` (the caller builds it on the host) when a node has no edge: it
        needs a self loop, a new matrix.
        """
        import torch
        n = A.shape[0]
        tdtype = torch.float32 if dtype == np.float32 else torch.float64
        idx = np.int32 if max(A.nnz, n) < 2**31 else np.int64
        indptr = read_tensor(A.indptr.astype(idx, copy=False)).to(device)
        indices = read_tensor(A.indices.astype(idx, copy=False)).to(device)
        raw = None if unit_weights else read_tensor(A.data).to(device)
        counts = indptr[1:] - indptr[:-1]
        chunks = list(_row_chunks(A.indptr))   # bounded float64 temporaries
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            if raw is None:
                deg = counts.to(torch.float64)
            else:
                deg = torch.empty(n, dtype=torch.float64, device=device)
                ones = torch.ones((n, 1), dtype=torch.float64, device=device)
                for r0, r1 in chunks:   # row sums in float64, a product per chunk of rows
                    lo, hi = int(A.indptr[r0]), int(A.indptr[r1])
                    block = torch.sparse_csr_tensor(indptr[r0:r1 + 1] - lo, indices[lo:hi],
                                                    raw[lo:hi].double(), size=(r1 - r0, n),
                                                    check_invariants=False)
                    deg[r0:r1] = (block @ ones).ravel()
                    del block
                del ones
            if bool((deg == 0).any()):
                return None
            if sym:
                rows = cols = deg ** -0.5
            else:
                rows, cols = deg ** (r - 1.0), deg ** (-r)
            values = torch.empty(A.nnz, dtype=tdtype, device=device)
            for r0, r1 in chunks:
                lo, hi = int(A.indptr[r0]), int(A.indptr[r1])
                v = torch.repeat_interleave(rows[r0:r1], counts[r0:r1], output_size=hi - lo)
                if raw is not None:
                    v.mul_(raw[lo:hi])              # (row factor * a_ij) ...
                v.mul_(cols.index_select(0, indices[lo:hi]))  # ... * column factor
                values[lo:hi] = v
                del v
            ops = cls.__new__(cls)
            ops.torch, ops.device, ops.tdtype, ops.dtype = torch, device, tdtype, np.dtype(dtype)
            ops.M = torch.sparse_csr_tensor(indptr, indices, values, size=A.shape,
                                            check_invariants=False)
        ops.left = (deg ** (0.5 - r))[:, None] if sym else None
        ops.right = (deg ** (r - 0.5)).to(tdtype)[:, None] if sym else None
        ops._fused = True
        return ops

    def keeps_output(self, n, d):
        """Whether the ``n x d`` output stays on the device: on CUDA, when it takes at
        most a quarter of the free memory (else it comes back to the host block by block)."""
        if self.device.type not in _KEEP_OUTPUT_ON:
            return False
        if self.device.type != "cuda":
            return True
        free, _ = self.torch.cuda.mem_get_info(self.device)
        return n * d * self.dtype.itemsize <= free // 4

    def block_columns(self, n, d, solver, reserved=0):
        """Columns per block: a memory budget on CUDA, ``_BLOCK_ELEMENTS`` elsewhere.

        On CUDA the blocks are as few as the budget allows and of equal width (each
        block reads the whole adjacency once per product); ``reserved`` bytes of
        the budget are already taken (the output, when it stays on the device).
        """
        if self.device.type == "cuda":
            free, _ = self.torch.cuda.mem_get_info(self.device)
            budget = max(0, min(free // 4, _CUDA_BLOCK_BYTES) - reserved)
            per_column = max(n, 1) * _LIVE_BLOCKS[solver] * self.dtype.itemsize
            widest = int(max(1, min(d, budget // per_column)))
            return -(-d // -(-d // widest)) if d else widest   # d / ceil(d / widest), rounded up
        return max(1, _BLOCK_ELEMENTS // max(n, 1))

    def put_block(self, Xb):
        """``D^(1/2-r) X_b`` on the device, in the computation's dtype.

        Sparse blocks travel as their non-zeros and are densified on the device;
        the scaling is done in float64 and rounded once, as on the CPU path.
        """
        torch = self.torch
        if isinstance(Xb, _DeviceEntries.Columns):
            return Xb.dense(self.left, self.tdtype)
        # a copy of its own: the solve works in place, never on the caller's array
        F = torch.empty(Xb.shape, dtype=torch.float64, device=self.device)
        F.copy_(read_tensor(np.ascontiguousarray(Xb)))
        if self.left is not None:
            F.mul_(self.left)
        return F.to(self.tdtype)

    def get_block(self, W, out, staging=None):
        """``D^(r-1/2) W`` into the host array ``out`` (one transfer), through the
        flat host buffer ``staging`` (at least ``out.size`` values) when given."""
        if self.right is not None:
            W.mul_(self.right)
        if staging is None or out.flags.c_contiguous:
            # straight into the host array: no second host buffer to fill and copy
            self.torch.from_numpy(out).copy_(W)
            return
        buf = staging[:out.size].reshape(out.shape)
        self.torch.from_numpy(buf).copy_(W)
        np.copyto(out, buf)

    def scale_into(self, W, out=None):
        """``D^(r-1/2) W`` into ``out`` (a block of columns of the output on the
        device; ``None``: in place, ``W`` is the output). Returns the output."""
        if out is None:
            return W if self.right is None else W.mul_(self.right)
        if self.right is None:
            return out.copy_(W)
        return self.torch.mul(W, self.right, out=out)

    def spmm(self, H):
        with self.torch.no_grad():
            if self.device.type == "cpu":   # the embedding-bag product: 2x torch.sparse.mm's
                from .._torch._sparse import sparse_matmul
                return sparse_matmul(self.M, H)
            return self.M @ H

    def spmm_twice_minus(self, H, prev):
        """``2 M H - prev`` in one fused product where the backend has it (not the CPU:
        there the embedding-bag product, then two passes, is faster). ``prev`` is used
        up: the fused product writes over it (no copy of it into a new block)."""
        torch = self.torch
        with torch.no_grad():
            if self.device.type == "cpu":
                return self.spmm(H).mul_(2.0).sub_(prev)
            if self._fused:
                try:
                    return torch.addmm(prev, self.M, H, beta=-1.0, alpha=2.0, out=prev)
                except (RuntimeError, NotImplementedError):   # pragma: no cover
                    self._fused = False
            return (self.M @ H).mul_(2.0).sub_(prev)

    def norm(self, H):
        return float(self.torch.linalg.norm(H))

    def norms(self, *Hs):
        """The Frobenius norms of ``Hs`` as floats, read from the device at once."""
        linalg = self.torch.linalg
        return self.torch.stack([linalg.norm(H) for H in Hs]).tolist()

    def coldot(self, A, B):
        return (A * B).sum(dim=0)

    def safe_div(self, a, b):
        return a / self.torch.where(b > 0, b, self.torch.ones_like(b))
