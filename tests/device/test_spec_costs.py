"""A device must refuse any spec whose parameters spend more
than it states (every kind, no slack), a spec that misstates what it protects or its
privacy model, and a state file whose entries would lower what the device has spent."""

import dataclasses
import json

import numpy as np
import pytest

from skldp.device import Device, DeviceStateError, SpecError, read_spec
from skldp.device._spec import CollectionSpec
from skldp.mechanisms import GRRFSMechanism, HDSMechanism, OneBitMechanism
from skldp.population import collection_spec, mechanism_from_spec


def _forge(spec, **changes):
    """The spec with ``changes`` and the id its new content gives (a server, or a relay,
    can always recompute the id: it is a digest, not a signature)."""
    s = dataclasses.replace(spec, **changes)
    return dataclasses.replace(s, id=s.content_id()).to_dict()


def test_onebit_spec_stating_one_coordinate_cost_is_refused():
    # split_eps=False: each of the d coordinates spends eps, the spec states d * eps
    spec = collection_spec(OneBitMechanism(1.0, feature_range=(0, 1)), n_features=4)
    assert spec.epsilon == pytest.approx(4.0)
    with pytest.raises(SpecError, match="parameters spend 4 per user"):
        read_spec(_forge(spec, epsilon=1.0))
    with pytest.raises(SpecError, match="parameters spend 4 per user"):
        Device("u").answer(_forge(spec, epsilon=1.0), np.zeros(4))


def test_grrfs_spec_stating_one_feature_cost_is_refused():
    spec = collection_spec(GRRFSMechanism(1.0, m=2, domain_sizes=[3, 3, 3]), n_features=3)
    assert spec.epsilon == pytest.approx(2.0)
    with pytest.raises(SpecError, match="parameters spend 2 per user"):
        read_spec(_forge(spec, epsilon=1.0))


def test_a_spec_just_below_its_cost_is_refused():
    spec = collection_spec(HDSMechanism(1.0, k=2, feature_range=(0, 1)), n_features=6)
    read_spec(_forge(spec, epsilon=1.0))                 # exactly the cost: fine
    with pytest.raises(SpecError, match="parameters spend 1 per user"):
        read_spec(_forge(spec, epsilon=1.0 - 1e-4))      # 0.01% below: over-spends


def test_the_device_cap_has_no_slack():
    spec = collection_spec(HDSMechanism(1.0001, k=2, feature_range=(0, 1)), n_features=6)
    with pytest.raises(SpecError, match="above its cap"):
        Device("u", max_epsilon=1.0).answer(spec, np.zeros(6))
    Device("u", max_epsilon=1.0001).answer(spec, np.zeros(6))


def test_a_spec_misstating_what_it_protects_is_refused():
    # a feature collection recorded as a label collection would charge the wrong budget
    spec = collection_spec(HDSMechanism(1.0, k=2, feature_range=(0, 1)), n_features=6)
    with pytest.raises(SpecError, match="protects 'features'"):
        read_spec(_forge(spec, protects=("labels",)))
    with pytest.raises(SpecError, match="protects 'features'"):
        Device("u").answer(_forge(spec, protects=("labels",)), np.zeros(6))


@pytest.mark.parametrize("model", ["central", "clear"])
def test_a_device_refuses_a_non_local_spec_of_its_kinds(model):
    spec = collection_spec(HDSMechanism(1.0, k=2, feature_range=(0, 1)), n_features=6)
    forged = _forge(spec, model=model)
    read_spec(forged)   # the format is fine: a ledger reads central and clear specs
    with pytest.raises(SpecError, match="must be a local collection"):
        Device("u").answer(forged, np.zeros(6))


def test_a_state_file_with_a_negative_epsilon_is_refused(tmp_path):
    # a negative entry would lower what the device spent, and lift its cap
    spec = collection_spec(HDSMechanism(1.0, k=2, feature_range=(0, 1)), n_features=6)
    rec = {"collection": spec.id, "user": "u", "report": {"i": [0, 1], "c": [1, 2]}}
    path = tmp_path / "state.json"
    path.write_text(json.dumps({spec.id: {"input": "x", "record": rec, "epsilon": -5.0}}))
    with pytest.raises(DeviceStateError, match="epsilon is not a number >= 0"):
        Device("u", path=str(path), max_epsilon=1.0)


def test_a_central_spec_with_delta_above_one_is_refused():
    spec = CollectionSpec(id="", kind="skldp.central.DPGNNClassifier", protects=("features",),
                          epsilon=1.0, delta=1.5, model="central").with_nonce("0" * 16)
    with pytest.raises(SpecError, match="delta must be in"):
        CollectionSpec.from_dict(spec.to_dict(), check_kind=False)


def test_mechanism_from_spec_claims_the_spec_epsilon():
    # OneBit with split_eps=False: params say eps=1, a user spends d * eps = 4
    spec = collection_spec(OneBitMechanism(1.0, feature_range=(0, 1)), n_features=4)
    assert mechanism_from_spec(spec).epsilon_ == pytest.approx(4.0)
