"""Local and central epsilons compose sequentially (they add up): in the ledger's
``total_epsilon``, in the budget check of a local collection made after a central
training, and in the check of a central training itself (which must count the
training it is about to record)."""

import dataclasses
import uuid

import numpy as np
import pytest
from central_specs import central_spec

from skldp import GraphData
from skldp.mechanisms import OneBitMechanism
from skldp.population import BudgetExceededError, CollectionSpec, Ledger


def _central(eps):
    return central_spec(eps, n_train=10)


def _graph(budget):
    rng = np.random.default_rng(0)
    return GraphData(rng.random((20, 2)), np.zeros((20, 20)), budget=budget)


def test_local_and_central_add_up_and_the_cap_sees_both():
    G = _graph(5.0)
    # two features at 1.5 each: every user spends 3 locally
    OneBitMechanism(1.5, feature_range=(0, 1), random_state=0).fit_transform(G)
    pop = G.population
    pop.record_training(_central(1.0), 20)
    assert G.ledger.local_epsilon == pytest.approx(3.0)
    assert G.ledger.central_epsilon == pytest.approx(1.0)
    assert G.ledger.total_epsilon == pytest.approx(4.0)        # 3 + 1, not max(3, 1)
    np.testing.assert_allclose(pop.remaining(G.node_keys), 1.0)
    # 3 (local) + 1 (central) + 1.5 (new training) = 5.5 > 5: refused, nothing recorded
    with pytest.raises(BudgetExceededError, match="Nothing was trained"):
        pop.record_training(_central(1.5), 20)
    assert G.ledger.central_epsilon == pytest.approx(1.0)
    # a local collection after the training sees it: 4 + 2 x 0.6 = 5.2 > 5
    with pytest.raises(BudgetExceededError, match="Nothing was sent"):
        OneBitMechanism(0.6, feature_range=(0, 1), random_state=1).fit_transform(G)
    assert G.ledger.local_epsilon == pytest.approx(3.0)
    # a cap below what was spent (4) is refused
    with pytest.raises(ValueError, match="below what a user has already spent"):
        pop.set_budget(3.5)
    # exactly at the cap is allowed: 4 + 1 = 5
    pop.record_training(_central(1.0), 20)
    assert G.ledger.total_epsilon == pytest.approx(5.0)


def test_a_training_alone_is_checked_with_its_own_epsilon():
    # nothing spent yet: a training above the cap is refused by its own epsilon
    G = _graph(5.0)
    with pytest.raises(BudgetExceededError):
        G.population.record_training(_central(6.0), 20)
    assert G.ledger.total_epsilon == 0.0 and len(G.ledger) == 0
    G.population.record_training(_central(4.0), 20)
    assert G.ledger.total_epsilon == pytest.approx(4.0)


def test_entries_since_a_mark_list_only_what_came_after_it():
    # local collections and central trainings alike
    def local(eps):
        return CollectionSpec(id="", kind="skldp.mechanisms.OneBitMechanism",
                              protects=("features",), epsilon=eps).with_nonce(
                                  uuid.uuid4().hex[:16])

    led = Ledger()
    keys = np.array([1, 2], np.uint64)
    a, t1, b, t2 = local(1.0), _central(0.5), local(2.0), _central(0.25)
    led._add(a, keys)
    after_a = led.mark()
    assert led.entries(since=after_a) == []        # a local collection before the mark
    led._add_central(t1, 2)
    after_t1 = led.mark()
    assert led.entries(since=after_t1) == []       # a central training before the mark
    led._add(b, keys)
    led._add_central(t2, 2)
    assert [e.spec.id for e in led.entries(since=after_a)] == [t1.id, b.id, t2.id]
    assert [e.spec.id for e in led.entries(since=after_t1)] == [b.id, t2.id]
    assert [e.spec.id for e in led.entries()] == [a.id, t1.id, b.id, t2.id]


def test_a_training_recorded_again_is_not_checked_as_a_new_one():
    # record_training of a spec already recorded (a caller's retry, the same id): the
    # ledger counts it once (_add_central ignores the repeat), so the budget check must
    # not add its epsilon again: 3 + 3 = 6 > 5 refused a repeat that charges nothing
    G = _graph(5.0)
    pop, spec = G.population, _central(3.0)
    pop.record_training(spec, 20)
    pop.record_training(spec, 20)
    assert G.ledger.total_epsilon == pytest.approx(3.0) and len(G.ledger) == 1
    np.testing.assert_allclose(pop.remaining(G.node_keys), 2.0)
    # a new training of the same request (another id) is a new charge: refused
    with pytest.raises(BudgetExceededError, match="Nothing was trained"):
        pop.record_training(_central(3.0), 20)
    # a spec under a recorded id but with other content is not the recorded training
    other = dataclasses.replace(spec, epsilon=4.0)
    with pytest.raises(ValueError, match="not the digest of its content"):
        pop.record_training(other, 20)
    assert G.ledger.total_epsilon == pytest.approx(3.0)


@pytest.mark.parametrize("budget", [None, 10.0])
def test_a_spec_whose_id_is_not_its_content_is_refused(budget):
    # without a budget too: the ledger keeps one entry per id, so another epsilon under a
    # recorded id would be recorded as the first training, and never counted
    G = _graph(budget)
    pop, spec = G.population, _central(1.0)
    pop.record_training(spec, 20)
    forged = dataclasses.replace(spec, epsilon=4.0)
    with pytest.raises(ValueError, match="not the digest of its content"):
        pop.record_training(forged, 20)
    with pytest.raises(ValueError, match="with_nonce"):
        pop.record_training(dataclasses.replace(spec, id="0123456789abcdef"), 20)
    assert G.ledger.total_epsilon == pytest.approx(1.0) and len(G.ledger) == 1
    pop.record_training(forged.with_nonce(uuid.uuid4().hex), 20)   # a new training: counted
    assert G.ledger.total_epsilon == pytest.approx(5.0)
