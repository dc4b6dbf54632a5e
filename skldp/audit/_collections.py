"""Draw the reports of mechanisms (alone, or collections on the same users) and audit them."""

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone

from .._graph_data import GraphData
from ..exceptions import PrivacyLeakWarning
from ..population import Population
from ._stats import (
    AuditResult,
    _check_claim,
    _check_confidence,
    _check_count,
    _float_reports,
    audit_pair,
)

__all__ = ["audit_mechanism", "audit_collections"]

_OUTPUTS = ("all", "collections", "joint")
_EDGE_BATCH = 256  # users per graph when an edge mechanism is audited (its cost grows as n^2 q)


# --------------------------------------------------------------------------- collections
class _Collection:
    """One mechanism of an audit: how to fit it on a batch of users and read their reports.

    Kinds:

    - ``"features"``: an unfitted scikit-learn transformer (an LDP feature
      mechanism), fitted on ``GraphData(X[:, columns], node_ids=ids)`` and
      transformed; the report of a user is its output row.
    - ``"labels"``: an object with ``fit()`` and ``randomize(y, keys)`` (e.g.
      :class:`~skldp.mechanisms.LabelRandomizedResponse`); ``columns`` is one
      column holding the label; the report is the class position.
    - ``"edges"``: a graph transformer that needs an adjacency (e.g.
      :class:`~skldp.mechanisms.EdgeRR`); ``columns`` is one 0/1 column, "this
      user has an edge to its partner". Users are paired (2j, 2j+1) inside
      each input's block, so both partners hold the same bit; the mechanism
      runs with ``symmetrize="directed"`` (the server's symmetrisation mixes two
      users' reports) and the report of a user is ``(bit to its partner,
      number of other users it reported)``, a function of its own list.
    - ``"callable"``: ``f(X, keys) -> reports`` of shape (n,) or (n, k); its
      claimed budget is ``f.epsilon_`` when it has one.
    """

    def __init__(self, item, d, index):
        mech, columns = (item if isinstance(item, tuple) and len(item) == 2 else (item, None))
        if isinstance(mech, type):
            raise TypeError(f"mechanism {index} is the class {mech.__name__}, not a mechanism: "
                            f"pass an instance, e.g. {mech.__name__}(eps=...) with its public "
                            "parameters.")
        self.mech = mech
        if hasattr(mech, "fit") and hasattr(mech, "randomize") and not hasattr(mech, "transform"):
            self.kind = "labels"
        elif hasattr(mech, "fit") and hasattr(mech, "transform"):
            reqs = getattr(mech, "_graph_requirements", {}) or {}
            self.kind = "edges" if reqs.get("require_adjacency") else "features"
        elif callable(mech):
            self.kind = "callable"
        else:
            raise TypeError(f"mechanism {index} must be an unfitted scikit-learn style "
                            "transformer, a label mechanism (fit() and randomize(y, keys)), "
                            f"or a callable f(X, keys) -> reports; got {mech!r}.")
        if columns is None:
            if self.kind in ("labels", "edges") and d != 1:
                raise ValueError(f"mechanism {index} ({type(mech).__name__}) reads one column "
                                 f"of the inputs (the label or the edge bit), but x0 has {d} "
                                 "columns: pass (mechanism, [column]).")
            columns = np.arange(d)
        columns = np.atleast_1d(np.asarray(columns))
        if columns.dtype == bool:
            columns = np.flatnonzero(columns)
        if (columns.ndim != 1 or len(columns) == 0
                or not np.issubdtype(columns.dtype, np.integer)
                or columns.min() < -d or columns.max() >= d):
            raise ValueError(f"columns of mechanism {index} must be indices into the {d} "
                             f"input columns, got {columns.tolist()!r}.")
        if self.kind in ("labels", "edges") and len(columns) != 1:
            raise ValueError(f"mechanism {index} ({type(mech).__name__}) reads exactly one "
                             f"column, got {len(columns)}.")
        self.columns = columns % d
        name = getattr(mech, "__name__", None) or type(mech).__name__
        self.name = f"{index}:{name}"
        self.epsilon = None
        self.fitted = None
        if self.kind in ("features", "edges"):
            params = mech.get_params(deep=False)
            if "feature_range" in params and params["feature_range"] is None:
                raise ValueError(f"{type(mech).__name__} has feature_range=None: it would read "
                                 "its bounds from the audit's inputs instead of public "
                                 "bounds. Give the mechanism the public feature_range it "
                                 "uses in deployment.")

    def _fit(self, est, *args):
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrivacyLeakWarning)
            try:
                est.fit(*args)
            except PrivacyLeakWarning as w:
                raise ValueError(f"{type(est).__name__} derived a public parameter from the "
                                 f"audit's inputs ({w}). Pass it explicitly, as in "
                                 "deployment.") from None
        if self.fitted is None:
            self.fitted, self.epsilon = est, self._claim(est)
        return est

    def _claim(self, mech):
        return _check_claim(getattr(mech, "epsilon_", None), f"epsilon_ of mechanism {self.name}")

    def reports(self, X, ids, keys, population):
        """Reports of the users of one batch (rows of ``X``) as a float (n, k) array.

        Every batch and every collection asks the same ``population`` (the
        audit's users), as one deployment would.
        """
        Xc = X[:, self.columns]
        if self.kind == "features":
            G = GraphData(Xc, node_ids=ids, population=population)
            est = self._fit(clone(self.mech), G)
            Z = est.transform(G)
            if isinstance(Z, GraphData):
                Z = Z.features[Z.rows]
        elif self.kind == "labels":
            est = self._fit(clone(self.mech))
            y = Xc[:, 0]
            classes = getattr(est, "classes_", None)
            if classes is not None and np.issubdtype(np.asarray(classes).dtype, np.number):
                bad = ~np.isin(y, np.asarray(classes))
                if bad.any():   # a cast would silently turn 0.5 into the class 0
                    raise ValueError(
                        f"the label input of mechanism {self.name} must be one of its "
                        f"classes, got {np.unique(y[bad])[:10].tolist()}; classes are "
                        f"{np.asarray(classes).tolist()}. Pass labels that are classes.")
                y = y.astype(np.asarray(classes).dtype)
            Z = est.randomize(y, GraphData(Xc, node_ids=ids, population=population))
            if classes is not None:
                Z = np.searchsorted(np.asarray(classes), Z)
        elif self.kind == "edges":
            Z = self._edge_reports(Xc[:, 0], X, ids, population)
        else:
            Z = self.mech(Xc, keys)
            self.fitted = self.mech
            if self.epsilon is None:
                self.epsilon = self._claim(self.mech)
        Z = _float_reports(Z, f"the reports of mechanism {self.name}")
        if Z.ndim == 1:
            Z = Z[:, None]
        if Z.ndim != 2 or len(Z) != len(X) or Z.shape[1] == 0:
            raise ValueError(f"mechanism {self.name} returned reports of shape {Z.shape} for "
                             f"{len(X)} users; expected one row per user, with at least "
                             "one output.")
        return Z

    def _edge_reports(self, bit, X, ids, population):
        if not np.all((bit == 0) | (bit == 1)):
            raise ValueError(f"the edge column of mechanism {self.name} must be 0 or 1 (does "
                             "the user have an edge to its audit partner).")
        n = len(bit)
        partner = np.arange(n) ^ 1  # blocks of users with the same input have even sizes
        on = np.flatnonzero(bit == 1)
        A = sp.csr_matrix((np.ones(len(on)), (on, partner[on])), shape=(n, n))
        G = GraphData(X, A, node_ids=ids, population=population)
        # one collection per batch: a report is drawn over its graph's directory (the
        # mechanism refuses another one), and each batch's users answer once
        est = clone(self.mech)
        if "symmetrize" in est.get_params(deep=False):
            est.set_params(symmetrize="directed")
        R = self._fit(est, G).transform(G)
        R = sp.csr_matrix(R.adjacency if isinstance(R, GraphData) else R)
        to_partner = np.asarray(R[np.arange(n), partner]).ravel() != 0
        others = R.getnnz(axis=1) - to_partner
        return np.column_stack([to_partner, others]).astype(np.float64)


