"""The audit machinery on synthetic distributions whose privacy loss is known."""

import numpy as np
import pytest

from skldp.audit import AuditResult, audit_pair, clopper_pearson


def _rr(eps, n, rng):
    """Randomized response on one bit: reports for the bit 1 and for the bit 0."""
    p = np.exp(eps) / (1 + np.exp(eps))
    return (rng.random(n) < p).astype(float), (rng.random(n) >= p).astype(float)


def test_clopper_pearson_closed_forms():
    n, a = 50, 0.05
    assert clopper_pearson(0, n, a, "upper") == pytest.approx(1 - a ** (1 / n))
    assert clopper_pearson(n, n, a, "lower") == pytest.approx(a ** (1 / n))
    assert clopper_pearson(0, n, a, "lower") == 0.0
    assert clopper_pearson(n, n, a, "upper") == 1.0
    lo, hi = clopper_pearson([30, 30], n, a, "lower"), clopper_pearson(30, n, a, "upper")
    assert lo[0] < 0.6 < hi
    with pytest.raises(ValueError, match="side"):
        clopper_pearson(1, 2, 0.1, "both")


@pytest.mark.parametrize("k, n, alpha, match", [
    (5, 3, 0.05, "0 <= k <= n"), (-1, 3, 0.05, "k must be integer counts >= 0"),
    (1, 0, 0.05, "n >= 1"), (1, 10, 1.5, "alpha must be a number in"),
    (1, 10, 0.0, "alpha"), (1, 10, np.nan, "alpha"), (1.5, 10, 0.05, "k must be integer"),
    ([1, 11], 10, 0.05, "0 <= k <= n"), (1, np.inf, 0.05, "n must be integer"),
    ("1", 10, 0.05, "k must be integer"), (True, 10, 0.05, "k must be integer")])
def test_clopper_pearson_refuses_invalid_arguments(k, n, alpha, match):
    # returned 0.549 for k > n, 0 for k < 0, 1 for n = 0, nan for alpha > 1
    with pytest.raises(ValueError, match=match):
        clopper_pearson(k, n, alpha, "lower")


def test_clopper_pearson_accepts_integer_valued_floats():
    assert clopper_pearson(3.0, 10.0, 0.05, "upper") == clopper_pearson(3, 10, 0.05, "upper")


@pytest.mark.parametrize("events", ["values", "cells"])
def test_randomized_response_bound_is_below_the_truth(events):
    # 200 small audits at 95% confidence: the bound exceeds the true eps in at most
    # 5% of them (expected count 10; 25 is 5 standard deviations above it).
    eps, rng = 1.0, np.random.default_rng(0)
    above = 0
    for seed in range(200):
        r0, r1 = _rr(eps, 500, rng)
        res = audit_pair(r0, r1, events=events, random_state=seed)
        above += res.epsilon_lower > eps
    assert above <= 25


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_randomized_response_bound_is_tight_with_many_samples(eps):
    r0, r1 = _rr(eps, 200_000, np.random.default_rng(1))
    res = audit_pair(r0, r1)
    assert isinstance(res, AuditResult)
    assert res.method == "values"
    assert 0.95 * eps < res.epsilon_lower <= eps
    assert res.epsilon_point == pytest.approx(eps, abs=0.05)
    assert res.n == (200_000, 200_000) and res.confidence == 0.95
    k_num, n_num, k_den, n_den = res.counts
    assert res.epsilon_point == pytest.approx(np.log(k_num / n_num / (k_den / n_den)))
    assert len(res.event.members) == 1


def test_direction_is_symmetric():
    r0, r1 = _rr(1.0, 20_000, np.random.default_rng(2))
    a, b = audit_pair(r0, r1), audit_pair(r1, r0)
    # the same up to the random split (drawn for the first input first)
    assert a.epsilon_lower == pytest.approx(b.epsilon_lower, abs=0.05)
    assert {a.event.direction, b.event.direction} == {(0, 1), (1, 0)}


def test_deterministic_leak_gives_a_large_bound():
    n = 20_000
    res = audit_pair(np.zeros(n), np.ones(n))
    # ln(CP_lower(1) / CP_upper(0)) ~ ln(n / ln(1 / alpha')), alpha' = 0.05 / 8
    assert res.epsilon_lower > 7.5
    assert res.epsilon_point == np.inf


def test_equal_distributions_give_a_small_bound():
    rng = np.random.default_rng(3)
    res = audit_pair(rng.normal(size=20_000), rng.normal(size=20_000))
    assert res.method == "cells"
    assert res.epsilon_lower < 0.1


