"""Link prediction samples (node pairs on a graph) and the 85/5/10 random edge split."""

import itertools
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from .._graph_data import _EXPORT, GraphData, _is_symmetric, reads_users_data
from ..utils._arrays import distinct, sorted_lookup
from ._node_splits import _split_rng

__all__ = ["PairData", "random_edge_split", "sample_non_edges"]

# Complements with at most this many candidate pairs are enumerated exactly;
# larger graphs use vectorised rejection sampling.
_ENUMERATE_MAX = 1 << 23


class PairData(GraphData):
    """Node pairs of one graph: the samples of link prediction.

    A ``PairData`` is a :class:`~skldp.GraphData` whose *rows are node pairs*.
    It shares the store (features of all nodes, adjacency, node ids) of the
    graph it is built on and holds an ``(n_pairs, 2)`` array of node positions.
    ``len(P)`` and ``P.shape[0]`` count pairs, so ``y`` (1 = edge, 0 =
    non-edge) is aligned with the pairs exactly as scikit-learn expects, and
    ``P[idx]`` / ``P[idx, ...]`` select pairs (``cross_val_score``,
    ``_safe_indexing``).

    Graph steps (LDP mechanisms, propagation) treat it like the node graph it
    is built on: they transform the features of *all* nodes and return a
    ``PairData`` with the same pairs over the transformed graph (through the
    ``_rebase`` hook of :class:`~skldp.base.GraphTransformerMixin`). So

    ``Pipeline([("hds", HDSMechanism()), ("ppr", PPRPropagation()),
    ("link", HadamardLinkPredictor())]).fit(P_train, y_train)``

    perturbs and propagates every node once and trains the head on the pairs.
    A plain scikit-learn estimator sees ``np.asarray(P)``: the Hadamard
    product ``x_u * x_v`` of the endpoint features, shape
    ``(n_pairs, n_features)`` (the edge features of [Li et al., CIKM 2024, §4.1]).
    When those features are the users' data (not reports), the users at both
    ends of the pairs are charged a read in the clear (epsilon inf), as for
    ``np.asarray(G)``.

    Parameters
    ----------
    graph : GraphData
        The graph whose nodes the pairs refer to. For evaluation it must be
        the *training* graph (held-out edges removed), as returned by
        :func:`random_edge_split`; any view works, all nodes are used.
    pairs : array-like of int of shape (n_pairs, 2)
        Node *positions* (0..n_nodes-1) of the pairs. Use
        :meth:`from_node_ids` for node ids.

    Attributes
    ----------
    pairs : ndarray of shape (n_pairs, 2)
        Positions of the two endpoints of each pair.
    rows : ndarray
        Sorted positions of the nodes that occur in some pair.

    Raises
    ------
    ValueError
        If a pair refers to an unknown node (position out of range) or joins a
        node with itself.

    Notes
    -----
    ``cross_val_score`` / ``GridSearchCV`` over the pairs of one ``PairData``
    work, but every fold shares the same graph: the positive pairs of a test
    fold are edges of that graph, so such scores are optimistic. Select
    models on the validation part of :func:`random_edge_split`, whose edges
    are removed from the graph.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skldp import GraphData
    >>> from skldp.model_selection import PairData
    >>> A = sp.csr_array(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
    >>> P = PairData(GraphData(np.eye(3), A), [[0, 1], [0, 2]])
    >>> P.shape, P[[1]].pairs.tolist()
    ((2, 3), [[0, 2]])
    """

    def __init__(self, graph, pairs):
        if not isinstance(graph, GraphData):
            raise TypeError(f"graph must be a skldp.GraphData, got {type(graph).__name__}.")
        self._store = graph._store
        self.pairs = _check_pairs(pairs, graph.n_nodes)
        # Where the labels of the pairs were read (for the link predictors' ledger): the
        # adjacency origin random_edge_split labelled them from; None for the caller's
        # pairs, whose labels may be the users' true edges.
        self._labels_from = None

    @classmethod
    def from_node_ids(cls, graph, id_pairs):
        """Build from pairs of node *ids* (``graph.all_node_ids``) instead of positions.

        Raises ``ValueError`` naming the first id that is not a node of the graph.
        Ids of several types (numbers and text, as ``GraphData`` accepts) are
        looked up by equality: the text ``"1"`` is not the number ``1``.
        """
        ids = graph.all_node_ids
        # Python and numpy compare True equal to 1: True would pass as node id 1 (and a
        # list [[True, 2]] becomes integers below), so look for bools before converting
        given = id_pairs if isinstance(id_pairs, np.ndarray) else \
            np.asarray(id_pairs, dtype=object)
        types = _types(given)
        if _holds_bools(given, types) and not _holds_bools(ids):
            raise ValueError("id_pairs hold True or False, which are not node ids of this "
                             "graph (True would be looked up as the id 1). Pass the ids.")
        if ids.dtype == object:   # each id keeps its type (a list [[1, "b"]] would become text)
            id_pairs = given.astype(object, copy=False)
        elif given is not id_pairs:   # a list: numpy's array of it, converted once
            id_pairs = _from_objects(given, types, id_pairs)
        if id_pairs.ndim != 2 or id_pairs.shape[1] != 2:
            raise ValueError(f"id_pairs must have shape (n_pairs, 2), got {id_pairs.shape}.")
        flat = id_pairs.ravel()
        try:
            pos, found = _lookup(ids, flat)
        except TypeError as exc:
            if ids.dtype != object:
                raise ValueError(f"id_pairs of dtype {id_pairs.dtype} cannot be compared with "
                                 f"node ids of dtype {ids.dtype}.") from exc
            # ids (or id_pairs) of several types do not sort: look each id up by equality
            # (a dict filled and read in C, without a loop in Python)
            where = dict(zip(ids.tolist(), range(len(ids)), strict=True))
            try:
                pos = np.fromiter(map(where.get, flat.tolist(), itertools.repeat(-1)),
                                  dtype=np.intp, count=len(flat))
            except TypeError as exc2:   # an unhashable id_pairs entry (a list, ...)
                raise ValueError("id_pairs hold values that cannot be node ids: "
                                 f"{exc2}.") from exc2
            found = pos >= 0
        if not np.all(found):
            bad = flat[~found][0]
            bad = bad.item() if isinstance(bad, np.generic) else bad
            raise ValueError(f"id_pairs refer to unknown node id {bad!r} "
                             f"({np.count_nonzero(~found)} unknown in all).")
        return cls(graph, pos.reshape(id_pairs.shape))

    @classmethod
    def _from_pairs(cls, store, pairs, labels_from=None):
        obj = cls.__new__(cls)
        obj._store = store
        obj.pairs = pairs
        obj._labels_from = labels_from
        return obj

    def _labels(self):
        """Where the pairs' labels were read (``_labels_from``; ``None`` for a PairData
        pickled before it existed: labels of unknown origin)."""
        return getattr(self, "_labels_from", None)

    def _note_export(self, kind, rows):
        """As :meth:`GraphData._note_export`, and: pairs whose labels were read from the
        users' true graph (or of unknown origin) over edges an edge mechanism collected
        leave with their labels' history lost, so whatever reads them with the labels (a
        scikit-learn model's fit) reads those edges in the clear, as a link predictor's
        fit on them would: the users at both ends are charged (epsilon inf)."""
        super()._note_export(kind, rows)
        self._note_pairs_export()

    def _note_pairs_export(self):
        """The pairs' part of :meth:`_note_export` (the pairs leave, with or without
        features)."""
        from ..base import edges_collected
        labels_from = self._labels()
        if edges_collected(self._store.adjacency_origin) and (
                labels_from is None or reads_users_data(labels_from)):
            self._store.population.note_clear_read(
                "Export of pairs labelled from the users' true edges (a step outside skldp)",
                "edges", self.node_keys[distinct(self.pairs)])

    def concat(self, *others):
        """The pairs of ``self`` followed by those of ``others``, over the same graph.

        E.g. the training and validation pairs of :func:`random_edge_split`, to
        fit a link predictor whose ``validation`` names the latter.

        Parameters
        ----------
        *others : PairData
            Pairs over the same graph (the same node store).

        Returns
        -------
        PairData
        """
        for o in others:
            if not isinstance(o, PairData) or o._store is not self._store:
                raise ValueError("PairData.concat joins pairs over the same graph only (e.g. "
                                 "those of one random_edge_split).")
        # labels read from one origin stay so; a mix is of unknown origin
        same = all(o._labels() == self._labels() for o in others)
        return PairData._from_pairs(self._store,
                                    np.concatenate([self.pairs] + [o.pairs for o in others]),
                                    self._labels() if same else None)

    # ----------------------------------------------------------- array protocol
    @property
    def rows(self):
        return distinct(self.pairs)

    @property
    def shape(self):
        return (len(self.pairs), self._store.shape[1])

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, key):
        if isinstance(key, tuple):  # sklearn's _safe_indexing calls X[idx, ...]
            if len(key) == 2 and key[1] is Ellipsis:
                key = key[0]
            else:
                raise IndexError(
                    "PairData supports row (pair) indexing only. Tools that select or set "
                    "columns (a ColumnTransformer, sklearn.inspection.partial_dependence) "
                    "cannot take it: apply them to an array of the pairs' features "
                    "(np.asarray(P), or of the output of the graph steps).")
        if isinstance(key, numbers.Integral):
            key = [key]
        if not isinstance(key, slice):
            key = np.asarray(key)
            if key.dtype == bool and key.shape != (len(self.pairs),):
                raise IndexError(f"boolean index of length {len(key)} does not match "
                                 f"{len(self.pairs)} pairs.")
            if key.size == 0:  # P[[]]: np.asarray([]) is float; no pair, as GraphData[[]]
                key = np.zeros(0, dtype=np.intp)
        return PairData._from_pairs(self._store, self.pairs[key], self._labels())

    def __array__(self, dtype=None, copy=None):
        # x_u * x_v leaves as a plain array: the users at both ends are read in the clear
        self._note_export(_EXPORT, self.rows)
        out = hadamard_features(self.features, self.pairs)
        return out if dtype is None else out.astype(dtype, copy=False)

    def __repr__(self):
        A = self._store.adjacency
        edges = "unknown graph" if A is None else f"{A.nnz} directed edges"
        return (f"PairData({len(self.pairs)} node pairs over {self.n_nodes} nodes, "
                f"{self.shape[1]} features, {edges})")

    # ------------------------------------------------------------ graph views
    @property
    def node_ids(self):
        """Ids of the two endpoints of each pair, shape (n_pairs, 2)."""
        return self._store.node_ids[self.pairs]

    @property
    def graph(self):
        """The node graph the pairs live on, as a view of all its nodes."""
        return self.full()

    def _rebase(self, full):
        """The same pairs over the graph of ``full`` (hook used by graph transformers)."""
        if full.n_nodes != self.n_nodes:
            raise ValueError(f"cannot move {len(self)} pairs over {self.n_nodes} nodes onto "
                             f"a graph of {full.n_nodes} nodes.")
        return PairData._from_pairs(full._store, self.pairs, self._labels())

    def with_features(self, features, feature_names=None, *, source="server"):
        """The same pairs over a graph holding new node ``features``."""
        return self._rebase(self.full().with_features(features, feature_names, source=source))

    def with_adjacency(self, adjacency, *, source="server"):
        """The same pairs over a graph with a new adjacency."""
        return self._rebase(self.full().with_adjacency(adjacency, source=source))

    def to_pandas(self):
        """The pairs as a DataFrame of endpoint node ids (columns ``u``, ``v``).

        Like ``np.asarray(P)``, it hands the pairs to code that records nothing: pairs
        labelled from the users' true edges over collected edges charge the users at
        both ends a read of their edges in the clear (epsilon inf).
        """
        import pandas as pd
        self._note_pairs_export()
        ids = self.node_ids
        return pd.DataFrame({"u": ids[:, 0], "v": ids[:, 1]})


