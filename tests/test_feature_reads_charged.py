"""A server step's reads of the users' features in the clear reach
its privacy report after a refit on other users, and after it is given a plain array."""

import numpy as np
from sklearn.preprocessing import StandardScaler

from skldp import GraphData, NodeWise
from skldp.accounting import privacy_report
from skldp.models import MLPHead


def _public_view(seed):
    X = np.random.default_rng(seed).normal(size=(30, 3))
    return GraphData(X).with_features(X, source="public")   # reading them costs nothing


def test_a_refit_on_other_users_reports_their_ledger():
    step = NodeWise(StandardScaler()).fit(_public_view(0))
    assert privacy_report(step).local_epsilon == 0.0
    B = GraphData(np.random.default_rng(1).normal(size=(20, 3)))   # the users' raw rows
    step.fit(B)
    assert step.ledger_ is B.population.ledger
    assert privacy_report(step).local_epsilon == float("inf")


def test_a_plain_array_given_after_a_fit_on_users_is_reported_as_read():
    G = _public_view(0)
    clf = MLPHead(epochs=2, early_stopping=False, random_state=0).fit(G, np.arange(30) % 2)
    assert privacy_report(clf).local_epsilon == 0.0
    clf.predict(np.random.default_rng(2).normal(size=(5, 3)))   # rows of no known users
    assert privacy_report(clf).local_epsilon == float("inf")
