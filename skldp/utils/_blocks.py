"""Blocks of a dense ``n x d`` array: row blocks (bounded temporaries without a loop
over nodes) and column blocks copied in and out."""

import math
import operator

import numpy as np

__all__ = ["row_blocks", "column_block", "put_column_block", "aligned_empty"]


def row_blocks(n, d, entries):
    """Slices of consecutive whole rows, each of at most ``entries`` entries (at least one row).

    Parameters
    ----------
    n, d : int
        Rows and columns of the array.
    entries : int
        Budget of entries (``rows x d``) per block.

    Yields
    ------
    slice
    """
    step = max(1, entries // max(d, 1))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def aligned_empty(shape, dtype):
    """``np.empty(shape, dtype)`` whose data start on a 64-byte boundary (a cache line).

    numpy's large arrays start 16 bytes past one, so a row of 32 float32 columns of a
    block spans three lines instead of two: torch's embedding bag reads such blocks
    about 10 % slower, and a column block written into a wide output takes about twice
    as long (Facebook, 32 of 1,024 columns).
    """
    dtype = np.dtype(dtype)
    shape = tuple(map(operator.index, (shape,) if np.ndim(shape) == 0 else shape))
    if any(n < 0 for n in shape):
        raise ValueError(f"aligned_empty: negative dimensions are not allowed, got {shape}.")
    # exact in Python ints: np.prod wraps around (int32 on some platforms), giving a
    # buffer too small for the shape
    size = math.prod(shape) * dtype.itemsize
    if size > np.iinfo(np.intp).max - 64:
        raise ValueError(f"aligned_empty: shape {shape} of {dtype} is too large "
                         f"({size} bytes).")
    raw = np.empty(size + 64, dtype=np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start:start + size].view(dtype).reshape(shape)


def _rows_as_elements(B):
    """``B`` (2-D, each row's entries contiguous) viewed as one void element per row.

    numpy copies a strided block in a loop over each row's few entries; as one
    element per row the copy moves a row segment at a time (32 float32 columns of
    Facebook's features: about 1.6x faster, in and out).
    """
    return B.view(np.dtype((np.void, B.shape[1] * B.itemsize)))


def column_block(X, start, width, rows=None):
    """``X[rows, start:start + width]`` as a new C-ordered array.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Dense, with each row's entries contiguous (C order); may be read-only.
    start, width : int
    rows : array of int or None, default=None
        The rows to take, in this order (``None``: all, in order).

    Returns
    -------
    ndarray of shape (len(rows), min(width, d - start))
    """
    B = X[:, start:start + width]
    if B.shape[1] == 0 or B.strides[1] != B.itemsize:
        return np.ascontiguousarray(B if rows is None else B[rows])
    E = _rows_as_elements(B)
    E = np.ascontiguousarray(E) if rows is None else E[rows]
    return E.view(B.dtype).reshape(E.shape[0], B.shape[1])


def put_column_block(out, start, Z, rows=None):
    """``out[rows, start:start + Z.shape[1]] = Z`` (``rows=None``: all rows, in order)."""
    B = out[:, start:start + Z.shape[1]]
    if (Z.shape[1] == 0 or B.strides[1] != B.itemsize or Z.dtype != out.dtype
            or not Z.flags.c_contiguous):
        B[slice(None) if rows is None else rows] = Z
        return
    E = _rows_as_elements(B)
    E[slice(None) if rows is None else rows] = _rows_as_elements(Z)