@pytest.mark.parametrize("eps", [0.5, 1.0])
def test_laplace_continuous_bound(eps):
    # x + Lap(1/eps) for x in {0, 1} (sensitivity 1): the density ratio is at most e^eps,
    # reached on the half-lines r <= 0 and r >= 1 that the cells must find.
    rng = np.random.default_rng(4)
    n = 100_000
    res = audit_pair(rng.laplace(0, 1 / eps, n), 1 + rng.laplace(0, 1 / eps, n))
    assert res.method == "cells"
    assert 0.6 * eps < res.epsilon_lower <= eps


def test_cells_coverage_on_continuous_outputs():
    eps, rng = 1.0, np.random.default_rng(5)
    above = 0
    for seed in range(100):
        r0, r1 = rng.laplace(0, 1 / eps, 1000), 1 + rng.laplace(0, 1 / eps, 1000)
        above += audit_pair(r0, r1, random_state=seed).epsilon_lower > eps
    assert above <= 15  # expected <= 5 at 95% confidence


def test_joint_event_sees_what_the_marginals_cannot():
    # Each coordinate is a fair coin for both inputs; the pair (b, b) vs (b, 1 - b)
    # tells them apart with certainty.
    rng = np.random.default_rng(6)
    b0, b1 = rng.integers(0, 2, 20_000), rng.integers(0, 2, 20_000)
    r0, r1 = np.column_stack([b0, b0]), np.column_stack([b1, 1 - b1])
    assert audit_pair(r0[:, 0], r1[:, 0]).epsilon_lower < 0.1
    joint = audit_pair(r0, r1)
    assert joint.epsilon_lower > 6
    (a, b), = joint.event.members
    assert (a == b) == (joint.event.direction == (0, 1))


def test_mixed_atom_and_continuous_joint_leak():
    # A continuous coordinate and a bit; the bit is 1 exactly when the value is negative
    # for x0, independent of it for x1: the cells must combine both coordinates.
    rng = np.random.default_rng(7)
    n = 40_000
    v0, v1 = rng.normal(size=n), rng.normal(size=n)
    r0 = np.column_stack([v0, v0 < 0])
    r1 = np.column_stack([v1, rng.random(n) < 0.5])
    assert audit_pair(r0[:, 0], r1[:, 0]).epsilon_lower < 0.1
    assert audit_pair(r0, r1).epsilon_lower > 5


def test_many_continuous_coordinates_use_a_score():
    # 12 independent coordinates, each x + Lap(1/0.25): the product is 3-DP.
    rng = np.random.default_rng(8)
    n, d, eps_j = 40_000, 12, 0.25
    r0 = rng.laplace(0, 1 / eps_j, (n, d))
    r1 = 1 + rng.laplace(0, 1 / eps_j, (n, d))
    res = audit_pair(r0, r1)
    assert res.method == "cells"
    assert res.event.members[0][0] == "score"
    assert 0.5 < res.epsilon_lower <= d * eps_j


def test_sparse_and_boolean_reports_accepted():
    import scipy.sparse as sp
    r0, r1 = _rr(1.0, 5000, np.random.default_rng(9))
    a = audit_pair(sp.csr_matrix(r0[:, None]), r1.astype(bool))
    assert a.epsilon_lower == pytest.approx(audit_pair(r0, r1).epsilon_lower)


def test_summary_mentions_bound_and_event():
    r0, r1 = _rr(1.0, 5000, np.random.default_rng(10))
    text = audit_pair(r0, r1).summary()
    assert "epsilon >=" in text and "event" in text


@pytest.mark.parametrize("kwargs, match", [
    (dict(events="bins"), "events must be"),
    (dict(confidence=1.0), "confidence"),
    (dict(confidence=True), "confidence"),
    (dict(selection_fraction=0.0), "selection_fraction"),
    # max_cells / max_values were accepted at any value
    (dict(events="cells", max_cells=-5), r"max_cells \(or None\) must be an integer >= 2"),
    (dict(events="cells", max_cells=0), "max_cells"),
    (dict(events="cells", max_cells=1), "max_cells"),
    (dict(events="cells", max_cells=2.5), "max_cells"),
    (dict(max_values=-1), "max_values must be an integer >= 1"),
    (dict(max_values=0), "max_values"),
])
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        audit_pair(np.zeros(10), np.ones(10), **kwargs)


def test_bad_reports():
    with pytest.raises(ValueError, match="same number of outputs"):
        audit_pair(np.zeros((10, 2)), np.zeros((10, 3)))
    with pytest.raises(ValueError, match="NaN"):
        audit_pair(np.array([0.0, np.nan]), np.zeros(2))
    with pytest.raises(TypeError, match="numeric"):
        audit_pair(np.array(["a", "b"]), np.array(["a", "b"]))
    with pytest.raises(ValueError, match="at least 2"):
        audit_pair(np.zeros(1), np.zeros(5))
    with pytest.raises(ValueError, match="dimensions"):
        audit_pair(np.zeros((2, 2, 2)), np.zeros((2, 2, 2)))
