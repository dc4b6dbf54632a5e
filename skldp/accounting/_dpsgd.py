"""Example-level DP-SGD accounting for batches drawn without replacement (DP-MLP).

For DP-SGD on independent examples (DP-MLP: no graph, each node affects only
its own gradient), batches of fixed size ``m`` drawn without replacement from
``N`` examples, and the *replace-one* neighbouring relation (``N`` public),
two valid Rényi-DP bounds of one step are combined here:

- the subsampled-Gaussian bound of Wang, Balle & Kasiviswanathan (2019,
  Thm. 27), computed by ``dp_accounting.rdp.RdpAccountant`` (Google's
  ``dp-accounting``, an optional dependency: ``pip install "skldp[accounting]"``).
  Tight for small sampling fractions ``q = m / N``: about epsilon = 3.6 for
  ``z = 1``, ``N = 10,000``, batches of 100, 1,000 steps, ``delta = 1e-5``;
- the joint-convexity bound ``ln(1 - q + q exp(alpha (alpha - 1) / (2 z^2))) /
  (alpha - 1)``, i.e. [Daigavane et al., arXiv 2021, Theorem 1] with ``K = 0``
  (:func:`~skldp.accounting.dpgnn_rdp`). Loose for small ``q`` (epsilon = 26
  in the example above) but tighter than the former for large ``q``: its
  leading term is ``q alpha (alpha - 1) / (2 z^2)`` against
  ``2 q^2 alpha (alpha - 1) / z^2``, so it wins when ``q`` exceeds about 1/4.

Both bound the same divergence at every order, so their pointwise minimum
does too (``bound="combined"``, the default); RDP composes additively over
the steps. The conversion to (epsilon, delta) is DP-GNN's
(:func:`~skldp.accounting.compute_epsilon`: the formula of Balle et al. 2020,
Thm. 21, which ``dp_accounting.rdp.compute_epsilon`` also uses, on the grid of
orders and then at the real orders around the best one). At a fractional
order dp-accounting bounds the subsampled-Gaussian curve by interpolating
``(alpha - 1)`` times the RDP linearly between the integers around it (Wang et
al. 2019, Cor. 10: that function is convex), a valid bound at every real
order. dp-accounting is imported only when these functions are called, so
:mod:`skldp` imports without it.

Sensitivity convention
----------------------
Under replace-one, changing one example changes one clipped gradient of norm
at most ``C`` into another, so the *sum* of clipped gradients moves by at
most ``2 C``. ``dp_accounting.GaussianDpEvent(noise_multiplier)`` takes the
noise standard deviation over that L2 sensitivity, i.e. ``sigma / (2 C)``;
this is exactly the ``noise_multiplier`` ``z`` of :mod:`skldp.accounting`
(``sigma = 2 (K + 1) C z`` with ``K = 0``), so ``z`` is passed unchanged.
"""

import math
from functools import lru_cache

import numpy as np

from ._rdp import (
    _bisect_noise_multiplier,
    _check_noise,
    _check_setting,
    _check_target,
    _compose,
    _smallest_epsilon,
    check_delta,
    dpgnn_rdp,
)

__all__ = ["dpsgd_rdp", "compute_dpsgd_epsilon", "calibrate_dpsgd_noise_multiplier"]

_INSTALL = 'pip install "skldp[accounting]"'
_BOUNDS = ("combined", "wor")


def _import_dp_accounting():
    try:
        import dp_accounting
    except ImportError as exc:
        raise ImportError(
            "The DP-SGD accountant (sampling without replacement, replace-one relation) "
            "uses Google's dp-accounting package, which is not installed. Install it with "
            f"`{_INSTALL}` (or `pip install dp-accounting`). For DPMLPClassifier you may "
            "instead pass accountant='hypergeometric' (Theorem 1 of Daigavane et al. 2021 "
            "with K = 0: "
            "no extra dependency, but a looser bound for small batch fractions).") from exc
    return dp_accounting


def dp_accounting_installed():
    """Whether dp-accounting, which the bounds of this module need, can be imported."""
    try:
        _import_dp_accounting()
    except ImportError:
        return False
    return True


def _check_bound(bound):
    if bound not in _BOUNDS:
        raise ValueError(f"bound must be one of {_BOUNDS}, got {bound!r}.")
    return bound


def _orders_key(dpa, orders):
    if orders is None:
        orders = dpa.rdp.rdp_privacy_accountant.DEFAULT_RDP_ORDERS
    orders = np.atleast_1d(np.asarray(orders, dtype=float))
    # (a 2-d array: refused as by the DP-GNN accountant, not numpy's TypeError)
    orders = tuple(float(a) for a in orders) if orders.ndim == 1 else ()
    if not orders or not all(np.isfinite(a) and a > 1 for a in orders):
        raise ValueError("Rényi orders must be finite numbers > 1.")
    return orders


