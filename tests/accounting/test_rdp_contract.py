"""DP-GNN's accountant checked against its documented contract.

- the default order grid is fine enough: on the full-batch Gaussian mechanism, whose RDP
  is alpha / (2 z^2) (Mironov 2017, Prop. 7), the epsilon is within 1% of the minimum of
  Balle et al.'s (2020, Thm. 21) conversion over every real order > 1;
- orders must be > 1 (order 1 is the KL divergence: the conversion divides by alpha - 1);
- a target epsilon of 0 is a bad target, not an unreachable one;
- calibration returns the *smallest* multiplier to ``rtol``, also below 1;
- a reported epsilon is never negative.
"""

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from skldp.accounting import (
    calibrate_noise_multiplier,
    compute_epsilon,
    dpgnn_rdp,
    rdp_to_epsilon,
)
from skldp.exceptions import PrivacyBudgetError


def _balle_min_over_real_orders(gamma_per_order, delta):
    """min over real a > 1 of gamma(a) + ln((a-1)/a) - (ln delta + ln a)/(a-1) (Thm. 21)."""
    def eps(log_a_minus_1):
        a = 1.0 + math.exp(log_a_minus_1)
        return (gamma_per_order(a) + math.log((a - 1) / a)
                - (math.log(delta) + math.log(a)) / (a - 1))
    res = minimize_scalar(eps, bounds=(-12.0, 12.0), method="bounded",
                          options={"xatol": 1e-10})
    return res.fun


@pytest.mark.parametrize("z", [0.3, 1.0, 2.0, 3.0, 5.0, 12.0, 40.0, 150.0, 300.0])
def test_default_orders_reach_the_best_real_order_of_the_gaussian(z):
    # full batch, K = 0: the Gaussian mechanism, gamma(a) = a / (2 z^2); its best order
    # runs from about 2 (z = 0.3) to about 900 (z = 300), across the whole grid
    delta = 1e-5
    best = _balle_min_over_real_orders(lambda a: a / (2 * z * z), delta)
    eps = compute_epsilon(z, 100, 100, 0, 1, delta)
    assert eps >= best - 1e-12          # no grid beats the best real order
    assert eps <= best * 1.01           # and the default grid is within 1% of it


@pytest.mark.parametrize("orders", [[1.0, 2.0], [2.0, 1.0], [1.0]])
def test_order_one_is_refused(orders):
    with pytest.raises(ValueError, match="orders must be finite numbers > 1"):
        dpgnn_rdp(1.0, 100, 10, 2, orders=orders)
    with pytest.raises(ValueError, match="orders must be finite numbers > 1"):
        rdp_to_epsilon(orders, np.ones(len(orders)), 1e-5)
    with pytest.raises(ValueError, match="orders must be finite numbers > 1"):
        compute_epsilon(1.0, 100, 10, 2, 10, 1e-5, orders=orders)


def test_a_zero_target_is_a_bad_target_not_an_unreachable_one():
    with pytest.raises(ValueError, match="target_epsilon must be a finite number > 0") as info:
        calibrate_noise_multiplier(0.0, 1e-5, 100, 10, 2, 10)
    assert not isinstance(info.value, PrivacyBudgetError)


@pytest.mark.parametrize("target", [20.0, 8.0, 3.0, 0.5])
def test_calibration_returns_the_smallest_multiplier(target):
    # full batch: eps decreases in z; targets 20 and 8 need z < 1, the others z > 1
    rtol, delta = 1e-4, 1e-5
    z = calibrate_noise_multiplier(target, delta, 100, 100, 0, 1, rtol=rtol)
    assert compute_epsilon(z, 100, 100, 0, 1, delta) <= target
    # the bracket is at most rtol wide: one rtol less noise misses the target
    assert compute_epsilon(z * (1 - rtol), 100, 100, 0, 1, delta) > target


@pytest.mark.parametrize("order, delta", [(2.0, 0.5), (1.5, 0.9), (64.0, 0.99)])
def test_a_reported_epsilon_is_never_negative(order, delta):
    # with no privacy loss (gamma = 0) and a large delta Thm. 21's value is negative;
    # an (eps, delta) guarantee holds for eps = 0 then, never below
    a = order
    assert math.log((a - 1) / a) - (math.log(delta) + math.log(a)) / (a - 1) < 0
    eps, _ = rdp_to_epsilon([order], [0.0], delta)
    assert eps == 0.0
    assert compute_epsilon(1e4, 10**6, 1, 0, 1, delta) >= 0.0
