"""Standard example-level DP-SGD accounting, by Google's ``dp-accounting`` library.

For DP-SGD on independent examples (DP-MLP: no graph, each node affects only
its own gradient) the hypergeometric bound of Theorem 1 of paper 004 is very
loose: with ``K = 0`` it bounds the subsampled Gaussian by
``ln(1 - q + q exp(alpha (alpha - 1) / (2 z^2))) / (alpha - 1)`` (about
epsilon = 26 for ``z = 1``, ``N = 10,000``, batches of 100, 1,000 steps,
``delta = 1e-5``). The standard accountant for batches of fixed size drawn
without replacement, under the *replace-one* neighbouring relation (``N``
public), is the subsampled-Gaussian RDP bound of Wang, Balle & Kasiviswanathan
(2019, Thm. 27), which gives about 3.6 for the same setting. It is computed
here by ``dp_accounting.rdp.RdpAccountant`` (PyPI ``dp-accounting``), an
optional dependency: ``pip install "skldp[accounting]"``. It is imported only
when these functions are called, so :mod:`skldp` imports without it.

Sensitivity convention
----------------------
Under replace-one, changing one example changes one clipped gradient of norm
at most ``C`` into another, so the *sum* of clipped gradients moves by at
most ``2 C``. ``dp_accounting.GaussianDpEvent(noise_multiplier)`` takes the
noise standard deviation over that L2 sensitivity, i.e. ``sigma / (2 C)``;
this is exactly the ``noise_multiplier`` ``z`` of :mod:`skldp.accounting`
(``sigma = 2 (K + 1) C z`` with ``K = 0``), so ``z`` is passed unchanged.
"""

from functools import lru_cache

import numpy as np

from ._rdp import (
    _bisect_noise_multiplier,
    _check_noise,
    _check_setting,
    _check_target,
    check_delta,
)

__all__ = ["compute_dpsgd_epsilon", "calibrate_dpsgd_noise_multiplier"]

_INSTALL = 'pip install "skldp[accounting]"'


def _import_dp_accounting():
    try:
        import dp_accounting
    except ImportError as exc:
        raise ImportError(
            "The DP-SGD accountant (sampling without replacement, replace-one relation) "
            "uses Google's dp-accounting package, which is not installed. Install it with "
            f"`{_INSTALL}` (or `pip install dp-accounting`). For DPMLPClassifier you may "
            "instead pass accountant='hypergeometric' (paper 004's Theorem 1 with K = 0: "
            "no extra dependency, but a much looser bound, hence more noise).") from exc
    return dp_accounting


def _dpsgd_event(dpa, z, N, m, T):
    # Replace-one: the clipped-gradient sum has L2 sensitivity 2 C, and
    # GaussianDpEvent's multiplier is sigma / sensitivity = sigma / (2 C) = z.
    return dpa.SelfComposedDpEvent(
        dpa.SampledWithoutReplacementDpEvent(N, m, dpa.GaussianDpEvent(z)), T)


def _epsilon(dpa, z, N, m, T, delta, orders):
    orders = None if orders is None else tuple(float(a) for a in np.atleast_1d(orders))
    return _epsilon_cached(dpa, z, N, m, T, delta, orders)


@lru_cache(maxsize=4096)  # dp-accounting's exact sums take ~0.5 s per curve; fits repeat them
def _epsilon_cached(dpa, z, N, m, T, delta, orders):
    if T == 0:
        return 0.0
    if z == 0:
        return float("inf")
    acc = dpa.rdp.RdpAccountant(orders=None if orders is None else list(orders),
                                neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    acc.compose(_dpsgd_event(dpa, z, N, m, T))
    eps = float(acc.get_epsilon(delta))
    return eps if np.isfinite(eps) else float("inf")


def compute_dpsgd_epsilon(noise_multiplier, n_train, batch_size, steps, delta, orders=None):
    """Example-level (epsilon, delta) of DP-SGD with batches drawn without replacement.

    ``steps`` iterations, each on a batch of ``batch_size`` of the ``n_train``
    examples drawn uniformly without replacement, each adding Gaussian noise
    of standard deviation ``2 C z`` to a sum of gradients clipped to norm
    ``C``; replace-one neighbouring relation (``n_train`` is public). RDP of
    the subsampled Gaussian (Wang, Balle & Kasiviswanathan 2019, Thm. 27),
    composition over the steps and conversion to (epsilon, delta) are those
    of ``dp_accounting.rdp.RdpAccountant``.

    Parameters
    ----------
    noise_multiplier : float >= 0
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
        Rényi orders; ``None`` uses dp-accounting's default orders.

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
    return _epsilon(dpa, z, N, m, T, delta, orders)


def calibrate_dpsgd_noise_multiplier(target_epsilon, delta, n_train, batch_size, steps,
                                     orders=None, rtol=1e-4):
    """Smallest ``z`` for which :func:`compute_dpsgd_epsilon` is at most ``target_epsilon``.

    Bisection on a log scale to a relative tolerance ``rtol``; the upper end of
    the final bracket is returned, so the guarantee always holds.

    Parameters
    ----------
    target_epsilon : float > 0
    delta, n_train, batch_size, steps, orders
        See :func:`compute_dpsgd_epsilon`.
    rtol : float, default=1e-4

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

    def eps_of(z, t):
        return _epsilon(dpa, z, N, m, t, delta, orders)

    return _bisect_noise_multiplier(
        eps_of, target, T, rtol, setting=f"n_train={N}, batch_size={m}, delta={delta:.3g}",
        advice="a smaller batch_size, a larger delta")
