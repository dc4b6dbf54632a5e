"""The data contract shared by every graph-aware step: :class:`GraphData`."""

import numbers
import sys
import uuid
from collections import OrderedDict

import numpy as np
import scipy.sparse as sp

from .device._random import ids_to_keys
from .population import Population

__all__ = ["GraphData"]

_MEMO_SIZE = 8            # whole-graph results kept per graph ...
_MEMO_BYTES = 1 << 30     # ... and at most this many bytes of them (the newest is always kept)

#: Origin of a store's features or adjacency: the users' raw data, after no on-device step.
RAW = ("raw", ())
_KEEP = object()   # "this part of the store is unchanged"


class _GraphStore:
    """Whole-graph storage shared by all views of one attributed graph."""

    __slots__ = ("features", "adjacency", "node_ids", "feature_names", "token",
                 "_memo", "_node_keys", "_symmetric", "_one_sided", "_finite",
                 "population", "feature_origin", "adjacency_origin")

    def __init__(self, features, adjacency, node_ids, feature_names, population,
                 feature_origin=RAW, adjacency_origin=RAW):
        self.features = features
        self.adjacency = adjacency
        self.node_ids = node_ids
        self.feature_names = feature_names
        self.token = uuid.uuid4().hex
        self._memo = OrderedDict()
        self._node_keys = None
        # Cached whole-graph checks (None: not computed yet).
        self._symmetric = None
        self._one_sided = None
        self._finite = None
        # The simulated devices of these users (the privacy boundary), shared by every
        # graph derived from the same users, and where the features and the adjacency
        # come from: the users' raw data after public on-device steps, or the server.
        self.population = population
        self.feature_origin = feature_origin
        self.adjacency_origin = adjacency_origin

    def derive(self, features=_KEEP, adjacency=_KEEP, feature_names=_KEEP, **origins):
        """A new store of the same users, with some parts replaced (caches kept where valid)."""
        new = _GraphStore(self.features if features is _KEEP else features,
                          self.adjacency if adjacency is _KEEP else adjacency,
                          self.node_ids,
                          self.feature_names if feature_names is _KEEP else feature_names,
                          self.population, self.feature_origin, self.adjacency_origin)
        new._node_keys = self._node_keys
        if adjacency is _KEEP:
            new._symmetric, new._one_sided = self._symmetric, self._one_sided
        if features is _KEEP:
            new._finite = self._finite
        for name, origin in origins.items():
            setattr(new, name, origin)
        return new

    # The memo holds derived whole-graph results; it is cheap to rebuild, so
    # it never travels through pickle (joblib workers start empty).
    def __getstate__(self):
        return {s: getattr(self, s) for s in self.__slots__ if s != "_memo"}

    def __setstate__(self, state):
        for s in ("_one_sided", "_finite"):  # stores pickled before these caches existed
            setattr(self, s, None)
        self.population, self.feature_origin, self.adjacency_origin = Population(), RAW, RAW
        for k, v in state.items():
            if k != "_population":          # stores pickled before the population existed
                setattr(self, k, v)
        self._memo = OrderedDict()


def _as_features(features):
    if sp.issparse(features):
        X = sp.csr_matrix(features)
        if not np.issubdtype(X.dtype, np.floating):
            X = X.astype(np.float64)
        X.sum_duplicates()
        return X
    X = np.asarray(features)
    if X.dtype == object or not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
        raise TypeError(f"features must be numeric, got dtype {X.dtype}.")
    if X.ndim == 1:
        raise ValueError("features must be 2-D (n_nodes, n_features); got a 1-D array. "
                         "Reshape with features.reshape(-1, 1) for a single feature.")
    if X.ndim != 2:
        raise ValueError(f"features must be 2-D, got {X.ndim} dimensions.")
    if not np.issubdtype(X.dtype, np.floating):
        X = X.astype(np.float64)
    return X


