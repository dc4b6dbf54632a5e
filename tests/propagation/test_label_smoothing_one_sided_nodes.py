"""Label smoothing (Solitude, eq. (12)) on a directed graph with one-sided nodes.

``smooth_labels`` computes ``D_out^-1/2 A D_in^-1/2`` and gives a self loop only
to nodes with no edge at all. A node that only sends edges (in-degree 0) or
only receives them (out-degree 0) is not isolated: its row (or column) keeps
its own scaling, and giving it a self loop changes the output. Checked against
a dense numpy formula on a small graph, without self loops (where such nodes
exist).
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp.propagation import smooth_labels


def _directed_graph(seed=0, n=12):
    rng = np.random.default_rng(seed)
    A = (rng.random((n, n)) < 0.3).astype(float)
    np.fill_diagonal(A, 0.0)
    A[:, 0] = 0.0                       # node 0 only sends
    A[0, 1:4] = 1.0
    A[1, :] = 0.0                       # node 1 only receives
    A[:, 2] = 0.0
    A[2, :] = 0.0                       # node 2 has no edge at all
    A[0, 2] = 0.0
    return A


def _dense_smoothing(A, Y, steps):
    deg_out, deg_in = A.sum(axis=1), A.sum(axis=0)
    isolated = (deg_out == 0) & (deg_in == 0)
    A = A + np.diag(isolated.astype(float))
    deg_out, deg_in = A.sum(axis=1), A.sum(axis=0)
    with np.errstate(divide="ignore"):
        r = np.where(deg_out > 0, deg_out ** -0.5, 0.0)
        c = np.where(deg_in > 0, deg_in ** -0.5, 0.0)
    T = r[:, None] * A * c[None, :]
    P = np.linalg.matrix_power(T, steps) @ Y
    s = P.sum(axis=1, keepdims=True)
    return np.where(s > 0, P / np.where(s > 0, s, 1.0), Y)


@pytest.mark.parametrize("steps", [1, 2, 3])
def test_one_sided_nodes_keep_their_own_scaling(steps):
    A = _directed_graph()
    assert A[:, 0].sum() == 0 and A[0].sum() > 0 and A[1].sum() == 0 and A[:, 1].sum() > 0
    Y = np.eye(3)[np.random.default_rng(1).integers(0, 3, len(A))]
    Y[5:8] = 0.0                        # unlabelled nodes
    P = smooth_labels(Y, sp.csr_matrix(A), steps=steps, self_loops=False)
    np.testing.assert_allclose(P, _dense_smoothing(A, Y, steps), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(P[2], Y[2])   # no edge: keeps its own label
