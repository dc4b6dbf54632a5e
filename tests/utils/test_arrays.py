"""Tests of the array helpers: labels' unique values, the finite check of tensors, and
the range check of arrays."""

import numpy as np
import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from skldp.utils import _arrays
from skldp.utils._arrays import (
    check_finite_features,
    distinct,
    member,
    torch_blocks_sum,
    unique_inverse,
    within_bounds,
)


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


@pytest.mark.parametrize("a", [
    np.random.default_rng(0).integers(0, 2**63, 10_000, dtype=np.int64).astype(np.uint64),
    np.random.default_rng(1).integers(-5, 5, (30, 4)),   # flattened, as np.unique does
    np.array([True, False, True]),
    np.array([], dtype=np.uint64),
    np.array([2.0, np.nan, 1.0, np.nan]),                 # one nan, as np.unique
    np.array(["b", "a", "b"]),
])
def test_distinct_is_numpys_unique(a):
    got, want = distinct(a), np.unique(a)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


_rng = np.random.default_rng(2)
_WIDE = _rng.integers(0, 2**63, 5_000, dtype=np.int64).astype(np.uint64)   # hashed keys


@pytest.mark.parametrize("x, ref", [
    (_WIDE, _rng.choice(_WIDE, 2_000)),                           # unsorted, repeats in ref
    (np.sort(_WIDE), np.r_[_WIDE[:100], _WIDE[:100] + 1]),        # sorted; absent neighbours
    (np.r_[_WIDE[:50], _WIDE[:50]], _WIDE[25:75]),                # repeats in x
    (np.array([0, 2**64 - 1], dtype=np.uint64),
     np.array([2**64 - 1, 2**63], dtype=np.uint64)),              # extremes of uint64
    (np.array([-2**62, 3, 2**62]), np.array([2**62, -7])),        # int64, negative
    (np.arange(100, dtype=np.uint64), np.arange(0, 100, 3, dtype=np.uint64)),   # table
    (_WIDE, _WIDE.astype(np.int64)),                               # mixed dtypes: numpy's
    (_WIDE[:0], _WIDE), (_WIDE, _WIDE[:0]),
    (np.array([1.5, 2.0]), np.array([2.0])),
])
@pytest.mark.parametrize("cached", [1 << 17, 16])   # 16: probes in sorted order
def test_member_is_numpys_isin(x, ref, cached, monkeypatch):
    monkeypatch.setattr(_arrays, "_CACHED", cached)
    got = member(x, ref)
    assert got.dtype == bool and got.shape == x.shape
    np.testing.assert_array_equal(got, np.isin(x, ref))
    if len(ref) and x.dtype.kind == "u":   # positions too, in a sorter's order
        shuffled = np.random.default_rng(0).permutation(ref)
        pos, found = _arrays.sorted_lookup(shuffled, x, sorter=np.argsort(shuffled))
        np.testing.assert_array_equal(found, np.isin(x, ref))
        np.testing.assert_array_equal(shuffled[pos[found]], x[found])


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


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "unsorted_csr"])
def test_finite_check_of_a_sparse_matrix_names_the_first_bad_entry_without_a_dense_copy(fmt):
    # the error path made a dense copy of the whole matrix to find the entry: at 1M
    # users' bag-of-words a MemoryError, and no refusal charged (not a ValueError)
    import tracemalloc

    import scipy.sparse as sp
    n, d = 4000, 2500   # dense: 80 MB of float64
    rows = np.array([3999, 2000, 2000, 17, 0])
    cols = np.array([0, 900, 12, 2499, 5])
    vals = np.array([np.nan, np.inf, -np.inf, 2.0, 1.0])
    X = sp.coo_matrix((vals, (rows, cols)), shape=(n, d))
    if fmt == "unsorted_csr":
        X = X.tocsr()
        X.indices[X.indptr[2000]:X.indptr[2001]] = [900, 12]   # the row's entries swapped
        X.data[X.indptr[2000]:X.indptr[2001]] = [np.inf, -np.inf]
        X.has_sorted_indices = False
    else:
        X = X.asformat(fmt)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"first at row 2000, column 12\). That one is "
                                             r"infinite"):
            check_finite_features(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1e6


def _largest_allocation(fn):
    """Bytes of the largest single allocation ``fn`` makes (the profiler sees the
    temporaries inside an operator, as a reduction's cast of its whole input)."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    return max(e.self_cpu_memory_usage for e in prof.events())


def test_tensor_reductions_go_by_blocks_without_a_float64_copy(monkeypatch):
    # torch casts a whole input to a reduction's dtype: a float32 tensor summed in
    # float64 at once makes a copy twice its size (10 GB beside 10M users' features)
    monkeypatch.setattr(_arrays, "_TORCH_BLOCK", 1000)
    T = torch.rand(997, 40, dtype=torch.float32)
    whole = _largest_allocation(lambda: T.sum(dtype=torch.float64))
    assert whole == 2 * T.numel() * 4   # (what the blocks avoid)
    assert _largest_allocation(lambda: check_finite_features(T)) <= 1000 * 8
    square = lambda b: b.double().square().sum()   # noqa: E731
    assert _largest_allocation(lambda: torch_blocks_sum(T, square)) <= 1000 * 8
    np.testing.assert_allclose(float(torch_blocks_sum(T, square)),
                               float((T.double() ** 2).sum()), rtol=1e-12)
    # a bad entry in a later block is named by its row in the whole tensor
    T[613, 7] = float("nan")
    with pytest.raises(ValueError, match=r"first at row 613, column 7"):
        check_finite_features(T)
    T[613, 7] = 0
    T[:, 0] = 3e38   # finite entries whose float32 sum would overflow
    assert check_finite_features(T) is T


@pytest.mark.parametrize("torch_loaded", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_within_bounds_reads_every_entry_and_refuses_nan_and_inf(torch_loaded, dtype,
                                                                  monkeypatch):
    """One pass over the extremes (torch's when loaded, numpy's else) when the bounds are
    alike, one per column otherwise: the same answers."""
    import sys
    if not torch_loaded:
        monkeypatch.delitem(sys.modules, "torch")
    X = np.random.default_rng(0).uniform(0.2, 0.8, (50, 6)).astype(dtype)
    same_lo, same_hi = np.zeros(6), np.ones(6)
    assert within_bounds(X, same_lo, same_hi)
    assert within_bounds(X[:0], same_lo, same_hi)
    X.flags.writeable = False             # a read-only input is read, without a warning
    assert within_bounds(X[:, ::2], same_lo[:3], same_hi[:3])   # not contiguous
    assert not within_bounds(np.asfortranarray(X), same_lo, np.full(6, 0.5))
    per_lo, per_hi = np.zeros(6), np.full(6, 0.5)   # one column's bound differs
    per_hi[1:] = 1.0
    assert within_bounds(X, per_lo, per_hi) == bool(X[:, 0].max() <= 0.5) is False
    assert within_bounds(np.where(np.arange(6) == 0, 0.4, X), per_lo, per_hi)
    for bad, where in [(np.nan, (3, 4)), (np.inf, (0, 0)), (-np.inf, (49, 5)), (1.5, (9, 1)),
                       (-0.1, (2, 2))]:
        Y = X.copy()
        Y[where] = bad
        assert not within_bounds(Y, same_lo, same_hi)
        assert not within_bounds(Y, per_lo, np.maximum(per_hi, 1.0))
        if np.isinf(bad):   # infinite bounds do not let inf through
            assert not within_bounds(Y, np.full(6, -np.inf), np.full(6, np.inf))
    if not torch_loaded:
        assert "torch" not in sys.modules   # not imported for the check


@pytest.mark.parametrize("cached", [1 << 17, 2])   # 2: probes in sorted order
@pytest.mark.parametrize("ref", [np.array([1, 3, 5]), np.array([], dtype=np.int64)])
def test_sorted_lookup_finds_what_isin_finds(ref, cached, monkeypatch):
    monkeypatch.setattr(_arrays, "_CACHED", cached)
    x = np.array([0, 1, 3, 4, 5, 9])
    pos, found = _arrays.sorted_lookup(ref, x)
    np.testing.assert_array_equal(found, np.isin(x, ref))
    np.testing.assert_array_equal(ref[pos[found]], x[found])
    shuffled = ref[::-1].copy()   # unsorted, with its sorter: positions in it
    pos, found = _arrays.sorted_lookup(shuffled, x, sorter=np.argsort(shuffled))
    np.testing.assert_array_equal(found, np.isin(x, ref))
    np.testing.assert_array_equal(shuffled[pos[found]], x[found])
    # one value (0-d) gives 0-d answers
    pos, found = _arrays.sorted_lookup(ref, np.int64(5))
    assert found == (5 in ref.tolist()) and (not found or ref[pos] == 5)


@pytest.mark.parametrize("kind", ["dense", "sparse", "tensor"])
def test_check_finite_output_says_the_sums_overflowed(kind):
    import scipy.sparse as sp

    from skldp.utils._arrays import check_finite_output
    Z = np.array([[1.0, 2.0], [3e38, 3e38]], dtype=np.float32)
    make = {"dense": np.asarray, "sparse": sp.csr_matrix, "tensor": torch.from_numpy}[kind]
    assert check_finite_output(make(Z), "KProp") is not None   # finite, though its sum is not
    Z[1] *= 2   # inf
    with pytest.raises(ValueError, match=r"KProp's output holds NaN or infinite values "
                       r"although its input features are finite: its sums over neighbours "
                       r"overflowed float32.*Scale the features"):
        check_finite_output(make(Z), "KProp")
