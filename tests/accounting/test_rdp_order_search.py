"""The accountants' epsilon is the minimum over the real Rényi orders, not only a grid's.

``compute_epsilon`` and ``compute_dpsgd_epsilon`` convert the RDP curve on a grid of
orders, then search the real orders around the best one. Checked against a brute-force
fine grid (1.001..1000, 200k orders, and the integers): never above the grid's value,
never below the fine grid's minimum (beyond rounding), and sound for the Gaussian
mechanism, whose exact privacy profile is known (Balle & Wang 2018, Thm. 8).
"""

import math

import numpy as np
import pytest
from scipy.special import ndtr

from skldp.accounting import (
    DEFAULT_ORDERS,
    compute_dpsgd_epsilon,
    compute_epsilon,
    dpgnn_rdp,
    rdp_to_epsilon,
)
from skldp.accounting._rdp import _smallest_epsilon

FINE = np.union1d(np.geomspace(1.001, 1000.0, 200_000), np.arange(2.0, 1001.0))
TOL = 1e-8   # relative: the search's tolerance on the order, and float rounding


def _gaussian_delta(eps, sigma):
    """Exact delta(eps) of the Gaussian mechanism, sensitivity 1 (Balle & Wang 2018)."""
    a = 1.0 / (2.0 * sigma)
    return ndtr(a - eps * sigma) - math.exp(eps) * ndtr(-a - eps * sigma)


# (z, N, m, K, T, delta): few steps, where the grid is coarsest, and the DP-GNN study's
# settings (facebook at eps = 10, twitch_ENGB at eps = 30, the batch-2500 ablation)
DPGNN = [(0.2, 10_000, 1_000, 5, 2, 1e-5), (1.0, 10_000, 1_000, 5, 3, 1e-5),
         (30.0, 10_000, 1_000, 5, 2, 1e-5), (2.0, 10_000, 1_000, 1, 10, 1e-5),
         (3.150628, 11235, 5000, 1, 100, 1 / 112350), (1.269695, 3563, 1500, 1, 100, 1 / 35630),
         (0.752733, 11235, 2500, 3, 100, 1 / 112350)]


@pytest.mark.parametrize("z,N,m,K,T,delta", DPGNN)
def test_dpgnn_epsilon_is_the_minimum_over_real_orders(z, N, m, K, T, delta):
    got = compute_epsilon(z, N, m, K, T, delta)
    grid = rdp_to_epsilon(DEFAULT_ORDERS, dpgnn_rdp(z, N, m, K, T, DEFAULT_ORDERS), delta)[0]
    fine = rdp_to_epsilon(FINE, dpgnn_rdp(z, N, m, K, T, FINE), delta)[0]
    assert got <= grid
    assert fine * (1 - TOL) <= got <= fine * (1 + TOL)


@pytest.mark.parametrize("z,T", [(0.5, 1), (1.0, 3), (3.0, 10), (20.0, 1)])
def test_search_is_sound_for_the_gaussian(z, T):
    # full batch: T Gaussian steps of RDP T a / (2 z^2), i.e. one Gaussian mechanism of
    # std z / sqrt(T): the epsilon must hold for its exact privacy profile
    delta = 1e-5
    for eps in (compute_epsilon(z, 100, 100, 3, T, delta),
                compute_dpsgd_epsilon(z, 100, 100, T, delta) if _has_dpa() else None):
        if eps is None:
            continue
        assert _gaussian_delta(eps, z / math.sqrt(T)) <= delta
        grid = rdp_to_epsilon(DEFAULT_ORDERS, T * DEFAULT_ORDERS / (2 * z**2), delta)[0]
        assert eps <= grid


def test_the_order_found_is_between_grid_orders_and_its_epsilon_is_that_orders():
    z, N, m, K, T, delta = 0.2, 10_000, 1_000, 5, 2, 1e-5
    eps, order = _smallest_epsilon(lambda a: dpgnn_rdp(z, N, m, K, T, a), DEFAULT_ORDERS,
                                   delta)
    assert order not in DEFAULT_ORDERS
    assert eps == rdp_to_epsilon([order], dpgnn_rdp(z, N, m, K, T, [order]), delta)[0]
    # a grid with one order near the best is searched around it, not only at it
    one, _ = _smallest_epsilon(lambda a: dpgnn_rdp(z, N, m, K, T, a), [order + 0.3], delta)
    assert one == pytest.approx(eps, rel=TOL)


