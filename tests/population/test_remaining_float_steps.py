"""``Population.remaining`` is never negative float noise."""

import numpy as np

from skldp import GraphData
from skldp.mechanisms import LaplaceMechanism


def test_a_budget_spent_in_float_steps_leaves_exactly_zero():
    # 0.1 + 0.1 + 0.1 = 0.30000000000000004: the ledger admits it under a cap of 0.3
    # (sums of floats), and remaining() returned -5.6e-17 (a debt) instead of 0
    G = GraphData(np.random.default_rng(0).random((20, 1)), budget=0.3)
    for seed in range(3):
        LaplaceMechanism(0.1, feature_range=(0, 1), random_state=seed).fit(G).transform(G)
    left = G.population.remaining(G.node_keys)
    assert np.all(left == 0.0)
    assert not np.any(np.signbit(left))


def test_what_is_left_is_otherwise_unchanged():
    G = GraphData(np.random.default_rng(0).random((20, 1)), budget=0.3)
    LaplaceMechanism(0.1, feature_range=(0, 1), random_state=0).fit(G).transform(G)
    np.testing.assert_allclose(G.population.remaining(G.node_keys), 0.2)
