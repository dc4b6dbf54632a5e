"""Tests of the multi-bit mechanism (paper 003 eqs. (7)-(8); paper 002 eq. (4))."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from plain_array_checks import EXPECTED_FAILED_PLAIN_ARRAY
from sklearn.utils.estimator_checks import parametrize_with_checks

from skldp import GraphData
from skldp.exceptions import PrivacyLeakWarning
from skldp.mechanisms import MultiBitMechanism

N_USERS = 40_000
Z_TOL = 5.0


def _constant_columns(values, n=N_USERS):
    return np.tile(np.asarray(values, dtype=np.float64), (n, 1))


@pytest.mark.parametrize("eps, m", [(0.5, 1), (2.0, 2), (6.0, 5)])
@pytest.mark.parametrize("lo_hi", [(0.0, 1.0), (-3.0, 1.0)])
def test_unbiased_and_variance_formula(eps, m, lo_hi):
    lo, hi = lo_hi
    xs = lo + (hi - lo) * np.array([0.0, 0.25, 0.5, 0.8, 1.0])
    X = _constant_columns(xs)
    mech = MultiBitMechanism(eps=eps, m=m, feature_range=lo_hi, random_state=2).fit(X)
    Z = mech.transform(X)
    Z = Z.toarray() if sp.issparse(Z) else Z
    var = mech.variance(xs)
    d = len(xs)
    c = (np.exp(eps / m) + 1) / (np.exp(eps / m) - 1)
    np.testing.assert_allclose(var, d / m * ((hi - lo) / 2) ** 2 * c ** 2
                               - (xs - (lo + hi) / 2) ** 2)
    assert np.all(np.abs(Z.mean(axis=0) - xs) < Z_TOL * np.sqrt(var / N_USERS))
    dev2 = (Z - xs) ** 2
    se_var = dev2.std(axis=0) / np.sqrt(N_USERS)
    assert np.all(np.abs(dev2.mean(axis=0) - var) <= Z_TOL * se_var + 1e-9 * var)


def test_exactly_m_sampled_coordinates_and_rectifier_values():
    rng = np.random.default_rng(0)
    X = rng.random((300, 12))
    mech = MultiBitMechanism(eps=3.0, m=3, feature_range=(0, 1), random_state=0).fit(X)
    Z = mech.transform(X)
    assert isinstance(Z, np.ndarray)  # mid = 0.5 != 0: dense by definition
    sampled = Z != 0.5
    np.testing.assert_array_equal(sampled.sum(axis=1), 3)
    e = np.exp(1.0)
    v = 12 / 3 * 0.5 * (e + 1) / (e - 1)
    np.testing.assert_allclose(np.abs(Z[sampled] - 0.5), v)


@pytest.mark.parametrize("d, m", [(5, 2), (6, 3), (70, 66)])
def test_sampled_subsets_are_uniform(d, m):
    """Every feature is sampled with probability m/d, every pair with m(m-1)/(d(d-1))."""
    from skldp.device._random import _FLOYD_MAX_K, sample_columns
    n = 30_000
    S = sample_columns(11, np.arange(n, dtype=np.uint64), d, m)
    assert (m > _FLOYD_MAX_K) == (d == 70)  # both code paths are covered
    assert np.all(np.diff(np.sort(S, axis=1), axis=1) > 0)  # distinct
    onehot = np.zeros((n, d))
    onehot[np.arange(n)[:, None], S] = 1
    p1 = m / d
    assert np.all(np.abs(onehot.mean(axis=0) - p1) < Z_TOL * np.sqrt(p1 * (1 - p1) / n))
    if d <= 6:
        pairs = (onehot.T @ onehot / n)[np.triu_indices(d, 1)]
        p2 = m * (m - 1) / (d * (d - 1))
        assert np.all(np.abs(pairs - p2) < Z_TOL * np.sqrt(p2 * (1 - p2) / n))


def test_sparse_output_when_range_is_centred_on_zero():
    X = sp.random(500, 40, density=0.05, random_state=0, format="csr") * 2 - 0  # in [0, 2]
    mech = MultiBitMechanism(eps=2.0, m=2, feature_range=(-2, 2), random_state=0).fit(X)
    Z = mech.transform(X)
    assert sp.issparse(Z) and Z.format == "csr"
    np.testing.assert_array_equal(np.diff(Z.indptr), 2)
    # same reports from dense input
    np.testing.assert_array_equal(Z.toarray(), mech.transform(X.toarray()).toarray())
    # m/d too large -> dense
    dense = MultiBitMechanism(eps=2.0, m=20, feature_range=(-2, 2), random_state=0).fit(X)
    assert isinstance(dense.transform(X), np.ndarray)


@pytest.mark.parametrize("eps, m", [(1.0, 1), (4.0, 2)])
def test_empirical_ldp_ratio_at_extremes(eps, m):
    """Per sampled feature: P(+1 | lo) / P(+1 | hi) within e^{eps/m}; the 0 (unsampled)
    outcome has the same probability for both inputs."""
    d = 4
    X = _constant_columns([0.0, 1.0, 0.0, 1.0])
    mech = MultiBitMechanism(eps=eps, m=m, feature_range=(0, 1), random_state=5).fit(X)
    Z = mech.transform(X)
    out = np.sign(np.round(Z - 0.5, 12))  # -1, 0 (unsampled), +1
    eps_f = eps / m
    for value in (-1.0, 1.0, 0.0):
        p_lo = np.mean(out[:, [0, 2]] == value)
        p_hi = np.mean(out[:, [1, 3]] == value)
        n = 2 * N_USERS
        log_ratio = abs(np.log(p_hi / p_lo))
        se = np.sqrt((1 - p_lo) / (n * p_lo) + (1 - p_hi) / (n * p_hi))
        bound = 0.0 if value == 0 else eps_f
        assert log_ratio <= bound + Z_TOL * se
        if value != 0:
            assert log_ratio >= eps_f - Z_TOL * se
    assert np.mean(out != 0) == pytest.approx(m / d)


def test_default_m_rule():
    X = np.zeros((2, 10))
    for eps, m in [(0.5, 1), (2.17, 1), (4.4, 2), (9.0, 4), (100.0, 10)]:
        mech = MultiBitMechanism(eps=eps, feature_range=(0, 1), random_state=0).fit(X)
        assert mech.m_ == m and mech.epsilon_ == eps
        assert mech.epsilon_per_feature_ == pytest.approx(eps / m)


def test_deterministic_per_node_id():
    rng = np.random.default_rng(0)
    n = 40
    A = sp.random(n, n, density=0.1, random_state=0, format="csr")
    G = GraphData(rng.random((n, 6)), (A + A.T) > 0, node_ids=[f"u{i}" for i in range(n)])
    mech = MultiBitMechanism(eps=2.0, m=2, feature_range=(0, 1), random_state=3).fit(G)
    full = np.asarray(mech.transform(G))
    np.testing.assert_array_equal(np.asarray(mech.transform(G[[7, 1]])), full[[7, 1]])
    np.testing.assert_array_equal(
        np.asarray(pickle.loads(pickle.dumps(mech)).transform(G)), full)
    perm = rng.permutation(n)
    G2 = GraphData(G.features[perm], node_ids=G.all_node_ids[perm], population=G)
    np.testing.assert_array_equal(np.asarray(mech.transform(G2)), full[perm])


def test_eps_inf_no_noise():
    X = np.random.default_rng(0).random((10, 3))
    mech = MultiBitMechanism(eps=np.inf, feature_range=(0, 1), random_state=0).fit(X)
    np.testing.assert_array_equal(mech.transform(X), X)
    assert mech.epsilon_ == np.inf
    np.testing.assert_array_equal(mech.variance(X), 0.0)


@pytest.mark.parametrize("eps, err", [(0, ValueError), (-2.0, ValueError),
                                      (np.nan, ValueError), (None, TypeError)])
def test_bad_eps(eps, err):
    with pytest.raises(err):
        MultiBitMechanism(eps=eps, feature_range=(0, 1)).fit(np.zeros((3, 2)))


@pytest.mark.parametrize("m, err", [(0, ValueError), (3, ValueError), (1.5, TypeError),
                                    (True, TypeError)])
def test_bad_m(m, err):
    with pytest.raises(err):
        MultiBitMechanism(eps=1.0, m=m, feature_range=(0, 1)).fit(np.zeros((3, 2)))


def test_nan_and_clip():
    with pytest.raises(ValueError, match="NaN"):
        MultiBitMechanism(eps=1.0, feature_range=(0, 1)).fit(np.array([[np.nan, 0.0]]))
    mech = MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)
    with pytest.warns(UserWarning, match="clipped"):
        mech.fit(np.array([[3.0, 0.0]])).transform(np.array([[3.0, 0.0]]))


_EXPECTED_FAILED = EXPECTED_FAILED_PLAIN_ARRAY


@parametrize_with_checks([MultiBitMechanism(eps=1.0, random_state=0),
                          MultiBitMechanism(eps=4.0, m=2, feature_range=(-5, 5),
                                            random_state=0)],
                         expected_failed_checks=lambda est: _EXPECTED_FAILED)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)
