"""Which fit rows train and which validate: the ``validation`` parameter of the trainable models.

Every trainable classifier of skldp takes ``validation``: the nodes (or, for
the link predictors, the node pairs) whose rows, when they are among the rows
given to ``fit``, are held out of the loss and used to select the weights
(early stopping). Their labels are those ``fit`` receives, so they pass
through the same label mechanism as the training labels, and inside a
cross-validation fold only the fold's own training rows can validate: the
held-out fold's labels never reach ``fit``. The user guide ("Validation
nodes") explains the choice against the alternatives.
"""

import math
import warnings

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils.extmath import _approximate_mode

from .._graph_data import GraphData
from ..utils._arrays import distinct, member
from ._edge_splits import PairData

__all__ = ["validation_split", "validation_rows", "check_validation", "warn_untrained_classes",
           "AUTO_MIN_ROWS"]

#: ``early_stopping="auto"`` holds out ``validation_fraction`` of the fit rows only
#: from this many rows on (below, a held-out tenth costs more than the selection
#: gains: 14 of the 140 training nodes of Cora's public split).
AUTO_MIN_ROWS = 1000


def check_validation(validation, owner):
    """``validation`` as given, or a ``ValueError`` if it cannot name nodes or pairs.

    Parameters
    ----------
    validation : None or array-like
        A boolean mask over a graph's nodes, node positions, or ``(m, 2)``
        node-position pairs.
    owner : estimator
        Named in the error message.

    Returns
    -------
    validation : None or ndarray
    """
    if validation is None:
        return None
    if isinstance(validation, GraphData):
        kind = "PairData" if isinstance(validation, PairData) else "GraphData"
        attr = "pairs" if kind == "PairData" else "rows"
        raise TypeError(f"{type(owner).__name__}(validation=...) takes node positions or a "
                        f"boolean mask (for link predictors, an (m, 2) array of pairs), not a "
                        f"{kind}: pass its .{attr} (a {kind} would be copied whole by clone).")
    v = np.asarray(validation)
    if v.dtype == bool:
        if v.ndim != 1:
            raise ValueError(f"a boolean validation mask must be 1-D, got shape {v.shape}.")
        return v
    if v.size and not np.issubdtype(v.dtype, np.integer):
        raise TypeError(f"validation must hold integer node positions or booleans, got dtype "
                        f"{v.dtype}.")
    if v.ndim not in (1, 2) or (v.ndim == 2 and v.shape[1] != 2):
        raise ValueError(f"validation must be 1-D (nodes) or of shape (m, 2) (pairs), got "
                         f"shape {v.shape}.")
    return v.astype(np.intp, copy=False)


def _held_out(X, v, owner):
    """Boolean mask over the rows of ``X``: which of them ``v`` names."""
    name = type(owner).__name__
    if isinstance(X, PairData):
        if v.ndim != 2:
            raise ValueError(f"{name} fits node pairs: validation must be an (m, 2) array of "
                             "node-position pairs (e.g. P_val.pairs), got shape "
                             f"{v.shape}.")
        n = X.n_nodes
        if v.size and (v.min() < 0 or v.max() >= n):
            raise ValueError(f"validation pairs refer to nodes outside 0..{n - 1}.")
        # a pair is unordered (the link predictors score (u, v) as (v, u)): matched
        # in either orientation
        v, mine = np.sort(v, axis=1).astype(np.int64), np.sort(X.pairs, axis=1).astype(np.int64)
        return member(mine[:, 0] * n + mine[:, 1], distinct(v[:, 0] * n + v[:, 1]))
    if not isinstance(X, GraphData):
        raise ValueError(f"{name}(validation=...) names nodes of a graph, but X is a plain "
                         "array whose rows have no node identity; fit on a GraphData view "
                         "(e.g. G[train | val]) or use validation=None with "
                         "validation_fraction.")
    n = X.n_nodes
    if v.ndim != 1:
        raise ValueError(f"{name} fits nodes: validation must be node positions or a boolean "
                         f"mask over the {n} nodes, got shape {v.shape}.")
    if v.dtype == bool:
        if len(v) != n:
            raise ValueError(f"the validation mask has {len(v)} entries but the graph has {n} "
                             "nodes.")
        return v[X.rows]
    if v.size and (v.min() < 0 or v.max() >= n):
        raise ValueError(f"validation names node positions outside 0..{n - 1}.")
    return np.isin(X.rows, v)


