"""A spec ships FeatureHashing's map (spec version 5): a port cannot redraw numpy's PCG64,
so a device hashes with the columns and signs the spec lists, checked when it is read, and
the server refuses a spec whose map is not the one its FeatureHashing draws."""

import dataclasses

import numpy as np
import pytest

from skldp import GraphData
from skldp.device import Device, SpecError, _steps, read_spec
from skldp.mechanisms import FeatureGrouper, FeatureHashing, HDSMechanism
from skldp.population import collection_spec, mechanism_from_spec, read_reports
from skldp.population._spec import device_step_spec
from skldp.utils import collection_seed


def _fitted(w=30, n=8, random_state=3):
    G = GraphData(np.zeros((5, w)))
    hashing = FeatureHashing(n, clip=1.0, random_state=random_state).fit(G)
    mech = HDSMechanism(2.0, k=2, feature_range=(-1, 1), random_state=0).fit(
        hashing.transform(G))
    return hashing, mech


def _with_step(spec, step, version=None):
    """``spec`` with its one step replaced, and the id its content gives."""
    spec = dataclasses.replace(spec, device_steps=(step,), version=version or spec.version)
    return spec.with_nonce(spec.nonce)


def _shipped(step, **change):
    return {**step, "public_state": {**step["public_state"], **change}}


def test_the_server_ships_its_map_and_a_device_hashes_with_the_shipped_one(monkeypatch):
    hashing, mech = _fitted()
    spec = collection_spec(mech, simulation=True)
    (step,) = spec.device_steps
    assert spec.version == 5
    assert step["public_state"] == {"columns": hashing.bucket_.tolist(),
                                    "signs": hashing.sign_.astype(int).tolist()}
    # a device never draws the map: it hashes with the spec's, whatever the random_state
    monkeypatch.setattr(_steps, "feature_hashing_map", None)
    columns = step["public_state"]["columns"][::-1]
    signs = [-s for s in step["public_state"]["signs"]]
    other = _with_step(spec, _shipped(step, columns=columns, signs=signs))
    row = np.linspace(-0.5, 0.5, 30)[None, :]
    got = _steps.device_steps(read_spec(other.to_dict()), row)
    want = _steps.hash_rows(row, np.array(columns), np.array(signs, float), 8, 1.0)
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, _steps.device_steps(spec, row))
    Device("u").answer(other, row[0])


_BAD = [({"columns": None}, "lists one of its columns for each of the n_features_in=30"),
        ({"columns": list(range(8)) * 3}, "lists one of its columns for each"),
        ({"signs": [1] * 31}, "lists one of its signs for each"),
        ({"columns": [8] + [0] * 29}, r"columns must be integers in 0..7"),
        ({"columns": [-1] + [0] * 29}, r"columns must be integers in 0..7"),
        ({"columns": [1.0] + [0] * 29}, r"columns must be integers in 0..7"),
        ({"columns": [True] + [0] * 29}, r"columns must be integers in 0..7"),
        ({"signs": [0] + [1] * 29}, "signs must each be the integer 1 or -1"),
        ({"signs": [2] + [1] * 29}, "signs must each be the integer 1 or -1"),
        ({"signs": [-1.0] + [1] * 29}, "signs must each be the integer 1 or -1"),
        ({"signs": [True] + [1] * 29}, "signs must each be the integer 1 or -1"),
        ({"seed": 3}, "public_state is its map")]


@pytest.mark.parametrize("change, msg", _BAD)
def test_a_shipped_map_is_checked_when_the_spec_is_read(change, msg):
    _, mech = _fitted()
    (step,) = mech.collection_.device_steps
    with pytest.raises(SpecError, match=msg):
        read_spec(_with_step(mech.collection_, _shipped(step, **change)).to_dict())
    for state in (None, [1, 2]):
        with pytest.raises(SpecError, match="public_state is its map"):
            read_spec(_with_step(mech.collection_, {**step, "public_state": state}).to_dict())
    no_map = {k: v for k, v in step.items() if k != "public_state"}
    with pytest.raises(SpecError, match=r"step \(FeatureHashing\) has the fields"):
        read_spec(_with_step(mech.collection_, no_map).to_dict())


