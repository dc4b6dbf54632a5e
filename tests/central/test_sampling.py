"""Tests of degree-bounded sampling (paper 004, Algorithm 2)."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.central import DegreeBoundedSampler, degree_bounded_sample


def _random_graph(n=300, p=0.05, seed=0):
    rng = np.random.default_rng(seed)
    A = np.triu(rng.random((n, n)) < p, 1)
    return sp.csr_matrix((A | A.T).astype(np.float32))


def _edges(S):
    S = sp.triu(S, 1).tocoo()
    return set(zip(S.row.tolist(), S.col.tolist(), strict=False))


@pytest.mark.parametrize("K", [0, 1, 3, 7, 50])
def test_degree_bound_subset_symmetry_and_maximality(K):
    A = _random_graph()
    S = degree_bounded_sample(A, K, random_state=1)
    deg = np.asarray(S.sum(axis=1)).ravel()
    assert deg.max(initial=0) <= K                       # out-degree
    assert np.asarray(S.sum(axis=0)).max(initial=0) <= K  # in-degree
    assert (S != S.T).nnz == 0
    assert _edges(S) <= _edges(A)
    assert S.diagonal().sum() == 0
    # maximal: every edge left out has an endpoint that already has K sampled edges
    missing = np.array(sorted(_edges(A) - _edges(S))).reshape(-1, 2)
    if len(missing):
        assert np.all((deg[missing[:, 0]] == K) | (deg[missing[:, 1]] == K))
    if K >= np.asarray(A.sum(axis=1)).max():
        assert _edges(S) == _edges(A)


def test_reproducible_and_seed_dependent():
    A = _random_graph()
    S1 = degree_bounded_sample(A, 3, random_state=7)
    S2 = degree_bounded_sample(A, 3, random_state=7)
    S3 = degree_bounded_sample(A, 3, random_state=8)
    assert (S1 != S2).nnz == 0
    assert (S1 != S3).nnz > 0


def test_roughly_uniform_edge_retention():
    # On the complete graph every edge plays the same role, so each must be kept
    # with the same probability p; its count over R samples is Binomial(R, p).
    n, K, R = 10, 3, 400
    A = sp.csr_matrix(np.ones((n, n)) - np.eye(n))
    counts = np.zeros((n, n))
    for r in range(R):
        counts += degree_bounded_sample(A, K, random_state=r).toarray()
    iu = np.triu_indices(n, 1)
    c = counts[iu]
    p = c.mean() / R
    sd = np.sqrt(R * p * (1 - p))
    assert np.all(np.abs(c - R * p) < 5 * sd)
    # and the greedy fills most of the capacity: n K / 2 edges at most
    assert c.sum() / R > 0.8 * n * K / 2


def test_training_nodes_restriction():
    A = _random_graph(seed=3)
    train = np.zeros(A.shape[0], dtype=bool)
    train[:100] = True
    S = degree_bounded_sample(A, 4, nodes=train, random_state=0)
    e = np.array(sorted(_edges(S)))
    assert np.all(train[e[:, 0]] | train[e[:, 1]])
    S_idx = degree_bounded_sample(A, 4, nodes=np.flatnonzero(train), random_state=0)
    assert (S != S_idx).nnz == 0
    # an edge from a training node to another node is a candidate (Algorithm 2 adds a
    # training node's edges): on a path 0-1-2-3 with K = 2 and training node 1, both of
    # its edges are kept, and the edge 2-3 between two other nodes never is
    path = sp.csr_matrix(np.eye(4, k=1) + np.eye(4, k=-1))
    for nodes in ([1], [False, True, False, False]):
        S = degree_bounded_sample(path, 2, nodes=nodes, random_state=0)
        assert sorted(_edges(S)) == [(0, 1), (1, 2)]


def test_bad_input():
    A = _random_graph(n=20)
    for K in (-1, 2.5, "3", None):
        with pytest.raises((ValueError, TypeError), match="max_degree"):
            degree_bounded_sample(A, K)
    D = sp.csr_matrix(np.triu(np.ones((5, 5)), 1))
    with pytest.raises(ValueError, match="symmetric"):
        degree_bounded_sample(D, 2)


def test_transformer_on_graphdata():
    A = _random_graph(n=80)
    G = GraphData(np.eye(80), A)
    t = DegreeBoundedSampler(2, random_state=0).fit(G[:40])
    out = t.transform(G[:40])
    assert len(out) == 40 and out.n_nodes == 80
    assert np.asarray(out.adjacency.sum(axis=1)).max() <= 2
    assert _edges(out.adjacency) <= _edges(A)
    # same sample for every view of the same graph (computed once per fitted step)
    assert (t.transform(G[40:]).adjacency != out.adjacency).nnz == 0
    with pytest.raises(ValueError, match="max_degree"):
        DegreeBoundedSampler(-2).fit(G)


def test_random_state_none_uses_os_entropy_not_numpy_global_state():
    A = _random_graph(n=200, p=0.1)
    np.random.seed(0)
    state = np.random.get_state()
    a = degree_bounded_sample(A, 2)
    np.testing.assert_array_equal(np.random.get_state()[1], state[1])  # untouched
    np.random.seed(0)
    b = degree_bounded_sample(A, 2)
    assert _edges(a) != _edges(b)  # same global seed, different samples


def test_sampler_seed_is_never_a_shared_objects_raw_draw():
    # a RandomState shared with a mechanism is copied into both by clone: the sampler's
    # public seed_ must not be the number the mechanism's collection is keyed with
    from skldp.utils import draw_seed
    G = GraphData(np.eye(4), sp.csr_matrix(np.ones((4, 4)) - np.eye(4)))
    s = DegreeBoundedSampler(max_degree=2, random_state=np.random.RandomState(3)).fit(G)
    assert s.seed_ != draw_seed(np.random.RandomState(3))
    assert DegreeBoundedSampler(max_degree=2, random_state=3).fit(G).seed_ == draw_seed(3)


def test_stored_zeros_are_no_edges():
    # a matrix whose entries are all stored zeros has no edge: 12 were sampled
    A = sp.csr_matrix(np.ones((6, 6)) - np.eye(6))
    A.data[:] = 0.0
    before = A.copy()
    assert degree_bounded_sample(A, 2, random_state=0).nnz == 0
    assert (A != before).nnz == 0 and A.nnz == before.nnz   # the caller's matrix untouched


@pytest.mark.parametrize("nodes", [[-1], [0, 10], [0.5], [[0, 1]], ["a"]])
def test_training_nodes_outside_the_graph_or_not_integers_are_refused(nodes):
    # -1 silently named the last node, 0.5 node 0; 10 raised numpy's IndexError
    A = sp.csr_matrix(np.ones((10, 10)) - np.eye(10))
    with pytest.raises(ValueError, match="nodes"):
        degree_bounded_sample(A, 2, nodes=nodes, random_state=0)
    # integer-valued positions of any integer dtype (and an empty list) still work
    for ok in ([0, 9], np.array([0, 9], dtype=np.uint8), []):
        degree_bounded_sample(A, 2, nodes=ok, random_state=0)


def test_sampler_accepts_a_generator_as_its_docstring_says():
    # the docstring said "int, RandomState or None"; a Generator is accepted: the seed
    # is drawn from it (advancing it), so fresh generators of one seed give one sample
    A = _random_graph(n=80)
    G = GraphData(np.eye(80), A)

    def sample(rs):
        return DegreeBoundedSampler(2, random_state=rs).fit_transform(G).adjacency

    assert (sample(np.random.default_rng(5)) != sample(np.random.default_rng(5))).nnz == 0
    rng = np.random.default_rng(5)
    s1 = DegreeBoundedSampler(2, random_state=rng).fit(G).seed_
    assert DegreeBoundedSampler(2, random_state=rng).fit(G).seed_ != s1   # rng advanced
    doc = DegreeBoundedSampler.__doc__
    line = next(ln for ln in doc.splitlines() if ln.strip().startswith("random_state :"))
    assert "Generator" in line


@pytest.mark.parametrize("K", [1, 2])
def test_equal_priorities_cannot_stall_the_greedy_rounds(monkeypatch, K):
    # Priorities that tie (here all equal) were ranked by their position at each endpoint,
    # so on a triangle with K = 1 every edge was second at one of its ends: no round
    # accepted anything and the loop never ended. Ties now break by edge, the same way at
    # both ends, so the first edge is first at both.
    import threading

    import skldp.central._sampling as sampling

    class Flat:   # a generator whose draws all tie
        def random_sample(self, size):
            return np.zeros(size)
    monkeypatch.setattr(sampling, "check_random_state", lambda seed: Flat())
    A = sp.csr_matrix(np.ones((5, 5)) - np.eye(5))   # triangles everywhere
    out = []
    t = threading.Thread(target=lambda: out.append(degree_bounded_sample(A, K, random_state=0)),
                         daemon=True)
    t.start()
    t.join(30)
    assert out, "degree_bounded_sample did not finish"
    S = out[0]
    deg = np.asarray(S.sum(axis=1)).ravel()
    assert deg.max() <= K and (S != S.T).nnz == 0
    missing = np.array(sorted(_edges(A) - _edges(S))).reshape(-1, 2)   # still maximal
    assert np.all((deg[missing[:, 0]] == K) | (deg[missing[:, 1]] == K))


@pytest.mark.parametrize("K", [2**63, 10**20])
def test_a_degree_bound_past_int64_keeps_every_edge(K):
    # the per-node capacity was np.full(n, K, dtype=np.int64): OverflowError
    A = _random_graph(n=50, p=0.2)
    S = degree_bounded_sample(A, K, random_state=0)
    assert _edges(S) == _edges(A)
    G = DegreeBoundedSampler(K, random_state=0).fit_transform(GraphData(np.eye(50), A))
    assert _edges(G.adjacency) == _edges(A)
