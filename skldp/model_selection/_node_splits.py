"""Node splits used by the papers: random 50/25/25 over labelled nodes, Planetoid."""

import numbers
import sys
from collections.abc import Mapping

import numpy as np
from sklearn.model_selection import BaseCrossValidator, StratifiedKFold
from sklearn.utils import check_random_state
from sklearn.utils.extmath import _approximate_mode
from sklearn.utils.validation import column_or_1d

from ..population._reports import LabelReports, collection_of
from ..utils._arrays import is_graph_data, member

__all__ = ["random_node_split", "per_class_node_split", "planetoid_split", "LabelledKFold"]

_UNLABELLED_MARKERS = ("-1 (any negative number or NaN) for numeric labels, None, NaN or "
                       "pd.NA for non-numeric ones")


def _split_rng(random_state, who):
    """``check_random_state(random_state)``, refusing a numpy ``Generator`` by name.

    The splitters draw with the ``RandomState`` API (as scikit-learn's do);
    ``check_random_state``'s own message for a ``Generator`` named neither the
    parameter nor what it accepts.
    """
    if isinstance(random_state, np.random.Generator):
        raise ValueError(
            f"{who}'s random_state must be an int, a numpy RandomState or None, got a "
            f"numpy Generator ({random_state!r}). Pass an int seed, e.g. "
            "int(rng.integers(2**31)), or np.random.RandomState(seed).")
    return check_random_state(random_state)


def _is_unlabelled(v):
    if v is None:
        return True
    if isinstance(v, numbers.Real):
        return not v >= 0   # NaN: not >= 0
    pd = sys.modules.get("pandas")   # a pd.NA exists only once pandas is imported
    return pd is not None and v is getattr(pd, "NA", None)


def _is_nan(v):
    return isinstance(v, (float, np.floating)) and v != v


def _strings_with_nan(y):
    """Whether the list ``y`` holds strings and NaN markers (with or without ``None``) only."""
    flat = [v[0] if isinstance(v, (list, tuple)) and len(v) == 1 else v for v in y]
    return (any(_is_nan(v) for v in flat) and any(isinstance(v, str) for v in flat)
            and all(v is None or isinstance(v, str) or _is_nan(v) for v in flat))


def _label_column(y, *, warn=False, X=None):
    """``y`` as a 1-D array (``column_or_1d``), the NaN markers of string labels kept.

    NumPy turns a list of strings with a NaN (pandas' ``tolist()`` of missing
    strings) into a str array where NaN is the text ``"nan"``: a class, every
    row labelled. Such a list becomes an object array instead, as one with
    ``None`` does; any other input gives the same array as before. With ``X``
    (the GraphData the labels are of), a pandas Series indexed by other users
    than ``X``'s rows is refused (:func:`_check_label_index`).
    """
    if is_graph_data(y):   # before np.asarray, which charges its features' read
        raise TypeError("y must be the labels (an array-like of shape (n_nodes,)), got a "
                        "GraphData, whose conversion to an array reads its users' features "
                        "in the clear. Pass the labels. Nothing was read or charged.")
    if X is not None:
        _check_label_index(y, X)
    if isinstance(y, (list, tuple)) and _strings_with_nan(y):
        y = np.array(y, dtype=object)
    cid = collection_of(y)   # reports the users sent stay marked (a fit reads them free)
    y1 = column_or_1d(y, warn=warn)
    return y1 if cid is None else LabelReports(y1, cid)


# a misaligned Series in the messages: (its name, the view's, what it holds, how it is read)
_SERIES_ROLES = {
    "y": ("y", "X", "labels",
          "labels are read by position, so users would get other users' labels"),
    "mask": ("mask", "G", "mask", "G[mask] reads a mask by position, so other users would "
             "be selected"),
}


