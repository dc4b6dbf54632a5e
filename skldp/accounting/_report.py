"""What the users of a fitted estimator sent: a per-user privacy report read from the ledger."""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._graph_data import GraphData
from ..device._spec import significant as _sig
from ..population._population import _TOL, plain_array_ledgers

__all__ = ["PrivacySpend", "PrivacyReport", "privacy_report"]


@dataclass(frozen=True)
class PrivacySpend:
    """One collection (or central training) in the ledger.

    Attributes
    ----------
    step : str
        Path of the step of the estimator that made it, or ``""`` when no step
        of the estimator holds it (another fit on the same users, e.g. a
        search's folds or another candidate).
    epsilon : float
        What the user who answered most often spent on it (its budget times
        that user's number of answers).
    delta : float
        0 for local DP.
    protects : tuple of str
        ``"features"``, ``"labels"``, ``"edges"``.
    model : {"local", "central", "clear"}
        ``"local"``: each user's reports; ``"central"``: a released model;
        ``"clear"``: a server-side step that read the users' data in the clear.
    collection : str
        The collection's id (its public spec is in the ledger).
    n_users : int
        Users who answered it (a central training: users whose data it read).
    kind : str
        The mechanism or trainer, e.g. ``"HDSMechanism"``.
    reason : str
        For a read in the clear that no ledger holds: why it is charged.
    received : bool
        The collection's reports came from real devices.
    further_answers_to : str
        For answers that users sent beyond their first to a collection received
        from real devices: that collection's id (``""`` otherwise).
    further_answers : int
        How many such answers each of these users sent (``epsilon`` is their sum).
    of_step : str
        The step that holds the collection these further answers were sent to.
    """

    step: str
    epsilon: float
    delta: float
    protects: tuple
    model: str
    collection: str = ""
    n_users: int = 0
    kind: str = ""
    reason: str = ""
    received: bool = False
    further_answers_to: str = ""
    further_answers: int = 0
    of_step: str = ""