def _check_pairs(pairs, n_nodes):
    P = np.asarray(pairs)
    if P.ndim != 2 or P.shape[1] != 2:
        raise ValueError(f"pairs must have shape (n_pairs, 2), got {P.shape}.")
    if P.size and not np.issubdtype(P.dtype, np.integer):
        if not (np.issubdtype(P.dtype, np.floating) and np.all(P == np.round(P))):
            raise TypeError(f"pairs must hold integer node positions, got dtype {P.dtype}.")
    # before the cast, which would wrap inf or a huge position to another number
    bad = (P < 0) | (P >= n_nodes)
    if bad.any():
        i = np.argwhere(bad)[0]
        raise ValueError(f"pairs refer to unknown node position {P[i[0], i[1]]} (pair {i[0]}); "
                         f"the graph has {n_nodes} nodes (positions 0..{n_nodes - 1}).")
    P = P.astype(np.intp, copy=False)
    loops = P[:, 0] == P[:, 1]
    if loops.any():
        raise ValueError(f"pairs contain {np.count_nonzero(loops)} self pair(s) (u == v), e.g. "
                         f"pair {np.flatnonzero(loops)[0]}; link prediction is over distinct "
                         "nodes.")
    return P


def hadamard_features(Z, pairs):
    """Edge features ``Z[u] * Z[v]`` of each pair (dense ndarray; Z dense or sparse)."""
    u, v = pairs[:, 0], pairs[:, 1]
    if sp.issparse(Z):
        Z = sp.csr_matrix(Z)
        return np.asarray(Z[u].multiply(Z[v]).toarray())
    Z = np.asarray(Z)
    return Z[u] * Z[v]


