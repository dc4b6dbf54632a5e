"""Per-user draws and seeds: streams are independent, ``start`` skips draws, the fine
uniforms' low bits are random, extreme words stay inside (0, 1), and a seed drawn from
a random-state object is never reused as another's.

Local DP needs each of these: a mechanism that draws two quantities from two streams
of ``node_normals`` must not get the same numbers twice, an edge mechanism continues a
user's ragged draws where the last one stopped, the discrete tails compare the fine
uniforms with tiny probabilities, and a Generator given as ``random_state`` must make a
new collection at each fit (a constant would answer every fit with one collection).
"""

import numpy as np
import pytest

import skldp.device._random as device_random
from skldp.device._random import node_uniforms_ragged_fine
from skldp.utils import draw_seed, node_normals, node_uniforms_fine, node_uniforms_ragged
from skldp.utils._random import training_seed

KEYS = np.arange(20_000, dtype=np.uint64) * np.uint64(7919) + np.uint64(3)


def test_node_normals_of_two_streams_are_independent():
    a = node_normals(5, KEYS, 1, stream=0)[:, 0]
    b = node_normals(5, KEYS, 1, stream=1)[:, 0]
    assert abs(np.corrcoef(a, b)[0, 1]) < 5 / np.sqrt(len(KEYS))
    # each stream is still the same per-user draw
    np.testing.assert_array_equal(node_normals(5, KEYS[:10], 1, stream=1)[:, 0], b[:10])


def test_ragged_start_skips_the_first_draws_of_each_user():
    keys, counts, start = KEYS[:4], np.array([2, 1, 3, 2]), np.array([3, 0, 1, 5])
    longer = node_uniforms_ragged(11, keys, counts + start)
    ends = np.cumsum(counts + start)
    expected = np.concatenate([longer[e - c:e] for e, c in zip(ends, counts, strict=True)])
    np.testing.assert_array_equal(node_uniforms_ragged(11, keys, counts, start=start), expected)
    assert not np.array_equal(node_uniforms_ragged(11, keys, counts), expected)


@pytest.mark.parametrize("draw", [
    lambda keys: node_uniforms_fine(3, keys, 40).ravel(),
    lambda keys: node_uniforms_ragged_fine(3, keys, np.full(len(keys), 40)),
])
def test_fine_uniforms_fill_their_low_bits_with_an_independent_word(draw):
    # u = (r + v) 2^-53: below 2^-10 a double resolves v, which must be uniform on [0, 1)
    # (the same word for r and v would make v a function of r: about 0 for a small u).
    u = draw(KEYS[:5000])
    small = u[u < 2.0 ** -10] * 2.0 ** 53
    v = small - np.floor(small)
    assert len(v) > 100
    assert abs(v.mean() - 0.5) < 5 * np.sqrt(1 / 12 / len(v))


@pytest.mark.parametrize("word", [0, 2 ** 64 - 1])
def test_fine_uniforms_stay_inside_the_open_interval_whatever_the_words(monkeypatch, word):
    # the fine uniforms feed logarithms: 0 must never come out, even when both words
    # of a draw are 0 (probability 2^-105, so forced here)
    def words(*args, **kwargs):
        n_rows = len(np.atleast_1d(args[1]))
        n_cols = args[2] if isinstance(args[2], (int, np.integer)) else None
        shape = (n_rows, n_cols) if n_cols is not None else (int(np.sum(args[2])),)
        return np.full(shape, word, dtype=np.uint64)
    monkeypatch.setattr(device_random, "_node_words", words)
    monkeypatch.setattr(device_random, "_ragged_words", words)
    for u in (node_uniforms_fine(1, KEYS[:3], 2),
              node_uniforms_ragged_fine(1, KEYS[:3], [1, 2, 1])):
        assert np.all(u > 0) and np.all(u <= 1)
        assert np.all(np.log(u) > -np.inf)


def test_a_generator_gives_a_new_seed_at_each_draw():
    g = np.random.default_rng(3)
    seeds = {draw_seed(g) for _ in range(5)}
    assert len(seeds) == 5
    assert draw_seed(np.random.default_rng(3)) != draw_seed(np.random.default_rng(4))


def test_a_mechanism_given_a_generator_makes_a_new_collection_at_each_fit():
    from skldp import GraphData
    from skldp.mechanisms import LaplaceMechanism
    G = GraphData(np.full((5, 1), 0.5), node_ids=np.arange(5))
    mech = LaplaceMechanism(1.0, feature_range=(0, 1), random_state=np.random.default_rng(0))
    seeds = {mech.fit(G).seed_ for _ in range(3)}
    assert len(seeds) == 3


def test_a_training_seed_from_a_random_state_object_is_not_the_collections_key():
    # clone copies a RandomState into a model and its label mechanism: both draw the same
    # number; the model must train with a hash of it, never the key itself
    for make in (np.random.RandomState, np.random.default_rng):
        assert training_seed(make(7)) != draw_seed(make(7))
        assert 0 <= training_seed(make(7)) < 2 ** 63
        assert training_seed(make(7)) == training_seed(make(7))
    assert training_seed(7) == draw_seed(7)     # an integer is public anyway: kept