def test_zero_and_infinite_curves():
    assert _smallest_epsilon(lambda a: np.zeros(len(a)), DEFAULT_ORDERS, 1e-5)[0] == 0.0
    assert _smallest_epsilon(lambda a: np.full(len(a), np.inf), DEFAULT_ORDERS, 1e-5)[0] \
        == np.inf
    # a NaN or negative value (a numerical failure) bounds nothing at its order
    eps, order = _smallest_epsilon(lambda a: np.where(a < 3, -1.0, a / 2.0), [2.0, 8.0], 1e-5)
    assert order >= 3 and eps > 0
    assert compute_epsilon(0.0, 100, 10, 2, 5, 1e-5) == np.inf


def _has_dpa():
    try:
        import dp_accounting  # noqa: F401
    except ImportError:
        return False
    return True


def _dpa_fine_rdp(dpa, z, N, m, T, orders):
    """dp-accounting's subsampled-Gaussian RDP (without replacement) at fractional orders,
    from its values at the integers: (a - 1) RDP interpolated linearly between them, as
    dp-accounting does at a fractional order (Wang et al. 2019, Cor. 10)."""
    ints = np.arange(2, int(np.ceil(orders.max())) + 1)
    acc = dpa.rdp.RdpAccountant(orders=[float(a) for a in ints],
                                neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    acc.compose(dpa.SampledWithoutReplacementDpEvent(N, m, dpa.GaussianDpEvent(z)), T)
    cgf = np.concatenate([[0.0], np.asarray(acc.rdp) * (ints - 1)])   # orders 1, 2, ...
    lo, t = np.floor(orders).astype(int), orders - np.floor(orders)
    return ((1 - t) * cgf[lo - 1] + t * cgf[np.minimum(lo, ints[-1] - 1)]) / (orders - 1)


# small epsilon (dp-accounting's grid jumps from order 63 to 128: 35 % and 12 % too high
# on it alone), and DP-MLP at the DP-GNN study's facebook setting at eps = 10
@pytest.mark.parametrize("z,N,m,T,delta", [(3.0, 10_000, 100, 1, 1e-5),
                                           (20.0, 10_000, 1_000, 5, 1e-5),
                                           (3.686997, 11235, 5000, 100, 1 / 112350)])
def test_dpsgd_epsilon_against_dp_accounting_on_a_fine_grid(z, N, m, T, delta):
    dpa = pytest.importorskip("dp_accounting")
    got = compute_dpsgd_epsilon(z, N, m, T, delta)
    # dp-accounting alone (its grid, its conversion): never below ours
    acc = dpa.rdp.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    acc.compose(dpa.SampledWithoutReplacementDpEvent(N, m, dpa.GaussianDpEvent(z)), T)
    theirs = acc.get_epsilon(delta)
    fine = FINE
    curve = _dpa_fine_rdp(dpa, z, N, m, T, fine)
    # the interpolation is dp-accounting's own at fractional orders
    frac = np.array([1.37, 6.5, 17.25])
    acc_frac = dpa.rdp.RdpAccountant(orders=list(frac),
                                     neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    acc_frac.compose(dpa.SampledWithoutReplacementDpEvent(N, m, dpa.GaussianDpEvent(z)), T)
    np.testing.assert_allclose(_dpa_fine_rdp(dpa, z, N, m, T, frac), acc_frac.rdp,
                               rtol=1e-12)
    combined = np.minimum(curve, dpgnn_rdp(z, N, m, 0, T, fine))   # bound="combined"
    fine_eps = dpa.rdp.compute_epsilon(fine, combined, delta)[0]
    assert got <= theirs * (1 + 1e-12)
    assert fine_eps * (1 - TOL) <= got <= fine_eps * (1 + TOL)
