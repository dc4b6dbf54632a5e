import importlib.util
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import StandardScaler
from sklearn.utils import _safe_indexing

from skldp import GraphData, NodeWise
from skldp.model_selection import PairData, random_edge_split, sample_non_edges


def _sbm(n=80, seed=0, d=4):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    P = np.where(y[:, None] == y[None, :], 0.25, 0.02)
    A = np.triu(rng.random((n, n)) < P, 1)
    A = (A | A.T).astype(float)
    X = rng.normal(size=(n, d))
    return GraphData(X, sp.csr_array(A), node_ids=np.arange(n) * 10 + 7)


def _codes(pairs, n):
    u, v = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
    return u.astype(np.int64) * n + v


def test_split_sizes_labels_and_no_leakage():
    G = _sbm()
    A = G.adjacency
    m = A.nnz // 2
    P_tr, P_va, P_te, y_tr, y_va, y_te = random_edge_split(G, random_state=0)
    n_va, n_te = int(np.floor(0.05 * m)), int(np.floor(0.1 * m))
    assert (int(y_va.sum()), int(y_te.sum())) == (n_va, n_te)
    assert int(y_tr.sum()) == m - n_va - n_te
    for P, y in ((P_tr, y_tr), (P_va, y_va), (P_te, y_te)):
        assert len(P) == len(y) == 2 * int(y.sum())  # as many non-edges as edges
        assert set(np.unique(y)) == {0, 1}
        # positives are edges of G, negatives are not, no self pairs
        is_edge = np.asarray(A[P.pairs[:, 0], P.pairs[:, 1]]).ravel() > 0
        np.testing.assert_array_equal(is_edge, y == 1)
        assert np.all(P.pairs[:, 0] != P.pairs[:, 1])
    # all parts live on the same training graph, which lacks every held-out edge
    A_tr = P_tr.graph.adjacency
    assert P_va.token == P_te.token == P_tr.token != G.token
    assert A_tr.nnz == 2 * int(y_tr.sum())
    held = np.concatenate([P_va.pairs[y_va == 1], P_te.pairs[y_te == 1]])
    assert np.all(np.asarray(A_tr[held[:, 0], held[:, 1]]).ravel() == 0)
    tr_pos = P_tr.pairs[y_tr == 1]
    assert np.all(np.asarray(A_tr[tr_pos[:, 0], tr_pos[:, 1]]).ravel() == 1)
    assert (A_tr != A_tr.T).nnz == 0
    # features and node ids are shared, not copied
    assert P_tr.features is G.features
    np.testing.assert_array_equal(P_tr.all_node_ids, G.all_node_ids)
    # no duplicate pair anywhere, parts disjoint
    allp = np.concatenate([P_tr.pairs, P_va.pairs, P_te.pairs])
    assert len(np.unique(_codes(allp, G.n_nodes))) == len(allp)


def test_split_reproducible_and_seed_dependent():
    G = _sbm()
    a = random_edge_split(G, random_state=3)
    b = random_edge_split(G, random_state=3)
    c = random_edge_split(G, random_state=4)
    for x, y in zip(a[:3], b[:3], strict=True):
        np.testing.assert_array_equal(x.pairs, y.pairs)
    for x, y in zip(a[3:], b[3:], strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[2].pairs, c[2].pairs)


def test_negative_ratio_and_custom_sizes():
    G = _sbm()
    m = G.adjacency.nnz // 2
    P_tr, P_va, P_te, y_tr, y_va, y_te = random_edge_split(
        G, val_size=0.1, test_size=0.2, negative_ratio=2.0, random_state=0)
    assert int(y_te.sum()) == int(np.floor(0.2 * m))
    assert np.count_nonzero(y_te == 0) == 2 * int(y_te.sum())


