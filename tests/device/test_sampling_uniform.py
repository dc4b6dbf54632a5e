"""The devices' k-of-d column sampler ``sample_columns`` (Floyd's algorithm for small k)
picks every k-subset of the d columns with the same probability: k distinct, sorted
columns per user; each column in a share k/d of the users; each pair in a share
k(k-1)/(d(d-1)); and, for small d, every k-subset equally often (chi-square). Counts
over N users are binomial: each is checked within 5 standard deviations."""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import chi2

from skldp.device._random import _FLOYD_MAX_K, sample_columns

N = 60000


def _draw(d, k, seed=11):
    keys = np.arange(1, N + 1, dtype=np.uint64) * np.uint64(2654435761)
    cols = sample_columns(seed, keys, d, k)
    assert cols.shape == (N, k) and cols.dtype == np.int64
    assert ((cols >= 0) & (cols < d)).all()
    assert (np.diff(cols, axis=1) > 0).all()           # distinct, increasing
    return cols


def _within_5_sigma(counts, p):
    sd = math.sqrt(N * p * (1 - p))
    assert np.all(np.abs(counts - N * p) < 5 * sd), (counts, N * p, sd)


@pytest.mark.parametrize("d, k", [(7, 3), (9, 1), (9, 8), (100, 5), (300, 64)])
def test_every_column_and_pair_is_equally_likely(d, k):
    assert k <= _FLOYD_MAX_K and k < d                   # Floyd's branch
    cols = _draw(d, k)
    _within_5_sigma(np.bincount(cols.ravel(), minlength=d), k / d)
    if k >= 2 and d <= 100:
        # pair (i, j), i < j, as the code i * d + j over every pair a user holds
        a, b = np.triu_indices(k, 1)
        codes = (cols[:, a] * d + cols[:, b]).ravel()
        i, j = np.triu_indices(d, 1)
        pairs = np.bincount(codes, minlength=d * d)[i * d + j]
        _within_5_sigma(pairs, k * (k - 1) / (d * (d - 1)))


@pytest.mark.parametrize("d, k", [(5, 2), (7, 3), (6, 4)])
def test_every_subset_is_equally_likely(d, k):
    cols = _draw(d, k, seed=12)
    index = {s: i for i, s in enumerate(itertools.combinations(range(d), k))}
    codes = np.array([index[tuple(r)] for r in cols.tolist()])
    counts = np.bincount(codes, minlength=len(index))
    p = 1 / len(index)
    _within_5_sigma(counts, p)
    # Pearson's statistic below its 1e-6 upper quantile (df = number of subsets - 1)
    stat = float(np.sum((counts - N * p) ** 2 / (N * p)))
    assert stat < chi2.isf(1e-6, len(index) - 1)


def test_draws_are_keyed_by_seed_and_user():
    # the same seed and key give the same columns (whatever the other users); another
    # seed gives other columns
    keys = np.arange(1, 2001, dtype=np.uint64)
    a, b = sample_columns(5, keys, 20, 4), sample_columns(6, keys, 20, 4)
    np.testing.assert_array_equal(a, sample_columns(5, keys, 20, 4))
    np.testing.assert_array_equal(a[7:9], sample_columns(5, keys[7:9], 20, 4))
    # two independent uniform 4-subsets of 20 coincide with probability 1/C(20,4) = 2e-4
    assert (a == b).all(axis=1).mean() < 0.01
