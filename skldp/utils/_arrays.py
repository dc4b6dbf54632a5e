"""Checks of plain arrays and frames, below the data contract (nothing here knows graphs).

:mod:`skldp._graph_data` and :mod:`skldp.utils.validation` both use them; keeping them
apart from ``validation`` (which imports ``GraphData``) leaves no import cycle.
"""

import sys
import warnings

import numpy as np
import scipy.sparse as sp

from ._blocks import row_blocks

__all__ = ["is_graph_data", "refuse_graph_data",
           "canonical_csr", "check_finite_features", "check_finite_output", "check_float32_range",
           "check_not_masked", "check_sparse_structure",
           "distinct", "frame_column_names", "member", "sorted_lookup", "torch_blocks_sum",
           "torch_sum_is_finite", "unique_inverse", "within_bounds"]


def check_not_masked(X):
    """Refuse a numpy masked array: its hidden values would be read as data."""
    if isinstance(X, np.ma.MaskedArray):
        raise TypeError(
            "features are a numpy masked array: its masked entries would be read as data "
            "(their hidden values). Fill them first, e.g. X.filled(np.nan), and impute the "
            "missing values on each device (a public, stateless step).")


def check_sparse_structure(M, name="the matrix", verb="is"):
    """Raise a ``ValueError`` if the index arrays of the scipy sparse ``M`` do not fit its
    shape (an index past the end or below 0, a decreasing index pointer, arrays of other
    lengths). scipy checks them only in part when a matrix is built from arrays, and its
    conversions then read and write outside the arrays. ``M`` is left as it is.
    """
    fmt = M.format
    try:
        if fmt in ("csr", "csc", "bsr"):
            # a new object over the same arrays: check_format may reassign (never edit)
            # the arrays of the matrix it checks
            type(M)((M.data, M.indices, M.indptr), shape=M.shape,
                    copy=False).check_format(full_check=True)
        elif fmt == "coo":
            if not len(M.row) == len(M.col) == len(M.data):
                raise ValueError(f"row, col and data have lengths {len(M.row)}, "
                                 f"{len(M.col)} and {len(M.data)}")
            for axis, idx in enumerate((M.row, M.col)):
                if len(idx) and (idx.min() < 0 or idx.max() >= M.shape[axis]):
                    raise ValueError(f"axis {axis} indices must lie in 0..{M.shape[axis] - 1}, "
                                     f"got {idx.min()}..{idx.max()}")
    except ValueError as exc:
        raise ValueError(f"{name} {verb} not a valid sparse {fmt} matrix of shape "
                         f"{M.shape}: {exc}. Its index arrays were edited or built by "
                         "hand; build it again from its entries, e.g. "
                         "sp.coo_array((data, (row, col)), shape=shape).tocsr().") from None


def canonical_csr(X):
    """A scipy sparse ``X`` as CSR in canonical form (each cell stored once, duplicate entries
    summed, indices sorted): ``X`` itself when it already is, else a new matrix (the caller's
    is never edited). Dense input is returned as it is.

    A cell's value is the sum of its stored entries (what ``toarray`` reads): a check or a
    clip of the entries one by one is one of that value only in canonical form.
    """
    if not sp.issparse(X):
        return X
    # judged from the arrays, never from the object's cached flag: a caller can set it,
    # and an edit of its arrays in place leaves it stale
    X = X.tocsr()
    fresh = type(X)((X.data, X.indices, X.indptr), shape=X.shape, copy=False)
    if fresh.has_canonical_format:
        return X
    X = type(X)((X.data.copy(), X.indices.copy(), X.indptr.copy()), shape=X.shape)
    X.sum_duplicates()
    return X


