"""Estimation-error metrics pinned by hand-computed values (round-5 mutation tests)."""

import numpy as np
import scipy.sparse as sp

from skldp import GraphData
from skldp.mechanisms import LaplaceMechanism
from skldp.metrics import aggregation_error, aggregation_mae, mae_by_degree


def test_mae_by_degree_keeps_the_nodes_of_max_degree():
    """``max_degree`` is the largest degree *kept*."""
    deg, mean = mae_by_degree([1.0, 3.0, 4.0, 8.0, 9.0], [1, 1, 2, 2, 3], max_degree=2)
    np.testing.assert_array_equal(deg, [1, 2])
    np.testing.assert_allclose(mean, [2.0, 6.0])


def test_aggregation_mae_averages_absolute_errors_over_the_features():
    """Per node: the mean over its d features of |true - estimate| (non-square inputs, so
    the features and the nodes are not confused), dense and sparse alike."""
    T = np.array([[1.0, 0.0], [0.0, 0.0], [2.0, -2.0]])
    E = np.array([[0.0, 1.0], [0.0, 0.0], [-1.0, 2.0]])
    want = np.array([1.0, 0.0, 3.5])
    for t, e in ((T, E), (sp.csr_matrix(T), sp.csr_matrix(E)), (T, sp.csr_matrix(E))):
        np.testing.assert_allclose(aggregation_mae(t, e), want)
        assert aggregation_mae(t, e, per_node=False) == 1.5


def test_aggregation_error_of_a_view_is_over_its_rows():
    """The aggregation reads the whole graph; the error is reported for the view's rows."""
    rng = np.random.default_rng(0)
    n = 8
    A = np.triu(rng.random((n, n)) < 0.4, 1)
    G = GraphData(rng.random((n, 3)), sp.csr_array((A | A.T).astype(float)))
    mech = LaplaceMechanism(eps=1.0, feature_range=(0, 1), random_state=0)
    full = aggregation_error(G, mech)
    rows = [1, 4, 6]
    part = aggregation_error(G[rows], mech)
    assert part.shape == (3,)
    np.testing.assert_allclose(part, full[rows])
