"""Randomized response on adjacency lists (edge LDP), as each device runs it.

User ``i`` holds a bit per other user of a public directory of ``n`` users
(``1`` for its neighbours) and flips each bit with probability ``q = 1 / (1 +
e^eps)`` (Lin et al., IEEE TIFS 2022, eq. (5)). The report is the list of the
users whose bit is 1 after the flips, named by their positions in the directory
sorted by user key.

The ``n - 1 - deg`` bits that are 0 are never scanned one by one: the positions
of the flipped ones among them are drawn by geometric skipping (the gap to the
next flipped bit is ``floor(ln U / ln(1 - q))``, a geometric variable, so every
free bit is flipped independently with probability ``q``), and the ``deg`` true
bits are kept independently with probability ``1 - q``. Cost and memory grow
with the report's length, not with ``n``. Every draw is keyed by the seed and the
user's report key (a kept true bit by the pair of the user's report key and the
neighbour's key), so a report depends only on them and on the user's own list.
"""

import numpy as np

from ._random import node_uniforms_ragged_fine, pair_uniforms

__all__ = ["flip_probability", "randomized_lists"]

# streams of the per-user randomness (independent quantities)
_S_KEEP, _S_GAP = 0, 1


def flip_probability(eps):
    """``1 / (1 + e^eps)``, the probability of flipping one bit (0 for ``eps = inf``)."""
    eps = float(eps)
    return 0.0 if eps == np.inf else float(1.0 / (1.0 + np.exp(eps)))


def _segment_cumsum(values, counts):
    """Cumulative sums of ``values`` restarted at every segment of ``counts`` entries."""
    cs = np.cumsum(values)
    if len(cs) == 0:
        return cs
    starts = np.cumsum(counts) - counts
    before = np.where(starts > 0, cs[np.maximum(starts - 1, 0)], 0)
    return cs - np.repeat(before, counts)


def _flipped_slots(seed, rkeys, n_free, q):
    """Positions (among each user's free slots) of the flipped-in bits: (owner, slot) sorted."""
    m = len(rkeys)
    owners, slots = [], []
    if q <= 0 or m == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    log_keep = np.log1p(-q)
    cur = np.zeros(m, dtype=np.int64)     # next slot a gap starts from
    used = np.zeros(m, dtype=np.int64)    # draws consumed so far (the counter of the stream)
    active = n_free > 0
    while active.any():
        left = np.where(active, n_free - cur, 0).astype(np.float64)
        mean = left * q
        draws = np.where(active, np.ceil(mean + 4.0 * np.sqrt(mean) + 2.0), 0).astype(np.int64)
        u = node_uniforms_ragged_fine(seed, rkeys, draws, stream=_S_GAP, start=used)
        # geometric gaps, capped (any gap beyond the free slots ends the user's list)
        gap = np.minimum(np.floor(np.log(u) / log_keep), float(n_free.max()) + 1.0)
        owner = np.repeat(np.arange(m), draws)
        slot = cur[owner] + _segment_cumsum(gap.astype(np.int64) + 1, draws) - 1
        take = slot < n_free[owner]
        owners.append(owner[take])
        slots.append(slot[take])
        cur = cur + np.bincount(owner, weights=gap + 1, minlength=m).astype(np.int64)
        used += draws
        active = active & (cur < n_free)
    if not owners:   # every user is linked to every other: no free slot to flip in
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    owner, slot = np.concatenate(owners), np.concatenate(slots)
    if len(owners) > 1:   # rounds append later slots: order by (owner, slot)
        order = np.argsort(owner, kind="stable")
        owner, slot = owner[order], slot[order]
    return owner, slot


def randomized_lists(seed, rkeys, own_pos, nbr_ptr, nbr_pos, nbr_keys, n, q):
    """The randomized adjacency lists of a block of users.

    Parameters
    ----------
    seed : int
        The collection's seed (the server's simulation) or the device's secret.
    rkeys : ndarray of uint64 of shape (m,)
        Each user's report key.
    own_pos : ndarray of int of shape (m,)
        Each user's position in the directory (sorted by user key).
    nbr_ptr : ndarray of int of shape (m + 1,)
        Row pointers of the users' neighbour lists in ``nbr_pos``.
    nbr_pos : ndarray of int
        The neighbours' positions in the directory, increasing within each user,
        the user itself excluded.
    nbr_keys : ndarray of uint64
        The neighbours' user keys (aligned with ``nbr_pos``).
    n : int
        Size of the directory.
    q : float
        Flip probability (:func:`flip_probability`).

    Returns
    -------
    ptr : ndarray of int64 of shape (m + 1,)
    pos : ndarray of int64
        Each user's reported positions, increasing.
    """
    rkeys = np.asarray(rkeys, dtype=np.uint64)
    own_pos = np.asarray(own_pos, dtype=np.int64)
    nbr_ptr = np.asarray(nbr_ptr, dtype=np.int64)
    nbr_pos = np.asarray(nbr_pos, dtype=np.int64)
    m = len(rkeys)
    deg = np.diff(nbr_ptr)
    # true bits: kept with probability 1 - q
    t_owner = np.repeat(np.arange(m), deg)
    keep = pair_uniforms(seed, rkeys[t_owner], nbr_keys, _S_KEEP) >= q
    # flipped-in bits: slots among the free positions (not the user, not a neighbour)
    n_free = n - 1 - deg
    f_owner, f_slot = _flipped_slots(seed, rkeys, n_free, q)
    # slot s of a user is the position s + #{excluded positions e_t with e_t - t <= s},
    # e sorted (the user and its neighbours): one search over all users of the block
    stride = np.int64(n + 1)
    e = np.sort(np.concatenate([np.arange(m) * stride + own_pos, t_owner * stride + nbr_pos]))
    e_owner = e // stride
    e_count = deg + 1
    e_start = np.cumsum(e_count) - e_count
    rank = np.arange(len(e)) - np.repeat(e_start, e_count)
    codes = e - rank          # owner * stride + (e_t - t), increasing
    before = np.searchsorted(codes, f_owner * stride + f_slot, side="right") - e_start[f_owner]
    del e, e_owner, codes, rank
    f_pos = f_slot + before
    # both parts are grouped by owner: one sort of (owner, position) codes merges them
    merged = np.sort(np.concatenate([t_owner[keep] * stride + nbr_pos[keep],
                                     f_owner * stride + f_pos]))
    ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(merged // stride, minlength=m), out=ptr[1:])
    return ptr, merged % stride
