"""The data contract shared by every graph-aware step: :class:`GraphData`."""

import contextlib
import decimal
import functools
import numbers
import sys
import threading
import uuid
import weakref
from collections import OrderedDict

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from .device._random import _as_id_array, _as_integers, _id_list, _id_sequence, ids_to_keys
from .exceptions import InvalidParameterError, PrivacyBudgetError
from .population._population import BudgetExceededError, Population
from .population._spec import step_kind
from .utils._arrays import (
    check_finite_features,
    check_float32_range,
    check_not_masked,
    check_sparse_structure,
    distinct,
    frame_column_names,
    member,
    sorted_lookup,
)
from .utils._hashing import content_hash

__all__ = ["GraphData", "refusal_is_read"]

_MEMO_SIZE = 8            # whole-graph results kept per graph ...
_MEMO_BYTES = 1 << 30     # ... and at most this many bytes of them (the newest is always kept)
_MEMO_LOCK = threading.Lock()   # searches in threads share a graph and its memo
_OPERATORS_SIZE = 6       # operators derived from one adjacency (normalised, on a device)


class _AdjacencyInfo:
    """What is known about one adjacency: its symmetry and the operators derived from it.

    Shared by every store that holds the same adjacency arrays: the views, the
    stores derived with new features (a mechanism's reports, a propagation's
    output) and a fresh ``GraphData(X, G.adjacency)`` on a graph's own matrix. So
    the symmetry check runs once per graph, and a normalised adjacency (or its copy
    on a GPU) is built once and reused by every step. It lives as long as a store
    holding it. The arrays are GraphData's own (``_as_adjacency`` copies a caller's
    matrix), read-only by contract: a caller editing its matrix cannot make this stale.
    """

    __slots__ = ("_roots", "signature", "symmetric", "one_sided", "unit_weights", "operators",
                 "lock", "warned", "__weakref__")

    def __init__(self, A):
        # weak references to the arrays owning the memory (views of them, as scipy
        # makes when it wraps a matrix again, describe the same adjacency)
        self._roots = tuple(weakref.ref(_root(a)) for a in (A.data, A.indices, A.indptr))
        self.signature = _signature(A)
        self.symmetric = None
        self.one_sided = None
        self.unit_weights = None   # every stored weight is 1 (None: not known yet)
        self.operators = OrderedDict()
        self.lock = threading.Lock()
        self.warned = set()   # the warnings about this graph already given (once each)

    def describes(self, A):
        arrays = (A.data, A.indices, A.indptr)
        return (_signature(A) == self.signature
                and all(r() is _root(a) for r, a in zip(self._roots, arrays, strict=True)))


def _root(a):
    """The array that owns the memory of ``a`` (``a`` itself or the base of a view)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _signature(A):
    """Where the CSR arrays of ``A`` lie in memory, their layout and the shape."""
    return tuple((a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str)
                 for a in (A.data, A.indices, A.indptr)) + (A.shape,)


# The ledger's names for features read through ``np.asarray(G)`` and ``G.to_pandas()``
# (no dots: a kind's last dotted part is its name in reports).
_EXPORT = "Array export of the features (np_asarray, a step outside skldp)"
_PANDAS_EXPORT = "DataFrame export of the features (GraphData_to_pandas, a step outside skldp)"

_INFOS = {}   # memory signature of an adjacency -> weakref to its _AdjacencyInfo
_INFOS_LOCK = threading.RLock()   # re-entrant: a collection may run `drop` inside


def _held_info(A):
    """The live :class:`_AdjacencyInfo` of the CSR arrays of ``A``, or ``None``: not
    ``None`` iff a store holds these very arrays (validated when it took them)."""
    with _INFOS_LOCK:
        ref = _INFOS.get(_signature(A))
        info = ref() if ref is not None else None
        return info if info is not None and info.describes(A) else None


def _adjacency_info(A):
    """The :class:`_AdjacencyInfo` of the CSR arrays of ``A`` (shared, created once)."""
    key = _signature(A)
    with _INFOS_LOCK:
        info = _held_info(A)
        if info is None:
            info = _AdjacencyInfo(A)

            def drop(r, key=key):
                with _INFOS_LOCK:
                    if _INFOS.get(key) is r:
                        del _INFOS[key]

            _INFOS[key] = weakref.ref(info, drop)
        return info

def _read_only_features(X):
    """``X`` with read-only arrays: a read-only view of a writeable array (the caller's
    array keeps its flags), or a new sparse matrix over such views."""
    if X is None:
        return X
    if sp.issparse(X):   # CSR (_as_features)
        if any(a.flags.writeable for a in (X.data, X.indices, X.indptr)):
            canonical = X.has_canonical_format
            X = type(X)((X.data.view(), X.indices.view(), X.indptr.view()), shape=X.shape,
                        copy=False)
            X.has_canonical_format = canonical
            for a in (X.data, X.indices, X.indptr):   # views, or the constructor's copies
                a.flags.writeable = False
        return X
    if X.flags.writeable:
        X = X.view()
        X.flags.writeable = False
    return X


#: Origin of a store's features or adjacency: the users' raw data, after no on-device step.
RAW = ("raw", ())
_SET_AS_PUBLIC = " as public data"   # how the origin of data set with source="public" ends
# ... and how it goes on when they were set once the users may have sent something (a ledger
# entry, or a copy cut off from its ledger, which cannot know)
_AFTER_REPORTS = " after the users had sent data"
_UNKNOWN = " where whether the users had sent data was unknown (a copy cut off from its ledger)"
_KEEP = object()   # "this part of the store is unchanged"


class _GraphStore:
    """Whole-graph storage shared by all views of one attributed graph."""

    __slots__ = ("_features", "_on_device", "adjacency", "node_ids", "feature_names", "token",
                 "_memo", "_node_keys", "_symmetric", "_one_sided", "_finite",
                 "population", "feature_origin", "adjacency_origin", "_info",
                 "feature_source", "adjacency_source")

    def __init__(self, features, adjacency, node_ids, feature_names, population,
                 feature_origin=RAW, adjacency_origin=RAW, on_device=None):
        # Features computed on an accelerator stay there (``_on_device``, a torch
        # tensor) for the next step on it; the host copy is made on first read.
        # Read-only: the graph is public structure computed once (its checks and
        # operators are cached), so an edit in place would leave them stale.
        self._features = _read_only_features(features)
        self._on_device = on_device
        if adjacency is not None:   # GraphData's own arrays (_as_adjacency copies the caller's)
            for a in (adjacency.data, adjacency.indices, adjacency.indptr):
                a.flags.writeable = False
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
        # Lineage: a random id of the features (the adjacency) set on a graph, kept by the
        # stores that keep them and by public on-device steps (``_mark_origin``). It tells a
        # mechanism saved without its secret whether it is given the data it saved reports
        # for, in a process that cannot ask the devices (pickled with the store).
        self.feature_source = uuid.uuid4().hex
        self.adjacency_source = uuid.uuid4().hex
        # The adjacency's shared checks and operators, registered now: it also marks
        # the arrays as a graph's own, which a fresh GraphData takes without a copy.
        self._info = None if adjacency is None else _adjacency_info(adjacency)

    @property
    def features(self):
        """The features of all nodes on the host (copied from the device on first read)."""
        if self._features is None:
            self._features = _read_only_features(self._on_device.cpu().numpy())
        return self._features

    @property
    def shape(self):
        """``(n_nodes, n_features)``, without copying features held on a device."""
        return tuple((self._on_device if self._features is None else self._features).shape)

    def on_device(self, device):
        """The features as a torch tensor on ``device`` when they are held there, else ``None``."""
        t = self._on_device
        if t is None or t.device.type != device.type:
            return None
        index = device.index
        if index is None and device.type == "cuda":   # "cuda": the current card
            import torch
            index = torch.cuda.current_device()
        return t if index is None or t.device.index == index else None

    def same(self, other, part):
        """Whether this store holds the very ``part`` ("features", "adjacency") of ``other``."""
        if part == "features":   # (compared where they are: no copy from a device)
            return self._features is other._features and self._on_device is other._on_device
        return getattr(self, part) is getattr(other, part)

    def derive(self, features=_KEEP, adjacency=_KEEP, feature_names=_KEEP, on_device=None,
               **origins):
        """A new store of the same users, with some parts replaced (caches kept where valid).

        ``features=None`` with ``on_device`` (a torch tensor): features held on a device.
        """
        keep = features is _KEEP
        new = _GraphStore(self._features if keep else features,
                          self.adjacency if adjacency is _KEEP else adjacency,
                          self.node_ids,
                          self.feature_names if feature_names is _KEEP else feature_names,
                          self.population, self.feature_origin, self.adjacency_origin,
                          on_device=self._on_device if keep else on_device)
        new._node_keys = self._node_keys
        if adjacency is _KEEP:
            new._symmetric, new._one_sided = self._symmetric, self._one_sided
            new._info = self._info
            new.adjacency_source = self.adjacency_source
        if features is _KEEP:
            new._finite = self._finite
            new.feature_source = self.feature_source
        for name, origin in origins.items():
            setattr(new, name, origin)
        return new

    def info(self):
        """The shared :class:`_AdjacencyInfo` of the adjacency (``None`` without one)."""
        if self._info is None and self.adjacency is not None:
            self._info = _adjacency_info(self.adjacency)
            if self._symmetric and self._info.symmetric is None:   # e.g. after unpickling
                self._info.symmetric = True
        return self._info

    # The memo holds derived whole-graph results, the adjacency info operators
    # derived from the graph; both are cheap to rebuild, so they never travel
    # through pickle (joblib workers start empty).
    # Features held on a device travel as their host copy.
    def __getstate__(self):
        state = {s: getattr(self, s) for s in self.__slots__
                 if s not in ("_memo", "_info", "_features", "_on_device")}
        state["features"] = self.features
        return state

    def __setstate__(self, state):
        # stores pickled before these caches (and the lineage) existed: a lineage of their
        # own from now on (None would read as a mechanism saved before lineage, unchecked)
        self._one_sided = self._finite = None
        self.feature_source, self.adjacency_source = uuid.uuid4().hex, uuid.uuid4().hex
        self.population, self.feature_origin, self.adjacency_origin = Population(), RAW, RAW
        self._on_device = None
        for k, v in state.items():
            if k != "_population":          # stores pickled before the population existed
                setattr(self, "_features" if k == "features" else k, v)
        # read-only again, in place: stores unpickled together share the arrays, and a
        # view of them would be other features (``same``) for the steps after a mechanism
        arrays = [] if self._features is None else \
            [self._features] if not sp.issparse(self._features) else \
            [self._features.data, self._features.indices, self._features.indptr]
        if self.adjacency is not None:
            arrays += [self.adjacency.data, self.adjacency.indices, self.adjacency.indptr]
        for a in arrays:
            a.flags.writeable = False
        self._memo = OrderedDict()
        self._info = None
        self.info()   # registers the arrays (see __init__)


def _a_weight(v):
    """Whether ``v`` (an entry of an object adjacency) is a real number (a bool, a
    Decimal): not text, bytes, a complex number, None or pandas' NA."""
    if not isinstance(v, (numbers.Real, np.bool_, decimal.Decimal)):
        return False
    try:
        float(v)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


