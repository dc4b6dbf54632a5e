"""Tests of the aggregation estimation-error tools (paper 000 eq. (8))."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.mechanisms import LaplaceMechanism, OneBitMechanism
from skldp.metrics import aggregation_error, aggregation_mae, mae_by_degree
from skldp.propagation import GCNAggregation, KProp


def test_known_answer_dense_sparse_graphdata():
    T = np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]])
    E = np.array([[3.0, 1.0, -1.0], [1.0, 0.0, 1.5]])
    expected = np.array([(3 + 0 + 3) / 3, (0 + 1 + 0.5) / 3])
    np.testing.assert_allclose(aggregation_mae(T, E), expected)
    assert aggregation_mae(T, E, per_node=False) == pytest.approx(expected.mean())
    np.testing.assert_allclose(aggregation_mae(sp.csr_matrix(T), sp.csr_matrix(E)), expected)
    np.testing.assert_allclose(aggregation_mae(sp.csr_matrix(T), E), expected)
    GT, GE = GraphData(T), GraphData(E)
    np.testing.assert_allclose(aggregation_mae(GT[[1]], GE[[1]]), expected[[1]])


def test_mae_errors():
    with pytest.raises(ValueError, match="shape"):
        aggregation_mae(np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="2-D"):
        aggregation_mae(np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        aggregation_mae(np.zeros((1, 2)), np.array([[np.nan, 0.0]]))
    for per_node in (True, False):   # 0 rows gave nan and a RuntimeWarning
        with pytest.raises(ValueError, match="no row"):
            aggregation_mae(np.zeros((0, 3)), np.zeros((0, 3)), per_node=per_node)


def _graph(n=400, seed=0):
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.02, random_state=seed, format="csr")
    A = ((A + A.T) > 0).astype(float)
    X = (rng.random((n, 5)) < 0.2).astype(float)
    return GraphData(X, A)


def test_aggregation_error_zero_without_noise_and_matches_manual():
    G = _graph()
    assert aggregation_error(G, OneBitMechanism(eps=np.inf, feature_range=(0, 1)),
                             per_node=False) == 0.0
    mech = OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=3)
    got = aggregation_error(G, mech)
    assert not hasattr(mech, "seed_")  # cloned, not fitted in place
    agg = GCNAggregation().fit(G)
    manual = aggregation_mae(agg.transform(G), agg.transform(mech.fit_transform(G)))
    np.testing.assert_allclose(got, manual)
    # rows of the view only; mechanism not modified (cloned)
    np.testing.assert_allclose(aggregation_error(G[[5, 9]], mech), manual[[5, 9]])
    # another aggregator
    kp = aggregation_error(G, mech, KProp(steps=2), per_node=False)
    assert np.isfinite(kp) and kp != got.mean()


def test_aggregation_error_known_answers_on_isolated_nodes():
    """With only self loops GC(v) = x_v and the error is the mechanism's own noise."""
    n, d = 5000, 4
    G = GraphData(np.zeros((n, d)), sp.csr_matrix((n, n)))
    # Laplace: |noise| ~ Exponential(b): mean b, sd b
    lap = LaplaceMechanism(eps=8.0, feature_range=(0, 1), random_state=0)
    b = d * 1.0 / 8.0
    mae = aggregation_error(G, lap, per_node=False)
    assert abs(mae - b) < 5 * b / np.sqrt(n * d)
    # One bit at x = alpha = 0: |y*| = e/(e-1) w.p. 1/(e+1), 1/(e-1) w.p. e/(e+1)
    e = np.exp(1.0)
    vals, probs = np.array([e / (e - 1), 1 / (e - 1)]), np.array([1 / (e + 1), e / (e + 1)])
    mean = vals @ probs
    sd = np.sqrt((vals - mean) ** 2 @ probs)
    assert mean == pytest.approx(2 * e / (e * e - 1))
    mae = aggregation_error(G, OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0),
                            per_node=False)
    assert abs(mae - mean) < 5 * sd / np.sqrt(n * d)


def test_mae_by_degree():
    deg, mean = mae_by_degree([1.0, 3.0, 5.0, 7.0, 2.0], [1, 1, 2, 9, 0], max_degree=5)
    np.testing.assert_array_equal(deg, [0, 1, 2])
    np.testing.assert_allclose(mean, [2.0, 2.0, 5.0])
    with pytest.raises(ValueError, match="values"):
        mae_by_degree([1.0], [1, 2])
    with pytest.raises(ValueError, match="non-negative"):
        mae_by_degree([1.0], [-1])
    with pytest.raises(ValueError, match="integers"):
        mae_by_degree([1.0], [1.5])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_mae_by_degree_refuses_non_finite_mae(bad):
    # a NaN propagated silently into its degree's mean
    with pytest.raises(ValueError, match="mae contains NaN or infinite"):
        mae_by_degree([1.0, bad, 3.0], [1, 1, 2])


def test_mae_by_degree_requires_1d():
    # 2-D inputs were flattened
    with pytest.raises(ValueError, match="must be 1-D"):
        mae_by_degree(np.ones((2, 2)), np.ones((2, 2), int))
    with pytest.raises(ValueError, match="must be 1-D"):
        mae_by_degree(np.ones(4), np.ones((2, 2), int))


def test_requires_graph():
    with pytest.raises(TypeError, match="GraphData"):
        aggregation_error(np.zeros((3, 2)), OneBitMechanism(eps=1.0, feature_range=(0, 1)))
    with pytest.raises(ValueError, match="adjacency"):
        aggregation_error(GraphData(np.zeros((3, 2))),
                          OneBitMechanism(eps=1.0, feature_range=(0, 1)))
