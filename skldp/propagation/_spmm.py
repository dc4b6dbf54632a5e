"""Repeated sparse x dense products over column blocks in parallel threads."""

import contextlib
import numbers
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.utils._param_validation import Options, StrOptions

from ..utils._blocks import _rows_as_elements, aligned_empty, column_block, put_column_block
from ..utils._threads import torch_threads
from ..utils.validation import Count, check_int

__all__ = ["n_threads", "check_dtype", "repeated_spmm"]

DTYPES = {"float32": np.float32, "float64": np.float64}
# The declared constraints (``_parameter_constraints``) of the steps' dtype and n_jobs.
DTYPE_CONSTRAINT = [StrOptions(set(DTYPES))]
N_JOBS_CONSTRAINT = [Count(1),
                     Options(numbers.Integral, {-1}), None]
# Column blocks of at most this width: each thread streams its own block
# through all the steps (no synchronisation between steps).
_BLOCK_COLUMNS = 128
# Blocks of at most this width for torch's embedding-bag kernel (on Facebook's
# operator, one thread: KProp(8) on 1,024 columns 3.8x scipy at 32-64 columns, 1x at
# 1,024; PPR's float32 Chebyshev solve 1.3x faster at 32 columns than at 128).
_BAG_COLUMNS = 32
# Below this many multiply-adds per step a thread pool costs more than it saves.
_PARALLEL_MIN_WORK = 1 << 22
# From this many multiply-adds in all, a float32 product imports torch for its kernel
# (the import, about a second, then pays for itself); with torch loaded, always.
_IMPORT_TORCH_MIN_WORK = 1 << 31


def n_threads(n_jobs):
    """Threads for ``n_jobs``: ``None`` or ``-1`` give the CPUs available to this process.

    Parameters
    ----------
    n_jobs : int or None
        A positive number of threads, ``-1`` or ``None``.

    Returns
    -------
    int
        The number of threads (>= 1).
    """
    if n_jobs is None or (isinstance(n_jobs, numbers.Integral) and not isinstance(n_jobs, bool)
                          and n_jobs == -1):
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - not Linux
            return max(1, os.cpu_count() or 1)
    return check_int(n_jobs, "n_jobs", 1)


def check_dtype(dtype):
    """The numpy dtype named by ``dtype`` ("float32" or "float64"), else a ValueError."""
    if isinstance(dtype, str) and dtype in DTYPES:
        return DTYPES[dtype]
    raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}.")


def _product(P, work):
    """``Z -> P @ Z`` for dense C-ordered ``Z``: in float32 torch's embedding-bag
    kernel (``bag_matmul``, 2-3x scipy's kernel on one thread) when torch is loaded or
    ``work`` pays for its import; else scipy's. Also returns whether it is torch's (to
    be run with one torch thread per block).
    Not ``sparse_matmul``, which picks torch's other kernel for narrow blocks of a small
    graph: the output would then depend on the block width, and so on ``n_jobs``."""
    if P.dtype != np.float32 or ("torch" not in sys.modules
                                 and work < _IMPORT_TORCH_MIN_WORK):
        return (lambda Z: np.asarray(P @ Z)), False
    # (read_tensor: the graph's read-only arrays are read without a copy)
    from .._torch._sparse import bag_matmul
    from .._torch._sparse import read_tensor as tensor
    itype = np.int32 if P.nnz < 2 ** 31 and P.shape[1] < 2 ** 31 else np.int64
    arrays = (tensor(P.indptr.astype(itype, copy=False)),
              tensor(P.indices.astype(itype, copy=False)), tensor(P.data))
    return (lambda Z: bag_matmul(*arrays, tensor(Z)).numpy()), True


def repeated_spmm(P, X, steps, n_jobs=None):
    """``P^steps @ X`` for dense ``X``, in ``P``'s dtype, column blocks over threads.

    The sparse products (scipy's, or in float32 torch's embedding-bag kernel, one
    torch thread per block) release the GIL, so threads run them on several
    cores; every column block goes through all ``steps`` products in one
    thread, and the result does not depend on ``n_jobs``.

    Parameters
    ----------
    P : scipy sparse matrix of shape (n, n)
        CSR operator (its dtype is the dtype of the computation).
    X : array-like of shape (n, d)
        Dense features.
    steps : int
        Number of products (>= 0).
    n_jobs : int or None, default=None
        Threads (see :func:`n_threads`).

    Returns
    -------
    ndarray of shape (n, d)
    """
    X = np.asarray(X, dtype=P.dtype)
    n, d = X.shape
    jobs = min(n_threads(n_jobs), d)
    if P.shape[0] != P.shape[1] or P.shape[1] != n:
        raise ValueError(f"cannot multiply a {P.shape} operator by {n} rows of features.")
    if steps == 0:
        return X
    P = P.tocsr()
    product, bags = _product(P, P.nnz * d * steps)
    if P.nnz * d < _PARALLEL_MIN_WORK:
        jobs = 1
    # the column blocks are the parallelism: torch's own pool would nest in it
    with torch_threads(1) if bags else contextlib.nullcontext():
        if jobs <= 1 and not (bags and d > _BAG_COLUMNS):
            Z = np.ascontiguousarray(X)
            for _ in range(steps):   # a loop over steps, not nodes
                Z = product(Z)
            return Z
        # torch's kernel is fastest on narrow blocks, even on one thread
        width = max(1, min(_BAG_COLUMNS if bags else _BLOCK_COLUMNS, -(-d // jobs)))
        # (cache-line aligned: torch's kernel reads, and blocks are written, by whole lines)
        out = aligned_empty((P.shape[0], d), P.dtype) if bags else \
            np.empty((P.shape[0], d), dtype=P.dtype)
        starts = range(0, d, width)

        def blocks(group):
            if not bags:
                for s in group:
                    Z = column_block(X, s, width)
                    for _ in range(steps):
                        Z = product(Z)
                    put_column_block(out, s, Z)
                return
            # float32 on torch's kernel: each block gathered into one buffer of this
            # thread (still in cache from the last block) and copied out by torch (Facebook,
            # 1,024 columns: 5-15 % off a step of one product)
            import torch
            out_t = torch.from_numpy(out)
            buf = aligned_empty((n, width), P.dtype)
            for s in group:
                w = min(width, d - s)
                Z = _gather(X, s, buf if w == width else aligned_empty((n, w), P.dtype))
                for _ in range(steps):
                    Z = product(Z)
                out_t[:, s:s + w].copy_(torch.from_numpy(Z))

        if jobs <= 1:
            blocks(starts)
        else:   # every thread its own share of the blocks (and its own buffer)
            jobs = min(jobs, len(starts))
            with ThreadPoolExecutor(jobs) as pool:
                list(pool.map(blocks, [starts[i::jobs] for i in range(jobs)]))
    return out


def _gather(X, s, buf):
    """``X[:, s:s + buf.shape[1]]`` copied into ``buf`` (C order), a row segment at a time."""
    B = X[:, s:s + buf.shape[1]]
    if B.strides[1] == B.itemsize:
        _rows_as_elements(buf)[...] = _rows_as_elements(B)
    else:
        np.copyto(buf, B)
    return buf
