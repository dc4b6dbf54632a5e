"""StructuralFeatures: blocks against dense references, determinism, scaling, pipelines."""

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.baselines import StructuralFeatures
from skldp.models import MLPHead


def _random_graph(n, avg_degree, seed):
    rng = np.random.default_rng(seed)
    m = n * avg_degree // 2
    i, j = rng.integers(0, n, m), rng.integers(0, n, m)
    A = sp.coo_matrix((np.ones(m), (i, j)), shape=(n, n)).tocsr()
    A = ((A + A.T) > 0).astype(np.float32)
    A.setdiag(0)
    A.eliminate_zeros()
    return A


@pytest.fixture
def graph(small_graph):
    A, X, y = small_graph
    return GraphData(X, A), y


def test_shapes_names_and_blocks(graph):
    G, _ = graph
    sf = StructuralFeatures(degree_bins=4, n_eigenvectors=3, n_components=8, random_state=0)
    Z = sf.fit(G[:10]).transform(G[[3, 7]])
    assert isinstance(Z, GraphData) and Z.shape == (2, 4 + 1 + 3 + 8)
    names = sf.get_feature_names_out()
    assert list(names[:6]) == ["degree_bin0", "degree_bin1", "degree_bin2", "degree_bin3",
                               "log_degree", "spectral0"]
    assert names[-1] == "projection7" and sf.n_features_out_ == len(names) == 16
    np.testing.assert_array_equal(Z.feature_names, names)
    only_degree = StructuralFeatures(degree_bins=3, n_eigenvectors=0, n_components=0)
    assert only_degree.fit_transform(G).shape == (60, 4)


def test_degree_block(graph):
    G, _ = graph
    deg = np.asarray(G.adjacency.sum(1)).ravel()
    Z = np.asarray(StructuralFeatures(degree_bins=3, n_eigenvectors=0,
                                      n_components=0).fit_transform(G))
    expected_bin = np.minimum(np.floor(np.log2(1 + deg)), 2).astype(int)
    np.testing.assert_array_equal(Z[:, :3].argmax(1), expected_bin)
    np.testing.assert_array_equal(Z[:, :3].sum(1), 1.0)
    np.testing.assert_allclose(Z[:, 3], np.log1p(deg), rtol=1e-6)


def test_features_are_ignored(graph):
    G, _ = graph
    sf = StructuralFeatures(n_components=8, n_eigenvectors=2, random_state=0).fit(G)
    other = G.with_features(np.random.default_rng(1).normal(size=G.features.shape))
    np.testing.assert_array_equal(np.asarray(sf.transform(G)), np.asarray(sf.transform(other)))
    assert privacy_report(sf).local_epsilon == 0 and not privacy_report(sf).spends


def _regularised_operator(A):
    A = np.asarray(A.todense(), dtype=float)
    n, deg = len(A), A.sum(1)
    tau = deg.mean()
    dt = 1 / np.sqrt(deg + tau)
    return dt[:, None] * (A + tau / n) * dt[None, :]


def _check_spectral(G, k, Z):
    M = _regularised_operator(G.adjacency)
    n = G.n_nodes
    _, V = scipy.linalg.eigh(M, subset_by_index=[n - k, n - 1])
    V = V[:, ::-1]
    U = Z / np.sqrt(G.n_nodes)
    # orthonormal columns spanning the top-k eigenspace (eigenvalues are distinct here)
    np.testing.assert_allclose(U.T @ U, np.eye(k), atol=1e-5)
    np.testing.assert_allclose(np.abs(np.sum(U * V, axis=0)), 1.0, atol=1e-4)
    top = np.abs(U).argmax(0)
    assert np.all(U[top, np.arange(k)] > 0)  # deterministic signs


def test_spectral_block_dense_path(graph):
    G, _ = graph
    sf = StructuralFeatures(degree_bins=0, n_eigenvectors=4, n_components=0,
                            dtype="float64").fit(G)
    _check_spectral(G, 4, np.asarray(sf.transform(G)))


def test_spectral_block_arpack_path():
    A = _random_graph(520, 6, seed=4)   # above the dense threshold: eigsh on the operator
    G = GraphData(np.zeros((520, 1)), A)
    sf = StructuralFeatures(degree_bins=0, n_eigenvectors=3, n_components=0, dtype="float64",
                            random_state=0).fit(G)
    _check_spectral(G, 3, np.asarray(sf.transform(G)))


def test_spectral_pads_beyond_n_nodes():
    A = sp.csr_array(np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]]))
    G = GraphData(np.zeros((3, 1)), A)
    Z = np.asarray(StructuralFeatures(degree_bins=0, n_eigenvectors=5,
                                      n_components=0).fit_transform(G))
    assert Z.shape == (3, 5) and np.all(Z[:, 3:] == 0) and np.all(np.abs(Z[:, :3]).sum(0) > 0)


