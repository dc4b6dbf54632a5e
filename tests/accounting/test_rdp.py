"""Tests of the DP-GNN RDP accountant (paper 004, Theorem 1)."""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import norm

from skldp.accounting import (
    DEFAULT_ORDERS,
    calibrate_noise_multiplier,
    compute_epsilon,
    dpgnn_rdp,
    rdp_to_epsilon,
)
from skldp.accounting._rdp import _smallest_epsilon
from skldp.exceptions import PrivacyBudgetError

ORDERS = np.array([1.5, 2.0, 3.0, 8.0, 32.0])


def _theorem1_bruteforce(z, N, m, K, alpha):
    """gamma(alpha) of Theorem 1 by enumerating every batch of m of N nodes.

    Nodes 0..K are the removed node and its K neighbours; rho counts them in the batch.
    Written directly from the theorem with sigma = 2 (K+1) C z and C = 1.
    """
    C, sigma = 1.0, 2 * (K + 1) * z
    exponents = []
    for batch in itertools.combinations(range(N), m):
        rho = sum(1 for v in batch if v <= K)
        exponents.append(alpha * (alpha - 1) * 2 * rho**2 * C**2 / sigma**2)
    top = max(exponents)  # log-mean-exp, shifted to avoid overflow
    mean = sum(math.exp(e - top) for e in exponents) / len(exponents)
    return (top + math.log(mean)) / (alpha - 1)


@pytest.mark.parametrize("N,m,K,z", [(9, 4, 2, 1.3), (8, 3, 0, 0.8), (10, 5, 4, 2.0),
                                     (7, 7, 3, 1.0), (6, 2, 6, 1.5)])
def test_matches_bruteforce_enumeration(N, m, K, z):
    got = dpgnn_rdp(z, N, m, K, steps=1, orders=ORDERS)
    want = [_theorem1_bruteforce(z, N, m, K, a) for a in ORDERS]
    np.testing.assert_allclose(got, want, rtol=1e-9)


def test_matches_monte_carlo_batches():
    # Batches drawn without replacement as in Algorithm 1; E[f(rho)] estimated
    # by Monte Carlo with a tolerance of 5 standard errors.
    rng = np.random.default_rng(0)
    N, m, K, z, alpha, R = 200, 40, 4, 1.0, 4.0, 40000
    rho = np.array([np.count_nonzero(rng.choice(N, m, replace=False) <= K) for _ in range(R)])
    f = np.exp(alpha * (alpha - 1) * rho**2 / (2 * (K + 1) ** 2 * z**2))
    mean, se = f.mean(), f.std(ddof=1) / np.sqrt(R)
    exact = math.exp((alpha - 1) * dpgnn_rdp(z, N, m, K, orders=[alpha])[0])
    assert abs(mean - exact) < 5 * se


def test_k0_is_sampling_without_replacement_of_single_points():
    # rho ~ Hypergeometric(N, 1, m) = Bernoulli(q): mixture of "not sampled" and
    # a Gaussian mechanism of RDP alpha / (2 z^2).
    N, m, z = 1000, 37, 0.9
    q = m / N
    a = ORDERS
    want = np.log1p(-q + q * np.exp(a * (a - 1) / (2 * z**2))) / (a - 1)
    np.testing.assert_allclose(dpgnn_rdp(z, N, m, 0, orders=a), want, rtol=1e-10)


def test_full_batch_is_the_gaussian_mechanism():
    for K in (0, 3, 10):
        np.testing.assert_allclose(dpgnn_rdp(1.7, 50, 50, K, steps=3, orders=ORDERS),
                                   3 * ORDERS / (2 * 1.7**2), rtol=1e-12)


def test_composition_is_linear_in_steps():
    one = dpgnn_rdp(1.1, 500, 50, 5, steps=1)
    np.testing.assert_allclose(dpgnn_rdp(1.1, 500, 50, 5, steps=17), 17 * one, rtol=1e-12)