# ------------------------------------------------------------------ sampling
def _upper_edges(A):
    """Undirected edges (i < j) of a symmetric adjacency, self loops dropped."""
    U = sp.triu(sp.csr_matrix(A), k=1).tocoo()
    order = np.lexsort((U.col, U.row))
    return np.stack([U.row[order], U.col[order]], axis=1).astype(np.int64)


# Pair lookups through a bitmap of the n x n codes up to this size (about 23,000
# nodes); beyond it, a binary search in the sorted codes (20x slower per pair)
_EDGE_BITMAP_BYTES = 1 << 26


def edge_codes(A):
    """Sorted codes ``i * n + j`` of the edges ``i < j`` of ``A`` (its stored entries above
    the diagonal, any weight), int64."""
    edges = _upper_edges(A)
    return edges[:, 0] * A.shape[0] + edges[:, 1]   # sorted: edges in row, column order


def edge_lookup(codes, n):
    """``is_edge(c)``: whether pairs coded ``c = i * n + j`` (``i < j``) are among the
    sorted ``codes`` (:func:`edge_codes`); takes and returns arrays."""
    if n * n <= 8 * _EDGE_BITMAP_BYTES:
        bits = np.zeros(-(-n * n // 8), dtype=np.uint8)
        np.bitwise_or.at(bits, codes >> 3, (1 << (codes & 7)).astype(np.uint8))
        return lambda c: ((bits[c >> 3] >> (c & 7).astype(np.uint8)) & 1).astype(bool)
    return lambda c: sorted_lookup(codes, c)[1]


def sample_non_edges(A, n_samples, random_state=None):
    """Sample distinct node pairs ``(i < j)`` that are not edges of an undirected graph.

    Vectorised: small graphs enumerate the complement of ``A`` and draw
    without replacement; large ones draw batches of random pairs and reject
    edges, self pairs and duplicates.

    Parameters
    ----------
    A : GraphData, sparse matrix or array-like of shape (n, n)
        The graph: a :class:`~skldp.GraphData` (its adjacency, all nodes), or
        a square adjacency. It must be undirected: every stored entry (any
        weight) is an edge, and ``A[i, j]`` is stored iff ``A[j, i]`` is. A
        GraphData of the users' true edges is a read of them, charged as in
        :func:`random_edge_split` once their edges are collected: also when
        the call is refused for what the edges are (a directed graph, too
        few non-edges), not when refused for its arguments.
    n_samples : int
        Number of non-edges to return.
    random_state : int, RandomState or None
        A numpy ``Generator`` is refused (``ValueError``).

    Returns
    -------
    pairs : ndarray of shape (n_samples, 2)
        Node positions with ``pairs[:, 0] < pairs[:, 1]``, in random order.

    Raises
    ------
    ValueError
        If ``A`` is not square, a GraphData has no adjacency, the graph is
        directed (an entry stored on one side of the diagonal only, e.g. an
        edge list stored once; symmetrise it first with ``A.maximum(A.T)``),
        ``n_samples`` is negative, or the graph has fewer than ``n_samples``
        non-edges.
    """
    if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral) \
            or n_samples < 0:
        raise ValueError(f"n_samples must be an integer >= 0, got {n_samples!r}.")
    random_state = _split_rng(random_state, "sample_non_edges")   # before the read
    if isinstance(A, GraphData):
        n = A.require_adjacency("sample_non_edges").shape[0]
        if n_samples > n * (n - 1) // 2:   # more than all node pairs, whatever the edges
            raise ValueError(f"asked for {n_samples} non-edges but a graph of {n} nodes has "
                             f"only {n * (n - 1) // 2} node pairs.")
        # The checks above read no edge: a refusal there is free. Those below do (whether
        # the graph is undirected, how many non-edges it has): the read is charged first.
        A._note_true_graph_read("skldp.model_selection.sample_non_edges")
    return _sample_non_edges(_undirected_adjacency(A), int(n_samples), random_state)


def _undirected_adjacency(A):
    """``A`` (a GraphData or a matrix) as a canonical CSR matrix, refused unless square
    with a symmetric sparsity pattern: the sampler reads the upper triangle only. A
    GraphData's read is charged by the caller, before."""
    if isinstance(A, GraphData):
        G = A
        A = G.require_adjacency("sample_non_edges")
        if G.is_symmetric():   # cached on the graph: no transpose here
            return A
    elif not sp.issparse(A):
        A = np.asarray(A)
        if A.ndim != 2:
            raise ValueError(f"sample_non_edges needs a square adjacency matrix, got an "
                             f"array of shape {A.shape}.")
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"sample_non_edges needs a square adjacency matrix, got shape "
                         f"{A.shape}.")
    A = sp.csr_matrix(A)
    if not A.has_canonical_format:   # sorted, no duplicates; the caller's matrix is kept
        A = A.copy()
        A.sum_duplicates()
    # the pattern only: weights may differ both ways, a missing reverse entry may not
    pattern = sp.csr_matrix((np.ones(A.nnz, dtype=np.int8), A.indices, A.indptr),
                            shape=A.shape)
    if not _is_symmetric(pattern):
        raise ValueError("sample_non_edges needs an undirected graph, but the adjacency "
                         "stores some edges on one side of the diagonal only (a directed "
                         "graph, or an edge list stored once). Symmetrise it first, e.g. "
                         "A.maximum(A.T).")
    return A


