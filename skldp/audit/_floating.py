"""Floating-point checks of mechanism outputs (Mironov, CCS 2012)."""

import numbers
from dataclasses import dataclass, field

import numpy as np

from ._collections import _draw_reports
from ._stats import _check_claim, _check_count, _clopper_pearson, _float_reports

__all__ = ["GridCheckResult", "check_output_grid", "additive_support_check"]

_NO_GRID = "continuous floating-point output with no fixed grid"
# A mechanism's declared decode tolerance (output_grid_'s ulps) is allowed only where it is
# under a quarter of a step, so that the nearest index k is unambiguous.
_SLACK_MAX_STEPS = 0.25


@dataclass(frozen=True)
class GridCheckResult:
    """Outcome of :func:`check_output_grid`.

    Attributes
    ----------
    passed : bool
        No output was found that only some inputs can produce.
    kind : {"grid", "finite", "continuous"}
        ``"grid"``: the mechanism declares ``output_grid_`` and every report
        was checked against it; ``"finite"``: few distinct output values, the
        supports of the inputs were compared; ``"continuous"``: many distinct
        floats and no declared grid (fails).
    fraction_off_grid : float
        Share of reported coordinates off the declared grid, or on a grid
        index that other reports decode to another float (``"grid"``; ``nan``
        otherwise).
    message : str
    n_distinct : ndarray of int
        Distinct values per output coordinate over all inputs.
    flagged : tuple
        ``"finite"``: ``(coordinate, value, input_a, input_b, count_a)`` for
        values that input ``a`` produced and ``b`` never did although an
        ``epsilon_``-LDP mechanism would have produced them for ``b`` too
        (expected count >= 10). ``"grid"``: up to 10 off-grid examples
        ``(input, coordinate, value)``.
    """

    passed: bool
    kind: str
    fraction_off_grid: float
    message: str
    n_distinct: np.ndarray = field(repr=False)
    flagged: tuple = ()


def check_output_grid(mechanism, x_values, n_samples=5_000, *, max_values=256, epsilon=None,
                      min_expected=10.0, random_state=0):
    """Check that a mechanism's floating-point outputs do not reveal its input.

    Continuous noise computed in floating point takes values that some
    inputs can produce and others cannot, so a single report can reveal the
    input. The check draws ``n_samples`` reports for each input and passes
    when the outputs lie on the mechanism's declared ``output_grid_`` (each
    grid index decoded to one float by all inputs, the float of the
    mechanism's decode where it declares one), or,
    for finite outputs, when no input produces a value that another input
    should have produced but never did; continuous outputs without a grid
    fail.

    Read more in the :ref:`User Guide <check_output_grid>`.

    Parameters
    ----------
    mechanism : estimator or callable
        An unfitted mechanism with its public bounds, as for
        :func:`~skldp.audit.audit_mechanism`.
    x_values : array-like of shape (n_inputs, n_features)
        At least two different inputs to compare (e.g. the bounds of ``feature_range``
        and points inside).
    n_samples : int, default=5000
        Reports per input.
    max_values : int, default=256
        Most distinct values per coordinate for a finite output set.
    epsilon : float >= 0 or None, default=None
        Budget used to flag missing values (``inf`` allowed: then none is
        flagged); ``None``: the fitted ``epsilon_``.
    min_expected : float > 0, default=10
        Expected count under ``b`` above which a missing value is flagged
        (finite).
    random_state : int, Generator or None, default=0
        Node ids of the simulated users.

    Returns
    -------
    result : GridCheckResult

    See Also
    --------
    skldp.audit.audit_mechanism : A lower bound on the privacy loss.

    References
    ----------
    .. [1] I. Mironov, "On Significance of the Least Significant Bits for
       Differential Privacy", ACM CCS 2012.

    Examples
    --------
    >>> from skldp.audit import check_output_grid
    >>> from skldp.mechanisms import OneBitMechanism
    >>> mech = OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)
    >>> res = check_output_grid(mech, [[0.0, 0.0], [1.0, 0.3]], n_samples=2000)
    >>> res.passed, res.kind
    (True, 'finite')
    """
    n_samples = _check_count(n_samples, "n_samples", 1)
    xs = np.asarray(x_values, dtype=np.float64)
    if xs.ndim == 1:
        xs = xs[:, None]
    if xs.ndim != 2 or len(xs) == 0:
        raise ValueError("x_values must be a 2-D array (n_inputs, n_features) of inputs.")
    if len(xs) < 2:
        raise ValueError(f"x_values needs at least 2 inputs (rows) to compare the outputs "
                         f"of, got {len(xs)}: add e.g. the other bound of feature_range.")
    if len(np.unique(xs, axis=0)) < 2:   # an input compared with itself shows no leak
        raise ValueError("x_values needs at least 2 different inputs (rows): all "
                         f"{len(xs)} are the same.")
    max_values = _check_count(max_values, "max_values", 1)
    # (a NaN would make every expected count NaN: nothing flagged, a leak passed)
    epsilon = _check_claim(epsilon, "epsilon")
    if isinstance(min_expected, (bool, np.bool_)) or not isinstance(min_expected, numbers.Real) \
            or not 0.0 < float(min_expected) < np.inf:
        raise ValueError(f"min_expected must be a finite number > 0, got {min_expected!r}.")
    rng = np.random.default_rng(random_state)
    colls, reports = _draw_reports([mechanism], list(xs), n_samples, rng)
    fitted, per_input = colls[0].fitted, reports[0]
    n_distinct = np.array([len(np.unique(np.concatenate([R[:, j] for R in per_input])))
                           for j in range(per_input[0].shape[1])])
    grid = getattr(fitted, "output_grid_", None)
    if grid is not None:
        return _check_grid(grid, per_input, n_distinct)
    if n_distinct.max() <= max_values:
        if epsilon is None:
            epsilon = colls[0].epsilon
        if epsilon is None:
            raise ValueError("pass epsilon=: the mechanism has no epsilon_.")
        return _check_finite(per_input, epsilon, float(min_expected), n_distinct)
    return GridCheckResult(False, "continuous", np.nan,
                           f"{_NO_GRID}: up to {int(n_distinct.max())} distinct values per "
                           "coordinate and no output_grid_ declared.", n_distinct)