def test_monotonicity():
    base = dict(n_train=2000, batch_size=200, max_degree=5, steps=100, delta=1e-5)
    eps_z = [compute_epsilon(z, **base) for z in (0.6, 0.9, 1.5, 3.0)]
    assert all(a > b for a, b in zip(eps_z, eps_z[1:], strict=False))
    eps_t = [compute_epsilon(1.0, **{**base, "steps": t}) for t in (10, 100, 1000)]
    assert all(a < b for a, b in zip(eps_t, eps_t[1:], strict=False))
    eps_m = [compute_epsilon(1.0, **{**base, "batch_size": m}) for m in (20, 200, 1000)]
    assert all(a < b for a, b in zip(eps_m, eps_m[1:], strict=False))
    # At a fixed absolute noise sigma / C, a larger degree bound costs more privacy.
    eps_k = [compute_epsilon(6.0 / (2 * (K + 1)), **{**base, "max_degree": K})
             for K in (0, 2, 5, 10)]
    assert all(a < b for a, b in zip(eps_k, eps_k[1:], strict=False))


def _gaussian_exact_epsilon(s, delta):
    """Exact (eps, delta) of the Gaussian mechanism, sensitivity 1, std s (Balle & Wang 2018)."""
    def d(eps):
        return norm.cdf(0.5 / s - eps * s) - math.exp(eps) * norm.cdf(-0.5 / s - eps * s)
    lo, hi = 0.0, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if d(mid) > delta else (lo, mid)
    return hi


@pytest.mark.parametrize("s", [0.7, 1.0, 2.0, 5.0])
def test_conversion_is_valid_and_tight_for_the_gaussian(s):
    delta = 1e-5
    orders = np.linspace(1.01, 400, 4000)
    eps, _ = rdp_to_epsilon(orders, orders / (2 * s**2), delta)
    exact = _gaussian_exact_epsilon(s, delta)
    assert eps >= exact - 1e-9            # an upper bound ...
    assert eps <= 1.25 * exact + 0.05     # ... and not a loose one
    # never worse than Mironov's classical conversion
    mironov = np.min(orders / (2 * s**2) + np.log(1 / delta) / (orders - 1))
    assert eps <= mironov


def test_calibration_round_trip():
    for target in (1.0, 4.0, 30.0):
        z = calibrate_noise_multiplier(target, 1e-5, 5000, 500, 7, 300)
        eps = compute_epsilon(z, 5000, 500, 7, 300, 1e-5)
        assert eps <= target
        assert eps >= target * 0.995
        assert compute_epsilon(z * 0.99, 5000, 500, 7, 300, 1e-5) > target


def test_zero_noise_is_infinite_epsilon_and_zero_steps_is_free():
    assert np.isinf(compute_epsilon(0.0, 100, 10, 2, 5, 1e-5))
    assert compute_epsilon(1.0, 100, 10, 2, 0, 1e-5) == 0.0


@pytest.mark.parametrize("K", [-1, 2.5, "3", True, None])
def test_bad_degree(K):
    with pytest.raises((ValueError, TypeError), match="max_degree"):
        dpgnn_rdp(1.0, 100, 10, K)


def test_batch_larger_than_training_set():
    with pytest.raises(ValueError, match="larger than the training set"):
        compute_epsilon(1.0, 100, 101, 2, 10, 1e-5)
    with pytest.raises(ValueError, match="larger than the training set"):
        calibrate_noise_multiplier(1.0, 1e-5, 100, 101, 2, 10)


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_bad_delta(delta):
    with pytest.raises((ValueError, TypeError), match="delta"):
        compute_epsilon(1.0, 100, 10, 2, 10, delta)
    with pytest.raises((ValueError, TypeError), match="delta"):
        calibrate_noise_multiplier(1.0, delta, 100, 10, 2, 10)


