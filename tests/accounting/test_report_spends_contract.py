"""privacy_report's spends, and forget_secrets' refusal, against their documented contract.

- ``PrivacySpend.epsilon`` is "what the user who answered most often spent on it (its
  budget times that user's number of answers)": repeats compose sequentially;
- ``PrivacySpend.delta`` of a central training is the training's delta;
- forget_secrets raises when it cannot reach a secret, rather than leave it in place.
"""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.central import DPMLPClassifier
from skldp.mechanisms import HDSMechanism
from skldp.population import CollectionSpec
from skldp.privacy import forget_secrets


def _rows(seed, n=40, d=4):
    return np.random.default_rng(seed).uniform(size=(n, d))


def test_a_spend_counts_every_answer_of_the_user_who_answered_most():
    G = GraphData(_rows(0))
    spec = CollectionSpec(id="", kind="skldp.mechanisms.OneBitMechanism",
                          protects=("features",), epsilon=0.5).with_nonce("c" * 16)
    keys = np.asarray(G.node_keys, np.uint64)
    G.ledger._add(spec, keys)                  # every user answers once ...
    G.ledger._add(spec, keys[:1])              # ... and the first user twice more
    G.ledger._add(spec, keys[:1])
    rep = privacy_report(G)
    (spend,) = rep.spends
    assert spend.n_users == len(keys)
    assert spend.epsilon == pytest.approx(3 * 0.5)          # sequential composition
    assert rep.local_epsilon == pytest.approx(3 * 0.5)


def test_a_central_spend_carries_the_training_s_delta():
    X = _rows(1, n=60)
    y = (X[:, 0] > 0.5).astype(int)
    clf = DPMLPClassifier(classes=[0, 1], batch_size=20, n_steps=5, noise_multiplier=2.0,
                          accountant="hypergeometric", delta=1e-4,
                          random_state=0).fit(GraphData(X), y)
    rep = privacy_report(clf)
    (spend,) = rep.central
    assert spend.delta == pytest.approx(clf.delta_) and spend.delta > 0
    assert spend.epsilon == pytest.approx(clf.epsilon_)
    assert rep.central_delta == pytest.approx(clf.delta_)


class _KeepsInAList(BaseEstimator):
    """A meta-estimator that keeps a fitted step in a list, where forget_secrets cannot
    tell what data reaches it."""

    def __init__(self, step=None):
        self.step = step

    def fit(self, X):
        self.held_ = [clone(self.step).fit(X)]
        return self


def test_forget_secrets_refuses_to_leave_a_secret_it_cannot_reach():
    G = GraphData(_rows(2))
    est = _KeepsInAList(HDSMechanism(1.0, k=1, feature_range=(0, 1), random_state=0)).fit(G)
    assert hasattr(est.held_[0], "seed_")
    with pytest.raises(ValueError, match="could not tell what data reaches"):
        forget_secrets(est, G)
