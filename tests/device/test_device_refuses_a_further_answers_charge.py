"""A spec with ``further_answers`` is the ledger's charge of answers users sent beyond
their first: the docs say it is never sent to a device. A device's reader refuses it (a
relay that sends it would otherwise get a fresh answer to the collection's parameters under
another id), while the ledger's reader (``CollectionSpec.from_dict``) still reads it."""

import io
import json

import numpy as np
import pytest

from skldp.device import CollectionSpec, Device, SpecError, encode, read_spec
from skldp.mechanisms import HDSMechanism, LabelRandomizedResponse
from skldp.population import collection_spec, mechanism_from_spec
from skldp.population._population import further_answers_spec


@pytest.fixture(params=["labels", "features"])
def charge(request):
    if request.param == "labels":
        spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))
    else:
        spec = collection_spec(HDSMechanism(2.0, k=2, feature_range=(0, 1)), n_features=4)
    return spec, further_answers_spec(spec, 2)


def _data(spec):
    return 1 if "labels" in spec.protects else np.array([0.0, 1.0, 1.0, 0.0])


def test_a_device_refuses_a_charge_of_further_answers(charge):
    spec, again = charge
    assert again.further_answers == {"collection": spec.id, "count": 2}
    for source in (again, again.to_dict(), again.to_json(), io.StringIO(again.to_json())):
        with pytest.raises(SpecError, match="charge of further answers"):
            read_spec(source)
    with pytest.raises(SpecError, match="charge of further answers"):
        Device(user="u0", max_epsilon=100).answer(again, _data(spec))
    with pytest.raises(SpecError, match="charge of further answers"):
        encode(again.to_json(), _data(spec), seed=1, key=2)
    with pytest.raises(SpecError, match="charge of further answers"):
        mechanism_from_spec(again)
    # the collection itself is answered as before
    assert "report" in Device(user="u0", max_epsilon=100).answer(spec, _data(spec))


def test_the_ledger_still_reads_a_charge(charge):
    _, again = charge
    assert CollectionSpec.from_dict(json.loads(again.to_json()), check_kind=False) == again
    assert CollectionSpec.from_json(again.to_json()) == again
