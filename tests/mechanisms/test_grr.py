"""Tests of GRR-FS (Bhaila et al., SDM 2024, §IV-A, eqs. (5)-(8)), its budget and preprocessing."""

import itertools
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats
from sklearn.utils.estimator_checks import parametrize_with_checks

from skldp import GraphData
from skldp.exceptions import InvalidParameterError, PrivacyLeakWarning
from skldp.mechanisms import (
    FeatureGrouper,
    GRRFSMechanism,
    discretize,
    group_features,
    grrfs_epsilon,
    grrfs_paper_epsilon,
    quantile_bin_edges,
)


def _population(n, freqs, d, rng):
    """n users; feature 0 follows ``freqs``, the others are uniform on 0..2."""
    X = rng.integers(0, 3, size=(n, d)).astype(float)
    X[:, 0] = rng.choice(len(freqs), size=n, p=freqs)
    return X


@pytest.mark.parametrize("eps, paper", [(1.0, 8.3), (0.1, 0.3), (0.01, 0.02)])
def test_epsilon_is_m_eps_and_paper_value_kept_for_comparison(eps, paper):
    # Paper §V-A3: CiteSeer after grouping has d = 53, m = 10, per-feature eps in
    # {1, 0.1, 0.01}; Theorem 1 gives the paper's {8.3, 0.3, 0.02}, the sound
    # per-user budget is m * eps = {10, 1, 0.1}.
    digits = 2 if paper < 0.1 else 1
    assert round(grrfs_paper_epsilon(eps, 10, 53), digits) == paper
    assert grrfs_epsilon(eps, 10, 53) == pytest.approx(10 * eps)
    X = np.zeros((3, 53))
    mech = GRRFSMechanism(eps, m=10, domain_sizes=2, random_state=0).fit(X)
    assert mech.epsilon_ == pytest.approx(10 * eps)
    assert mech.paper_epsilon_ == pytest.approx(np.log1p(10 / 53 * np.expm1(10 * eps)))
    assert mech.paper_epsilon_ < mech.epsilon_
    assert mech.protects_ == ("features",)


def test_epsilon_limits():
    # m = d: both are d * eps (no sampling); eps = inf: no privacy.
    assert grrfs_epsilon(0.5, 4, 4) == grrfs_paper_epsilon(0.5, 4, 4) == pytest.approx(2.0)
    assert grrfs_epsilon(0.5, 1, 4) == 0.5
    assert grrfs_paper_epsilon(0.5, 1, 4) < 0.5
    assert np.isinf(grrfs_epsilon(np.inf, 1, 4)) and np.isinf(grrfs_paper_epsilon(np.inf, 1, 4))
    with pytest.raises(ValueError, match=r"m must be an integer in 1\.\.4 \(d\)"):
        grrfs_epsilon(1.0, 5, 4)


@pytest.mark.parametrize("eps, m, d", [(50.0, 15, 20), (100.0, 8, 10), (1000.0, 1, 10 ** 9)])
def test_paper_epsilon_past_exp_overflow(eps, m, d):
    # e^(m eps) overflowed to inf past m eps ~ 709.8; ln(1 + (m/d)(e^(m eps) - 1)) is
    # m eps + ln(m/d) there, up to a relative e^-(m eps)
    assert grrfs_paper_epsilon(eps, m, d) == pytest.approx(m * eps + np.log(m / d), rel=1e-15)


def test_paper_epsilon_of_a_mechanism_past_exp_overflow():
    mech = GRRFSMechanism(50.0, m=15, domain_sizes=2, random_state=0).fit(np.zeros((2, 20)))
    assert mech.paper_epsilon_ == pytest.approx(750.0 + np.log(15 / 20), rel=1e-15)  # was inf


@pytest.mark.parametrize("func", [grrfs_epsilon, grrfs_paper_epsilon])
@pytest.mark.parametrize("eps, m, d, match", [
    ("1", 2, 4, "eps must be a positive real number"),   # was '1' * 2 + ... = 11.0
    (-1.0, 2, 4, "eps must be > 0"),                    # was -2.0
    (np.nan, 2, 4, "eps must be a positive real number, got NaN"),
    (True, 2, 4, "eps must be a positive real number"),
    (1.0, 0, 4, "m must be an integer in 1..4"),        # was 0.0
    (1.0, 5, 4, "m must be an integer in 1..4"),
    (1.0, 1.5, 4, "m must be an integer"),
    (1.0, 1, 0, "d must be an integer >= 1"),
])
def test_epsilon_functions_refuse_bad_budgets_and_counts(func, eps, m, d, match):
    with pytest.raises(InvalidParameterError, match=match):
        func(eps, m, d)


