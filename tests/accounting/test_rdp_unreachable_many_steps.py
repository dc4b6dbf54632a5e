"""A refused calibration with a huge number of steps answers fast, in a short message."""

import re

import pytest

from skldp.accounting import _rdp, calibrate_noise_multiplier, compute_epsilon
from skldp.exceptions import PrivacyBudgetError


def test_the_largest_reachable_step_count_takes_few_evaluations():
    # the steps that reach the target were bisected over [0, T]: log2(T) evaluations,
    # about 1000 for steps=10**301 (48 s with Theorem 1's accountant)
    calls = []

    def eps_of(z, t):
        calls.append(t)
        return t / z

    T = 10**301
    with pytest.raises(PrivacyBudgetError) as info:
        _rdp._bisect_noise_multiplier(eps_of, 1.0, T, 1e-4, setting="s", advice="a")
    assert len(calls) < 80
    msg = str(info.value)
    assert "Use at most steps=10000, a" in msg        # eps_of(1e4, t) = t / 1e4 <= 1
    assert "steps=1.000e+301 (s)" in msg and len(msg) < 300


def test_a_huge_step_count_is_printed_short_and_the_advice_holds():
    with pytest.raises(PrivacyBudgetError) as info:
        calibrate_noise_multiplier(1.0, 1e-5, 1000, 100, 5, 10**301)
    msg = str(info.value)
    assert "unreachable with steps=1.000e+301 (n_train=1000" in msg and len(msg) < 400
    t_ok = int(re.search(r"Use at most steps=(\d+),", msg).group(1))
    assert compute_epsilon(1e4, 1000, 100, 5, t_ok, 1e-5) <= 1.0
    assert compute_epsilon(1e4, 1000, 100, 5, t_ok + 1, 1e-5) > 1.0
