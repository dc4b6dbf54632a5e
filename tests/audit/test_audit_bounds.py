"""The audit's bound is exactly the documented formula.

The existing audit tests check coverage (the bound exceeds the truth rarely) and
power (the bound is near the truth) with wide tolerances; a weaker Bonferroni
correction, a wrong Clopper-Pearson parameter, a bound computed on the selection
split, or a result that is not the maximum over the outputs all pass them. These
tests pin the bound to its definition, recomputed independently from the counts
the result reports.
"""
import numpy as np
import pytest
from scipy.stats import beta, binomtest

from skldp.audit import audit_collections, audit_mechanism, audit_pair, clopper_pearson
from skldp.mechanisms import OneBitMechanism


def _rr(eps, n, rng):
    p = np.exp(eps) / (1 + np.exp(eps))
    return (rng.random(n) < p).astype(float), (rng.random(n) >= p).astype(float)


def _cp_lower(k, n, a):       # independent of skldp: the textbook definition
    return 0.0 if k == 0 else beta.ppf(a, k, n - k + 1)


def _cp_upper(k, n, a):
    return 1.0 if k == n else beta.ppf(1 - a, k + 1, n - k)


def _bound(counts, a):
    k_num, n_num, k_den, n_den = counts
    lo, hi = _cp_lower(k_num, n_num, a), _cp_upper(k_den, n_den, a)
    return max(0.0, np.log(lo) - np.log(hi)) if lo > 0 else 0.0


@pytest.mark.parametrize("k, n", [(0, 20), (1, 20), (7, 20), (19, 20), (20, 20), (300, 1000)])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_clopper_pearson_matches_scipy_exact_interval(k, n, alpha):
    # scipy's exact one-sided interval: alternative="greater" gives [lower, 1],
    # "less" gives [0, upper], each at confidence 1 - alpha.
    lo = binomtest(k, n, alternative="greater").proportion_ci(1 - alpha, "exact").low
    hi = binomtest(k, n, alternative="less").proportion_ci(1 - alpha, "exact").high
    assert clopper_pearson(k, n, alpha, "lower") == pytest.approx(lo, rel=1e-9, abs=1e-12)
    assert clopper_pearson(k, n, alpha, "upper") == pytest.approx(hi, rel=1e-9, abs=1e-12)


def _selection(n, seed, frac=0.5):
    """The selection rows of the two inputs, as audit_pair draws them (RandomState(seed))."""
    rng = np.random.RandomState(seed)
    n_sel = min(n - 1, max(1, int(round(frac * n))))
    p0, p1 = rng.permutation(n), rng.permutation(n)
    return p0[:n_sel], p1[:n_sel], p0[n_sel:], p1[n_sel:]


@pytest.mark.parametrize("eps, n", [(1.0, 3000), (0.5, 500)])
def test_values_bound_is_the_bonferroni_corrected_formula(eps, n):
    # "values": the K distinct outputs of the selection split, each tried in both
    # directions with two one-sided bounds on the evaluation split: level alpha / (4 K).
    r0, r1 = _rr(eps, n, np.random.default_rng(11))
    res = audit_pair(r0, r1, events="values", confidence=0.9, random_state=0)
    s0, s1, e0, e1 = _selection(n, 0)
    K = len(np.unique(np.concatenate([r0[s0], r1[s1]])))
    assert K == 2
    assert res.counts[1] + res.counts[3] == len(e0) + len(e1)   # the held-out reports
    assert res.epsilon_lower == pytest.approx(_bound(res.counts, 0.1 / (4 * K)), rel=1e-9)
    # the chosen event is the best one: no other value/direction gives a larger bound
    for v in (0.0, 1.0):
        for a, b in ((r0[e0], r1[e1]), (r1[e1], r0[e0])):
            c = (int((a == v).sum()), len(a), int((b == v).sum()), len(b))
            assert _bound(c, 0.1 / (4 * K)) <= res.epsilon_lower + 1e-12


def test_values_family_is_fixed_before_the_evaluated_reports_are_read():
    # The Bonferroni count was the number of distinct outputs among all reports, the
    # ones the bounds are computed from: a data-dependent family. It is now the outputs
    # of the selection split; an output seen only in the evaluation split is no event.
    n = 400
    s0, s1, e0, e1 = _selection(n, 0)
    r0, r1 = np.zeros(n), np.ones(n)
    r0[e0[:5]] = np.arange(2, 7)             # five outputs only the evaluation split has
    res = audit_pair(r0, r1, events="values", confidence=0.9, random_state=0)
    a = 0.1 / (4 * 2)                        # the selection split holds the outputs 0 and 1
    assert res.counts == (len(e1), len(e1), 0, len(e0))     # all of x1's held-out reports
    assert res.event.direction == (1, 0) and res.event.members == ((1.0,),)
    assert res.epsilon_lower == pytest.approx(_bound(res.counts, a), rel=1e-9)