def test_grrfs_epsilon_checks_m_without_d():
    with pytest.raises(InvalidParameterError, match="m must be an integer >= 1"):
        grrfs_epsilon(1.0, 0)
    assert grrfs_epsilon(1.0, 3) == 3.0


def _exact_log_ratio(eps, m, sizes):
    """Largest ln P(y|x) / P(y|x') over all inputs x, x' and outputs y, by enumeration.

    P(y|x) is the average over the C(d, m) sampled subsets S of
    prod_{j in S} GRR_j(y_j|x_j) * prod_{j not in S} 1/c_j (paper eq. (4)).
    """
    d = len(sizes)
    domain = np.array(list(itertools.product(*[range(c) for c in sizes])))   # (K, d)
    c = np.asarray(sizes, dtype=float)
    p, q = np.exp(eps) / (np.exp(eps) + c - 1), 1 / (np.exp(eps) + c - 1)
    # per-feature probability of output y_j given input x_j: (K_x, K_y, d)
    same = domain[:, None, :] == domain[None, :, :]
    grr = np.where(same, p, q)
    unif = np.broadcast_to(1 / c, grr.shape)
    P = np.zeros(grr.shape[:2])
    subsets = list(itertools.combinations(range(d), m))
    for S in subsets:
        mask = np.zeros(d, dtype=bool)
        mask[list(S)] = True
        P += np.prod(np.where(mask, grr, unif), axis=2)
    P /= len(subsets)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    logP = np.log(P)                                        # (x, y)
    return float((logP[:, None, :] - logP[None, :, :]).max())


@pytest.mark.parametrize("eps, m, sizes", [(2.0, 1, (2, 2)), (0.7, 1, (2, 3, 2)),
                                           (0.7, 2, (2, 3, 2)), (1.3, 2, (3, 2, 2, 2)),
                                           (0.4, 3, (2, 2, 2, 2)), (1.0, 1, (4, 2, 3))])
def test_epsilon_equals_brute_force_worst_case(eps, m, sizes):
    # The exact worst case over all pairs of inputs and all outputs is m * eps
    # (grrfs_epsilon's proof), strictly above Theorem 1's value when m < d.
    worst = _exact_log_ratio(eps, m, sizes)
    X = np.zeros((2, len(sizes)))
    mech = GRRFSMechanism(eps, m=m, domain_sizes=list(sizes), random_state=0).fit(X)
    assert worst == pytest.approx(mech.epsilon_, rel=1e-9)
    assert worst > mech.paper_epsilon_ + 0.1


def test_empirical_ldp_ratio_exceeds_paper_epsilon():
    # d = 2 binary features, m = 1, eps = 2; x = (0, 0) and x' = (1, 1) differ in
    # every feature. The most likely output under x is y = x, with P(y|x) = p/2 and
    # P(y|x') = q/2: ratio e^2. Theorem 1 claims ln(1 + (e^2 - 1)/2) = 1.43.
    # Reports of distinct node ids are independent draws of the mechanism.
    n, alpha = 20000, 1e-6
    mech = GRRFSMechanism(2.0, m=1, domain_sizes=2, random_state=0)
    Gx = GraphData(np.zeros((n, 2)), node_ids=np.arange(n))
    Gx2 = GraphData(np.ones((n, 2)), node_ids=np.arange(n, 2 * n), population=Gx)
    mech.fit(Gx)
    hits = [int(np.all(np.asarray(mech.transform(G)) == 0, axis=1).sum()) for G in (Gx, Gx2)]

    def clopper_pearson(k):   # exact two-sided interval at level 1 - alpha / 2 each
        return (stats.beta.ppf(alpha / 4, k, n - k + 1),
                stats.beta.ppf(1 - alpha / 4, k + 1, n - k))

    (lo1, hi1), (lo2, hi2) = clopper_pearson(hits[0]), clopper_pearson(hits[1])
    log_ratio_lo, log_ratio_hi = np.log(lo1 / hi2), np.log(hi1 / lo2)
    assert log_ratio_lo > mech.paper_epsilon_      # the paper's budget is violated
    assert log_ratio_lo <= mech.epsilon_           # no evidence against m * eps ...
    assert log_ratio_hi >= mech.epsilon_           # ... which is attained (true ratio = e^2)


