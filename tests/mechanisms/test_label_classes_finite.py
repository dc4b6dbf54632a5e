"""A label domain holding infinity is refused at fit, as one holding NaN.

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
    rr = LabelRandomizedResponse(1.0, classes=[0.5, 1e308], random_state=0).fit()
    assert rr.classes_.tolist() == [0.5, 1e308]
