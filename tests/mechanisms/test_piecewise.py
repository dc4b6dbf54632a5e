"""Tests of the Piecewise mechanism (paper 000 App. A.3; paper 002 eq. (3) with k-of-d)."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from plain_array_checks import EXPECTED_FAILED_PLAIN_ARRAY
from sklearn.utils.estimator_checks import parametrize_with_checks

from skldp import GraphData
from skldp.exceptions import PrivacyLeakWarning
from skldp.mechanisms import PiecewiseMechanism

N_USERS = 40_000
Z_TOL = 5.0


def _dense(Z):
    return Z.toarray() if sp.issparse(Z) else np.asarray(Z)


@pytest.mark.parametrize("eps, k", [(0.5, 5), (5.0, 5), (1.0, 1), (6.0, 2)])
@pytest.mark.parametrize("lo_hi", [(0.0, 1.0), (-1.0, 3.0)])
def test_unbiased_and_variance_formula(eps, k, lo_hi):
    lo, hi = lo_hi
    xs = lo + (hi - lo) * np.array([0.0, 0.2, 0.5, 0.7, 1.0])
    X = np.tile(xs, (N_USERS, 1))
    mech = PiecewiseMechanism(eps=eps, k=k, feature_range=lo_hi, random_state=6).fit(X)
    Z = _dense(mech.transform(X))
    var = mech.variance(xs)
    d, a = 5, np.exp(eps / (2 * k))
    t = 2 * (xs - lo) / (hi - lo) - 1
    expected = ((hi - lo) / 2) ** 2 * (d * (a + 3) / (3 * k * (a - 1) ** 2)
                                       + (d * a / (k * (a - 1)) - 1) * t ** 2)
    np.testing.assert_allclose(var, expected)
    if k == d:  # paper 000 eq. (27)
        np.testing.assert_allclose(var, (xs - (lo + hi) / 2) ** 2 / (a - 1)
                                   + (a + 3) / (3 * (a - 1) ** 2) * (hi - lo) ** 2 / 4)
    assert np.all(np.abs(Z.mean(axis=0) - xs) < Z_TOL * np.sqrt(var / N_USERS))
    dev2 = (Z - xs) ** 2
    se_var = dev2.std(axis=0) / np.sqrt(N_USERS)
    assert np.all(np.abs(dev2.mean(axis=0) - var) < Z_TOL * se_var)


@pytest.mark.parametrize("eps", [1.0, 3.0])
def test_output_support(eps):
    X = np.random.default_rng(0).random((2000, 3))
    mech = PiecewiseMechanism(eps=eps, k=3, feature_range=(0, 1), random_state=0).fit(X)
    t_star = 2 * mech.transform(X) - 1
    a = np.exp(eps / 3 / 2)  # eps / k per feature
    C = (a + 1) / (a - 1)
    assert np.all(np.abs(t_star) <= C + 1e-12)
    # central piece [l(t), r(t)] holds a fraction e^{eps/2}/(e^{eps/2}+1) of the reports
    t = 2 * X - 1
    left = (C + 1) / 2 * t - (C - 1) / 2
    inside = (t_star >= left) & (t_star <= left + C - 1)
    p = a / (a + 1)
    assert abs(inside.mean() - p) < Z_TOL * np.sqrt(p * (1 - p) / X.size)


@pytest.mark.parametrize("eps, k", [(1.0, 2), (3.0, 1)])
def test_empirical_ldp_ratio_at_extremes(eps, k):
    """Bins of t* for x = lo and x = hi differ by at most e^{eps/k}, attained on [1, C]."""
    d = 2
    X = np.tile([0.0, 1.0], (2 * N_USERS, 1))
    mech = PiecewiseMechanism(eps=eps, k=k, feature_range=(0, 1), random_state=2).fit(X)
    Z = _dense(mech.transform(X))
    # keep the sampled coordinates, map back to t* in [-C, C]
    t_lo = (2 * Z[:, 0] - 1) * k / d
    t_hi = (2 * Z[:, 1] - 1) * k / d
    if k < d:
        t_lo, t_hi = t_lo[Z[:, 0] != 0.5], t_hi[Z[:, 1] != 0.5]
        # sampling does not depend on x
        assert abs(len(t_lo) - len(t_hi)) < Z_TOL * np.sqrt(2 * len(X) * 0.25)
    eps_f = eps / k
    a = np.exp(eps_f / 2)
    C = (a + 1) / (a - 1)
    edges = np.linspace(-C, C, 11)
    c_lo = np.histogram(t_lo, edges)[0] / len(t_lo)
    c_hi = np.histogram(t_hi, edges)[0] / len(t_hi)
    n_lo, n_hi = np.histogram(t_lo, edges)[0], np.histogram(t_hi, edges)[0]
    log_ratio = np.abs(np.log(c_hi / c_lo))
    se = np.sqrt(1.0 / n_lo + 1.0 / n_hi)
    assert np.all(log_ratio <= eps_f + Z_TOL * se)
    assert np.max(log_ratio - Z_TOL * se) <= eps_f <= np.max(log_ratio + Z_TOL * se)


def test_sampling_output_sparse_when_centred_and_dense_otherwise():
    X = sp.random(400, 50, density=0.05, random_state=0, format="csr")
    mech = PiecewiseMechanism(eps=4.0, k=3, feature_range=(-1, 1), random_state=0).fit(X)
    Z = mech.transform(X)
    assert sp.issparse(Z)
    assert np.all(np.diff(Z.indptr) <= 3)
    np.testing.assert_allclose(Z.toarray(), _dense(mech.transform(X.toarray())))
    Zd = PiecewiseMechanism(eps=4.0, k=3, feature_range=(0, 1), random_state=0).fit(X) \
        .transform(X)
    assert isinstance(Zd, np.ndarray)
    np.testing.assert_array_equal((Zd != 0.5).sum(axis=1), 3)


def test_default_k_rule_and_epsilon():
    X = np.zeros((2, 8))
    for eps, k in [(0.5, 1), (2.4, 1), (5.0, 2), (12.6, 5), (100.0, 8)]:
        mech = PiecewiseMechanism(eps=eps, feature_range=(0, 1), random_state=0).fit(X)
        assert mech.k_ == k and mech.epsilon_ == eps
        assert mech.epsilon_per_feature_ == pytest.approx(eps / k)


def test_deterministic_per_node_id():
    rng = np.random.default_rng(0)
    G = GraphData(rng.random((25, 4)), node_ids=np.arange(25) * 7)
    for k in (4, 2):
        mech = PiecewiseMechanism(eps=2.0, k=k, feature_range=(0, 1), random_state=9).fit(G)
        full = np.asarray(mech.transform(G))
        np.testing.assert_array_equal(np.asarray(mech.transform(G[[4, 1]])), full[[4, 1]])
        np.testing.assert_array_equal(
            np.asarray(pickle.loads(pickle.dumps(mech)).transform(G)), full)
        perm = rng.permutation(25)
        G2 = GraphData(G.features[perm], node_ids=G.all_node_ids[perm], population=G)
        np.testing.assert_array_equal(np.asarray(mech.transform(G2)), full[perm])


def test_eps_inf_no_noise():
    X = np.random.default_rng(0).random((10, 3))
    mech = PiecewiseMechanism(eps=np.inf, feature_range=(0, 1), random_state=0).fit(X)
    np.testing.assert_array_equal(mech.transform(X), X)
    assert mech.epsilon_ == np.inf and mech.k_ == 3
    np.testing.assert_array_equal(mech.variance(X), 0.0)


@pytest.mark.parametrize("eps, err", [(0, ValueError), (-0.1, ValueError),
                                      (np.nan, ValueError), ("a", TypeError)])
def test_bad_eps(eps, err):
    with pytest.raises(err):
        PiecewiseMechanism(eps=eps, feature_range=(0, 1)).fit(np.zeros((3, 2)))


@pytest.mark.parametrize("k, err", [(0, ValueError), (5, ValueError), (2.0, TypeError)])
def test_bad_k(k, err):
    with pytest.raises(err):
        PiecewiseMechanism(eps=1.0, k=k, feature_range=(0, 1)).fit(np.zeros((3, 4)))


def test_nan_and_clip():
    with pytest.raises(ValueError, match="NaN"):
        PiecewiseMechanism(eps=1.0, feature_range=(0, 1)).fit(np.array([[np.nan, 0.0]]))
    mech = PiecewiseMechanism(eps=1.0, feature_range=(0, 1), random_state=0)
    with pytest.warns(UserWarning, match="clipped"):
        mech.fit(np.array([[-3.0, 0.0]])).transform(np.array([[-3.0, 0.0]]))


_EXPECTED_FAILED = EXPECTED_FAILED_PLAIN_ARRAY


@parametrize_with_checks([PiecewiseMechanism(eps=1.0, random_state=0),
                          PiecewiseMechanism(eps=6.0, k=2, feature_range=(-5, 5),
                                             random_state=0)],
                         expected_failed_checks=lambda est: _EXPECTED_FAILED)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)
