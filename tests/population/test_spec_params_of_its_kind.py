"""A spec whose parameters are not those of its mechanism is refused by the server with a
``SpecError`` that names them.

Before, :func:`~skldp.population.mechanism_from_spec` (and ``received_graph``, which decodes
through it) failed with Python's ``TypeError: __init__() got an unexpected keyword argument``
for a parameter the mechanism does not take, and built a mechanism from a parameter of the
wrong type (``feature_range="x"``) without a word.
"""

import dataclasses

import numpy as np
import pytest

from skldp.device import Device, SpecError
from skldp.mechanisms import LabelRandomizedResponse, MultiBitMechanism
from skldp.population import collection_spec, mechanism_from_spec, read_reports


def _with_params(spec, **params):
    return dataclasses.replace(spec, params={**spec.params, **params}).with_nonce(spec.nonce)


SPEC = collection_spec(MultiBitMechanism(1.0, m=2, feature_range=(0, 1)), n_features=4)


@pytest.mark.parametrize("extra", [{"zzz": 1}, {"random_state": 3}])
def test_a_parameter_the_mechanism_does_not_take(extra):
    bad = _with_params(SPEC, **extra)
    name = next(iter(extra))
    with pytest.raises(SpecError, match=f"MultiBitMechanism takes no parameter.*'{name}'"):
        mechanism_from_spec(bad)
    with pytest.raises(SpecError, match=f"MultiBitMechanism takes no parameter.*'{name}'"):
        mechanism_from_spec(bad, fitted=False)
    records = [Device(user=i).answer(bad, np.full(4, 0.5)) for i in range(3)]
    with pytest.raises(SpecError, match="takes no parameter"):
        read_reports(records, bad, users=[0, 1, 2])


def test_a_parameter_of_the_wrong_type():
    with pytest.raises(SpecError, match="feature_range"):
        mechanism_from_spec(_with_params(SPEC, feature_range="x"))


def test_the_server_specs_are_read():
    assert mechanism_from_spec(SPEC).m_ == 2
    label = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))
    assert mechanism_from_spec(label).classes_.tolist() == [0, 1, 2]
