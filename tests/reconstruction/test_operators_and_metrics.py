"""Propagation operators and estimators against their
closed forms, where the existing tests only used inputs on which the mutated
variant gives the same answer (symmetric T, eps = inf, explicit options)."""
import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.metrics import mae_by_degree
from skldp.propagation import smooth_labels
from skldp.reconstruction import (
    FrequencyReconstructor,
    mean_propagation_matrix,
    unbiased_label_distribution,
)


def _path(n=5):
    A = np.zeros((n, n))
    i = np.arange(n - 1)
    A[i, i + 1] = A[i + 1, i] = 1.0
    A[0, 2] = A[2, 0] = 1.0     # degrees differ
    return A


@pytest.mark.parametrize("self_loops", [True, False])
def test_mean_propagation_matrix_is_row_normalised(self_loops):
    A = _path()
    B = A + np.eye(len(A)) if self_loops else A
    expected = B / B.sum(1, keepdims=True)
    np.testing.assert_allclose(mean_propagation_matrix(sp.csr_matrix(A), self_loops).toarray(),
                               expected, rtol=1e-12)


@pytest.mark.parametrize("bad, match", [
    (None, "A must be an adjacency matrix"),      # was a (1, 1) matrix
    (sp.csr_matrix(np.full((3, 3), np.nan)), "NaN or infinite weights"),
    (-sp.eye(3, format="csr"), "negative weight"),
    (sp.csr_matrix(np.ones((3, 2))), "must be square"),
])
def test_mean_propagation_matrix_checks_the_adjacency_as_graph_data(bad, match):
    with pytest.raises(ValueError, match=match):
        mean_propagation_matrix(bad)


def test_frequency_reconstructor_without_self_loops_averages_neighbours_only():
    # eps = inf, m = d: reports are the raw codes; with hops=1 the binary feature of
    # node v is the mean of its neighbours' codes (v itself excluded)
    A = _path()
    x = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    G = GraphData(x[:, None], sp.csr_matrix(A))
    rec = FrequencyReconstructor(np.inf, 1, domain_sizes=2, hops=1, self_loops=False)
    Z = rec.fit_transform(G).features
    np.testing.assert_allclose(np.ravel(Z), (A @ x) / A.sum(1), rtol=1e-12)


def test_unbiased_label_distribution_with_an_asymmetric_transition():
    # T[i, j] = P(report j | true i): observed = true @ T, so the estimate inverts T^T
    T = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
    true = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    obs = true @ T
    np.testing.assert_allclose(unbiased_label_distribution(obs, T, project=False), true,
                               atol=1e-12)


def test_smooth_labels_default_uses_self_loops():
    # Solitude calls smooth_labels(Y0, A, steps) with the default: A + I (eq. (12) with
    # each node's own label kept)
    A = _path()
    Y = np.eye(2)[[0, 1, 0, 1, 1]]
    Y[3] = 0
    B = A + np.eye(len(A))
    d = B.sum(1)
    S = B / np.sqrt(np.outer(d, d))
    P = S @ (S @ Y)
    expected = P / P.sum(1, keepdims=True)
    np.testing.assert_allclose(smooth_labels(Y, sp.csr_matrix(A), 2), expected, atol=1e-12)


def test_mae_by_degree_max_degree_is_inclusive():
    deg, mean = mae_by_degree([1.0, 3.0, 5.0, 7.0], [1, 1, 2, 3], max_degree=2)
    np.testing.assert_array_equal(deg, [1, 2])
    np.testing.assert_allclose(mean, [2.0, 5.0])


def test_smooth_labels_on_a_directed_graph_scales_rows_by_out_and_columns_by_in_degree():
    A = np.array([[0, 1, 1, 0], [0, 0, 1, 0], [1, 0, 0, 1], [0, 0, 1, 0]], dtype=float)
    Y = np.eye(4)[:, :3]
    out, inn = A.sum(axis=1), A.sum(axis=0)       # 2, 1, 2, 1 and 1, 1, 3, 1
    T = A / np.sqrt(np.outer(out, inn))
    P = T @ (T @ Y)
    expected = P / P.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(smooth_labels(Y, sp.csr_matrix(A), steps=2, self_loops=False),
                               expected, rtol=1e-12)