@dataclass
class PrivacyReport:
    """Privacy spent per user, read from the ledger of the users' population.

    Local guarantees compose sequentially per user (Dwork & Roth 2014, Thm.
    3.16): a user's epsilon is the sum over every report it sent (features,
    labels, edges; several collections), and infinite when a server-side step
    read its features in the clear. Central guarantees (DP-SGD trainings) are node-level and
    compose by basic composition; they add to every user's total.

    Attributes
    ----------
    spends : list of PrivacySpend
        Every collection and training the users answered, in order.
    local_epsilon : float
        The largest local epsilon of one user (0 if nothing was sent; ``inf``
        when a server-side step read the users' features in the clear). With
        several ledgers (users of plain arrays, or bare label keys beside a
        GraphData), the sum of their largest values: the same people may be
        keyed differently in each, so only the sum is an upper bound.
    central_epsilon, central_delta : float
        The central trainings composed (sums).
    budget : float or None
        The population's per-user cap (``None`` when the ledgers' populations
        have different caps: see ``budgets``).
    budgets : tuple
        Each ledger's cap (``None``: no cap) when they differ, else empty.
    by_what : dict
        The largest local epsilon of one user on reports that protect
        ``"features"``, ``"labels"``, ``"edges"``.
    no_private_step : bool
        Nothing in the estimator leads to its users' ledger, and one of its steps
        read data no ledger records (a step from outside skldp, or a model
        fitted on a plain array): it was fitted on the data as it is, so
        ``local_epsilon`` is ``inf``.
    plain_arrays : bool
        The estimator sent users of plain arrays to their ledgers. Plain arrays
        carry no user ids (a search's folds, a slice or a copy of an array are
        other arrays, which may hold the same people), so the report adds the
        ledgers of every plain array of this process, and those saved with the
        estimators it loaded: an upper bound.
    n_ledgers : int
        The ledgers added up (more than one: the totals are an upper bound).
    of_graph : bool
        The report of a GraphData's users (its lines name collections by id),
        not of an estimator.
    """

    spends: list = field(default_factory=list)
    local_epsilon: float = 0.0
    central_epsilon: float = 0.0
    central_delta: float = 0.0
    budget: float = None
    by_what: dict = field(default_factory=dict)
    no_private_step: bool = False
    plain_arrays: bool = False
    n_ledgers: int = 0           # ledgers added up (several: an upper bound)
    budgets: tuple = ()          # the ledgers' caps, when they differ (budget is then None)
    of_graph: bool = False       # the report of a GraphData's users, not of an estimator

    @property
    def central(self):
        """The central trainings."""
        return [s for s in self.spends if s.model == "central"]

    @property
    def total_epsilon(self):
        """The largest epsilon of one user over everything (local plus central)."""
        return self.local_epsilon + self.central_epsilon

    def epsilon_for(self, what):
        """The largest local epsilon one user spent on reports that protect ``what``
        (``"features"``, ``"labels"`` or ``"edges"``)."""
        if what not in ("features", "labels", "edges"):
            raise ValueError(f"what must be 'features', 'labels' or 'edges', got {what!r}.")
        return float(self.by_what.get(what, 0.0))

    def __str__(self):
        if self.no_private_step:
            return ("No differentially private step found: for all the report can tell, the "
                    "estimator was fitted on the users' data as it is, nothing is protected "
                    "(epsilon = inf).")
        if not self.spends:
            return ("The users' ledger records no report and no read in the clear "
                    "(epsilon = 0); the graph and the training labels given to fit are taken "
                    "as given (see the threat model).")
        lines = []
        for s in self.spends:
            d = f", delta={_sig(s.delta, 3)}" if s.delta else ""
            if s.further_answers:
                lines.append(self._further_line(s))
                continue
            where = s.step or (f"collection {s.collection}" if self.of_graph else
                               f"received from devices: collection {s.collection}"
                               if s.received else
                               "not kept by this estimator (another fit, or another plain "
                               "array)" if self.plain_arrays else
                               "not kept by this estimator (another fit on these users)")
            if s.model == "clear":
                who = _users(s.n_users) if s.n_users else (
                    s.reason or "a plain array: no known users")
                lines.append(f"  {s.kind} read the users' {', '.join(s.protects)} in the clear: "
                             f"epsilon=inf ({who})")
                continue
            # a central training reads its nodes' neighbours too (DP-GNN): count them all
            who = f"{_users(s.n_users)}' data read" if s.model == "central" else \
                _users(s.n_users)
            lines.append(f"  {where}: {s.kind} epsilon={_sig(s.epsilon)}{d} ({s.model} DP; "
                         f"protects {_protected(s)}; {who})")
        added = self.plain_arrays or self.n_ledgers > 1
        if any(s.model in ("local", "clear") for s in self.spends):
            parts = ", ".join(f"{w} {_sig(e)}" for w, e in self.by_what.items() if e)
            most = (f"at most {_sig(self.local_epsilon)} (the ledgers' largest spends added, an "
                    f"upper bound; {parts})" if added else
                    f"{_sig(self.local_epsilon)} (the most any user spent; {parts})")
            lines.append(f"  total local epsilon per user: {most}")
        if self.plain_arrays:
            lines.append("  plain arrays carry no user ids (nor do labels given by bare node "
                         "keys): every plain array's reports and trainings in this process "
                         "(and those saved with the estimators it loaded) are added (an upper "
                         "bound); give a GraphData to count each user's own")
        elif self.n_ledgers > 1:
            lines.append(f"  {self.n_ledgers} populations' ledgers are added (an upper bound: "
                         "they may hold the same people under other ids)")
        if self.central:
            lines.append(f"  central trainings: epsilon={_sig(self.central_epsilon)}, "
                         f"delta={_sig(self.central_delta, 3)} (basic composition; "
                         "node-level, each model's neighbouring relation: DP-GNN's a node's "
                         "data zeroed out, DP-MLP's a row replaced)")
        if self.budgets:
            # (caps rounded down, as what is left: a cap is never printed above itself)
            caps = ", ".join("none" if c is None else _sig(c, up=False) for c in self.budgets)
            lines.append(f"  budgets per user of the {len(self.budgets)} populations: {caps}")
        if self.budget is not None:
            left = self.budget - self.total_epsilon
            # (the ledger admits sums of floats up to the cap + _TOL: 0.1 + 0.1 + 0.1 under
            # a cap of 0.3 leaves -5.6e-17, which is nothing left, not a debt)
            left = _sig(0.0 if -_TOL <= left < 0 else left, up=False)
            lines.append(f"  budget: {_sig(self.budget, up=False)} per user"
                         + ("" if added else f"; at least {left} left to each user"))
        return ("Privacy spent per user (the ledger: what each user sent):\n"
                + "\n".join(lines))

    def _further_line(self, s):
        """The line of the answers users sent beyond their first to a received collection."""
        c, of = s.further_answers, s.further_answers_to
        where = (f"{s.of_step}: further answers to its collection {of}" if s.of_step else
                 f"{'' if self.of_graph else 'received from devices: '}collection {of}, "
                 "further answers")
        who = f"{_users(s.n_users)} sent {c} more answer{'s' if c > 1 else ''}" + \
            (" each" if s.n_users > 1 else "")
        total = f", {_sig(s.epsilon)} in all" if c > 1 else ""
        return (f"  {where}: {who} ({s.kind}, epsilon={_sig(s.epsilon / c)} each{total}; "
                f"{s.model} DP; protects {_protected(s)})")


