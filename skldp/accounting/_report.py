"""What a fitted estimator or pipeline spent: a per-user privacy report."""

from dataclasses import dataclass, field

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
        return "Privacy spent per user:\n" + "\n".join(lines)


def _children(est):
    steps = getattr(est, "steps", None)
    if steps is not None:
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
    return report