def _check_inputs(xs):
    arrs = [np.asarray(x, dtype=np.float64) for x in xs]
    d = arrs[0].size
    for i, a in enumerate(arrs):
        if a.ndim > 1 and not (a.ndim == 2 and a.shape[0] == 1):
            raise ValueError(f"input {i} must be one user's values (1-D), got shape {a.shape}.")
        if a.size != d:
            raise ValueError(f"all inputs must have the same number of values, got {d} and "
                             f"{a.size}.")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"input {i} contains NaN or infinite values.")
    if d == 0:
        raise ValueError("inputs must hold at least one value.")
    return [a.ravel() for a in arrs]


def _draw_reports(items, xs, n_per_input, rng, batch_size=None):
    """Reports of every collection for ``n_per_input`` users holding each input.

    All collections see the same users (the same node ids): rows are ordered
    input by input, ``n_per_input`` users each. A user's report is a pure
    function of the collection's seed and the user's node id, so feature and
    label mechanisms report for everyone at once; an edge mechanism runs on
    graphs of ``batch_size`` users (the same even number per input), since
    its cost grows with the square of the graph size.

    Returns
    -------
    colls : list of _Collection (fitted, with ``epsilon``)
    reports : list (per collection) of lists (per input) of (n_per_input, k) arrays
    """
    xs = _check_inputs(xs)
    d, L = xs[0].size, len(xs)
    colls = [_Collection(item, d, i) for i, item in enumerate(items)]
    has_edges = any(c.kind == "edges" for c in colls)
    if has_edges and n_per_input % 2:
        n_per_input += 1
    X = np.repeat(np.stack(xs), n_per_input, axis=0)
    base = int(rng.integers(0, 2**40)) << 20
    ids = base + np.arange(len(X), dtype=np.int64)
    population = Population()          # the audit's users, asked by every collection
    keys = GraphData(X, node_ids=ids, population=population).node_keys
    per = None
    if has_edges:
        batch_size = _EDGE_BATCH if batch_size is None else batch_size
        per = max(2, _check_count(batch_size, "batch_size", 1) // L)
        per -= per % 2
    reports = []
    for c in colls:
        if c.kind != "edges":
            Z = c.reports(X, ids, keys, population)
        else:
            parts = []
            for start in range(0, n_per_input, per):
                stop = min(n_per_input, start + per)
                rows = (np.arange(L)[:, None] * n_per_input
                        + np.arange(start, stop)[None, :]).ravel()
                parts.append((rows, c.reports(X[rows], ids[rows], keys[rows], population)))
            Z = np.empty((len(X), parts[0][1].shape[1]))
            for rows, Zp in parts:
                Z[rows] = Zp
        reports.append([Z[i * n_per_input:(i + 1) * n_per_input] for i in range(L)])
    return colls, reports


# ---------------------------------------------------------------------------- the audits
def audit_collections(mechanisms, x0, x1, *, n_samples=20_000, confidence=0.95,
                      outputs="all", events="auto", epsilon_claimed=None, batch_size=None,
                      random_state=0):
    """Audit several collections run jointly on the same users: a lower bound on their total loss.

    ``n_samples`` users hold ``x0`` and ``n_samples`` others hold ``x1`` (each
    with its own node id, so reports are independent draws). Every mechanism
    is cloned and fitted on these users and reports for them; the joint
    output of all mechanisms is audited with :func:`audit_pair`, along with
    (``outputs="all"``) each output coordinate and each mechanism's own
    output. The claimed budget is the sum of the mechanisms' ``epsilon_``:
    a bound above it shows that the collections share randomness or that one
    of them spends more than it claims.

    Read more in the :ref:`User Guide <audit_collections>`.

    Parameters
    ----------
    mechanisms : list
        Each item is a mechanism or a pair ``(mechanism, columns)``, ``columns``
        the input columns it reads (default: all): an unfitted feature
        mechanism with its public bounds, a label mechanism, an edge mechanism
        or a callable ``f(X, keys) -> reports``.
    x0, x1 : array-like of shape (n_columns,)
        The two inputs (one user's values; labels and edge bits included);
        equal inputs are refused.
    n_samples : int, default=20000
        Users per input (rounded up to even with an edge mechanism).
    confidence : float, default=0.95
        Family-wise confidence over every output audited and event tried.
    outputs : {"all", "collections", "joint"}, default="all"
        ``"joint"``: only the joint output of all mechanisms; ``"collections"``:
        also each mechanism's output; ``"all"``: also each output coordinate.
    events : {"auto", "values", "cells"}, default="auto"
        See :func:`audit_pair`.
    epsilon_claimed : float or None, default=None
        Overrides the sum of ``epsilon_`` (needed for a callable without one);
        a number >= 0, ``inf`` allowed. With no claim at all, the result's
        ``exceeds_claim`` raises an error.
    batch_size : int >= 1 or None, default=None
        Users per fit (one graph) of an edge mechanism (its cost grows with
        the square of the graph size); ``None``: 256. Other mechanisms report
        for all users at once (a report depends only on the seed and the
        user).
    random_state : int, RandomState, Generator or None, default=0
        The audit's randomness: node ids of the simulated users and the
        splits. A mechanism's own ``random_state`` is left as given (fix it
        for a reproducible audit).

    Returns
    -------
    result : AuditResult
        The largest bound over the outputs audited (``method="max"``); each
        output's audit is in ``result.components``.

    See Also
    --------
    skldp.audit.audit_mechanism : One mechanism.
    skldp.audit.audit_ledger : Everything one user sends while an estimator is fitted.

    Examples
    --------
    >>> from skldp.audit import audit_collections
    >>> from skldp.mechanisms import OneBitMechanism
    >>> pair = [OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0),
    ...         OneBitMechanism(eps=2.0, feature_range=(0, 1), random_state=0)]
    >>> res = audit_collections(pair, [0.0], [1.0], n_samples=20_000)
    >>> res.epsilon_claimed, bool(res.epsilon_lower <= 3.0)
    (3.0, True)
    """
    if outputs not in _OUTPUTS:
        raise ValueError(f"outputs must be one of {_OUTPUTS}, got {outputs!r}.")
    confidence = _check_confidence(confidence)
    n_samples = _check_count(n_samples, "n_samples", 4)
    epsilon_claimed = _check_claim(epsilon_claimed)
    if batch_size is not None:   # checked even where no edge mechanism would use it
        batch_size = _check_count(batch_size, "batch_size (or None)", 1)
    if isinstance(mechanisms, (str, bytes)) or not hasattr(mechanisms, "__len__") \
            or len(mechanisms) == 0:
        raise ValueError("mechanisms must be a non-empty list of mechanisms.")
    x0, x1 = _check_inputs([x0, x1])
    if np.array_equal(x0, x1):   # the two groups' reports are identically distributed
        raise ValueError("x0 and x1 are the same input: the audit would find no leak (a "
                         "bound of 0) whatever the mechanism. Pass two different inputs, "
                         "e.g. the bounds of feature_range.")
    rng = np.random.default_rng(random_state if not isinstance(random_state, np.random.RandomState)
                                else random_state.randint(0, 2**31 - 1))
    colls, reports = _draw_reports(list(mechanisms), [x0, x1], n_samples, rng, batch_size)
    if epsilon_claimed is None and all(c.epsilon is not None for c in colls):
        epsilon_claimed = float(sum(c.epsilon for c in colls))
    parts = [(c.name, R0, R1) for c, (R0, R1) in zip(colls, reports, strict=True)]
    return _audit_outputs(parts, outputs, confidence, epsilon_claimed, events=events, rng=rng)


def _audit_outputs(parts, outputs, confidence, epsilon_claimed, *, events, rng):
    """Audit the outputs of ``parts`` (``(name, R0, R1)``: one collection's reports for
    the two inputs) that ``outputs`` selects, each coordinate, each collection and their
    joint, with ``confidence`` split evenly among them (a union bound): the result is the
    largest lower bound, holding every output's result."""
    comps = []
    for name, R0, R1 in parts:
        k = R0.shape[1]
        if outputs == "all" and k > 1:
            comps += [(f"{name}[{j}]", R0[:, [j]], R1[:, [j]]) for j in range(k)]
        if outputs != "joint" or len(parts) == 1:
            comps.append((name, R0, R1))
    if len(parts) > 1:
        comps.append(("joint", np.hstack([R0 for _, R0, _ in parts]),
                      np.hstack([R1 for _, _, R1 in parts])))
    each = 1.0 - (1.0 - confidence) / len(comps)
    results = []
    for name, R0, R1 in comps:
        r = audit_pair(R0, R1, events=events, confidence=each, random_state=rng)
        results.append(AuditResult(r.epsilon_lower, r.epsilon_point, r.event, r.n,
                                   r.confidence, r.method, r.counts, name))
    best = max(results, key=lambda r: r.epsilon_lower)
    return AuditResult(best.epsilon_lower, best.epsilon_point, best.event, best.n, confidence,
                       "max", best.counts, best.output, epsilon_claimed, tuple(results))


def audit_mechanism(mechanism, x0, x1, *, n_samples=20_000, confidence=0.95, outputs="all",
                    events="auto", batch_size=None, random_state=0):
    """Audit one local DP mechanism: a lower bound on its privacy loss between two inputs.

    The mechanism (unfitted, scikit-learn style) is fitted once on a
    :class:`~skldp.GraphData` holding ``n_samples`` users with ``x0`` and
    ``n_samples`` users with ``x1``, each with its own node id, and
    transformed; each output coordinate and the joint output (a tuple for
    discrete outputs) are audited with :func:`audit_pair`, with the
    confidence shared among them. Extreme inputs (e.g. the lower bound of
    ``feature_range`` in every feature against the upper bound) are where
    most mechanisms reach their budget.

    A bound above ``mechanism.epsilon_`` (``result.exceeds_claim``) disproves
    the claimed guarantee; a bound below it proves nothing (an audit can only
    show leaks).

    Parameters
    ----------
    mechanism : estimator or callable
        An unfitted transformer given its public bounds (``feature_range``:
        reading them from the audit's inputs raises an error), a label
        mechanism, an edge mechanism or a callable, see
        :func:`audit_collections`.
    x0, x1 : array-like of shape (n_features,)
        The two inputs of one user (equal inputs are refused).
    n_samples : int, default=20000
        Reports per input.
    confidence : float, default=0.95
    outputs : {"all", "joint"}, default="all"
        ``"all"``: every coordinate and the joint output; ``"joint"``: only the
        joint output (better for many coordinates: no confidence is shared).
    events : {"auto", "values", "cells"}, default="auto"
        See :func:`audit_pair`.
    batch_size : int or None, default=None
        See :func:`audit_collections`.
    random_state : int, RandomState, Generator or None, default=0
        The audit's randomness (node ids, splits).

    Returns
    -------
    result : AuditResult
        ``epsilon_lower``, ``epsilon_claimed`` (the fitted ``epsilon_``), the
        bounding output and event, and every output's audit in
        ``components``.

    Examples
    --------
    >>> from skldp.audit import audit_mechanism
    >>> from skldp.mechanisms import OneBitMechanism
    >>> mech = OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)
    >>> res = audit_mechanism(mech, [0.0], [1.0], n_samples=50_000)
    >>> 0.9 < res.epsilon_lower <= res.epsilon_claimed == 1.0
    True
    """
    if outputs not in ("all", "joint"):
        raise ValueError(f"outputs must be 'all' or 'joint', got {outputs!r}.")
    return audit_collections([mechanism], x0, x1, n_samples=n_samples, confidence=confidence,
                             outputs=outputs, events=events, batch_size=batch_size,
                             random_state=random_state)