def test_sample_non_edges_properties_both_paths(monkeypatch):
    G = _sbm(n=60)
    A = G.adjacency
    n = G.n_nodes
    import skldp.model_selection._edge_splits as es
    for enumerate_max in (1 << 23, 10):  # exact enumeration and rejection sampling
        monkeypatch.setattr(es, "_ENUMERATE_MAX", enumerate_max)
        pairs = sample_non_edges(A, 300, random_state=0)
        assert pairs.shape == (300, 2)
        assert np.all(pairs[:, 0] < pairs[:, 1])
        assert len(np.unique(_codes(pairs, n))) == 300
        assert np.all(np.asarray(A[pairs[:, 0], pairs[:, 1]]).ravel() == 0)
    # uniformity over the non-edges: every non-edge has the same chance
    total = n * (n - 1) // 2 - A.nnz // 2
    monkeypatch.setattr(es, "_ENUMERATE_MAX", 10)
    counts = np.zeros(n * n)
    reps, k = 200, 100
    for s in range(reps):
        counts[_codes(sample_non_edges(A, k, random_state=s), n)] += 1
    hits = counts[counts > 0]
    p = k / total
    # mean hit count over all non-edges is exactly reps * p; its spread is binomial
    assert abs(counts.sum() / total - reps * p) < 1e-9
    assert hits.max() < reps * p + 8 * np.sqrt(reps * p * (1 - p)) + 2


def test_edge_lookup_bitmap_and_search_agree_with_the_edges(monkeypatch):
    """Pair codes are looked up in a bitmap (small graphs) or by binary search in the
    sorted codes (large ones): both say exactly which pairs are edges, weights and
    the lower triangle apart."""
    import skldp.model_selection._edge_splits as es
    A = sp.random(70, 70, density=0.1, random_state=0, format="csr")
    A = (A + A.T).tocsr()
    A.data[::3] = 2.5   # any stored weight is an edge
    n = A.shape[0]
    i, j = np.triu_indices(n, k=1)
    c = i.astype(np.int64) * n + j
    truth = np.asarray(A[i, j]).ravel() != 0
    codes = es.edge_codes(A)
    assert np.all(np.diff(codes) > 0) and len(codes) == truth.sum()
    for budget in (1 << 26, 0):   # bitmap; binary search
        monkeypatch.setattr(es, "_EDGE_BITMAP_BYTES", budget)
        is_edge = es.edge_lookup(codes, n)
        assert np.array_equal(is_edge(c), truth)
        empty = es.edge_lookup(es.edge_codes(sp.csr_matrix((n, n))), n)
        assert not empty(c).any() and empty(c).shape == c.shape


def test_all_non_edges_and_too_many():
    A = sp.csr_array(np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]))
    pairs = sample_non_edges(A, 5, random_state=0)  # 6 pairs - 1 edge = 5 non-edges
    assert sorted(map(tuple, pairs.tolist())) == [(0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    with pytest.raises(ValueError, match="only 5"):
        sample_non_edges(A, 6, random_state=0)
    # a complete graph has no non-edge: the split must refuse
    K = sp.csr_array(np.ones((5, 5)) - np.eye(5))
    with pytest.raises(ValueError, match="non-edges"):
        random_edge_split(GraphData(np.eye(5), K), random_state=0)


def test_bad_graphs_and_sizes():
    D = sp.csr_array(np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]]))
    with pytest.raises(ValueError, match="undirected"):
        random_edge_split(GraphData(np.eye(3), D))
    with pytest.raises(ValueError, match="no adjacency"):
        random_edge_split(GraphData(np.eye(3)))
    with pytest.raises(TypeError, match="GraphData"):
        random_edge_split(np.eye(3))
    G = _sbm()
    with pytest.raises(ValueError, match="< 1"):
        random_edge_split(G, val_size=0.5, test_size=0.5)
    with pytest.raises(ValueError, match="test_size"):
        random_edge_split(G, test_size=-0.1)


