"""A device asked again about the same neighbours, in another order or with repeats, resends
its answer silently: the same set is the same data (no AlreadyAnswered warning)."""

import warnings

import numpy as np
import pytest

from skldp.device import AlreadyAnswered, Device
from skldp.mechanisms import EdgeRR
from skldp.population import collection_spec

IDS = list(range(6))


def test_the_same_neighbours_in_another_order_are_the_same_data():
    spec = collection_spec(EdgeRR(1.0), node_ids=np.asarray(IDS))
    device = Device(0)
    first = device.answer(spec, [1, 2, 5], directory=IDS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert device.answer(spec, [5, 2, 1, 2], directory=IDS) == first
    with pytest.warns(AlreadyAnswered):
        assert device.answer(spec, [1, 2], directory=IDS) == first
