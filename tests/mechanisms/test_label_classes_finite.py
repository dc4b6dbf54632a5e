"""A label domain holding infinity, or values no label array can hold, is refused at fit.

Before, ``classes=[0, inf]`` was fitted: no label can be that class (a label array
holding inf is refused), and the spec wrote it as the text ``"inf"`` beside the number 0,
a domain the devices refuse ("mixes strings and other values").
"""

import numpy as np
import pytest

from skldp.mechanisms import LabelRandomizedResponse
from skldp.population import collection_spec


@pytest.mark.parametrize("classes", [[0.0, np.inf], np.array([1.0, 2.0, np.inf]),
                                     [0.0, np.nan]])
def test_classes_must_be_finite(classes):
    with pytest.raises(ValueError, match="classes must not contain NaN or infinity"):
        LabelRandomizedResponse(1.0, classes=classes, random_state=0).fit()
    with pytest.raises(ValueError, match="classes must not contain NaN or infinity"):
        collection_spec(LabelRandomizedResponse(1.0, classes=classes))


def test_finite_float_classes_are_a_domain():
    rr = LabelRandomizedResponse(1.0, classes=[1.0, 2.0 ** 40], random_state=0).fit()
    assert rr.classes_.tolist() == [1.0, 2.0 ** 40]


@pytest.mark.parametrize("classes", [[0.5, 1.5], [0, 1, 2.5], [0, 2**70]])
def test_classes_no_label_array_can_hold_are_refused(classes):
    # labels of such a domain are refused by every label check (scikit-learn reads
    # [0.5, 1.5] as continuous values, [0, 2**70] as an unknown type): randomize, encode and
    # estimate_frequencies could never run, where fit accepted the domain
    with pytest.raises(ValueError, match="classes must be class labels"):
        LabelRandomizedResponse(1.0, classes=classes, random_state=0).fit()


@pytest.mark.parametrize("classes", [[0.0, 1.0, 2.0], [True, False], ["a", "b"], [3, 7]])
def test_classes_of_labels_are_a_domain(classes):
    from skldp import GraphData
    rr = LabelRandomizedResponse(1.0, classes=classes, random_state=0).fit()
    y = np.asarray(classes)[[0, 1, 1, 0]]
    assert set(rr.randomize(y, GraphData(np.zeros((4, 1)))).tolist()) <= set(rr.classes_.tolist())