def _check_label_index(y, X, role="y"):
    """Refuse labels in a pandas Series (or one-column DataFrame) indexed by user ids
    that are not ``X``'s rows in their order: labels are read by position, so user
    ``a``'s label would be taken for the user in ``a``'s position (and sent in that
    user's name). ``role="mask"``: ``y`` is a boolean mask of ``X[y]`` (the same rule,
    so that a mask and the labels it selects are read alike).

    Refused: an index naming exactly ``X``'s users in another order, or mostly users
    of the graph, some not ``X``'s (unless its values are integers that can be
    positions, ``0 <= i < n_nodes``). Any other index is positional, as in
    scikit-learn: a new Series' ``RangeIndex``, the graph positions of ``X``'s rows
    (what scikit-learn's splitters keep), other positions (of a Series of the view),
    values naming no user of the graph or few of them.
    """
    pd = sys.modules.get("pandas")
    # (a PairData's rows are pairs, its labels link labels: not checked here)
    if pd is None or getattr(X, "_store", None) is None or not (
            isinstance(y, pd.Series) or (isinstance(y, pd.DataFrame) and y.shape[1] == 1)):
        return
    index = y.index
    if hasattr(X, "pairs") or len(index) != len(X) or (
            isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1):
        return
    from ..device._random import _as_id_array, ids_to_keys
    try:
        keys = ids_to_keys(_as_id_array(index.to_numpy()))   # as GraphData reads ids
    except Exception:   # not ids (dates, intervals...): positional
        return
    ints = _integer_values(index)
    if ints is not None and np.array_equal(ints, X.rows):
        return
    rows = X.node_keys[X.rows]
    if np.array_equal(keys, rows):
        return
    in_graph = member(keys, X.node_keys)
    if not in_graph.any():   # the ids written as another type ("12" for 12)?
        _check_ids_of_another_type(index, X, role)
        return
    name, view, what, read = _SERIES_ROLES[role]
    if np.array_equal(np.sort(keys), np.sort(rows)):
        raise ValueError(
            f"{name} is a pandas Series indexed by the users of {view}'s rows, but in "
            f"another order: {read}. If its index holds the users' ids, pass "
            f"{name}.loc[{view}.node_ids] ({what} in {view}'s order); if it holds row "
            f"positions, pass {name}.to_numpy().")
    may_be_positions = ints is not None and len(ints) and \
        ints.min() >= 0 and ints.max() < X.n_nodes
    # ids if most name users of the graph (a word may name one by coincidence)
    if may_be_positions or 2 * in_graph.sum() <= len(keys):
        return
    n_other = int((~member(keys, rows)).sum())
    which = (f"{n_other} of which are not users of {view}'s rows" if n_other else
             f"some of {view}'s users repeated and others missing")
    raise ValueError(
        f"{name} is a pandas Series indexed by ids of users of the graph, {which}: {read}. "
        f"Pass the {what} of {view}'s users in {view}'s order ({name}.loc[{view}.node_ids]), "
        f"or {name}.to_numpy() if its index is not user ids.")


def _check_one_label_per_node(y, X, step, who="node"):
    """Refuse labels ``y`` of the view ``X`` that give a node listed twice (``G[[0, 0, 1]]``)
    two different labels: a node has one label, and its user sends one report about it.
    Repeated rows with the same label are kept (they count once per row). Unlabelled
    markers are left to :func:`_check_all_labelled`."""
    # (a GraphData only; a PairData's rows are pairs, its labels link labels)
    if getattr(X, "_store", None) is None or hasattr(X, "pairs") or len(X.rows) < 2:
        return
    rows = X.rows
    y = _label_column(y)
    if len(y) != len(rows):   # (the caller's length check names it)
        return
    pos = np.flatnonzero(_labelled_mask(y))
    pos = pos[np.argsort(rows[pos], kind="stable")]
    r, v = rows[pos], y[pos]
    differs = np.flatnonzero((r[1:] == r[:-1]) & np.asarray(v[1:] != v[:-1], dtype=bool))
    if not len(differs):
        return
    i, j = int(pos[differs[0]]), int(pos[differs[0] + 1])
    others = len(np.unique(r[differs])) - 1
    node, a, b = (v.item() if isinstance(v, np.generic) else v
                  for v in (X.node_ids[i], y[i], y[j]))
    raise ValueError(
        f"{step}: the same {who} appears twice in this call with different labels: node "
        f"{node!r} (rows {i} and {j}) is labelled {a!r} and {b!r}"
        + (f", and {others} other node(s) too" if others else "")
        + ". A node has one label, and its user sends one report about it: give a repeated "
        "node the same label, or list it once.")