def test_pairdata_validation():
    G = _sbm(n=10)
    with pytest.raises(ValueError, match="unknown node position 10"):
        PairData(G, [[0, 1], [3, 10]])
    with pytest.raises(ValueError, match="unknown node position -1"):
        PairData(G, [[-1, 1]])
    with pytest.raises(ValueError, match="self pair"):
        PairData(G, [[0, 1], [4, 4]])
    with pytest.raises(ValueError, match="shape"):
        PairData(G, [0, 1, 2])
    with pytest.raises(TypeError, match="integer"):
        PairData(G, [[0.5, 1]])
    with pytest.raises(TypeError, match="GraphData"):
        PairData(np.eye(3), [[0, 1]])
    # were "unknown node position -9223372036854775808" with a cast warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"unknown node position inf \(pair 0\)"):
            PairData(G, np.array([[0, np.inf]]))
        with pytest.raises(ValueError, match=r"unknown node position 1e\+30"):
            PairData(G, np.array([[0, 1e30]]))
        with pytest.raises(ValueError, match="unknown node position 9223372036854775808"):
            PairData(G, np.array([[0, 2**63]], dtype=np.uint64))
    # node ids instead of positions
    P = PairData.from_node_ids(G, [[7, 17], [97, 27]])
    np.testing.assert_array_equal(P.pairs, [[0, 1], [9, 2]])
    np.testing.assert_array_equal(P.node_ids, [[7, 17], [97, 27]])
    with pytest.raises(ValueError, match="unknown node id 8"):
        PairData.from_node_ids(G, [[7, 8]])


def test_pairdata_indexing_and_array_view():
    G = _sbm(n=20)
    P = PairData(G, [[0, 1], [2, 3], [4, 5], [1, 9]])
    assert P.shape == (4, G.shape[1]) and len(P) == 4
    sub = P[[3, 0]]
    assert isinstance(sub, PairData) and sub.pairs.tolist() == [[1, 9], [0, 1]]
    assert P[1].pairs.tolist() == [[2, 3]]
    assert P[1:3].pairs.tolist() == [[2, 3], [4, 5]]
    assert P[np.array([True, False, False, True])].pairs.tolist() == [[0, 1], [1, 9]]
    with pytest.raises(IndexError):
        P[np.array([True, False])]
    with pytest.raises(IndexError):
        P[0, 1]
    picked = _safe_indexing(P, np.array([2, 1]))
    assert isinstance(picked, PairData) and picked.pairs.tolist() == [[4, 5], [2, 3]]
    assert sub.token == P.token  # views share the graph
    np.testing.assert_array_equal(P.rows, [0, 1, 2, 3, 4, 5, 9])
    X = G.features
    np.testing.assert_allclose(np.asarray(P), X[[0, 2, 4, 1]] * X[[1, 3, 5, 9]])
    # sparse features give the same Hadamard view
    Ps = PairData(GraphData(sp.csr_matrix(X), G.adjacency), P.pairs)
    np.testing.assert_allclose(np.asarray(Ps), np.asarray(P))
    if importlib.util.find_spec("pandas") is not None:  # optional: the export only
        assert P.to_pandas().shape == (4, 2)
    Q = pickle.loads(pickle.dumps(P))
    np.testing.assert_array_equal(Q.pairs, P.pairs)
    np.testing.assert_allclose(np.asarray(Q), np.asarray(P))
    assert "4 node pairs" in repr(P)


def test_graph_transformers_keep_pairs():
    G = _sbm(n=30)
    P = PairData(G, [[0, 1], [2, 3], [5, 29]])
    # a node-level step fitted on pairs transforms all nodes and returns the same pairs
    out = NodeWise(StandardScaler()).fit(P).transform(P)
    assert isinstance(out, PairData)
    np.testing.assert_array_equal(out.pairs, P.pairs)
    assert out.n_nodes == G.n_nodes and out.adjacency is G.adjacency
    P2 = P.with_features(G.features * 2)
    assert isinstance(P2, PairData)
    np.testing.assert_allclose(np.asarray(P2), 4 * np.asarray(P))
    with pytest.raises(ValueError, match="nodes"):
        P._rebase(GraphData(np.eye(3)))


