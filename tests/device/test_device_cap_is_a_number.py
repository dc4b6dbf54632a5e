"""A device's cap, ``Device(max_epsilon=...)``, is a number, never text or a boolean.

Before, ``float`` read the cap: the text ``" 2_0 "`` (Python's digit separator) became a
cap of 20 where 2 was written, ``b"3"`` and ``"0.5"`` were read as numbers, and ``True``
as a cap of 1; a spec's numbers follow the stricter rule (text is no number).
"""

import numpy as np
import pytest

from skldp.device import Device


@pytest.mark.parametrize("cap", [" 2_0 ", "0.5", b"3", "inf", True, np.bool_(False), [1.0]])
def test_a_cap_that_is_no_number_is_refused(cap):
    with pytest.raises(TypeError, match="max_epsilon must be a number"):
        Device(user=1, max_epsilon=cap)


@pytest.mark.parametrize("cap", [0, 2, 0.5, np.float32(1.5), np.int64(3), np.inf])
def test_numbers_are_caps(cap):
    assert Device(user=1, max_epsilon=cap).max_epsilon == float(cap)


@pytest.mark.parametrize("cap", [-1.0, np.nan])
def test_a_negative_or_nan_cap_is_refused(cap):
    with pytest.raises(ValueError, match="max_epsilon must be a number >= 0"):
        Device(user=1, max_epsilon=cap)