def test_report_distribution_matches_eq8():
    rng = np.random.default_rng(0)
    n, d, m, c, eps = 40000, 5, 2, 4, 1.0
    f = np.array([0.5, 0.3, 0.15, 0.05])
    X = _population(n, f, d, rng)
    f_emp = np.bincount(X[:, 0].astype(int), minlength=c) / n
    mech = GRRFSMechanism(eps, m=m, domain_sizes=[c, 3, 3, 3, 3], random_state=1).fit(X)
    R = mech.transform(X)
    assert set(np.unique(R[:, 0])) <= set(range(c))
    observed = np.bincount(R[:, 0].astype(int), minlength=c) / n
    p, q = np.exp(eps) / (np.exp(eps) + c - 1), 1 / (np.exp(eps) + c - 1)
    P = (m / d) * (q + f_emp * (p - q)) + (1 - m / d) / c      # eq. (8), DESIGN.md §4
    np.testing.assert_allclose(mech.report_probabilities(f_emp, 0), P)
    se = np.sqrt(P * (1 - P) / n)
    assert np.all(np.abs(observed - P) < 5 * se)
    # Exactly m features per user went through GRR: a user's reports of the
    # uniform columns keep their true value w.p. (m/d) p + (1 - m/d)/3.
    keep = np.mean(R[:, 1:] == X[:, 1:])
    p3 = np.exp(eps) / (np.exp(eps) + 2)
    expected = (m / d) * p3 + (1 - m / d) / 3
    assert abs(keep - expected) < 5 * np.sqrt(expected * (1 - expected) / (n * (d - 1)))


def _variance_z(est, var):
    """z of a sample variance of the rows of ``est`` against ``var`` (s.e. from the 4th
    moment)."""
    R = len(est)
    m = est.mean(axis=0)
    v = est.var(axis=0, ddof=1)
    return (v - var) / np.sqrt((np.mean((est - m) ** 4, axis=0) - v ** 2) / R)


def test_frequency_variance_fixed_users_and_sampled_users():
    # R blocks of n users; a block's estimate is one draw of estimate_frequencies. Fixed
    # users: every block holds the same codes (frequencies f), only the reports vary.
    # Sampled users: each block's codes are drawn i.i.d. from f (eq. (6)). The two
    # differ by f(1-f)/n, 10-28 % here: each is tested against its own scheme at 4 s.e.
    n, R, d, m, c, eps = 20, 15000, 4, 2, 3, 3.0
    f = np.array([0.6, 0.3, 0.1])
    rng = np.random.default_rng(1)
    block = np.repeat(np.arange(c), (f * n).astype(int))
    fixed = np.tile(block, R)
    sampled = rng.choice(c, size=n * R, p=f)
    X = np.column_stack([np.concatenate([fixed, sampled]),
                         rng.integers(0, c, size=(2 * n * R, d - 1))]).astype(float)
    mech = GRRFSMechanism(eps, m=m, domain_sizes=c, random_state=2).fit(X)
    codes = mech.transform(X)[:, 0].astype(np.int64).reshape(2 * R, n)
    observed = np.stack([(codes == k).mean(axis=1) for k in range(c)], axis=1)
    est = mech.invert_observed(observed, 0)
    for e, users in ((est[:R], "fixed"), (est[R:], "sampled")):
        var = mech.frequency_variance(f, 0, n, users=users)
        assert np.all(np.abs(e.mean(axis=0) - f) < 4 * np.sqrt(var / R)), users
        assert np.all(np.abs(_variance_z(e, var)) < 4), (users, _variance_z(e, var))
    np.testing.assert_allclose(mech.frequency_variance(f, 0, n),
                               mech.frequency_variance(f, 0, n, users="fixed")
                               + f * (1 - f) / n, rtol=1e-12)
    # the same estimate as estimate_frequencies, and 1/n
    np.testing.assert_allclose(mech.estimate_frequencies(codes[0], 0), est[0])
    np.testing.assert_allclose(mech.frequency_variance(f, 0, 2 * n, users="fixed"),
                               mech.frequency_variance(f, 0, n, users="fixed") / 2)
    with pytest.raises(ValueError, match="users"):
        mech.frequency_variance(f, 0, n, users="iid")


