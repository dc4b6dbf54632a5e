"""The smallest reachable epsilon that a refused calibration states is never below
the true one: the target it advises is reachable."""

import re

import pytest

from skldp.accounting import calibrate_noise_multiplier, compute_epsilon
from skldp.exceptions import PrivacyBudgetError


def test_the_advised_target_is_reachable():
    # even z = 1e4 gives 0.00090210924 here; the message said "epsilon=0.0009021" and
    # "a target_epsilon >= 0.0009021", which calibrate_noise_multiplier refused again
    setting = (1e-5, 1000, 100, 2, 500)
    with pytest.raises(PrivacyBudgetError) as info:
        calibrate_noise_multiplier(1e-4, *setting)
    floor = compute_epsilon(1e4, 1000, 100, 2, 500, 1e-5)
    stated = float(re.search(r"gives epsilon=([0-9.e+-]+?)\. ", str(info.value)).group(1))
    advised = float(re.search(r"target_epsilon >= ([0-9.e+-]+?)\.$",
                              str(info.value)).group(1))
    assert stated >= floor and advised >= floor
    z = calibrate_noise_multiplier(advised, *setting)
    assert compute_epsilon(z, 1000, 100, 2, 500, 1e-5) <= advised