def _sample_non_edges(A, n_samples, random_state):
    """:func:`sample_non_edges` on a symmetric (checked) adjacency."""
    rng = check_random_state(random_state)
    n = A.shape[0]
    codes = edge_codes(A)
    total = n * (n - 1) // 2
    available = total - len(codes)
    if n_samples > available:
        raise ValueError(f"asked for {n_samples} non-edges but the graph has only "
                         f"{available} (n={n} nodes, {len(codes)} edges).")
    if n_samples == 0:
        return np.empty((0, 2), dtype=np.int64)
    is_edge = edge_lookup(codes, n)
    if total <= _ENUMERATE_MAX or n_samples > available // 2:
        if total > 4 * _ENUMERATE_MAX:
            raise ValueError(f"asked for {n_samples} of {available} non-edges; sampling more "
                             "than half of the non-edges of a large graph is not supported.")
        iu, ju = np.triu_indices(n, k=1)
        all_codes = iu.astype(np.int64) * n + ju
        free = all_codes[~is_edge(all_codes)]
        chosen = rng.choice(len(free), size=n_samples, replace=False)
        c = free[chosen]
        return np.stack([c // n, c % n], axis=1)
    out = np.empty(0, dtype=np.int64)
    while len(out) < n_samples:
        m = int(1.2 * (n_samples - len(out))) + 64
        i = rng.randint(0, n, size=m).astype(np.int64)
        j = rng.randint(0, n, size=m).astype(np.int64)
        keep = i != j
        c = np.minimum(i, j)[keep] * n + np.maximum(i, j)[keep]
        c = np.concatenate([out, c[~is_edge(c)]])
        _, first = np.unique(c, return_index=True)  # drop duplicates, keep draw order
        out = c[np.sort(first)]
    out = out[:n_samples]
    return np.stack([out // n, out % n], axis=1)


def random_edge_split(G, val_size=0.05, test_size=0.1, *, negative_ratio=1.0,
                      random_state=None):
    """Random train/validation/test split of undirected edges for link prediction.

    The undirected edges of ``G`` are shuffled and split (by default 85/5/10,
    the protocol of [Sajadmanesh & Gatica-Perez, arXiv 2020, §5] and [Li et al., CIKM 2024, §4.1]).
    Each part gets
    ``negative_ratio`` times as many sampled non-edges (node pairs that are no
    edge of the *full* graph, no self pairs, no duplicates, disjoint across
    parts). The validation and test edges are **removed from the adjacency**:
    all three returned :class:`PairData` live on the *training graph*, so
    propagation and GNN encoders never see a held-out edge.

    Parameters
    ----------
    G : GraphData
        An undirected graph (symmetric adjacency). Any view; all nodes are used.
    val_size, test_size : float, default=0.05, 0.1
        Fractions of the undirected edges held out (rounded down); the rest
        is for training.
    negative_ratio : float, default=1.0
        Non-edges sampled per positive edge in each part.
    random_state : int, RandomState or None
        Makes the split reproducible. A numpy ``Generator`` is refused (``ValueError``).

    Returns
    -------
    P_train, P_val, P_test : PairData
        Pairs over the training graph (``P_train.graph.adjacency`` lacks the
        held-out edges; features and node ids are shared with ``G``).
        Positives and negatives are shuffled together.
    y_train, y_val, y_test : ndarray of int
        1 for edges, 0 for sampled non-edges.

    Raises
    ------
    ValueError
        If the graph is unknown or directed (asymmetric adjacency), the
        fractions are invalid, or more non-edges are asked for than exist.

    Warns
    -----
    UserWarning
        If a positive ``val_size`` or ``test_size`` rounds down to no edge
        (a graph of few edges): that part holds no pairs.

    Notes
    -----
    The labels are the edges of ``G``, and the training graph keeps the
    origin of ``G``'s adjacency. Splitting the true graph reads it: when an
    edge mechanism (:class:`~skldp.mechanisms.EdgeRR`) collects these users'
    edges, before or after the split (in the pipeline too), they are charged
    a read of their edges in the clear. Split the mechanism's output instead
    (``random_edge_split(EdgeRR(...).fit_transform(G))``) to label the pairs
    from the collected graph: nothing more is charged.

    References
    ----------
    S. Sajadmanesh, D. Gatica-Perez. When Differential Privacy Meets Graph
    Neural Networks. arXiv:2006.05535, 2020:
    §5 "Experiment setup" (85/5/10). Z. Li et al. Privacy-Preserving Graph
    Embedding based on Local Differential Privacy. CIKM 2024: §4.1 "Dataset" (same number
    of non-existing links in each group).

    Examples
    --------
    >>> from skldp.datasets import load_cora
    >>> from skldp.model_selection import random_edge_split
    >>> G = load_cora().data
    >>> P_tr, P_va, P_te, y_tr, y_va, y_te = random_edge_split(G, random_state=0)
    >>> len(P_te), int(y_te.sum())
    (1054, 527)
    >>> P_tr.graph.adjacency.nnz == 2 * int(y_tr.sum())
    True
    """
    if not isinstance(G, GraphData):
        raise TypeError(f"random_edge_split needs a skldp.GraphData, got {type(G).__name__}.")
    A = G.require_symmetric("random_edge_split")
    for name, v in (("val_size", val_size), ("test_size", test_size),
                    ("negative_ratio", negative_ratio)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(v) \
                or v < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}.")
    if val_size + test_size >= 1:
        raise ValueError(f"val_size + test_size must be < 1, got {val_size + test_size}.")
    rng = _split_rng(random_state, "random_edge_split")
    # after the checks on the arguments: a refused call reads nothing. (The refusals
    # below depend on the edges, so they come after the charged read.)
    G._note_true_graph_read("skldp.model_selection.random_edge_split")
    edges = _upper_edges(A)
    m = len(edges)
    if m == 0:
        raise ValueError("the graph has no edges to split.")
    edges = edges[rng.permutation(m)]
    n_val, n_test = int(np.floor(val_size * m)), int(np.floor(test_size * m))
    n_train = m - n_val - n_test
    parts = np.split(edges, [n_train, n_train + n_val])
    n_neg = [int(round(negative_ratio * len(p))) for p in parts]
    neg = _sample_non_edges(A, sum(n_neg), rng)   # A is symmetric (checked above)
    neg_parts = np.split(neg, np.cumsum(n_neg)[:2])

    # (after the checks: a refused split does not warn as well)
    empty = [f"{name}={size!r} gives no {part} edge"
             for name, size, part, k in (("val_size", val_size, "validation", n_val),
                                         ("test_size", test_size, "test", n_test))
             if size > 0 and k == 0]
    if empty:   # rounded down to nothing: an evaluation on it would score no pair
        warnings.warn(f"random_edge_split: the graph has {m} undirected edge"
                      f"{'s' if m != 1 else ''}, so {' and '.join(empty)} (the parts are "
                      "rounded down): those parts hold no pairs. Use larger fractions or a "
                      "larger graph.", UserWarning, stacklevel=2)

    held = np.concatenate(parts[1:])
    if len(held):
        R = sp.csr_matrix((np.ones(2 * len(held), dtype=np.float32),
                           (np.r_[held[:, 0], held[:, 1]], np.r_[held[:, 1], held[:, 0]])),
                          shape=A.shape)
        A_train = sp.csr_matrix(A - A.multiply(R))
        A_train.eliminate_zeros()
    else:
        A_train = A
    # The evaluation protocol: every user's own list without the held-out pairs. The
    # training graph keeps the origin of G's adjacency: the users' own lists stay theirs
    # (an edge mechanism may collect them), reports stay reports (not collected again).
    G_train = G.full()._with_new_adjacency(A_train, source="users")
    labels_from = G._store.adjacency_origin
    G_train._store.adjacency_origin = labels_from

    out_P, out_y = [], []
    for pos, ng in zip(parts, neg_parts, strict=True):
        pairs = np.concatenate([pos, ng]).astype(np.intp)
        y = np.r_[np.ones(len(pos), dtype=np.int64), np.zeros(len(ng), dtype=np.int64)]
        order = rng.permutation(len(y))
        # the labels are G's edges: what a link predictor fitted on them reads
        out_P.append(PairData._from_pairs(G_train._store, pairs[order], labels_from))
        out_y.append(y[order])
    return (*out_P, *out_y)


def _types(values):
    """The set of the types of an object array's values (built in C), else ``None``."""
    return set(map(type, values.ravel())) if values.dtype == object else None


def _holds_bools(values, types=None):
    """Whether an array is boolean or holds a Python or numpy bool among objects
    (``types``: its :func:`_types`, if known)."""
    if values.dtype == bool:
        return True
    if values.dtype != object:
        return False
    return any(issubclass(t, (bool, np.bool_)) for t in (types or _types(values)))


def _from_objects(objects, types, source):
    """``np.asarray(source)`` for a list ``source`` whose object array is ``objects`` (of
    value ``types``): Python integers are cast from it rather than read again."""
    if types == {int}:
        try:
            return objects.astype(np.int64)
        except OverflowError:   # beyond int64: numpy's own choice below
            pass
    return np.asarray(source)


# Integer ids spanning at most this many values per node (and at most _TABLE_MAX values)
# are looked up in a table, one gather; wider ones (hashed ids) by a binary search.
_TABLE_SPAN_PER_NODE = 8
_TABLE_MAX = 1 << 26   # int32 entries: 256 MiB


def _lookup(ids, values):
    """Positions of ``values`` among the unique ``ids`` and whether each was found.

    Raises ``TypeError`` when the two cannot be compared (ids of several types).
    """
    if ids.dtype.kind in "iu" and values.dtype.kind == ids.dtype.kind and len(values):
        # 64 bits of the ids' signedness: exact, and ids - lo cannot wrap (int8 would)
        dtype = np.int64 if ids.dtype.kind == "i" else np.uint64
        lo, hi = ids.min().astype(dtype), ids.max().astype(dtype)
        span = int(hi) - int(lo) + 1
        if span <= min(_TABLE_SPAN_PER_NODE * len(ids) + 1024, _TABLE_MAX):
            table = np.full(span, -1, dtype=np.int32)
            table[(ids.astype(dtype) - lo).astype(np.intp)] = np.arange(len(ids))
            values = values.astype(dtype, copy=False)
            inside = (values >= lo) & (values <= hi)   # no other value is a node
            pos = np.full(len(values), -1, dtype=np.intp)
            pos[inside] = table[(values[inside] - lo).astype(np.intp)]
            found = pos >= 0
            return np.where(found, pos, 0), found
    order = np.argsort(ids, kind="stable")
    pos, found = sorted_lookup(ids[order], values)
    return order[pos], np.asarray(found, dtype=bool)
