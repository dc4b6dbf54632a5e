"""Tests of the aggregation estimation-error tools (paper 000 eq. (8))."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.mechanisms import GRRFSMechanism, HDSMechanism, LaplaceMechanism, OneBitMechanism
from skldp.metrics import aggregation_error, aggregation_mae, mae_by_degree
from skldp.population import BudgetExceededError
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


def test_aggregation_error_maps_hds_reports_to_feature_units():
    # HDS reports C x on [-1, 1]: compared with raw features in [10, 20] as they were, the
    # error was the change of scale (MAE 15 without noise)
    G = _graph()
    G = G.with_features(10 + 10 * G.features, source="users")
    hds = HDSMechanism(eps=np.inf, k=5, feature_range=(10, 20), random_state=0)
    assert aggregation_error(G, hds, per_node=False) < 1e-9
    mech = HDSMechanism(eps=4.0, k=2, feature_range=(10, 20), random_state=1)
    got = aggregation_error(G, mech)
    fitted = mech.fit(G)
    agg = GCNAggregation().fit(G)
    est = G.with_features(fitted.estimate(fitted.transform(G).features), source="public")
    np.testing.assert_allclose(got, aggregation_mae(agg.transform(G), agg.transform(est)))
    # GRR-FS reports codes, with no map back to the features: refused
    with pytest.raises(ValueError, match="not .*no estimate method"):
        aggregation_error(G, GRRFSMechanism(np.inf, m=5, domain_sizes=[30] * 5,
                                            random_state=0))


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


@pytest.mark.parametrize("bad, match", [
    (np.array([[1j]]), "real numbers.*complex"),        # was 0 with a ComplexWarning
    (sp.csr_matrix(np.array([[1j]])), "real numbers.*complex"),
    (np.array([[1, 2j]], dtype=object), "real numbers, got 2j"),
    (np.array([[1, "2"]], dtype=object), "real numbers, got '2'"),   # was parsed as 2
    (np.array([["a"]]), "must hold numbers"),
])
def test_aggregation_mae_refuses_complex_and_non_numeric_input(bad, match):
    with pytest.raises(TypeError, match=match):
        aggregation_mae(bad, np.zeros((1, bad.shape[1])))
    with pytest.raises(TypeError, match="estimated_aggregate"):
        aggregation_mae(np.zeros((1, bad.shape[1])), bad)


@pytest.mark.parametrize("per_node", ["no", 1, None])
def test_aggregation_mae_refuses_non_bool_per_node(per_node):
    # "no" was taken as True
    with pytest.raises(TypeError, match="per_node must be True or False"):
        aggregation_mae(np.zeros((1, 1)), np.ones((1, 1)), per_node=per_node)
    assert aggregation_mae(np.zeros((1, 1)), np.ones((1, 1)), per_node=np.False_) == 1.0


@pytest.mark.parametrize("max_degree", [np.nan, 2.5, -1, True, "3"])
def test_mae_by_degree_refuses_bad_max_degree(max_degree):
    # nan kept no node and returned empty arrays
    with pytest.raises(ValueError, match="max_degree must be an integer >= 0 or None"):
        mae_by_degree([1.0, 2.0], [1, 2], max_degree=max_degree)


@pytest.mark.parametrize("degree, error, match", [
    (["1", "2"], TypeError, "degree must hold non-negative integers"),   # numpy's rint error
    (np.array([2**63, 1], dtype=np.uint64), ValueError, "degree holds 9223372036854775808"),
    ([np.nan, 1.0], ValueError, "degree contains NaN"),
    ([np.inf, 1.0], ValueError, "degree contains NaN or infinite"),
    (np.array([1, None], dtype=object), TypeError, "dtype object"),
])
def test_mae_by_degree_refuses_bad_degrees(degree, error, match):
    with pytest.raises(error, match=match):
        mae_by_degree([1.0, 2.0], degree)


def test_mae_by_degree_accepts_unsigned_and_integral_float_degrees():
    for degree in (np.array([2, 1], dtype=np.uint64), [2.0, 1.0]):
        deg, mean = mae_by_degree([1.0, 2.0], degree, max_degree=np.int64(2))
        np.testing.assert_array_equal(deg, [1, 2])
        np.testing.assert_allclose(mean, [2.0, 1.0])


def test_aggregation_mae_charges_a_read_of_users_features_and_none_of_reports():
    # the error against the users' raw features tells the server something of them:
    # charged as a read in the clear (it was free, and answered under a budget)
    G = _graph(n=30)
    reports = OneBitMechanism(1.0, feature_range=(0, 1), random_state=0).fit(G).transform(G)
    assert G.ledger.epsilon_for("features") == 1.0 * G.shape[1]
    aggregation_mae(reports, reports)          # reports: nothing more
    assert G.ledger.epsilon_for("features") == 1.0 * G.shape[1]
    aggregation_mae(G[:10], reports[:10])
    users, eps = G.ledger.per_user("features")
    assert np.isinf(eps).sum() == 10           # the view's rows, no one else
    H = _graph(n=30)
    H.population.set_budget(5.0)
    with pytest.raises(BudgetExceededError, match="aggregation_mae"):
        aggregation_mae(H, np.zeros(H.shape))
    assert H.ledger.epsilon_for("features") == 0


def test_mae_by_degree_refuses_a_negative_mae():
    # a signed error (estimate minus truth) was averaged per degree, where its signs cancel
    with pytest.raises(ValueError, match="mae must be non-negative"):
        mae_by_degree([1.0, -1.0, 3.0], [1, 1, 2])
    deg, mean = mae_by_degree([0.0, 1.0], [1, 1])
    np.testing.assert_allclose(mean, [0.5])
