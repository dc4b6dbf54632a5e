"""Empirical lower bounds on the privacy loss from samples of a mechanism's outputs.

For an output event ``E`` and two inputs ``x0``, ``x1`` of an ``eps``-LDP
mechanism, ``P(E | x0) <= e^eps P(E | x1)``. Exact one-sided Clopper-Pearson
bounds on the two probabilities, estimated from independent reports, give a
lower bound on ``eps`` that holds with a chosen confidence
(Jagielski, Ullman & Oprea, "Auditing Differentially Private Machine
Learning: How Private is Private SGD?", NeurIPS 2020; Ding et al., "Detecting
Violations of Differential Privacy", CCS 2018).
"""

import decimal
import math
import numbers
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.stats import beta
from sklearn.utils import check_random_state

from ..device._spec import significant as _sig
from ..utils._arrays import sorted_lookup

__all__ = ["AuditEvent", "AuditResult", "audit_pair", "clopper_pearson"]

_EVENTS = ("auto", "values", "cells")


# ------------------------------------------------------------------------- statistics
def clopper_pearson(k, n, alpha, side):
    """Exact one-sided Clopper-Pearson bound on a binomial proportion.

    Parameters
    ----------
    k, n : int or array-like of int
        Successes and trials (``0 <= k <= n``, ``n >= 1``).
    alpha : float
        The bound fails with probability at most ``alpha``.
    side : {"lower", "upper"}

    Returns
    -------
    bound : float or ndarray
        ``lower``: ``Beta(alpha; k, n - k + 1)`` (0 when ``k = 0``);
        ``upper``: ``Beta(1 - alpha; k + 1, n - k)`` (1 when ``k = n``).

    References
    ----------
    C. J. Clopper, E. S. Pearson, "The use of confidence or fiducial limits
    illustrated in the case of the binomial", Biometrika 1934.

    Examples
    --------
    >>> from skldp.audit import clopper_pearson
    >>> round(float(clopper_pearson(0, 100, 0.05, "upper")), 4)   # the "rule of three"
    0.0295
    """
    if side not in ("lower", "upper"):
        raise ValueError(f"side must be 'lower' or 'upper', got {side!r}.")
    k, n = _as_counts(k, "k"), _as_counts(n, "n")
    if np.any(n < 1) or np.any(k > n):
        raise ValueError(f"need n >= 1 trials and 0 <= k <= n successes, got k={k.tolist()}, "
                         f"n={n.tolist()}.")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) \
            or not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be a number in (0, 1) (1 - the confidence), got "
                         f"{alpha!r}.")
    return _clopper_pearson(k, n, alpha, side)


def _as_counts(v, name):
    """``v`` as a float array of counts (integers >= 0), or a ``ValueError``."""
    a = np.asarray(v)
    if a.dtype == bool or a.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be integer counts, got {v!r}.")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)) or np.any(a < 0) or np.any(a != np.floor(a)):
        raise ValueError(f"{name} must be integer counts >= 0, got {a.tolist()}.")
    return a