def _as_features(features):
    if sp.issparse(features):
        check_sparse_structure(features, "features", "are")   # before scipy reads them
        if features.dtype.kind in "biu" and features.dtype.itemsize < 8:
            features = features.astype(np.float64)   # (duplicates summed without overflow)
        X = sp.csr_matrix(features)
        _check_real(X.dtype)
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        if not X.has_canonical_format:   # sum_duplicates edits in place: not the caller's
            X = _private(X, features)
            X.sum_duplicates()
        return X
    _check_numeric_columns(features)
    check_not_masked(features)
    try:
        X = np.asarray(features)
    except ValueError as e:   # numpy's "inhomogeneous shape": rows of different lengths
        if "inhomogeneous" not in str(e):
            raise
        _check_equal_rows(features)
        raise ValueError("features must be a 2-D array of numbers, but their rows hold "
                         f"sequences of different lengths: {e}") from None
    if X.dtype == object and hasattr(features, "to_numpy"):
        # pandas' nullable dtypes (Float64, Int64) come out as objects: as floats, NA as NaN
        try:
            X = features.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            pass
    if X.dtype == object:   # numbers held as objects (df.to_numpy() of mixed columns)
        X = _numbers_of_objects(X)
    if X.dtype == object and X.ndim == 1:   # an object array of rows (arrays)
        _check_equal_rows(X)
    # by kind: numpy counts durations (timedelta64) as integers (np.number)
    if X.dtype.kind not in "biufc":   # complex: refused by _check_real, with its reason
        raise TypeError(f"features must be numeric, got dtype {X.dtype}.")
    _check_real(X.dtype)
    if X.ndim == 1:
        raise ValueError("features must be 2-D (n_nodes, n_features); got a 1-D array. "
                         "Reshape with features.reshape(-1, 1) for a single feature.")
    if X.ndim != 2:
        raise ValueError(f"features must be 2-D, got {X.ndim} dimensions.")
    if X.dtype not in (np.float32, np.float64):   # integers, bools, float16, longdouble
        X = X.astype(np.float64)
    return X


def _length(row):
    """The number of values of the row ``row`` of features, or None for a single value."""
    if isinstance(row, (str, bytes)):
        return None
    try:
        return len(row)
    except TypeError:   # a number (a 0-d array included)
        return None


def _check_equal_rows(features):
    """Raise if ``features``, a sequence of rows, holds rows of different lengths, naming
    the first that differs from row 0 (an error path: numpy could not stack them)."""
    try:
        rows = list(features)
    except TypeError:
        return
    if not rows:
        return
    first = _length(rows[0])
    for i, row in enumerate(rows[1:], 1):
        k = _length(row)
        if k != first:
            has = "is a single value" if k is None else f"has {k} value(s)"
            row0 = "is a single value" if first is None else f"has {first}"
            raise ValueError(
                f"features must be rows of equal length (one value per feature), but row "
                f"{i} {has} while row 0 {row0}. Pad the short rows with NaN (a missing "
                "value) first.")


def _numbers_of_objects(X):
    """The object array ``X`` as float64 when its entries are real numbers (Python's,
    numpy's, Decimal, Fraction, bools) or missing values (None, pandas' NA: NaN), as a
    DataFrame's object column is read; else ``X`` itself when it holds arrays (refused
    by shape or dtype after), or a ``TypeError`` naming the first entry that is no number
    (text is not parsed, as in a DataFrame)."""
    if X.ndim == 0:
        return X
    flat = X.reshape(-1)
    missing = [i for i, v in enumerate(flat) if v is None or _is_pandas_na(v)]
    bad = next((i for i, v in enumerate(flat) if not (_real_number(v) or v is None
                                                      or _is_pandas_na(v))), None)
    if bad is not None:
        v = flat[bad]
        if isinstance(v, np.ndarray):   # a ragged list of rows: refused by its shape
            return X
        r, c = np.unravel_index(bad, X.shape)[:2] if X.ndim >= 2 else (bad, 0)
        raise TypeError(f"features must be numeric, got {v!r} at row {r}, column {c} (of "
                        "an object array), which is no real number. Convert the columns "
                        "first: numeric text with pd.to_numeric or float(), a category "
                        "with its codes.")
    if missing:
        flat = flat.copy()
        flat[missing] = np.nan
    try:
        return flat.astype(np.float64).reshape(X.shape)
    except OverflowError:   # an integer beyond float64
        raise TypeError("features hold an integer too large for float64, in which "
                        "GraphData stores them.") from None


def _real_number(v):
    """Whether ``v`` is a real number numpy converts to a float as it is (not complex)."""
    return isinstance(v, (numbers.Real, np.bool_, decimal.Decimal)) and \
        not isinstance(v, (np.datetime64, np.timedelta64))


def _is_pandas_na(v):
    pd = sys.modules.get("pandas")
    return pd is not None and v is pd.NA


# What pandas' ``infer_dtype`` calls columns of values that are not numbers (dates, text):
# ``to_numpy(float)`` would turn dates into nanoseconds since 1970 and parse numeric text.
_NOT_NUMBERS = {"string", "bytes", "datetime", "datetime64", "date", "time", "timedelta",
                "timedelta64", "period", "interval"}