def _protected(s):
    """What the spend ``s`` protects, for its line. A local edge collection's epsilon is
    per adjacency list, and an edge between two users is in both lists."""
    what = ", ".join(s.protects)
    if s.model == "local" and "edges" in s.protects:
        what += ", each user's adjacency list: one edge is in two lists"
    return what


# the nonce of a charge of further answers before specs stated them (further_answers)
_FURTHER_NONCE = re.compile(r"(\S+) \((\d+) further answers?, [0-9a-f]+\)")


def _further_answers(spec, by_nonce):
    """``(id of the collection, answers per user)`` when ``spec`` charges answers users
    sent beyond their first to a received collection, else ``("", 0)``."""
    if spec.further_answers is not None:
        return spec.further_answers["collection"], int(spec.further_answers["count"])
    old = _FURTHER_NONCE.fullmatch(spec.nonce)
    if old and old.group(1) in by_nonce:
        return by_nonce[old.group(1)], int(old.group(2))
    return "", 0


def _users(n):
    return f"{n} user" if n == 1 else f"{n} users"


def holds_fitted_estimators(value):
    """Whether ``value`` is an object scikit-learn keeps fitted estimators in without
    being one (``CalibratedClassifierCV``'s folds): the walks over an estimator's fitted
    steps (here and :func:`skldp.privacy.forget_secrets`) look inside it."""
    return not isinstance(value, (BaseEstimator, type, Mapping, list, tuple)) and \
        hasattr(value, "__dict__") and type(value).__module__.startswith("sklearn.")


def _estimators_in(value, name):
    """(name, estimator) pairs held in a value: an estimator, or lists/tuples/dicts of them."""
    if isinstance(value, BaseEstimator):
        yield name, value
    elif holds_fitted_estimators(value):   # e.g. CalibratedClassifierCV's folds
        for k, v in sorted(vars(value).items()):
            yield from _estimators_in(v, f"{name}.{k}" if name else k)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _estimators_in(v, f"{name}.{k}")
    elif isinstance(value, (list, tuple)):
        # (name, estimator[, columns]) items of Pipeline, FeatureUnion, ColumnTransformer.
        if len(value) in (2, 3) and isinstance(value[0], str):
            yield from _estimators_in(value[1], f"{name}.{value[0]}" if name else value[0])
            return
        for i, v in enumerate(value):
            yield from _estimators_in(v, name if isinstance(v, tuple) else f"{name}.{i}")


