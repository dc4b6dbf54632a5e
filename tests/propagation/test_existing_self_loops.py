"""A self loop already in the graph keeps its weight when self loops are added
(PyTorch Geometric's ``add_remaining_self_loops``, used by ``gcn_norm``): ``A + I``
gave a node with a loop of weight 2 a loop of weight 3."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.propagation import GCNAggregation, KProp, PPRPropagation
from skldp.propagation._smoothing import _sym_operator


def _graph():
    """4 nodes: a path 0-1-2, a self loop of weight 2 on node 0, node 3 isolated."""
    A = np.zeros((4, 4))
    A[0, 1] = A[1, 0] = A[1, 2] = A[2, 1] = 1.0
    A[0, 0] = 2.0
    X = np.array([[1.0, 0.0], [2.0, 1.0], [4.0, 3.0], [8.0, 5.0]])
    return A, X


def _remaining_loops(A):
    """By hand: weight 1 on the diagonal where there is no loop, the loop's weight elsewhere."""
    return A + np.diag(np.diag(A) == 0)


def test_gcn_normalisation_keeps_an_existing_loop_weight():
    A, X = _graph()
    Ah = _remaining_loops(A)
    assert np.array_equal(np.diag(Ah), [2.0, 1.0, 1.0, 1.0])
    d = Ah.sum(axis=1) ** -0.5
    expected = d[:, None] * Ah * d[None, :]          # D^-1/2 (A with remaining loops) D^-1/2
    G = GraphData(X, sp.csr_array(A))
    est = GCNAggregation(dtype="float64")
    P = est.propagation_matrix(G).toarray()
    np.testing.assert_allclose(P, expected, rtol=1e-12)
    np.testing.assert_allclose(est.fit_transform(G).features, expected @ X, rtol=1e-12)


@pytest.mark.parametrize("normalization", ["rw", "sym", None])
def test_kprop_keeps_an_existing_loop_weight(normalization):
    A, X = _graph()
    Ah = _remaining_loops(A)
    deg = Ah.sum(axis=1)
    P = {"rw": Ah / deg[:, None], "sym": Ah / np.sqrt(np.outer(deg, deg)), None: Ah}
    G = GraphData(X, sp.csr_array(A))
    Z = KProp(steps=2, normalization=normalization, dtype="float64").fit_transform(G).features
    P = P[normalization]
    np.testing.assert_allclose(Z, P @ P @ X, rtol=1e-12)


def test_ppr_add_self_loops_keeps_an_existing_loop_weight():
    A, X = _graph()
    Ah = _remaining_loops(A)
    deg = Ah.sum(axis=1)
    alpha, r = 0.2, 0.5
    T = np.diag(deg ** (r - 1)) @ Ah @ np.diag(deg ** -r)
    expected = np.linalg.solve(np.eye(4) - (1 - alpha) * T, alpha * X)
    G = GraphData(X, sp.csr_array(A))
    Z = PPRPropagation(alpha=alpha, r=r, add_self_loops=True, tol=1e-10, dtype="float64",
                       backend="scipy").fit_transform(G).features
    np.testing.assert_allclose(Z, expected, rtol=1e-8)


def test_label_smoothing_operator_keeps_an_existing_loop_weight():
    A, _ = _graph()
    Ah = _remaining_loops(A)
    d = Ah.sum(axis=1) ** -0.5
    np.testing.assert_allclose(_sym_operator(sp.csr_array(A), True).toarray(),
                               d[:, None] * Ah * d[None, :], rtol=1e-12)
