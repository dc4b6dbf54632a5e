import numpy as np
import pytest

from skldp.utils._blocks import aligned_empty, column_block, put_column_block, row_blocks


def test_row_blocks_cover_the_rows_within_the_budget():
    blocks = list(row_blocks(10, 3, 7))
    assert [(b.start, b.stop) for b in blocks] == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("order", ["C", "F"])
def test_column_blocks_copy_out_and_back_exactly(dtype, order):
    rng = np.random.default_rng(0)
    X = np.asarray(rng.normal(size=(37, 70)) * 100, dtype=dtype, order=order)
    X.setflags(write=False)        # a caller's read-only features
    out = np.zeros((37, 70), dtype=dtype)
    for s in range(0, 70, 32):     # the last block is narrower (6 columns)
        Z = column_block(X, s, 32)
        assert Z.flags.c_contiguous and Z.dtype == dtype
        np.testing.assert_array_equal(Z, X[:, s:s + 32])
        put_column_block(out, s, Z * 2)
    np.testing.assert_array_equal(out, X * 2)
    # other blocks: a dtype to cast, a strided block, nothing at all
    put_column_block(out, 1, np.ones((37, 3), dtype=np.float16))
    put_column_block(out, 5, np.full((37, 8), 7, dtype=dtype)[:, ::2])
    put_column_block(out, 69, np.empty((37, 0), dtype=dtype))
    assert (out[:, 1:4] == 1).all() and (out[:, 5:9] == 7).all()
    np.testing.assert_array_equal(out[:, 9:], X[:, 9:] * 2)
    assert column_block(X, 70, 32).shape == (37, 0)
    assert column_block(X[::2], 3, 5).shape == (19, 5)


def test_column_blocks_of_rows_in_a_given_order():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 40)).astype(np.float32)
    perm = rng.permutation(30)
    out = np.zeros_like(X)
    for s in range(0, 40, 16):
        Z = column_block(X, s, 16, perm)
        np.testing.assert_array_equal(Z, X[perm, s:s + 16])
        put_column_block(out, s, Z, perm)
    np.testing.assert_array_equal(out, X)
    put_column_block(out, 0, np.asfortranarray(X[:, :5] + 1), perm)   # the plain path
    np.testing.assert_array_equal(out[perm, :5], X[:, :5] + 1)


@pytest.mark.parametrize("shape", [(0, 3), (5, 7), (3, 1), (3000, 512)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_aligned_empty_starts_on_a_cache_line(shape, dtype):
    # numpy's own large arrays start 16 bytes past a 64-byte boundary
    arrays = [aligned_empty(shape, dtype) for _ in range(4)]
    for a in arrays:
        assert a.shape == shape and a.dtype == dtype
        assert a.flags.c_contiguous and a.flags.writeable
        assert a.ctypes.data % 64 == 0 or a.size == 0   # (no data to align)
        a[...] = 1   # every byte is its own
    assert all(np.all(a == 1) for a in arrays)


def test_aligned_empty_refuses_negative_or_overflowing_shapes():
    with pytest.raises(ValueError, match="negative dimensions"):
        aligned_empty((-1, 5), np.float32)
    # 2^62 * 4 bytes wraps to 0 in a fixed-width product: a 0-byte buffer for the shape
    with pytest.raises(ValueError, match="too large"):
        aligned_empty((2**62, 4), np.uint8)
    assert aligned_empty(3, np.float64).shape == (3,)   # an int shape, as np.empty
