"""Tests of the example-level DP-SGD accountant (dp-accounting glue, used by DP-MLP)."""

import builtins
import math

import numpy as np
import pytest

from skldp.accounting import (
    calibrate_dpsgd_noise_multiplier,
    compute_dpsgd_epsilon,
    compute_epsilon,
    dpgnn_rdp,
    dpsgd_rdp,
    rdp_to_epsilon,
)
from skldp.exceptions import PrivacyBudgetError

dpa = pytest.importorskip("dp_accounting")


def _reference(z, N, m, T, delta):
    """dp-accounting used directly: replace-one, fixed-size batches without replacement."""
    acc = dpa.rdp.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    acc.compose(dpa.SelfComposedDpEvent(
        dpa.SampledWithoutReplacementDpEvent(N, m, dpa.GaussianDpEvent(z)), T))
    return acc.get_epsilon(delta)


def test_matches_dp_accounting_on_the_audit_example():
    # z = 1, N = 10,000, batch 100, 1,000 steps, delta = 1e-5: dp-accounting gives 3.58,
    # paper 004's Theorem 1 with K = 0 gives 26.0 for the same training run.
    eps = compute_dpsgd_epsilon(1.0, 10_000, 100, 1_000, 1e-5)
    # (the search between orders finds no lower epsilon here than dp-accounting's grid:
    # its interpolated curve has a kink at the best integer order)
    assert eps == pytest.approx(_reference(1.0, 10_000, 100, 1_000, 1e-5), rel=1e-12)
    assert eps <= _reference(1.0, 10_000, 100, 1_000, 1e-5)
    assert eps == pytest.approx(3.576, abs=5e-3)
    assert compute_dpsgd_epsilon(1.0, 10_000, 100, 1_000, 1e-5, bound="wor") == eps
    loose = compute_epsilon(1.0, 10_000, 100, 0, 1_000, 1e-5)
    assert loose == pytest.approx(25.96, abs=0.05)
    assert eps < loose


def test_full_batch_is_the_gaussian_mechanism_with_sensitivity_2C():
    # m = N: no subsampling, T compositions of a Gaussian mechanism whose noise std is
    # z times the replace-one sensitivity 2C, i.e. RDP T alpha / (2 z^2). Checked
    # against our own conversion on a fine grid of orders around the given ones.
    z, T, delta = 2.0, 5, 1e-5
    orders = np.array([1.5, 2.0, 3.0, 5.0, 8.0, 16.0, 32.0, 64.0])
    got = compute_dpsgd_epsilon(z, 50, 50, T, delta, orders=orders)
    fine = np.geomspace(1.001, 128.0, 200_000)
    want, _ = rdp_to_epsilon(fine, T * fine / (2 * z**2), delta)
    assert got == pytest.approx(want, rel=1e-9)
    assert got <= rdp_to_epsilon(orders, T * orders / (2 * z**2), delta)[0]
    # sigma / (2C) convention: doubling C at the same sigma halves z and costs more
    assert compute_dpsgd_epsilon(z / 2, 50, 50, T, delta, orders=orders) > got


def test_monotone_and_edge_cases():
    base = dict(n_train=2000, batch_size=100, steps=200, delta=1e-5)
    eps_z = [compute_dpsgd_epsilon(z, **base) for z in (0.7, 1.0, 2.0)]
    assert eps_z[0] > eps_z[1] > eps_z[2]
    assert math.isinf(compute_dpsgd_epsilon(0.0, **base))
    assert compute_dpsgd_epsilon(1.0, 2000, 100, 0, 1e-5) == 0.0
    with pytest.raises(ValueError, match="larger than the training set"):
        compute_dpsgd_epsilon(1.0, 100, 101, 10, 1e-5)
    with pytest.raises((ValueError, TypeError), match="delta"):
        compute_dpsgd_epsilon(1.0, 100, 10, 10, 0.0)
    with pytest.raises(ValueError, match="noise_multiplier"):
        compute_dpsgd_epsilon(-1.0, 100, 10, 10, 1e-5)


def test_calibration_round_trip():
    orders = [1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 64.0]
    z = calibrate_dpsgd_noise_multiplier(2.0, 1e-5, 5000, 250, 200, orders=orders, rtol=1e-3)
    assert compute_dpsgd_epsilon(z, 5000, 250, 200, 1e-5, orders=orders) <= 2.0
    assert compute_dpsgd_epsilon(z * 0.99, 5000, 250, 200, 1e-5, orders=orders) > 2.0
    with pytest.raises(ValueError, match="target_epsilon"):
        calibrate_dpsgd_noise_multiplier(0.0, 1e-5, 5000, 250, 200)


def test_unreachable_target():
    with pytest.raises(PrivacyBudgetError, match="unreachable"):
        calibrate_dpsgd_noise_multiplier(1e-4, 1e-5, 100, 100, 10_000_000,
                                         orders=[2.0, 8.0, 32.0])


def test_our_conversion_equals_dp_accountings():
    # rdp_to_epsilon (used for DP-GNN's Theorem 1 curve) is the same conversion as
    # dp_accounting.rdp.compute_epsilon (Canonne et al. 2020, Prop. 12).
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon as dpa_conv
    rng = np.random.default_rng(0)
    orders = np.array([1.5, 2.0, 3.0, 4.5, 8.0, 16.0, 64.0, 256.0])
    for _ in range(20):
        rdp = np.sort(rng.uniform(0.05, 5.0, len(orders))) * rng.uniform(0.1, 3.0)
        delta = 10.0 ** rng.uniform(-8, -3)
        ours = rdp_to_epsilon(orders, rdp, delta)
        theirs = dpa_conv(orders, rdp, delta)
        assert ours[0] == pytest.approx(theirs[0], rel=1e-12, abs=1e-12)
        assert ours[1] == theirs[1]