def test_projection_matches_dense_formula(graph):
    from skldp.utils import node_normals
    G, _ = graph
    sf = StructuralFeatures(degree_bins=0, n_eigenvectors=0, n_components=16, n_steps=5,
                            alpha=0.2, dtype="float64", random_state=3).fit(G)
    Z = np.asarray(sf.transform(G))
    A = np.asarray(G.adjacency.todense(), dtype=float)
    P = A / A.sum(1, keepdims=True)
    R = node_normals(sf.projection_seed_, G.node_keys, 16) / 4.0
    ref = sum(0.2 * 0.8 ** k * np.linalg.matrix_power(P, k) @ R for k in range(1, 6))
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(Z, ref, atol=1e-10)


def test_deterministic_and_keyed_by_node_id(graph):
    G, _ = graph
    sf = StructuralFeatures(n_eigenvectors=0, n_components=8, random_state=0)
    Z1 = np.asarray(sf.fit_transform(G))
    Z2 = np.asarray(clone(sf).fit_transform(G))
    np.testing.assert_array_equal(Z1, Z2)
    # the same graph with its nodes listed in another order: same rows per node id
    perm = np.random.default_rng(0).permutation(60)
    A = G.adjacency[perm][:, perm]
    Gp = GraphData(G.features[perm], A, node_ids=perm)
    Gi = GraphData(G.features, G.adjacency, node_ids=np.arange(60))
    Zi = np.asarray(clone(sf).fit_transform(Gi))
    Zp = np.asarray(clone(sf).fit_transform(Gp))
    np.testing.assert_allclose(Zp, Zi[perm], atol=1e-5)
    Z3 = np.asarray(StructuralFeatures(n_eigenvectors=0, n_components=8,
                                       random_state=1).fit_transform(G))
    assert not np.allclose(Z1[:, -8:], Z3[:, -8:])


@pytest.mark.parametrize("n", [2, 6])
def test_spectral_signs_do_not_depend_on_the_node_order(n):
    # a path's eigenvectors have two entries of largest magnitude, of opposite signs where
    # the eigenvector is odd: the sign went to the first row, so reversing the rows flipped
    # whole columns
    A = np.eye(n, k=1) + np.eye(n, k=-1)
    ids, rev = np.arange(100, 100 + n), np.arange(n)[::-1].copy()
    sf = StructuralFeatures(degree_bins=0, n_eigenvectors=min(3, n), n_components=0,
                            dtype="float64")
    Z = np.asarray(clone(sf).fit_transform(GraphData(np.zeros((n, 1)), A, node_ids=ids)))
    Zr = np.asarray(clone(sf).fit_transform(
        GraphData(np.zeros((n, 1)), A[rev][:, rev], node_ids=ids[rev])))
    np.testing.assert_allclose(Zr, Z[rev], atol=1e-9)


def test_spectral_signs_with_the_largest_node_key():
    # node id -1 keys as 2**64 - 1: it was also the value marking rows that do not tie, so a
    # column whose largest entry was that node's took its sign from row 0
    rng = np.random.default_rng(3)
    A = np.triu(rng.random((12, 12)) < 0.3, 1)
    A = (A | A.T).astype(float)
    ids = np.arange(12)
    ids[3] = -1
    Z = np.asarray(StructuralFeatures(degree_bins=0, n_eigenvectors=4, n_components=0,
                                      dtype="float64").fit_transform(
        GraphData(np.zeros((12, 1)), A, node_ids=ids)))
    top = np.abs(Z).argmax(axis=0)
    assert (Z[top, np.arange(4)] > 0).all()


@pytest.mark.parametrize("head", ["logistic", "mlp"])
def test_pipeline_with_head_learns_communities(graph, head):
    G, y = graph
    clf = LogisticRegression() if head == "logistic" else \
        MLPHead(epochs=30, early_stopping=False, random_state=0)
    pipe = Pipeline([("sf", StructuralFeatures(n_components=32, n_eigenvectors=4,
                                               random_state=0)),
                     ("clf", clf)])
    pipe.fit(G[::2], y[::2])
    assert pipe.score(G[1::2], y[1::2]) > 0.85


def test_errors(graph):
    G, _ = graph
    with pytest.raises(ValueError, match="at least one block"):
        StructuralFeatures(degree_bins=0, n_eigenvectors=0, n_components=0).fit(G)
    with pytest.raises(ValueError, match="alpha"):
        StructuralFeatures(alpha=1.0).fit(G)
    with pytest.raises(ValueError, match="n_steps"):
        StructuralFeatures(n_steps=0).fit(G)
    with pytest.raises(ValueError, match="dtype"):
        StructuralFeatures(dtype="int8").fit(G)
    with pytest.raises(ValueError, match="no adjacency"):
        StructuralFeatures().fit(GraphData(np.zeros((3, 1))))
    with pytest.raises(TypeError, match="GraphData"):
        StructuralFeatures().fit(np.zeros((3, 1)))


