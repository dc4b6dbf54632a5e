"""User keys of ids in every form that names the same user: tuples of numpy scalars,
floats beyond 2**53, lists of Python ints beyond int64."""

import hashlib

import networkx as nx
import numpy as np
import pytest

from skldp import GraphData
from skldp.device._random import ids_to_keys
from skldp.mechanisms import LaplaceMechanism


def _objects(ids):
    out = np.empty(len(ids), dtype=object)
    out[:] = list(ids)
    return out


def _text_key(text):
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def test_tuples_of_numpy_scalars_key_as_the_equal_plain_tuples():
    # numpy 2 writes (np.int64(0), np.int64(0)): the user (0, 0) got a second key, so
    # it answered a collection twice and its budget was charged apart
    plain = [(0, 0), (0, 1), ("a", 2.5), ((1, "b"), True), (2**70, -3)]
    numpy_ = [(np.int64(0), np.int64(0)), (np.int32(0), np.uint8(1)),
              (np.str_("a"), np.float64(2.5)), ((np.int16(1), np.str_("b")), np.bool_(True)),
              (2**70, np.int64(-3))]
    keys = ids_to_keys(_objects(plain))
    # the keys of plain tuples are as they were: the digest of their text
    assert keys.tolist() == [_text_key(str(t)) for t in plain]
    np.testing.assert_array_equal(ids_to_keys(_objects(numpy_)), keys)
    # beside numbers (the loop over mixed ids) too
    np.testing.assert_array_equal(ids_to_keys(_objects([7, *numpy_]))[1:], keys)
    assert ids_to_keys(_objects([7, *numpy_]))[0] == 7


def test_networkx_tuple_nodes_of_numpy_ints_are_the_same_users():
    g = nx.grid_2d_graph(2, 2)
    ids_py = list(g.nodes)
    ids_np = [tuple(r) for r in np.array(ids_py)]
    X = np.random.default_rng(0).random((4, 2))
    G = GraphData(X, g, node_ids=ids_py)
    G2 = GraphData(X, g, node_ids=ids_np, population=G)
    np.testing.assert_array_equal(G2.node_keys, G.node_keys)
    # a graph whose nodes are themselves tuples of numpy ints
    g_np = nx.relabel_nodes(g, dict(zip(ids_py, ids_np, strict=True)))
    G3 = GraphData(X, g_np, node_ids=list(g_np.nodes), population=G)
    np.testing.assert_array_equal(G3.node_keys, G.node_keys)
    # one collection, one answer per user: the second view gets the same reports
    m = LaplaceMechanism(eps=1.0, feature_range=(0, 2), random_state=7).fit(G)
    np.testing.assert_array_equal(np.asarray(m.transform(G2)), np.asarray(m.transform(G)))
    np.testing.assert_array_equal(G.ledger.spent(G.node_keys), np.ones(4))
    # a second collection past the budget is refused for these users
    Gb = GraphData(X, g, node_ids=ids_py, budget=1.5)
    LaplaceMechanism(eps=1.0, feature_range=(0, 2), random_state=7).fit(Gb).transform(Gb)
    Gb2 = GraphData(X, g, node_ids=ids_np, population=Gb)
    with pytest.raises(ValueError, match="budget"):
        LaplaceMechanism(eps=1.0, feature_range=(0, 2), random_state=8).fit(Gb2).transform(Gb2)
