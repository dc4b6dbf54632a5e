"""A device refuses a label domain whose numbers are no class labels (``[0.5, 1.5]``, a float
that is not an integer, an integer beyond int64), as the server's LabelRandomizedResponse
does at fit: before, a device answered such a spec, spending its user's budget on a report
whose label the server can never use (every label check refuses the domain)."""

import dataclasses

import pytest

from skldp.device import Device, SpecError, read_spec
from skldp.mechanisms import LabelRandomizedResponse
from skldp.population import collection_spec

REFUSED = [[0.5, 1.5], [0, 1, 2.5], [0, 1e-300], [0, 2**70], [0, 2**64 - 1], [0, 2.0**63],
           [0, 1e308], [1.0, 2**63 - 1]]
READ = [[0, 1.0, 2], [0.0, 1.0], [0, 2**63 - 1], [0, 2.0**62], [True, False], [3, 7],
        ["a", "b"], [0, 2**53 + 1]]


def _spec(classes):
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))
    return dataclasses.replace(spec, public_state={"classes": classes}).with_nonce(spec.nonce)


def _server_takes(classes):
    try:
        LabelRandomizedResponse(1.0, classes=classes, random_state=0).fit()
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("classes", REFUSED)
def test_a_device_refuses_numbers_that_are_no_class_labels(classes):
    assert not _server_takes(classes)
    spec = _spec(classes)
    with pytest.raises(SpecError, match="must be an integer below 2\\*\\*63"):
        read_spec(spec.to_json())
    with pytest.raises(SpecError, match="must be an integer below 2\\*\\*63"):
        Device(user="u0", max_epsilon=10).answer(spec, 0)


@pytest.mark.parametrize("classes", READ)
def test_a_device_reads_the_domains_the_server_takes(classes):
    assert _server_takes(classes)
    spec = read_spec(_spec(classes).to_json())
    assert spec.public_state["classes"] == classes
    rec = Device(user="u0", max_epsilon=10).answer(spec, classes[0])
    assert 0 <= rec["report"]["y"] < len(classes)
