"""``Ledger.epsilon_for`` and ``Ledger.per_user`` refuse a part that no collection protects.

Before, a misspelt part (``"feature"``, ``"Labels"``) matched no collection and read as
``0.0`` spent: a ledger whose users spent 2 on their features said 0 for "feature".
``PrivacyReport.epsilon_for`` already refused it.
"""

import uuid

import numpy as np
import pytest

from skldp.population import CollectionSpec, Ledger
from skldp.population._ledger import LedgerSummary


def _local(eps, protects=("features",)):
    spec = CollectionSpec(id="", kind="skldp.mechanisms.OneBitMechanism",
                          protects=protects, epsilon=eps)
    return spec.with_nonce(uuid.uuid4().hex[:16])


@pytest.fixture
def ledger():
    led = Ledger()
    led._add(_local(2.0), np.array([1, 2], np.uint64))
    return led


@pytest.mark.parametrize("what", ["feature", "Features", "adjacency", "", 0, ("features",)])
def test_a_part_no_collection_protects_is_refused(ledger, what):
    with pytest.raises(ValueError, match="'features', 'labels' or 'edges'"):
        ledger.epsilon_for(what)
    with pytest.raises(ValueError, match="'features', 'labels' or 'edges'"):
        ledger.per_user(what)
    with pytest.raises(ValueError, match="'features', 'labels' or 'edges'"):
        LedgerSummary(ledger).epsilon_for(what)


def test_the_parts_and_none_are_read(ledger):
    assert ledger.epsilon_for("features") == 2.0
    assert ledger.epsilon_for("labels") == ledger.epsilon_for("edges") == 0.0
    assert ledger.epsilon_for(None) == ledger.local_epsilon == 2.0
    assert len(ledger.per_user(None)[0]) == len(ledger.per_user("features")[0]) == 2
    assert LedgerSummary(ledger).epsilon_for("features") == 2.0


def test_a_part_a_custom_collection_protects_is_read(ledger):
    ledger._add(_local(0.5, protects=("nodes",)), np.array([3], np.uint64))
    assert ledger.epsilon_for("nodes") == 0.5