def test_an_older_hashing_spec_is_read_but_not_answered():
    _, mech = _fitted()
    (step,) = mech.collection_.device_steps
    no_map = {k: v for k, v in step.items() if k != "public_state"}
    old = read_spec(_with_step(mech.collection_, no_map, version=4).to_dict())
    assert old.version == 4
    mechanism_from_spec(old)   # (the server decodes what older devices sent)
    with pytest.raises(SpecError, match=r"version 4\) has an on-device FeatureHashing step "
                                        "that does not ship its map.*ask the server for the "
                                        "spec in the current version"):
        Device("u").answer(old, np.zeros(30))
    with pytest.raises(SpecError, match=r"step \(FeatureHashing\) has the fields"):
        read_spec(_with_step(mech.collection_, step, version=4).to_dict())
    # specs without a hashing step keep version 4 (and their ids): devices of version 4
    # answer them as before
    grouper = device_step_spec(FeatureGrouper(2).fit(np.zeros((1, 8))), 8)
    spec = collection_spec(HDSMechanism(2.0, k=2, feature_range=(0, 1)), n_features=4)
    assert spec.version == 4
    assert dataclasses.replace(spec, device_steps=(grouper,), version=None).version == 4
    Device("u").answer(spec, np.zeros(4))


def test_the_server_refuses_a_map_its_feature_hashing_does_not_draw():
    _, mech = _fitted()
    spec = collection_spec(mech, simulation=True)
    (step,) = spec.device_steps
    signs = list(step["public_state"]["signs"])
    signs[4] = -signs[4]
    others = [_with_step(spec, _shipped(step, signs=signs)),
              _with_step(spec, {**step, "params": {**step["params"], "random_state": 4}})]
    for bad in others:
        # a device cannot tell (it never draws the map) and answers with the shipped one
        record = Device("u0").answer(read_spec(bad.to_json()), np.ones(30))
        # the server would read those reports as hashed with its own map: refused
        with pytest.raises(SpecError, match="ships another map than FeatureHashing"):
            read_reports([record], bad, users=["u0"])
        with pytest.raises(SpecError, match="ships another map"):
            mechanism_from_spec(bad)
    record = Device("u0").answer(spec, np.ones(30))
    assert len(read_reports([record], spec, users=["u0"])) == 1


def test_the_seed_identity_leaves_the_map_out():
    _, mech = _fitted()
    spec = mech.collection_
    (step,) = spec.device_steps
    assert "public_state" in step
    ident = spec.seed_identity()
    assert ident["device_steps"] == [{k: v for k, v in step.items() if k != "public_state"}]
    assert ident["version"] == 3 and mech.seed_ == collection_seed(0, ident)


def test_a_pipeline_fitted_before_specs_shipped_the_map_still_transforms():
    # a mechanism fitted by the code before version 5 holds a version 4 collection whose
    # hashing step has no map: the same request, so it transforms as before
    import dataclasses

    from sklearn.pipeline import make_pipeline

    from skldp import GraphData
    from skldp.mechanisms import FeatureHashing, HDSMechanism
    G = GraphData(np.random.default_rng(1).random((30, 12)))
    pipe = make_pipeline(FeatureHashing(6, random_state=3),
                         HDSMechanism(1.0, k=2, feature_range=(-1, 1), random_state=0)).fit(G)
    expected = pipe.transform(G).features
    mech = pipe[-1]
    old_steps = tuple({k: v for k, v in s.items() if k != "public_state"}
                      for s in mech.collection_.device_steps)
    mech.collection_ = dataclasses.replace(mech.collection_, version=4,
                                           device_steps=old_steps)
    np.testing.assert_array_equal(pipe.transform(G).features, expected)
    # a version 5 collection still compares its map
    with pytest.raises(ValueError, match="changed since it was fitted"):
        mech.collection_ = dataclasses.replace(mech.collection_, version=5)
        pipe.transform(G)