def _is_frame(value):
    """Whether ``value`` is a pandas DataFrame (one exists only if pandas was imported)."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(value, pd.DataFrame)


def _check_numeric_columns(features):
    """Raise if a column of the pandas DataFrame ``features`` holds dates, durations,
    periods or text (a categorical of them included), naming the columns."""
    if not _is_frame(features):
        return
    pd = sys.modules["pandas"]
    bad = []
    for j, dtype in enumerate(features.dtypes):
        if isinstance(dtype, pd.SparseDtype):
            dtype = dtype.subtype
        values = None
        if isinstance(dtype, pd.CategoricalDtype):   # its values are its categories
            values, dtype = dtype.categories, dtype.categories.dtype
        what = None
        if dtype.kind in "mM":
            what = str(dtype)
        elif dtype.kind in "OUSV":   # objects, text, periods, intervals: look at the values
            values = features.iloc[:, j] if values is None else values
            kind = pd.api.types.infer_dtype(values, skipna=True)
            if kind in _NOT_NUMBERS or (kind.startswith("mixed") and any(
                    isinstance(v, (str, bytes)) for v in values)):
                what = kind
        if what is not None:
            if isinstance(features.dtypes.iloc[j], pd.CategoricalDtype):
                what = f"categorical of {what}"
            bad.append(f"{features.columns[j]!r} ({what})")
    if bad:
        raise TypeError(
            f"features must be numeric, but column(s) {', '.join(bad[:5])}"
            f"{f' and {len(bad) - 5} more' if len(bad) > 5 else ''} of the DataFrame are "
            "not numbers. Convert them first: a categorical with df[col].cat.codes (or "
            "one-hot, pd.get_dummies), a date or duration in a unit of your choice, e.g. "
            "(df[col] - start) / pd.Timedelta('1D'), numeric text with pd.to_numeric.")


def _check_real(dtype, what="features"):
    if np.issubdtype(dtype, np.complexfloating):
        raise TypeError(f"{what} must be real numbers, got dtype {dtype} (the imaginary "
                        "part would be dropped).")


def _as_adjacency(adjacency, n_nodes, node_ids, owned=False):
    """The adjacency as a canonical float32 CSR matrix whose arrays are GraphData's own,
    and whether its weights are all 1 (``None`` for a graph's own matrix: known to it).

    The caller's arrays are copied (when the conversion did not already make new
    ones): GraphData never edits the caller's matrix, and an edit of it never
    reaches a graph or the checks and operators cached for it. A graph's own
    matrix (``G.adjacency``, read-only by contract) is taken as it is, sharing them;
    so is a matrix the library just made and hands over (``owned``): at 1M users an
    edge mechanism's output is 5 GiB.
    """
    if adjacency is None:
        return None, None
    # A networkx graph exists only if networkx was imported: checking sys.modules
    # spares every other caller networkx's import (about 0.2 s).
    nx = sys.modules.get("networkx")
    if nx is not None and isinstance(adjacency, nx.Graph):
        if node_ids is None:
            raise ValueError("A networkx graph needs node_ids to fix the order of its "
                             "nodes against the feature rows (node_ids=list(graph.nodes) "
                             "when the rows follow the graph's node order).")
        if set(adjacency.nodes) != set(node_ids.tolist()):
            raise ValueError("The networkx graph's nodes differ from node_ids"
                             f"{_set_difference(adjacency.nodes, node_ids, 'node')}.")
        if adjacency.is_multigraph():   # parallel edges are summed: check each one
            for u, v, w in adjacency.edges(data="weight", default=1):
                if not _plain_weight(w):   # text would be summed
                    _check_networkx_weights(adjacency, None)
                if w < 0:
                    raise ValueError(f"adjacency contains a negative weight, {w!r} on an "
                                     f"edge from {u!r} to {v!r}; weights must be >= 0.")
        g = adjacency
        try:
            adjacency = nx.to_scipy_sparse_array(g, nodelist=list(node_ids), format="csr")
        except (TypeError, ValueError) as exc:
            _check_networkx_weights(g, exc)
            raise
        if adjacency.dtype.kind not in "biuf":   # complex: float32 would drop a part
            _check_networkx_weights(g, None)
    if sp.issparse(adjacency):
        _check_real(adjacency.dtype, "adjacency weights")
        if adjacency.format == "csr" and adjacency.dtype == np.float32 and \
                _held_info(adjacency) is not None:   # a graph's own: checked when taken
            return adjacency, None
        if not owned:   # (the library's own matrices are built by scipy from entries)
            check_sparse_structure(adjacency, "adjacency")   # before scipy reads its arrays
        # before the conversion, which sums duplicate entries: -1 and +1 at one
        # position must not pass as an absent edge (only where there may be duplicates)
        if adjacency.format in ("coo", "csr", "csc", "bsr") and not (
                adjacency.format != "coo" and adjacency.has_canonical_format):
            _check_not_negative(adjacency)
        if adjacency.dtype.kind in "biu" and adjacency.dtype.itemsize < 8:
            # duplicates are summed in the matrix's dtype: 200 + 100 in uint8 would be 44
            adjacency = adjacency.astype(np.float64)
        src, A = adjacency, sp.csr_matrix(adjacency, dtype=np.float32)
    else:
        A = np.asarray(adjacency)
        if _is_frame(adjacency):
            A = _labelled_in_order(adjacency, A, node_ids)
        if A.dtype == object:   # None, pandas' NA, text: no weight (None read as no edge)
            bad = next(((i, v) for i, v in enumerate(A.ravel()) if not _a_weight(v)), None)
            if bad is not None:
                r, c = divmod(bad[0], A.shape[1]) if A.ndim == 2 else (bad[0], 0)
                raise TypeError(f"adjacency weights must be numbers, got {bad[1]!r} at row "
                                f"{r}, column {c} (a missing weight is no edge: write 0).")
            A = A.astype(np.float64)
        _check_real(A.dtype, "adjacency weights")
        if A.dtype.kind in "mMUS":   # durations, dates, text: scipy would read them as numbers
            raise TypeError(f"adjacency weights must be numbers, got dtype {A.dtype}.")
        if A.ndim != 2:
            raise ValueError(f"adjacency must be 2-D, got {A.ndim} dimensions.")
        src, A = A, sp.csr_matrix(A, dtype=np.float32)
    # (m, 2) or PyG's (2, m): an edge list, not a matrix
    hint = "" if A.shape == (n_nodes, n_nodes) or 2 not in A.shape else (
        f" A shape {A.shape} looks like an edge list (a pair of positions per edge): "
        "adjacency is the n x n matrix. Build it from the edges' positions: "
        "sp.coo_array((np.ones(len(src)), (src, dst)), shape=(n, n)).tocsr() (User "
        "Guide: Working with your own graph, 'From a pandas edge list').")
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"adjacency must be square, got shape {A.shape}." + hint)
    if A.shape[0] != n_nodes:
        raise ValueError(f"adjacency has {A.shape[0]} nodes but features have {n_nodes} "
                         "rows." + hint)
    if _held_info(A) is not None:   # a graph's own matrix: checked when it was taken
        return A, None
    if src.dtype.kind == "f" and src.dtype.itemsize > 4:   # float64 weights may underflow
        _check_no_underflow(src, A)
    if not owned:
        A = _private(A, adjacency)
    A.sum_duplicates()
    A.eliminate_zeros()
    # min and max propagate NaN and show +-inf: no boolean temporary of the size of the data
    lo, hi = (A.data.min(), A.data.max()) if A.nnz else (0.0, 0.0)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError("adjacency contains NaN or infinite weights (after float32 "
                         "conversion); weights must be finite and >= 0.")
    if lo < 0:
        _check_not_negative(A)   # raises, naming the entry
    A.sort_indices()
    return A, bool(lo == hi == 1) or A.nnz == 0


def _check_no_underflow(src, A):
    """Raise if a non-zero weight of ``src`` became 0 in its float32 conversion ``A``
    (scipy stores it as an explicit zero, which ``eliminate_zeros`` would drop)."""
    n_zero = A.nnz - np.count_nonzero(A.data)   # the only pass on valid input
    if n_zero == 0:
        return
    if sp.issparse(src) and src.format in ("csr", "csc"):   # converted entry for entry
        if n_zero == src.nnz - np.count_nonzero(src.data):   # the caller's explicit zeros
            return
    d = (src.data if src.format in ("coo", "csr", "csc") else sp.coo_array(src).data) \
        if sp.issparse(src) else np.asarray(src).reshape(-1)
    lost = d[(d != 0) & (d.astype(np.float32) == 0)]
    if lost.size and lost.min() < 0:
        raise ValueError(f"adjacency contains a negative weight, {float(lost.min())!r}; "
                         "weights must be >= 0.")
    if lost.size:
        raise ValueError(
            f"adjacency has {lost.size} positive weight(s) too small for float32, in which "
            f"GraphData stores weights (e.g. {float(lost[0])!r}): they would become 0 and "
            "their edges vanish. Rescale the weights (multiply them all by one constant) "
            "or drop those edges.")


def _check_networkx_weights(g, exc):
    """Raise a clear error naming the first edge of the networkx graph ``g`` whose
    ``"weight"`` attribute is not a number (text, None), which scipy refused (``exc``)."""
    for u, v, w in g.edges(data="weight", default=1):
        if not _plain_weight(w):
            raise ValueError(
                f"The networkx graph's edge ({u!r}, {v!r}) has the weight {w!r}, which is "
                "not a real number GraphData can store (an int, a float or a bool): it "
                "reads each edge's 'weight' attribute (1 when it has none). Give every "
                "weight as a float (float(w) for a Fraction or a Decimal), or build an "
                "unweighted graph: nx.to_scipy_sparse_array(g, nodelist=node_ids, "
                "weight=None).") from exc


def _plain_weight(w):
    """Whether numpy stores the weight ``w`` as the number it is (not an object or a
    complex number)."""
    return isinstance(w, (bool, int, float, np.bool_, np.integer, np.floating))


def _keys_and_ids(store):
    """The node keys (computed once per store, as ``GraphData.node_keys``) and ids of a
    store's nodes."""
    if store._node_keys is None:
        store._node_keys = _ids_to_keys(store.node_ids)
    return store._node_keys, store.node_ids


def _check_default_ids_name_users(features, n, population):
    """Refuse ``population=`` without ``node_ids`` where the default ids ``0..n-1`` would
    name users they are not: a frame's rows labelled otherwise, rows that are not the
    given graph's users in its order, or any rows of a bare Population (whose users' ids
    it does not know): another user would be charged for what they send."""
    named = _is_frame(features) and not _positions(features.index, n)
    if not isinstance(population, GraphData):   # a Population does not know its users' ids
        named = True
    else:
        ids = population._store.node_ids
        named = named or len(ids) != n or not (ids.dtype.kind in "iu" and
                                              np.array_equal(ids, np.arange(n)))
    if named:
        raise ValueError(
            "population= says these rows are users already known, but without node_ids "
            f"they are named 0..{n - 1}: the users of those ids, not necessarily theirs"
            + (" (the features' index labels the rows otherwise)" if _is_frame(features)
               and not _positions(features.index, n) else "")
            + ". Pass their ids: node_ids=... (e.g. features.index, or the rows' ids in "
            "the first graph, G.all_node_ids[rows]).")


def _positions(index, n):
    """Whether a frame's index labels its rows 0..n-1 in order (pandas' default, or the
    default node ids, as ``G.to_pandas()`` of a graph of default ids gives)."""
    return _is_range(index, n) or (len(index) == n and index.equals(
        sys.modules["pandas"].Index(np.arange(n))))


def _check_frame_index_is_positions(features, n):
    """Raise if a features DataFrame given without ``node_ids`` labels its rows otherwise
    than ``0..n-1`` in order: the rows would be named ``0..n-1`` and matched to the
    adjacency by position, its index dropped."""
    if not _is_frame(features) or _positions(features.index, n):
        return
    index = features.index
    raise ValueError(
        f"The features DataFrame's index ({_first(index.tolist())}) is not pandas' "
        f"default 0..{n - 1}, but no node_ids were given: its rows would be named "
        f"0..{n - 1} and matched to the adjacency's rows by position, the index "
        "dropped. If the index holds the users' ids, pass node_ids=features.index (the "
        "adjacency's rows and columns must follow that order); if it means nothing (row "
        "numbers left by a filter such as df[df.x > 0]), drop it: "
        "features.reset_index(drop=True).")


def _check_frame_index(features, ids, graph=False):
    """Raise if the features are a DataFrame whose index names users other than the
    node ids, row for row (rows are read by position).

    pandas' default index (a RangeIndex) and an index sharing no label with the ids
    (row numbers left by a filter, against text ids) are positions, read as before.
    ``graph``: the ids are those of a graph (``with_features``), not the caller's.
    """
    if not _is_frame(features):
        return
    pd = sys.modules["pandas"]
    index = features.index
    if _is_range(index, len(index)) or index.equals(pd.Index(ids)):
        return
    labels, wanted = index.tolist(), ids.tolist()
    shared = set(labels).intersection(wanted)
    if not shared:
        as_text = [str(v) for v in labels]
        if as_text != [str(v) for v in wanted] and sorted(as_text) == sorted(map(str, wanted)):
            # the ids written as another type, in another order (in order: read as meant)
            kind = "str" if isinstance(wanted[0], str) else "int"
            raise ValueError(
                f"The features DataFrame's index ({_first(labels)}) holds the node ids "
                f"({_first(wanted)}) as another type, in another order: ids are compared "
                "with their type, so its rows would be read by position. Convert the index "
                f"to the ids' type and reorder (features.index = features.index.astype({kind})"
                f"; then features.loc[{'G.all_node_ids' if graph else 'node_ids'}]).")
        return
    # the first row labelled by another node's id (else the first whose label differs)
    differ = [i for i, (a, b) in enumerate(zip(labels, wanted, strict=True)) if a != b]
    i = next((i for i in differ if labels[i] in shared), differ[0] if differ else 0)
    what = (f"its row {i}, labelled {labels[i]!r}, would be read as the features of node id "
            f"{wanted[i]!r} (rows are read by position, so each row would go to another user)")
    order = "features.loc[G.all_node_ids]" if graph else "features.loc[node_ids]"
    if index.is_unique and len(shared) == len(labels) == len(set(wanted)):
        raise ValueError(
            f"The features DataFrame's index holds node ids, but not node_ids in order: "
            f"{what}. Reorder the rows: {order}.")
    row_numbers = index.is_monotonic_increasing and all(
        isinstance(a, (numbers.Integral, np.integer)) for a in labels)
    drop = ("These labels look like the row numbers that a filter such as df[df.x > 0] "
            "leaves: if they are, drop them with features.reset_index(drop=True)."
            if row_numbers else "If the index holds row labels, not user ids, drop it with "
            "features.reset_index(drop=True).")
    keep = (f"If it holds the users' ids, reorder the rows to follow the graph's ({order})."
            if graph else "If it holds the users' ids, pass node_ids=features.index, or "
            f"reorder the rows to follow node_ids ({order}).")
    ids_name = "the graph's node ids" if graph else "node_ids"
    raise ValueError(
        f"The features DataFrame's index ({_first(labels)}) shares {len(shared)} of its "
        f"{len(labels)} labels with {ids_name}, but not in their order: {what}. {drop} {keep}")