def _children(est):
    steps = getattr(est, "steps", None)
    if isinstance(steps, list) and all(isinstance(s, tuple) and len(s) == 2 for s in steps):
        for name, step in steps:
            if step not in (None, "passthrough"):
                yield name, step
        return
    for key, value in sorted(vars(est).items()):
        if key == "scorer_":   # a search's scorer holds the template it was given, not a fit
            continue
        if key == "transformer_list" or (key.endswith("_") and not key.startswith("_")):
            yield from _estimators_in(value, key.rstrip("_") if key.endswith("_") else "")


def _same_ledger(a, b):
    """Whether two ledgers are one population's: the same object, or copies that read one
    journal (a step fitted in a worker process brings back its copy)."""
    return a is b or (a._journal is not None and a._journal == b._journal)


def _add_ledger(ledgers, ledger):
    """Add ``ledger`` to ``ledgers`` unless one of them is the same population's; of two
    copies, keep the one that read more of the journal (copies saved at different times
    and loaded once the journal is gone hold different snapshots)."""
    for i, other in enumerate(ledgers):
        if _same_ledger(ledger, other):
            if ledger is not other:
                ledger._sync()
                other._sync()
                if ledger._offset > other._offset:
                    ledgers[i] = ledger
            return
    ledgers.append(ledger)


def _private_steps(estimator):
    """``{collection id: path}`` of the fitted private steps held in ``estimator``, the
    ledgers its steps wrote to, the paths of the steps whose reads no ledger holds (steps
    from outside skldp, which record nothing, and skldp steps that read a plain array: no
    users to charge), and the (path, class) of the steps that read a plain array after
    reading the users of a ledger (a GraphData): rows of no known users beside them."""
    held, ledgers, seen = {}, [], set()

    def walk(est, path):
        if id(est) in seen:
            return
        seen.add(id(est))
        spec, ledger = getattr(est, "collection_", None), getattr(est, "ledger_", None)
        if ledger is not None:   # a private step, or a step charged for a read in the clear
            if spec is not None:
                held.setdefault(spec.id, path or type(est).__name__)
            _add_ledger(ledgers, ledger)
        children = list(_children(est))
        if getattr(est, "_reads_plain_beside_users", False):
            unrecorded.append((path or type(est).__name__, type(est).__name__, ""))
        if isinstance(getattr(est, "steps", None), list):
            # Steps before a feature mechanism (or a central DP training) were fitted on
            # the users' raw rows, unless they run on the device; the step after them
            # reads a plain array, so no ledger a report reaches holds that read (and a
            # training's guarantee covers what it reads, not what a step before it released).
            first = next((i for i, (_, c) in enumerate(children)
                          if _perturbs_features(c) or _perturbs_features(c, model="central")),
                         None)
            why = (_BEFORE_TRAINING if first is not None and not _perturbs_features(
                children[first][1]) else _BEFORE_MECHANISM)
            for name, child in children[:first or 0]:
                for where, kind in _raw_readers(child, f"{path}.{name}" if path else name):
                    unrecorded.append((where, kind, why))
        branches = _branches(est)
        if any(_perturbs_features(b) for _, b in branches if not isinstance(b, str)):
            # Branches beside a feature mechanism (a union, a column transformer) pass what
            # they read of the users' rows on to what follows: in the clear.
            for name, branch in branches:
                where = f"{path}.{name}" if path else name
                if isinstance(branch, str):   # "passthrough": the raw columns themselves
                    unrecorded.append((where, branch, _BESIDE_MECHANISM))
                elif not _perturbs_features(branch):
                    unrecorded.extend((w, kind, _BESIDE_MECHANISM)
                                      for w, kind in _raw_readers(branch, where))
        if getattr(est, "_reads_unrecorded", False) or (
                not children and not type(est).__module__.startswith("skldp.")):
            foreign.append(path or type(est).__name__)
        for name, child in children:
            walk(child, f"{path}.{name}" if path else name)

    foreign, unrecorded = [], []
    walk(estimator, "")
    return held, ledgers, foreign, unrecorded