def test_deterministic_per_node_and_subset_invariant():
    rng = np.random.default_rng(3)
    X = rng.integers(0, 3, size=(50, 6)).astype(float)
    A = sp.random(50, 50, density=0.1, random_state=0)
    G = GraphData(X, A + A.T, node_ids=np.arange(100, 150))
    mech = GRRFSMechanism(0.5, m=3, domain_sizes=3, random_state=7).fit(G)
    full = np.asarray(mech.transform(G))
    sub = np.asarray(mech.transform(G[[10, 3, 40]]))
    np.testing.assert_array_equal(sub, full[[10, 3, 40]])
    again = pickle.loads(pickle.dumps(mech))
    np.testing.assert_array_equal(np.asarray(again.transform(G)), full)
    other = GRRFSMechanism(0.5, m=3, domain_sizes=3, random_state=8).fit(G)
    assert np.any(np.asarray(other.transform(G)) != full)
    # sparse input gives the same reports as dense (each fitted on its own array)
    mech_dense = GRRFSMechanism(0.5, m=3, domain_sizes=3, random_state=7).fit(X)
    mech_sparse = GRRFSMechanism(0.5, m=3, domain_sizes=3, random_state=7).fit(sp.csr_matrix(X))
    np.testing.assert_array_equal(mech_sparse.transform(sp.csr_matrix(X)),
                                  mech_dense.transform(X))
    # a plain array is keyed by position: another array holds other users and is refused
    with pytest.raises(ValueError, match="fitted on another array"):
        mech_dense.transform(X[::-1])
    with pytest.raises(ValueError, match="fitted on other users"):
        mech.transform(X)


def test_eps_inf_and_m_equals_d_is_identity():
    X = np.random.default_rng(0).integers(0, 4, size=(30, 3)).astype(float)
    mech = GRRFSMechanism(np.inf, m=3, domain_sizes=4, random_state=0).fit(X)
    np.testing.assert_array_equal(mech.transform(X), X)


def test_categories_map_values_to_codes():
    X = np.array([[10.0, 5.0], [20.0, 7.0], [30.0, 5.0]])
    mech = GRRFSMechanism(np.inf, m=2, categories=[[10, 20, 30], [5, 7]], random_state=0).fit(X)
    np.testing.assert_array_equal(mech.transform(X), [[0, 0], [1, 1], [2, 0]])
    np.testing.assert_array_equal(mech.domain_sizes_, [3, 2])
    # a new user (its own node id) whose value is outside the public categories
    mech = GRRFSMechanism(np.inf, m=2, categories=[[10, 20, 30], [5, 7]], random_state=0)
    G = GraphData(X, node_ids=[1, 2, 3])
    mech.fit(G)
    with pytest.raises(ValueError, match="column 1.*not in its categories"):
        mech.transform(GraphData(np.array([[10.0, 6.0]]), node_ids=[4], population=G))


def test_bin_edges_discretise_continuous_columns():
    X = np.array([[0.1, 1.0], [0.7, 0.0], [2.5, 1.0]])
    mech = GRRFSMechanism(np.inf, m=2, domain_sizes=[3, 2], bin_edges={0: [0.5, 1.0]},
                          random_state=0).fit(X)
    np.testing.assert_array_equal(mech.transform(X), [[0, 1], [1, 0], [2, 1]])
    np.testing.assert_array_equal(discretize(X, [None, [0.5]]), [[0.1, 1], [0.7, 0], [2.5, 1]])
    with pytest.warns(PrivacyLeakWarning):
        edges = quantile_bin_edges(np.arange(100.0)[:, None], 4)
    np.testing.assert_allclose(edges[0], [24.75, 49.5, 74.25])


def test_group_features_matches_paper_dimensions():
    for d, size, expected in [(3703, 70, 53), (1433, 25, 58), (4714, 100, 48)]:
        assert group_features(sp.csr_matrix((2, d)), size).shape == (2, expected)
    X = sp.csr_matrix(np.array([[0, 0, 3, 0, 0], [1, 0, 0, 0, 1]]))
    np.testing.assert_array_equal(group_features(X, 2), [[0, 1, 0], [1, 0, 1]])
    G = GraphData(X)
    out = FeatureGrouper(group_size=2).fit(G).transform(G[[1]])
    np.testing.assert_array_equal(np.asarray(out), [[1, 0, 1]])
    with pytest.raises(ValueError, match="group_size"):
        group_features(X, 0)