def _clopper_pearson(k, n, alpha, side):
    """:func:`clopper_pearson` without its checks (the audit's own counts)."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if side == "lower":
        out = beta.ppf(alpha, np.maximum(k, 1), np.maximum(n - k + 1, 1))
        out = np.where(k > 0, out, 0.0)
    elif side == "upper":
        out = beta.ppf(1.0 - alpha, k + 1, np.maximum(n - k, 1))
        out = np.where(k < n, out, 1.0)
    else:
        raise ValueError(f"side must be 'lower' or 'upper', got {side!r}.")
    return out[()] if out.ndim == 0 else out


def _log_ratio_bound(k_num, n_num, k_den, n_den, alpha):
    """``ln(CP_lower(k_num / n_num) / CP_upper(k_den / n_den))`` at level ``alpha`` each."""
    lo = _clopper_pearson(k_num, n_num, alpha, "lower")
    hi = _clopper_pearson(k_den, n_den, alpha, "upper")
    with np.errstate(divide="ignore"):
        return np.log(lo) - np.log(hi)


def _log_point(k_num, n_num, k_den, n_den):
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.log(k_num / n_num) - np.log(k_den / n_den)) if k_num else -np.inf


# ------------------------------------------------------------------------------ results
@dataclass(frozen=True)
class AuditEvent:
    """The output event that gave an audit's bound.

    Attributes
    ----------
    direction : tuple of int
        ``(0, 1)``: the bound is on ``ln P(E | x0) / P(E | x1)``; ``(1, 0)``
        the reverse.
    members : tuple
        The event is the union of these output cells. A cell is a tuple with
        one entry per output coordinate: a number (that exact value) or a
        pair ``(lo, hi)`` (the half-open interval ``[lo, hi)``), or the string
        ``"other"`` for values not seen when the event was chosen. Cells of a
        score (the sum of per-coordinate log likelihood ratios, used for
        joint outputs of several coordinates) are ``("score", value)`` or
        ``("score", (lo, hi))``.
    """

    direction: tuple
    members: tuple

    def __str__(self):
        head = "P(E|x0)/P(E|x1)" if self.direction == (0, 1) else "P(E|x1)/P(E|x0)"
        shown = ", ".join(_fmt_cell(c) for c in self.members[:4])
        more = f", ... ({len(self.members)} cells)" if len(self.members) > 4 else ""
        return f"{head}, E = {{{shown}{more}}}"


def _fmt_cell(cell):
    parts = []
    for c in cell:
        if isinstance(c, tuple) and len(c) == 2:
            parts.append(f"[{_fmt_float(c[0], 4)}, {_fmt_float(c[1], 4)})")
        elif isinstance(c, (float, np.floating)):
            parts.append(_fmt_float(c, 6))
        else:
            parts.append(str(c))
    return "(" + ", ".join(parts) + ")"


def _fmt_float(x, digits):
    """``x`` to ``digits`` significant digits, or all of them where that would print a
    float a few ulps away (0.1 for the next float up: a leak in the low bits must show)."""
    text = f"{x:.{digits}g}"
    near = float(text) != x and abs(float(text) - x) <= 1e-12 * abs(x)
    return repr(float(x)) if near else text


@dataclass(frozen=True)
class AuditResult:
    """Outcome of an audit: a lower bound on the privacy loss and how it was found.

    Attributes
    ----------
    epsilon_lower : float
        With probability at least ``confidence`` (over the reports and the
        audit's own randomness), the mechanism is *not* ``eps``-LDP for any
        ``eps < epsilon_lower``. ``0.0`` when no event separates the inputs;
        ``inf`` is impossible with finitely many reports.
    epsilon_point : float
        The empirical log ratio of the bounding event, ``ln(p_num / p_den)``
        on the reports the bound was computed from: ``inf`` when the event
        was never seen for the denominator input, ``-inf`` when the event was
        never seen for the numerator input (then ``epsilon_lower`` is 0; an
        event chosen on the selection split can be absent from the
        evaluation split), ``0.0`` when there is no event. Not a bound.
    event : AuditEvent or None
        The event that gave ``epsilon_lower``.
    n : tuple of int
        Number of reports for ``x0`` and ``x1``.
    confidence : float
        Confidence of ``epsilon_lower`` (family-wise over every event tried
        and every output audited).
    method : str
        ``"values"`` (each output value of the selection split an event),
        ``"cells"`` (unions of cells chosen on the selection split) or
        ``"max"`` (several audits, the largest bound).
    counts : tuple of int
        ``(k_num, n_num, k_den, n_den)``: occurrences of the event among the
        reports of the numerator and the denominator input that the bound was
        computed from.
    output : str
        Which output was audited (``"reports"`` for :func:`audit_pair`).
    epsilon_claimed : float or None
        The budget the mechanism(s) claim (sum of ``epsilon_``); ``None`` when
        unknown (then ``exceeds_claim`` raises an error).
    components : tuple of AuditResult
        Per-output audits whose maximum this result is (:func:`audit_collections`).
    """

    epsilon_lower: float
    epsilon_point: float
    event: AuditEvent | None
    n: tuple
    confidence: float
    method: str
    counts: tuple = ()
    output: str = "reports"
    epsilon_claimed: float | None = None
    components: tuple = field(default=(), repr=False)

    def __post_init__(self):
        object.__setattr__(self, "epsilon_claimed", _check_claim(self.epsilon_claimed))
        object.__setattr__(self, "confidence", _check_confidence(self.confidence))

    @property
    def exceeds_claim(self):
        """True when the lower bound is above the claimed budget: the claim is false.

        Raises ``ValueError`` when there is no claim to compare with.
        """
        if self.epsilon_claimed is None:
            raise ValueError("this audit has no claimed epsilon to compare with (a mechanism "
                             "without epsilon_, or audit_pair): give every mechanism its "
                             "epsilon_, or pass epsilon_claimed= to audit_collections.")
        return self.epsilon_lower > self.epsilon_claimed

    def summary(self):
        """A few lines describing the bound, the claim and the bounding output and event.

        The bound and the confidence are printed rounded down and the claim
        rounded up, with more digits where needed to show a violation.
        """
        digits, claim = 4, ""
        percent = float(100 * decimal.Decimal(repr(self.confidence)))   # (0.29 * 100 < 29)
        if self.epsilon_claimed is not None:
            while (self.exceeds_claim and digits < 17
                   and float(_sig(self.epsilon_lower, digits, up=False, exact=True))
                   <= float(_sig(self.epsilon_claimed, digits, up=True, exact=True))):
                digits += 1
            claim = (f" (claimed {_sig(self.epsilon_claimed, digits, up=True, exact=True)}"
                     f"{', VIOLATED' if self.exceeds_claim else ''})")
        lines = [f"epsilon >= {_sig(self.epsilon_lower, digits, up=False, exact=True)} at "
                 f"{_sig(percent, 4, up=False, exact=True)}% "
                 f"confidence{claim}; point estimate {self.epsilon_point:.4g}; "
                 f"n = {self.n[0]} + {self.n[1]} reports"]
        best = self
        if self.components:
            best = max(self.components, key=lambda r: r.epsilon_lower)
            lines.append(f"  from output {best.output!r} ({best.method})")
        if best.event is not None:
            lines.append(f"  event: {best.event}; counts {best.counts}")
        return "\n".join(lines)


# ------------------------------------------------------------------------- input checks
def _float_reports(R, name):
    """Reports as float64, refusing a cast that would lose what they say."""
    R = R.toarray() if sp.issparse(R) else np.asarray(R)
    if R.dtype == object or not (np.issubdtype(R.dtype, np.number) or R.dtype == bool):
        raise TypeError(f"{name} must be numeric (encode labels as integers first), got "
                        f"dtype {R.dtype}.")
    if np.iscomplexobj(R):
        raise ValueError(f"{name} are complex: the audit reads real numbers. Pass the real "
                         "and imaginary parts as two columns.")
    if _merge_as_float64(R):
        raise ValueError(f"{name} ({R.dtype}) hold distinct values that are equal as "
                         f"float64 {_MERGE_ADVICE}")
    return R.astype(np.float64)


_MERGE_ADVICE = ("(integers above 2^53?): encode them as small codes (e.g. "
                 "np.unique(..., return_inverse=True)) first.")


def _merge_as_float64(*arrays):
    """Whether distinct values of ``arrays``, taken together, are equal as float64."""
    # 64-bit integers above 2^53 (or long doubles) can merge when cast: a leak in the low bits
    if not any(a.dtype.itemsize > 8 or (a.dtype.kind in "iu" and a.dtype.itemsize == 8)
               for a in arrays):
        return False
    flat = [(a.toarray() if sp.issparse(a) else a).ravel() for a in arrays]
    if all(a.dtype == flat[0].dtype for a in flat):
        raw = np.concatenate(flat)
    else:   # as Python numbers, compared exactly (a common numpy dtype may be float64)
        raw = np.concatenate([a.astype(object) for a in flat])
    return len(np.unique(raw)) != len(np.unique(raw.astype(np.float64)))


def _as_reports(R, name):
    R = _float_reports(R, name)
    if R.ndim == 1:
        R = R[:, None]
    if R.ndim != 2:
        raise ValueError(f"{name} must be 1-D (one output per report) or 2-D (n_reports, "
                         f"n_outputs), got {R.ndim} dimensions.")
    if len(R) < 2:
        raise ValueError(f"{name} needs at least 2 reports, got {len(R)}.")
    if R.shape[1] == 0:   # no output: the bound would be 0 whatever was meant
        raise ValueError(f"{name} must have at least one output per report, got shape "
                         f"{R.shape}.")
    if not np.all(np.isfinite(R)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return R


def _check_claim(eps, name="epsilon_claimed"):
    """``eps`` as a float >= 0 (inf allowed), or None; a clear error for anything else."""
    if eps is None:
        return None
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, numbers.Real) \
            or not float(eps) >= 0.0:
        raise ValueError(f"{name} must be a number >= 0 (inf allowed), got {eps!r}.")
    return float(eps)


def _check_count(n, name, minimum):
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {n!r}.")
    return int(n)


def _check_confidence(confidence):
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.floating)) \
            or not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}.")
    return float(confidence)


# ------------------------------------------------------------------------ discretisation
class _Coder:
    """Map one output coordinate to integer codes, fitted on the selection split.

    Values that are frequent (atoms, e.g. the ``0`` of an unsampled coordinate)
    get their own code; with at most ``max_codes`` distinct values every value
    does. The rest is cut into quantile bins. Codes:
    ``0..len(atoms)-1`` atoms, then bins ``[edges[i-1], edges[i])``; a pure
    discrete coordinate has one extra code for unseen values.
    """

    def __init__(self, values, max_codes, atom_fraction=0.01):
        uniq, counts = np.unique(values, return_counts=True)
        if len(uniq) <= max_codes:
            self.atoms, self.edges = uniq, None
        else:
            big = counts >= max(5, atom_fraction * len(values))
            order = np.argsort(-counts[big], kind="stable")[: max(0, max_codes // 2)]
            self.atoms = np.sort(uniq[big][order])
            rest = values[~sorted_lookup(self.atoms, values)[1]]
            n_bins = max(2, max_codes - len(self.atoms))
            qs = np.linspace(0.0, 1.0, n_bins + 1)[1:-1]
            self.edges = (np.unique(np.quantile(rest, qs)) if len(rest)
                          else np.zeros(0, dtype=np.float64))
        self.n_codes = len(self.atoms) + (1 if self.edges is None else len(self.edges) + 1)

    def transform(self, v):
        A = len(self.atoms)
        pos, is_atom = sorted_lookup(self.atoms, v)
        if self.edges is None:
            rest = np.full(len(v), A, dtype=np.int64)
        else:
            rest = A + np.searchsorted(self.edges, v, side="right")
        return np.where(is_atom, pos, rest).astype(np.int64)

    def describe(self, code):
        A = len(self.atoms)
        if code < A:
            return float(self.atoms[code])
        if self.edges is None:
            return "other"
        i = code - A
        lo = -np.inf if i == 0 else float(self.edges[i - 1])
        hi = np.inf if i == len(self.edges) else float(self.edges[i])
        return (lo, hi)


def _unique_rows(M):
    """``np.unique(M, axis=0, return_inverse=True)``, fast for few columns."""
    cols = [np.unique(M[:, j], return_inverse=True) for j in range(M.shape[1])]
    sizes = [len(u) for u, _ in cols]
    if np.prod(np.asarray(sizes, dtype=np.float64)) >= 2.0**62:
        uniq, inv = np.unique(M, axis=0, return_inverse=True)
        return uniq, inv.ravel()
    code = np.zeros(len(M), dtype=np.int64)
    for (_, inv), size in zip(cols, sizes, strict=True):
        code = code * size + inv.ravel()
    _, first, inv = np.unique(code, return_index=True, return_inverse=True)
    return M[first], inv.ravel()


def _code_budgets(n_distinct, max_cells):
    """Codes per coordinate so that their product stays near ``max_cells``.

    Coordinates with few values get all of them (plus one for unseen values),
    the budget left is shared evenly by the others. ``None`` when even two
    codes per remaining coordinate would exceed the budget.
    """
    k = len(n_distinct)
    budgets = [0] * k
    remaining = float(max_cells)
    order = np.argsort(n_distinct, kind="stable")
    for rank, j in enumerate(order):
        left = k - rank
        share = int(math.floor(remaining ** (1.0 / left) + 1e-9))
        need = int(n_distinct[j]) + 1
        if need <= share:
            budgets[j] = need
        elif share >= 2:
            budgets[j] = share
        else:
            return None
        remaining /= budgets[j]
    return budgets


# ---------------------------------------------------------------------------- the audit
def audit_pair(reports_0, reports_1, *, events="auto", confidence=0.95, max_values=64,
               max_cells=None, selection_fraction=0.5, random_state=0):
    r"""Lower bound on the privacy loss of a mechanism from its outputs on two inputs.

    ``reports_0`` and ``reports_1`` are independent outputs of one mechanism
    for two fixed inputs ``x0`` and ``x1``. For an output event ``E``, an
    ``eps``-LDP mechanism has ``P(E | x0) <= e^eps P(E | x1)`` and the reverse,
    so with exact one-sided Clopper-Pearson bounds

    .. math:: \epsilon \ge \ln \frac{\mathrm{CP}_{lower}(\hat P(E \mid x_0))}
                                    {\mathrm{CP}_{upper}(\hat P(E \mid x_1))}

    holds with the chosen confidence. The bound is maximised over a family of
    output events in both directions, with a Bonferroni correction, so the
    maximum is a valid lower bound at ``confidence``. The family is chosen on
    a random selection part of the reports and the bounds are computed on
    the rest, so that the number of events corrected for is fixed before
    the reports bounded are read.

    Read more in the :ref:`User Guide <audit_pair>`.

    Parameters
    ----------
    reports_0, reports_1 : array-like or sparse matrix of shape (n0,) or (n0, k), (n1,) or (n1, k)
        Real numeric outputs for ``x0`` and ``x1`` (same ``k``); one row per
        independent report. Complex reports, and integers that float64 cannot
        tell apart (above 2^53), are refused. Post-processing (e.g. a function of the reports)
        can only lower the true privacy loss, so any bound on it is a bound
        on the mechanism.
    events : {"auto", "values", "cells"}, default="auto"
        The events tried: every distinct output of the selection part
        (``"values"``), or unions of cells chosen on it (``"cells"``), each
        bounded on the other part; ``"auto"``: ``"values"`` up to
        ``max_values`` distinct outputs in the selection part.
    confidence : float, default=0.95
        Probability that the bound holds, in (0, 1).
    max_values : int >= 1, default=64
        ``"auto"`` audits with ``"values"`` up to this many distinct outputs
        (in the selection part).
    max_cells : int >= 2 or None, default=None
        Most cells of ``"cells"``; ``None``: ``min(1024, n_selection // 8)``
        (at least 16) so that cells hold a few reports each.
    selection_fraction : float, default=0.5
        Share of the reports used to choose the events (and, for
        ``"auto"``, the method); the bound is computed on the others.
    random_state : int, RandomState, Generator or None, default=0
        The audit's own randomness (the split).

    Returns
    -------
    result : AuditResult

    See Also
    --------
    skldp.audit.audit_mechanism : Draws the reports of a scikit-learn style mechanism.

    References
    ----------
    .. [1] M. Jagielski, J. Ullman and A. Oprea, "Auditing Differentially
       Private Machine Learning: How Private is Private SGD?", NeurIPS 2020.
    .. [2] Z. Ding, Y. Wang, G. Wang, D. Zhang and D. Kifer, "Detecting
       Violations of Differential Privacy", CCS 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.audit import audit_pair
    >>> rng = np.random.default_rng(0)
    >>> p = np.exp(1) / (1 + np.exp(1))            # randomized response, eps = 1
    >>> r0 = rng.random(50_000) < p                  # reports for the bit 1
    >>> r1 = rng.random(50_000) >= p                 # reports for the bit 0
    >>> res = audit_pair(r0, r1)
    >>> 0.9 < res.epsilon_lower < 1.0
    True
    """
    if events not in _EVENTS:
        raise ValueError(f"events must be one of {_EVENTS}, got {events!r}.")
    confidence = _check_confidence(confidence)
    A = _as_reports(reports_0, "reports_0")
    B = _as_reports(reports_1, "reports_1")
    # 2^53 for x0 and 2^53 + 1 for x1 merge only across the two: that would hide the leak
    if _merge_as_float64(*(R if sp.issparse(R) else np.asarray(R)
                           for R in (reports_0, reports_1))):
        raise ValueError("reports_0 and reports_1 hold distinct values that are equal as "
                         f"float64 {_MERGE_ADVICE}")
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"reports_0 and reports_1 must have the same number of outputs, got "
                         f"{A.shape[1]} and {B.shape[1]}.")
    if isinstance(selection_fraction, bool) or not isinstance(selection_fraction, numbers.Real) \
            or not 0.0 < selection_fraction < 1.0:
        raise ValueError(f"selection_fraction must be a number in (0, 1), got "
                         f"{selection_fraction!r}.")
    max_values = _check_count(max_values, "max_values", 1)
    if max_cells is not None:   # one cell is the whole output space: it compares nothing
        max_cells = _check_count(max_cells, "max_cells (or None)", 2)
    alpha = 1.0 - confidence
    rng = (check_random_state(random_state) if not isinstance(random_state, np.random.Generator)
           else random_state)
    # one split for every method: the events (and the method, for "auto") are chosen on
    # the selection part, so the bounds on the evaluation part hold at the stated level
    splits = (*_split(len(A), selection_fraction, rng), *_split(len(B), selection_fraction, rng))
    if events == "auto":
        n_rows = len(_unique_rows(np.concatenate([A[splits[0]], B[splits[2]]]))[0])
        events = "values" if n_rows <= max_values else "cells"
    if events == "values":
        return _audit_values(A, B, splits, alpha, confidence)
    return _audit_cells(A, B, splits, alpha, confidence, max_cells)


def _audit_values(A, B, splits, alpha, confidence):
    s0, e0, s1, e1 = splits
    # the family is the outputs seen in the selection part, fixed before the evaluation
    # part is read: a Bonferroni count taken from the evaluated reports themselves would
    # be data dependent
    family = _unique_rows(np.concatenate([A[s0], B[s1]]))[0]
    K = len(family)
    ne0, ne1 = len(e0), len(e1)
    rows, inv = _unique_rows(np.concatenate([family, A[e0], B[e1]]))
    member = np.full(len(rows), K)           # K: an output outside the family
    member[inv[:K]] = np.arange(K)
    codes = member[inv[K:]]
    c0 = np.bincount(codes[:ne0], minlength=K + 1)[:K]
    c1 = np.bincount(codes[ne0:], minlength=K + 1)[:K]
    a = alpha / (4 * K)
    best = None
    for direction, (cn, nn, cd, nd) in (((0, 1), (c0, ne0, c1, ne1)),
                                        ((1, 0), (c1, ne1, c0, ne0))):
        bounds = _log_ratio_bound(cn, nn, cd, nd, a)
        j = int(np.argmax(bounds))
        if best is None or bounds[j] > best[0]:
            best = (float(bounds[j]), direction, j, (int(cn[j]), nn, int(cd[j]), nd))
    bound, direction, j, counts = best
    event = AuditEvent(direction, (tuple(float(v) for v in family[j]),))
    return AuditResult(max(0.0, bound), _log_point(*counts), event, (len(A), len(B)),
                       confidence, "values", counts)


def _split(n, frac, rng):
    perm = rng.permutation(n)
    n_sel = min(n - 1, max(1, int(round(frac * n))))
    return perm[:n_sel], perm[n_sel:]


class _CellEncoder:
    """Joint codes of the coordinates (one code per coordinate) fitted on the selection split."""

    def __init__(self, sel, budgets):
        self.coders = [_Coder(sel[:, j], b) for j, b in enumerate(budgets)]

    def encode(self, R):
        return np.stack([cd.transform(R[:, j]) for j, cd in enumerate(self.coders)], axis=1)

    def describe(self, codes):
        return tuple(self.coders[j].describe(int(c)) for j, c in enumerate(codes))


class _ScoreEncoder:
    """Bins of a score: the sum over coordinates of log likelihood ratios of their codes.

    The ratios are estimated on the selection split (naive Bayes); the score is
    one number per report, so it scales to many coordinates.
    """

    def __init__(self, sel, ns0, n_bins, per_coordinate=32):
        k = sel.shape[1]
        self.coders = [_Coder(sel[:, j], per_coordinate) for j in range(k)]
        self.llr = []
        for j, cd in enumerate(self.coders):
            cs = cd.transform(sel[:, j])
            a0 = np.bincount(cs[:ns0], minlength=cd.n_codes) + 0.5
            a1 = np.bincount(cs[ns0:], minlength=cd.n_codes) + 0.5
            self.llr.append(np.log(a0 / a0.sum()) - np.log(a1 / a1.sum()))
        self.bins = _Coder(self._score(sel), n_bins, atom_fraction=1.1)

    def _score(self, R):
        return sum(self.llr[j][cd.transform(R[:, j])] for j, cd in enumerate(self.coders))

    def encode(self, R):
        return self.bins.transform(self._score(R))[:, None]

    def describe(self, codes):
        return ("score", self.bins.describe(int(codes[0])))


def _audit_cells(A, B, splits, alpha, confidence, max_cells):
    n0, n1 = len(A), len(B)
    s0, e0, s1, e1 = splits
    ns0, ns1, ne0, ne1 = len(s0), len(s1), len(e0), len(e1)
    sel = np.concatenate([A[s0], B[s1]])
    ev0, ev1 = A[e0], B[e1]
    if max_cells is None:
        max_cells = int(min(1024, max(16, min(ns0, ns1) // 8)))
    k = A.shape[1]
    # Candidate encodings: joint cells (fine and coarse) and, for several coordinates, a
    # score. Each proposes one event per direction, chosen on the selection split; the
    # encoding whose event is best on the selection split is kept. The evaluation split
    # is used once per direction, so the choice does not bias the bound.
    n_distinct = np.array([len(np.unique(sel[:, j])) for j in range(k)])
    encoders = []
    for cells in sorted({max_cells, max(16, max_cells // 16)}, reverse=True):
        budgets = _code_budgets(n_distinct, cells)
        if budgets is not None:
            encoders.append(_CellEncoder(sel, budgets))
    if k > 1:
        encoders.append(_ScoreEncoder(sel, ns0, max_cells))
    a = alpha / 4.0  # one event per direction, two bounds per event
    proposals = {(0, 1): None, (1, 0): None}
    for enc in encoders:
        cells, inv = _unique_rows(np.concatenate([enc.encode(sel), enc.encode(ev0),
                                                  enc.encode(ev1)]))
        K = len(cells)
        cut = np.cumsum([ns0, ns1, ne0])
        cs0 = np.bincount(inv[:cut[0]], minlength=K)
        cs1 = np.bincount(inv[cut[0]:cut[1]], minlength=K)
        ce0 = np.bincount(inv[cut[1]:cut[2]], minlength=K)
        ce1 = np.bincount(inv[cut[2]:], minlength=K)
        # cross-fitting inside the selection split: cells are ranked on one half (r) and
        # the size of the event (and the encoding) is chosen on the other half (c)
        half0, half1 = np.arange(ns0) % 2 == 0, np.arange(ns1) % 2 == 0
        is0 = inv[:cut[0]]
        is1 = inv[cut[0]:cut[1]]
        r0 = np.bincount(is0[half0], minlength=K)
        r1 = np.bincount(is1[half1], minlength=K)
        c0 = cs0 - r0
        c1 = cs1 - r1
        nr0, nr1 = int(half0.sum()), int(half1.sum())
        nc0, nc1 = ns0 - nr0, ns1 - nr1
        for direction, (rn, nrn, rd, nrd, sn, nsn, sd, nsd, en, ed) in (
                ((0, 1), (r0, nr0, r1, nr1, c0, nc0, c1, nc1, ce0, ce1)),
                ((1, 0), (r1, nr1, r0, nr0, c1, nc1, c0, nc0, ce1, ce0))):
            cand = np.flatnonzero(rn + rd > 0)
            if len(cand) == 0 or nsn == 0 or nsd == 0:
                continue
            ratio = ((rn[cand] + 0.5) / nrn) / ((rd[cand] + 0.5) / nrd)
            order = cand[np.lexsort((-rn[cand], -ratio))]
            sel_bounds = _log_ratio_bound(np.cumsum(sn[order]), nsn, np.cumsum(sd[order]),
                                          nsd, a)
            top = int(np.argmax(sel_bounds))
            prev = proposals[direction]
            if prev is None or sel_bounds[top] > prev[0]:
                chosen = order[:top + 1]
                members = tuple(enc.describe(cells[c]) for c in chosen)
                proposals[direction] = (float(sel_bounds[top]), int(en[chosen].sum()),
                                        int(ed[chosen].sum()), members)
    best = None
    for direction, prop in proposals.items():
        if prop is None:
            continue
        nen, ned = (ne0, ne1) if direction == (0, 1) else (ne1, ne0)
        counts = (prop[1], nen, prop[2], ned)
        bound = float(_log_ratio_bound(*counts, a))
        if best is None or bound > best[0]:
            best = (bound, AuditEvent(direction, prop[3]), counts)
    if best is None:
        return AuditResult(0.0, 0.0, None, (n0, n1), confidence, "cells", ())
    bound, event, counts = best
    return AuditResult(max(0.0, bound), _log_point(*counts), event, (n0, n1), confidence,
                       "cells", counts)
