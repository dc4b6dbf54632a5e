"""The devices' uniforms lie in (0, 1), also for the one word whose top 53 bits are all 1.

A word's top 53 bits ``m`` give ``(m + 1/2) / 2^53``; for ``m = 2^53 - 1`` that is
``1 - 2^-54``, which a double rounds up to 1 (then a normal draw is ``inf``). That
word, one in 2^53, gives the largest double below 1 instead. The key that makes it is
found by inverting SplitMix64 (a bijection of 64-bit words).
"""

import numpy as np
import pytest

from skldp.device import _random as dr
from skldp.utils import node_normals, node_uniforms, node_uniforms_fine

MASK = (1 << 64) - 1
G, M1, M2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def _mix(z):
    z = ((z ^ (z >> 30)) * M1) & MASK
    z = ((z ^ (z >> 27)) * M2) & MASK
    return z ^ (z >> 31)


def _unshift(z, s):   # inverse of z ^ (z >> s)
    x = z
    for _ in range(64 // s + 1):
        x = z ^ (x >> s)
    return x


def _unmix(z):
    z = (_unshift(z, 31) * pow(M2, -1, 1 << 64)) & MASK
    z = (_unshift(z, 27) * pow(M1, -1, 1 << 64)) & MASK
    return _unshift(z, 30)


def _key_for_first_word(seed, stream, word):
    """The user key whose first draw (column 0) of ``stream`` is the 64-bit ``word``."""
    s = (seed & MASK) ^ _mix((stream * G + G) & MASK)
    row_key = (_unmix(word) - G) & MASK    # column 0 adds one G to the row's key
    return ((_unmix(row_key) ^ _mix(s)) * pow(G, -1, 1 << 64)) & MASK


@pytest.mark.parametrize("seed, stream", [(42, 0), (7, 3)])
def test_the_all_ones_word_gives_the_largest_double_below_one(seed, stream):
    key = np.array([_key_for_first_word(seed, stream, MASK)], dtype=np.uint64)
    assert int(dr._node_words(seed, key, 1, stream)[0, 0]) == MASK
    u = node_uniforms(seed, key, 1, stream)[0, 0]
    assert u < 1.0 and u == np.nextafter(1.0, 0.0)
    assert np.isfinite(node_normals(seed, key, 1, stream)[0, 0])
    # the next word below keeps its own value: the map stays increasing
    below = np.array([_key_for_first_word(seed, stream, MASK - (1 << 11))], dtype=np.uint64)
    assert node_uniforms(seed, below, 1, stream)[0, 0] < u
    # the fine uniform: that word's top bits with any low part stay below 1 too
    fine = node_uniforms_fine(seed, key, 1, stream)[0, 0]
    assert np.nextafter(1.0, 0.0) - 2.0 ** -52 <= fine < 1.0


def test_fine_uniforms_never_reach_one():
    r = np.full(4, float((1 << 53) - 1))
    v = np.array([0.0, 0.25, 0.5, 1.0 - 2.0 ** -52])
    u = dr._fine_uniform(r, v)
    assert (u < 1.0).all() and (np.diff(u) >= 0).all()


def test_the_card_maps_the_all_ones_word_as_the_host():
    torch = pytest.importorskip("torch")
    from skldp._torch import _counter_random as on_device
    key = np.array([_key_for_first_word(42, 0, MASK), 12345], dtype=np.uint64)
    host = node_uniforms(42, key, 2, 0)
    card = on_device.node_uniforms(42, key, 2, 0, device="cpu")
    np.testing.assert_array_equal(card.cpu().numpy() if torch.is_tensor(card) else card, host)
    host_fine = node_uniforms_fine(42, key, 2, 0)
    card_fine = on_device.node_uniforms_fine(42, key, 2, 0, device="cpu")
    np.testing.assert_array_equal(
        card_fine.cpu().numpy() if torch.is_tensor(card_fine) else card_fine, host_fine)