def _integer_values(index):
    """The values of ``index`` as int64 when each is an integer (integral floats and
    Python ints too: positions however stored), else ``None``."""
    v = np.asarray(index)
    if v.dtype.kind in "iu":
        return v
    if v.dtype.kind == "f":
        ok = np.all(np.isfinite(v)) and np.all(v == np.round(v)) and np.all(np.abs(v) < 2**62)
        return v.astype(np.int64) if ok else None
    if v.dtype.kind == "O" and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool)
                                   for x in v.tolist()):
        try:
            return np.asarray(v.tolist(), dtype=np.int64)
        except OverflowError:
            return None
    return None


def _check_ids_of_another_type(index, X, role="y"):
    """Refuse an index of the graph's ids written as another type (``"12"`` for ``12``)
    that are not ``X``'s users in their order."""
    labels, ids = [str(v) for v in index.tolist()], [str(v) for v in X.node_ids.tolist()]
    if labels == ids:
        return
    name, view, _, read = _SERIES_ROLES[role]
    if sorted(labels) == sorted(ids):
        raise ValueError(
            f"{name} is a pandas Series indexed by the ids of {view}'s rows written as "
            f"another type (ids are compared with their type), in another order: {read}. "
            f"Convert the index to the ids' type and pass {name}.loc[{view}.node_ids].")
    if set(labels) <= set(map(str, X.all_node_ids.tolist())):
        raise ValueError(
            f"{name} is a pandas Series indexed by ids of users of the graph written as "
            "another type (ids are compared with their type), not all of them users of "
            f"{view}'s rows: {read}. Convert the index to the ids' type and pass "
            f"{name}.loc[{view}.node_ids].")


def _labelled_mask(y):
    """Which nodes of ``y`` are labelled, for numeric and non-numeric labels alike.

    Numeric labels mark an unlabelled node with ``-1`` (any negative number or
    NaN); ``y >= 0`` cannot compare strings, so non-numeric labels (str,
    object) mark it with ``None`` (or NaN or ``pd.NA``, as pandas does),
    element-wise.
    """
    y = _label_column(y)
    if y.dtype.kind in "biuf":
        with np.errstate(invalid="ignore"):
            return y >= 0
    if y.dtype.kind == "O":
        return np.fromiter((not _is_unlabelled(v) for v in y), dtype=bool, count=len(y))
    return np.ones(len(y), dtype=bool)   # str, bytes...: no value marks "unlabelled"


def _holds_pandas_na(markers):
    """Whether pandas' ``NA`` is among ``markers`` (then the user has pandas)."""
    pd = sys.modules.get("pandas")
    return pd is not None and any(v is pd.NA for v in markers)


def _check_all_labelled(y, action="fit"):
    """Raise a ``ValueError`` if a row of ``y`` is unlabelled (before a ``fit``)."""
    y = _label_column(y)
    unlabelled = ~_labelled_mask(y)
    if unlabelled.any():
        markers = list(dict.fromkeys(map(repr, y[unlabelled].tolist())))   # first seen
        shown = ", ".join(markers[:5]) + (", ..." if len(markers) > 5 else "")
        # (callers pass y converted: a list of the caller's is converted in the advice too)
        labelled = y[~unlabelled]
        if y.dtype.kind in "biuf":
            keep = "y = np.asarray(y); G[y >= 0], y[y >= 0]"
        elif y.dtype.kind == "O" and all(isinstance(v, numbers.Real) and not isinstance(
                v, (bool, np.bool_)) for v in labelled):
            # numbers with None among them (JSON's null): integers once the markers go
            # (pandas' NA has no truth value: pd.notna where the user's labels hold it)
            labelled_test = "pd.notna(v)" if _holds_pandas_na(y[unlabelled]) else \
                "v is not None and v == v"
            keep = (f"keep = np.array([{labelled_test} and v >= 0 for v in y]); "
                    "G[keep], np.asarray(y, dtype=object)[keep].astype(int)")
        else:   # y >= 0 cannot compare text: a mask of the labelled entries
            mask = "pd.notna(y)" if _holds_pandas_na(y[unlabelled]) else \
                "np.array([v is not None and v == v for v in y])"   # (NaN != NaN)
            keep = f"y = np.asarray(y, dtype=object); keep = {mask}; G[keep], y[keep]"
        raise ValueError(f"y marks {int(unlabelled.sum())} row(s) unlabelled "
                         f"({_UNLABELLED_MARKERS}): {shown}; {action} only on labelled nodes, "
                         f"e.g. {keep}.")