def _as_adjacency(adjacency, n_nodes, node_ids):
    if adjacency is None:
        return None
    # A networkx graph exists only if networkx was imported: checking sys.modules
    # spares every other caller networkx's import (about 0.2 s).
    nx = sys.modules.get("networkx")
    if nx is not None and isinstance(adjacency, nx.Graph):
        if node_ids is None:
            raise ValueError("A networkx graph needs node_ids to fix the order of its "
                             "nodes against the feature rows.")
        if set(adjacency.nodes) != set(node_ids.tolist()):
            raise ValueError("The networkx graph's nodes differ from node_ids.")
        adjacency = nx.to_scipy_sparse_array(adjacency, nodelist=list(node_ids),
                                             format="csr")
    if sp.issparse(adjacency):
        A = sp.csr_matrix(adjacency, dtype=np.float32)
    else:
        A = np.asarray(adjacency)
        if A.ndim != 2:
            raise ValueError(f"adjacency must be 2-D, got {A.ndim} dimensions.")
        A = sp.csr_matrix(A, dtype=np.float32)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"adjacency must be square, got shape {A.shape}.")
    if A.shape[0] != n_nodes:
        raise ValueError(f"adjacency has {A.shape[0]} nodes but features have {n_nodes} rows.")
    A.sum_duplicates()
    A.eliminate_zeros()
    # min and max propagate NaN and show +-inf: no boolean temporary of the size of the data
    lo, hi = (A.data.min(), A.data.max()) if A.nnz else (0.0, 0.0)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError("adjacency contains NaN or infinite weights.")
    if lo < 0:
        raise ValueError("adjacency contains negative weights.")
    A.sort_indices()
    return A