def check_finite_features(X, name="features", feature_range=None):
    """Raise a clear error if a dense or sparse matrix (or a torch tensor) holds NaN or inf.

    The message advises where to impute them. Under the default ``name`` (the check of
    a local DP mechanism or an on-device step) it is a public, stateless step on each
    device, the one a mechanism accepts before it. A ``name`` that names a server step
    (``"the features given to PPRPropagation"``, from
    :meth:`skldp.GraphData.require_finite_features`, or to a model) gets an imputer in
    front of that step: a mechanism's reports hold no NaN, so there are none before it.
    A mechanism's public ``feature_range`` gives the imputer a fill value inside it.
    """
    if type(X).__module__.startswith("torch"):   # on its device: one number comes back
        if torch_sum_is_finite(X):
            return X
        X1 = X.reshape(1) if X.dim() == 0 else X
        for rows in _tensor_row_blocks(X1):   # the sum overflowed, or an entry is bad
            bad = (~X1[rows].isfinite()).nonzero()
            if len(bad):
                first = bad[0].tolist()
                first[0] += rows.start
                value = float(X1[tuple(first)])
                raise ValueError(_not_finite(name, first, feature_range, X1.shape,
                                             infinite=np.isinf(value)))
        return X
    data = X.data if sp.issparse(X) else np.asarray(X)
    # Fast path without a boolean temporary of the data's size: a sum is finite only if
    # every term is (it may overflow to inf for finite terms; then check element-wise).
    with np.errstate(over="ignore", invalid="ignore"):
        if data.dtype.kind in "fc" and np.isfinite(data.sum()):
            return X
    if not np.all(np.isfinite(data)):
        if sp.issparse(X):   # (no dense copy: at a million users it would not fit)
            bad, value = _first_bad_stored_entry(X)
        else:
            bad = np.argwhere(~np.isfinite(data))[0]
            value = data[tuple(bad)]
        raise ValueError(_not_finite(name, bad, feature_range, X.shape, sp.issparse(X),
                                     np.isinf(value)))
    return X


def _first_bad_stored_entry(X):
    """The position ``(row, column)`` of the first cell (in row-major order) of the sparse
    matrix ``X`` with a NaN or infinite stored entry, and that cell's value (the sum of its
    stored entries, as ``X.toarray()`` reads it), from its stored entries only."""
    C = sp.coo_matrix(X)   # (CSR, CSC: the entries as stored, duplicates kept)
    bad = np.flatnonzero(~np.isfinite(C.data))
    rows, cols = C.row[bad].astype(np.int64), C.col[bad].astype(np.int64)
    k = np.lexsort((cols, rows))[0]
    r, c = int(rows[k]), int(cols[k])
    value = C.data[(C.row == r) & (C.col == c)].sum()
    return np.array([r, c]), value


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_finite_output(Z, step):
    """Raise a clear error if the output ``Z`` (dense, sparse or a torch tensor) of the
    graph step ``step``, computed from finite features, holds NaN or inf: its sums over
    neighbours overflowed the dtype. One sum in the fast path (one number leaves a device).
    """
    if type(Z).__module__.startswith("torch"):
        if torch_sum_is_finite(Z):
            return Z
        dtype = str(Z.dtype).replace("torch.", "")
    else:
        data = Z.data if sp.issparse(Z) else np.asarray(Z)
        with np.errstate(over="ignore", invalid="ignore"):
            if data.dtype.kind not in "fc" or np.isfinite(data.sum()) or \
                    np.all(np.isfinite(data)):   # (a sum of finite terms may overflow)
                return Z
        dtype = data.dtype.name
    raise ValueError(
        f"{step}'s output holds NaN or infinite values although its input features are "
        f"finite: its sums over neighbours overflowed {dtype} (largest finite value "
        f"{_FLOAT32_MAX if dtype == 'float32' else np.finfo(np.float64).max:.3g}). Scale the "
        "features before the graph steps, e.g. divide them by a public constant so that they "
        "lie in [-1, 1] (in a local DP pipeline, a mechanism's feature_range does it).")


def check_float32_range(X, name="features"):
    """Refuse float64 data beyond float32's range: graph steps and models compute in
    float32 by default, where it would become inf (and then NaN probabilities)."""
    data = X.data if sp.issparse(X) else X
    if isinstance(data, np.ndarray) and data.dtype == np.float64 and data.size and \
            max(-float(data.min()), float(data.max())) > _FLOAT32_MAX:
        raise ValueError(f"{name} exceed float32's range (|x| <= {_FLOAT32_MAX:.3g}), in "
                         "which graph steps and models compute: rescale them.")
    return X