def _grid_parts(grid, d):
    """``(offset, step, ulps, decode)`` of a declared ``output_grid_`` (``ulps`` 0 and
    ``decode`` ``offset + k * step`` if not given)."""
    msg = (f"output_grid_ must be (offset, step), (offset, step, ulps) or (offset, step, ulps, "
           f"decode): offset and step of shape ({d},) or scalars, finite, step > 0, ulps >= 0, "
           "decode callable")
    try:
        parts = tuple(grid)
        if len(parts) not in (2, 3, 4):
            raise ValueError
        offset, step, ulps = (np.asarray(g, dtype=np.float64) for g in (*parts[:3], 0.0)[:3])
    except (TypeError, ValueError):
        raise ValueError(f"{msg}; got {grid!r:.200}.") from None
    if (any(a.shape not in ((d,), ()) for a in (offset, step, ulps))
            or not np.all(np.isfinite(offset) & np.isfinite(step) & np.isfinite(ulps))
            or np.any(step <= 0) or np.any(ulps < 0)):
        raise ValueError(f"{msg}; got shapes {offset.shape}, {step.shape}, {ulps.shape}.")
    if len(parts) == 4 and not callable(parts[3]):
        raise ValueError(f"{msg}; got a decode of type {type(parts[3]).__name__}.")
    decode = parts[3] if len(parts) == 4 else (lambda k: offset + k * step)
    return offset, step, ulps, decode


def _decoded(decode, K, R):
    """``decode(K)`` checked as floats of the reports' shape."""
    ref = np.asarray(decode(K), dtype=np.float64)
    if ref.shape != R.shape:
        raise ValueError(f"output_grid_'s decode must map grid indices of shape {K.shape} to "
                         f"floats of the same shape, got shape {ref.shape}.")
    return ref


def _nearest_decode(R, offset, step, decode):
    """Grid index of each report and its decode: the nearest index, or the one next to it
    whose decode is the report (the nearest can be off by one where a step is about an ulp)."""
    K = np.rint((R - offset) / step)
    ref = _decoded(decode, K, R)
    for s in (-1.0, 1.0):
        alt = _decoded(decode, K + s, R)
        hit = (alt == R) & (ref != R)
        K, ref = np.where(hit, K + s, K), np.where(hit, alt, ref)
    return K, ref


