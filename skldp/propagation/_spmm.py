"""Repeated sparse x dense products over column blocks in parallel threads."""

import numbers
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.utils._param_validation import Options, StrOptions

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
# Below this many multiply-adds per step a thread pool costs more than it saves.
_PARALLEL_MIN_WORK = 1 << 22


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


def repeated_spmm(P, X, steps, n_jobs=None):
    """``P^steps @ X`` for dense ``X``, in ``P``'s dtype, column blocks over threads.

    scipy's sparse products release the GIL, so threads run them on several
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
    if steps == 0:
        return X
    if jobs <= 1 or P.nnz * d < _PARALLEL_MIN_WORK:
        Z = X
        for _ in range(steps):   # a loop over steps, not nodes
            Z = P @ Z
        return np.asarray(Z)
    width = max(1, min(_BLOCK_COLUMNS, -(-d // jobs)))
    out = np.empty((P.shape[0], d), dtype=P.dtype)

    def block(s):
        Z = np.ascontiguousarray(X[:, s:s + width])
        for _ in range(steps):
            Z = P @ Z
        out[:, s:s + width] = Z

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(block, range(0, d, width)))
    return out