@pytest.mark.parametrize("sparse", [False, True])
def test_group_features_refuses_non_finite_input_as_feature_grouper(sparse):
    # a NaN next to a 1 made the group 0 (abs(X) @ M is NaN, and NaN > 0 is False)
    X = np.array([[np.nan, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, np.inf]])
    X = sp.csr_matrix(X) if sparse else X
    with pytest.raises(ValueError, match="NaN or infinite"):
        group_features(X, 2)
    with pytest.raises(ValueError, match="NaN"):
        FeatureGrouper(group_size=2).fit_transform(X)


def test_bad_input():
    X = np.array([[0.0, 1.0], [1.0, 0.0]])
    eps_range = r"The 'eps' parameter of GRRFSMechanism must be a float in the range \(0.0, inf\]"
    with pytest.raises(InvalidParameterError, match=eps_range):
        GRRFSMechanism(0.0, m=1, domain_sizes=2).fit(X)
    with pytest.raises(InvalidParameterError, match=eps_range):
        GRRFSMechanism(-1.0, m=1, domain_sizes=2).fit(X)
    with pytest.raises(InvalidParameterError, match=r"The 'm' parameter of GRRFSMechanism"):
        GRRFSMechanism(1.0, m=0, domain_sizes=2).fit(X)
    with pytest.raises(ValueError, match="m must be an integer in 1..2"):
        GRRFSMechanism(1.0, m=3, domain_sizes=2).fit(X)
    with pytest.raises(ValueError, match="domain size must be >= 2"):
        GRRFSMechanism(1.0, m=1, domain_sizes=[2, 1]).fit(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="outside its domain"):
        GRRFSMechanism(1.0, m=1, domain_sizes=2).fit(np.array([[0.0, 2.0]]))
    G = GraphData(np.array([[0.0, 0.5], [1.0, 1.0]]), feature_names=["ok", "income"])
    with pytest.raises(ValueError, match=r"column 1 \('income'\) is not categorical"):
        GRRFSMechanism(1.0, m=1, domain_sizes=2).fit(G)
    with pytest.raises(ValueError, match="negative code"):
        GRRFSMechanism(1.0, m=1, domain_sizes=2).fit(np.array([[0.0, -1.0]]))
    with pytest.warns(PrivacyLeakWarning):
        mech = GRRFSMechanism(1.0, m=1, random_state=0).fit(np.array([[0.0, 4.0], [1, 0]]))
    np.testing.assert_array_equal(mech.domain_sizes_, [2, 5])


_OTHER_ARRAY = ("plain arrays are keyed by position; transforming another array than the one "
                "fitted raises, since its rows are other users")


def _expected_failures(est):
    if isinstance(est, GRRFSMechanism):
        # each transforms an array other than the fitted one: a reordered or sub-sampled
        # copy, or X_test after fitting on X_train
        return {"check_methods_sample_order_invariance": _OTHER_ARRAY,
                "check_methods_subset_invariance": _OTHER_ARRAY,
                "check_fit_idempotent": _OTHER_ARRAY}
    return {}


