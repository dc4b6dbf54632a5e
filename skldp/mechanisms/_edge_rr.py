"""Edge local differential privacy: randomized response on each user's adjacency list."""


from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from .._graph_data import refusal_is_read
from ..base import (
    GraphTransformerMixin,
    PrivateStepMixin,
    boundary_input,
    check_population,
    check_saved_input,
    collected_spec,
    population_of,
    saved_positions,
)
from ..device._edges import flip_probability, randomized_lists
from ..device._kinds import directory_digest
from ..exceptions import InvalidParameterError
from ..population._digest import list_digests
from ..utils._adjacency import index_dtype
from ..utils._arrays import sorted_lookup
from ..utils.validation import (
    EPS_CONSTRAINT,
    RANDOM_STATE_CONSTRAINT,
    check_eps,
    check_graph_data,
    check_int,
)
from ._grid import check_eps_per_coordinate

__all__ = ["EdgeRR", "randomized_adjacency_lists"]

_SYMMETRIZE = ("or", "and", "directed")
_BLOCK_DRAWS = 1 << 20  # list entries drawn per block of users (bounds temporary memory)
_SYM_BLOCK = 1 << 17  # entries per row block of the symmetrisation


def _flip_probability(eps):
    """1 / (1 + e^eps), the probability of flipping one bit [Lin et al., IEEE TIFS 2022, Eq. 5]."""
    return flip_probability(eps)


def randomized_adjacency_lists(A, keys, eps, seed, report_keys=None):
    """Randomized response on every row of a 0/1 CSR adjacency, without densifying.

    Row ``i`` is user ``i``'s adjacency list (a bit per other user). Each bit
    is flipped with probability ``q = 1 / (1 + e^eps)``: a true neighbour is
    kept with probability ``1 - q`` and each of the ``n - 1 - deg(i)``
    non-neighbours (self excluded) is added with probability ``q``, drawn by
    geometric skipping over the non-neighbours in the order of the user keys
    (the device program, :func:`skldp.device._edges.randomized_lists`). Every
    draw is keyed by ``(seed, keys[i])``, so a user's report depends only on
    the seed, its key and its own list.

    Parameters
    ----------
    A : CSR matrix of shape (n, n)
        0/1 adjacency without self loops, sorted indices.
    keys : ndarray of uint64, shape (n,)
        Per-user keys.
    eps : float
        Budget per user (> 0; ``inf`` returns ``A``'s pattern).
    seed : int
        The collection's seed.
    report_keys : ndarray of uint64, shape (n,), default=None
        The keys each user draws its random numbers from (``keys`` by default);
        the population mixes them with a digest of the user's list, so that a
        changed list is refused by the population (one answer per collection).

    Returns
    -------
    R : CSR matrix of shape (n, n), float32 ones, sorted indices
        The reported lists (directed: row ``i`` is user ``i``'s report).
    """
    A = sp.csr_matrix(A)
    indptr, cols = _report_lists(A, keys, eps, seed, report_keys)
    return _ones_csr(indptr, cols, A.shape[0])


def _ones_csr(indptr, cols, n):
    """A CSR matrix of float32 ones over a sorted pattern, sharing ``indptr`` and ``cols``."""
    R = sp.csr_matrix((np.ones(len(cols), dtype=np.float32), cols, indptr), shape=(n, n),
                      copy=False)
    R.has_sorted_indices = True
    R.has_canonical_format = True
    return R


def _row_blocks(indptr, size):
    """Consecutive row ranges ``(start, stop)`` of about ``size`` stored entries each."""
    n = len(indptr) - 1
    start = 0
    while start < n:
        stop = int(np.searchsorted(indptr, indptr[start] + size, side="right")) - 1
        stop = min(n, max(stop, start + 1))
        yield start, stop
        start = stop


