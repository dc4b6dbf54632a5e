"""Split one per-user budget between features and label, from public quantities."""

import math
import numbers
from dataclasses import dataclass

__all__ = ["BudgetSplit", "recommend_budget_split", "LABEL_SATURATION", "FEATURE_SNR_MIN"]

# The label report keeps this fraction of its signal before features get any budget.
LABEL_SATURATION = 0.9
# Features get budget only when the one-hop average of their reports has a variance per
# coordinate at most the square of the features' range (here 1): below it, noise dominates.
FEATURE_SNR_MIN = 1.0


@dataclass(frozen=True)
class BudgetSplit:
    """A recommended split of a per-user budget (:func:`recommend_budget_split`).

    Attributes
    ----------
    eps_features : float
        Budget of the feature report (0: collect no feature).
    eps_labels : float
        Budget of the label report.
    label_signal : float
        The fraction of the label's signal that randomized response at
        ``eps_labels`` keeps, ``(e^eps - 1) / (e^eps + c - 1)``.
    effective_labels : float
        ``n_labelled * label_signal ** 2``: the clean labels worth as much
        as the randomized ones after the noise correction.
    feature_snr : float
        ``1 / variance`` of one coordinate of the one-hop average of
        multi-bit reports at ``eps_features`` (0 when no feature is collected).
    reason : str
        Why, in words.
    """

    eps_features: float
    eps_labels: float
    label_signal: float
    effective_labels: float
    feature_snr: float
    reason: str

    @property
    def share(self):
        """The features' share of the budget."""
        return self.eps_features / (self.eps_features + self.eps_labels)


def _label_signal(eps, n_classes):
    """The non-unit eigenvalue of randomized response's matrix: (e^eps - 1)/(e^eps + c - 1)."""
    if math.isinf(eps):
        return 1.0
    e = math.exp(min(eps, 700.0))
    return (e - 1.0) / (e + n_classes - 1.0)


def _feature_snr(eps, n_features, mean_degree):
    """1 / variance of a multi-bit coordinate in [0, 1], averaged over 1 + degree users."""
    if eps <= 0:
        return 0.0
    from ..mechanisms._feature_reports import _n_sampled
    from ..mechanisms._multi_bit import _EPS_PER_DIM
    # MultiBitMechanism.variance at the range's middle (the largest): (d/m) (1/2)^2 c^2,
    # c = 1 / tanh(eps / (2 m)); from the formula, not a fit, which refuses a budget per
    # coordinate below 2^-30 or above 50 that a split may leave the features
    m = _n_sampled(None, "m", n_features, eps, _EPS_PER_DIM)
    var = (n_features / m) * 0.25 / math.tanh(eps / m / 2.0) ** 2
    return (1.0 + mean_degree) / var


def _check(value, name, *, low=0.0, integer=False, upper=None, strict=True):
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{name} must be {'an integer' if integer else 'a real number'}, "
                        f"got {value!r}.")
    value = float(value)
    if not math.isfinite(value) or (value <= low if strict else value < low) or \
            (upper is not None and value > upper):
        bound = f"> {low}" if strict else f">= {low}"
        if upper is not None:
            bound += f" and <= {upper}"
        raise ValueError(f"{name} must be finite and {bound}, got {value!r}.")
    return value


