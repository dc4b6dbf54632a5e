"""A bare Ledger charges a user once per answer: a user who answered the same collection
twice (two records of one spec, or a key repeated in one record) spends twice its
epsilon (sequential composition), and the entry reports two answers."""

import numpy as np
import pytest

from skldp.population import CollectionSpec, Ledger


def _spec(eps, nonce):
    spec = CollectionSpec(id="", kind="skldp.mechanisms.OneBitMechanism",
                          protects=("features",), epsilon=eps)
    return spec.with_nonce(nonce)


def _eps_of(ledger, key):
    users, eps = ledger.per_user()
    return float(eps[users == np.uint64(key)][0])


def test_repeated_answers_are_each_charged():
    led = Ledger()
    a = _spec(0.75, "a" * 16)
    led._add(a, np.array([1, 2, 3], np.uint64))
    led._add(a, np.array([2], np.uint64))        # user 2 answers a again
    led._add(a, np.array([3, 3], np.uint64))     # user 3 twice more, in one record
    users, eps = led.per_user()
    np.testing.assert_array_equal(users, [1, 2, 3])
    np.testing.assert_allclose(eps, [0.75, 1.5, 2.25], rtol=1e-15)
    np.testing.assert_allclose(led.spent(np.array([3, 2, 9], np.uint64)), [2.25, 1.5, 0.0])
    assert led.local_epsilon == pytest.approx(2.25)
    (entry,) = led.entries()
    assert (entry.n_users, entry.n_answers, entry.max_answers) == (3, 6, 3)
    assert entry.epsilon == pytest.approx(2.25)


def test_repeats_compose_with_other_collections():
    led = Ledger()
    a, b = _spec(0.5, "a" * 16), _spec(0.25, "b" * 16)
    key = np.array([7], np.uint64)
    led._add(a, key)
    led._add(a, key)
    led._add(b, key)
    assert _eps_of(led, 7) == pytest.approx(2 * 0.5 + 0.25)
    assert led.epsilon_for("features") == pytest.approx(1.25)
    max_answers = {e.spec.id: e.max_answers for e in led.entries()}
    assert max_answers == {a.id: 2, b.id: 1}
