"""The on-device steps compute what the server's steps compute: FeatureHashing's hashed row
clipped to [-clip, clip] (also where the mechanism's bounds are wider), and
FeatureGrouper's groups."""

import hashlib
import json

import numpy as np

from skldp.device import read_spec
from skldp.device._spec import spec_version
from skldp.device._steps import device_steps
from skldp.mechanisms import FeatureGrouper, FeatureHashing, OneBitMechanism
from skldp.population import collection_spec
from skldp.population._spec import device_step_spec


def _with_steps(spec, steps):
    d = spec.to_dict()
    d["device_steps"] = steps
    d["version"] = spec_version(steps)
    body = {k: v for k, v in d.items() if k != "id"}
    text = json.dumps(body, sort_keys=True).encode()
    d["id"] = hashlib.blake2b(text, digest_size=8, person=b"skldp-spec-id").hexdigest()
    return read_spec(d)


def _rows():
    rng = np.random.default_rng(0)
    return rng.integers(0, 4, size=(5, 12)).astype(float)   # sums of several columns > clip


def test_hashing_on_the_device_is_clipped_as_on_the_server():
    mech = collection_spec(OneBitMechanism(1.0, feature_range=(-3, 3)), n_features=4)
    step = device_step_spec(FeatureHashing(4, clip=0.5, random_state=7).fit(np.zeros((1, 12))),
                            12)
    X = _rows()
    got = device_steps(_with_steps(mech, [step]), X)
    want = np.asarray(FeatureHashing(4, clip=0.5, random_state=7).fit_transform(X))
    np.testing.assert_array_equal(got, want)
    assert np.abs(got).max() == 0.5


def test_grouping_on_the_device_is_the_servers():
    mech = collection_spec(OneBitMechanism(1.0, feature_range=(0, 1)), n_features=3)
    step = {"kind": "skldp.mechanisms.FeatureGrouper", "params": {"group_size": 5},
            "n_features_in": 12}
    X = _rows()
    X[:, 5:10] = 0            # the middle group empty
    got = device_steps(_with_steps(mech, [step]), X)
    want = np.asarray(FeatureGrouper(5).fit_transform(X))
    np.testing.assert_array_equal(got, want)
    assert got.shape == (5, 3) and not got[:, 1].any()