# Elements per block of a tensor reduced in float64: torch casts a whole input to a
# reduction's dtype first (a float32 tensor's float64 copy takes twice its memory).
_TORCH_BLOCK = 1 << 24


def _tensor_row_blocks(X):
    """:func:`row_blocks` of the (at least 1-d) tensor ``X``, ``_TORCH_BLOCK`` entries each."""
    return row_blocks(X.shape[0], X[0].numel() if X.shape[0] else 1, _TORCH_BLOCK)


def torch_blocks_sum(X, fn):
    """``sum(fn(block))`` over blocks of rows of the tensor ``X`` (``fn`` returns a
    float64 scalar tensor): the total stays on the device, no float64 copy of ``X``."""
    import torch
    X = X.reshape(1) if X.dim() == 0 else X
    total = torch.zeros((), dtype=torch.float64, device=X.device)
    for rows in _tensor_row_blocks(X):
        total += fn(X[rows])
    return total


def torch_sum_is_finite(X):
    """Whether the float64 sum of the tensor ``X`` is finite (it is if every entry is;
    an overflow of finite entries reads as not finite). One number leaves the device."""
    import torch
    return bool(torch.isfinite(torch_blocks_sum(X, lambda b: b.sum(dtype=torch.float64))))


def within_bounds(X, lo, hi):
    """Whether every entry of the dense array ``X`` is finite and lies in
    ``[lo[j], hi[j]]`` of its column ``j``.

    Bounds alike for every column (the usual case) need one reading pass: ``X``'s
    smallest and largest entries, by torch's ``aminmax`` on the process's threads when
    torch is loaded (3x numpy's two passes on 2 cores), else numpy's ``min`` and
    ``max``. NaN and inf show in the extremes, so no finiteness pass is needed.
    """
    if X.size == 0:
        return True
    if np.all(lo == lo[0]) and np.all(hi == hi[0]):
        smallest, largest = _extremes(X)
    else:
        smallest, largest = X.min(axis=0), X.max(axis=0)
    # (finite extremes: infinite bounds would let inf through)
    return bool(np.all(np.isfinite(smallest)) and np.all(np.isfinite(largest))
                and np.all(smallest >= lo) and np.all(largest <= hi))


def _extremes(X):
    """``(X.min(), X.max())`` of a dense float array, in one pass where torch can."""
    torch = sys.modules.get("torch")   # never imported for this alone: 2 s the first time
    # (a view of X's memory: only an array stored in one piece, never a copy of it)
    if (torch is not None and X.dtype in (np.float32, np.float64)
            and (X.flags.c_contiguous or X.flags.f_contiguous)):
        with warnings.catch_warnings():
            # a read-only array (the caller's, or a memory map) is only read here
            warnings.simplefilter("ignore", UserWarning)
            T = torch.from_numpy(X)
        smallest, largest = T.aminmax()
        return float(smallest), float(largest)
    return X.min(), X.max()


# A public, stateless map each device runs on its own row: the imputer a local DP
# mechanism accepts before it (one fitted on the users' rows runs on the server).
_DEVICE_IMPUTER = 'NodeWise(SimpleImputer(strategy="constant", fill_value={}{}), on_device=True)'


def _bounds_text(feature_range):
    """``"lo, hi"``: the public bounds as text (two numbers, or one list of each column's),
    or the words when unknown."""
    try:
        lo, hi = (np.asarray(b, dtype=np.float64) for b in feature_range)
    except (TypeError, ValueError):
        return "lo, hi"
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        return "lo, hi"
    if lo.ndim == 0 and hi.ndim == 0:
        return f"{float(lo)!r}, {float(hi)!r}"
    return f"{lo.tolist()!r}, {hi.tolist()!r}"   # (per column: each clipped into its own)