def _report_lists(A, keys, eps, seed, report_keys=None):
    """``(indptr, cols)`` of the reports (sorted rows), drawn block by block.

    ``keys`` name the users (as targets too); each user's own random numbers are
    drawn from ``report_keys`` (``keys`` by default). The devices name users by
    their positions in the directory sorted by key; the blocks translate.
    """
    n = A.shape[0]
    q = _flip_probability(eps)
    indptr, indices = A.indptr.astype(np.int64), A.indices
    deg = np.diff(indptr)
    keys = np.asarray(keys, dtype=np.uint64)
    rkeys = keys if report_keys is None else np.asarray(report_keys, dtype=np.uint64)
    by_key = np.argsort(keys, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[by_key] = np.arange(n)
    # Users are processed in blocks of about _BLOCK_DRAWS expected entries (every draw is
    # keyed by the user, so the blocks do not change the draws).
    work = np.cumsum(deg + np.ceil((n - 1 - deg) * q).astype(np.int64) + 1)
    # each block's columns are kept in the narrowest dtype that holds a user's position:
    # the reports are the largest arrays of the collection
    col_dtype = index_dtype(n)
    ptrs, parts = [np.zeros(1, np.int64)], []
    start = 0
    while start < n:
        base = work[start - 1] if start else 0
        stop = int(np.searchsorted(work, base + _BLOCK_DRAWS, side="right"))
        stop = min(n, max(stop, start + 1))
        lo, hi = indptr[start], indptr[stop]
        # the users' neighbours as positions in key order, increasing within each user
        owner = np.repeat(np.arange(stop - start, dtype=np.int64), deg[start:stop])
        order = np.argsort(owner * n + rank[indices[lo:hi]])
        ptr, got = randomized_lists(seed, rkeys[start:stop], rank[start:stop],
                                    indptr[start:stop + 1] - lo, rank[indices[lo:hi][order]],
                                    keys[indices[lo:hi][order]], n, q)
        # back to storage order, sorted within each row
        rows = np.repeat(np.arange(stop - start, dtype=np.int64), np.diff(ptr))
        parts.append((np.sort(rows * n + by_key[got]) - rows * n).astype(col_dtype))
        ptrs.append(ptr[1:] + ptrs[-1][-1])
        start = stop
    out_ptr = np.concatenate(ptrs)
    idx_dtype = index_dtype(n, int(out_ptr[-1]))
    cols_out = np.concatenate(parts) if parts else np.zeros(0, idx_dtype)
    parts.clear()
    return out_ptr.astype(idx_dtype), cols_out.astype(idx_dtype, copy=False)


def _row_sums(indptr, mask):
    """Number of true entries of ``mask`` (one per stored entry) in each row."""
    n = len(indptr) - 1
    out = np.zeros(n, dtype=np.int64)
    for start, stop in _row_blocks(indptr, _BLOCK_DRAWS):
        lo = indptr[start]
        c = np.concatenate([[0], np.cumsum(mask[lo:indptr[stop]])])
        out[start:stop] = c[indptr[start + 1:stop + 1] - lo] - c[indptr[start:stop] - lo]
    return out


def _transpose_pattern(indptr, cols, n):
    """``(indptr, cols)`` of the transpose of a CSR pattern, with sorted rows.

    scipy's CSR -> CSC conversion (linear, rows scattered in order) over int8 ones,
    so that no float data of the reports' size is allocated.
    """
    R = sp.csr_matrix((np.ones(len(cols), dtype=np.int8), cols, indptr), shape=(n, n),
                      copy=False)
    T = R.tocsc()
    return T.indptr.astype(np.int64), T.indices


def _block_codes(indptr, cols, start, stop, n):
    """Sorted int64 codes ``(row - start) * n + col`` of the entries of rows start..stop-1."""
    r = np.repeat(np.arange(stop - start, dtype=np.int64), np.diff(indptr[start:stop + 1]))
    return r * n + cols[indptr[start]:indptr[stop]]


def _symmetrize(indptr, cols, mode):
    """``(indptr, cols)`` of the union (``"or"``) or intersection (``"and"``) of R and R^T.

    Only integer patterns are held, and never the reports, their transpose and the
    result at once: (1) R^T's pattern (a counting sort) marks the entries of R
    reported by both users, then is freed; (2) the result's column array is
    allocated once at its final size; each row gets R's row followed by the
    entries ``(j, i)`` of R not mirrored in R (scattered in increasing ``j``), and
    (3) each row, two sorted runs, is sorted in place block by block.
    """
    n = len(indptr) - 1
    indptr = indptr.astype(np.int64)
    rowlen = np.diff(indptr)
    t_ptr, t_cols = _transpose_pattern(indptr, cols, n)
    collen = np.diff(t_ptr)
    both = np.zeros(len(cols), dtype=bool)  # (i, j) and (j, i) both reported
    # small blocks: the binary searches then run within the cache
    for start, stop in _row_blocks(indptr + t_ptr, _SYM_BLOCK):
        lo, hi = indptr[start], indptr[stop]
        both[lo:hi] = sorted_lookup(_block_codes(t_ptr, t_cols, start, stop, n),
                                    _block_codes(indptr, cols, start, stop, n))[1]
    del t_ptr, t_cols
    n_both = _row_sums(indptr, both)
    counts = n_both if mode == "and" else rowlen + collen - n_both
    del collen, n_both
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=out_ptr[1:])
    del counts
    idx_dtype = index_dtype(n, int(out_ptr[-1]))
    if mode == "and":  # R's sorted rows, filtered
        return out_ptr.astype(idx_dtype), cols[both]
    out = np.empty(int(out_ptr[-1]), dtype=idx_dtype)
    fill = out_ptr[:-1] + rowlen
    for start, stop in _row_blocks(indptr, _BLOCK_DRAWS):
        lo, hi = indptr[start], indptr[stop]
        r = np.repeat(np.arange(start, stop), rowlen[start:stop])
        out[out_ptr[r] + np.arange(lo, hi) - indptr[r]] = cols[lo:hi]
        m = ~both[lo:hi]
        tgt, src = cols[lo:hi][m], r[m]
        order = np.argsort(tgt, kind="stable")
        tgt, src = tgt[order], src[order]
        rank = np.arange(len(tgt)) - np.searchsorted(tgt, tgt, side="left")
        out[fill[tgt] + rank] = src
        fill += np.bincount(tgt, minlength=n)
    del both, fill
    # each row holds two sorted runs (R's row, then the mirrored entries): a stable
    # sort merges them
    for start, stop in _row_blocks(out_ptr, _SYM_BLOCK):
        codes = _block_codes(out_ptr, out, start, stop, n)
        codes.sort(kind="stable")
        out[out_ptr[start]:out_ptr[stop]] = codes % n
    return out_ptr.astype(idx_dtype), out