def _check_grid(grid, per_input, n_distinct):
    d = per_input[0].shape[1]
    offset, step, ulps, decode = _grid_parts(grid, d)
    per_input = [np.ascontiguousarray(R, dtype=np.float64) for R in per_input]
    # floats compared by their bits: -0.0 is not 0.0, and a NaN fill equals itself
    bits = [R.view(np.int64) for R in per_input]
    # On the grid: decoded again from its nearest index (by the mechanism's declared decode,
    # else offset + k * step, which LaplaceMechanism and HDSMechanism compute: exact at every
    # range, even where the grid is finer than the floats), the report is the same float,
    # or within the ulps of the coordinate's largest magnitude that the mechanism declares
    # (e.g. for a fill value), where that is under a quarter of a step (so the index is
    # unambiguous). A tolerance on (R - offset) / step instead would grow with the offset.
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.maximum(np.abs(offset), np.max(
            [np.abs(np.where(np.isfinite(R), R, 0.0)).max(axis=0, initial=0.0)
             for R in per_input], axis=0))
        slack = ulps * np.spacing(scale)
        slack = np.where(slack < _SLACK_MAX_STEPS * step, slack, 0.0)
        ks, refs = zip(*(_nearest_decode(R, offset, step, decode) for R in per_input),
                       strict=True)
        dists = [np.abs(ref - R) for R, ref in zip(per_input, refs, strict=True)]
    ons = [dist <= slack for dist in dists]
    # Only a value at least a quarter step from every index can be a constant such as the
    # fill value of unsampled coordinates: one nearer is a perturbed decode of its index.
    fars = [~(dist < _SLACK_MAX_STEPS * step) for dist in dists]
    offs = [~on for on in ons]
    n_ambiguous, n_shared = 0, 0
    for j in range(d):
        # An index decoded to two floats (e.g. fl(fl(offset + m step) + n step) with m
        # from the input) leaks in the low bits, whoever produces them: its reports are off
        # the grid, never exempt.
        k_on = np.concatenate([K[on[:, j], j] for K, on in zip(ks, ons, strict=True)])
        b_on = np.concatenate([b[on[:, j], j] for b, on in zip(bits, ons, strict=True)])
        order = np.lexsort((b_on, k_on))
        k_on, b_on = k_on[order], b_on[order]
        ambiguous = np.unique(k_on[1:][(k_on[1:] == k_on[:-1]) & (b_on[1:] != b_on[:-1])])
        n_ambiguous += len(ambiguous)
        # Values far from the grid that every input produces (the same float) are
        # input-independent constants, e.g. the fill value of unsampled coordinates.
        common = None
        for b, far in zip(bits, fars, strict=True):
            vals = np.unique(b[far[:, j], j])
            common = vals if common is None else np.intersect1d(common, vals)
        n_shared += len(common)
        for K, b, on, far, off in zip(ks, bits, ons, fars, offs, strict=True):
            off[:, j] = np.where(on[:, j], np.isin(K[:, j], ambiguous),
                                 ~(far[:, j] & np.isin(b[:, j], common)))
    off_total, total, examples = 0, 0, []
    for i, (R, off) in enumerate(zip(per_input, offs, strict=True)):
        off_total += int(off.sum())
        total += off.size
        for r, j in np.argwhere(off)[: 10 - len(examples)]:
            examples.append((i, int(j), float(R[r, j])))
    frac = off_total / max(total, 1)
    note = ("" if n_shared == 0 else
            f" ({n_shared} off-grid constant(s) produced by every input, e.g. the value of "
            "unsampled coordinates, are not counted)")
    msg = ("every report lies on the declared grid" if off_total == 0 else
           f"{off_total} of {total} reported coordinates ({100 * frac:.3g}%) are off the "
           "declared grid") + note
    if n_ambiguous:
        msg += (f"; {n_ambiguous} grid index(es) decode to more than one float (their "
                "reports are counted as off the grid)")
    return GridCheckResult(off_total == 0, "grid", frac, msg, n_distinct, tuple(examples))


def _check_finite(per_input, eps, min_expected, n_distinct):
    L, d = len(per_input), per_input[0].shape[1]
    flagged = []
    for j in range(d):
        vals = [np.unique(R[:, j], return_counts=True) for R in per_input]
        for a in range(L):
            for b in range(L):
                if a == b:
                    continue
                va, ca = vals[a]
                missing = ~np.isin(va, vals[b][0])
                if not missing.any():
                    continue
                na, nb = len(per_input[a]), len(per_input[b])
                p_low = _clopper_pearson(ca[missing], na, 1e-3, "lower")
                expected = p_low * np.exp(-eps) * nb
                for v, c, e in zip(va[missing], ca[missing], np.atleast_1d(expected),
                                   strict=True):
                    if e >= min_expected:
                        flagged.append((j, float(v), a, b, int(c)))
    msg = ("the inputs' output supports agree" if not flagged else
           f"{len(flagged)} output values were produced by one input and never by another "
           "although the claimed epsilon makes them likely")
    return GridCheckResult(not flagged, "finite", np.nan, msg, n_distinct, tuple(flagged))