def recommend_budget_split(total_budget, *, n_nodes, n_features, n_classes, labelled_fraction,
                           mean_degree):
    """Recommend how a user's total budget should be split between its features and label.

    The rule is the one the total-budget study found: spend the whole budget
    on the label (label propagation or Correct and Smooth on the randomized
    labels) until randomized response keeps ``LABEL_SATURATION`` of the
    label's signal; give features only what is left beyond that, and only
    when the one-hop average of their multi-bit reports is informative
    (``feature_snr >= FEATURE_SNR_MIN``). The total-budget study checked it on
    Cora, CiteSeer and Facebook (budgets 1 to 8, random 50/25/25 splits and 20
    training labels per class): it was the best split, or within noise of the
    best, in 23 of the 24 cells; in the other (Facebook, 50/25/25, budget 2) a
    quarter of the budget on the features beat the label-only model chosen on
    validation, though not label propagation. Outside that range (few, dense
    features; many neighbours; budgets far above 8) the rule extrapolates from
    the mechanisms' variances, and no study has checked it there.

    Read more in the :ref:`User Guide <budget_split>`.

    Parameters
    ----------
    total_budget : float
        The budget ``B`` of each user, for everything it sends.
    n_nodes : int
        Number of users (nodes).
    n_features : int
        Number of features of a user (bounded; their public range is scaled
        to [0, 1]).
    n_classes : int
        Number of classes of the public label domain (at least 2).
    labelled_fraction : float
        Fraction of the users who send a label, in (0, 1].
    mean_degree : float
        Mean number of neighbours of a user (public or estimated privately),
        at most ``n_nodes - 1``.

    Returns
    -------
    split : BudgetSplit
        ``eps_features + eps_labels == total_budget``, each at most what its
        mechanism accepts (50 per coordinate); a budget above
        ``50 * (n_features + 1)`` is refused.

    Examples
    --------
    >>> from skldp.accounting import recommend_budget_split
    >>> s = recommend_budget_split(2.0, n_nodes=2708, n_features=1433, n_classes=7,
    ...                            labelled_fraction=0.5, mean_degree=3.9)
    >>> s.eps_features, s.eps_labels
    (0.0, 2.0)
    """
    B = _check(total_budget, "total_budget")
    n = _check(n_nodes, "n_nodes", integer=True)
    d = _check(n_features, "n_features", integer=True)
    c = _check(n_classes, "n_classes", integer=True, low=1)
    f = _check(labelled_fraction, "labelled_fraction", upper=1.0)
    deg = _check(mean_degree, "mean_degree", strict=False)
    n, d, c = int(n), int(d), int(c)
    if deg > n - 1:   # (a larger one would credit features with neighbours no graph has)
        raise ValueError(f"mean_degree = {deg:g} is above n_nodes - 1 = {n - 1}, the most "
                         "neighbours a user can have; clip an estimate to it.")
    n_labelled = n * f
    if n_labelled < 1:
        raise ValueError(f"n_nodes * labelled_fraction = {n_labelled:g}: no user sends a label.")
    # the smallest label budget that keeps LABEL_SATURATION of the signal: gap(eps) >= s
    s = LABEL_SATURATION
    eps_saturated = math.log((s * (c - 1) + 1) / (1 - s))
    eps_x = max(0.0, B - eps_saturated)
    snr = _feature_snr(eps_x, d, deg) if eps_x > 0 else 0.0
    if eps_x == 0:
        reason = (f"the label needs all of B: randomized response over {c} classes keeps "
                  f"{LABEL_SATURATION:.0%} of its signal only from eps = {eps_saturated:.2f}")
    elif snr < FEATURE_SNR_MIN:
        reason = (f"features at eps = {eps_x:.2f} are noise: their one-hop average has "
                  f"signal-to-noise {snr:.3g} < {FEATURE_SNR_MIN:g} ({d} features, mean "
                  f"degree {deg:g})")
        eps_x = 0.0
        snr = 0.0
    else:
        reason = (f"the label is saturated at eps = {eps_saturated:.2f}; the rest goes to "
                  f"features (signal-to-noise {snr:.3g})")
    # both reports must be ones their mechanisms accept: at most MAX per coordinate
    # (MultiBitMechanism samples all d features at this budget, LabelRandomizedResponse
    # has one coordinate); what one side cannot take goes to the other
    from ..mechanisms._grid import MAX_EPS_PER_COORDINATE as cap
    if B > cap * (d + 1):
        raise ValueError(
            f"total_budget = {B:g} is above {cap * (d + 1):g}, the most the feature and "
            f"label reports accept together ({cap:g} per feature and {cap:g} for the "
            "label): no split spends it. At such a budget the reports are exact in "
            "practice; use a budget of at most that, or no noise (eps=np.inf).")
    if eps_x > cap * d:
        eps_x = cap * d
        reason += (f"; features take at most {cap * d:g} ({cap:g} per feature, "
                   "MultiBitMechanism's limit), the label the rest")
    elif B - eps_x > cap:
        eps_x = B - cap
        reason += (f"; the label takes at most {cap:g} (LabelRandomizedResponse's limit), "
                   f"features the remaining {eps_x:.2f}")
    snr = _feature_snr(eps_x, d, deg) if eps_x > 0 else 0.0
    eps_y = min(B - eps_x, cap)
    gap = _label_signal(eps_y, c)
    return BudgetSplit(eps_features=float(eps_x), eps_labels=float(eps_y), label_signal=gap,
                       effective_labels=n_labelled * gap ** 2, feature_snr=float(snr),
                       reason=reason)