_BEFORE_MECHANISM = ("fitted on the users' rows before a mechanism: only on-device steps, "
                     "NodeWise(..., on_device=True), may stand there")


_BEFORE_TRAINING = ("fitted on the users' rows before a central DP training, outside its "
                    "guarantee (what it learnt, e.g. a scaler's means, is released with the "
                    "model)")


_BESIDE_MECHANISM = ("passed the users' rows on beside a mechanism (a branch of a union or "
                     "a column transformer), in the clear")


def _branches(est):
    """(name, step) of the branches of a fitted union or column transformer (steps or
    ``"passthrough"``; dropped ones left out), else ``[]``."""
    if isinstance(getattr(est, "transformers_", None), list):   # ColumnTransformer
        items = [(name, step) for name, step, _ in est.transformers_]
    elif isinstance(getattr(est, "transformer_list", None), list):   # FeatureUnion
        items = list(est.transformer_list)
    else:
        return []
    return [(name, step) for name, step in items
            if step is not None and not (isinstance(step, str) and step != "passthrough")]


def _raw_readers(est, path):
    """(path, class) of the steps in ``est`` (a step before a feature mechanism) that read
    the rows they are given: every step but the on-device ones, the mechanisms and those
    that read no feature; containers (pipelines, unions, column transformers) by their
    steps."""
    if getattr(est, "_device_side", False) or not getattr(est, "_reads_features", True) or \
            getattr(est, "collection_", None) is not None:   # a mechanism (of the edges)
        return []
    children = list(_children(est))
    if not children:
        return [(path, type(est).__name__)]
    return [found for name, child in children
            for found in _raw_readers(child, f"{path}.{name}")]


def _perturbs_features(est, seen=None, model="local"):
    """Whether ``est`` or a step inside it is a fitted local mechanism of features (with
    ``model="central"``: a central DP training that protects them)."""
    seen = set() if seen is None else seen
    if id(est) in seen:
        return False
    seen.add(id(est))
    spec = getattr(est, "collection_", None)
    if spec is not None and spec.model == model and "features" in spec.protects:
        return True
    return any(_perturbs_features(c, seen, model) for _, c in _children(est))


