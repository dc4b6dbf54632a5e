"""What a fitted estimator or pipeline spent: a per-user privacy report."""

from dataclasses import dataclass, field

import numpy as np
from joblib import hash as joblib_hash
from sklearn.base import BaseEstimator, clone

__all__ = ["PrivacySpend", "PrivacyReport", "privacy_report"]


@dataclass(frozen=True)
class PrivacySpend:
    """One guarantee given by one fitted step.

    Attributes
    ----------
    step : str
        Name of the step (its path in the pipeline).
    epsilon : float
        The step's ``epsilon_`` (per user for local DP, per node for central DP).
    delta : float
        The step's ``delta_`` (0 for pure local DP).
    protects : tuple of str
        What the guarantee covers: ``"features"``, ``"labels"``, ``"edges"``.
    model : {"local", "central"}
        ``"local"``: each user's report; ``"central"``: the released model.
    """

    step: str
    epsilon: float
    delta: float
    protects: tuple
    model: str  # "local" (each user's report) or "central" (the released model)


@dataclass
class PrivacyReport:
    """Privacy spent per user by a fitted pipeline.

    Local guarantees compose sequentially (Dwork & Roth 2014, Thm. 3.16): a
    user who sends several reports (features, labels, edges) spends the sum of
    their epsilons. Central guarantees (DP-SGD training) are node-level
    (epsilon, delta) guarantees of the released model and are reported apart.

    Attributes
    ----------
    spends : list of PrivacySpend
        One entry per fitted private step.
    search_epsilon : float or None
        For a fitted hyperparameter search: per-user epsilon summed over every
        distinct setting of the private steps that the search collected
        (``None`` if not a search, nan if some setting's epsilon cannot be
        read from its parameters).
    search_collections : int
        Number of those distinct collections.
    search_central_epsilon : float or None
        For a fitted search with central DP steps: the epsilons of every model
        trained in the search (each candidate in each fold, and the refit),
        composed by basic composition (sum); nan if unknown.
    search_central_delta : float or None
        Their deltas, summed likewise.
    search_trainings : int
        Number of those trainings.
    """

    spends: list = field(default_factory=list)
    #: For a fitted hyperparameter search: per-user epsilon summed over every distinct
    #: setting of the private steps that the search collected (None if not a search,
    #: nan if some setting's epsilon cannot be read from its parameters).
    search_epsilon: float = None
    search_collections: int = 0
    #: For a fitted search with central DP steps: every model trained in the search
    #: (each candidate in each fold, and the refit) used the private data. Their
    #: (epsilon, delta) compose (basic composition: sums); nan if unknown.
    search_central_epsilon: float = None
    search_central_delta: float = None
    search_trainings: int = 0

    @property
    def local_epsilon(self):
        """Total local epsilon per user (sum over the user's reports)."""
        return float(sum(s.epsilon for s in self.spends if s.model == "local"))

    @property
    def central(self):
        return [s for s in self.spends if s.model == "central"]

    def epsilon_for(self, what):
        """Total local epsilon of the reports that protect ``what`` (features, labels, edges)."""
        return float(sum(s.epsilon for s in self.spends
                         if s.model == "local" and what in s.protects))

    def __str__(self):
        if not self.spends:
            return "No differentially private step found: nothing is protected (epsilon = inf)."
        lines = []
        for s in self.spends:
            d = f", delta={s.delta:.3g}" if s.delta else ""
            lines.append(f"  {s.step}: epsilon={s.epsilon:.4g}{d} ({s.model} DP; protects "
                         f"{', '.join(s.protects)})")
        local = [s for s in self.spends if s.model == "local"]
        if local:
            lines.append(f"  total local epsilon per user: {self.local_epsilon:.4g}")
        if self.search_collections > 1:
            total = ("unknown (a setting's epsilon is not its eps parameter)"
                     if np.isnan(self.search_epsilon) else f"{self.search_epsilon:.4g}")
            lines.append(
                f"  WARNING: the hyperparameter search collected {self.search_collections} "
                "distinct settings of the private steps, each a separate collection from the "
                f"users; over the whole search each user spent {total}, not the value above. "
                "Fix the mechanisms' parameters (and an integer random_state) before searching "
                "to spend only one budget.")
        if self.search_trainings > 1:
            eps = ("unknown" if np.isnan(self.search_central_epsilon)
                   else f"{self.search_central_epsilon:.4g}")
            lines.append(
                f"  WARNING: the search trained {self.search_trainings} central-DP models on the "
                f"private data; together they spent epsilon={eps}, "
                f"delta={self.search_central_delta:.3g} (basic composition), not the value above. "
                "The choice among them used non-private validation scores, which no DP "
                "guarantee covers (tune on public data or with a private selection).")
        return "Privacy spent per user:\n" + "\n".join(lines)


def _estimators_in(value, name):
    """(name, estimator) pairs held in a value: an estimator, or lists/tuples/dicts of them."""
    if isinstance(value, BaseEstimator):
        yield name, value
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
            yield name, step
        return
    for key, value in sorted(vars(est).items()):
        if key == "transformer_list" or (key.endswith("_") and not key.startswith("_")):
            yield from _estimators_in(value, key.rstrip("_") if key.endswith("_") else "")