@lru_cache(maxsize=4096)  # dp-accounting's exact sums take ~0.3 s per curve; fits repeat them
def _wor_rdp_one_step(z, N, m, orders):
    """dp-accounting's RDP of one subsampled-Gaussian step (replace-one, without replacement)."""
    dpa = _import_dp_accounting()
    acc = dpa.rdp.RdpAccountant(orders=list(orders),
                                neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    # Replace-one: the clipped-gradient sum has L2 sensitivity 2 C, and
    # GaussianDpEvent's multiplier is sigma / sensitivity = sigma / (2 C) = z.
    try:
        acc.compose(dpa.SampledWithoutReplacementDpEvent(N, m, dpa.GaussianDpEvent(z)))
    except (ZeroDivisionError, OverflowError, ValueError):
        if z < 1.0:   # z below ~1e-200: no usable bound
            return np.full(len(orders), np.inf)
        # above z ~ 1e9 dp-accounting fails ("math domain error", then OverflowError
        # above ~1.3e154): the RDP of the Gaussian without sampling, alpha / (2 z^2),
        # bounds the sampled one (joint convexity: the two batches differ in at most
        # one example); (1 / z)^2, as z^2 overflows, underflows to 0
        return np.asarray(orders) / 2.0 * (1.0 / z) ** 2
    rdp = np.asarray(acc.rdp, dtype=float)
    # below z ~ 3e-152 dp-accounting's sums overflow to NaN at most orders, which its
    # conversion skips (an epsilon of 0): an order without a bound has an infinite one
    return np.where(np.isnan(rdp), np.inf, rdp)


def _wor_rdp_at(z, N, m, order):
    """dp-accounting's one-step RDP at one real order, from its (cached) integer orders.

    At a fractional order dp-accounting interpolates ``(alpha - 1)`` times the RDP
    linearly between the integers around it (Wang et al. 2019, Cor. 10); doing the
    same here from the cached integer values gives the same bound, while the order
    search (~30 fractional orders near a few integers) would otherwise recompute
    the integers' exact sums at every order it tries.
    """
    if m == N or float(order).is_integer():   # (m = N: the Gaussian's alpha / (2 z^2))
        return float(_wor_rdp_one_step(z, N, m, (float(order),))[0])
    lo, hi = math.floor(order), math.ceil(order)
    t = order - lo
    cgf_lo = 0.0 if lo == 1 else (lo - 1) * float(_wor_rdp_one_step(z, N, m, (float(lo),))[0])
    cgf_hi = (hi - 1) * float(_wor_rdp_one_step(z, N, m, (float(hi),))[0])
    return ((1 - t) * cgf_lo + t * cgf_hi) / (order - 1)


def _rdp(z, N, m, T, orders, bound):
    if T == 0:
        return np.zeros(len(orders))
    if z == 0:
        return np.full(len(orders), np.inf)
    if len(orders) == 1:   # the order search: from the integer orders around it
        one = np.array([_wor_rdp_at(z, N, m, orders[0])])
    else:
        one = _wor_rdp_one_step(z, N, m, orders)
    rdp = _compose(T, one)  # RDP composes additively (Mironov 2017)
    if bound == "combined":
        rdp = np.minimum(rdp, dpgnn_rdp(z, N, m, 0, T, orders=np.asarray(orders)))
    return rdp


def _epsilon(z, N, m, T, delta, orders, bound):
    """The smallest epsilon over the real orders, from the grid ``orders`` on."""
    def rdp_of(a):
        return _rdp(z, N, m, T, tuple(float(x) for x in a), bound)
    return _smallest_epsilon(rdp_of, orders, delta)[0]


def dpsgd_rdp(noise_multiplier, n_train, batch_size, steps=1, orders=None, bound="combined"):
    """RDP of ``steps`` DP-SGD steps on fixed-size batches drawn without replacement.

    Replace-one neighbouring relation; the noise standard deviation is ``z``
    times the sensitivity ``2 C`` of the clipped sum (module docstring).

    Parameters
    ----------
    noise_multiplier : float >= 0
        ``z = sigma / (2 C)``.
    n_train : int
        Number ``N`` of examples the batches are drawn from (public).
    batch_size : int
        Batch size ``m <= N``.
    steps : int, default=1
    orders : sequence of float > 1, default=None
        Rényi orders; ``None`` uses dp-accounting's default orders.
    bound : {"combined", "wor"}, default="combined"
        ``"wor"``: dp-accounting's subsampled-Gaussian bound (Wang et al.
        2019, Thm. 27) alone; ``"combined"``: its pointwise minimum with the
        joint-convexity bound ([Daigavane et al., arXiv 2021, Theorem 1] with ``K = 0``).

    Returns
    -------
    orders : ndarray
    rdp : ndarray

    Examples
    --------
    >>> from skldp.accounting import dpsgd_rdp
    >>> orders, rdp = dpsgd_rdp(1.0, 100, 100, orders=[2.0, 4.0])  # full batch: alpha / (2 z^2)
    >>> rdp.round(6).tolist()
    [1.0, 2.0]
    """
    dpa = _import_dp_accounting()
    z = _check_noise(noise_multiplier)
    N, m, _, T = _check_setting(n_train, batch_size, 0, steps)
    orders = _orders_key(dpa, orders)
    return np.asarray(orders), _rdp(z, N, m, T, orders, _check_bound(bound))


def compute_dpsgd_epsilon(noise_multiplier, n_train, batch_size, steps, delta, orders=None,
                          bound="combined"):
    """Example-level (epsilon, delta) of DP-SGD with batches drawn without replacement.

    ``steps`` iterations, each on a batch of ``batch_size`` of the ``n_train``
    examples drawn uniformly without replacement, each adding Gaussian noise
    of standard deviation ``2 C z`` to a sum of gradients clipped to norm
    ``C``; replace-one neighbouring relation (``n_train`` is public). The RDP
    curve of :func:`dpsgd_rdp`, converted as in
    :func:`~skldp.accounting.compute_epsilon`: on the grid ``orders``, then at
    the real orders around the best one.

    Parameters
    ----------
    noise_multiplier : float >= 0, finite
        ``z = sigma / (2 C)``: the noise standard deviation over the
        replace-one sensitivity ``2 C`` of the clipped sum. ``0``: no privacy.
    n_train : int
        Number ``N`` of examples the batches are drawn from.
    batch_size : int
        Batch size ``m <= N``.
    steps : int
        Number of iterations ``T``.
    delta : float in (0, 1)
    orders : sequence of float > 1, default=None
        The grid of Rényi orders searched first; ``None`` uses dp-accounting's
        default orders.
    bound : {"combined", "wor"}, default="combined"
        See :func:`dpsgd_rdp`.

    Returns
    -------
    epsilon : float

    Raises
    ------
    ImportError
        If ``dp-accounting`` is not installed (``pip install "skldp[accounting]"``).

    References
    ----------
    .. [1] Wang, Y.-X., Balle, B., Kasiviswanathan, S., "Subsampled Rényi
       differential privacy and analytical moments accountant", AISTATS 2019,
       Theorem 27.
    .. [2] Google's ``dp-accounting`` library (``dp_accounting.rdp``).
    .. [3] Daigavane, A. et al., "Node-level differentially private graph
       neural networks", arXiv:2111.15521, 2021: Theorem 1.

    Examples
    --------
    >>> from skldp.accounting import compute_dpsgd_epsilon
    >>> round(compute_dpsgd_epsilon(1.0, 10_000, 100, 1_000, 1e-5), 2)
    3.58
    """
    dpa = _import_dp_accounting()
    z = _check_noise(noise_multiplier)
    N, m, _, T = _check_setting(n_train, batch_size, 0, steps)
    delta = check_delta(delta)
    return _epsilon(z, N, m, T, delta, _orders_key(dpa, orders), _check_bound(bound))


def calibrate_dpsgd_noise_multiplier(target_epsilon, delta, n_train, batch_size, steps,
                                     orders=None, rtol=1e-4, bound="combined"):
    """Smallest ``z`` for which :func:`compute_dpsgd_epsilon` is at most ``target_epsilon``.

    Bisection on a log scale to a relative tolerance ``rtol``; the upper end of
    the final bracket is returned, so the guarantee always holds.

    Parameters
    ----------
    target_epsilon : float > 0
        The epsilon to reach.
    delta : float in (0, 1)
        See :func:`compute_dpsgd_epsilon`.
    n_train : int
        See :func:`compute_dpsgd_epsilon`.
    batch_size : int
        See :func:`compute_dpsgd_epsilon`.
    steps : int
        See :func:`compute_dpsgd_epsilon`.
    orders : sequence of float > 1, default=None
        See :func:`compute_dpsgd_epsilon`.
    rtol : float in (0, 1), default=1e-4
        Relative tolerance of the bisection.
    bound : {"combined", "wor"}, default="combined"
        See :func:`compute_dpsgd_epsilon`.

    Returns
    -------
    noise_multiplier : float

    Raises
    ------
    ImportError
        If ``dp-accounting`` is not installed.
    PrivacyBudgetError
        If even ``z = 1e4`` does not reach the target.

    Examples
    --------
    >>> from skldp.accounting import calibrate_dpsgd_noise_multiplier, compute_dpsgd_epsilon
    >>> z = calibrate_dpsgd_noise_multiplier(4.0, 1e-5, 10_000, 100, 1_000)
    >>> bool(compute_dpsgd_epsilon(z, 10_000, 100, 1_000, 1e-5) <= 4.0)
    True
    """
    dpa = _import_dp_accounting()
    target = _check_target(target_epsilon)
    delta = check_delta(delta)
    N, m, _, T = _check_setting(n_train, batch_size, 0, steps)
    orders = _orders_key(dpa, orders)
    bound = _check_bound(bound)

    def eps_of(z, t):
        return _epsilon(z, N, m, t, delta, orders, bound)

    return _bisect_noise_multiplier(
        eps_of, target, T, rtol, setting=f"n_train={N}, batch_size={m}, delta={delta:.3g}",
        advice="a smaller batch_size, a larger delta")