def test_clear_import_error_without_dp_accounting(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "dp_accounting" or name.startswith("dp_accounting."):
            raise ImportError("No module named 'dp_accounting'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(ImportError, match=r'pip install "skldp\[accounting\]"'):
        compute_dpsgd_epsilon(1.0, 100, 10, 10, 1e-5)


def test_combined_is_the_per_order_minimum_of_two_valid_bounds():
    # At a large batch fraction (q = 0.45, as in the facebook runs) the joint-convexity
    # bound (Theorem 1, K = 0) beats dp-accounting's Thm. 27 curve; at q = 0.01 the latter.
    for (N, m, z) in [(11235, 5000, 27.87), (10_000, 100, 1.0), (1000, 500, 5.0)]:
        orders, wor = dpsgd_rdp(z, N, m, 100, bound="wor")
        _, comb = dpsgd_rdp(z, N, m, 100)
        hyp = dpgnn_rdp(z, N, m, 0, 100, orders=orders)
        np.testing.assert_allclose(comb, np.minimum(wor, hyp), rtol=1e-12)
    orders, wor = dpsgd_rdp(27.87, 11235, 5000, 100, bound="wor")
    assert np.mean(dpgnn_rdp(27.87, 11235, 5000, 0, 100, orders=orders) < wor) > 0.5
    big_q = dict(n_train=11235, batch_size=5000, steps=100, delta=1 / 112350)
    assert compute_dpsgd_epsilon(27.87, **big_q) < compute_dpsgd_epsilon(27.87, **big_q,
                                                                          bound="wor")
    with pytest.raises(ValueError, match="bound"):
        compute_dpsgd_epsilon(1.0, 100, 10, 10, 1e-5, bound="poisson")


@pytest.mark.parametrize("z", [1e10, 1e100, 1e155, 1e308])
@pytest.mark.parametrize("bound", ["wor", "combined"])
def test_huge_noise_gives_a_tiny_epsilon(bound, z):
    # dp-accounting fails above z ~ 1e9 ("math domain error", OverflowError above
    # ~1.3e154, which read as the tiny-z failure: inf); dpgnn_rdp's z ** 2 overflowed.
    # The RDP of the Gaussian without sampling, alpha / (2 z^2), bounds the sampled one.
    eps = compute_dpsgd_epsilon(z, 1000, 100, 10, 1e-5, bound=bound)
    assert 0.0 <= eps <= compute_dpsgd_epsilon(1e4, 1000, 100, 10, 1e-5, bound=bound)
    orders, rdp = dpsgd_rdp(z, 1000, 100, 10, bound=bound)
    assert np.all(rdp >= 0) and np.all(rdp <= 10 * orders / 2 * (1 / z) ** 2 * (1 + 1e-9))


def test_infinite_noise_and_bad_rtol_are_refused():
    with pytest.raises(ValueError, match="noise_multiplier must be finite"):
        compute_dpsgd_epsilon(float("inf"), 1000, 10, 10, 1e-5)
    with pytest.raises(ValueError, match="noise_multiplier must be finite"):
        dpsgd_rdp(float("inf"), 1000, 10, 10)
    for rtol in (0.0, -0.1, 1.5):   # rtol <= 0 used to hang the bisection
        with pytest.raises(ValueError, match=r"rtol must be a number in the open interval"):
            calibrate_dpsgd_noise_multiplier(1.0, 1e-5, 100, 10, 10, rtol=rtol)


@pytest.mark.parametrize("z,N,m", [(3.0, 10_000, 100), (0.7, 500, 50), (2.0, 50, 50)])
def test_fractional_orders_are_dp_accountings_and_reuse_the_integer_orders(z, N, m):
    from skldp.accounting import _dpsgd
    frac = [1.37, 6.5, 17.25, 100.9]
    acc = dpa.rdp.RdpAccountant(orders=frac,
                                neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    acc.compose(dpa.SampledWithoutReplacementDpEvent(N, m, dpa.GaussianDpEvent(z)), 3)
    one_by_one = [dpsgd_rdp(z, N, m, 3, orders=[a], bound="wor")[1][0] for a in frac]
    np.testing.assert_allclose(one_by_one, acc.rdp, rtol=1e-13)
    # the order search evaluates ~30 fractional orders near a few integers: each
    # integer order's exact sums are computed once, not once per order tried
    _dpsgd._wor_rdp_one_step.cache_clear()
    compute_dpsgd_epsilon(z, N, m, 3, 1e-5)
    assert _dpsgd._wor_rdp_one_step.cache_info().misses <= 20   # (was ~30)


@pytest.mark.parametrize("orders", [[[2.0, 3.0]], np.full((2, 2), 4.0)])
def test_orders_of_more_than_one_dimension_are_refused_as_by_dpgnn(orders):
    # before: numpy's "only 0-dimensional arrays can be converted to Python scalars"
    # (a TypeError); the DP-GNN accountant refuses them with its own message
    with pytest.raises(ValueError, match="orders must be finite numbers > 1"):
        compute_dpsgd_epsilon(1.0, 100, 10, 10, 1e-5, orders=orders)
    with pytest.raises(ValueError, match="orders must be finite numbers > 1"):
        dpsgd_rdp(1.0, 100, 10, orders=orders)