def _labelled_nodes(y):
    labelled = np.flatnonzero(_labelled_mask(y))
    if len(labelled) == 0:
        raise ValueError(f"y has no labelled node: each of its {len(y)} labels marks an "
                         f"unlabelled node ({_UNLABELLED_MARKERS}).")
    return labelled


def random_node_split(y, train_size=0.5, val_size=0.25, test_size=0.25, *, stratify=False,
                      random_state=None):
    """Random split of the labelled nodes into train/val/test masks.

    The default 50/25/25 is the split of PrivGE [Li et al., CIKM 2024, §4.1], RGNN and
    Solitude. Unlabelled nodes are in no part.

    Parameters
    ----------
    y : array-like of shape (n_nodes,)
        Labels of any type (numbers, strings...). Unlabelled nodes are marked
        ``-1`` (any negative number or NaN) for numeric labels, ``None`` (or
        NaN, ``pd.NA``) for non-numeric ones.
    train_size, val_size, test_size : float or None
        Fractions of the labelled nodes; must sum to at most 1. One of them
        may be ``None``: the rest of the labelled nodes (as in scikit-learn).
    stratify : bool, default=False
        Keep class proportions in each part: each part's size is split
        among the classes as scikit-learn's ``StratifiedShuffleSplit`` does
        (the rounding is spread over the classes).
    random_state : int, RandomState or None
        A numpy ``Generator`` is refused (``ValueError``).

    Returns
    -------
    train_mask, val_mask, test_mask : ndarray of bool, shape (n_nodes,)

    Examples
    --------
    >>> from skldp.model_selection import random_node_split
    >>> tr, va, te = random_node_split(["a", "b", None, "a"], random_state=0)
    >>> int(tr.sum()), int(va.sum()), int(te.sum()), bool(tr[2] or va[2] or te[2])
    (1, 1, 1, False)
    """
    rng = _split_rng(random_state, "random_node_split")
    y = _label_column(y)
    sizes = _check_fractions(train_size=train_size, val_size=val_size, test_size=test_size)
    labelled = _labelled_nodes(y)
    masks = [np.zeros(len(y), dtype=bool) for _ in range(3)]
    n = len(labelled)
    cuts = np.minimum(np.floor(np.cumsum(sizes) * n + 1e-9).astype(int), n)
    if sizes.sum() >= 1 - 1e-9:
        cuts[-1] = n    # every labelled node in a part, whatever the float rounding
    if not stratify:
        idx = rng.permutation(labelled)
        for mask, part in zip(masks, np.split(idx, cuts)[:3], strict=True):
            mask[part] = True
        return tuple(masks)
    # per-class counts of each part: StratifiedShuffleSplit's rounding, so that the
    # parts keep their requested sizes (flooring per class fills the last part)
    _, y_idx, left = np.unique(y[labelled], return_inverse=True, return_counts=True)
    per_part = []
    for total in np.diff(cuts, prepend=0):
        k = _approximate_mode(left, int(total), rng)
        per_part.append(k)
        left = left - k
    class_cuts = np.cumsum(per_part, axis=0)
    for c in range(len(left)):
        idx = rng.permutation(labelled[y_idx == c])
        for mask, part in zip(masks, np.split(idx, class_cuts[:, c])[:3], strict=True):
            mask[part] = True
    return tuple(masks)


