"""The ledger's reading side against its documented contract.

- ``epsilon_for(what)`` / ``per_user(protects=what)`` count every collection that
  protects ``what``, also one that protects several parts;
- a ledger saved twice (a saved pipeline loaded and saved again once its population is
  gone) keeps the users' cap.
"""

import gc
import pickle
import uuid

import numpy as np
import pytest

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.mechanisms import HDSMechanism
from skldp.population import (
    BudgetExceededError,
    CollectionSpec,
    Ledger,
    Population,
    collection_spec,
)


def _local(eps, protects=("features",)):
    spec = CollectionSpec(id="", kind="skldp.mechanisms.OneBitMechanism",
                          protects=protects, epsilon=eps)
    return spec.with_nonce(uuid.uuid4().hex[:16])


def test_a_collection_protecting_several_parts_counts_for_each():
    led = Ledger()
    keys = np.array([1, 2], np.uint64)
    led._add(_local(0.5, protects=("features", "labels")), keys)
    led._add(_local(0.25, protects=("labels",)), keys[:1])
    assert led.epsilon_for("features") == pytest.approx(0.5)
    assert led.epsilon_for("labels") == pytest.approx(0.75)     # 0.5 + 0.25 for user 1
    users, eps = led.per_user("labels")
    np.testing.assert_array_equal(users, [1, 2])
    np.testing.assert_allclose(eps, [0.75, 0.5])
    assert led.epsilon_for("edges") == 0.0


def _saved_with_a_cap(cap):
    G = GraphData(np.random.default_rng(0).uniform(size=(30, 3)), budget=cap)
    mech = HDSMechanism(1.0, k=1, feature_range=(0, 1), random_state=0)
    mech.fit_transform(G)
    return pickle.dumps(mech)


def test_a_ledger_saved_again_once_its_population_is_gone_keeps_the_cap():
    blob = _saved_with_a_cap(4.0)
    gc.collect()                                  # the population and its journal are gone
    loaded = pickle.loads(blob)
    assert privacy_report(loaded).budget == 4.0
    again = pickle.loads(pickle.dumps(loaded))    # saved again by whoever loaded it
    report = privacy_report(again)
    assert report.budget == 4.0
    assert report.local_epsilon == pytest.approx(1.0)


def _encode(rkeys):
    return np.zeros(len(rkeys))


def test_a_request_naming_a_user_twice_charges_one_answer():
    # "a device answers a collection once": the same user twice in one request, about
    # the same input, is one answer
    pop = Population()
    spec = _local(1.0)
    pop.collect(spec, np.array([1, 1, 2], np.uint64), np.array([7, 7, 8], np.uint64), _encode)
    users, eps = pop.ledger.per_user()
    np.testing.assert_array_equal(users, [1, 2])
    np.testing.assert_allclose(eps, [1.0, 1.0])
    (entry,) = pop.ledger.entries()
    assert (entry.n_users, entry.n_answers, entry.max_answers) == (2, 2, 1)


def test_resent_answers_beside_new_ones_are_free_for_the_budget():
    # user 2 answered already: resending its answer is free, so the request fits a cap
    # of 1.0 though user 2 has spent all of it; user 3 spends its 1.0 now
    pop = Population(budget=1.0)
    spec = _local(1.0)
    pop.collect(spec, np.array([1, 2], np.uint64), np.array([7, 8], np.uint64), _encode)
    pop.collect(spec, np.array([2, 3], np.uint64), np.array([8, 9], np.uint64), _encode)
    users, eps = pop.ledger.per_user()
    np.testing.assert_array_equal(users, [1, 2, 3])
    np.testing.assert_allclose(eps, [1.0, 1.0, 1.0])
    # a new collection is charged again, and refused above the cap
    with pytest.raises(BudgetExceededError):
        pop.collect(_local(0.5), np.array([3], np.uint64), np.array([9], np.uint64), _encode)


def test_a_deployment_spec_refuses_a_seeded_mechanism():
    # a seed ties every report to a public number: refused unless it is a simulation
    seeded = HDSMechanism(1.0, k=1, feature_range=(0, 1), random_state=0)
    with pytest.raises(ValueError, match="random_state=0"):
        collection_spec(seeded, n_features=4)
    spec = collection_spec(seeded, n_features=4, simulation=True)
    assert spec.epsilon == 1.0 and spec.protects == ("features",)
    assert collection_spec(HDSMechanism(1.0, k=1, feature_range=(0, 1)),
                           n_features=4).epsilon == 1.0


def test_a_saved_ledger_sees_a_cap_set_after_it_was_saved():
    # a ledger saved with an estimator reads its population's journal while it is there:
    # it stays current, the cap included ("the last one known")
    G = GraphData(np.random.default_rng(1).uniform(size=(30, 3)), budget=4.0)
    mech = HDSMechanism(1.0, k=1, feature_range=(0, 1), random_state=0)
    mech.fit_transform(G)
    saved = pickle.loads(pickle.dumps(mech))
    assert privacy_report(saved).budget == 4.0
    G.population.set_budget(2.5)
    assert privacy_report(saved).budget == 2.5
    assert privacy_report(saved).local_epsilon == pytest.approx(1.0)