def _mechanisms_of_calling_column_transformer():
    """The names of the private steps (mechanisms) of the scikit-learn ColumnTransformer
    that is indexing a GraphData's columns, found on the call stack (an error path only);
    empty when none is found."""
    compose = sys.modules.get("sklearn.compose")
    if compose is None:
        return ""

    def private(e):   # a private step (skldp.base.PrivateStepMixin), told by its protocol
        return hasattr(e, "_open_collection") and hasattr(e, "protects")

    frame = sys._getframe(2)
    for _ in range(12):   # _safe_indexing -> ColumnTransformer._call_func_on_transformers
        if frame is None:
            break
        owner = frame.f_locals.get("self")
        if isinstance(owner, compose.ColumnTransformer):
            steps = [t for _, t, _ in owner.transformers if hasattr(t, "get_params")]
            found = [type(e).__name__ for t in steps
                     for e in [t, *t.get_params(deep=True).values()]
                     if private(e)]
            return ", ".join(dict.fromkeys(found))
        frame = frame.f_back
    return ""


def _first(values, k=4):
    """The first ``k`` of ``values`` as text: ``"0, 2, 3, 5, ..."``."""
    return ", ".join(map(repr, values[:k])) + (", ..." if len(values) > k else "")


def _labelled_in_order(frame, A, node_ids):
    """The array ``A`` of the DataFrame adjacency ``frame``, its rows and columns in the
    order of ``node_ids`` when its labels are node ids.

    Labels that are ``node_ids`` on both axes (as ``nx.to_pandas_adjacency`` gives)
    are matched against them. Labels ``0..n-1`` in order (pandas' default, or as
    ``read_csv`` gives them back, columns as text) are positions, read as such. Any
    other labels are node ids that need ``node_ids``, as a networkx graph does.
    """
    index, columns = frame.index, frame.columns
    n = len(index)
    if all(_is_range(labels, n) for labels in (index, columns)):
        return A   # pandas' own labels: positions
    same = index.is_unique and columns.is_unique and set(index) == set(columns)
    if same and node_ids is not None and set(index) == set(node_ids.tolist()):
        rows, cols = index.get_indexer(list(node_ids)), columns.get_indexer(list(node_ids))
        return A[np.ix_(rows, cols)]
    if all(_are_positions(labels) for labels in (index, columns)):
        # 0..n-1 in order: positions, unless node_ids are these same labels in another
        # order (a frame of ids 0..n-1 written to CSV and read back): then it is ambiguous
        if node_ids is not None and _are_positions_in_another_order(node_ids):
            raise ValueError(
                "The DataFrame adjacency is labelled 0..n-1 in order, and node_ids are "
                "the same labels in another order: are the labels positions or node ids? "
                "Give adjacency.to_numpy() if its rows and columns follow the feature rows, "
                "or adjacency.loc[node_ids, node_ids] (its labels of node_ids' type) if "
                "they are node ids.")
        return A
    if not same:
        raise ValueError(
            "A DataFrame adjacency must be labelled by the same node ids on its index and "
            "its columns, each once (as nx.to_pandas_adjacency gives), or carry pandas' "
            "default labels 0..n-1 on both; give adjacency.to_numpy() if its rows and "
            "columns are already in the order of the feature rows.")
    if node_ids is None:
        raise ValueError(
            "A DataFrame adjacency labelled by node ids needs node_ids to fix the order "
            "of its rows and columns against the feature rows (e.g. "
            "node_ids=adjacency.index when the feature rows follow it); give "
            "adjacency.to_numpy() if it is already in the order of the feature rows.")
    raise ValueError("The DataFrame adjacency's labels differ from node_ids"
                     f"{_set_difference(index, node_ids, 'label')}.")


def _is_range(labels, n):
    """Whether ``labels`` are pandas' default labels ``RangeIndex(n)``."""
    pd = sys.modules["pandas"]
    return isinstance(labels, pd.RangeIndex) and labels.start == 0 and labels.step == 1 \
        and len(labels) == n


def _are_positions(labels):
    """Whether ``labels`` are ``0..n-1`` in order, as integers or as their text."""
    values = labels.tolist()
    return values == list(range(len(values))) or \
        values == [str(i) for i in range(len(values))]


def _are_positions_in_another_order(node_ids):
    """Whether ``node_ids`` are ``0..n-1`` (as integers or text) but not in that order."""
    text = [str(v) for v in node_ids.tolist()]
    order = [str(i) for i in range(len(text))]
    return text != order and sorted(text) == sorted(order)


def _set_difference(labels, node_ids, what):
    """A sample of the ``labels`` missing from ``node_ids`` and of the ids missing from
    ``labels``, to end an error message (": 1 node(s) not in node_ids (3); ...")."""
    ids, labels = set(node_ids.tolist()), set(labels)
    missing, extra = sorted(labels - ids, key=repr), sorted(ids - labels, key=repr)
    parts = [f"{len(d)} {name} ({', '.join(map(repr, d[:3]))}{', ...' if len(d) > 3 else ''})"
             for d, name in ((missing, f"{what}(s) not in node_ids"),
                             (extra, f"id(s) not a {what}")) if d]
    if set(map(str, missing)) & set(map(str, extra)):   # 2 against '2'
        parts.append("ids are compared with their type (2 is not '2'): pass node_ids as a "
                     "list or an object array, not an array of strings")
    return ": " + "; ".join(parts) if parts else ""


def _private(M, source):
    """``M`` with a copy of every array it shares with ``source`` (the caller's matrix),
    so that ``M`` can be edited in place; ``M`` itself when the conversion made new ones."""
    if not sp.issparse(source):
        return M
    # the arrays a sparse matrix keeps (COO's row and col: its conversion makes new ones)
    theirs = [a for a in (getattr(source, n, None) for n in ("data", "indices", "indptr"))
              if isinstance(a, np.ndarray)]
    for name in ("data", "indices", "indptr"):   # M is a new matrix object: set on it
        a = getattr(M, name)
        if any(np.may_share_memory(a, b) for b in theirs):
            setattr(M, name, a.copy())
    return M


def _check_not_negative(M):
    """Raise if a stored entry of the sparse matrix ``M`` (COO, CSR, CSC or BSR) is negative."""
    d = M.data
    if d.size == 0 or np.iscomplexobj(d):
        return
    lo = d.min()
    if not lo < 0 or not np.isfinite(lo):   # NaN and -inf: the finite check names them
        return
    k = int(np.flatnonzero(d.reshape(-1) < 0)[0])   # only on the error path
    where = ""
    if M.format == "coo":
        where = f" at row {M.row[k]}, column {M.col[k]}"
    elif M.format in ("csr", "csc"):
        outer = int(np.searchsorted(M.indptr, k, side="right")) - 1
        i, j = (outer, M.indices[k]) if M.format == "csr" else (M.indices[k], outer)
        where = f" at row {i}, column {j}"
    raise ValueError(f"adjacency contains a negative weight, {d.reshape(-1)[k]}{where} "
                     "(duplicate entries are not summed first); weights must be >= 0.")


