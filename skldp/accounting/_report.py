"""What a fitted estimator or pipeline spent: a per-user privacy report."""

from dataclasses import dataclass, field

import numpy as np
from sklearn.base import BaseEstimator

__all__ = ["PrivacySpend", "PrivacyReport", "privacy_report"]


@dataclass(frozen=True)
class PrivacySpend:
    """One guarantee given by one fitted step."""

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
    """

    spends: list = field(default_factory=list)
    #: For a fitted hyperparameter search: per-user epsilon summed over every distinct
    #: setting of the private steps that the search collected (None if not a search,
    #: nan if some setting's epsilon cannot be read from its parameters).
    search_epsilon: float = None
    search_collections: int = 0

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
                "Fix the mechanisms' parameters before searching to spend only one budget.")
        return "Privacy spent per user:\n" + "\n".join(lines)


def _children(est):
    steps = getattr(est, "steps", None)
    if isinstance(steps, list) and all(isinstance(s, tuple) and len(s) == 2 for s in steps):
        for name, step in steps:
            yield name, step
        return
    for key, value in sorted(vars(est).items()):
        if key.endswith("_") and not key.startswith("_") and isinstance(value, BaseEstimator):
            yield key.rstrip("_"), value


def privacy_report(estimator):
    """Collect the guarantees of every fitted private step in ``estimator``.

    Walks pipelines, meta-estimators (``best_estimator_``) and fitted
    sub-estimators (e.g. a classifier's ``label_mechanism_``); each fitted step
    with ``epsilon_`` contributes one entry.

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
    """Sum the budgets of every distinct private-step setting a search collected.

    Each candidate with different parameters for a private step is a separate
    collection (its reports differ), so its epsilon adds up for every user
    (sequential composition). Folds of one candidate reuse the same reports
    when the step's ``random_state`` is fixed (DESIGN.md §2).
    """
    candidates = search.cv_results_["params"]
    total, n_collections = 0.0, 0
    for spend in report.spends:
        if spend.model != "local" or not spend.step.startswith("best_estimator."):
            continue
        prefix = spend.step[len("best_estimator."):].replace(".", "__") + "__"
        settings = {}  # distinct settings of this step, keyed by their repr
        for c in candidates:
            own = {k: v for k, v in c.items() if k.startswith(prefix)}
            settings[repr(sorted(own.items()))] = own
        step = search.best_estimator_.get_params().get(prefix[:-2])
        step_eps = getattr(step, "eps", None)
        # random_state=None draws a new collection in every fold and in the refit.
        per_setting = search.n_splits_ + 1 if getattr(step, "random_state", 0) is None else 1
        n_collections += len(settings) * per_setting
        if len(settings) == 1:
            total += spend.epsilon * per_setting
        elif step_eps is not None and float(step_eps) == spend.epsilon:
            # The step spends its eps parameter: read each setting's epsilon from it.
            total += per_setting * sum(float(st.get(prefix + "eps", step_eps))
                                       for st in settings.values())
        else:
            total = np.nan
    if n_collections > len([s for s in report.spends if s.model == "local"]):
        report.search_epsilon, report.search_collections = total, n_collections
