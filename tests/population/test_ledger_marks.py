"""What Ledger.entries(since=mark) lists: a collection answered again after the mark (its
further answers are new), and not a central training recorded again (once per training, its
spec id: recording it again, as a journal read twice would, adds no epsilon)."""

import numpy as np
import pytest

from skldp.population import CollectionSpec, Ledger


def test_a_training_recorded_again_is_not_new():
    led = Ledger()
    spec = CollectionSpec(id="", kind="skldp.central.DPGCN", protects=("features",),
                          epsilon=1.5, delta=1e-6, model="central", params={},
                          public_state={}).with_nonce("c" * 16)
    led._add_central(spec, 10)
    mark = led.mark()
    led._add_central(spec, 10)
    assert led.central_epsilon == pytest.approx(1.5)
    assert led.entries(since=mark) == []
    assert led.mark() == mark
    (entry,) = led.entries()
    assert (entry.n_users, entry.first) == (10, mark)


def test_a_collection_answered_again_after_a_mark_is_listed_since_it():
    led = Ledger()
    spec = CollectionSpec(id="", kind="skldp.mechanisms.OneBitMechanism",
                          protects=("features",), epsilon=0.5).with_nonce("a" * 16)
    led._add(spec, np.array([1, 2], np.uint64))
    mark = led.mark()
    assert led.entries(since=mark) == []
    led._add(spec, np.array([2], np.uint64))          # user 2 answers it again
    (entry,) = led.entries(since=mark)
    assert entry.spec.id == spec.id and entry.last > mark and entry.first <= mark
    assert (entry.n_answers, entry.max_answers) == (3, 2)