def privacy_report(estimator):
    """Collect the guarantees of every fitted private step in ``estimator``.

    Walks pipelines, meta-estimators (``best_estimator_``) and fitted
    sub-estimators (e.g. a classifier's ``label_mechanism_``); each fitted step
    with ``epsilon_`` contributes one entry.

    Parameters
    ----------
    estimator : estimator
        A fitted estimator, pipeline or search.

    Returns
    -------
    report : PrivacyReport
        The guarantees found, with their totals.

    Examples
    --------
    >>> from skldp.accounting import privacy_report
    >>> print(privacy_report(pipe))  # doctest: +SKIP
    """
    report = PrivacyReport()
    seen = set()

    def walk(est, path):
        if id(est) in seen:
            return
        seen.add(id(est))
        eps = getattr(est, "epsilon_", None)
        if eps is not None:
            report.spends.append(PrivacySpend(
                step=path or type(est).__name__, epsilon=float(eps),
                delta=float(getattr(est, "delta_", 0.0) or 0.0),
                protects=tuple(getattr(est, "protects_", ())),
                model=getattr(est, "privacy_model", "local")))
        for name, child in _children(est):
            walk(child, f"{path}.{name}" if path else name)

    walk(estimator, "")
    if hasattr(estimator, "cv_results_") and hasattr(estimator, "best_estimator_"):
        _account_search(estimator, report)
    return report


def _account_search(search, report):
    """Count every collection and every central-DP training a fitted search made.

    The search fitted a clone of ``search.estimator`` with each candidate's
    parameters in each fold, and once more with the best parameters (the refit).
    A local private step makes one collection per distinct identity (its class,
    its parameters other than ``random_state``, and an integer ``random_state``):
    folds and the refit of one setting reuse it. It makes a *new* collection at
    every fit when ``random_state`` is ``None`` (or a RandomState) or when a
    public value is read from the data (``feature_range``, ``classes``,
    ``domain_sizes`` left to ``None``): each fold then sees other bounds.
    Central-DP steps train one model per fit; they all compose.
    """
    candidates = list(search.cv_results_["params"])
    fits = [c for c in candidates for _ in range(search.n_splits_)]
    if hasattr(search, "best_estimator_"):
        fits.append(search.best_params_)
    best = search.best_estimator_
    collections = {}                     # identity -> epsilon of one local collection
    central_eps, central_delta, trainings = 0.0, 0.0, 0
    for n_fit, params in enumerate(fits):
        est = clone(search.estimator).set_params(**params)
        for path, eps, model, identity, delta in _planned_spends(est, best):
            if model == "central":
                trainings += 1
                central_eps += eps
                central_delta += delta
            else:
                key = identity if identity is not None else ("fit", n_fit, path)
                collections[key] = eps
    n_local = len([s for s in report.spends if s.model == "local"])
    if len(collections) > n_local:
        report.search_epsilon = float(sum(collections.values()))
        report.search_collections = len(collections)
    if trainings > 1:
        report.search_central_epsilon = float(central_eps)
        report.search_central_delta = float(central_delta)
        report.search_trainings = trainings


def _fixed_seed(random_state):
    return isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool)


def _identity(step, random_state, public_from_data):
    """Identity of the collection a fit of ``step`` makes, or None if every fit is new."""
    if not _fixed_seed(random_state) or public_from_data:
        return None
    params = {k: v for k, v in step.get_params(deep=False).items() if k != "random_state"}
    return (type(step).__qualname__, joblib_hash(params), int(random_state))


def _accounting_params(step):
    free = getattr(type(step), "_not_accounted", frozenset())
    return joblib_hash({k: v for k, v in step.get_params(deep=False).items() if k not in free})


def _planned_spends(est, best):
    """``(path, epsilon, model, identity, delta)`` of each private step of an unfitted ``est``.

    ``best`` (the search's fitted best estimator, same structure) gives what the parameters
    alone do not: the number of features a feature mechanism saw, and the
    epsilon of a central-DP step (used when the candidate's step has the same
    parameters; nan otherwise).
    """
    from ..base import LDPMechanism
    from ..mechanisms import EdgeRR, GRRFSMechanism, LabelRandomizedResponse, OneBitMechanism
    from ..mechanisms._grr import grrfs_epsilon

    fitted = best.get_params(deep=True)
    items = [("", est)] + list(est.get_params(deep=True).items())
    for path, step in items:
        if not isinstance(step, BaseEstimator):
            continue
        twin = fitted.get(path) if path else best
        if getattr(step, "privacy_model", "local") == "central":
            same = twin is not None and type(twin) is type(step) and \
                _accounting_params(twin) == _accounting_params(step)
            eps = float(getattr(twin, "epsilon_", np.nan)) if same else np.nan
            delta = float(getattr(twin, "delta_", 0.0) or 0.0) if same else \
                float(getattr(step, "delta", 0.0) or 0.0)
            yield path, eps, "central", None, delta
        elif isinstance(step, (LDPMechanism, EdgeRR)):
            d = getattr(twin, "n_features_in_", np.nan)
            eps = float(step.eps)
            from_data = False                   # EdgeRR fixes no public value from the data
            if isinstance(step, GRRFSMechanism):
                eps = grrfs_epsilon(eps, step.m, d)
                from_data = step.domain_sizes is None and step.categories is None
            elif isinstance(step, LDPMechanism):
                from_data = step.feature_range is None
                if isinstance(step, OneBitMechanism) and not step.split_eps:
                    eps *= d
            if not np.isinf(eps):
                yield path, eps, "local", _identity(step, step.random_state, from_data), 0.0
        elif isinstance(step, LabelRandomizedResponse):
            if np.isfinite(float(step.eps)):
                yield (path, float(step.eps), "local",
                       _identity(step, step.random_state, step.classes is None), 0.0)
        elif "eps_y" in step.get_params(deep=False):
            # Classifiers that build their own label randomiser (LPGNN, RGNN).
            eps_y = float(step.eps_y)
            if np.isfinite(eps_y):
                rr = LabelRandomizedResponse(eps_y, classes=step.classes)
                yield (f"{path}.labels", eps_y, "local",
                       _identity(rr, step.random_state, step.classes is None), 0.0)