class GraphData:
    """A row view over one attributed graph, usable where scikit-learn expects ``X``.

    ``GraphData`` holds the features of *all* nodes, the (optional) adjacency
    and the node ids in one shared store, plus the positions (``rows``) of the
    nodes this view selects. Indexing returns another view of the same store
    without copying, so that ``fit(G[train], y[train])`` and
    ``predict(G[test])`` both see the whole graph while only the selected rows
    are fitted or predicted. Plain scikit-learn steps see ``np.asarray(G)``,
    the features of the selected rows.

    Parameters
    ----------
    features : array-like or sparse matrix of shape (n_nodes, n_features)
        Node features. Scipy sparse arrays and matrices stay sparse (CSR).
    adjacency : sparse matrix, ndarray, networkx.Graph or None, default=None
        Adjacency of shape (n_nodes, n_nodes). ``None`` means the server does
        not know the graph (e.g. it is collected with edge LDP later). A
        networkx graph is converted in the order given by ``node_ids``.
    node_ids : array-like of shape (n_nodes,), default=None
        Unique, stable user identifiers. Local DP mechanisms key each user's
        report on its id, so a user answers once whatever rows are selected.
        Defaults to ``0..n_nodes-1``.
    feature_names : array-like of str of shape (n_features,), default=None
        Names of the feature columns.
    budget : float or None, default=None
        Per-user cap on the total epsilon the users may spend (local
        collections plus central trainings); a collection that would exceed it
        raises :class:`~skldp.population.BudgetExceededError` before anything
        is sent. ``None``: no cap.
    population : GraphData, Population or None, default=None
        The simulated devices these users are. ``None`` makes new ones (a new
        ledger). Pass the GraphData of the same users (e.g. their updated
        data) to share its ledger and budget: a mechanism fitted on that
        GraphData may then transform this one, and every user whose data
        changed is charged again.

    Attributes
    ----------
    rows : ndarray of int
        Positions of the selected nodes in the whole graph.
    shape : tuple
        ``(len(rows), n_features)``, as for the matrix scikit-learn sees.
    population : Population
        The simulated devices of these users (the privacy boundary).
    ledger : Ledger
        What these users sent (``population.ledger``).

    Notes
    -----
    **Indexing** selects rows of the view (not of the whole graph): ``G[i]``
    (a one-row view), ``G[[i, j]]``, ``G[mask]`` (a boolean array of the
    view's length), ``G[a:b:c]`` and scikit-learn's ``G[idx, ...]``. Negative
    positions count from the end of the view, as in numpy. An empty index
    (``G[[]]``) gives an empty view (0 rows of the same graph), as numpy and
    scikit-learn's ``_safe_indexing`` do for empty index arrays. A position
    outside the view raises an ``IndexError`` that names the view's size;
    non-integer or multi-dimensional indices raise an ``IndexError`` too.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skldp import GraphData
    >>> A = sp.csr_array(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
    >>> G = GraphData(np.eye(3), A)
    >>> G[[0, 2]].shape
    (2, 3)
    >>> G[[0, 2]].n_nodes
    3
    """

    ndim = 2
    __array_priority__ = 10

    def __init__(self, features, adjacency=None, *, node_ids=None, feature_names=None,
                 budget=None, population=None):
        X = _as_features(features)
        n = X.shape[0]
        if n == 0:
            raise ValueError("GraphData needs at least one node; got an empty feature matrix.")
        if node_ids is None:
            ids = np.arange(n)
        else:
            ids = np.asarray(node_ids)
            if ids.ndim != 1 or len(ids) != n:
                raise ValueError(f"node_ids must have length {n} (one per feature row), "
                                 f"got shape {ids.shape}.")
            if len(np.unique(ids)) != n:
                raise ValueError("node_ids must be unique.")
        A = _as_adjacency(adjacency, n, ids if node_ids is not None else None)
        if feature_names is not None:
            feature_names = _as_feature_names(feature_names, X.shape[1])
        if population is None:
            population = Population(budget)
        else:
            population = population.population if isinstance(population, GraphData) \
                else population
            if not isinstance(population, Population):
                raise TypeError("population must be a GraphData or a Population, got "
                                f"{type(population).__name__}.")
            if budget is not None:
                population.set_budget(budget)
        self._store = _GraphStore(X, A, ids, feature_names, population)
        self.rows = np.arange(n)

    @classmethod
    def _from_store(cls, store, rows):
        obj = cls.__new__(cls)
        obj._store = store
        obj.rows = rows
        return obj

    def _replace(self, rows):
        return GraphData._from_store(self._store, np.asarray(rows, dtype=np.intp))

    # ----------------------------------------------------------- array protocol
    @property
    def shape(self):
        return (len(self.rows), self._store.features.shape[1])

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, key):
        if isinstance(key, tuple):  # sklearn's _safe_indexing calls X[idx, ...]
            if len(key) == 2 and key[1] is Ellipsis:
                key = key[0]
            else:
                raise IndexError("GraphData supports row (node) indexing only.")
        if isinstance(key, slice):
            return self._replace(self.rows[key])
        return self._replace(self.rows[_row_positions(key, len(self.rows))])

    def __array__(self, dtype=None, copy=None):
        X = self._store.features[self.rows]
        out = X.toarray() if sp.issparse(X) else X
        return out if dtype is None else out.astype(dtype, copy=False)

    def __repr__(self):
        A = self._store.adjacency
        edges = "unknown graph" if A is None else f"{A.nnz} directed edges"
        return (f"GraphData(view of {len(self.rows)} of {self.n_nodes} nodes, "
                f"{self.shape[1]} features, {edges})")

    # ------------------------------------------------------------ whole graph
    @property
    def n_nodes(self):
        """Number of nodes in the whole graph (not only the view)."""
        return self._store.features.shape[0]

    @property
    def features(self):
        """Features of all nodes (dense ndarray or CSR matrix), shared, read-only by contract."""
        return self._store.features

    @property
    def adjacency(self):
        """CSR adjacency of the whole graph, or ``None`` when the graph is unknown."""
        return self._store.adjacency

    @property
    def node_ids(self):
        """Ids of the selected nodes."""
        return self._store.node_ids[self.rows]

    @property
    def all_node_ids(self):
        """Ids of all nodes of the graph."""
        return self._store.node_ids

    @property
    def feature_names(self):
        return self._store.feature_names

    @property
    def token(self):
        """Identifier of the shared store: equal tokens mean the same whole graph."""
        return self._store.token

    @property
    def population(self):
        """The simulated devices of these users: the privacy boundary (Design page, "Local
        DP is a protocol").

        Every view and every graph derived from this one (``with_features``,
        ``with_adjacency``, a step's output) shares it. A local DP mechanism
        fitted on one population refuses data of another: build the GraphData
        of the same users with ``population=G`` to say they are the same.
        """
        return self._store.population

    @property
    def ledger(self):
        """What these users sent: the :class:`~skldp.population.Ledger` of the population."""
        return self._store.population.ledger

    def new_simulation(self, budget=None):
        """The same data held by new simulated devices: an empty ledger, nothing answered.

        For repeated experiments on one dataset, each a separate deployment.
        Returns a view of the same rows; the arrays are shared, not copied.
        """
        st = self._store
        new = _GraphStore(st.features, st.adjacency, st.node_ids, st.feature_names,
                          Population(budget), st.feature_origin, st.adjacency_origin)
        for name in ("_node_keys", "_symmetric", "_one_sided", "_finite"):
            setattr(new, name, getattr(st, name))
        return GraphData._from_store(new, self.rows)

    @property
    def node_keys(self):
        """uint64 keys of all nodes, derived from node ids (for per-user randomness)."""
        st = self._store
        if st._node_keys is None:
            st._node_keys = _ids_to_keys(st.node_ids)
        return st._node_keys

    def is_symmetric(self):
        """Whether the adjacency is symmetric (cached). ``False`` when it is unknown."""
        st = self._store
        if st.adjacency is None:
            return False
        if st._symmetric is None:
            A = st.adjacency
            st._symmetric = (A != A.T).nnz == 0
        return st._symmetric

    def is_one_sided(self):
        """Whether every edge lies on one side of the diagonal (cached).

        True for a directed adjacency whose off-diagonal entries are all above
        the diagonal, or all below it: typically an undirected edge list
        stored once (``i < j``). ``False`` for symmetric, unknown or edgeless
        graphs (self loops do not count).
        """
        st = self._store
        if st.adjacency is None:
            return False
        if st._one_sided is None:
            A = st.adjacency
            rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
            upper = np.count_nonzero(A.indices > rows)
            lower = np.count_nonzero(A.indices < rows)
            st._one_sided = (upper == 0) != (lower == 0)
        return st._one_sided

    def require_finite_features(self, step="This step"):
        """Return the features of all nodes, raising if any is NaN or infinite.

        The check covers the whole graph (graph steps mix every node's
        features) and is done once per graph: the result is cached on the
        shared store, as for :meth:`is_symmetric`.
        """
        st = self._store
        if not st._finite:
            from .utils import validation
            validation.check_finite_features(st.features, name=f"the features given to {step}")
            st._finite = True
        return st.features

    def require_adjacency(self, step="This step"):
        """Return the adjacency or raise a clear error if the graph is unknown."""
        if self._store.adjacency is None:
            raise ValueError(f"{step} needs the graph, but this GraphData has no adjacency "
                             "(adjacency=None). Collect it first, e.g. with EdgeRR.")
        return self._store.adjacency

    def require_symmetric(self, step="This step"):
        """Return the adjacency, raising if it is unknown or not symmetric."""
        A = self.require_adjacency(step)
        if not self.is_symmetric():
            raise ValueError(f"{step} needs an undirected graph, but the adjacency is not "
                             "symmetric. Symmetrise it first, e.g. A.maximum(A.T).")
        return A

    # ----------------------------------------------------------- derived views
    def with_features(self, features, feature_names=None):
        """Return the same rows over a new store holding ``features`` for all nodes.

        The adjacency, node ids and population are shared, not copied. Called
        by you, it means that the same users now hold other data: a mechanism
        fitted before charges every user whose row changed again.
        """
        X = _as_features(features)
        if X.shape[0] != self.n_nodes:
            raise ValueError(f"new features have {X.shape[0]} rows for {self.n_nodes} nodes.")
        if feature_names is not None:
            feature_names = _as_feature_names(feature_names, X.shape[1])
        new = self._store.derive(features=X, feature_names=feature_names)
        return GraphData._from_store(new, self.rows)

    def with_adjacency(self, adjacency):
        """Return the same rows over a new store whose adjacency is ``adjacency``."""
        A = _as_adjacency(adjacency, self.n_nodes, None)
        new = self._store.derive(adjacency=A)
        return GraphData._from_store(new, self.rows)

    def _with_feature_names(self, feature_names):
        """The same rows, features and graph under other column names (a new store)."""
        new = self._store.derive(
            feature_names=_as_feature_names(feature_names, self._store.features.shape[1]))
        return GraphData._from_store(new, self.rows)

    def full(self):
        """The view of all nodes of the graph."""
        return self._replace(np.arange(self.n_nodes))

    # -------------------------------------------------------------------- memo
    def memo_get(self, key):
        """Cached whole-graph result for ``key`` or ``None`` (see :meth:`memo_set`)."""
        memo = self._store._memo
        if key in memo:
            memo.move_to_end(key)
            return memo[key]
        return None

    def memo_set(self, key, value):
        """Cache a whole-graph result on the shared store (a small LRU, never on estimators)."""
        memo = self._store._memo
        memo[key] = value
        memo.move_to_end(key)
        # Dense reports of a large graph are big (0.8 GB for facebook): bound bytes too.
        while len(memo) > 1 and (len(memo) > _MEMO_SIZE or
                                 sum(_nbytes(v) for v in memo.values()) > _MEMO_BYTES):
            memo.popitem(last=False)
        return value

    # ------------------------------------------------------------------ export
    def to_pandas(self):
        """The selected rows as a :class:`pandas.DataFrame` indexed by node id."""
        import pandas as pd
        X = self._store.features[self.rows]
        names = self.feature_names
        cols = list(names) if names is not None else [f"x{i}" for i in range(self.shape[1])]
        index = pd.Index(self.node_ids, name="node_id")
        if sp.issparse(X):
            return pd.DataFrame.sparse.from_spmatrix(X, index=index, columns=cols)
        return pd.DataFrame(X, index=index, columns=cols)


