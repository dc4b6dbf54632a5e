"""Values of the RDP -> (eps, delta) conversion ``rdp_to_epsilon`` checked without
dp_accounting: pinned against numbers computed by hand (40-digit mpmath, offline) from
Balle et al. (2020, Thm. 21), eps = gamma + ln((a-1)/a) - (ln delta + ln a)/(a-1);
strictly below Mironov's gamma + ln(1/delta)/(a-1); and sound: for the Gaussian
mechanism, whose exact privacy profile is known (Balle & Wang 2018, Thm. 8), the
converted epsilon must have an exact delta no larger than the target."""

import math

import numpy as np
import pytest
from scipy.special import ndtr

from skldp.accounting import rdp_to_epsilon

ORDERS = np.concatenate([np.linspace(1.1, 10.9, 99), np.arange(11.0, 257.0)])


def _balle(a, gamma, delta):
    # Thm. 21 at one order, written out with math (independent of the module)
    return gamma + math.log((a - 1) / a) - (math.log(delta) + math.log(a)) / (a - 1)


def _mironov(orders, rdp, delta):
    """Mironov (2017, Prop. 3): the smallest gamma + ln(1/delta)/(a-1), and its order."""
    eps = rdp + math.log(1 / delta) / (orders - 1)
    i = int(np.argmin(eps))
    return float(eps[i]), float(orders[i])


def _gaussian_delta(eps, sigma):
    """Exact delta(eps) of the Gaussian mechanism, sensitivity 1 (Balle & Wang 2018)."""
    a = 1.0 / (2.0 * sigma)
    return ndtr(a - eps * sigma) - math.exp(eps) * ndtr(-a - eps * sigma)


def test_pinned_values():
    # mpmath, 40 digits: order 2, gamma 0.5, delta 1e-5 -> 10.62663110385033780...;
    # order 4, gamma 1, delta 1e-5 -> 4.08786162883166500...
    eps, order = rdp_to_epsilon([2.0], [0.5], 1e-5)
    assert eps == pytest.approx(10.626631103850338, rel=1e-12) and order == 2.0
    eps, order = rdp_to_epsilon([2.0, 4.0], [0.5, 1.0], 1e-5)
    assert eps == pytest.approx(4.087861628831665, rel=1e-12) and order == 4.0
    # Gaussian, sigma = 2 (gamma = a / 8), delta = 1e-6, on the grid ORDERS:
    # min at a = 10.6, 2.41910248869392041...
    eps, order = rdp_to_epsilon(ORDERS, ORDERS / 8.0, 1e-6)
    assert eps == pytest.approx(2.4191024886939204, rel=1e-12)
    assert order == pytest.approx(10.6)


@pytest.mark.parametrize("a, gamma, delta", [(1.5, 0.1, 1e-5), (2.0, 0.0, 1e-3),
                                             (3.0, 2.5, 1e-8), (32.0, 0.7, 1e-6),
                                             (256.0, 9.0, 1e-10)])
def test_one_order_is_thm21(a, gamma, delta):
    eps, order = rdp_to_epsilon([a], [gamma], delta)
    assert order == a
    assert eps == pytest.approx(max(_balle(a, gamma, delta), 0.0), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("sigma, delta", [(1.0, 1e-5), (2.0, 1e-6), (5.0, 1e-6), (2.0, 1e-9)])
def test_below_mironov_and_sound_for_the_gaussian(sigma, delta):
    rdp = ORDERS / (2 * sigma ** 2)               # Gaussian RDP (Mironov 2017, Prop. 7)
    eps, order = rdp_to_epsilon(ORDERS, rdp, delta)
    # the minimum over the orders of the hand formula
    assert eps == pytest.approx(min(_balle(a, g, delta) for a, g in zip(ORDERS, rdp, strict=True)),
                                rel=1e-12)
    # strictly better than Mironov: at Mironov's best order a, Thm. 21 is lower by
    # ln(a/(a-1)) + ln(a)/(a-1) > 0, and the minimum over the orders lower still
    m_eps, a = _mironov(ORDERS, rdp, delta)
    gain = math.log(a / (a - 1)) + math.log(a) / (a - 1)
    assert gain > 0.05
    assert eps <= m_eps - gain + 1e-12
    # sound: the exact delta at the converted epsilon is within the target
    assert _gaussian_delta(eps, sigma) <= delta
    # and not far off: the exact delta there is above 1% of the target
    assert _gaussian_delta(eps, sigma) > 0.01 * delta
