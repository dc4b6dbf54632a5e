"""Node splits used by the papers: random 50/25/25 over labelled nodes, Planetoid."""

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.utils import check_random_state

__all__ = ["random_node_split", "per_class_node_split", "planetoid_split", "LabelledKFold"]


def random_node_split(y, train_size=0.5, val_size=0.25, test_size=0.25, *, stratify=False,
                      random_state=None):
    """Random split of the labelled nodes (``y >= 0``) into train/val/test masks.

    The default 50/25/25 is the split of PrivGE [Li et al., CIKM 2024, §4.1], RGNN and
    Solitude. Unlabelled nodes (``y == -1``) are in no part.

    Parameters
    ----------
    y : array-like of shape (n_nodes,)
        Labels, ``-1`` for unlabelled nodes.
    train_size, val_size, test_size : float
        Fractions of the labelled nodes; must sum to at most 1.
    stratify : bool, default=False
        Keep class proportions in each part.
    random_state : int, RandomState or None

    Returns
    -------
    train_mask, val_mask, test_mask : ndarray of bool, shape (n_nodes,)
    """
    y = np.asarray(y)
    sizes = np.array([train_size, val_size, test_size], dtype=float)
    if np.any(sizes < 0) or sizes.sum() > 1 + 1e-9:
        raise ValueError(f"split fractions must be >= 0 and sum to at most 1, got {sizes}.")
    labelled = np.flatnonzero(y >= 0)
    if len(labelled) == 0:
        raise ValueError("y has no labelled node (all -1).")
    rng = check_random_state(random_state)
    masks = [np.zeros(len(y), dtype=bool) for _ in range(3)]
    groups = [labelled[y[labelled] == c] for c in np.unique(y[labelled])] if stratify \
        else [labelled]
    for idx in groups:
        idx = rng.permutation(idx)
        cuts = np.floor(np.cumsum(sizes) * len(idx) + 1e-9).astype(int)
        for mask, part in zip(masks, np.split(idx, cuts[:3])[:3], strict=True):
            mask[part] = True
    return tuple(masks)


def per_class_node_split(y, n_train=20, n_val=30, *, small_classes="raise",
                         random_state=None):
    """Random split with a fixed number of training and validation nodes per class.

    The label-scarce protocol of the Planetoid benchmarks (Yang et al., ICML
    2016; Kipf and Welling, ICLR 2017; Shchur et al., "Pitfalls of graph
    neural network evaluation", 2018): ``n_train`` labelled nodes of each
    class train, ``n_val`` of each class validate, every other labelled node
    (``y >= 0``) is a test node.

    Parameters
    ----------
    y : array-like of shape (n_nodes,)
        Labels, ``-1`` for unlabelled nodes (in no part).
    n_train : int, default=20
        Training nodes per class.
    n_val : int, default=30
        Validation nodes per class.
    small_classes : {"raise", "shrink"}, default="raise"
        What to do with a class of fewer than ``n_train + n_val + 1`` labelled
        nodes (too few to keep a test node): ``"raise"`` a ``ValueError``;
        ``"shrink"``: a third of its nodes train, a third validate, the rest
        test (a class of 16 nodes: 5, 5, 6).
    random_state : int, RandomState or None, default=None
        Seeds the draw.

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
    y = np.asarray(y)
    for name, v in (("n_train", n_train), ("n_val", n_val)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {v!r}.")
    if small_classes not in ("raise", "shrink"):
        raise ValueError(f"small_classes must be 'raise' or 'shrink', got {small_classes!r}.")
    labelled = np.flatnonzero(y >= 0)
    if len(labelled) == 0:
        raise ValueError("y has no labelled node (all -1).")
    classes, counts = np.unique(y[labelled], return_counts=True)
    small = counts < n_train + n_val + 1
    if small_classes == "raise" and small.any():
        raise ValueError(
            f"class(es) {classes[small].tolist()} have {counts[small].tolist()} labelled nodes; "
            f"each class needs at least n_train + n_val + 1 = {n_train + n_val + 1} (one test "
            f"node). Lower n_train / n_val, or pass small_classes='shrink'.")
    rng = check_random_state(random_state)
    train, val = np.zeros(len(y), dtype=bool), np.zeros(len(y), dtype=bool)
    for c, is_small in zip(classes, small, strict=True):
        idx = rng.permutation(labelled[y[labelled] == c])
        k_tr, k_va = (len(idx) // 3, len(idx) // 3) if is_small else (n_train, n_val)
        train[idx[:k_tr]] = True
        val[idx[k_tr:k_tr + k_va]] = True
    test = (y >= 0) & ~train & ~val
    return train, val, test


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
    ValueError
        If the dataset defines no such split (only Cora, CiteSeer and PubMed do).
    """
    if "train_mask" not in bunch:
        raise ValueError(f"Dataset {bunch.get('name', '?')!r} has no public split; use "
                         "random_node_split.")
    return bunch.train_mask, bunch.val_mask, bunch.test_mask


class LabelledKFold:
    """Stratified K-fold over labelled nodes only (``y >= 0``).

    Unlabelled rows (``y == -1``, the semi-supervised convention) are never put
    in a training or test fold, so no invented label reaches ``fit``. Use with
    ``cross_val_score(pipe, G, y, cv=LabelledKFold(5))`` on a whole graph.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds.
    shuffle : bool, default=True
        Shuffle each class's labelled rows before splitting.
    random_state : int, RandomState or None, default=None
        Seeds the shuffling.
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
        return self.n_splits

    def split(self, X, y, groups=None):
        """Yield the (train, test) row indices of each fold, labelled rows only.

        Parameters
        ----------
        X : object
            Ignored (the folds depend on ``y`` only).
        y : array-like of shape (n_samples,)
            Labels, ``-1`` for unlabelled rows (never in a fold).
        groups : object
            Ignored.

        Yields
        ------
        train, test : ndarray of int
            Positions of the rows in the training and test part of the fold.
        """
        y = np.asarray(y)
        labelled = np.flatnonzero(y >= 0)
        skf = StratifiedKFold(self.n_splits, shuffle=self.shuffle,
                              random_state=self.random_state if self.shuffle else None)
        for tr, te in skf.split(labelled, y[labelled]):
            yield labelled[tr], labelled[te]