def _check_fractions(**fractions):
    """The three split fractions as floats, a ``None`` one being the rest."""
    if sum(v is None for v in fractions.values()) > 1:
        raise ValueError(f"at most one split fraction may be None (the rest of the labelled "
                         f"nodes), got {fractions}.")
    for name, v in fractions.items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Real)
                              or not np.isfinite(v) or v < 0):
            raise ValueError(f"{name} must be a finite fraction >= 0 (or None: the rest of "
                             f"the labelled nodes), got {v!r}.")
    given = sum(float(v) for v in fractions.values() if v is not None)
    if given > 1 + 1e-9:
        raise ValueError(f"split fractions must be >= 0 and sum to at most 1, got "
                         f"{fractions}.")
    return np.array([max(0.0, 1.0 - given) if v is None else float(v)
                     for v in fractions.values()])


def per_class_node_split(y, n_train=20, n_val=30, *, small_classes="raise",
                         random_state=None):
    """Random split with a fixed number of training and validation nodes per class.

    The label-scarce protocol of the Planetoid benchmarks (Yang et al., ICML
    2016; Kipf and Welling, ICLR 2017; Shchur et al., "Pitfalls of graph
    neural network evaluation", 2018): ``n_train`` labelled nodes of each
    class train, ``n_val`` of each class validate, every other labelled node
    is a test node.

    Parameters
    ----------
    y : array-like of shape (n_nodes,)
        Labels of any type; unlabelled nodes (in no part) are marked ``-1``
        (any negative number or NaN) for numeric labels, ``None`` (or NaN,
        ``pd.NA``) for non-numeric ones.
    n_train : int, default=20
        Training nodes per class.
    n_val : int, default=30
        Validation nodes per class.
    small_classes : {"raise", "shrink"}, default="raise"
        What to do with a class of fewer than ``n_train + n_val + 1`` labelled
        nodes (too few to keep a test node): ``"raise"`` a ``ValueError``;
        ``"shrink"``: a third of its nodes train, a third validate, the rest
        test (a class of 16 nodes: 5, 5, 6), never more than ``n_train`` and
        ``n_val``; a class of 1 or 2 nodes still trains on one node (if
        ``n_train >= 1``) and keeps one test node if it has two.
    random_state : int, RandomState or None, default=None
        Seeds the draw. A numpy ``Generator`` is refused (``ValueError``).

    Returns
    -------
    train_mask, val_mask, test_mask : ndarray of bool, shape (n_nodes,)

    Raises
    ------
    ValueError
        If a class is too small (with ``small_classes="raise"``), or if no
        node is labelled.

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.model_selection import per_class_node_split
    >>> y = np.repeat([0, 1], 100)
    >>> tr, va, te = per_class_node_split(y, 20, 30, random_state=0)
    >>> int(tr.sum()), int(va.sum()), int(te.sum())
    (40, 60, 100)
    """
    rng = _split_rng(random_state, "per_class_node_split")
    y = _label_column(y)
    for name, v in (("n_train", n_train), ("n_val", n_val)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {v!r}.")
    if small_classes not in ("raise", "shrink"):
        raise ValueError(f"small_classes must be 'raise' or 'shrink', got {small_classes!r}.")
    labelled = _labelled_nodes(y)
    classes, counts = np.unique(y[labelled], return_counts=True)
    small = counts < n_train + n_val + 1
    if small_classes == "raise" and small.any():
        raise ValueError(
            f"class(es) {classes[small].tolist()} have {counts[small].tolist()} labelled nodes; "
            f"each class needs at least n_train + n_val + 1 = {n_train + n_val + 1} (one test "
            f"node). Lower n_train / n_val, or pass small_classes='shrink'.")
    train, val = np.zeros(len(y), dtype=bool), np.zeros(len(y), dtype=bool)
    for c, is_small in zip(classes, small, strict=True):
        idx = rng.permutation(labelled[y[labelled] == c])
        k_tr, k_va = _shrunk_counts(len(idx), n_train, n_val) if is_small else (n_train, n_val)
        train[idx[:k_tr]] = True
        val[idx[k_tr:k_tr + k_va]] = True
    test = np.zeros(len(y), dtype=bool)
    test[labelled] = True   # the labelled nodes found above: no second pass over y
    test &= ~train & ~val
    return train, val, test


def _shrunk_counts(m, n_train, n_val):
    """Training and validation nodes of a class of ``m < n_train + n_val + 1`` nodes."""
    k_tr = min(n_train, max(m // 3, 1))                  # one training node if it can
    k_va = min(n_val, m // 3, max(m - k_tr - 1, 0))      # one test node if it can
    return k_tr, k_va


def planetoid_split(bunch):
    """The Planetoid public split (train/val/test masks) of a loaded dataset.

    Parameters
    ----------
    bunch : Bunch
        A dataset from :func:`skldp.datasets.load_dataset`.

    Returns
    -------
    train_mask, val_mask, test_mask : ndarray of bool of shape (n_nodes,)
        The public split.

    Raises
    ------
    TypeError
        If ``bunch`` is not a dataset (a mapping such as a ``Bunch``).
    ValueError
        If the dataset defines no such split (only Cora, CiteSeer and PubMed do).
    """
    if not isinstance(bunch, Mapping):   # None raised "argument of type ... not iterable"
        raise TypeError(f"bunch must be a dataset from skldp.datasets.load_dataset, got "
                        f"{type(bunch).__name__}.")
    if "train_mask" not in bunch:
        raise ValueError(f"Dataset {bunch.get('name', '?')!r} has no public split; use "
                         "random_node_split.")
    return bunch.train_mask, bunch.val_mask, bunch.test_mask


class LabelledKFold(BaseCrossValidator):
    """Stratified K-fold over labelled nodes only.

    Unlabelled rows (``-1`` for numeric labels, the semi-supervised
    convention; ``None``, NaN or ``pd.NA`` for non-numeric) are never put
    in a training or test fold, so no invented label reaches ``fit``. Use with
    ``cross_val_score(pipe, G, y, cv=LabelledKFold(5))`` on a whole graph; a
    search's refit uses every row, so pass it ``refit=False`` there.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds.
    shuffle : bool, default=True
        Shuffle each class's labelled rows before splitting.
    random_state : int, RandomState or None, default=None
        Seeds the shuffling. A numpy ``Generator`` is refused (``ValueError``).
    """

    def __init__(self, n_splits=5, *, shuffle=True, random_state=None):
        self.n_splits = n_splits
        self.shuffle = shuffle
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None):
        """Number of folds, ``n_splits``.

        Parameters
        ----------
        X, y, groups : object
            Ignored; present for the scikit-learn splitter API.

        Returns
        -------
        n_splits : int
            The number of folds.
        """
        return self._kfold().n_splits

    def _kfold(self):
        # scikit-learn's StratifiedKFold checks n_splits (and shuffle) at construction:
        # split and get_n_splits refuse the same values with the same message
        if self.shuffle:   # (without shuffle random_state is not used)
            _split_rng(self.random_state, "LabelledKFold")
        return StratifiedKFold(self.n_splits, shuffle=self.shuffle,
                               random_state=self.random_state if self.shuffle else None)

    def split(self, X, y, groups=None):
        """Yield the (train, test) row indices of each fold, labelled rows only.

        Parameters
        ----------
        X : object
            Ignored (the folds depend on ``y`` only).
        y : array-like of shape (n_samples,)
            Labels; unlabelled rows (never in a fold) are marked ``-1`` for
            numeric labels, ``None``, NaN or ``pd.NA`` for non-numeric ones.
        groups : object
            Ignored.

        Yields
        ------
        train, test : ndarray of int
            Positions of the rows in the training and test part of the fold.
        """
        y = _label_column(y)
        labelled = np.flatnonzero(_labelled_mask(y))
        if len(labelled) == 0:   # scikit-learn's "Found array with 0 sample(s)"
            raise ValueError(f"LabelledKFold found no labelled row among the {len(y)} rows "
                             "of y: every label is -1 (or None, NaN, pd.NA), the "
                             "'unlabelled' marker.")
        skf = self._kfold()
        for tr, te in skf.split(labelled, y[labelled]):
            yield labelled[tr], labelled[te]