def _steps(z, s):
    out = z
    direction = np.inf if s > 0 else -np.inf
    for _ in range(abs(s)):
        out = np.nextafter(out, direction)
    return out


def additive_support_check(reports_0, x0, x1, *, return_mask=False):
    """Share of additive-noise reports for ``x0`` that no noise value could give for ``x1``.

    Only for mechanisms that release ``fl(x + z)``, the input plus noise
    added in float64. For one that does not (one that reports on a grid, such
    as :class:`~skldp.mechanisms.LaplaceMechanism`), a nonzero share says
    nothing: use :func:`check_output_grid`.

    A report ``r`` can be produced from ``x1`` only if some float ``z'``
    has ``fl(x1 + z') == r``. The floats of the noise are much
    denser near 0 than the sums near ``x1``, so many reports of ``x0`` cannot
    come from ``x1`` at all, whatever the noise distribution (Mironov 2012):
    each of them reveals that the input was not ``x1``. Since ``fl(x1 + .)``
    is monotone, such a ``z'`` exists if and only if one lies within two ulps
    of ``fl(r - x1)``, which is what is tested.

    Parameters
    ----------
    reports_0 : array-like or sparse matrix of shape (n,) or (n, d)
        Reports of the mechanism for the input ``x0`` (``n >= 1``).
    x0, x1 : float or array-like of shape (d,)
        The two inputs (as the mechanism saw them, after clipping).
    return_mask : bool, default=False
        Also return the per-report mask of unreachable reports.

    Returns
    -------
    fraction : float
        Share of reports with at least one coordinate that ``x1`` cannot
        produce as ``fl(x1 + z)``.
    mask : ndarray of bool of shape (n,)
        Only with ``return_mask=True``.

    Raises
    ------
    ValueError
        If some report is not of the form ``fl(x0 + z)`` for any float ``z``
        (the mechanism is not additive in float64 at ``x0``).

    References
    ----------
    I. Mironov, "On significance of the least significant bits for
    differential privacy", ACM CCS 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.audit import additive_support_check
    >>> u = np.random.default_rng(0).random(10_000) - 0.5
    >>> r = 0.0 + -np.sign(u) * np.log1p(-2 * np.abs(u))   # x0 = 0 plus Laplace(1) noise
    >>> 0.3 < additive_support_check(r, 0.0, 1.0) < 0.5
    True
    """
    R = _float_reports(reports_0, "reports_0")
    if R.ndim == 1:
        R = R[:, None]
    if R.ndim != 2:
        raise ValueError(f"reports_0 must be 1-D or 2-D, got {R.ndim} dimensions.")
    if len(R) == 0:   # a share of 0.0 would read as "no report reveals the input"
        raise ValueError("reports_0 holds no report: there is nothing to check.")
    x0, x1 = np.asarray(x0, dtype=np.float64), np.asarray(x1, dtype=np.float64)
    if any(x.ndim > 1 or x.size not in (1, R.shape[1]) for x in (x0, x1)):
        raise ValueError(f"x0 and x1 must be numbers or have one value per report coordinate "
                         f"({R.shape[1]}), got shapes {x0.shape} and {x1.shape}.")
    x0 = np.broadcast_to(x0, (R.shape[1],))
    x1 = np.broadcast_to(x1, (R.shape[1],))
    if not (np.all(np.isfinite(R)) and np.all(np.isfinite(x0)) and np.all(np.isfinite(x1))):
        raise ValueError("reports and inputs must be finite.")
    if not _reachable(R, x0).all():
        raise ValueError("some reports are not x0 + z for any float z: the mechanism does not "
                         "add noise to x0 in float64 (was x0 clipped or scaled?).")
    mask = ~_reachable(R, x1).all(axis=1)
    frac = float(mask.mean())
    return (frac, mask) if return_mask else frac


def _reachable(R, x):
    """Whether each report equals ``fl(x + z)`` for some float ``z``."""
    z = R - x
    ok = np.zeros(R.shape, dtype=bool)
    for s in range(-2, 3):
        ok |= (x + _steps(z, s)) == R
    return ok