class EdgeRR(PrivateStepMixin, GraphTransformerMixin, BaseEstimator):
    r"""Edge local DP: every user randomizes their own adjacency list (randomized response).

    User ``i`` reports its adjacency list with every bit flipped
    independently with probability

    .. math:: q = \frac{1}{1 + e^{\epsilon}},

    which is ``eps``-edge LDP per user. The server builds its graph from the
    reports (``symmetrize``); the output is a view of the same rows with that
    adjacency, the features untouched. Cost and memory grow with the number
    of edges plus expected flips, never with ``n^2``.

    Read more in the :ref:`User Guide <edge_rr>`.

    Parameters
    ----------
    eps : float, default=1.0
        Per-user edge budget (> 0; ``inf`` reports the true lists).
    symmetrize : {"or", "and", "directed"}, default="or"
        How the server turns the directed reports into its graph: row ``i``
        is user ``i``'s report (``"directed"``), or ``{i, j}`` is an edge if
        either (``"or"``) or both (``"and"``) endpoints reported it. It is
        part of the collection's spec: each value is a collection of its own,
        charged again.
    binarize : bool, default=False
        Treat every positive weight as an edge; otherwise a weighted
        adjacency raises an error.
    random_state : int, RandomState, Generator or None, default=None
        Seed of the collection; ``None`` draws a new collection at each fit.

    Attributes
    ----------
    seed_ : int
        Seed of this collection.
    epsilon_ : float
        Per-user guarantee, ``eps``.
    protects_ : tuple of str
        ``("edges",)``.
    flip_probability_ : float
        ``1 / (1 + e^eps)``.
    n_features_in_ : int
        Number of features.

    See Also
    --------
    skldp.models.SolitudeClassifier : Learns a denoised graph from these reports.

    Notes
    -----
    An asymmetric input is accepted only with ``symmetrize="directed"``;
    otherwise symmetrise it first (``A.maximum(A.T)``).

    Put it before every step that reads the graph (propagation, aggregation,
    structural features): features such a step computed from the true
    adjacency would reveal the edges whatever ``eps``, and are refused.

    References
    ----------
    .. [1] W. Lin, B. Li and C. Wang, "Towards Private Learning on
       Decentralized Graphs with Local Differential Privacy", IEEE TIFS 2022,
       §III-A-1, eqs. (5)-(6), Theorem 1.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skldp import GraphData
    >>> from skldp.mechanisms import EdgeRR
    >>> A = sp.random(200, 200, density=0.02, random_state=0)
    >>> A = ((A + A.T) > 0).astype(float); A.setdiag(0); A.eliminate_zeros()
    >>> G = GraphData(np.zeros((200, 2)), A)
    >>> Gr = EdgeRR(eps=4.0, random_state=0).fit_transform(G)
    >>> Gr.adjacency.shape, Gr.is_symmetric()
    ((200, 200), True)
    """

    _graph_requirements = {"require_adjacency": True}
    _parameter_constraints = {
        "eps": [EPS_CONSTRAINT],
        "symmetrize": [StrOptions(set(_SYMMETRIZE))],
        "binarize": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(self, eps=1.0, *, symmetrize="or", binarize=False, random_state=None):
        self.eps = eps
        self.symmetrize = symmetrize
        self.binarize = binarize
        self.random_state = random_state

    protects = ("edges",)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Validate the parameters and the graph, fix the collection."""
        G = check_graph_data(X, self, require_adjacency=True)
        self._setup_fit()
        spec = collected_spec(G, "adjacency")
        if spec is not None:
            return self._fit_collected(G, spec)
        self.__dict__.pop("collected_", None)
        population, device_steps = boundary_input(self, G, "adjacency")
        self._lists(G)
        self.n_features_in_ = G.shape[1]
        self.population_ = population_of(G)
        # the directory (every user's key) is public: an adjacency list names other users
        self._open_collection(population, epsilon=float(self.eps), device_steps=device_steps,
                              public_state={"n_users": G.n_nodes,
                                            "directory": directory_digest(G.node_keys)})
        self.flip_probability_ = _flip_probability(float(self.eps))
        return self

    def transform(self, X):
        """A view of the same rows over the server's randomized graph."""
        check_is_fitted(self, "epsilon_")
        self._check_unchanged()
        check_population(self, check_graph_data(X, self, require_adjacency=True))
        return super().transform(X)

    def _setup_fit(self):
        # Flips are drawn from 53-bit uniforms: a flip probability 1/(1 + e^eps) must
        # stay far above 2^-53 to be sampled with a small relative error.
        check_eps_per_coordinate(self.eps, "eps", type(self).__name__, limit=20.0)

    def _lists(self, G):
        """The users' 0/1 adjacency lists (CSR), after the input checks."""
        A = G.require_adjacency(type(self).__name__)
        n = A.shape[0]
        if n < 2:
            raise ValueError("EdgeRR needs a graph of at least 2 nodes (an adjacency list "
                             f"over the other users); got {n}.")
        # (refusals of the users' lists tell something of them: charged as reads)
        if A.nnz and A.diagonal().any():
            with refusal_is_read(self, "edges", G, "self loops"):
                raise ValueError("The adjacency has self loops; an adjacency list holds other "
                                 "users only. Remove them first, on a copy (the graph's "
                                 "adjacency is shared, read-only by contract): A = "
                                 "G.adjacency.copy(); A.setdiag(0); A.eliminate_zeros(); G = "
                                 "G.with_adjacency(A, source='users').")
        if A.nnz and np.any(A.data != 1):
            if not self.binarize:
                with refusal_is_read(self, "edges", G, "weights other than 1"):
                    raise ValueError("EdgeRR needs a 0/1 adjacency (each user's list is a bit "
                                     "vector), but it has weights other than 1. Pass "
                                     "binarize=True to treat every positive weight as an "
                                     "edge.")
            A = A.copy()
            A.data[:] = 1.0
        if self.symmetrize != "directed" and not G.is_symmetric():
            with refusal_is_read(self, "edges", G, "a directed graph"):
                raise ValueError(f"EdgeRR(symmetrize={self.symmetrize!r}) needs an undirected "
                                 "(symmetric) adjacency, since both endpoints report an edge, "
                                 f"{G._why_not_symmetric()} Or use symmetrize='directed', "
                                 "where row i is user i's list.")
        return A

    def _restore_public_state(self, spec, G):
        if G is not None:
            self._check_directory(G, spec)
        self.n_features_in_ = None if G is None else G.shape[1]
        self.flip_probability_ = _flip_probability(float(self.eps))

    def _forget_secret(self, X):
        """Keep the server's randomized graph of the users of ``X`` and delete ``seed_``."""
        G = check_graph_data(X, self, require_adjacency=True).full()
        check_population(self, G)
        self.saved_keys_ = G.node_keys.copy()
        self.saved_adjacency_ = self._transform_graph(G).adjacency
        self.saved_source_ = G._store.adjacency_source
        del self.seed_

    def _check_directory(self, G, spec=None):
        """Refuse a graph whose users (the directory) are not those of the collection
        (``spec``, by default this fit's): a report depends on the directory it was drawn
        over (the non-neighbours skipped, in key order), so another directory would draw a
        second report of the same list."""
        ps = (spec or self.collection_).public_state
        if G.n_nodes != ps["n_users"]:
            raise ValueError(f"EdgeRR was fitted on a graph of {ps['n_users']} users; this "
                             f"one has {G.n_nodes}. Each user's list is a bit per other user: "
                             "fit it again for another set of users.")
        if directory_digest(G.node_keys) != ps["directory"]:
            raise ValueError("EdgeRR was fitted on a graph of other users (its directory, the "
                             "set of the users' ids, differs): each user's list is a bit per "
                             "other user of that directory, and drawing it over another one "
                             "would send a second report. Fit it again for these users.")

    def _answer(self, G):
        """Record that the users of ``G`` answer (when an on-disk cache holds the reports)."""
        if hasattr(self, "seed_"):
            self._check_directory(G)
            population, _ = boundary_input(self, G, "adjacency")
            A = self._lists(G)
            population.collect(self.collection_, G.node_keys, list_digests(A, G.node_keys),
                               lambda keys: None, unique=True)

    def _transform_graph(self, G):
        if getattr(self, "collected_", False):
            return self._collected_output(G, "adjacency")
        if not hasattr(self, "seed_"):
            rows = saved_positions(self.saved_keys_, G.node_keys, type(self).__name__)
            if len(rows) != len(self.saved_keys_):
                raise ValueError("EdgeRR was saved without its secret for another set of "
                                 "users; a randomized graph cannot be drawn for new users.")
            check_saved_input(self, G, "adjacency",
                              lambda: list_digests(self._lists(G), G.node_keys))
            return G._with_new_adjacency(self.saved_adjacency_[rows][:, rows])
        population, device_steps = boundary_input(self, G, "adjacency")
        self._check_device_steps(device_steps)
        self._check_directory(G)
        A = self._lists(G)
        n = A.shape[0]

        def encode(report_keys):   # every device randomizes its own list
            return _report_lists(A, G.node_keys, float(self.eps), self.seed_, report_keys)

        indptr, cols = population.collect(self.collection_, G.node_keys,
                                          list_digests(A, G.node_keys), encode, unique=True)
        A = None   # frees the lists (the closure keeps only the name) before the symmetrisation
        if self.symmetrize != "directed":
            # rebinding frees the directed reports before the float32 data is allocated
            indptr, cols = _symmetrize(indptr, cols, self.symmetrize)
        return G._with_new_adjacency(_ones_csr(indptr, cols, n))

    def expected_n_edges(self, n_nodes, n_edges):
        """Expected number of stored (directed) entries of the server's adjacency.

        Parameters
        ----------
        n_nodes : int
            Number of users ``n``.
        n_edges : int or float
            Number of undirected true edges ``m`` (``2 m`` directed list entries),
            in ``0..n (n - 1) / 2``; half-integers count a directed list entry
            without its reverse (``symmetrize="directed"``).

        Returns
        -------
        float
            ``directed``: ``2m(1-q) + (n(n-1) - 2m) q``; ``or``: twice the
            expected number of pairs with at least one report; ``and``: twice
            the expected number of pairs reported by both.
        """
        check_int(n_nodes, "n_nodes", 2)
        q = _flip_probability(check_eps(self.eps))
        pairs = n_nodes * (n_nodes - 1) / 2.0
        # (a count: "3" is no number, and a negative or too large one has no graph)
        if isinstance(n_edges, bool) or not isinstance(n_edges, Real) \
                or not 0 <= n_edges <= pairs:
            raise InvalidParameterError(
                f"n_edges must be a number of undirected edges in 0..{pairs:.0f} (every pair "
                f"of {n_nodes} nodes), got {n_edges!r}.")
        m = float(n_edges)
        if self.symmetrize == "directed":
            return 2 * m * (1 - q) + (2 * pairs - 2 * m) * q
        if self.symmetrize == "or":
            return 2 * (m * (1 - q * q) + (pairs - m) * (1 - (1 - q) ** 2))
        if self.symmetrize == "and":
            return 2 * (m * (1 - q) ** 2 + (pairs - m) * q * q)
        raise ValueError(f"symmetrize must be one of {_SYMMETRIZE}, got {self.symmetrize!r}.")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags
