"""KProp on sparse features that become dense part-way: the remaining steps only.

``apply_propagation`` keeps sparse features sparse while the aggregate has at
most 25 % non-zeros and finishes the remaining steps on the dense array. The
number of steps must not depend on when the switch happens. Checked against
the dense matrix power on a small graph (the LPGNN tests cover this only
through a model).
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.propagation import GCNAggregation, KProp


def _graph(seed=0, n=40, d=6):
    rng = np.random.default_rng(seed)
    A = np.triu(rng.random((n, n)) < 0.2, 1).astype(float)
    A = A + A.T
    X = np.zeros((n, d))
    X[rng.choice(n, 4, replace=False), rng.integers(0, d, 4)] = rng.normal(size=4)
    return A, X


@pytest.mark.parametrize("steps", [2, 3, 5])
def test_sparse_features_that_densify_take_every_step_once(steps):
    A, X = _graph()
    assert np.count_nonzero(X) <= 0.25 * X.size
    Ah = A + np.eye(len(A))
    T = Ah / Ah.sum(axis=1, keepdims=True)
    assert np.count_nonzero(T @ X) > 0.25 * X.size or np.count_nonzero(T @ T @ X) > 0.25 * X.size
    G = GraphData(sp.csr_matrix(X), sp.csr_matrix(A))
    Z = KProp(steps=steps, dtype="float64").fit_transform(G).features
    Z = Z.toarray() if sp.issparse(Z) else np.asarray(Z)
    np.testing.assert_allclose(Z, np.linalg.matrix_power(T, steps) @ X, rtol=1e-10, atol=1e-13)


def test_one_step_of_sparse_features_matches_the_dense_product():
    A, X = _graph(1)
    G = GraphData(sp.csr_matrix(X), sp.csr_matrix(A))
    Z = GCNAggregation(normalization=None, dtype="float64").fit_transform(G).features
    Z = Z.toarray() if sp.issparse(Z) else np.asarray(Z)
    np.testing.assert_allclose(Z, (A + np.eye(len(A))) @ X, rtol=1e-12)