def privacy_report(estimator):
    """What every user spent, read from the ledger of the users the estimator was fitted on.

    The ledger records every report the users sent (Design page, "Local DP is a
    protocol"): those of the estimator's own steps, and those of every other fit
    on the same users (each candidate and fold of a search, nested searches,
    searches run in worker processes). A user who answered two collections, or
    whose features a server-side step read in the clear, is charged for each.
    Nothing is replayed
    from parameters.

    Parameters
    ----------
    estimator : estimator or GraphData
        A fitted estimator, pipeline or search (its private steps lead to their
        users' ledger), or the GraphData whose users' ledger to read.

    Returns
    -------
    report : PrivacyReport

    Raises
    ------
    sklearn.exceptions.NotFittedError
        The estimator is not fitted.
    TypeError
        ``estimator`` is neither an estimator nor a GraphData (e.g. an array).
    ValueError
        A search fitted with ``refit=False``: it kept no fitted estimator, so
        nothing in it leads to the users' ledger; pass the data it was fitted
        on (``privacy_report(G)``).

    Examples
    --------
    >>> from skldp.accounting import privacy_report
    >>> print(privacy_report(pipe))  # doctest: +SKIP
    """
    if isinstance(estimator, GraphData):
        held, ledgers = {}, [estimator.ledger]
        report_of_graph = True
    else:
        report_of_graph = False
        if not isinstance(estimator, BaseEstimator):
            raise TypeError(f"privacy_report takes a fitted estimator (a pipeline, a search) or "
                            f"a GraphData, got {type(estimator).__name__}.")
        if hasattr(estimator, "fit"):
            check_is_fitted(estimator)
        held, ledgers, foreign, unrecorded = _private_steps(estimator)
        if not ledgers and hasattr(estimator, "cv_results_") and \
                not hasattr(estimator, "best_estimator_"):
            raise ValueError(
                "This search kept no fitted estimator (refit=False), so nothing in it leads to "
                "the users' ledger; what its fits collected was still spent. Pass the data it "
                "was fitted on instead: privacy_report(G). A search on a plain array (no "
                "GraphData to pass) needs refit=True: the report of its best_estimator_ adds "
                "the ledgers of every plain array of this process, this search's folds "
                "included.")
    report = PrivacyReport(of_graph=report_of_graph)
    caps = []   # each ledger's (its population's) budget cap
    plain = [] if isinstance(estimator, GraphData) else plain_array_ledgers()
    if any(_same_ledger(ledger, p) for ledger in ledgers for p in plain):
        # the same people may be in other plain arrays (a search's folds), under other keys
        report.plain_arrays = True
        for p in plain:   # (of two copies, the estimator's may be the older: keep the newer)
            _add_ledger(ledgers, p)
    if not isinstance(estimator, GraphData) and not ledgers and foreign:
        # nothing leads to a ledger, and a step from outside skldp was fitted on the
        # data as it was: the users' data, for all the report can tell
        report.no_private_step, report.local_epsilon = True, float("inf")
        report.by_what["features"] = float("inf")
    for ledger in ledgers:
        entries = ledger.entries()
        # (older ledgers: the original collection by the nonce its further answers name)
        by_nonce = {e.spec.nonce: e.spec.id for e in entries}
        for entry in entries:
            spec = entry.spec
            of, count = _further_answers(spec, by_nonce)
            report.spends.append(PrivacySpend(
                step=held.get(spec.id, ""), epsilon=float(entry.epsilon),
                delta=float(spec.delta), protects=tuple(spec.protects), model=spec.model,
                collection=spec.id, n_users=entry.n_users, kind=spec.kind.rsplit(".", 1)[-1],
                received=bool(of) or spec.id in ledger._received_ids,
                further_answers_to=of, further_answers=count * entry.max_answers,
                of_step=held.get(of, "") if of else ""))
        # Several ledgers (plain arrays, bare label keys beside a GraphData) may hold the
        # same people under different keys: their totals add up (an upper bound).
        report.local_epsilon += ledger.local_epsilon
        report.central_epsilon += ledger.central_epsilon
        report.central_delta += ledger.central_delta
        for what in ("features", "labels", "edges"):
            report.by_what[what] = report.by_what.get(what, 0.0) + ledger.epsilon_for(what)
        ledger._sync()
        caps.append(ledger._cap())
    for path, kind, reason in (unrecorded if ledgers and not isinstance(estimator, GraphData)
                               else ()):
        # beside its users' ledger, a step read a plain array in the clear (its rows are no
        # known users), or the users' rows before a mechanism: no ledger here holds the read
        report.spends.append(PrivacySpend(step=path, epsilon=float("inf"), delta=0.0,
                                          protects=("features",), model="clear", kind=kind,
                                          reason=reason))
        report.local_epsilon = report.by_what["features"] = float("inf")
    if np.isinf(report.local_epsilon):
        report.local_epsilon = float("inf")
    report.n_ledgers = len(ledgers)
    if caps and all(c == caps[0] for c in caps):   # one cap for all: stated
        report.budget = caps[0]
    elif any(c is not None for c in caps):
        report.budgets = tuple(caps)
    return report
