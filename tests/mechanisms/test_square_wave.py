"""Tests of the HDS (square wave) mechanism of PrivGE (paper 002, eq. (5), Alg. 1-2, Lemma 3.2)."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from plain_array_checks import EXPECTED_FAILED_PLAIN_ARRAY
from sklearn.utils.estimator_checks import parametrize_with_checks

from skldp import GraphData
from skldp.device._kinds import square_wave_b
from skldp.exceptions import PrivacyLeakWarning
from skldp.mechanisms import HDSMechanism, hds_estimator_variance, hds_optimal_k


def _dense(Z):
    return Z.toarray() if sp.issparse(Z) else np.asarray(Z)


# ----------------------------------------------------------------- formula
@pytest.mark.parametrize("eps", [1e-4, 0.05, 0.5, 1.0, 3.0, 10.0])
def test_b_is_li_et_al_square_wave_scaled_to_minus_one_one(eps):
    # Li et al. (2020): on [0, 1], b = (eps e^eps - e^eps + 1) / (2 e^eps (e^eps - 1 - eps)).
    # On [-1, 1] (width 2) the half-width doubles.
    e = np.exp(eps)
    if eps < 1e-3:  # the closed form cancels catastrophically; compare with its limit
        b_li = 0.5 * (1 - 2 * eps / 3)
    else:
        b_li = (eps * e - e + 1) / (2 * e * (e - 1 - eps))
    assert square_wave_b(eps) == pytest.approx(2 * b_li, rel=1e-6)
    # p, q of eq. (5) integrate to one over [-1-b, 1+b] and have ratio e^eps.
    b = square_wave_b(eps)
    p, q = e / (2 * b * e + 2), 1 / (2 * b * e + 2)
    assert 2 * b * p + 2 * q == pytest.approx(1.0)


def test_b_limits():
    assert square_wave_b(1e-9) == pytest.approx(1.0)
    assert square_wave_b(50.0) < 1e-18
    assert square_wave_b(1e4) == 0.0


# ---------------------------------------------------------------- support
@pytest.mark.parametrize("sparse_in", [False, True])
@pytest.mark.parametrize("d,k", [(40, 3), (6, 4)])
def test_support_and_k_nonzeros_per_row(sparse_in, d, k):
    rng = np.random.default_rng(0)
    X = (rng.random((300, d)) < 0.3).astype(float)
    Xin = sp.csr_matrix(X) if sparse_in else X
    hds = HDSMechanism(eps=2.0, k=k, feature_range=(0, 1), random_state=1).fit(Xin)
    R = hds.transform(Xin)
    # CSR when the input is sparse or k < d / 4, dense otherwise.
    assert sp.issparse(R) == (sparse_in or 4 * k < d)
    Rd = _dense(R)
    assert np.all(np.count_nonzero(Rd, axis=1) == k)
    b = square_wave_b(2.0 / k)
    assert hds.b_ == pytest.approx(b)
    assert np.all(Rd >= -1 - b) and np.all(Rd <= 1 + b)
    # The whole support is used: values beyond [-1, 1] occur.
    assert np.abs(Rd).max() > 1


def test_report_is_within_b_of_input_with_band_probability():
    # Alg. 1, line 3: the report falls in [x - b, x + b] w.p. b e^eps / (b e^eps + 1) ...
    # ... plus the chance of the outer draw landing there too (0 since outer excludes it).
    n, eps = 40000, 1.0
    X = np.full((n, 1), 0.3)
    hds = HDSMechanism(eps=eps, k=1, feature_range=(-1, 1), random_state=0).fit(X)
    R = _dense(hds.transform(X)).ravel()
    b = hds.b_
    p_band = b * np.exp(eps) / (b * np.exp(eps) + 1)
    frac = np.mean(np.abs(R - 0.3) <= b)
    assert abs(frac - p_band) <= 5 * np.sqrt(p_band * (1 - p_band) / n)


# ---------------------------------------------------------------- moments
@pytest.mark.parametrize("eps,k", [(2.0, 2), (0.5, 1), (8.0, 3)])
def test_mean_and_variance_match_lemma_3_2(eps, k):
    n, d = 30000, 6
    x = np.array([-1.0, -0.6, 0.0, 0.25, 0.7, 1.0])  # one value per column, scaled range
    X = np.tile(x, (n, 1))
    hds = HDSMechanism(eps=eps, k=k, feature_range=(-1, 1), random_state=3).fit(X)
    R = _dense(hds.transform(X))
    b = hds.b_
    e = np.exp(eps / k)
    p, q = e / (2 * b * e + 2), 1 / (2 * b * e + 2)
    mean_th = 2 * b * (p - q) * x * k / d             # DESIGN.md §4 / eq. (7)-(8)
    np.testing.assert_allclose(hds.mean(x), mean_th, rtol=1e-12, atol=1e-15)
    var_th = hds.variance(x)
    C = k * b * (e - 1) / (d * (b * e + 1))
    np.testing.assert_allclose(var_th, k * (b ** 3 * e + 3 * b ** 2 + 3 * b + 1)
                               / (3 * d * (b * e + 1)) + (C - C ** 2) * x ** 2, rtol=1e-12)
    m_hat = R.mean(axis=0)
    v_hat = R.var(axis=0, ddof=1)
    se_m = np.sqrt(var_th / n)
    assert np.all(np.abs(m_hat - mean_th) <= 5 * se_m), (m_hat, mean_th, se_m)
    mu4 = np.mean((R - m_hat) ** 4, axis=0)
    se_v = np.sqrt((mu4 - v_hat ** 2) / n)
    assert np.all(np.abs(v_hat - var_th) <= 5 * se_v), (v_hat, var_th, se_v)


def test_mean_variance_take_raw_features():
    X = np.random.default_rng(0).random((50, 4)) * 10
    hds = HDSMechanism(eps=1.0, k=2, feature_range=(0, 10), random_state=0).fit(X)
    # raw 5 is the middle of the range -> scaled 0 -> mean 0
    assert np.allclose(hds.mean(np.full(4, 5.0)), 0.0)
    assert np.allclose(hds.mean(np.full(4, 10.0)), -hds.mean(np.zeros(4)))
    assert np.all(hds.variance(np.full(4, 5.0)) > 0)
    with pytest.raises(ValueError, match="features"):
        hds.mean(np.zeros(3))
    # NaN gave NaN moments (np.clip passes it on); the other mechanisms refuse it
    for x in (np.nan, np.inf):
        for moment in (hds.mean, hds.variance):
            with pytest.raises(ValueError, match="x must be finite"):
                moment(np.array([x, 5.0, 5.0, 5.0]))


@pytest.mark.parametrize("eps_k", [1.0, 17.0, 18.83, 19.0, 25.0, 40.0])
@pytest.mark.parametrize("k", [1, 3])
def test_scale_and_estimator_variance_are_the_grids(eps_k, k):
    # Past eps' ~ 17 the paper's b is below the grid's cell: C and the variance must be
    # those of the wave drawn (b_), which the exact grid moments (mean, variance) give
    d = 10
    x = np.linspace(-0.9, 0.8, d)
    hds = HDSMechanism(eps=eps_k * k, k=k, feature_range=(-1, 1)).fit(np.zeros((2, d)))
    C = hds.mean(x) / x
    np.testing.assert_allclose(C, hds.scale_, rtol=1e-12)
    np.testing.assert_allclose(hds_estimator_variance(eps_k * k, k, d, x2=x ** 2),
                               hds.variance(x) / C ** 2, rtol=1e-9)
    # k="auto" chooses by the same variance
    assert HDSMechanism(eps=eps_k * k, k="auto", feature_range=(-1, 1)).fit(
        np.zeros((2, d))).k_ == hds_optimal_k(eps_k * k, d)


@pytest.mark.parametrize("eps, k", [(2.0, 2), (50.0, 2), (np.inf, 2), (np.inf, 4)])
def test_estimate_is_unbiased_in_feature_units(eps, k):
    # features in [10, 20]; at eps' = 25 Lemma 3.2's C at the paper's b is 4 % off
    n, d = 40000, 4
    x = np.array([10.0, 12.5, 17.0, 20.0])
    X = np.tile(x, (n, 1))
    hds = HDSMechanism(eps=eps, k=k, feature_range=(10, 20), random_state=5).fit(X)
    est = hds.estimate(hds.transform(X))
    assert est.shape == (n, d)
    xs = (x - 10) / 5 - 1
    var = hds_estimator_variance(eps, k, d, x2=xs ** 2) * 5.0 ** 2   # per user
    m = est.mean(axis=0)
    assert np.all(np.abs(m - x) <= 4 * np.sqrt(var / n) + 1e-9), (m, x)
    if eps < 10:   # (above, nearly two-valued: a sample variance's s.e. is not sqrt(mu4/n))
        v, mu4 = est.var(axis=0, ddof=1), np.mean((est - m) ** 4, axis=0)
        assert np.all(np.abs(v - var) <= 4 * np.sqrt((mu4 - v ** 2) / n)), (v, var)
    if np.isinf(eps) and k == d:
        np.testing.assert_allclose(est, X, rtol=1e-12)
    with pytest.raises(ValueError, match="shape"):
        hds.estimate(np.zeros((2, 3)))


# ---------------------------------------------------------------- LDP
@pytest.mark.parametrize("eps,k", [(1.0, 1), (3.0, 2)])
def test_empirical_ldp_density_ratio(eps, k):
    # Histogram the report of one coordinate for the extreme inputs x = -1 and x = +1.
    n = 200000
    X_lo, X_hi = np.full((n, k), -1.0), np.full((n, k), 1.0)
    G_lo = GraphData(X_lo, node_ids=np.arange(n))
    hds = HDSMechanism(eps=eps, k=k, feature_range=(-1, 1), random_state=7).fit(G_lo)
    r_lo = _dense(hds.transform(G_lo).features)[:, 0]
    # different users for the other input (keys n..2n-1 via a GraphData with other ids)
    G = GraphData(X_hi, node_ids=np.arange(n, 2 * n), population=G_lo)
    r_hi = np.asarray(hds.transform(G).features.toarray()
                      if sp.issparse(hds.transform(G).features)
                      else hds.transform(G).features)[:, 0]
    b = hds.b_
    edges = np.linspace(-1 - b, 1 + b, 41)
    c_lo, _ = np.histogram(r_lo, edges)
    c_hi, _ = np.histogram(r_hi, edges)
    assert c_lo.sum() == n and c_hi.sum() == n        # support [-1-b, 1+b]
    bound = np.exp(eps / k)
    ratio = (c_hi + 0.5) / (c_lo + 0.5)
    rel_se = np.sqrt(1.0 / (c_hi + 0.5) + 1.0 / (c_lo + 0.5))
    # never above e^(eps/k), up to 5 standard errors in log space
    assert np.all(np.log(ratio) <= np.log(bound) + 5 * rel_se), (ratio.max(), bound)
    assert np.all(np.log(1 / ratio) <= np.log(bound) + 5 * rel_se)
    # and tight: bins inside [1-b, 1+b] (band of +1, outer region of -1) reach e^(eps/k)
    inner = (edges[:-1] >= 1 - b) & (edges[1:] <= 1 + b) & (edges[:-1] > -1 + b)
    assert inner.any()
    assert np.all(np.abs(np.log(ratio[inner]) - np.log(bound)) <= 5 * rel_se[inner])


# ---------------------------------------------------------------- determinism
@pytest.fixture
def graph():
    rng = np.random.default_rng(0)
    n, d = 50, 30
    X = (rng.random((n, d)) < 0.2).astype(float)
    A = sp.random(n, n, density=0.1, random_state=0, format="csr")
    A = ((A + A.T) > 0).astype(float)
    ids = rng.permutation(1000)[:n] + 17
    return GraphData(sp.csr_matrix(X), A, node_ids=ids)


def test_same_report_for_subsets_orders_and_after_pickle(graph):
    hds = HDSMechanism(eps=1.0, k=4, feature_range=(0, 1), random_state=0)
    train = np.arange(0, 50, 2)
    hds.fit(graph[train])
    full = _dense(np.asarray(hds.transform(graph).features.toarray()))
    rows = np.array([31, 3, 44, 8])
    part = hds.transform(graph[rows])
    np.testing.assert_array_equal(np.asarray(part), full[rows])
    hds2 = pickle.loads(pickle.dumps(hds))
    np.testing.assert_array_equal(np.asarray(hds2.transform(graph[rows[::-1]])),
                                  full[rows[::-1]])
    # Same user ids in a new graph object (rows shuffled) -> same reports.
    perm = np.random.default_rng(1).permutation(50)
    G2 = GraphData(graph.features[perm], node_ids=graph.all_node_ids[perm], population=graph)
    np.testing.assert_array_equal(np.asarray(hds.transform(G2)), full[perm])


@pytest.mark.parametrize("eps", [1.0, np.inf])
def test_float32_rows_give_the_reports_of_their_float64_values(monkeypatch, eps):
    # the device input keeps float32 rows (no float64 copy of all of X); the users answer
    # as about the same values widened: same reports, same digests (asked again about
    # the float64 rows, the same users are not refused and pay nothing more)
    from skldp import base
    from skldp.population._digest import feature_digests
    rng = np.random.default_rng(5)
    X32 = rng.random((300, 40), dtype=np.float32)
    G32 = GraphData(X32, sp.csr_matrix((300, 300)), node_ids=np.arange(300))
    G64 = GraphData(X32.astype(np.float64), node_ids=np.arange(300), population=G32.population)
    inputs = []
    clip = base.clip_to_range
    monkeypatch.setattr(base, "clip_to_range",
                        lambda *a, **k: inputs.append(clip(*a, **k)) or inputs[-1])
    hds = HDSMechanism(eps=eps, k=4, feature_range=(0, 1), random_state=3).fit(G32)
    R32, R64 = hds.transform(G32).features, hds.transform(G64).features
    assert [x.dtype for x in inputs] == [np.float32, np.float64]
    np.testing.assert_array_equal(feature_digests(inputs[0]), feature_digests(inputs[1]))
    assert (R32 != R64).nnz == 0
    assert G32.population is G64.population
    assert G32.population.ledger.local_epsilon == eps   # charged once


def test_fit_transform_equals_fit_then_transform(graph):
    hds = HDSMechanism(eps=1.0, k=4, feature_range=(0, 1), random_state=5)
    a = np.asarray(hds.fit_transform(graph[:20]))
    b = np.asarray(hds.transform(graph[:20]))
    np.testing.assert_array_equal(a, b)


def test_different_random_state_different_reports(graph):
    r0 = np.asarray(HDSMechanism(eps=1.0, k=4, feature_range=(0, 1), random_state=0)
                    .fit(graph).transform(graph))
    r1 = np.asarray(HDSMechanism(eps=1.0, k=4, feature_range=(0, 1), random_state=1)
                    .fit(graph).transform(graph))
    assert not np.array_equal(r0, r1)
    # the sampled dimensions differ too, not only the values
    assert not np.array_equal(r0 != 0, r1 != 0)


# ---------------------------------------------------------------- parameters
def test_default_k_and_epsilon():
    X = np.random.default_rng(0).random((10, 12))
    hds = HDSMechanism(eps=2.0, feature_range=(0, 1), random_state=0).fit(X)
    assert hds.k_ == 5 and hds.epsilon_ == 2.0 and hds.protects_ == ("features",)
    hds = HDSMechanism(eps=2.0, feature_range=(0, 1), random_state=0).fit(X[:, :3])
    assert hds.k_ == 3


def test_eps_inf_reports_sampled_dims_without_noise():
    rng = np.random.default_rng(0)
    X = rng.random((20, 8)) * 4 - 1
    hds = HDSMechanism(eps=np.inf, k=2, feature_range=(-1, 3), random_state=0).fit(X)
    assert hds.epsilon_ == np.inf and hds.b_ == 0.0
    R = _dense(hds.transform(X))
    Xs = (X + 1) / 2 - 1
    assert np.all(np.count_nonzero(R, axis=1) == 2)
    mask = R != 0
    np.testing.assert_allclose(R[mask], Xs[mask])
    # a finite-eps collection is another collection: independent dimensions, even with
    # the same random_state (a shared draw would couple the two reports)
    R1 = _dense(HDSMechanism(eps=1.0, k=2, feature_range=(-1, 3), random_state=0)
                .fit(X).transform(X))
    assert np.any((R1 != 0) != mask)
    # moments: the eps -> inf limits of Lemma 3.2
    np.testing.assert_allclose(hds.mean(X), Xs * 2 / 8)
    np.testing.assert_allclose(hds.variance(X), (0.25 - 0.25 ** 2) * Xs ** 2)
    big = HDSMechanism(eps=100.0, k=2, feature_range=(-1, 3), random_state=0).fit(X)
    np.testing.assert_allclose(big.mean(X), hds.mean(X), rtol=1e-3)
    # the constant term of Lemma 3.2 vanishes like k / (d eps)
    np.testing.assert_allclose(big.variance(X), hds.variance(X), rtol=1e-2, atol=2e-3)
    # beyond 50 per dimension the grid sampler cannot honour the budget: refused
    with pytest.raises(ValueError, match="above 50"):
        HDSMechanism(eps=1e4, k=2, feature_range=(-1, 3), random_state=0).fit(X)
    # k = d gives the scaled feature matrix
    full = HDSMechanism(eps=np.inf, k=8, feature_range=(-1, 3), random_state=0).fit(X)
    np.testing.assert_allclose(_dense(full.transform(X)), Xs)


@pytest.mark.parametrize("eps,err", [(0, ValueError), (-1.0, ValueError),
                                     (float("nan"), ValueError), ("1", TypeError)])
def test_bad_eps(eps, err):
    with pytest.raises(err):
        HDSMechanism(eps=eps, feature_range=(0, 1)).fit(np.zeros((3, 2)))


@pytest.mark.parametrize("eps", [-1.0, 0.0, float("nan"), "1", np.array([1.0, -1.0])])
def test_estimator_variance_bad_eps(eps):
    # eps=-1 gave 74.13 and eps=0 inf: refused as hds_optimal_k refuses them
    with pytest.raises(ValueError, match="eps must be"):
        hds_estimator_variance(eps, 1, 10)


_K_RANGE = (r"The 'k' parameter of HDSMechanism must be an int in the range \[1, inf\), "
            r"a str among \{'auto'\} or None")
_K_FEATURES = r"k must be an integer in 1..4 \(n_features=4\)"


@pytest.mark.parametrize("k,err,match", [(0, ValueError, _K_RANGE), (5, ValueError, _K_FEATURES),
                                         (-2, ValueError, _K_RANGE), (2.5, TypeError, _K_RANGE),
                                         (True, TypeError, _K_RANGE)])
def test_bad_k(k, err, match):
    with pytest.raises(err, match=match):
        HDSMechanism(k=k, feature_range=(0, 1)).fit(np.zeros((3, 4)))


def test_nan_inf_features_rejected():
    X = np.zeros((4, 3))
    X[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        HDSMechanism(feature_range=(0, 1)).fit(X)
    hds = HDSMechanism(feature_range=(0, 1), random_state=0).fit(np.zeros((4, 3)))
    X[1, 2] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        hds.transform(X)


def test_clip_warning_and_leak_warning():
    X = np.array([[0.0, 2.0], [0.5, 0.5]])
    with pytest.warns(UserWarning, match="clipped"):
        R = HDSMechanism(k=2, feature_range=(0, 1), random_state=0).fit(X).transform(X)
    b = square_wave_b(0.5)
    assert np.all(np.abs(_dense(R)) <= 1 + b)
    with pytest.warns(PrivacyLeakWarning):
        HDSMechanism(random_state=0).fit(X)


def test_unfitted_moments_raise():
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        HDSMechanism().mean(np.zeros(3))


# ---------------------------------------------------------------- sklearn
_EXPECTED_FAILED = EXPECTED_FAILED_PLAIN_ARRAY


@parametrize_with_checks([HDSMechanism(eps=1.0, random_state=0),
                          HDSMechanism(eps=4.0, k=1, feature_range=(-5, 5), random_state=0)],
                         expected_failed_checks=lambda est: _EXPECTED_FAILED)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)


@pytest.mark.parametrize("fr, sparse_out", [((0, 1), True), ((0.5, 2), False)])
def test_sparse_output_follows_notes(fr, sparse_out):
    # the Notes said a sparse input always gives CSR; one whose range excludes 0 is densified
    X = sp.random(20, 4, density=0.5, random_state=0, format="csr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Z = HDSMechanism(1.0, k=2, feature_range=fr, random_state=0).fit(X).transform(X)
    assert sp.issparse(Z) is sparse_out
    assert "range excludes" in HDSMechanism.__doc__


def test_a_numpy_generator_seeds_the_collection_reproducibly():
    # the docstring said "int, RandomState instance or None": a Generator gives the seed
    # of one draw from it, so two fresh Generators of one seed give the same reports
    X = np.random.default_rng(0).random((30, 10))
    a, b = (HDSMechanism(eps=1.0, k=2, feature_range=(0, 1),
                         random_state=np.random.default_rng(7)).fit_transform(X)
            for _ in range(2))
    np.testing.assert_array_equal(_dense(a), _dense(b))
    assert "Generator" in HDSMechanism.__doc__.split("random_state :")[1].splitlines()[0]