class GraphData:
    """A row view over one attributed graph, usable where scikit-learn expects ``X``.

    ``GraphData`` holds the features of *all* nodes, the (optional) adjacency
    and the node ids in one shared store, plus the positions (``rows``) of the
    nodes this view selects. Indexing returns another view of the same store
    without copying, so that ``fit(G[train], y[train])`` and
    ``predict(G[test])`` both see the whole graph while only the selected rows
    are fitted or predicted. Plain scikit-learn steps see ``np.asarray(G)``,
    the features of the selected rows.

    Read more in the :ref:`User Guide <data_contract>`.

    Parameters
    ----------
    features : array-like or sparse matrix of shape (n_nodes, n_features)
        Node features. Scipy sparse arrays and matrices stay sparse (CSR).
        A float array is kept, not copied (as scikit-learn's estimators read
        theirs): do not edit it afterwards, or pass a copy (steps keep results
        computed from it).
    adjacency : sparse matrix, ndarray, networkx.Graph, DataFrame or None, default=None
        Adjacency of shape (n_nodes, n_nodes). ``None`` means the server does
        not know the graph (e.g. it is collected with edge LDP later). A
        networkx graph is converted in the order given by ``node_ids``, and so
        is a DataFrame labelled by node ids (``nx.to_pandas_adjacency``); one
        with pandas' default labels is read by position.
        Stored as a canonical float32 CSR matrix of GraphData's own: a sparse
        matrix whose arrays would be kept is copied, so the caller's matrix is
        never edited and may be edited afterwards (a graph's own
        ``G.adjacency`` is shared, not copied). Weights must be finite and
        non-negative, each stored entry before duplicates are summed; a positive
        weight that float32 rounds to 0 is refused.
    node_ids : array-like of shape (n_nodes,), default=None
        Unique, stable user identifiers. Local DP mechanisms key each user's
        report on its id, so a user answers once whatever rows are selected.
        Integers in an object array (as pandas gives) and floats with integer
        values (``7.0``) are stored and keyed as those integers. Missing ids
        (None, NaN, NaT, pandas' NA) are refused. A list mixing text and
        numbers (or holding tuples, as networkx nodes) keeps each id as it is.
        A features DataFrame indexed by node ids must follow them in order.
        Defaults to ``0..n_nodes-1``, which needs a DataFrame's index to be
        pandas' default (pass ``node_ids=features.index`` otherwise).
    feature_names : array-like of str of shape (n_features,), default=None
        Names of the feature columns. ``None`` takes a pandas DataFrame's
        column names when they are all strings (scikit-learn's rule).
    budget : float or None, default=None
        Per-user cap on the total epsilon the users may spend (local
        collections plus central trainings); a collection that would exceed it
        raises :class:`~skldp.population.BudgetExceededError` before anything
        is sent. ``None``: no cap. With ``population``, it sets the shared cap
        if there is none; another cap than the one there is an error (change it
        with ``G.population.set_budget``).
    population : GraphData, Population or None, default=None
        The simulated devices these users are. ``None`` makes new ones (a new
        ledger); the GraphData of the same users (e.g. their updated data)
        shares its ledger and budget. An id it does not know whose other
        spelling it knows (``"7"`` for its user ``7``, or the reverse) is
        refused: give the ids in the type it knows them by.
    symmetric : bool or None, default=None
        Whether the adjacency is symmetric, if the caller knows. ``None``
        compares it with its transpose when a step first asks; ``True`` runs a
        cheaper randomized check instead; ``False`` is taken as given.

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
    Indexing selects rows of the view by position, not of the whole graph
    and not by node id: ``G[i]``, ``G[[i, j]]``, ``G[mask]``, ``G[a:b:c]``
    and scikit-learn's ``G[idx, ...]``. ``G[G.positions(ids)]`` selects
    nodes by id (:meth:`positions`).

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
                 budget=None, population=None, symmetric=None):
        if feature_names is None:
            feature_names = frame_column_names(features)  # a DataFrame's string columns
        X = _as_features(features)
        n = X.shape[0]
        if n == 0:
            raise ValueError("GraphData needs at least one node; got an empty feature matrix.")
        keys = None   # computed here first for ids of mixed types (checked)
        if node_ids is None:
            if population is None:   # (else the check of population= names the users)
                _check_frame_index_is_positions(features, n)
            ids = np.arange(n)
        else:
            # integers held in an object array (as pandas gives) are stored, and keyed,
            # as the same integers in an integer array
            # any iterable; what names no user refused (missing ids, booleans...)
            ids = _as_integers(_as_id_array(_id_sequence(node_ids)))
            if ids is node_ids or getattr(ids, "base", None) is not None:
                ids = ids.copy()   # (the caller's array: an edit would rename the users)
            if ids.ndim == 0:
                raise ValueError(f"node_ids must be a sequence of {n} ids (one per feature "
                                 f"row), got the single value {ids.item()!r}.")
            if ids.ndim != 1 or len(ids) != n:
                raise ValueError(f"node_ids must have length {n} (one per feature row), "
                                 f"got shape {ids.shape}.")
            if not _all_unique(ids):
                raise ValueError(duplicate_ids_message(ids))
            # (dates and durations: refused there, now)
            keys = _ids_to_keys(ids) if ids.dtype.kind in "OmM" else None
            if keys is not None and not _all_unique(keys):
                # ids of mixed types: a number and its text (1.5 and "1.5"), or -1 and
                # 2**64 - 1, are one user key (integer arrays cannot hold both)
                raise ValueError(
                    "node_ids must name distinct users, but some are the same user key: a "
                    "number and its text (1.5 and '1.5'), or integers equal modulo 2**64. "
                    "Give ids of one type.")
            _check_frame_index(features, ids)
        A, unit_weights = _as_adjacency(adjacency, n, ids if node_ids is not None else None)
        if feature_names is not None:
            feature_names = _as_feature_names(feature_names, X.shape[1])
        fresh = population is None
        if fresh:
            population = Population(budget)
        else:
            if not isinstance(population, (GraphData, Population)):
                raise TypeError("population must be a GraphData or a Population, got "
                                f"{type(population).__name__}.")
            if node_ids is None:
                _check_default_ids_name_users(features, n, population)
            population = population.population if isinstance(population, GraphData) \
                else population
            keys = _ids_to_keys(ids) if keys is None else keys
            # 5 new where "5" is known (ids read back as text): maybe one person, two keys
            population._check_spellings(ids, keys)
            if budget is not None and population.budget is not None and \
                    float(budget) != population.budget:
                # the same users, the same cap: a new view of them must not move it
                raise ValueError(
                    f"budget={budget!r}, but these users' population already has a budget of "
                    f"{population.budget:.4g} per user, which this GraphData shares. Change "
                    "it explicitly with G.population.set_budget(...).")
            if budget is not None:
                population.set_budget(budget)
        for shared in (ids, feature_names):   # read through the getters: never edited
            if isinstance(shared, np.ndarray):
                shared.flags.writeable = False
        self._store = _GraphStore(X, A, ids, feature_names, population)
        self._store._node_keys = keys   # the keys the check computed: not hashed again
        if unit_weights is not None:   # (a fresh matrix: its own info)
            self._store.info().unit_weights = unit_weights
        self.rows = np.arange(n)
        if symmetric is not None:
            if not isinstance(symmetric, (bool, np.bool_)):
                raise TypeError(f"symmetric must be True, False or None, got {symmetric!r}.")
            if A is None:
                raise ValueError("symmetric was given without an adjacency.")
            info = self._store.info()
            if symmetric and not (info.symmetric if info.symmetric is not None
                                  else _probably_symmetric(A)):
                raise ValueError("symmetric=True, but the adjacency is not symmetric. "
                                 "Symmetrise it, e.g. A.maximum(A.T), or leave "
                                 "symmetric=None.")
            if symmetric:   # a claim of False stays with this graph, not the matrix
                info.symmetric = True
            self._store._symmetric = bool(symmetric) if info.symmetric is None \
                else info.symmetric
        # its users now (once the graph is valid), whom a later graph's ids are checked
        # against; real devices: what they sent while unlisted is charged
        if not population.simulated:
            population._admit(self.node_keys, ids)
        elif fresh:   # (keyed and sorted only if another graph joins it)
            population._join_later(functools.partial(_keys_and_ids, self._store))
        else:
            population._join(self.node_keys, ids)

    @classmethod
    def _from_store(cls, store, rows):
        obj = cls.__new__(cls)
        obj._store = store
        obj.rows = rows
        return obj

    def _replace(self, rows):
        # (contiguous: a reversed slice's negative strides reach torch.as_tensor otherwise)
        return GraphData._from_store(self._store, np.ascontiguousarray(rows, dtype=np.intp))

    # ----------------------------------------------------------- array protocol
    @property
    def shape(self):
        return (len(self.rows), self._store.shape[1])

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, key):
        if isinstance(key, tuple):  # sklearn's _safe_indexing calls X[idx, ...]
            if len(key) == 2 and key[1] is Ellipsis:
                key = key[0]
            else:
                mechanisms = _mechanisms_of_calling_column_transformer()
                if mechanisms:
                    raise IndexError(
                        "GraphData supports row (node) indexing only, and a "
                        f"ColumnTransformer cannot hold a local DP mechanism ({mechanisms}): "
                        "its transformers receive arrays, which name no users, and "
                        "NodeWise(ColumnTransformer(...)) would read every column in the "
                        "clear. To make only some columns private, select them on the "
                        "devices before the mechanism: Pipeline([('cols', skldp.NodeWise("
                        "ColumnTransformer([('private', 'passthrough', [j, ...])]), "
                        "on_device=True)), ('mech', ...)]), and join public columns to its "
                        "reports with reports.with_features(..., source='public') (User "
                        "Guide: Choosing a mechanism, 'Private and public columns').")
                raise IndexError(
                    "GraphData supports row (node) indexing only. To select columns "
                    "(a ColumnTransformer of plain steps), wrap the step: "
                    "skldp.NodeWise(ColumnTransformer(...)), with columns given by position "
                    "(it receives the features as an array). Tools that set columns "
                    "(sklearn.inspection.partial_dependence) cannot inspect graph steps: "
                    "apply them to the step after the graph steps, on an array of their "
                    "output (np.asarray(pipe[:-1].transform(X))).")
        if isinstance(key, slice):
            return self._replace(self.rows[key])
        if hasattr(key, "index") and getattr(getattr(key, "dtype", None), "kind", "") == "b":
            # a boolean Series indexed by users in another order would select others:
            # the rule of y's Series (np.asarray drops the index)
            from .model_selection._node_splits import _check_label_index
            _check_label_index(key, self, role="mask")
        return self._replace(self.rows[_row_positions(key, len(self.rows))])

    def __array__(self, dtype=None, copy=None):
        st = self._store
        self._note_export(_EXPORT, self.rows)
        X = st.features[self.rows]
        out = X.toarray() if sp.issparse(X) else X
        return out if dtype is None else out.astype(dtype, copy=False)

    def _note_export(self, kind, rows):
        """Charge the users at positions ``rows`` a read of their features in the clear
        (epsilon inf; refused under a budget) when the features are the users' data: they
        leave as a plain container (an array, a DataFrame), which carries no history, so
        whatever reads it (a scikit-learn step, the user's code) reads those users' data.
        Reports, and what is computed from them, cost nothing more. No token: another
        view's rows are other users."""
        st = self._store
        if reads_users_data(st.feature_origin):
            st.population.note_clear_read(kind, "features", self.node_keys[rows])

    def _note_true_graph_read(self, kind, check_only=False):
        """A server step (``kind``) reads this graph's adjacency. When it holds the users'
        true edges (not collected by an edge mechanism), the read is charged as a read of
        their edges in the clear if an edge mechanism collects those users' edges, or a
        central DP training protects them, before or after (:meth:`Population.note_true_read
        <skldp.population.Population.note_true_read>`); otherwise the graph is
        taken as given. Once per step kind and graph. ``check_only``: only raise the
        refusal the read would meet now (:meth:`Population.check_true_read
        <skldp.population.Population.check_true_read>`), noting nothing."""
        st = self._store
        origin = st.adjacency_origin
        if st.adjacency is not None and reads_users_data(origin) and \
                not edges_collected(origin):
            if check_only:
                st.population.check_true_read(kind, "edges", self.node_keys)
            else:
                st.population.note_true_read(kind, "edges", self.node_keys, st.token)

    def __repr__(self):
        A = self._store.adjacency
        edges = "unknown graph" if A is None else f"{A.nnz} directed edges"
        return (f"GraphData(view of {len(self.rows)} of {self.n_nodes} nodes, "
                f"{self.shape[1]} features, {edges})")

    # ------------------------------------------------------------ whole graph
    @property
    def n_nodes(self):
        """Number of nodes in the whole graph (not only the view)."""
        return self._store.shape[0]

    @property
    def features(self):
        """Features of all nodes (dense ndarray or CSR matrix), shared and read-only (its
        arrays are not writeable; edit a copy).

        Features a GPU step left on its device are copied to the host on first read.
        """
        return self._store.features

    @property
    def adjacency(self):
        """CSR adjacency of the whole graph, or ``None`` when the graph is unknown.

        Shared and read-only (its arrays are not writeable): the checks and
        operators cached for the graph describe it. Edit a copy
        (``G.adjacency.copy()``).
        """
        return self._store.adjacency

    @property
    def node_ids(self):
        """Ids of the selected nodes."""
        return self._store.node_ids[self.rows]

    @property
    def all_node_ids(self):
        """Ids of all nodes of the graph."""
        return self._store.node_ids

    def positions(self, ids):
        """Positions in this view of the nodes with ids ``ids``.

        Indexing is by position: ``G[G.positions(ids)]`` selects nodes by id.
        Ids are matched by their user keys, as ``node_ids`` are (``7``, ``7.0``
        and ``np.int32(7)`` name one user; ``"7"`` another).

        Parameters
        ----------
        ids : array-like of shape (n_ids,)
            Ids of nodes of this view, in the order wanted.

        Returns
        -------
        positions : ndarray of int of shape (n_ids,)
            The position of each id's row in this view (the first, if the view
            holds that row twice).

        Raises
        ------
        KeyError
            If an id is not a node of this view; the message names such ids.

        Examples
        --------
        >>> import numpy as np
        >>> from skldp import GraphData
        >>> G = GraphData(np.eye(4), node_ids=[101, 102, 103, 104])
        >>> G.positions([103, 101])
        array([2, 0])
        >>> G[G.positions([103, 101])].node_ids
        array([103, 101])
        """
        ids = _as_id_array(_id_list(ids, "ids"), "ids")
        if ids.ndim != 1:
            raise TypeError(f"ids must be a sequence of node ids, got {ids.ndim}-D input"
                            + (f" (the single value {ids.item()!r}): wrap one id in a list."
                               if ids.ndim == 0 else f" of shape {ids.shape}."))
        keys = ids_to_keys(ids)
        mine = self.node_keys[self.rows]
        pos, found = sorted_lookup(mine, keys, sorter=np.argsort(mine, kind="stable"))
        if not found.all():
            raise KeyError(self._not_in_view_message(ids[~found], keys[~found], len(ids)))
        return pos

    def _not_in_view_message(self, ids, keys, n_asked):
        shown = ", ".join(map(repr, ids[:5].tolist())) + (", ..." if len(ids) > 5 else "")
        message = (f"{len(ids)} of the {n_asked} ids are not nodes of this view of "
                   f"{len(self.rows)} rows: {shown}.")
        elsewhere = int(member(keys, self.node_keys).sum())
        if elsewhere:
            message += (f" Nodes of the graph outside this view: {elsewhere} of them "
                        "(G.full().positions(ids) finds them among all its nodes).")
        return message

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

        Raises
        ------
        ValueError
            If the graph holds reports that real devices sent
            (:func:`skldp.population.received_graph`), or features or an
            adjacency that a mechanism or a server-side step made in this
            simulation (reports, or computed from them; data set with
            ``source="public"`` after the users sent anything, or in a copy cut
            off from their ledger, may be either): those users spent their
            budget on them, and a simulation cannot replay them with an empty
            ledger. Call it on the raw graph, then apply the steps; set only
            truly public data (nothing computed from the users' reports) on
            the graph it returns.
        """
        st = self._store
        received = [part for part, origin in (("features", st.feature_origin),
                                              ("edges", st.adjacency_origin))
                    if origin[0] == "reports"]
        if received or not st.population.simulated:
            specs = getattr(st.population, "_collected", {}).values()
            what = "; ".join(spec.describe() for spec in specs) or ", ".join(received)
            raise ValueError(
                "new_simulation() gives the data to new simulated devices with an empty "
                "ledger, but this graph holds reports that real devices sent (" + what +
                "): those users spent that budget when they sent them, and a simulation "
                "cannot replay their reports at no cost. Train on this graph (its ledger "
                "states what they spent); to simulate deployments, build a GraphData of "
                "raw data, whose new_simulation() makes the devices answer anew.")
        made = [(part, origin[1]) for part, origin in (("features", st.feature_origin),
                                                       ("adjacency", st.adjacency_origin))
                if _made_by_a_step(origin)]
        if made:
            what = "; ".join(f"{part}: {how}" for part, how in made)
            public = "" if not any(_SET_AS_PUBLIC in how for _, how in made) else (
                " Data set with source='public' once the users may have sent something may "
                "be computed from their reports ('public' lets the server of this simulation "
                "read them at no charge; it does not make them raw data). Only data that are "
                "truly public (noise, a public embedding: nothing computed from what these "
                "users sent) may be set on the graph new_simulation() returns; data computed "
                "from their reports must be collected again in the new simulation (apply the "
                "mechanism there).")
            raise ValueError(
                "new_simulation() gives the data to new simulated devices with an empty "
                f"ledger, but this graph's data were made in this simulation ({what}): "
                "its users may have spent budget on "
                "them (reports, or values computed from reports), which an empty ledger would "
                "not state. Call new_simulation() on the graph of raw data, then apply the "
                "steps in the new simulation." + public)
        new = _GraphStore(st._features, st.adjacency, st.node_ids, st.feature_names,
                          Population(budget), st.feature_origin, st.adjacency_origin,
                          on_device=st._on_device)
        for name in ("_node_keys", "_symmetric", "_one_sided", "_finite", "_info",
                     "feature_source", "adjacency_source"):
            setattr(new, name, getattr(st, name))
        new.population._join_later(functools.partial(_keys_and_ids, new))   # (as __init__)
        return GraphData._from_store(new, self.rows)

    @property
    def node_keys(self):
        """uint64 keys of all nodes, derived from node ids (for per-user randomness)."""
        return _keys_and_ids(self._store)[0]

    def is_symmetric(self):
        """Whether the adjacency is symmetric. ``False`` when it is unknown.

        Computed once per adjacency, shared by every view and every GraphData
        holding the same matrix (see ``symmetric`` in the constructor).
        """
        st = self._store
        if st.adjacency is None:
            return False
        if st._symmetric is None:
            info = st.info()
            if info.symmetric is None:
                info.symmetric = _is_symmetric(st.adjacency)
            st._symmetric = info.symmetric
        return st._symmetric

    def _has_unit_weights(self):
        """Whether every stored weight of the adjacency is 1 (known from the
        constructor's checks, else found once per adjacency); ``False`` without one."""
        st = self._store
        if st.adjacency is None:
            return False
        info = st.info()
        if info.unit_weights is None:
            d = st.adjacency.data
            info.unit_weights = d.size == 0 or bool(d.min() == 1 == d.max())
        return info.unit_weights

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
            info = st.info()
            if info.one_sided is None:
                # a symmetric matrix has as many entries above the diagonal as below
                info.one_sided = (False if (st._symmetric or info.symmetric)
                                  else _is_one_sided(st.adjacency))
            st._one_sided = info.one_sided
        return st._one_sided

    def _first_warning(self, kind):
        """Whether the warning ``kind`` about this graph's adjacency is due: true once
        per adjacency (every view and step of the graph shares it), then false."""
        st = self._store
        if st.adjacency is None:
            return False
        warned = st.info().warned
        if kind in warned:
            return False
        warned.add(kind)
        return True

    def require_finite_features(self, step="This step"):
        """Return the features of all nodes, raising if any is NaN, infinite or beyond
        float32's range (in which graph steps and models compute).

        The check covers the whole graph (graph steps mix every node's
        features) and is done once per graph: the result is cached on the
        shared store, as for :meth:`is_symmetric`.
        """
        self._check_finite(step)
        return self._store.features

    def _check_finite(self, step="This step"):
        """:meth:`require_finite_features` without returning them: features held on a
        device are checked there, without a host copy."""
        st = self._store
        if not st._finite:
            X = st.features if st._on_device is None or st._features is not None \
                else st._on_device
            with refusal_is_read(step, "features", self, "non-finite features"):
                check_finite_features(X, name=f"the features given to {step}")
                check_float32_range(X, name=f"the features given to {step}")
            st._finite = True

    def require_adjacency(self, step="This step"):
        """Return the adjacency or raise a clear error if the graph is unknown."""
        if self._store.adjacency is None:
            raise ValueError(f"{step} needs the graph, but this GraphData has no adjacency "
                             "(adjacency=None). Build it with the users' adjacency "
                             "(GraphData(X, A)), or with the edge reports they sent "
                             "(skldp.population.received_graph).")
        return self._store.adjacency

    def require_symmetric(self, step="This step"):
        """Return the adjacency, raising if it is unknown or not symmetric."""
        A = self.require_adjacency(step)
        if not self.is_symmetric():
            # it tells whether one user listed a neighbour who did not list them back
            with refusal_is_read(step, "edges", self, "a directed graph"):
                raise ValueError(f"{step} needs an undirected graph, "
                                 f"{self._why_not_symmetric()}")
        return A

    def _why_not_symmetric(self):
        """The end of an error for a graph that counts as not symmetric: ``"but ..."``
        with what to do. A symmetric matrix counts as not symmetric only when the
        constructor was told ``symmetric=False``: the message says so."""
        info = self._store.info()
        if info.symmetric is None:   # (only the caller's symmetric=False was known)
            info.symmetric = _is_symmetric(self._store.adjacency)
        if info.symmetric:
            return ("but this GraphData was built with symmetric=False, although its "
                    "adjacency is symmetric (it equals its transpose). Pass symmetric=True, "
                    "or leave symmetric=None (checked when a step first asks).")
        if edges_collected(self._store.adjacency_origin):   # directed reports
            return ("but the adjacency (edges an edge mechanism collected) is not symmetric. "
                    "Collect them with EdgeRR(symmetrize='or') (or 'and'), or symmetrise the "
                    "reports as public post-processing: G.with_adjacency(A.maximum(A.T), "
                    "source='public') with A = G.adjacency (with the default "
                    "source='server' the result counts as the users' true graph).")
        return ("but the adjacency is not symmetric. Symmetrise it first, e.g. "
                "A.maximum(A.T).")

    # ----------------------------------------------------------- derived views
    def with_features(self, features, feature_names=None, *, source="server"):
        """Return the same rows over a new store holding ``features`` for all nodes.

        The adjacency, node ids and population are shared, not copied.

        Parameters
        ----------
        features : array-like or sparse matrix of shape (n_nodes, n_features)
        feature_names : array-like of str or None, default=None
        source : {"server", "users", "public"}, default="server"
            Where the new features come from, for the privacy boundary
            (:ref:`privacy-simulated`): ``"server"``, computed on the server
            from the users' data (a local DP mechanism refuses them, and a step
            that reads them is recorded as reading the users' data in the
            clear); ``"users"``, the users' own data (what each device holds:
            a mechanism may read them); ``"public"``, data that reveal nothing
            of the users' raw data (noise, a public embedding, reports they
            sent: these only in this simulation, see :meth:`new_simulation`).
            Public data set before the users sent anything are copied when the
            caller can still write their memory (an array over read-only
            memory is taken as it is).
        """
        X = _as_features(features)
        if X.shape[0] != self.n_nodes:
            raise ValueError(f"new features have {X.shape[0]} rows for {self.n_nodes} nodes.")
        origin = _origin(source, "with_features", self)
        if source == "public" and origin[1].endswith(_SET_AS_PUBLIC):
            # public data set before the users sent anything pass new_simulation(): they
            # must stay what they are now (reports written into the caller's array later
            # would pass as public)
            X = _unwritable(X)
        # (default ids too: a frame of the users 0..n-1 in another order, or with one
        # twice, would give a user another's row)
        _check_frame_index(features, self._store.node_ids, graph=True)
        if feature_names is None:   # a frame's string columns, as the constructor reads them
            feature_names = frame_column_names(features)
        if feature_names is not None:
            feature_names = _as_feature_names(feature_names, X.shape[1])
        new = self._store.derive(features=X, feature_names=feature_names,
                                 feature_origin=origin)
        return GraphData._from_store(new, self.rows)

    def _with_features_on_device(self, T, feature_names=None, *, source="server"):
        """:meth:`with_features` for a torch tensor ``T`` of all nodes' features, kept
        where it is: a step on the same device reads it there (``_features_on``), any
        other reader gets the host copy, made on first read."""
        if T.ndim != 2 or T.shape[0] != self.n_nodes or not T.is_floating_point():
            raise ValueError(f"features on a device must be a 2-D floating tensor with "
                             f"{self.n_nodes} rows, got {tuple(T.shape)} {T.dtype}.")
        if feature_names is not None:
            feature_names = _as_feature_names(feature_names, T.shape[1])
        new = self._store.derive(features=None, feature_names=feature_names, on_device=T,
                                 feature_origin=_origin(source, "with_features", self))
        return GraphData._from_store(new, self.rows)

    def _features_on(self, device):
        """All nodes' features as a torch tensor on ``device`` when the graph holds them
        there (see ``_with_features_on_device``), else ``None``."""
        return self._store.on_device(device)

    def with_adjacency(self, adjacency, *, source="server"):
        """Return the same rows over a new store whose adjacency is ``adjacency``.

        ``source`` says where the new adjacency comes from, as for
        :meth:`with_features`: ``"users"`` for the users' own adjacency lists
        (an edge mechanism may read them); ``"public"`` for one computed from
        the reports an edge mechanism collected (``A.maximum(A.T)`` of
        directed reports). With the default ``"server"`` it counts as the
        users' true graph: once their edges are collected, a step that reads it
        is charged a read of their edges in the clear.
        """
        return self._with_new_adjacency(adjacency, source=source, owned=False)

    def _with_new_adjacency(self, adjacency, *, source="server", owned=True):
        """:meth:`with_adjacency` for a matrix the library just made and no one else holds
        (``owned``): taken without a copy."""
        # a DataFrame's labels, a networkx graph's nodes, are this graph's node ids
        nx = sys.modules.get("networkx")
        named = _is_frame(adjacency) or (nx is not None and isinstance(adjacency, nx.Graph))
        ids = self._store.node_ids if named else None
        A, unit_weights = _as_adjacency(adjacency, self.n_nodes, ids, owned=owned)
        new = self._store.derive(adjacency=A,
                                 adjacency_origin=_origin(source, "with_adjacency", self))
        if unit_weights is not None:
            new.info().unit_weights = unit_weights
        return GraphData._from_store(new, self.rows)

    def _with_feature_names(self, feature_names):
        """The same rows, features and graph under other column names (a new store)."""
        new = self._store.derive(
            feature_names=_as_feature_names(feature_names, self._store.shape[1]))
        return GraphData._from_store(new, self.rows)

    def full(self):
        """The view of all nodes of the graph."""
        return self._replace(np.arange(self.n_nodes))

    # -------------------------------------------------------------------- memo
    def memo_get(self, key):
        """Cached whole-graph result for ``key`` or ``None`` (see :meth:`memo_set`)."""
        memo = self._store._memo
        with _MEMO_LOCK:
            if key in memo:
                memo.move_to_end(key)
                return memo[key]
        return None

    def memo_set(self, key, value):
        """Cache a whole-graph result on the shared store (a small LRU, never on estimators)."""
        memo = self._store._memo
        with _MEMO_LOCK:
            memo[key] = value
            memo.move_to_end(key)
            # Dense reports of a large graph are big (0.8 GB for facebook): bound bytes too.
            while len(memo) > 1 and (len(memo) > _MEMO_SIZE or
                                     sum(_nbytes(v) for v in memo.values()) > _MEMO_BYTES):
                memo.popitem(last=False)
        return value

    def operator(self, key, build):
        """An operator derived from the adjacency alone, built once per graph.

        ``build(adjacency)`` is called the first time ``key`` is asked for; the
        result (a normalised adjacency, its copy on a GPU, ...) is kept with the
        adjacency and shared by every view and every GraphData holding the same
        matrix (new features, a mechanism's reports, a fresh ``GraphData(X, A)``),
        so that a pipeline normalises and moves the graph once. A small LRU, never
        pickled; unlike :meth:`memo_set` it survives new features.

        Parameters
        ----------
        key : hashable
            What the operator is, including every option and the device.
        build : callable
            ``build(adjacency) -> operator``.

        Returns
        -------
        operator
        """
        info = self._store.info()
        if info is None:
            raise ValueError("This GraphData has no adjacency (adjacency=None).")
        ops = info.operators
        with info.lock:
            if key in ops:
                ops.move_to_end(key)
                return ops[key]
        value = build(self._store.adjacency)
        with info.lock:
            ops[key] = value
            ops.move_to_end(key)
            while len(ops) > _OPERATORS_SIZE:
                ops.popitem(last=False)
        return value

    # ------------------------------------------------------------------ export
    def to_pandas(self):
        """The selected rows as a :class:`pandas.DataFrame` indexed by node id.

        Like ``np.asarray(G)``, it hands the features to code that records nothing:
        when they are the users' data (not reports), the view's users are charged a
        read in the clear (epsilon inf), which a population with a budget refuses.
        """
        import pandas as pd
        self._note_export(_PANDAS_EXPORT, self.rows)
        X = self._store.features[self.rows]
        names = self.feature_names
        cols = list(names) if names is not None else [f"x{i}" for i in range(self.shape[1])]
        index = pd.Index(self.node_ids, name="node_id")
        if sp.issparse(X):
            # Column by column with SparseArray.from_spmatrix, whose fill value is 0 in every
            # pandas version: scipy's unstored entries are zeros, and some pandas releases'
            # DataFrame.sparse.from_spmatrix made them NaN.
            Xc = sp.csc_matrix(X)
            df = pd.DataFrame({j: pd.arrays.SparseArray.from_spmatrix(Xc[:, [j]])
                               for j in range(Xc.shape[1])}, index=index)
            df.columns = cols
            return df
        return pd.DataFrame(X, index=index, columns=cols)


def _origin(source, how, G):
    """The origin of data a caller sets on the graph ``G`` (see ``GraphData.with_features``).

    Public data set once ``G``'s users have sent something (its ledger holds an entry) may
    be computed from what they sent (``A.maximum(A.T)`` of directed edge reports): their
    origin says so, and ``new_simulation`` refuses them as it refuses the reports."""
    if source == "users":
        return RAW
    if source == "server":
        return ("derived", f"were set on the server with GraphData.{how}", True)
    if source == "public":
        sent = G._store.population._has_sent()   # (not known: as if they had)
        after = "" if sent is False else _AFTER_REPORTS if sent else _UNKNOWN
        return ("derived", f"were set with GraphData.{how}{_SET_AS_PUBLIC}{after}", False)
    raise ValueError(f"source must be 'server', 'users' or 'public', got {source!r}.")


def _unwritable(X):
    """Features ``X`` whose memory no one can write any more: ``X`` itself when every array
    it views is read-only down to a read-only buffer (bytes, a memory map opened for
    reading), else a copy (the caller's array, or a view of it, may be written after the
    data are set; an array that owns its memory can be made writeable again)."""
    arrays = (X.data, X.indices, X.indptr) if sp.issparse(X) else (X,)
    for a in arrays:
        while isinstance(a, np.ndarray):
            if a.flags.writeable or a.base is None:
                return X.copy()
            a = a.base
        try:
            if not memoryview(a).readonly:
                return X.copy()
        except TypeError:   # not a buffer: whoever holds it may write it
            return X.copy()
    return X


def _made_by_a_step(origin):
    """Whether data of this origin are reports of a simulated collection or were computed
    on the server from data that are not the users' own (reports, or public data: the two
    are not told apart). Data set with ``source="public"`` before the users sent anything
    are the caller's word; set after, they may be computed from the reports."""
    return origin[0] == "derived" and not reads_users_data(origin) and \
        not origin[1].endswith(_SET_AS_PUBLIC)


def edges_collected(origin):
    """Whether an adjacency of this ``origin`` holds edges an edge mechanism collected (the
    reports real devices sent, an edge mechanism's output, or what a server step computed
    from either: a degree-bounded sample of them), not the users' true lists."""
    return origin[0] == "reports" or (origin[0] == "derived" and len(origin) > 3 and
                                      origin[3] is True)


def reads_users_data(origin):
    """Whether data of this origin are the users' data, or were computed from them."""
    return origin[0] == "raw" or (origin[0] == "derived" and len(origin) > 2 and origin[2])


@contextlib.contextmanager
def refusal_is_read(step, part, users, what):
    """Charge a refusal raised inside the block because of the values of the users'
    ``part`` as a read of that part by ``step``, then raise it (Design page, "Refusals
    are reads").

    Refused or answered tells something of the values checked: a ``ValueError`` raised
    inside is charged by :meth:`Population.note_refusal
    <skldp.population.Population.note_refusal>` before it leaves. A budget's refusal and
    an :class:`~skldp.exceptions.InvalidParameterError` (the call's own arguments) pass
    free, and so does a ``NotFittedError`` (a ``ValueError`` too, about the step); keep
    every check of arguments and public facts (shapes, dtypes, declared domains) out of
    the block. Under a budget that refuses the read a
    :class:`~skldp.population.BudgetExceededError` is raised instead, without the
    refusal's message (it would tell what the check found).

    Parameters
    ----------
    step : estimator or str
        The refusing step, or its name.
    part : {"features", "labels", "edges"}
    users : GraphData, (Population, ndarray of uint64), None or callable
        Whose values the checks read. A GraphData: all its nodes (its view's rows for
        labels), charged only when its ``part`` holds the users' own values (their raw
        data or values the server computed from it; edges an edge mechanism did not
        collect); a pair: a population and its users' keys (a plain array's users);
        ``None``: no users' values (nothing charged); a callable returning one of these,
        asked on a refusal only.
    what : str
        What is refused, without dots: the ledger names the read
        ``"<step> (its refusal of <what>)"``.
    """
    try:
        yield
    except (PrivacyBudgetError, InvalidParameterError, NotFittedError):
        raise
    except ValueError as exc:
        error = exc
    else:
        return
    _charge_refusal(step, part, users, what)
    raise error


def _charge_refusal(step, part, users, what):
    """The charge of :func:`refusal_is_read`."""
    name = step if isinstance(step, str) else step_kind(step)
    if callable(users):
        users = users()
    if users is None:
        return
    if isinstance(users, GraphData):
        st = users._store
        population = st.population
        if part == "labels":   # (labels: the view's rows, whoever holds them)
            keys = distinct(users.node_keys[users.rows])
            token = f"{st.token}:{content_hash(keys)}"
        else:
            origin = st.feature_origin if part == "features" else st.adjacency_origin
            if not reads_users_data(origin) or (part == "edges" and (
                    st.adjacency is None or edges_collected(origin))):
                return   # reports, or public data: a refusal of them tells nothing more
            keys, token = users.node_keys, st.token
    else:
        population, keys = users
        keys = distinct(np.asarray(keys, dtype=np.uint64))
        token = content_hash(keys)
    try:
        population.note_refusal(f"{name} (its refusal of {what})", part, keys, token)
    except PrivacyBudgetError:
        raise BudgetExceededError(
            f"{name.rsplit('.', 1)[-1]} refuses these users' {part} for their values: "
            "refused or answered tells the server something of them, a read of their "
            f"{part} in the clear (epsilon=inf) that no budget admits (this "
            f"population's is {population.budget:.4g} per user). Nothing was read. Check and "
            "correct the data where it is held (on the users' devices; in a simulation, "
            "before the GraphData is built) and try again.") from None


def _as_feature_names(names, n_features):
    """``names`` as a new 1-D object array of ``n_features`` names (a copy: the caller may
    edit its array), from any iterable in order; each element is one name (a tuple too)."""
    expected = f"feature_names must be a sequence of {n_features} names (one per column)"
    if isinstance(names, (str, bytes)):
        raise TypeError(f"{expected}, got the single string {names!r}. List the names: "
                        "feature_names=['a', 'b', ...].")
    if isinstance(names, (set, frozenset)):
        raise TypeError(f"{expected} in the columns' order, got a {type(names).__name__}, "
                        "whose order is arbitrary: the names would label other columns. "
                        "Pass a list of the names in the order of the columns.")
    if isinstance(names, np.ndarray):
        if names.shape != (n_features,):
            raise ValueError(f"feature_names must have length {n_features}, got shape "
                             f"{names.shape}.")
        values = names.tolist()
    else:
        try:
            values = list(names)
        except TypeError:
            raise TypeError(f"{expected}, got {names!r}.") from None
    if len(values) != n_features:
        raise ValueError(f"feature_names must have length {n_features}, got {len(values)}.")
    out = np.empty(n_features, dtype=object)
    for j, name in enumerate(values):   # (one by one: tuples of names are no second axis)
        out[j] = name
    return out


def _row_positions(key, n_rows):
    """Validate a row index (not a slice) of a view of ``n_rows`` rows -> int or bool array."""
    if isinstance(key, (bool, np.bool_)):
        raise IndexError("GraphData does not take a single boolean as an index; use a "
                         f"boolean mask of length {n_rows}.")
    if isinstance(key, numbers.Integral):
        key = [key]
    if isinstance(key, (list, tuple)):
        is_bool = [isinstance(v, (bool, np.bool_)) for v in key]
        if any(is_bool) and not all(is_bool):   # numpy reads [True, 2] as positions [1, 2]
            raise IndexError(
                f"GraphData's row index [{_first(list(key), 6)}] mixes booleans and integers "
                f"(its entry {is_bool.index(True)} is a boolean, its entry "
                f"{is_bool.index(False)} is not): give either a boolean mask of length "
                f"{n_rows} (one True or False per row) or integer positions (int(b) for "
                "a boolean meant as 0 or 1).")
    given, key = key, np.asarray(key)
    if key.dtype == bool:
        if key.ndim == 0:
            raise IndexError("GraphData does not take a single boolean as an index; use a "
                             f"boolean mask of length {n_rows}.")
        if key.shape != (n_rows,):
            got = f"length {key.shape[0]}" if key.ndim == 1 else f"shape {key.shape}"
            raise IndexError(f"GraphData takes a 1-D boolean mask of length {n_rows} (one "
                             f"per row), got {got}"
                             + (": flatten a column with mask.ravel()." if n_rows in
                                key.shape and key.size == n_rows else "."))
        return key
    if key.size == 0:  # G[[]]: np.asarray([]) is float; an empty view, as numpy gives
        return np.zeros(0, dtype=np.intp)
    if not np.issubdtype(key.dtype, np.integer):
        _check_no_missing_index(given, key)
        raise IndexError(f"GraphData row indices must be integers or booleans, got dtype "
                         f"{key.dtype}: rows are indexed by position, not by node id. "
                         "To select nodes by id: G[G.positions(ids)].")
    if key.ndim == 0:
        key = key.reshape(1)
    if key.ndim != 1:
        raise IndexError(f"GraphData takes a 1-D array of row positions, got shape {key.shape}.")
    bad = (key >= n_rows) | (key < -n_rows)
    if bad.any():
        raise IndexError(f"row index {key[bad][0]} is out of range for a view of {n_rows} rows "
                         f"(valid positions: {-n_rows}..{n_rows - 1}): rows are indexed by "
                         "position, not by node id. To select nodes by id: "
                         "G[G.positions(ids)].")
    return key


def _check_no_missing_index(given, key):
    """Raise if the row index ``given`` (``key`` as an array, neither integers nor
    booleans) holds missing values (None, NaN, pandas' NA: a nullable mask or positions
    with gaps), saying how to fill or drop them (an error path)."""
    if key.dtype.kind not in "Of" or key.ndim != 1:
        return
    values = key.tolist()
    missing = [i for i, v in enumerate(values) if _missing_value(v)]
    if not missing:
        return
    present = [v for v in values if not _missing_value(v)]
    is_mask = getattr(getattr(given, "dtype", None), "kind", "") == "b" or (
        bool(present) and all(isinstance(v, (bool, np.bool_)) for v in present))
    i = missing[0]
    more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
    fix = ("a mask says True or False for every row: fill it first, mask.fillna(False) to "
           "leave those rows out (np.where(pd.isna(mask), False, mask) for an array)"
           if is_mask else "positions must be integers: drop the missing ones first "
           "(positions.dropna() for a pandas Series), then index with them as integers "
           "(.astype(int))")
    raise IndexError(f"GraphData's row index holds a missing value ({values[i]!r}) at "
                     f"position {i}{more}: {fix}.")


def _missing_value(v):
    """Whether ``v`` is None, NaN or pandas' NA (an entry of an index)."""
    if v is None or _is_pandas_na(v):
        return True
    return isinstance(v, float) and v != v


def _nbytes(value):
    """Approximate memory held by a memo entry (features of a GraphData, or an array)."""
    if isinstance(value, GraphData):   # host and device copies of its features
        st = value._store
        t = st._on_device
        held = 0 if t is None else t.numel() * t.element_size()
        return held + (0 if st._features is None else _nbytes(st._features))
    if sp.issparse(value):
        return value.data.nbytes + value.indices.nbytes + value.indptr.nbytes
    return getattr(value, "nbytes", 0)


def _ids_to_keys(ids):
    """Stable uint64 key per node id (integers map to themselves; see
    :func:`skldp.device._random.ids_to_keys`, which the devices use too)."""
    return ids_to_keys(ids)


def _is_symmetric(A):
    """Whether the canonical CSR ``A`` equals its transpose, entry for entry.

    The transpose of a canonical CSR matrix, built by scipy's CSR -> CSC
    conversion, has sorted indices: ``A`` is symmetric iff the two share their
    arrays' contents. The row and column counts are compared first (no
    transpose for most directed graphs). As fast as ``(A != A.T).nnz == 0`` on a
    symmetric graph (the transpose dominates), without its difference matrix.
    """
    if A.nnz == 0:
        return True
    n = A.shape[0]
    if not np.array_equal(np.bincount(A.indices, minlength=n), np.diff(A.indptr)):
        return False
    T = A.T.tocsr()
    return bool(np.array_equal(T.indices, A.indices) and np.array_equal(T.data, A.data))


def _probably_symmetric(A, seed=0):
    """A cheap check of a caller's claim that ``A`` is symmetric (``symmetric=True``).

    ``x^T A y = y^T A x`` for symmetric ``A``; for random positive ``x, y`` a
    directed edge without its reverse (or with another weight) breaks the
    equality unless it weighs less than about 1e-9 of the total. Two sparse
    products instead of a transpose; the row and column counts are compared too.
    """
    if A.nnz == 0:
        return True
    n = A.shape[0]
    if not np.array_equal(np.bincount(A.indices, minlength=n), np.diff(A.indptr)):
        return False
    from .utils._adjacency import _row_chunks
    rng = np.random.default_rng(seed)
    x, y = rng.random(n) + 0.5, rng.random(n) + 0.5
    a = b = 0.0
    for r0, r1 in _row_chunks(A.indptr):   # float64 values, one chunk of rows at a time
        lo, hi = A.indptr[r0], A.indptr[r1]
        C = sp.csr_matrix((A.data[lo:hi].astype(np.float64), A.indices[lo:hi],
                           A.indptr[r0:r1 + 1] - lo), shape=(r1 - r0, n))
        a += float(x[r0:r1] @ (C @ y))
        b += float(y[r0:r1] @ (C @ x))
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _is_one_sided(A):
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    upper = np.count_nonzero(A.indices > rows)
    lower = np.count_nonzero(A.indices < rows)
    return (upper == 0) != (lower == 0)


def duplicate_ids_message(ids, keys=None):
    """The error for ``node_ids`` that name a user twice: how many ids repeat and the
    first of them with its rows (an error path: ``keys``, the users' keys, default to
    the ids' own)."""
    keys = _ids_to_keys(ids) if keys is None else np.asarray(keys)
    ids = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)   # (plain reprs)
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
    counts = np.diff(np.r_[starts, len(sk)])
    repeated = starts[counts > 1]
    if not len(repeated):
        return "node_ids must be unique."
    # the repeated id whose first row comes first, and its rows
    groups = [order[s:s + c] for s, c in zip(starts, counts, strict=True) if c > 1]
    rows = min(groups, key=lambda g: g[0])
    values = [ids[i] for i in rows.tolist()]
    extra = int((counts[counts > 1] - 1).sum())
    shown = ", ".join(map(str, rows[:5].tolist())) + \
        (f" and {len(rows) - 5} more" if len(rows) > 5 else "")
    same = all(v == values[0] and type(v) is type(values[0]) for v in values)
    what = (f"{values[0]!r} is at rows {shown}" if same else
            f"{', '.join(map(repr, values[:5]))} (rows {shown}) are one user key")
    return (f"node_ids must be unique, but {len(repeated)} id(s) appear more than once "
            f"({extra} extra row(s)): {what}.")


def _all_unique(ids):
    """Whether the 1-D array ``ids`` has no repeated value (a sort: numpy's hash-based
    ``unique`` is 20x slower on a million integers)."""
    if ids.dtype == object:
        try:   # (hashed: sorting tuple ids compares them in Python, 5x slower)
            return len(set(ids.tolist())) == len(ids)
        except TypeError:   # an unhashable id (a tuple holding a list) sorts
            return len(distinct(ids)) == len(ids)
    s = np.sort(ids, kind="stable")
    return not np.any(s[1:] == s[:-1])
