"""Tests of KProp (LPGNN K-step aggregation)."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.mechanisms import MultiBitMechanism
from skldp.propagation import GCNAggregation, KProp


def _graph(seed=0, n=15, weighted=False):
    rng = np.random.default_rng(seed)
    A = np.triu(rng.random((n, n)) < 0.25, 1).astype(float)
    if weighted:
        A *= rng.integers(1, 4, size=A.shape)
    A = A + A.T
    A[n - 1, :] = A[:, n - 1] = 0.0  # one isolated node
    X = rng.random((n, 3))
    return A, X


def _dense_operator(A, self_loops, normalization):
    Ah = A + np.eye(len(A)) if self_loops else A.copy()
    deg = Ah.sum(axis=1)
    with np.errstate(divide="ignore"):
        inv = np.where(deg > 0, 1.0 / deg, 0.0)
        inv_sqrt = np.where(deg > 0, 1.0 / np.sqrt(deg), 0.0)
    if normalization == "rw":
        return inv[:, None] * Ah
    if normalization == "sym":
        return inv_sqrt[:, None] * Ah * inv_sqrt[None, :]
    return Ah


@pytest.mark.parametrize("steps", [1, 2, 4])
@pytest.mark.parametrize("self_loops", [True, False])
@pytest.mark.parametrize("normalization", ["rw", "sym", None])
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_dense_matrix_power(steps, self_loops, normalization, weighted):
    A, X = _graph(weighted=weighted)
    G = GraphData(X, sp.csr_matrix(A))
    Z = np.asarray(KProp(steps=steps, self_loops=self_loops,
                         normalization=normalization).fit_transform(G))
    P = _dense_operator(A, self_loops, normalization)
    expected = np.linalg.matrix_power(P, steps) @ X
    np.testing.assert_allclose(Z, expected, rtol=1e-5, atol=1e-6)


def test_default_is_mean_over_closed_neighbourhood():
    A, X = _graph()
    G = GraphData(X, sp.csr_matrix(A))
    Z = np.asarray(KProp().fit_transform(G))
    for v in [0, 3, 7]:
        nbrs = np.flatnonzero(A[v]).tolist() + [v]
        np.testing.assert_allclose(Z[v], X[nbrs].mean(axis=0), rtol=1e-6)
    # isolated node: keeps its features with self loops, zero without
    np.testing.assert_allclose(Z[-1], X[-1], rtol=1e-6)
    Z0 = np.asarray(KProp(self_loops=False).fit_transform(G))
    np.testing.assert_array_equal(Z0[-1], 0.0)


def test_one_sym_step_equals_gcn_aggregation():
    A, X = _graph()
    G = GraphData(X, sp.csr_matrix(A))
    np.testing.assert_allclose(np.asarray(KProp(1, normalization="sym").fit_transform(G)),
                               np.asarray(GCNAggregation().fit_transform(G)))


def test_zero_steps_is_identity_and_rows_of_view():
    A, X = _graph()
    G = GraphData(sp.csr_matrix(X), sp.csr_matrix(A))
    Z = KProp(steps=0).fit(G).transform(G[[4, 2]])
    np.testing.assert_array_equal(np.asarray(Z), X[[4, 2]].astype(np.float32))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_zero_steps_returns_the_features_in_dtype(sparse, dtype):
    # steps=0 returned float64 features where steps >= 1 returns dtype
    A, X = _graph()
    G = GraphData(sp.csr_matrix(X) if sparse else X, sp.csr_matrix(A))
    for steps in (0, 1):
        Z = KProp(steps=steps, dtype=dtype).fit_transform(G)
        assert Z.features.dtype == np.dtype(dtype)


def test_sparse_stays_sparse_until_dense():
    n = 200
    A = sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")  # a path
    X = sp.random(n, 400, density=0.002, random_state=0, format="csr")
    G = GraphData(X, A)
    one = KProp(steps=1).fit_transform(G)
    assert sp.issparse(one.features)
    np.testing.assert_allclose(one.features.toarray(),
                               _dense_operator(A.toarray(), True, "rw") @ X.toarray(),
                               rtol=1e-6, atol=1e-7)
    dense_in = GraphData(np.random.default_rng(0).random((n, 3)), A)
    assert isinstance(KProp(steps=2).fit_transform(dense_in).features, np.ndarray)


def test_denoises_multibit_reports():
    """KProp averages out the noise: error to the aggregated truth drops with K."""
    rng = np.random.default_rng(1)
    n = 600
    A = sp.random(n, n, density=0.03, random_state=1, format="csr")
    A = ((A + A.T) > 0).astype(float)
    X = rng.random((n, 10))
    G = GraphData(X, A)
    noisy = MultiBitMechanism(eps=2.0, feature_range=(0, 1), random_state=0).fit_transform(G)
    errs = []
    for K in (0, 1, 2):
        kp = KProp(steps=K).fit(G)
        errs.append(np.abs(np.asarray(kp.transform(noisy)) - np.asarray(kp.transform(G))).mean())
    assert errs[0] > errs[1] > errs[2]


@pytest.mark.parametrize("steps, err", [(-1, ValueError), (1.5, TypeError), (True, TypeError),
                                        ("2", TypeError)])
def test_bad_steps(steps, err):
    A, X = _graph()
    with pytest.raises(err, match="steps"):
        KProp(steps=steps).fit(GraphData(X, sp.csr_matrix(A)))


def test_errors_missing_graph_and_plain_arrays():
    A, X = _graph()
    with pytest.raises(TypeError, match="GraphData"):
        KProp().fit(X)
    with pytest.raises(ValueError, match="adjacency"):
        KProp().fit(GraphData(X))
    with pytest.raises(ValueError, match="normalization"):
        KProp(normalization="mean").fit(GraphData(X, sp.csr_matrix(A)))


def test_non_finite_features_are_refused():
    A, X = _graph()
    X = X.copy()
    X[3, 1] = np.nan
    G = GraphData(X, sp.csr_matrix(A))
    with pytest.raises(ValueError, match=r"KProp contain NaN or infinite values "
                                         r"\(first at row 3, column 1\)"):
        KProp(steps=2).fit(G)
    with pytest.raises(ValueError, match="NaN or infinite"):
        KProp(steps=0).fit(GraphData(np.zeros_like(X), sp.csr_matrix(A))).transform(G)


def test_directed_adjacency_is_supported_and_one_sided_warns():
    A = np.array([[0, 1, 1], [1, 0, 0], [0, 1, 0]], dtype=float)  # 0->1, 0->2, 1->0, 2->1
    X = np.array([[1.0], [10.0], [100.0]])
    G = GraphData(X, sp.csr_matrix(A))
    P = _dense_operator(A, True, "rw")
    np.testing.assert_allclose(np.asarray(KProp(steps=2).fit_transform(G)), P @ P @ X,
                               rtol=1e-6)
    with pytest.warns(UserWarning, match="KProp: every edge of the adjacency lies on one side"):
        KProp().fit(GraphData(X, sp.csr_matrix(np.triu(A))))
