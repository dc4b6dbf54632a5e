"""A label given as a 0-d numpy array (``np.asarray(y[i])``) is one label, answered as the
scalar it holds; an array of labels is refused with a message that says what to pass."""

import numpy as np
import pytest

from skldp.device import Device, encode
from skldp.mechanisms import LabelRandomizedResponse
from skldp.population import collection_spec


@pytest.fixture(scope="module")
def spec():
    return collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))


@pytest.mark.parametrize("label", [2, np.int64(2), 2.0])
def test_a_zero_d_array_is_encoded_as_its_scalar(spec, label):
    for seed in range(20):
        assert encode(spec, np.array(label), seed=seed, key=7) == \
            encode(spec, label, seed=seed, key=7)


def test_a_zero_d_text_label_is_encoded_as_its_text():
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=["a", "b", "c"]))
    for seed in range(20):
        assert encode(spec, np.array("b"), seed=seed, key=7) == \
            encode(spec, "b", seed=seed, key=7)


def test_a_device_answers_about_a_zero_d_array(spec):
    record = Device(user=3).answer(spec, np.array(1))
    assert record["report"]["y"] in (0, 1, 2)


@pytest.mark.parametrize("labels", [np.array([2]), np.array([[2]]), [2]])
def test_an_array_of_labels_is_refused_saying_what_to_pass(spec, labels):
    with pytest.raises(TypeError, match=r"one label .*y\[i\]"):
        encode(spec, labels, seed=1, key=7)
    with pytest.raises(TypeError, match=r"one label .*y\[i\]"):
        Device(user=4).answer(spec, labels)
