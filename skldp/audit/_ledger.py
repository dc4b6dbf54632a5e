"""Audit a whole estimator: everything one user sent while it was fitted, against the ledger."""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone

from .._graph_data import GraphData
from ..utils._arrays import sorted_lookup
from ._collections import _audit_outputs, _check_inputs
from ._stats import _check_confidence, _check_count, _float_reports

__all__ = ["audit_ledger"]

_NOT_SENT = -1e300   # a user who did not answer a collection (never a report value)


def _ring(n, width=2):
    """A public ring lattice: every user has the same ``2 width`` neighbours' worth of graph."""
    rows = np.repeat(np.arange(n), 2 * width)
    offsets = np.tile(np.r_[np.arange(1, width + 1), -np.arange(1, width + 1)], n)
    A = sp.csr_matrix((np.ones(len(rows)), (rows, (rows + offsets) % n)), shape=(n, n))
    A.data[:] = 1.0
    return A


def _per_user(records, keys):
    """``{collection id: (spec, (n, k m) array)}``: every distinct report of each user, in
    ``keys`` order: ``m`` slots of ``k`` columns, in the order sent, ``_NOT_SENT`` where a
    user sent fewer.

    A mechanism that asks a user twice under one collection with fresh randomness sends
    more than one answer's worth: each distinct answer is audited (an identical resend
    adds nothing, and no column).
    """
    order = np.argsort(keys)
    out = {}
    for spec, node_keys, reports in records:
        if "edges" in spec.protects or reports is None:
            continue   # the audit's graph is public and the same for both inputs
        R = _float_reports(reports, f"the reports of collection {spec.id}")
        R = R.reshape(len(node_keys), -1)
        slots = out.setdefault(spec.id, (spec, []))[1]   # [(values, sent)] per answer
        pos = order[np.searchsorted(keys, node_keys, sorter=order)]
        # a user listed twice in one record: its rows are placed one after the other
        by_user = np.argsort(pos, kind="stable")
        first = np.r_[True, pos[by_user][1:] != pos[by_user][:-1]]
        rank = np.empty(len(pos), dtype=np.int64)
        rank[by_user] = np.arange(len(pos)) - np.maximum.accumulate(
            np.where(first, np.arange(len(pos)), 0))
        for r in range(int(rank.max(initial=-1)) + 1):
            rows = np.flatnonzero(rank == r)
            for values, sent in slots:            # skip the answers already stored
                if len(rows) == 0:
                    break
                u = pos[rows]
                new = ~sent[u]
                values[u[new]], sent[u[new]] = R[rows[new]], True
                same = sent[u] & np.all(values[u] == R[rows], axis=1)
                rows = rows[~(new | same)]
            if len(rows):                          # a new distinct answer: one more slot
                values = np.full((len(keys), R.shape[1]), _NOT_SENT)
                sent = np.zeros(len(keys), dtype=bool)
                values[pos[rows]], sent[pos[rows]] = R[rows], True
                slots.append((values, sent))
    return {cid: (spec, np.hstack([v for v, _ in slots])) for cid, (spec, slots) in out.items()
            if slots}


