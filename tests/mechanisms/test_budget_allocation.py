"""Spending the budget where the signal is: HDS's k from its variance, public feature hashing."""

import numpy as np
import pytest
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.exceptions import InvalidParameterError
from skldp.mechanisms import FeatureHashing, HDSMechanism, hds_estimator_variance, hds_optimal_k


@pytest.mark.parametrize("eps, d", [(1.0, 1433), (8.0, 500), (30.0, 100), (2.0, 3)])
def test_optimal_k_minimises_the_estimator_variance(eps, d):
    k = hds_optimal_k(eps, d)
    ks = np.arange(1, min(d, 1000) + 1)
    ks = ks[eps / ks <= 50]
    assert k == ks[np.argmin(hds_estimator_variance(eps, ks, d))]
    assert 1 <= k <= d


@pytest.mark.parametrize("eps, d, max_k, match", [
    (np.nan, 10, None, "eps must be a positive real number, got NaN"),   # was 10
    (-1.0, 10, None, "eps must be > 0"),                                 # was 1
    (0.0, 10, None, "eps must be > 0"),
    ("1", 10, None, "eps must be a positive real number"),    # was numpy's TypeError
    (1.0, 0, None, "d must be an integer >= 1"),                         # was 0
    (1.0, -1, None, "d must be an integer >= 1"),                        # was -1
    (np.inf, 0, None, "d must be an integer >= 1"),
    (1.0, 2.5, None, "d must be an integer"),
    (1.0, 10, 0, "max_k must be an integer >= 1 or None"),
])
def test_optimal_k_refuses_bad_budgets_and_counts(eps, d, max_k, match):
    with pytest.raises(InvalidParameterError, match=match):
        hds_optimal_k(eps, d, max_k)


@pytest.mark.parametrize("eps, k", [(1.0, 1), (8.0, 3), (4.0, 6)])
def test_estimator_variance_matches_the_mechanism_moments(eps, k):
    # report / C is unbiased for x; its variance averaged over x uniform on [-1, 1] is the
    # formula, evaluated here through the fitted mechanism's exact moments on its grid.
    d = 6
    hds = HDSMechanism(eps, k=k, feature_range=(-1, 1), random_state=0).fit(np.zeros((2, d)))
    xs = np.linspace(-1, 1, 2001)
    X = np.repeat(xs[:, None], d, axis=1)
    C = hds.mean(np.ones(d))[0]
    var = np.mean(hds.variance(X)[:, 0]) / C ** 2
    np.testing.assert_allclose(var, hds_estimator_variance(eps, k, d, x2=np.mean(xs ** 2)),
                               rtol=1e-5)


def test_auto_k_is_chosen_from_eps_and_d_only():
    X = np.random.default_rng(0).random((30, 200))
    hds = HDSMechanism(8.0, k="auto", feature_range=(0, 1), random_state=0).fit(X)
    assert hds.k_ == hds_optimal_k(8.0, 200)
    same = HDSMechanism(8.0, k="auto", feature_range=(0, 1), random_state=0).fit(1 - X)
    assert same.k_ == hds.k_                         # no data read
    with pytest.raises(ValueError):
        HDSMechanism(8.0, k="best", feature_range=(0, 1)).fit(X)


def test_feature_hashing_is_public_bounded_and_costs_no_budget():
    rng = np.random.default_rng(0)
    X = (rng.random((50, 300)) < 0.05).astype(float)
    h1 = FeatureHashing(16, random_state=3).fit(X)
    h0 = FeatureHashing(16, random_state=3).fit(np.zeros_like(X))
    np.testing.assert_array_equal(h1.bucket_, h0.bucket_)   # the map ignores the values
    np.testing.assert_array_equal(h1.sign_, h0.sign_)
    Z = h1.transform(X)
    assert Z.shape == (50, 16) and np.abs(Z).max() <= 1.0
    # exactly the signed sums, clipped
    ref = np.zeros((50, 16))
    np.add.at(ref.T, h1.bucket_, (X * h1.sign_).T)
    np.testing.assert_allclose(Z, np.clip(ref, -1, 1))
    G = GraphData(X, node_ids=np.arange(50))
    pipe = Pipeline([("hash", FeatureHashing(16)),
                     ("hds", HDSMechanism(1.0, k=1, feature_range=(-1, 1), random_state=0))])
    pipe.fit(G)
    assert pipe.transform(G).shape == (50, 16)
    assert privacy_report(pipe).local_epsilon == 1.0
    with pytest.raises(TypeError, match="public"):
        FeatureHashing(16, random_state=None).fit(X)
    with pytest.raises(ValueError, match="NaN"):
        h1.transform(np.where(X > 0, np.nan, 0.0))


def test_hds_estimator_variance_stays_finite_at_huge_budgets():
    # b underflowed to 0 above about 709 per coordinate: the variance came out inf
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = hds_estimator_variance(np.array([29.99, 30.01, 700.0, 800.0, 1e5]), 1, 10, x2=0.0)
    # the grid's wave keeps one cell past eps' ~ 19: the variance stops falling where the
    # outside's probability vanishes
    assert np.all(np.isfinite(v)) and np.all(np.diff(v) <= 0) and v[1] > v[2]


@pytest.mark.parametrize("x2", [-0.5, -100.0, 1.5, np.nan, np.inf, True, "0.3",
                                [0.2, -0.1]])
def test_hds_estimator_variance_refuses_a_mean_square_outside_0_1(x2):
    # x2 = E[x^2] of an input scaled to [-1, 1]: -100 gave a negative variance (-2157.6),
    # NaN NaN, True was read as 1 and "0.3" was numpy's TypeError
    with pytest.raises(InvalidParameterError, match=r"x2 must be .*\[0, 1\]"):
        hds_estimator_variance(1.0, 2, 10, x2=x2)


def test_hds_estimator_variance_takes_a_mean_square_in_0_1():
    v = hds_estimator_variance(1.0, 2, 10, x2=np.array([0.0, 0.5, 1.0]))
    assert v.shape == (3,) and np.all(v > 0) and np.all(np.diff(v) > 0)
    assert hds_estimator_variance(1.0, 2, 10, x2=1) == v[2]