def _fill_value(feature_range, shape, column):
    """A fill value inside the public ``feature_range`` (the largest lower bound, when it
    is in every feature's range; else ``column``'s lower bound) and a sentence saying so;
    ``(0.0, "")`` when the range is unknown or malformed (its own check names that)."""
    if feature_range is None or len(shape) != 2:
        return 0.0, ""
    try:
        lo, hi = feature_range
        lo, hi = (np.broadcast_to(np.asarray(b, dtype=np.float64), (shape[1],))
                  for b in (lo, hi))
    except (TypeError, ValueError):
        return 0.0, ""
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        return 0.0, ""
    if lo.max() <= hi.min():
        return float(lo.max()), f" ({float(lo.max())!r} lies in every feature's feature_range.)"
    fill = float(lo[column])
    return fill, (f" ({fill!r} is column {column}'s lower bound; no one value lies in every "
                  "feature's feature_range, so a NaN of another column filled with it is "
                  "clipped into that column's range.)")


def _not_finite(name, bad, feature_range=None, shape=(), sparse=False, infinite=False):
    where = f"{name} contain NaN or infinite values (first at row {bad[0]}, column {bad[-1]}). "
    # (an imputer fitted on an empty sparse row keeps no column unless told to)
    keep = ", keep_empty_features=True" if sparse else ""
    bounds = _bounds_text(feature_range) if feature_range is not None else "lo, hi"
    if name == "features":   # a mechanism's (or an on-device step's) check
        # (np.clip keeps NaN for the imputer; nan_to_num would make it 0, maybe out of range)
        inf = ("That one is infinite: an imputer fills missing values only, so clip each "
               f"user's row into the public bounds first (np.clip(row, {bounds}), on the "
               "device, or before building the GraphData in a simulation), then impute any "
               "NaN. " if infinite else "")
        fill, why = _fill_value(feature_range, shape, int(bad[-1]))
        return where + inf + (
            "Impute them first; before a local DP mechanism, on each user's device with a "
            f"public, stateless step: in a simulation {_DEVICE_IMPUTER.format(repr(fill), keep)}"
            ", on real devices before skldp.device encodes the row (the mechanism refuses an "
            "imputer fitted on the users' data, such as NodeWise(SimpleImputer()), which runs "
            f"on the server).{why}")
    clip = (f"X = G.features.copy(); X.data = np.clip(X.data, {bounds}); G.with_features(X)"
            if sparse else f"G.with_features(np.clip(G.features, {bounds}))")
    inf = ("That one is infinite: an imputer fills missing values only, so clip the "
           f"features first ({clip}). " if infinite else "")
    return where + inf + (   # a server step's: the features are no mechanism's reports
        "Impute them before this step, e.g. with NodeWise(SimpleImputer()). In a local DP "
        "pipeline the mechanism comes first (its reports hold no NaN): impute on each "
        f"user's device before it, with {_DEVICE_IMPUTER.format('0.0', keep)} (a fill_value "
        "inside the mechanism's feature_range).")


def frame_column_names(X):
    """A pandas DataFrame's column names when all are strings, else ``None``.

    scikit-learn's rule for ``feature_names_in_``: other column labels (integers, a
    mix) give ``None``; so does anything that is not a DataFrame.
    """
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "iloc"):
        return None
    names = np.asarray(columns, dtype=object)
    if len(names) and all(isinstance(c, str) for c in names):
        return names
    return None


# Elements of an array whose random probes stay in the CPU's caches (8 bytes each: 1 MiB)
_CACHED = 1 << 17