def test_unreachable_target_says_what_would_reach_it():
    # Full batch (no amplification) and very many steps: even huge noise cannot reach 1e-3.
    with pytest.raises(PrivacyBudgetError, match=r"unreachable with steps=10000000") as info:
        calibrate_noise_multiplier(1e-3, 1e-5, 100, 100, 3, 10_000_000)
    msg = str(info.value)
    assert "Use at most steps=" in msg and "target_epsilon >=" in msg
    # The suggested number of steps does reach the target.
    t_ok = int(msg.split("Use at most steps=")[1].split(",")[0])
    assert t_ok >= 1
    calibrate_noise_multiplier(1e-3, 1e-5, 100, 100, 3, t_ok)
    # Not even one step reaches it: no advice to run none.
    with pytest.raises(PrivacyBudgetError, match=r"unreachable with steps=1 ") as info:
        calibrate_noise_multiplier(1e-6, 1e-5, 100, 100, 3, 1)
    assert "steps=0" not in str(info.value) and "target_epsilon >=" in str(info.value)


def test_bad_target_and_orders():
    with pytest.raises(ValueError, match="target_epsilon"):
        calibrate_noise_multiplier(0.0, 1e-5, 100, 10, 2, 10)
    with pytest.raises(ValueError, match="orders"):
        dpgnn_rdp(1.0, 100, 10, 2, orders=[0.5, 2.0])
    with pytest.raises(ValueError, match="noise_multiplier"):
        dpgnn_rdp(-1.0, 100, 10, 2)
    assert np.all(DEFAULT_ORDERS > 1)


# ------------------------------------------- numerical accuracy of Theorem 1
def _theorem1_exact(z, N, m, K, alpha, prec=60):
    """gamma(alpha) of Theorem 1 in high-precision decimal arithmetic (exact rational pmf)."""
    import decimal
    with decimal.localcontext() as ctx:
        ctx.prec = prec
        D = decimal.Decimal
        k = min(K + 1, N)
        total, norm_ = D(0), D(math.comb(N, m))
        a = D(float(alpha))   # the exact binary values the accountant is given
        e = a * (a - 1) / (2 * D(K + 1) ** 2 * D(float(z)) ** 2)
        for r in range(max(0, m - (N - k)), min(k, m) + 1):
            p = D(math.comb(k, r) * math.comb(N - k, m - r)) / norm_
            total += p * (e * r * r).exp()
        return float(total.ln() / (a - 1))


@pytest.mark.parametrize("z,N,m,K", [(1.0, 10**6, 1, 5), (5.0, 10**7, 100, 0),
                                     (0.8, 10**5, 1000, 10), (2.0, 3000, 1500, 40),
                                     (0.5, 200, 50, 3), (30.0, 10**6, 10**4, 20)])
def test_never_below_exact_theorem1(z, N, m, K):
    # scipy's hypergeom.logpmf sums to 1 - 1e-9: the RDP came out below Theorem 1
    # (0.0 instead of 8.4e-08 in the first setting).
    orders = np.array([1.01, 1.5, 2.0, 8.0, 64.0, 1024.0])
    got = dpgnn_rdp(z, N, m, K, steps=1, orders=orders)
    want = np.array([_theorem1_exact(z, N, m, K, a) for a in orders])
    assert np.all(got >= want), (got - want) / want
    np.testing.assert_allclose(got, want, rtol=1e-8)


def test_epsilon_of_many_tiny_steps_is_not_underestimated():
    z, N, m, K, T, delta = 5.0, 10**7, 100, 0, 10**5, 0.1
    orders = DEFAULT_ORDERS[DEFAULT_ORDERS <= 64]
    got, order = _smallest_epsilon(lambda a: dpgnn_rdp(z, N, m, K, T, a), orders, delta)
    assert got == compute_epsilon(z, N, m, K, T, delta, orders=orders)
    # exact Theorem 1 at the (fractional) order the search ended at
    want = rdp_to_epsilon([order], [T * _theorem1_exact(z, N, m, K, order)], delta)[0]
    assert want <= got <= want * (1 + 1e-8)


