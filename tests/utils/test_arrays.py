"""Tests of the array helpers: labels' unique values, and the finite check of tensors."""

import numpy as np
import pytest
import torch

from skldp.utils._arrays import check_finite_features, unique_inverse


@pytest.mark.parametrize("y", [
    np.random.default_rng(0).integers(0, 40, 10_000),
    np.arange(-128, 128, dtype=np.int8)[::-1],      # offsets past int8's range
    np.array([2**64 - 1, 2**64 - 3, 2**64 - 1], dtype=np.uint64),
    np.array([7, 3, 3, 3 + 2**16], dtype=np.int64),  # too wide a range: sorted
    np.array([2**40, 5]),
    np.array(["b", "a", "b"]),
    np.array([1.5, 0.5, 1.5]),
    np.array([3], dtype=np.uint8),
    np.array([], dtype=np.int64),
])
def test_unique_inverse_is_numpys(y):
    classes, inverse = unique_inverse(y)
    want_classes, want_inverse = np.unique(y, return_inverse=True)
    assert classes.dtype == want_classes.dtype and inverse.dtype == want_inverse.dtype
    np.testing.assert_array_equal(classes, want_classes)
    np.testing.assert_array_equal(inverse, want_inverse)


def test_finite_check_of_a_tensor_names_the_first_bad_entry():
    T = torch.ones(5, 4)
    assert check_finite_features(T) is T
    T[3, 1] = float("-inf")
    T[4, 0] = float("nan")
    with pytest.raises(ValueError, match=r"first at row 3, column 1"):
        check_finite_features(T)
    # finite values whose sum overflows float32 are finite
    big = torch.full((4, 2), 3e38)
    assert check_finite_features(big) is big
