"""privacy_report over several ledgers adds them up (the same
people may be keyed differently in each ledger, so only the sum is an upper bound)."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.central import DPMLPClassifier
from skldp.mechanisms import HDSMechanism


class _Holds(BaseEstimator):
    """An estimator that keeps two fitted steps (like a meta-estimator's fitted parts)."""

    def __init__(self, first=None, second=None):
        self.first = first
        self.second = second

    def fit(self):
        self.first_, self.second_ = self.first, self.second
        return self


def _rows(seed, n=40, d=4):
    return np.random.default_rng(seed).uniform(size=(n, d))


def _collected(eps, G):
    """A feature mechanism whose users answered (the ledger charges the answers)."""
    mech = HDSMechanism(eps, k=1, feature_range=(0, 1), random_state=0)
    mech.fit_transform(G)
    return mech


def test_local_epsilons_of_two_ledgers_add_up():
    a = _collected(1.0, GraphData(_rows(0)))
    b = _collected(2.0, GraphData(_rows(1)))
    assert a.ledger_ is not b.ledger_
    rep = privacy_report(_Holds(a, b).fit())
    assert rep.local_epsilon == pytest.approx(3.0)
    assert rep.epsilon_for("features") == pytest.approx(3.0)
    assert rep.total_epsilon == pytest.approx(3.0)
    assert sorted(s.epsilon for s in rep.spends) == pytest.approx([1.0, 2.0])


def test_central_trainings_of_two_ledgers_add_up():
    def dpmlp(seed, z):
        X = _rows(seed, n=60)
        y = (X[:, 0] > 0.5).astype(int)
        return DPMLPClassifier(classes=[0, 1], batch_size=20, n_steps=5, noise_multiplier=z,
                               accountant="hypergeometric", random_state=0).fit(GraphData(X), y)
    a, b = dpmlp(0, 2.0), dpmlp(1, 1.0)
    assert a.ledger_ is not b.ledger_
    rep = privacy_report(_Holds(a, b).fit())
    assert rep.central_epsilon == pytest.approx(a.epsilon_ + b.epsilon_)
    assert rep.central_delta == pytest.approx(a.delta_ + b.delta_)
    assert rep.total_epsilon == pytest.approx(rep.local_epsilon + a.epsilon_ + b.epsilon_)


def test_total_and_budget_left_count_local_and_central_together():
    a = _collected(1.0, GraphData(_rows(0), budget=100.0))
    X = _rows(1, n=60)
    y = (X[:, 0] > 0.5).astype(int)
    b = DPMLPClassifier(classes=[0, 1], batch_size=20, n_steps=5, noise_multiplier=2.0,
                        accountant="hypergeometric", random_state=0).fit(GraphData(X), y)
    rep = privacy_report(_Holds(a, b).fit())
    assert rep.local_epsilon == pytest.approx(1.0) and rep.central_epsilon > 0
    total = 1.0 + b.epsilon_
    assert rep.total_epsilon == pytest.approx(total)
    # two populations (other people, or the same under other ids): their largest spends
    # are added, an upper bound; no one user is said to have that much left, and each
    # population's cap is its own (one had none: the report stated the other's for both)
    assert rep.budget is None and rep.budgets == (100.0, None)
    assert "2 populations' ledgers are added (an upper bound" in str(rep)
    assert "budgets per user of the 2 populations: 100, none" in str(rep)
    assert "left" not in str(rep)
    single = privacy_report(a)
    assert f"at least {100.0 - 1.0:.4g} left to each user" in str(single)


def test_the_report_of_a_graph_names_its_collections():
    # Before: every line of privacy_report(G) read "not kept by this estimator (another fit
    # on these users)", of an estimator that does not exist.
    G = GraphData(_rows(0))
    mech = _collected(1.0, G)
    text = str(privacy_report(G))
    assert f"collection {mech.collection_.id}: HDSMechanism epsilon=1" in text
    assert "not kept by this estimator" not in text
