"""PairData.from_node_ids looks the ids up with array operations: the same positions and
errors as an id -> position dict, with no Python step per pair."""

import sys

import numpy as np
import pytest

from skldp import GraphData
from skldp.model_selection import PairData


def _reference(ids, id_pairs):
    """Positions by equality, one id at a time (what from_node_ids must agree with)."""
    where = {v: i for i, v in enumerate(ids)}
    return [[where[u], where[v]] for u, v in id_pairs]


@pytest.mark.parametrize("ids", [
    np.arange(50) * 3 - 70,                                      # negative, dense: a table
    np.random.default_rng(0).choice(2 ** 62, 50, replace=False),  # hashed: a binary search
    np.arange(50, dtype=np.uint64) + np.uint64(2 ** 63),          # beyond int64
    np.arange(50, dtype=np.int32)[::-1],
    np.linspace(-100, 100, 50).astype(np.int8),                   # ids - min wraps in int8
    np.array([f"user{i}" for i in range(50)]),
    np.array([i if i % 2 else f"u{i}" for i in range(50)], dtype=object),   # mixed types
], ids=["dense", "hashed", "uint64", "int32", "int8", "text", "mixed"])
@pytest.mark.parametrize("as_list", [False, True], ids=["array", "list"])
def test_positions_are_those_of_a_lookup_by_equality(ids, as_list):
    G = GraphData(np.eye(50), node_ids=ids)
    stored = G.all_node_ids
    rng = np.random.default_rng(1)
    u = rng.integers(0, 50, 200)
    v = (u + 1 + rng.integers(0, 49, 200)) % 50
    pairs = np.empty((200, 2), dtype=stored.dtype)
    pairs[:, 0], pairs[:, 1] = stored[u], stored[v]
    given = pairs.tolist() if as_list else pairs
    P = PairData.from_node_ids(G, given)
    assert P.pairs.tolist() == _reference(stored.tolist(), pairs.tolist())
    np.testing.assert_array_equal(P.pairs, np.c_[u, v])


def test_integer_ids_of_other_widths_and_values_out_of_range():
    G = GraphData(np.eye(4), node_ids=np.array([5, 6, 7, 9], dtype=np.int16))
    assert PairData.from_node_ids(G, np.array([[9, 5]], dtype=np.int64)).pairs.tolist() == \
        [[3, 0]]
    assert PairData.from_node_ids(G, [[7.0, 6.0]]).pairs.tolist() == [[2, 1]]
    for unknown in (8, 4, 10, 2 ** 40, -(2 ** 40)):   # a gap, below, above, far off
        with pytest.raises(ValueError, match=rf"unknown node id {unknown} \(1 unknown in all\)"):
            PairData.from_node_ids(G, np.array([[5, unknown]], dtype=np.int64))
    with pytest.raises(ValueError, match=r"unknown node id 8 \(2 unknown in all\)"):
        PairData.from_node_ids(G, [[8, 5], [6, 100]])
    # int16 ids over most of their range, dense enough for a table: ids - min would wrap
    ids = np.unique(np.linspace(-30000, 30000, 8000).astype(np.int16))
    wide = GraphData(np.zeros((len(ids), 1)), node_ids=ids)
    pairs = PairData.from_node_ids(wide, np.stack([ids, np.roll(ids, 1)], 1)).pairs
    np.testing.assert_array_equal(pairs[:, 0], np.arange(len(ids)))
    huge = GraphData(np.eye(2), node_ids=np.array([0, 2 ** 64 - 1], dtype=np.uint64))
    assert PairData.from_node_ids(huge, [[2 ** 64 - 1, 0]]).pairs.tolist() == [[1, 0]]


def _python_events(f):
    """How many Python calls and built-in calls ``f()`` makes (sys.setprofile's events)."""
    count = [0]

    def profile(frame, event, arg):
        count[0] += 1

    sys.setprofile(profile)
    try:
        f()
    finally:
        sys.setprofile(None)
    return count[0]


@pytest.mark.parametrize("ids", [np.arange(4000) * 7,
                                 np.array([i if i % 2 else f"u{i}" for i in range(4000)],
                                          dtype=object)], ids=["integers", "mixed"])
def test_no_python_step_per_pair(ids):
    # a list of pairs was scanned id by id in Python (for bools, and through a dict for
    # ids of several types): 1M pairs took seconds
    G = GraphData(np.zeros((4000, 1)), node_ids=ids)
    stored = G.all_node_ids
    rng = np.random.default_rng(0)

    def pairs(m):
        u = rng.integers(0, 2000, m)
        return np.c_[stored[u], stored[u + 2000]].tolist()

    small, large = pairs(100), pairs(5000)
    events_small = _python_events(lambda: PairData.from_node_ids(G, small))
    events_large = _python_events(lambda: PairData.from_node_ids(G, large))
    assert events_large <= events_small + 10