def _fraction_split(y_enc, n, fraction, seed):
    """A ``fraction`` of ``n`` rows, stratified when every class can be on both sides.

    The classes are those of the rows: a class of the estimator's domain
    (``classes_``) that no row has does not count. Every class of the rows keeps a
    training row: a draw that would hold out all the rows of a class (its only one,
    or all of a few in an unstratified draw) is replaced by a stratified one in which
    each class keeps at least one. Every other draw is the one this function always
    made. ``val`` is ``None`` when no row is left to validate.
    """
    n_val = math.ceil(fraction * n)
    seed = seed % (2**31)
    counts = np.bincount(y_enc)
    present = counts[counts > 0]
    if present.min() >= 2 and min(n_val, n - n_val) >= len(present):
        train, val = _stratified_split(y_enc, n_val, seed)
    else:
        train, val = train_test_split(np.arange(n), test_size=fraction, random_state=seed)
    if np.all(np.bincount(y_enc[train], minlength=len(counts))[counts > 0] > 0):
        return train, val
    # a class would be in classes_ but never in the loss, and never predicted
    train, val = _stratified_split(y_enc, n_val, seed, keep_every_class=True)
    return (train, val) if len(val) else (np.arange(n), None)


def _stratified_split(y, n_test, seed, keep_every_class=False):
    """``train_test_split(np.arange(len(y)), test_size=n_test, stratify=y,
    random_state=seed)``: the same draws in the same order (scikit-learn's
    ``StratifiedShuffleSplit``), without its lists of one Python int per row (2.2 s
    of a 5M-row head's fit; tests hold the two equal).

    ``keep_every_class``: a class that scikit-learn's allocation leaves without a
    training row gets one (taken from its test rows), so fewer than ``n_test`` may
    test; every other class keeps its share.
    """
    n_train = len(y) - n_test
    y = np.asarray(y)
    if y.dtype.kind in "iu" and len(y) and 0 <= y.min() and y.max() < 2**16:
        # encoded labels: counted, not sorted, and stably ordered by a radix sort (a
        # stable order is unique: the same as a comparison sort's)
        counts = np.bincount(y)
        present = counts > 0
        class_counts = counts[present]
        y_indices = (np.cumsum(present) - 1).astype(np.uint16)[y]
    else:
        _, y_indices, class_counts = np.unique(y, return_inverse=True, return_counts=True)
    class_indices = np.split(np.argsort(y_indices, kind="stable"), np.cumsum(class_counts)[:-1])
    rng = check_random_state(seed)
    n_i = _approximate_mode(class_counts, n_train, rng)
    if keep_every_class and n_i.min() == 0:
        n_i = np.maximum(n_i, 1)
        n_test = len(y) - n_i.sum()
    t_i = _approximate_mode(class_counts - n_i, n_test, rng) if n_test else 0 * n_i
    train, test = [], []
    for i, rows in enumerate(class_indices):
        rows = rows.take(rng.permutation(class_counts[i]), mode="clip")
        train.append(rows[:n_i[i]])
        test.append(rows[n_i[i]:n_i[i] + t_i[i]])
    return rng.permutation(np.concatenate(train)), rng.permutation(np.concatenate(test))


def validation_split(X, y_enc, *, validation, early_stopping, validation_fraction, seed,
                     owner):
    """Positions of the fit rows that train and of those that validate.

    Parameters
    ----------
    X : GraphData, PairData or array
        The rows given to ``fit``.
    y_enc : ndarray of int
        Their encoded labels (stratify the fraction split).
    validation : None or array-like
        The estimator's ``validation`` (see :func:`check_validation`).
    early_stopping : bool or "auto"
        Whether the estimator validates at all; ``"auto"``: when ``validation``
        is given, or when there are at least :data:`AUTO_MIN_ROWS` fit rows.
    validation_fraction : float
        Share of the rows held out when ``validation`` is ``None``.
    seed : int
        Seeds the fraction split.
    owner : estimator
        Named in error messages.

    Returns
    -------
    train : ndarray of int
        Positions (into the fit rows) of the training rows.
    val : ndarray of int or None
        Positions of the validation rows; ``None`` without early stopping.

    Raises
    ------
    ValueError
        If ``validation`` is given without early stopping, names none of the
        fit rows, or all of them.
    """
    n = len(y_enc)
    held = validation_rows(X, validation, early_stopping, owner)
    if held is not None:
        return np.flatnonzero(~held), np.flatnonzero(held)
    if isinstance(early_stopping, str) and early_stopping == "auto":
        early_stopping = n >= AUTO_MIN_ROWS
    if not early_stopping or n < 2:
        return np.arange(n), None
    return _fraction_split(y_enc, n, validation_fraction, seed)


