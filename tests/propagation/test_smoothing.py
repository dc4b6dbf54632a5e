"""Tests of Solitude's feature smoothing (eq. (11)) and label smoothing (eq. (12))."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.propagation import FeatureSmoothing, smooth_features, smooth_labels


def _graph(seed=0, n=30):
    rng = np.random.default_rng(seed)
    A = (rng.random((n, n)) < 0.15).astype(float)
    A = np.triu(A, 1)
    A = A + A.T
    A[0, :] = A[:, 0] = 0  # node 0 is isolated
    return A, rng.normal(size=(n, 4))


def _explicit_mean(A, X):
    out = np.empty_like(X)
    for i in range(len(A)):
        nb = np.flatnonzero(A[i])
        out[i] = X[nb].mean(axis=0) if len(nb) else X[i]
    return out


@pytest.mark.parametrize("steps", [1, 3])
def test_feature_smoothing_matches_eq11(steps):
    A, X = _graph()
    expected = X
    for _ in range(steps):
        expected = _explicit_mean(A, expected)
    Z = smooth_features(X, sp.csr_matrix(A), steps)
    np.testing.assert_allclose(Z, expected, atol=1e-12)
    assert np.allclose(Z[0], X[0])  # isolated node keeps its features
    G = GraphData(X, sp.csr_matrix(A))
    out = FeatureSmoothing(steps=steps, dtype="float64").fit(G[:5]).transform(G[[4, 2]])
    np.testing.assert_allclose(np.asarray(out), expected[[4, 2]], atol=1e-12)
    out32 = np.asarray(FeatureSmoothing(steps=steps).fit(G[:5]).transform(G[[4, 2]]))
    assert out32.dtype == np.float32   # the default precision
    np.testing.assert_allclose(out32, expected[[4, 2]], rtol=1e-5, atol=1e-6)


def test_feature_smoothing_self_loops_sparse_and_zero_steps():
    A, X = _graph(1)
    Asl = A + np.eye(len(A))
    Z = smooth_features(X, sp.csr_matrix(A), 1, self_loops=True)
    np.testing.assert_allclose(Z, _explicit_mean(Asl, X), atol=1e-12)
    Xs = sp.csr_matrix(np.where(np.abs(X) > 1, X, 0))
    Zs = smooth_features(Xs, sp.csr_matrix(A), 2)
    assert sp.issparse(Zs)
    np.testing.assert_allclose(Zs.toarray(), smooth_features(Xs.toarray(), sp.csr_matrix(A), 2))
    assert smooth_features(X, sp.csr_matrix(A), 0) is X


@pytest.mark.parametrize("X", [np.ones((30, 2)) * (1 + 1j), sp.csr_matrix(np.ones((30, 2)) * 1j),
                               np.full((30, 2), "a"), np.ones((30, 2)).astype(object)])
@pytest.mark.parametrize("steps", [0, 2])
def test_smooth_features_refuses_features_that_are_not_real_numbers(X, steps):
    # complex X lost its imaginary part with a ComplexWarning only (or came back complex
    # with steps=0); text or objects raised numpy's bare isfinite TypeError
    A, _ = _graph()
    with pytest.raises(TypeError, match=r"features must be real numbers, got dtype "
                                        rf"{np.dtype(X.dtype)}"):
        smooth_features(X, sp.csr_matrix(A), steps)


@pytest.mark.parametrize("Y", [np.eye(30, 2) * (1 + 1j), np.full((30, 2), "a"),
                               np.eye(30, 2).astype(object)])
@pytest.mark.parametrize("steps", [0, 2])
def test_smooth_labels_refuses_labels_that_are_not_real_numbers(Y, steps):
    # complex Y lost its imaginary part with a ComplexWarning only; text raised numpy's
    # bare "could not convert string to float"
    A, _ = _graph()
    with pytest.raises(TypeError, match=r"Y given to smooth_labels must be real numbers, "
                                        rf"got dtype {np.dtype(Y.dtype)}"):
        smooth_labels(Y, sp.csr_matrix(A), steps)


@pytest.mark.parametrize("kind", [sp.csr_array, sp.coo_array, sp.csr_matrix, sp.csc_matrix])
def test_smooth_features_returns_a_sparse_array_for_a_sparse_array(kind):
    # a csr_array came back as a csr_matrix (whose * is a matrix product)
    A, X = _graph()
    X = np.where(np.abs(X) > 1, X, 0)
    Z = smooth_features(kind(X), sp.csr_matrix(A), 2)
    assert Z.format == "csr" and isinstance(Z, sp.sparray) == issubclass(kind, sp.sparray)
    np.testing.assert_array_equal(Z.toarray(), smooth_features(sp.csr_matrix(X),
                                                               sp.csr_matrix(A), 2).toarray())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_feature_smoothing_zero_steps_returns_the_features_in_dtype(dtype):
    # steps=0 returned float64 features where steps >= 1 returns dtype
    A, X = _graph()
    G = GraphData(X, sp.csr_matrix(A))
    for steps in (0, 1):
        Z = FeatureSmoothing(steps=steps, dtype=dtype).fit_transform(G)
        assert Z.features.dtype == np.dtype(dtype)
    Z = FeatureSmoothing(steps=0).fit_transform(G[[3, 1]])
    np.testing.assert_array_equal(np.asarray(Z), X[[3, 1]].astype(np.float32))


def test_label_smoothing_matches_eq12():
    A, _ = _graph(2)
    n, k = len(A), 3
    y = np.arange(n) % k
    Y = np.eye(k)[y]
    Y[n // 2:] = 0  # unlabelled nodes
    deg = A.sum(1)
    P = np.zeros_like(Y)
    for i in range(n):
        for j in np.flatnonzero(A[i]):
            P[i] += Y[j] / np.sqrt(deg[i] * deg[j])
    s = P.sum(1, keepdims=True)
    expected = np.where(s > 0, P / np.where(s > 0, s, 1), Y)
    out = smooth_labels(Y, sp.csr_matrix(A), 1, self_loops=False)
    np.testing.assert_allclose(out, expected, atol=1e-12)
    out2 = smooth_labels(Y, sp.csr_matrix(A), 4)
    rows = out2.sum(1)
    assert np.all((np.abs(rows - 1) < 1e-9) | (rows == 0))
    # on a graph of two cliques, smoothing recovers the clique of unlabelled nodes
    B = np.kron(np.eye(2), np.ones((10, 10))) - np.eye(20)
    yb = np.repeat([0, 1], 10)
    Yb = np.eye(2)[yb]
    Yb[::2] = 0
    pred = smooth_labels(Yb, sp.csr_matrix(B), 2).argmax(1)
    assert np.array_equal(pred, yb)


def test_bad_steps_and_shapes():
    A, X = _graph()
    G = GraphData(X, sp.csr_matrix(A))
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="steps"):
            FeatureSmoothing(steps=bad).fit(G)
    with pytest.raises(ValueError, match="Y must"):
        smooth_labels(np.zeros((3, 2)), sp.csr_matrix(A), 1)
    with pytest.raises(ValueError, match="adjacency"):
        FeatureSmoothing().fit(GraphData(X))


def _nan_weights(A):
    W = sp.csr_matrix(A)
    W.data[:] = np.nan
    return W


@pytest.mark.parametrize("func, what", [(smooth_features, "X"), (smooth_labels, "Y")])
@pytest.mark.parametrize("bad, match", [
    (None, "needs the adjacency A"),            # a (1, 1) operator, or an AttributeError
    (_nan_weights, "NaN or infinite weights"),  # all-NaN output, or Y unchanged
    (lambda A: -sp.csr_matrix(A), "negative weight"),
    (lambda A: sp.csr_matrix(A)[:, :-1], "must be square"),   # scipy's error
    (lambda A: sp.csr_matrix(A)[:-1, :-1], "must have one row per node of A"),
])
def test_smoothing_functions_check_the_adjacency_as_graph_data(func, what, bad, match):
    A, X = _graph()
    Y = np.eye(3)[np.arange(len(A)) % 3]
    with pytest.raises(ValueError, match=match):
        func(X if what == "X" else Y, bad if bad is None else bad(A), 1)


def test_smoothing_functions_refuse_non_finite_inputs_as_feature_smoothing():
    A, X = _graph()
    X[5, 0] = np.nan
    with pytest.raises(ValueError, match=r"X given to smooth_features contain NaN or infinite"
                                         r" values \(first at row 5, column 0\)"):
        smooth_features(X, sp.csr_matrix(A), 1)
    Y = np.eye(3)[np.arange(len(A)) % 3]
    Y[2, 1] = np.inf
    with pytest.raises(ValueError, match="Y given to smooth_labels contain NaN or infinite"):
        smooth_labels(Y, sp.csr_matrix(A), 1)


def test_smooth_labels_refuses_negative_label_mass():
    A, _ = _graph()
    Y = np.eye(3)[np.arange(len(A)) % 3]
    Y[4, 2] = -1.0   # row 4 would sum to 0 and keep -1 as a "probability"
    with pytest.raises(ValueError, match=r"non-negative .* -1.0 at row 4, column 2"):
        smooth_labels(Y, sp.csr_matrix(A), 1)


def test_in_pipeline_with_edge_rr():
    from skldp.mechanisms import EdgeRR
    A, X = _graph()
    G = GraphData(X, sp.csr_matrix(A))
    pipe = Pipeline([("rr", EdgeRR(3.0, random_state=0)), ("fs", FeatureSmoothing(steps=2))])
    out = pipe.fit_transform(G[:10])
    Gr = EdgeRR(3.0, random_state=0).fit_transform(G)
    np.testing.assert_allclose(np.asarray(out), smooth_features(X, Gr.adjacency, 2)[:10],
                               rtol=1e-6, atol=1e-7)   # float32 step vs float64 function
    np.testing.assert_array_equal(
        np.asarray(out), smooth_features(X, Gr.adjacency, 2, dtype="float32")[:10])


def test_feature_smoothing_refuses_non_finite_features():
    A, X = _graph()
    X[5, 0] = -np.inf
    with pytest.raises(ValueError, match=r"FeatureSmoothing contain NaN or infinite values "
                                         r"\(first at row 5, column 0\)"):
        FeatureSmoothing(steps=1).fit(GraphData(X, sp.csr_matrix(A)))


def test_feature_smoothing_directed_means_over_out_neighbours():
    A = np.array([[0, 1, 1], [1, 0, 0], [0, 1, 0]], dtype=float)
    X = np.array([[1.0], [10.0], [100.0]])
    out = FeatureSmoothing(steps=1).fit_transform(GraphData(X, sp.csr_matrix(A)))
    np.testing.assert_allclose(np.asarray(out), [[55.0], [1.0], [10.0]])
    with pytest.warns(UserWarning, match="FeatureSmoothing: every edge"):
        FeatureSmoothing().fit(GraphData(X, sp.csr_matrix(np.triu(A))))


@pytest.mark.parametrize("fmt", ["csr", "coo", "csc"])
def test_smooth_labels_accepts_a_sparse_label_matrix(fmt):
    # a sparse Y was refused as "dtype object" (np.asarray of a sparse matrix is 0-d)
    rng = np.random.default_rng(0)
    A = sp.random(30, 30, density=0.2, random_state=0, format="csr")
    A = A + A.T
    Y = np.zeros((30, 3))
    Y[np.arange(0, 30, 2), rng.integers(0, 3, 15)] = 1
    want = smooth_labels(Y, A, steps=2)
    got = smooth_labels(sp.csr_matrix(Y).asformat(fmt), A, steps=2)
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(smooth_labels(sp.csr_array(Y), A, steps=0), Y)
