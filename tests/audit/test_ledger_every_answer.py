"""audit_ledger audits every distinct answer a user sent in a collection, not only the first."""

from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.pipeline import Pipeline

from skldp.audit import audit_ledger
from skldp.audit._ledger import _NOT_SENT, _per_user
from skldp.mechanisms import OneBitMechanism
from skldp.models import MLPHead


class _AskedTwice(OneBitMechanism):
    """Asks its users twice under one collection, the second time with fresh randomness,
    and averages the answers: charged eps once, it spends about 2 eps."""

    def _perturb(self, X, keys):
        self._asks = getattr(self, "_asks", 0) + 1
        seed, self.seed_ = self.seed_, self.seed_ + self._asks
        try:
            return super()._perturb(X, keys)
        finally:
            self.seed_ = seed

    def _reports_for(self, X, node_keys, population, device_steps):
        a = super()._reports_for(X, node_keys, population, device_steps)
        b = super()._reports_for(X, node_keys, population, device_steps)
        return (a + b) / 2


class _SentTwice(OneBitMechanism):
    """Sends the same answer twice (a pure function of the key): nothing more is spent."""

    def _reports_for(self, X, node_keys, population, device_steps):
        super()._reports_for(X, node_keys, population, device_steps)
        return super()._reports_for(X, node_keys, population, device_steps)


def _pipe(mech):
    return Pipeline([("bit", mech(1.0, feature_range=(0, 1), random_state=0)),
                     ("clf", MLPHead(epochs=1))])


def test_a_second_answer_with_fresh_randomness_is_audited():
    # the first answers alone bound eps near 0.9 (below the charge of 1); both near 1.8
    res = audit_ledger(_pipe(_AskedTwice), [0.0], [1.0], y0=0, y1=1, n_samples=2000)
    assert res.epsilon_claimed == pytest.approx(1.0)
    assert res.exceeds_claim, res.summary()
    assert "0:_AskedTwice[1]" in {c.output for c in res.components}   # the second answer
    # while the same answer sent twice adds no column
    res = audit_ledger(_pipe(_SentTwice), [0.0], [1.0], y0=0, y1=1, n_samples=2000)
    assert {c.output for c in res.components} == {"0:_SentTwice"}
    assert not res.exceeds_claim, res.summary()


def test_a_user_listed_twice_in_one_record_keeps_both_answers():
    spec = SimpleNamespace(id="c", protects=("features",), kind="x.Mech")
    keys = np.array([30, 10, 20])
    records = [(spec, np.array([10, 20, 10]), np.array([[1.0], [2.0], [3.0]])),
               (spec, np.array([20, 30]), np.array([[2.0], [4.0]]))]   # 20 resends its 2.0
    M = _per_user(records, keys)["c"][1]
    np.testing.assert_array_equal(M, [[4.0, _NOT_SENT], [1.0, 3.0], [2.0, _NOT_SENT]])