def audit_ledger(estimator, x0, x1, *, y0, y1, classes=None, n_samples=4_000,
                 confidence=0.95, outputs="all", events="auto", fit_params=None,
                 predictions=False, random_state=0):
    """Audit everything one user sends while ``estimator`` is fitted, against its ledger.

    A population is built in which ``n_samples`` users hold the features
    ``x0`` and label ``y0`` and as many hold ``x1`` and ``y1`` (plus a few
    background users whose labels cover ``classes``), over a public ring
    graph. A clone of ``estimator`` (a pipeline, a search, nested searches) is
    fitted once on all of them while the population records every report
    sent. Each user's record (every distinct report it sent in every collection,
    features and labels) is one sample of the joint output; the records of
    the two groups are audited with :func:`audit_pair` jointly and per
    collection, and the lower bound is compared with what the ledger charged
    those users (their local epsilon on features and labels).

    Read more in the :ref:`User Guide <audit_ledger>`.

    Parameters
    ----------
    estimator : estimator
        Unfitted; ``fit(GraphData, y)`` must accept the population.
    x0, x1 : array-like of shape (n_features,)
        The two feature vectors (within the mechanisms' public bounds).
    y0, y1 : label
        The two users' labels. Two users equal in both their features and their
        label are refused.
    classes : array-like or None, default=None
        The public label domain, for the background users; ``{y0, y1}`` by
        default.
    n_samples : int, default=4000
        Users per input.
    confidence : float, default=0.95
        Family-wise confidence over every output audited and event tried.
    outputs : {"all", "collections", "joint"}, default="all"
        As :func:`audit_collections`.
    events : {"auto", "values", "cells"}, default="auto"
        See :func:`audit_pair`.
    fit_params : dict or None
        Passed to ``fit``.
    predictions : bool, default=False
        Also audit each user's predicted label (on an edgeless graph): it
        catches a step that reads data the users never sent.
    random_state : int, default=0
        The audit's own randomness (user ids, event selection).

    Returns
    -------
    result : AuditResult
        ``epsilon_claimed`` is the largest local epsilon the ledger charged a
        user of either group for features and labels; ``exceeds_claim`` says
        whether the reports disprove it. Edge reports are left out (the graph
        is public and the same for both groups).

    Examples
    --------
    >>> from sklearn.pipeline import Pipeline
    >>> from skldp.audit import audit_ledger
    >>> from skldp.mechanisms import OneBitMechanism
    >>> from skldp.models import MLPHead
    >>> pipe = Pipeline([("bit", OneBitMechanism(1.0, feature_range=(0, 1), split_eps=True)),
    ...                  ("clf", MLPHead(epochs=2))])
    >>> res = audit_ledger(pipe, [0.0, 0.0], [1.0, 1.0], y0=0, y1=1, n_samples=2000)
    >>> res.epsilon_claimed, bool(res.epsilon_lower <= res.epsilon_claimed)
    (1.0, True)
    """
    x0, x1 = _check_inputs([x0, x1])
    n = _check_count(n_samples, "n_samples", 4)
    confidence = _check_confidence(confidence)
    if outputs not in ("all", "collections", "joint"):
        raise ValueError(f"outputs must be 'all', 'collections' or 'joint', got {outputs!r}.")
    if isinstance(random_state, (bool, np.bool_)) or \
            not isinstance(random_state, numbers.Integral):
        raise TypeError(f"random_state must be an integer, got {random_state!r}.")
    if np.array_equal(x0, x1) and np.array_equal(np.asarray([y0]), np.asarray([y1])):
        raise ValueError("x0 and x1 are the same input and y0 and y1 the same label: the "
                         "audit would find no leak (a bound of 0) whatever the estimator. "
                         "Pass two users that differ in their features or their label.")
    rng = np.random.default_rng(int(random_state))
    domain = np.unique(np.asarray([y0, y1] if classes is None else list(classes)))
    if len(domain) < 2:
        raise ValueError("the labels need at least two classes: pass the public classes=.")
    if not np.all(np.isin(np.asarray([y0, y1]), domain)):   # a prediction code would merge
        raise ValueError(f"y0 and y1 must be among the classes {domain.tolist()}, got "
                         f"{y0!r} and {y1!r}.")
    m = max(4 * len(domain), n // 20)                   # background users, not audited
    X = np.vstack([np.repeat(x0[None], n, 0), np.repeat(x1[None], n, 0),
                   np.repeat(x0[None], m, 0)])
    y = np.concatenate([np.repeat(np.asarray([y0]), n), np.repeat(np.asarray([y1]), n),
                        domain[np.arange(m) % len(domain)]])
    ids = (int(rng.integers(0, 2**40)) << 20) + rng.permutation(len(X))
    A = sp.csr_matrix((len(X), len(X))) if predictions else _ring(len(X))
    G = GraphData(X, A, node_ids=ids)
    with G.population.recording() as records:
        fitted = clone(estimator).fit(G, y, **(fit_params or {}))
    keys = G.node_keys
    per_collection = _per_user(records, keys)
    if predictions:
        pred = np.asarray(fitted.predict(G))
        codes = np.searchsorted(domain, pred).astype(np.float64).reshape(-1, 1)
        per_collection["predictions"] = (_Released(), codes)
    if not per_collection:
        raise ValueError("the estimator sent no feature or label report while it was fitted: "
                         "there is nothing to audit.")
    claimed = _charged(G.ledger, keys[:2 * n])
    parts = []
    for i, (spec, M) in enumerate(per_collection.values()):
        parts.append((f"{i}:{spec.kind.rsplit('.', 1)[-1]}", M[:n], M[n:2 * n]))
    return _audit_outputs(parts, outputs, confidence, claimed, events=events, rng=rng)


class _Released:
    """Stands for the estimator's predictions in the list of audited outputs."""

    kind = "predictions"


def _charged(ledger, keys):
    """The largest local epsilon the ledger charged one of ``keys`` for features and labels."""
    total = np.zeros(len(keys))
    for what in ("features", "labels"):
        users, eps = ledger.per_user(what)
        pos, hit = sorted_lookup(users, keys)
        total[hit] += eps[pos[hit]]
    return float(total.max())
