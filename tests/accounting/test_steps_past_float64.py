"""A step count past float64 (an int over ~1.8e308) gives an infinite epsilon, not an error."""

import math

import numpy as np
import pytest

from skldp.accounting import (
    calibrate_noise_multiplier,
    compute_dpsgd_epsilon,
    compute_epsilon,
    dpgnn_rdp,
)
from skldp.exceptions import PrivacyBudgetError


def test_dpgnn_accountant_takes_steps_past_float64():
    # T * per_step raised OverflowError: int too large to convert to float
    assert np.all(np.isinf(dpgnn_rdp(1.0, 1000, 100, 5, 10**400)))
    assert math.isinf(compute_epsilon(1.0, 1000, 100, 5, 10**400, 1e-5))
    assert compute_epsilon(1.0, 1000, 100, 5, 10**6, 1e-5) < math.inf   # unchanged


def test_dpsgd_accountant_takes_steps_past_float64():
    pytest.importorskip("dp_accounting")
    assert math.isinf(compute_dpsgd_epsilon(1.0, 1000, 100, 10**400, 1e-5))


def test_calibration_with_steps_past_float64_says_what_reaches_the_target():
    with pytest.raises(PrivacyBudgetError) as info:
        calibrate_noise_multiplier(1.0, 1e-5, 1000, 100, 5, 10**400)
    msg = str(info.value)
    assert "steps=1.000e+400" in msg and "Use at most steps=" in msg
    assert "target_epsilon >= inf" not in msg        # no target reaches it