def _as_feature_names(names, n_features):
    names = np.asarray(names, dtype=object)
    if names.shape != (n_features,):
        raise ValueError(f"feature_names must have length {n_features}, got {names.shape}.")
    return names


def _row_positions(key, n_rows):
    """Validate a row index (not a slice) of a view of ``n_rows`` rows -> int or bool array."""
    if isinstance(key, (bool, np.bool_)):
        raise IndexError("GraphData does not take a single boolean as an index; use a "
                         f"boolean mask of length {n_rows}.")
    if isinstance(key, numbers.Integral):
        key = [key]
    key = np.asarray(key)
    if key.dtype == bool:
        if key.shape != (n_rows,):
            raise IndexError(f"boolean index of length {key.shape[0] if key.ndim else 0} "
                             f"does not match {n_rows} rows.")
        return key
    if key.size == 0:  # G[[]]: np.asarray([]) is float; an empty view, as numpy gives
        return np.zeros(0, dtype=np.intp)
    if not np.issubdtype(key.dtype, np.integer):
        raise IndexError(f"GraphData row indices must be integers or booleans, got dtype "
                         f"{key.dtype}.")
    if key.ndim == 0:
        key = key.reshape(1)
    if key.ndim != 1:
        raise IndexError(f"GraphData takes a 1-D array of row positions, got shape {key.shape}.")
    bad = (key >= n_rows) | (key < -n_rows)
    if bad.any():
        raise IndexError(f"row index {key[bad][0]} is out of range for a view of {n_rows} rows "
                         f"(valid positions: {-n_rows}..{n_rows - 1}).")
    return key


def _nbytes(value):
    """Approximate memory held by a memo entry (features of a GraphData, or an array)."""
    if isinstance(value, GraphData):
        value = value.features
    if sp.issparse(value):
        return value.data.nbytes + value.indices.nbytes + value.indptr.nbytes
    return getattr(value, "nbytes", 0)


def _ids_to_keys(ids):
    """Stable uint64 key per node id (integers map to themselves; see
    :func:`skldp.device._random.ids_to_keys`, which the devices use too)."""
    return ids_to_keys(ids)
