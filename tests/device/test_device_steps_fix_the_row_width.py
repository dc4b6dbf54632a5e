"""An on-device step states the width of the row it reads (spec version 4): a FeatureHashing
map drawn for another width hashes with other signs, so a device whose row has another
width than the server's would have answered, silently, about another row."""

import dataclasses

import numpy as np
import pytest

from skldp import GraphData
from skldp.device import Device, SpecError, read_spec
from skldp.mechanisms import FeatureGrouper, FeatureHashing, HDSMechanism
from skldp.population import collection_spec
from skldp.population._spec import device_step_spec


def _spec_with(steps, d=4, version=None):
    spec = collection_spec(HDSMechanism(2.0, k=2, feature_range=(-1, 1)), n_features=d)
    spec = dataclasses.replace(spec, device_steps=tuple(steps), version=version)
    return spec.with_nonce(spec.nonce)


def _hashing(w, n=4):
    return device_step_spec(FeatureHashing(n, random_state=3).fit(np.zeros((1, w))), w)


def test_the_server_writes_the_raw_width_and_a_device_refuses_another():
    G = GraphData(np.zeros((5, 30)))
    Z = FeatureHashing(8, clip=1.0, random_state=3).fit_transform(G)
    mech = HDSMechanism(2.0, k=2, feature_range=(-1, 1), random_state=0).fit(Z)
    (step,) = mech.collection_.device_steps
    assert step["n_features_in"] == 30
    spec = read_spec(mech.collection_.to_json())
    row = (np.arange(30) % 3 == 0).astype(float)
    Device("u0").answer(spec, row)
    for width in (29, 31):
        with pytest.raises(ValueError, match=r"expects rows of 30 features .*shape \(1, "
                                             f"{width}\\)"):
            Device("u1").answer(spec, np.resize(row, width))
    # the width is part of the request: another width is another collection and seed
    Z31 = FeatureHashing(8, clip=1.0, random_state=3).fit_transform(GraphData(np.zeros((5, 31))))
    other = HDSMechanism(2.0, k=2, feature_range=(-1, 1), random_state=0).fit(Z31)
    assert other.collection_.body() != mech.collection_.body() and other.seed_ != mech.seed_


def test_step_widths_must_chain_to_the_mechanism():
    read_spec(_spec_with([_hashing(30)]).to_json())
    grouper = device_step_spec(FeatureGrouper(2).fit(np.zeros((1, 8))), 8)
    read_spec(_spec_with([_hashing(30, n=8), grouper]).to_json())
    with pytest.raises(SpecError, match="reads n_features_in=9 columns, but the step before "
                                        "it writes 8"):
        read_spec(_spec_with([_hashing(30, n=8), {**grouper, "n_features_in": 9}]).to_json())
    # 9 columns in groups of 2 are 5 groups, not the mechanism's 4
    with pytest.raises(SpecError, match="write 5 columns, but the mechanism reads n_features=4"):
        read_spec(_spec_with([{**grouper, "n_features_in": 9}]).to_json())
    for bad in (0, 2.5, None, True):
        with pytest.raises(SpecError, match="n_features_in must be an integer >= 1"):
            read_spec(_spec_with([{**_hashing(30), "n_features_in": bad}]).to_json())
    no_width = {k: v for k, v in _hashing(30).items() if k != "n_features_in"}
    with pytest.raises(SpecError, match=r"an on-device step \(FeatureHashing\) has the fields"):
        read_spec(_spec_with([no_width]).to_json())


def test_a_version_3_spec_is_still_read_but_its_steps_are_not_run():
    no_width = {k: v for k, v in _hashing(30).items() if k in ("kind", "params")}
    old = read_spec(_spec_with([no_width], version=3).to_json())
    assert old.version == 3
    with pytest.raises(SpecError, match=r"version 3\) has an on-device FeatureHashing step "
                                        "that does not state the width"):
        Device("u").answer(old, np.zeros(30))
    # a version 3 spec without steps is answered as before
    Device("u").answer(read_spec(_spec_with([], version=3).to_json()), np.zeros(4))
    with pytest.raises(SpecError, match="version 6 is not supported"):
        read_spec(_spec_with([], version=6).to_json())
