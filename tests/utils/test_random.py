"""Counter-based per-user randomness: determinism, invariance, uniformity, independence."""

import numpy as np
import pytest

from skldp.utils import draw_seed, node_normals, node_uniforms, node_uniforms_ragged, sample_k_of_d

KEYS = np.arange(5000, dtype=np.uint64) * np.uint64(7919) + np.uint64(3)


def test_determinism():
    a = node_uniforms(42, KEYS, 4)
    np.testing.assert_array_equal(a, node_uniforms(42, KEYS, 4))
    assert not np.array_equal(a, node_uniforms(43, KEYS, 4))
    assert a.shape == (len(KEYS), 4)
    assert np.all((a > 0) & (a < 1))


def test_subset_order_and_width_invariance():
    full = node_uniforms(7, KEYS, 6, stream=2)
    perm = np.random.default_rng(0).permutation(len(KEYS))[:100]
    np.testing.assert_array_equal(node_uniforms(7, KEYS[perm], 6, stream=2), full[perm])
    np.testing.assert_array_equal(node_uniforms(7, KEYS, 3, stream=2), full[:, :3])
    r_full = node_uniforms_ragged(7, KEYS[:4], [3, 1, 2, 5])
    r_sub = node_uniforms_ragged(7, KEYS[[3, 0]], [2, 2])
    np.testing.assert_array_equal(r_sub, np.concatenate([r_full[6:8], r_full[0:2]]))
    assert len(r_full) == 11 and np.all((r_full > 0) & (r_full < 1))
    np.testing.assert_array_equal(node_normals(7, KEYS[perm], 2), node_normals(7, KEYS, 2)[perm])


def test_uniformity():
    u = node_uniforms(1, KEYS, 20).ravel()
    n = len(u)
    assert abs(u.mean() - 0.5) < 5 * np.sqrt(1 / 12 / n)
    # chi-square over 20 bins: mean 19, sd sqrt(38); 5 sd
    counts = np.bincount((u * 20).astype(int), minlength=20)
    chi2 = ((counts - n / 20) ** 2 / (n / 20)).sum()
    assert chi2 < 19 + 5 * np.sqrt(38)
    z = node_normals(1, KEYS, 20).ravel()
    assert abs(z.mean()) < 5 / np.sqrt(n) and abs(z.var() - 1) < 5 * np.sqrt(2 / n)


def test_independence_of_streams_columns_and_keys():
    n = len(KEYS)
    a = node_uniforms(5, KEYS, 2, stream=0)
    b = node_uniforms(5, KEYS, 2, stream=1)
    tol = 5 / np.sqrt(n)
    assert abs(np.corrcoef(a[:, 0], b[:, 0])[0, 1]) < tol        # streams
    assert abs(np.corrcoef(a[:, 0], a[:, 1])[0, 1]) < tol        # columns
    assert abs(np.corrcoef(a[:-1, 0], a[1:, 0])[0, 1]) < tol     # neighbouring keys
    c = node_uniforms(6, KEYS, 1, stream=0)
    assert abs(np.corrcoef(a[:, 0], c[:, 0])[0, 1]) < tol        # seeds


def test_sample_k_of_d_distinct_and_uniform():
    d, k = 10, 3
    S = sample_k_of_d(9, KEYS, d, k)
    assert S.shape == (len(KEYS), k) and S.min() >= 0 and S.max() < d
    assert all(len(set(row)) == k for row in S[:500])
    srt = np.sort(S, axis=1)
    assert np.all(np.diff(srt, axis=1) > 0)
    n = len(KEYS)
    counts = np.bincount(S.ravel(), minlength=d)
    p = k / d
    assert np.all(np.abs(counts - n * p) < 5 * np.sqrt(n * p * (1 - p)))
    # every one of the C(10, 3) = 120 subsets appears with frequency ~ 1/120
    codes = (srt * np.array([100, 10, 1])).sum(axis=1)
    freq = np.unique(codes, return_counts=True)[1]
    assert len(freq) == 120
    assert np.all(np.abs(freq - n / 120) < 5 * np.sqrt(n / 120))
    np.testing.assert_array_equal(sample_k_of_d(9, KEYS[[5, 2]], d, k), S[[5, 2]])
    np.testing.assert_array_equal(np.sort(sample_k_of_d(9, KEYS[:3], 4, 4), axis=1),
                                  np.tile(np.arange(4), (3, 1)))
    for bad in (0, d + 1):
        with pytest.raises(ValueError, match="k must be in"):
            sample_k_of_d(9, KEYS, d, bad)


def test_draw_seed():
    assert draw_seed(0) == draw_seed(0) and draw_seed(0) != draw_seed(1)
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    assert draw_seed(g1) == draw_seed(g2)
    rs = np.random.RandomState(0)
    assert draw_seed(rs) != draw_seed(rs)  # a RandomState advances
    assert 0 <= draw_seed(None) < 2 ** 63


def test_collection_seed_depends_on_identity_and_random_state():
    from skldp.utils import collection_seed
    a = collection_seed(0, ("OneBit", 1.0))
    assert a == collection_seed(0, ("OneBit", 1.0))          # a user answers once
    assert a != collection_seed(0, ("OneBit", 2.0))          # another collection
    assert a != collection_seed(1, ("OneBit", 1.0))
    assert collection_seed(None, "x") != collection_seed(None, "x")   # OS entropy
    assert 0 <= a < 2**63


def test_fine_uniforms_resolve_tiny_probabilities():
    from skldp.utils import node_uniforms, node_uniforms_fine
    keys = np.arange(2_000_000, dtype=np.uint64)
    u = node_uniforms_fine(3, keys, 1)[:, 0]
    coarse = node_uniforms(3, keys, 1)[:, 0]
    # below 2^-53 the coarse uniforms hold a single value; the fine ones keep going
    assert np.all((u > 0) & (u < 1))
    assert coarse.min() >= 2.0 ** -54
    assert abs(np.mean(u < 1e-3) - 1e-3) < 5 * np.sqrt(1e-3 / len(u))
    scaled = u[u < 2.0 ** -10] * 2.0 ** 10     # the low range is uniform too
    assert abs(scaled.mean() - 0.5) < 5 * np.sqrt(1 / 12 / len(scaled))
