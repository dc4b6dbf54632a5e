"""np.asarray of a view of the users' raw features charges exactly
that view's users a read in the clear; features set as public cost nothing."""

import numpy as np

from skldp import GraphData
from skldp.accounting import privacy_report


def test_np_asarray_of_raw_features_charges_every_user_of_the_view():
    G = GraphData(np.random.default_rng(0).normal(size=(10, 3)))
    np.asarray(G[[2, 5, 7]])
    assert privacy_report(G).local_epsilon == float("inf")
    keys, cost = G.ledger.per_user("features")
    assert sorted(keys.tolist()) == sorted(G.node_keys[[2, 5, 7]].tolist())
    assert np.isinf(cost).all()


def test_np_asarray_of_public_features_costs_nothing():
    X = np.random.default_rng(0).normal(size=(10, 3))
    G = GraphData(X).with_features(X, source="public")
    np.asarray(G)
    assert privacy_report(G).local_epsilon == 0.0


def test_np_asarray_of_server_computed_features_is_charged():
    X = np.random.default_rng(0).normal(size=(10, 3))
    G = GraphData(X).with_features(X * 2, source="server")
    np.asarray(G)
    assert privacy_report(G).local_epsilon == float("inf")