def validation_rows(X, validation, early_stopping, owner):
    """Which rows of ``X`` the ``validation`` nodes (or pairs) name; ``None`` without them.

    The checks of ``validation`` that need no label: a fit calls it before it notes
    any read, so that a refused ``validation`` charges nothing.
    :func:`validation_split` makes the same checks.

    Parameters
    ----------
    X : GraphData, PairData or array
        The rows given to ``fit``.
    validation : None or array-like
        The estimator's ``validation`` (see :func:`check_validation`).
    early_stopping : bool or "auto"
        The estimator's ``early_stopping``.
    owner : estimator
        Named in error messages.

    Returns
    -------
    held : ndarray of bool or None
        Over the rows of ``X``.

    Raises
    ------
    ValueError
        If ``validation`` is given without early stopping, names none of the
        fit rows, or all of them.
    """
    v = check_validation(validation, owner)
    if v is None:
        return None
    name = type(owner).__name__
    if not early_stopping:   # ("auto": True with validation)
        raise ValueError(f"{name}: validation rows are only used for early stopping; set "
                         "early_stopping=True or validation=None.")
    held = _held_out(X, v, owner)
    n = len(held)
    what, rows, both = ("pair", "pairs", "P_train.concat(P_val)") if isinstance(X, PairData) \
        else ("node", "rows", "G[train | val]")
    if not held.any():
        raise ValueError(
            f"{name}: none of the {n} {rows} given to fit is a validation {what}. Fit on the "
            f"training and validation {what}s together (fit({both}, y_train_and_val)); in a "
            f"cross-validation whose held-out fold is the validation {what}s, split them over "
            "the folds instead (see the user guide, 'Validation nodes').")
    if held.all():
        raise ValueError(f"{name}: all {n} {rows} given to fit are validation {what}s; "
                         "nothing is left to train on.")
    return held


def warn_untrained_classes(y_enc, train, val, owner):
    """Warn if the ``validation`` rows hold every fit row of some class.

    Such a class is in ``owner.classes_`` but no training row has it: the model is
    never trained on it, so it never predicts it. The fraction split keeps a training
    row of every class (:func:`_fraction_split`); given validation nodes are the
    caller's. The warning depends on the labels' values: call it only once the fit's
    read of those labels is charged (or refused). It changes nothing in the fit.

    Parameters
    ----------
    y_enc : ndarray of int
        The encoded labels of the fit rows (indices into ``owner.classes_``).
    train, val : ndarray of int or None
        :func:`validation_split`'s positions of the training and validation rows.
    owner : estimator
        Named in the warning; its ``classes_`` name the classes.
    """
    if val is None or not len(val):
        return
    n_classes = int(y_enc.max()) + 1 if len(y_enc) else 0
    n_val = np.bincount(y_enc[val], minlength=n_classes)
    n_train = np.bincount(y_enc[train], minlength=n_classes)
    missing = np.flatnonzero((n_val > 0) & (n_train == 0))
    if not len(missing):
        return
    names = np.asarray(owner.classes_)[missing].tolist()
    rows = ", ".join(f"{c!r}: {int(n_val[i])}" for c, i in zip(names, missing, strict=True))
    warnings.warn(
        f"{type(owner).__name__}: the validation nodes hold every fit row of the "
        f"class(es) {names} (validation rows {{{rows}}}): in classes_, but never trained "
        "on and never predicted. To learn a class, move some of its nodes to training "
        "(out of validation).", UserWarning, stacklevel=2)