def test_projection_block_scales_to_100k_nodes():
    n = 100_000
    A = _random_graph(n, 10, seed=0)
    G = GraphData(sp.csr_matrix((n, 1)), A)
    sf = StructuralFeatures(degree_bins=16, n_eigenvectors=0, n_components=32, n_steps=10,
                            random_state=0).fit(G[:10])
    tracemalloc.start()
    Z = sf.transform(G[:5])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert Z.shape == (5, 49) and Z.features.shape == (n, 49)
    assert Z.features.dtype == np.float32 and np.all(np.isfinite(Z.features))
    # Sparse products over an n x 32 block: memory linear in n (a dense n x n
    # operator would need 40 GB); speed is measured in benchmarks/, not here.
    assert peak < 12 * Z.features.nbytes, peak   # about 5x here


def test_graph_without_edges_has_zero_spectral_columns_and_warns():
    # were identity spikes (eigh's arbitrary basis of the zero operator): they followed
    # the node order, so reordering the nodes changed each node's features
    X = np.random.default_rng(0).random((6, 2))
    sf = StructuralFeatures(n_eigenvectors=3, n_components=0, degree_bins=0, random_state=0)
    with pytest.warns(UserWarning, match="the graph has no edge, so its spectral columns "
                                         "are all zeros"):
        Z = np.asarray(sf.fit_transform(GraphData(X, sp.csr_array((6, 6)))))
    assert Z.shape == (6, 3)
    np.testing.assert_array_equal(Z, 0.0)


def test_more_eigenvectors_than_nodes_warns_and_keeps_the_width(graph):
    G, _ = graph
    sf = StructuralFeatures(n_eigenvectors=1000, n_components=8, random_state=0)
    with pytest.warns(UserWarning, match=r"n_eigenvectors=1000 but a graph of 60 nodes has "
                                         r"only 60 eigenvectors.*last 940 spectral columns"):
        Z = np.asarray(sf.fit_transform(G))
    assert Z.shape == (60, 17 + 1000 + 8) == (60, sf.n_features_out_)
    spectral = Z[:, 17:17 + 1000]
    assert np.abs(spectral[:, :60]).max(axis=0).min() > 0   # the real eigenvectors
    np.testing.assert_array_equal(spectral[:, 60:], 0.0)
    # a graph with enough nodes for every column stays silent
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        StructuralFeatures(n_eigenvectors=60, n_components=8, random_state=0).fit_transform(G)


def test_projection_operator_scaled_once_per_graph(monkeypatch):
    # the propagation operator (1 - alpha) D^-1 A was a sparse diagonal product
    # (sp.diags(...) @ A) on a float64 copy of the adjacency, made again at every
    # transform; its values are now scaled once per graph (the same values; the products
    # sum each row in column order, so the output may differ by float32 rounding)
    from skldp.baselines import _structural
    A = _random_graph(400, 6, 0)
    A = A.tolil()
    A[0, :] = 0   # an isolated node: a zero row
    A[:, 0] = 0
    A = A.tocsr()
    A.eliminate_zeros()
    A.data = np.random.default_rng(1).uniform(0.5, 2.0, A.nnz).astype(np.float32)
    A = A.maximum(A.T).tocsr()
    G = GraphData(np.zeros((400, 1)), A)
    sf = StructuralFeatures(degree_bins=0, n_eigenvectors=0, n_components=16, n_steps=5,
                            alpha=0.2, random_state=0).fit(G)
    # the former computation
    A64 = sp.csr_matrix(G.adjacency, dtype=np.float64)
    deg = np.asarray(A64.sum(axis=1)).ravel()
    inv = np.zeros_like(deg)
    np.divide(1.0, deg, out=inv, where=deg > 0)
    P = sp.csr_matrix(sp.diags(0.8 * inv) @ A64, dtype=np.float32)
    from skldp.utils._random import node_normals
    H = (node_normals(sf.projection_seed_, G.node_keys, 16, stream=0) / 4.0).astype(np.float32)
    Z = np.zeros_like(H)
    for _ in range(5):
        H = P @ H
        Z += H
    want = Z / np.where((n := np.linalg.norm(Z, axis=1, keepdims=True)) > 0, n, 1.0)

    def no_products(*args, **kwargs):
        raise AssertionError("a diagonal matrix product")

    monkeypatch.setattr(sp, "diags", no_products)
    np.testing.assert_allclose(np.asarray(sf.transform(G)), want, rtol=1e-5, atol=1e-6)
    # another fit on the same adjacency (new features, another seed) reuses the operator
    built = []
    monkeypatch.setattr(_structural, "scale_csr", lambda *a, **k: built.append(1),
                        raising=False)
    G2 = GraphData(np.ones((400, 2)), G.adjacency)
    assert np.isfinite(np.asarray(clone(sf).set_params(random_state=1).fit_transform(G2))).all()
    assert built == []
