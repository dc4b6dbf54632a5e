"""Tests of GCNAggregation (paper 000 eqs. (1), (4))."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.mechanisms import OneBitMechanism
from skldp.propagation import GCNAggregation


def _toy_graph():
    """6 nodes: a path 0-1-2-3-5 and an isolated node 4."""
    A = np.zeros((6, 6))
    for u, v in [(0, 1), (1, 2), (2, 3), (3, 5)]:
        A[u, v] = A[v, u] = 1.0
    X = np.arange(18, dtype=float).reshape(6, 3) / 10.0
    return A, X


def _dense_gcn(A, X, self_loops, normalization):
    """Paper 000 eq. (1) written node by node (reference, test only)."""
    n = len(A)
    Ah = A + np.eye(n) if self_loops else A.copy()
    deg = Ah.sum(axis=1)
    out = np.zeros_like(X)
    for v in range(n):
        for u in np.flatnonzero(Ah[v]):
            if normalization == "sym":
                w = Ah[v, u] / np.sqrt(deg[u] * deg[v])
            elif normalization == "rw":
                w = Ah[v, u] / deg[v]
            else:
                w = Ah[v, u]
            out[v] += w * X[u]
    return out


@pytest.mark.parametrize("self_loops", [True, False])
@pytest.mark.parametrize("normalization", ["sym", "rw", None])
@pytest.mark.parametrize("sparse_x", [False, True])
def test_matches_dense_reference(self_loops, normalization, sparse_x):
    A, X = _toy_graph()
    G = GraphData(sp.csr_matrix(X) if sparse_x else X, sp.csr_matrix(A))
    agg = GCNAggregation(self_loops=self_loops, normalization=normalization)
    Z = agg.fit(G).transform(G)
    got = Z.features.toarray() if sp.issparse(Z.features) else Z.features
    np.testing.assert_allclose(got, _dense_gcn(A, X, self_loops, normalization), rtol=1e-6,
                               atol=1e-7)


def test_default_is_paper_eq1_and_isolated_node_rule():
    A, X = _toy_graph()
    G = GraphData(X, sp.csr_matrix(A))
    Z = np.asarray(GCNAggregation().fit_transform(G))
    # eq. (1): node 1 has N(1) = {0, 1, 2}, degrees with self loops 2, 3, 3
    expected = X[0] / np.sqrt(2 * 3) + X[1] / 3 + X[2] / 3
    np.testing.assert_allclose(Z[1], expected, rtol=1e-6)
    # isolated node 4 keeps its own features (self loop only) ...
    np.testing.assert_allclose(Z[4], X[4], rtol=1e-6)
    # ... and gets zeros without self loops
    Z0 = np.asarray(GCNAggregation(self_loops=False).fit_transform(G))
    np.testing.assert_array_equal(Z0[4], 0.0)


def test_view_rows_and_memo():
    A, X = _toy_graph()
    G = GraphData(X, sp.csr_matrix(A))
    agg = GCNAggregation().fit(G[[0, 1]])
    full = np.asarray(agg.transform(G))
    sub = agg.transform(G[[5, 2]])
    assert isinstance(sub, GraphData) and sub.shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(sub), full[[5, 2]])
    np.testing.assert_array_equal(np.asarray(pickle.loads(pickle.dumps(agg)).transform(G)), full)


def test_unbiased_estimate_of_graph_convolution_lemma2():
    """Averaged over many users, the estimate from one-bit reports recovers GC(v).

    One collection over ``reps`` disjoint copies of a small graph: copy r of
    node v is an independent user with the same features and neighbourhood.
    """
    rng = np.random.default_rng(0)
    n, reps = 12, 3000
    A = np.triu(rng.random((n, n)) < 0.3, 1)
    A = (A | A.T).astype(float)
    X = rng.random((n, 2))
    big = GraphData(np.tile(X, (reps, 1)), sp.block_diag([sp.csr_matrix(A)] * reps, "csr"))
    agg = GCNAggregation().fit(big)
    mech = OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)
    est = np.asarray(agg.transform(mech.fit_transform(big))).reshape(reps, n, 2).mean(axis=0)
    small = GraphData(X, sp.csr_matrix(A))
    true = np.asarray(agg.transform(small))
    P = agg.propagation_matrix(small).toarray()
    var = (P ** 2) @ mech.variance(X)  # independent users
    assert np.all(np.abs(est - true) < 5 * np.sqrt(var / reps))
    # and the single-collection error is of the size the variance predicts
    one = np.asarray(agg.transform(mech.transform(big))).reshape(reps, n, 2)
    dev2 = (one - true) ** 2
    se = dev2.std(axis=0) / np.sqrt(reps)
    assert np.all(np.abs(dev2.mean(axis=0) - var) < 5 * se)


def test_pipeline_with_mechanism():
    A, X = _toy_graph()
    G = GraphData(X, sp.csr_matrix(A))
    pipe = Pipeline([("pgc", OneBitMechanism(eps=np.inf, feature_range=(0, 2))),
                     ("agg", GCNAggregation())])
    np.testing.assert_allclose(np.asarray(pipe.fit_transform(G)),
                               _dense_gcn(A, X, True, "sym"), rtol=1e-6)
    assert clone(pipe).get_params()["agg__normalization"] == "sym"


def test_errors():
    A, X = _toy_graph()
    with pytest.raises(TypeError, match="GraphData"):
        GCNAggregation().fit(X)
    with pytest.raises(ValueError, match="adjacency"):
        GCNAggregation().fit(GraphData(X))
    G = GraphData(X, sp.csr_matrix(A))
    with pytest.raises(ValueError, match="normalization"):
        GCNAggregation(normalization="left").fit(G)
    with pytest.raises(TypeError, match="self_loops"):
        GCNAggregation(self_loops="yes").fit(G)
    agg = GCNAggregation().fit(G)
    with pytest.raises(TypeError, match="GraphData"):
        agg.transform(X)
    with pytest.raises(ValueError, match="features"):
        agg.transform(GraphData(np.zeros((6, 2)), sp.csr_matrix(A)))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_features_are_refused(bad):
    A, X = _toy_graph()
    X = X.copy()
    X[4, 2] = bad
    G = GraphData(X, sp.csr_matrix(A))
    with pytest.raises(ValueError, match=r"GCNAggregation contain NaN or infinite values "
                                         r"\(first at row 4, column 2\)"):
        GCNAggregation().fit(G)
    fitted = GCNAggregation().fit(GraphData(np.zeros((6, 3)), sp.csr_matrix(A)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        fitted.transform(G[[0, 1]])  # a view that does not hold the bad row


def test_directed_adjacency_aggregates_out_neighbours():
    """Row v aggregates the u with A[v, u] != 0; degrees are row sums (documented rule)."""
    A = np.array([[0, 1, 1], [1, 0, 0], [0, 1, 0]], dtype=float)  # 0->1, 0->2, 1->0, 2->1
    X = np.array([[1.0], [10.0], [100.0]])
    G = GraphData(X, sp.csr_matrix(A))
    for norm in ("sym", "rw", None):
        for loops in (True, False):
            out = np.asarray(GCNAggregation(loops, norm).fit_transform(G))
            np.testing.assert_allclose(out, _dense_gcn(A, X, loops, norm), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(GCNAggregation(normalization="rw").fit_transform(G)),
                               [[37.0], [5.5], [55.0]], rtol=1e-6)


def test_one_sided_adjacency_warns():
    A, X = _toy_graph()
    G = GraphData(X, sp.csr_matrix(np.triu(A)))
    with pytest.warns(UserWarning, match=r"GCNAggregation: every edge of the adjacency lies "
                                         r"on one side of the diagonal"):
        out = GCNAggregation().fit_transform(G)
    np.testing.assert_allclose(np.asarray(out), _dense_gcn(np.triu(A), X, True, "sym"),
                               rtol=1e-6)


def test_one_sided_adjacency_warns_once_per_graph():
    """The warning is about the graph: the first step that reads it says so, once (a
    GNN's fit checks its input at several levels; fit_transform is fit, then transform)."""
    import warnings

    from skldp.models import GCNClassifier
    from skldp.propagation import KProp
    A, X = _toy_graph()
    G = GraphData(X, sp.csr_matrix(np.triu(A)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        GCNAggregation().fit_transform(G)
        GCNClassifier(epochs=2, random_state=0).fit(G, [0, 1, 0, 1, 0, 1]).predict(G)
        KProp().fit_transform(G[[0, 1]])   # a view of the same graph
    one_sided = [w for w in caught if "one side of the diagonal" in str(w.message)]
    assert len(one_sided) == 1 and "GCNAggregation:" in str(one_sided[0].message)
    with pytest.warns(UserWarning, match="one side of the diagonal"):   # another graph
        GCNAggregation().fit_transform(GraphData(X, sp.csr_matrix(np.tril(A))))


@pytest.mark.parametrize("self_loops", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sym_operator_equals_shared_normalized_adjacency(self_loops, dtype):
    """The in-place "sym" operator is the shared helper's matrix entry for entry.

    Directed, weighted, with a node that has no out-edge (its column is dropped
    without self loops) and a caller's matrix that must stay untouched.
    """
    from skldp.propagation._gcn_aggregation import propagation_matrix
    from skldp.utils._adjacency import normalized_adjacency
    rng = np.random.default_rng(3)
    A = sp.random(60, 60, 0.08, random_state=4, format="csr", dtype=np.float64)
    A.data = rng.random(A.nnz) * 3 + 0.1
    A[7, :] = 0
    A.eliminate_zeros()
    A_before = A.copy()
    P = propagation_matrix(A, self_loops, "sym", dtype)
    R = normalized_adjacency(A, self_loops, "sym", dtype=dtype)
    assert P.dtype == R.dtype == dtype
    np.testing.assert_array_equal(P.indptr, R.indptr)
    np.testing.assert_array_equal(P.indices, R.indices)
    np.testing.assert_array_equal(P.data, R.data)
    assert abs(A - A_before).nnz == 0


def test_propagation_matrix_is_the_callers_copy():
    # it returned the operator kept with the graph: an edit of it in place (P.data *= 2,
    # P.setdiag(0)) changed every later GCNAggregation and KProp output on that graph
    A, X = _toy_graph()
    G = GraphData(X, sp.csr_matrix(A))
    agg = GCNAggregation().fit(G)
    before = np.asarray(agg.transform(G)).copy()
    P = agg.propagation_matrix(G)
    np.testing.assert_allclose(P @ X, before, rtol=1e-6)
    P.data[:] = 0
    P.setdiag(5.0)
    again = GraphData(X, G.adjacency)   # the same adjacency: its operators are shared
    np.testing.assert_array_equal(np.asarray(agg.transform(again)), before)
    np.testing.assert_allclose(agg.propagation_matrix(G) @ X, before, rtol=1e-6)