@parametrize_with_checks([GRRFSMechanism(1.0, m=1, bin_edges=[-1.0, 0.0, 1.0], random_state=0),
                          FeatureGrouper(group_size=2)],
                         expected_failed_checks=_expected_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_shared_public_edges_need_no_domain_sizes():
    X = np.array([[-2.0, 0.5], [0.3, 3.0]])
    mech = GRRFSMechanism(np.inf, m=2, bin_edges=[0.0, 1.0], random_state=0)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        mech.fit(X)
    np.testing.assert_array_equal(mech.domain_sizes_, [3, 3])
    np.testing.assert_array_equal(mech.transform(X), [[0, 1], [1, 2]])


def test_domain_sizes_are_checked_before_the_codes():
    XB = (np.random.default_rng(0).random((10, 6)) > 0.5).astype(float)
    with pytest.raises(ValueError,
                       match=r"domain_sizes must have one entry per feature \(6\), got 2"):
        GRRFSMechanism(domain_sizes=[2, 2], random_state=0).fit_transform(XB)
    with pytest.raises(ValueError, match="one entry per feature"):
        GRRFSMechanism(domain_sizes=[[2] * 6], random_state=0).fit(XB)
    for bad in (-1, 1, 0):
        with pytest.raises(ValueError, match=r"every domain size must be >= 2; column 0 has"):
            GRRFSMechanism(domain_sizes=bad, random_state=0).fit_transform(XB)
    G = GraphData(XB, feature_names=list("abcdef"))
    with pytest.raises(ValueError, match=r"domain size must be >= 2; column 2 \('c'\) has 1"):
        GRRFSMechanism(domain_sizes=[2, 2, 1, 2, 2, 2], random_state=0).fit(G)
    # a scalar still applies to every feature
    mech = GRRFSMechanism(domain_sizes=3, random_state=0).fit(XB)
    np.testing.assert_array_equal(mech.domain_sizes_, [3] * 6)


def test_estimate_frequencies_refuses_codes_outside_domain():
    # codes >= c_j were counted without a bin, fractions truncated, negatives a numpy error
    X = np.array([[0, 1], [1, 0], [1, 1], [0, 0]], float)
    mech = GRRFSMechanism(np.inf, m=2, domain_sizes=2, random_state=0).fit(X)
    np.testing.assert_allclose(mech.estimate_frequencies(np.array([0, 1, 1, 1]), 0),
                               [0.25, 0.75])
    for bad in ([0, 1, 7, 9], [0.0, 0.9, 1.5, 1.0], [0, -1], [0, np.nan]):
        with pytest.raises(ValueError, match="integer codes 0..1"):
            mech.estimate_frequencies(np.array(bad), 0)


def test_estimate_frequencies_1d_needs_j():
    X = np.array([[0, 1], [1, 0]], float)
    mech = GRRFSMechanism(np.inf, m=2, domain_sizes=2, random_state=0).fit(X)
    with pytest.raises(ValueError, match="pass its index j"):
        mech.estimate_frequencies(np.array([0, 1]))
    with pytest.raises(ValueError, match="2 columns"):
        mech.estimate_frequencies(np.zeros((2, 3)))
    assert len(mech.estimate_frequencies(X)) == 2


def test_domain_sizes_read_from_the_data_are_a_read_in_the_clear():
    import warnings

    from sklearn.pipeline import Pipeline

    from skldp.accounting import privacy_report
    from skldp.models import MLPHead
    from skldp.population import BudgetExceededError
    X = np.random.default_rng(3).integers(0, 3, size=(30, 4)).astype(float)
    X[7, 1] = 9.0                                  # one user's code fixes a public size
    line = ("GRRFSMechanism(domain_sizes=None) read the users' features in the clear: "
            "epsilon=inf (30 users)")
    G = GraphData(X)
    with pytest.warns(PrivacyLeakWarning, match=r"domain_sizes.*charges.*epsilon=inf"):
        mech = GRRFSMechanism(1.0, random_state=0).fit(G)
    assert mech.domain_sizes_[1] == 10
    mech.transform(G)
    for rep in (privacy_report(G), privacy_report(mech)):
        assert np.isinf(rep.local_epsilon) and line in str(rep)
    # bin edges that leave a column without a public size read it too; on a plain array
    # the array's rows are the users
    pipe = Pipeline([("grr", GRRFSMechanism(1.0, bin_edges={0: [1.5]}, random_state=0)),
                     ("clf", MLPHead(epochs=1, early_stopping=False, random_state=0))])
    with pytest.warns(PrivacyLeakWarning, match="domain_sizes"):
        pipe.fit(X, np.arange(30) % 2)
    rep = privacy_report(pipe)
    assert np.isinf(rep.local_epsilon) and line in str(rep)
    # under a budget: refused before a size is read, with what to pass instead
    capped = GraphData(X, budget=10.0)
    mech = GRRFSMechanism(1.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(BudgetExceededError, match=r"domain_sizes=None\).*30 user\(s\).*"
                                                      r"Pass domain_sizes=\[\.\.\.\] or "
                                                      r"categories=\[\.\.\.\]"):
            mech.fit(capped)
    assert capped.ledger.entries() == [] and not hasattr(mech, "domain_sizes_")
    # public domains (sizes, categories or edges for every column): no read, no warning,
    # the same budget admits the collection at m * eps
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        for kw in (dict(domain_sizes=10), dict(categories=[range(10)] * 4),
                   dict(bin_edges=[0.5, 1.5, 2.5])):
            GRRFSMechanism(1.0, random_state=0, **kw).fit_transform(capped)
    assert [e.spec.model for e in capped.ledger.entries()] == ["local"] * 3
    assert privacy_report(capped).local_epsilon == 3.0