def sorted_lookup(sorted_ref, x, sorter=None):
    """``(pos, found)``: where each of ``x`` is in ``sorted_ref`` and whether it is there.

    ``sorted_ref`` is sorted, or ``sorter`` sorts it (as in ``np.searchsorted``); ``pos``
    indexes ``sorted_ref`` itself, and is a valid index (meaningless) where not ``found``
    (0 when ``sorted_ref`` is empty). One binary search, no copy of ``sorted_ref``.
    """
    n = len(sorted_ref)
    if n == 0:
        return np.zeros(np.shape(x), dtype=np.intp), np.zeros(np.shape(x), dtype=bool)
    x = np.asarray(x)
    if n > _CACHED and x.ndim == 1 and len(x) > _CACHED and x.dtype.kind in "iu" \
            and not np.all(x[1:] >= x[:-1]):
        # many probes of a large array: in sorted order, each binary search starts where
        # the last ended (1.5M user keys: 0.29 -> 0.08 s, the sort included)
        order = np.argsort(x)
        pos, found = np.empty(len(x), np.intp), np.empty(len(x), bool)
        pos[order], found[order] = sorted_lookup(sorted_ref, x[order], sorter)
        return pos, found
    pos = np.minimum(np.searchsorted(sorted_ref, x, sorter=sorter), n - 1)
    if sorter is not None:
        pos = sorter[pos]
    return pos, sorted_ref[pos] == x


def distinct(a):
    """``np.unique(a)``: the sorted distinct values of ``a`` (flattened). Integers are
    sorted and compared with their neighbours: numpy's hash-based ``unique`` takes 5 s on
    5M user keys, a sort 0.04 s."""
    a = np.ravel(a)
    if a.dtype.kind not in "iub" or len(a) == 0:
        return np.unique(a)
    s = np.sort(a)
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def member(x, ref):
    """``np.isin(x, ref)``. Integer keys spread over a wide range (hashed user keys) are
    looked up by sorts: numpy's sort-based ``isin`` (with a hash-based ``unique`` of
    ``ref``) takes 1.3 s on 3M user keys, this 0.17 s. Keys in a small range (node
    positions, small integer ids) keep numpy's table, faster still."""
    x, ref = np.asarray(x), np.ravel(ref)
    if (x.dtype != ref.dtype or x.dtype.kind not in "iu" or x.ndim != 1 or not len(x)
            or not len(ref) or int(ref.max()) - int(ref.min()) <= 6 * (len(x) + len(ref))):
        return np.isin(x, ref)   # (numpy takes its table where the range is that small)
    return sorted_lookup(np.sort(ref), x)[1]


def unique_inverse(y):
    """``np.unique(y, return_inverse=True)`` of a 1-D array; integer labels in a range
    under 2**16 are counted instead of sorted (a 5M-row fit's labels: 0.65 -> 0.03 s)."""
    y = np.asarray(y)
    if y.dtype.kind in "iu" and y.ndim == 1 and len(y):
        lo, hi = int(y.min()), int(y.max())
        if hi - lo < 2**16:
            # offsets from the minimum, computed where they cannot wrap around
            off = (y - y.dtype.type(lo)) if y.dtype == np.uint64 else y.astype(np.int64) - lo
            off = off.astype(np.intp, copy=False)
            present = np.bincount(off) > 0
            lookup = np.cumsum(present, dtype=np.intp) - 1
            # (in the dtype's modular arithmetic: the classes themselves are in its range)
            classes = np.flatnonzero(present).astype(y.dtype) + y.dtype.type(lo)
            return classes, lookup[off]
    return np.unique(y, return_inverse=True)


def is_graph_data(value):
    """Whether ``value`` is a :class:`~skldp.GraphData` (a ``PairData`` too), told by the
    module of its class: the modules below GraphData cannot import it."""
    return any(c.__module__ == "skldp._graph_data" for c in type(value).__mro__)


def refuse_graph_data(value, func, arg, instead=None):
    """Refuse a GraphData given to the plain-array argument ``arg`` of ``func``.

    Called before anything converts it: ``np.asarray`` reads a GraphData as its view's
    feature rows (never its adjacency) and charges their users a read in the clear
    (epsilon inf), for a call that then fails or computes something else. ``instead``
    says what to pass or use (default: the graph's adjacency).
    """
    if is_graph_data(value):
        instead = instead or f"Pass its adjacency: {arg}=G.adjacency."
        raise TypeError(f"{func} takes plain arrays, but {arg} is a GraphData. {instead} "
                        "Nothing was read or charged.")