def test_pairdata_has_one_home_and_the_old_name_warns():
    import skldp.model_selection
    import skldp.models
    assert "PairData" in skldp.model_selection.__all__
    assert "PairData" not in skldp.models.__all__
    with pytest.warns(FutureWarning, match="import it from skldp.model_selection"):
        old = skldp.models.PairData
    assert old is PairData
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        getattr(skldp.models, "Nope")  # noqa: B009


def test_sample_non_edges_reads_a_graphdata_through_its_adjacency():
    # a complete graph has no non-edge, whatever its features (5 x 2 zeros)
    K = np.ones((5, 5)) - np.eye(5)
    with pytest.raises(ValueError, match="only 0"):
        sample_non_edges(GraphData(np.zeros((5, 2)), K), 3, random_state=0)
    # a view samples over all nodes of its graph, as the matrix does
    G = _sbm(n=30)
    for H in (G, G[[0, 1, 2]]):
        pairs = sample_non_edges(H, 50, random_state=0)
        np.testing.assert_array_equal(pairs, sample_non_edges(G.adjacency, 50, random_state=0))
        assert np.all(np.asarray(G.adjacency[pairs[:, 0], pairs[:, 1]]).ravel() == 0)
    with pytest.raises(ValueError, match="no adjacency"):
        sample_non_edges(GraphData(np.zeros((5, 2)), None), 1, random_state=0)


@pytest.mark.parametrize("one_sided", [np.tril, np.triu])
def test_sample_non_edges_refuses_one_sided_or_directed_graphs(one_sided):
    # edges stored on one side of the diagonal only must not come back as non-edges
    L = one_sided(np.ones((4, 4)), 0) - np.eye(4)
    for A in (sp.csr_matrix(L), sp.csr_array(L), L, GraphData(np.eye(4), L)):
        with pytest.raises(ValueError, match=r"undirected graph.*A\.maximum\(A\.T\)"):
            sample_non_edges(A, 3, random_state=0)
    # symmetrised, it is accepted; the pattern counts, not the weights
    S = sp.csr_matrix(L).maximum(sp.csr_matrix(L).T).tolil()
    S[1, 3] = 0
    S[3, 1] = 0
    S[0, 1] = 2.5
    assert sample_non_edges(sp.csr_matrix(S), 1, random_state=0).tolist() == [[1, 3]]


def test_sample_non_edges_refuses_non_square_input():
    for A in (np.ones((5, 2)), sp.csr_matrix(np.ones((5, 2))), np.ones(5)):
        with pytest.raises(ValueError, match="square adjacency"):
            sample_non_edges(A, 3, random_state=0)
    with pytest.raises(ValueError, match="n_samples must be an integer >= 0, got -1"):
        sample_non_edges(_sbm(n=10).adjacency, -1, random_state=0)


def test_sample_non_edges_keeps_a_non_canonical_input_unchanged():
    # duplicates are summed on a copy: the caller's matrix is left as it was
    A = sp.csr_matrix((np.ones(4), np.array([1, 1, 0, 0]), np.array([0, 2, 4, 4])),
                      shape=(3, 3))
    assert not A.has_canonical_format
    before = A.indices.copy()
    assert sample_non_edges(A, 2, random_state=0).tolist() in ([[0, 2], [1, 2]],
                                                               [[1, 2], [0, 2]])
    np.testing.assert_array_equal(A.indices, before)


def test_a_numpy_generator_is_refused_naming_random_state():
    # check_random_state's message named neither the parameter nor what it accepts
    A = sp.csr_matrix(np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]))
    with pytest.raises(ValueError, match=r"random_state must be an int, a "
                                         r"numpy RandomState or None.*Generator"):
        sample_non_edges(A, 2, random_state=np.random.default_rng(0))