def test_rdp_to_epsilon_refuses_negative_or_nan_rdp():
    with pytest.raises(ValueError, match=r"rdp must be >= 0.*orders \[4.0\]"):
        rdp_to_epsilon([2.0, 4.0], [0.5, -3.0], 1e-5)
    with pytest.raises(ValueError, match=r"rdp must be >= 0.*orders \[2.0\]"):
        rdp_to_epsilon([2.0, 4.0], [float("nan"), 1.0], 1e-5)
    # inf means the order gives no bound: allowed, the other order is used
    eps, order = rdp_to_epsilon([2.0, 4.0], [float("inf"), 1.0], 1e-5)
    assert order == 4.0 and eps == rdp_to_epsilon([4.0], [1.0], 1e-5)[0]


@pytest.mark.parametrize("rtol", [0.0, -0.1, 1.0, float("nan"), float("inf"), "1e-3"])
def test_calibration_refuses_a_bad_rtol(rtol):
    with pytest.raises(ValueError, match=r"rtol must be a number in the open interval \(0, 1\)"):
        calibrate_noise_multiplier(1.0, 1e-5, 100, 10, 2, 10, rtol=rtol)


def test_bisection_stops_at_adjacent_floats():
    # rtol below the float spacing: the bracket cannot shrink below one ulp; it used
    # to loop forever. eps_of fails the test instead of hanging.
    from skldp.accounting._rdp import _bisect_noise_multiplier
    calls = []

    def eps_of(z, steps):
        calls.append(z)
        if len(calls) > 5000:
            raise AssertionError("the bisection does not terminate")
        return compute_epsilon(z, 100, 10, 2, steps, 1e-5)

    z = _bisect_noise_multiplier(eps_of, 1.0, 10, 1e-17, setting="", advice="")
    assert compute_epsilon(z, 100, 10, 2, 10, 1e-5) <= 1.0
    assert compute_epsilon(np.nextafter(z, 0), 100, 10, 2, 10, 1e-5) > 1.0 or \
        compute_epsilon(np.nextafter(np.nextafter(z, 0), 0), 100, 10, 2, 10, 1e-5) > 1.0


def test_infinite_noise_is_refused():
    # z = inf used to give epsilon 0 here and a bare "math domain error" in DP-SGD's
    # accountant: both refuse it now, by name
    with pytest.raises(ValueError, match="noise_multiplier must be finite"):
        compute_epsilon(float("inf"), 1000, 10, 2, 10, 1e-5)
    with pytest.raises(ValueError, match="noise_multiplier must be finite"):
        dpgnn_rdp(float("inf"), 1000, 10, 2)


@pytest.mark.parametrize("z", [1e150, 1e155, 1e200, 1e308])
def test_huge_noise_gives_a_tiny_rdp_and_epsilon(z):
    # z ** 2 on a Python float raised OverflowError above z ~ 1.3e154 (dpgnn_rdp,
    # compute_epsilon and the models that use them)
    rdp = dpgnn_rdp(z, 1000, 100, 10, 100)
    assert np.all(rdp >= 0) and np.all(rdp < 1e-290)
    assert 0.0 <= compute_epsilon(z, 1000, 100, 10, 100, 1e-5) <= \
        compute_epsilon(1e4, 1000, 100, 10, 100, 1e-5)
    # for a large z the RDP is proportional to 1 / z^2, on both sides of z ~ 1.3e154
    if z < 1e200:
        orders = np.array([2.0, 8.0])
        expected = dpgnn_rdp(1e100, 1000, 100, 10, 100, orders=orders) * (1e100 / z) ** 2
        np.testing.assert_allclose(dpgnn_rdp(z, 1000, 100, 10, 100, orders=orders), expected,
                                   rtol=1e-9)


def test_rdp_to_epsilon_of_one_order_given_as_scalars():
    # a scalar order was accepted (as one order) but its scalar RDP was refused with
    # "rdp has shape () but orders has shape (1,)"
    from skldp.accounting import rdp_to_epsilon
    assert rdp_to_epsilon(4.0, 1.0, 1e-5) == rdp_to_epsilon([4.0], [1.0], 1e-5)
    with pytest.raises(ValueError, match="rdp has shape"):
        rdp_to_epsilon(4.0, [1.0, 2.0], 1e-5)
