"""received_graph(missing_features="zero") fills a user without a feature report with the
decoded "no report" value of the kinds that have one; GRR-FS and set-valued reports have
none, and are refused with a ValueError that says what to do, before anything is charged."""

import warnings

import numpy as np
import pytest

from skldp.device import Device
from skldp.device._random import ids_to_keys
from skldp.mechanisms import GRRFSMechanism, HDSMechanism, OneBitMechanism, SetValuedMechanism
from skldp.population import Population, collection_spec, read_reports, received_graph

IDS = [1, 2, 3]   # user 3 sends no report


def _received(mech, row):
    spec = collection_spec(mech, n_features=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        recs = [Device(u).answer(spec, row) for u in IDS[:2]]
    return read_reports(recs, spec, users=IDS)


@pytest.mark.parametrize("mech, row", [
    (GRRFSMechanism(1.0, domain_sizes=[3, 3]), [1, 2]),
    (SetValuedMechanism(1.0), [1, 0]),
])
def test_reports_without_a_neutral_value_are_refused(mech, row):
    received = _received(mech, row)
    pop = Population(simulated=False)
    with pytest.raises(ValueError, match="no neutral value: drop the users without a report"):
        received_graph(features=received, node_ids=IDS, missing_features="zero",
                       population=pop)
    assert pop.ledger.spent(ids_to_keys(np.array(IDS))).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("mech, value", [
    (HDSMechanism(1.0, feature_range=(0, 2)), 0.0),
    (OneBitMechanism(1.0, feature_range=(0, 2)), 1.0),   # the range's centre
])
def test_the_others_fill_the_no_report_value(mech, value):
    G, _ = received_graph(features=_received(mech, [1, 0]), node_ids=IDS,
                          missing_features="zero")
    assert np.asarray(G.features)[2].tolist() == [value, value]
