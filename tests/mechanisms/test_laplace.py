"""Tests of the Laplace mechanism (paper 000 App. A.1, eqs. (9)-(10))."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from plain_array_checks import EXPECTED_FAILED_PLAIN_ARRAY
from sklearn.utils.estimator_checks import parametrize_with_checks

from skldp import GraphData
from skldp.exceptions import PrivacyLeakWarning
from skldp.mechanisms import LaplaceMechanism

N_USERS = 40_000
Z_TOL = 5.0


@pytest.mark.parametrize("eps", [0.5, 3.0, 20.0])
def test_unbiased_and_variance_eq10(eps):
    lo = np.array([0.0, -1.0, 2.0])
    hi = np.array([1.0, 1.0, 6.0])
    xs = np.array([0.0, 0.3, 6.0])
    X = np.tile(xs, (N_USERS, 1))
    mech = LaplaceMechanism(eps=eps, feature_range=(lo, hi), random_state=4).fit(X)
    np.testing.assert_allclose(mech.scale_, 3 * (hi - lo) / eps)
    Z = mech.transform(X)
    var = mech.variance(xs)
    np.testing.assert_allclose(var, 2 * (3 * (hi - lo) / eps) ** 2)
    assert np.all(np.abs(Z.mean(axis=0) - xs) < Z_TOL * np.sqrt(var / N_USERS))
    dev2 = (Z - xs) ** 2
    se_var = dev2.std(axis=0) / np.sqrt(N_USERS)
    assert np.all(np.abs(dev2.mean(axis=0) - var) < Z_TOL * se_var)
    # Laplace, not some other zero-mean law: |noise| ~ Exponential(b), mean b, sd b
    assert np.all(np.abs(np.abs(Z - xs).mean(axis=0) - mech.scale_)
                  < Z_TOL * mech.scale_ / np.sqrt(N_USERS))


@pytest.mark.parametrize("eps", [0.8, 2.0])
def test_empirical_ldp_ratio_at_extremes(eps):
    """Histogram bins of the output for x = lo and x = hi differ by at most e^{eps/d}."""
    d = 2
    X = np.tile([0.0, 1.0], (2 * N_USERS, 1))
    mech = LaplaceMechanism(eps=eps, feature_range=(0, 1), random_state=1).fit(X)
    Z = mech.transform(X)
    b = mech.scale_[0]
    edges = np.linspace(-1.5 * b, 1 + 1.5 * b, 13)
    c_lo, _ = np.histogram(Z[:, 0], edges)
    c_hi, _ = np.histogram(Z[:, 1], edges)
    keep = (c_lo > 200) & (c_hi > 200)
    log_ratio = np.abs(np.log(c_hi[keep] / c_lo[keep]))
    se = np.sqrt(1.0 / c_hi[keep] + 1.0 / c_lo[keep])
    eps_f = eps / d
    assert np.all(log_ratio <= eps_f + Z_TOL * se)
    # outside [lo, hi] the density ratio is exactly e^{eps/d}
    assert np.max(log_ratio - Z_TOL * se) <= eps_f <= np.max(log_ratio + Z_TOL * se)


def test_epsilon_and_paper_per_feature_budget():
    X = np.zeros((3, 5))
    mech = LaplaceMechanism(eps=10.0, feature_range=(0, 1), random_state=0).fit(X)
    assert mech.epsilon_ == 10.0 and mech.epsilon_per_feature_ == 2.0
    np.testing.assert_allclose(mech.variance(0.0), 2 * (1 / 2.0) ** 2)  # Lap(Delta/eps_f)


def test_deterministic_per_node_id_and_sparse_input():
    rng = np.random.default_rng(0)
    X = sp.random(30, 8, density=0.2, random_state=1, format="csr")
    G = GraphData(X, node_ids=rng.permutation(1000)[:30])
    mech = LaplaceMechanism(eps=1.0, feature_range=(0, 1), random_state=3).fit(G)
    full = np.asarray(mech.transform(G))
    # A plain array carries no ids: its rows are not the users the collection was drawn for.
    with pytest.raises(ValueError, match="no known users"):
        mech.transform(X)
    np.testing.assert_array_equal(np.asarray(mech.transform(G[[3, 0]])), full[[3, 0]])
    np.testing.assert_array_equal(
        np.asarray(pickle.loads(pickle.dumps(mech)).transform(G)), full)
    perm = rng.permutation(30)
    G2 = GraphData(X[perm], node_ids=G.all_node_ids[perm], population=G)
    np.testing.assert_array_equal(np.asarray(mech.transform(G2)), full[perm])


def test_eps_inf_no_noise():
    X = np.random.default_rng(0).random((10, 3))
    mech = LaplaceMechanism(eps=np.inf, feature_range=(0, 1), random_state=0).fit(X)
    np.testing.assert_array_equal(mech.transform(X), X)
    assert mech.epsilon_ == np.inf
    np.testing.assert_array_equal(mech.variance(X), 0.0)


@pytest.mark.parametrize("eps, err", [(0, ValueError), (-1, ValueError), (np.nan, ValueError),
                                      ([1.0], TypeError)])
def test_bad_eps(eps, err):
    with pytest.raises(err):
        LaplaceMechanism(eps=eps, feature_range=(0, 1)).fit(np.zeros((3, 2)))


def test_nan_clip_and_bad_range():
    with pytest.raises(ValueError, match="NaN"):
        LaplaceMechanism(eps=1.0, feature_range=(0, 1)).fit(np.array([[np.inf, 0.0]]))
    with pytest.raises(ValueError, match="lo < hi"):
        LaplaceMechanism(eps=1.0, feature_range=(1, 0)).fit(np.zeros((2, 2)))
    mech = LaplaceMechanism(eps=1.0, feature_range=(0, 1), random_state=0)
    with pytest.warns(UserWarning, match="clipped"):
        mech.fit(np.array([[3.0, 0.0]])).transform(np.array([[3.0, 0.0]]))


_EXPECTED_FAILED = EXPECTED_FAILED_PLAIN_ARRAY


@parametrize_with_checks([LaplaceMechanism(eps=1.0, random_state=0),
                          LaplaceMechanism(eps=3.0, feature_range=(-5, 5), random_state=0)],
                         expected_failed_checks=lambda est: _EXPECTED_FAILED)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)


def test_variance_depends_on_x_by_the_rounding_term_only():
    # the docstring said the variance does not depend on x: it does, by the randomized
    # rounding's f (1 - f), a relative 1e-10 or less of 2 b^2 at every budget allowed
    for eps in (2.0 ** -20, 1.0, 30.0):
        mech = LaplaceMechanism(eps=eps, feature_range=(0, 1), random_state=0).fit(
            np.zeros((2, 1)))
        N = mech.grid_cells_
        on_grid, mid_cell = mech.variance(0.0)[0], mech.variance(0.5 / N)[0]
        if eps >= 1:   # (at 2^-20, 2 b^2 = 2^41: a quarter cell squared is below its ulp)
            assert mid_cell - on_grid == pytest.approx(0.25 / N ** 2, rel=1e-3)
        two_b2 = 2 * mech.scale_[0] ** 2
        assert abs(on_grid / two_b2 - 1) <= 1e-10 and abs(mid_cell / two_b2 - 1) <= 1e-10
