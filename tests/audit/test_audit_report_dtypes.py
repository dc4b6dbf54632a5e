"""Reports the audit cannot read as float64 without losing what they say are refused."""

import numpy as np
import pytest

from skldp.audit import additive_support_check, audit_mechanism, audit_pair

_RNG = np.random.default_rng(0)
A, B = _RNG.random(2000) < 0.9, _RNG.random(2000) < 0.1      # a bit, true loss ln 9


def test_complex_reports_are_refused():
    # the float64 cast kept the real part: a leak in the imaginary part bounded eps by 0
    with pytest.raises(ValueError, match="complex"):
        audit_pair(1j * A, 1j * B)
    with pytest.raises(ValueError, match="complex"):
        additive_support_check(np.array([1.0 + 1e-3j]), 0.0, 1.0)

    def rotated(X, keys):
        return 1j * X[:, 0]
    rotated.epsilon_ = 1.0
    with pytest.raises(ValueError, match="mechanism 0:rotated are complex"):
        audit_mechanism(rotated, [0.0], [1.0], n_samples=100)


def test_integer_codes_that_merge_as_floats_are_refused():
    big = np.uint64(2**60)
    with pytest.raises(ValueError, match="equal as float64"):
        audit_pair(big + A.astype(np.uint64), big + B.astype(np.uint64))
    with pytest.raises(ValueError, match="equal as float64"):
        audit_pair(np.int64(-2**60) - A, np.int64(-2**60) - B)
    # codes that stay distinct are audited as before
    far = audit_pair(big + (A.astype(np.uint64) << np.uint64(10)),
                     big + (B.astype(np.uint64) << np.uint64(10)))
    assert far.epsilon_lower == audit_pair(A * 1.0, B * 1.0).epsilon_lower > 1.8



def test_integer_codes_that_merge_only_across_the_two_inputs_are_refused():
    # x0 always reports 2^53, x1 always 2^53 + 1: each array alone is fine, but as float64
    # they are one value (the bound was 0 for an infinite loss)
    top = np.full(len(A), 2**53, dtype=np.int64)
    with pytest.raises(ValueError, match="reports_0 and reports_1 .* equal as float64"):
        audit_pair(top, top + 1)
    with pytest.raises(ValueError, match="equal as float64"):   # across dtypes too
        audit_pair(top + 1, top.astype(np.float64))
    even = audit_pair(top + 2 * A, top.astype(np.uint64) + 2 * B.astype(np.uint64))
    assert even.epsilon_lower == audit_pair(A * 1.0, B * 1.0).epsilon_lower > 1.8

@pytest.mark.parametrize("bad", ["0.5", None, True])
def test_selection_fraction_must_be_a_number(bad):
    with pytest.raises(ValueError, match="selection_fraction must be a number in"):
        audit_pair(A * 1.0, B * 1.0, events="cells", selection_fraction=bad)
