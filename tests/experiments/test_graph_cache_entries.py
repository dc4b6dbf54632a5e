"""GraphCache: what the content key covers, entries of another format, what is written."""

import joblib
import numpy as np
import scipy.sparse as sp

from skldp import GraphData
from skldp.experiments import GraphCache, graph_content_key
from skldp.mechanisms import HDSMechanism


def _graph(seed=0, n=30, d=4):
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.2, random_state=seed, format="csr")
    A = ((A + A.T) > 0).astype(float)
    A.setdiag(0)
    A.eliminate_zeros()
    return (rng.random((n, d)) < 0.5).astype(float), sp.csr_matrix(A)


def test_the_content_key_covers_adjacency_and_feature_names():
    X, A = _graph()
    key = graph_content_key(GraphData(X, A))
    assert graph_content_key(GraphData(X.copy(), A.copy())) == key
    B = A.tolil()
    B[0, 1] = B[1, 0] = 1 - B[0, 1]
    assert graph_content_key(GraphData(X, B.tocsr())) != key          # one edge more or less
    named = GraphData(X, A, feature_names=["a", "b", "c", "d"])
    renamed = GraphData(X, A, feature_names=["a", "b", "c", "e"])
    assert len({key, graph_content_key(named), graph_content_key(renamed)}) == 3


def test_an_entry_of_another_format_is_recomputed(tmp_path):
    X, A = _graph()
    step = HDSMechanism(eps=1.0, k=2, feature_range=(0, 1), random_state=0)
    with GraphCache(tmp_path / "cache") as cache:
        Z = np.asarray(step.fit_transform(GraphData(X, A)))
    (entry,) = cache.entries()
    joblib.dump({"format": "skldp-graph-cache-v0", "features": np.zeros_like(Z),
                 "feature_names": None}, entry)
    with GraphCache(tmp_path / "cache") as cache:
        Z2 = np.asarray(step.fit_transform(GraphData(X.copy(), A.copy())))
    assert cache.hits == 0 and cache.misses == 1
    np.testing.assert_array_equal(Z2, Z)
    assert joblib.load(entry)["format"] == "skldp-graph-cache-v1"     # written again


class _Step:
    """A stand-in graph step (the cache only needs its token and its output)."""


def test_only_new_features_over_the_same_graph_are_written(tmp_path):
    X, A = _graph()
    G = GraphData(X, A)
    other_edges = GraphData(X, _graph(seed=1)[1])
    with GraphCache(tmp_path / "cache", allow_raw=True) as cache:
        out = cache.fetch(_Step(), G, "token-a", lambda: other_edges)
        assert out is other_edges
        assert cache.entries() == [] and cache.skipped == 1       # the adjacency: never
        cache.fetch(_Step(), G, "token-b", lambda: G.with_features(X * 2))
        assert len(cache.entries()) == 1 and cache.misses == 1
        again = cache.fetch(_Step(), GraphData(X.copy(), A.copy()), "token-b",
                            lambda: None)
    assert cache.hits == 1
    np.testing.assert_array_equal(np.asarray(again.features), X * 2)
