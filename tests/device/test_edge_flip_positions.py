"""Edge randomized response as the devices run it (``randomized_lists``): every free
position of a user's adjacency bit vector (not the user, not a neighbour) is flipped in
independently with probability q = 1 / (1 + e^eps), whatever its place: the first free
position, the one right after the user's own, the last. The geometric skipping must not
skip or favour any position. Rates are over M independent rows (distinct report keys,
three seeds); each is a binomial share checked within 5 standard deviations."""

import math

import numpy as np
import pytest

from skldp.device import _edges as edges
from skldp.device._edges import flip_probability, randomized_lists

N_DIR = 10        # directory size
M = 10000         # rows per seed


def _lists(seed, eps):
    """Rows with every own position; rows with odd index have 2 neighbours."""
    rng = np.random.default_rng(seed)
    dir_keys = np.sort(rng.choice(2 ** 62, size=N_DIR, replace=False)).astype(np.uint64)
    rkeys = rng.choice(2 ** 62, size=M, replace=False).astype(np.uint64)
    own = np.arange(M) % N_DIR
    nbrs = [sorted({(o + 1) % N_DIR, (o + 4) % N_DIR}) if r % 2 else []
            for r, o in enumerate(own)]
    ptr = np.r_[0, np.cumsum([len(x) for x in nbrs])]
    pos = np.array([p for x in nbrs for p in x], dtype=np.int64)
    q = flip_probability(eps)
    out_ptr, out_pos = randomized_lists(seed, rkeys, own, ptr, pos, dir_keys[pos], N_DIR, q)
    reported = np.zeros((M, N_DIR), bool)
    reported[np.repeat(np.arange(M), np.diff(out_ptr)), out_pos] = True
    true = np.zeros((M, N_DIR), bool)
    true[np.repeat(np.arange(M), np.diff(ptr)), pos] = True
    return reported, true, own, q


def _check_rate(hits, trials, p):
    trials = np.asarray(trials, float)
    sd = np.sqrt(p * (1 - p) / trials)
    assert np.all(np.abs(hits / trials - p) < 5 * sd), (hits / trials, p, 5 * sd)


@pytest.mark.parametrize("eps", [1.0, 0.2])
def test_every_free_position_is_flipped_in_at_rate_q(eps):
    parts = [_lists(seed, eps) for seed in (1, 2, 3)]
    reported = np.concatenate([p[0] for p in parts])
    true = np.concatenate([p[1] for p in parts])
    own = np.concatenate([p[2] for p in parts])
    q = parts[0][3]
    rows = np.arange(len(own))
    assert not reported[rows, own].any()                 # never the user itself
    free = ~true
    free[rows, own] = False
    # by absolute position and by offset after the user's own (1 = the next position)
    offset = (np.arange(N_DIR)[None, :] - own[:, None]) % N_DIR
    for where in [np.broadcast_to(np.arange(N_DIR), free.shape), offset]:
        for v in np.unique(where[free]):
            cell = free & (where == v)
            hits = reported[cell].sum()
            assert hits > 0                              # no free position is never chosen
            _check_rate(hits, cell.sum(), q)
    # by rank among the user's free positions (slot 0 = the first free one)
    slot = np.cumsum(free, axis=1) - 1
    for s in range(N_DIR - 1):
        cell = free & (slot == s)
        if cell.any():
            _check_rate(reported[cell].sum(), cell.sum(), q)
    # independent flips: two consecutive free slots are both flipped at rate q^2
    for s in range(N_DIR - 4):
        a, b = free & (slot == s), free & (slot == s + 1)
        ra, rb = rows[a.any(axis=1)], rows[b.any(axis=1)]
        both = np.intersect1d(ra, rb)
        ia, ib = np.argmax(a[both], axis=1), np.argmax(b[both], axis=1)
        _check_rate((reported[both, ia] & reported[both, ib]).sum(), len(both), q * q)
    # true bits are kept at rate 1 - q
    _check_rate(reported[true].sum(), true.sum(), 1 - q)
    # flips per row: binomial(n_free, q), its mean within 5 standard errors
    n_free = free.sum(axis=1)
    flips = (reported & free).sum(axis=1)
    for k in np.unique(n_free):
        f = flips[n_free == k]
        assert abs(f.mean() - k * q) < 5 * math.sqrt(k * q * (1 - q) / len(f))


def test_gap_bookkeeping_across_rounds(monkeypatch):
    # The skipping draws its gaps in rounds of about mean + 4 sd draws; a long list needs
    # several. With uniforms replaced by ones whose gaps follow a known pattern (gap of
    # user i's draw number j: (i + j) % 3 == 0 -> 2, else 0), the flipped slots must be
    # exactly those of the sequential rule slot = previous slot + 1 + gap.
    q = 0.3
    calls = []

    def fake(seed, keys, counts, stream=0, start=None):
        counts = np.asarray(counts, np.int64)
        start = np.zeros(len(counts), np.int64) if start is None else np.asarray(start)
        calls.append(int(counts.sum()))
        owner = np.repeat(np.arange(len(counts)), counts)
        j = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
        j = j + np.repeat(start, counts)
        gap = np.where((owner + j) % 3 == 0, 2.0, 0.0)
        return (1 - q) ** (gap + 0.5)        # floor(ln u / ln(1 - q)) = gap

    monkeypatch.setattr(edges, "node_uniforms_ragged_fine", fake)
    n_free = np.array([0, 1, 5, 40, 3000], np.int64)
    rkeys = np.arange(1, len(n_free) + 1, dtype=np.uint64)
    owner, slot = edges._flipped_slots(7, rkeys, n_free, q)
    assert len(calls) >= 2                    # the long list took more than one round
    for i, nf in enumerate(n_free):
        want, cur, j = [], 0, 0
        while True:
            s = cur + (2 if (i + j) % 3 == 0 else 0)
            if s >= nf:
                break
            want.append(s)
            cur, j = s + 1, j + 1
        np.testing.assert_array_equal(slot[owner == i], want)
    assert (np.diff(owner) >= 0).all()
