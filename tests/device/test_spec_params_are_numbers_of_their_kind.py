"""read_spec refuses a parameter that is no number as a spec writes one: true, text such as
"2" or " 2_0 " (which float() read as 20), bounds, categories or bin edges given as text or
booleans. They were read as numbers (params.eps=true spent 1, " 2_0 " spent 20)."""

import hashlib
import json

import pytest

from skldp.device import SpecError, read_spec
from skldp.mechanisms import GRRFSMechanism, MultiBitMechanism
from skldp.population import collection_spec


def _with_id(d):
    body = {k: v for k, v in d.items() if k != "id"}
    text = json.dumps(body, sort_keys=True).encode()
    return dict(d, id=hashlib.blake2b(text, digest_size=8, person=b"skldp-spec-id").hexdigest())


def _edit(spec, section, **values):
    d = spec.to_dict()
    d[section].update(values)
    if "eps" in values and section == "params":   # the budget the parameter would spend
        d["epsilon"] = 20.0
    return _with_id(d)


@pytest.fixture(scope="module")
def multi_bit():
    return collection_spec(MultiBitMechanism(2.0, m=1, feature_range=(0, 1)), n_features=3)


@pytest.mark.parametrize("eps", [True, "2", " 2_0 ", "2.0"])
def test_eps_that_is_no_number_is_refused(multi_bit, eps):
    # numbers as specs write them are read: JSON numbers, and "inf" (refused as such)
    read_spec(_edit(multi_bit, "public_state", feature_min=[0, 0, 0], feature_max=[1, 2.5, 1]))
    with pytest.raises(SpecError, match="protects nothing"):
        read_spec(_edit(multi_bit, "params", eps="inf"))
    with pytest.raises(SpecError, match="parameter 'eps' must be a number"):
        read_spec(_edit(multi_bit, "params", eps=eps))


@pytest.mark.parametrize("name,value", [("feature_min", ["0", "0", "0"]),
                                        ("feature_max", [True, True, True]),
                                        ("feature_max", "111")])
def test_bounds_that_are_no_numbers_are_refused(multi_bit, name, value):
    with pytest.raises(SpecError, match="arrays of numbers|finite"):
        read_spec(_edit(multi_bit, "public_state", **{name: value}))


def test_grrfs_categories_and_edges_that_are_no_numbers_are_refused():
    spec = collection_spec(GRRFSMechanism(1.0, domain_sizes=[3], bin_edges=[[0.2, 0.5]]),
                           n_features=1)
    read_spec(spec.to_dict())
    for bad in (["0.2", "0.5"], [False, True]):
        with pytest.raises(SpecError, match="bin_edges"):
            read_spec(_edit(spec, "params", bin_edges=[bad]))
    cats = collection_spec(GRRFSMechanism(1.0, categories=[[0, 1]]),
                           n_features=1)
    read_spec(cats.to_dict())
    with pytest.raises(SpecError, match="categories"):
        read_spec(_edit(cats, "params", categories=[[False, True]]))


@pytest.mark.parametrize("epsilon", ["2", " 2_0 ", "1e1"])
def test_the_spec_epsilon_given_as_other_text_is_refused(multi_bit, epsilon):
    # the spec writes only "inf", "-inf" and "nan" as text; " 2_0 " was read as 20
    d = multi_bit.to_dict()
    d["epsilon"] = epsilon
    with pytest.raises(SpecError, match="'epsilon' must be a number"):
        read_spec(_with_id(d))


def test_numpy_numbers_of_a_spec_given_as_a_dict_are_numbers():
    # a dict built in Python may hold numpy scalars: np.float32 and np.int64 were refused
    import numpy as np

    from skldp.device._errors import spec_number
    assert spec_number(np.float32(1.5)) == 1.5 and spec_number(np.int64(3)) == 3.0
    assert spec_number(np.bool_(True)) is None and spec_number(True) is None
