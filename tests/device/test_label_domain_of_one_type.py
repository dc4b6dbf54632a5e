"""A label domain that mixes text and numbers (``[0, "a"]``) is refused: NumPy would make it
all text, the spec would publish ``["0", "a"]``, and a device holding the number 0 would find
its label outside the domain and send a random class (only the device would warn)."""

import dataclasses

import numpy as np
import pytest

from skldp import GraphData
from skldp.device import SpecError, read_spec
from skldp.mechanisms import LabelRandomizedResponse
from skldp.population import collection_spec


@pytest.mark.parametrize("classes", [[0, "a"], ["a", 1, 2], np.array([0, "a"], dtype=object)])
def test_mixed_classes_are_refused_at_fit(classes):
    with pytest.raises(ValueError, match="mixes text and other values"):
        collection_spec(LabelRandomizedResponse(20.0, classes=classes))


@pytest.mark.parametrize("classes", [[0, 1, 2], ["0", "a"], [True, False]])
def test_classes_of_one_type_are_published_as_given(classes):
    spec = collection_spec(LabelRandomizedResponse(2.0, classes=classes))
    assert sorted(spec.public_state["classes"]) == sorted(classes)


def test_mixed_labels_are_refused_when_the_domain_is_read_from_them():
    with pytest.raises(ValueError, match="y mixes text and other values"):
        LabelRandomizedResponse(1.0).fit(GraphData(np.zeros((4, 1))), [0, "a", 0, "a"])


def test_a_device_refuses_a_spec_whose_classes_mix_types():
    spec = collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1]))
    mixed = dataclasses.replace(spec, public_state={"classes": [0, "a"]}).with_nonce(spec.nonce)
    with pytest.raises(SpecError, match="mixes strings and other values"):
        read_spec(mixed.to_json())