def _grr(eps, d, n, x, rng):
    """Generalised randomized response over d values: x with prob e^eps / (e^eps + d - 1)."""
    keep = rng.random(n) < np.exp(eps) / (np.exp(eps) + d - 1)
    other = (x + 1 + rng.integers(0, d - 1, n)) % d
    return np.where(keep, x, other).astype(float)


def test_values_bound_is_sound_over_many_seeds():
    # an honest eps-LDP mechanism: the 90 % bound exceeds eps in at most 10 % of the
    # audits (expected <= 15 of 150; 30 is about 4 standard deviations above it)
    eps, rng, above = 1.0, np.random.default_rng(7), 0
    for seed in range(150):
        r0, r1 = _grr(eps, 8, 400, 0, rng), _grr(eps, 8, 400, 1, rng)
        above += audit_pair(r0, r1, events="values", confidence=0.9,
                            random_state=seed).epsilon_lower > eps
    assert above <= 30


@pytest.mark.parametrize("seed", [0, 1])
def test_cells_bound_is_computed_on_the_evaluation_split(seed):
    # "cells": one event per direction, chosen on the selection split, bounded on the
    # evaluation split at level alpha / 4. The counts are the evaluation split's:
    # n_num + n_den is the held-out half of the reports, and the bound follows from them.
    rng = np.random.default_rng(20 + seed)
    n = 4000
    r0, r1 = rng.laplace(0, 1.0, n), 1 + rng.laplace(0, 1.0, n)
    res = audit_pair(r0, r1, events="cells", random_state=seed)
    k_num, n_num, k_den, n_den = res.counts
    assert n_num + n_den == n   # half of each input's 4000 reports
    assert res.epsilon_lower == pytest.approx(_bound(res.counts, 0.05 / 4), rel=1e-9)


def test_identical_reports_give_exactly_zero():
    # documented: 0.0 when no event separates the inputs (never a negative "bound")
    rng = np.random.default_rng(3)
    r = rng.integers(0, 3, 2000).astype(float)
    for events in ("values", "cells"):
        res = audit_pair(r, r.copy(), events=events)
        assert res.epsilon_lower == 0.0


def _leaky_second_coordinate(X, keys):
    # coordinate 0: a fair coin for both inputs; coordinate 1: the input itself,
    # flipped 10 % of the time. The joint output over 2 coordinates has 4 cells, the
    # second coordinate alone is what leaks.
    k = np.asarray(keys, dtype=np.uint64)
    coin = (k * np.uint64(0x9E3779B97F4A7C15) >> np.uint64(40)) % np.uint64(2)
    flip = ((k * np.uint64(0xBF58476D1CE4E5B9) >> np.uint64(33)) % np.uint64(10)) == 0
    bit = np.where(flip, 1 - X[:, 0], X[:, 0])
    return np.column_stack([coin.astype(float), bit])


def test_collections_result_is_the_maximum_over_components_with_shared_confidence():
    res = audit_mechanism(_leaky_second_coordinate, [0.0], [1.0], n_samples=5000,
                          confidence=0.9)
    comps = res.components
    assert len(comps) == 3     # two coordinates and the joint output
    assert res.epsilon_lower == max(c.epsilon_lower for c in comps)
    assert res.output == max(comps, key=lambda c: c.epsilon_lower).output
    # family-wise confidence: each component at 1 - alpha / (number of components)
    for c in comps:
        assert c.confidence == pytest.approx(1 - 0.1 / 3)
    assert res.confidence == 0.9


def test_one_bit_pair_components_each_at_the_bonferroni_level():
    pair = [OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0),
            OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=1)]
    res = audit_collections(pair, [0.0], [1.0], n_samples=3000, outputs="collections")
    assert [c.output for c in res.components][-1] == "joint"
    m = len(res.components)
    for c in res.components:
        assert c.confidence == pytest.approx(1 - 0.05 / m)
        assert c.epsilon_lower <= res.epsilon_lower
    assert res.epsilon_lower == max(c.epsilon_lower for c in res.components)
