"""Normalised adjacency by scaling the stored values: the same matrices as the products."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp.utils import _adjacency
from skldp.utils._adjacency import normalized_adjacency, row_sums, scale_csr


def _products_normalized(A, self_loops, kind, dtype, isolated_keep_own=False):
    """The former implementation: products with diagonal matrices."""
    A = sp.csr_matrix(A, dtype=dtype)
    n = A.shape[0]
    if self_loops:
        A = A + sp.eye(n, dtype=dtype, format="csr")
    deg = np.asarray(A.sum(axis=1)).ravel()
    if isolated_keep_own and np.any(deg == 0):
        A = A + sp.diags((deg == 0).astype(dtype), format="csr")
        deg = np.where(deg == 0, 1.0, deg)
    with np.errstate(divide="ignore"):
        if kind == "sym":
            d = np.where(deg > 0, deg ** -0.5, 0.0)
            return sp.csr_matrix(sp.diags(d) @ A @ sp.diags(d), dtype=dtype)
        d = np.where(deg > 0, 1.0 / deg, 0.0)
        return sp.csr_matrix(sp.diags(d) @ A, dtype=dtype)


def _graph(directed, weighted, n=300, seed=0):
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.02, random_state=rng, format="csr")
    if not weighted:
        A.data[:] = 1.0
    A.setdiag(0)
    A.eliminate_zeros()
    if not directed:
        A = A.maximum(A.T)
    A = sp.csr_matrix(A, dtype=np.float32)
    A.sort_indices()
    return A


def _same(M, R):
    M, R = sp.csr_matrix(M), sp.csr_matrix(R)
    M.sort_indices()
    R.sort_indices()
    assert M.dtype == R.dtype and M.shape == R.shape
    np.testing.assert_array_equal(M.indptr, R.indptr)
    np.testing.assert_array_equal(M.indices, R.indices)
    np.testing.assert_array_equal(M.data, R.data)   # bit for bit


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kind", ["sym", "rw"])
@pytest.mark.parametrize("self_loops", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normalized_adjacency_equals_the_products(directed, weighted, kind, self_loops, dtype):
    A = _graph(directed, weighted)
    for keep in (False, True):
        _same(normalized_adjacency(A, self_loops, kind, dtype=dtype, isolated_keep_own=keep),
              _products_normalized(A, self_loops, kind, dtype, keep))


def test_scale_csr_shares_indices_and_never_touches_the_input(monkeypatch):
    A = _graph(True, True)
    before = (A.data.copy(), A.indices.copy(), A.indptr.copy())
    rng = np.random.default_rng(1)
    left, right = rng.random(A.shape[0]), rng.random(A.shape[0])
    M = scale_csr(A, left, right, np.float32)
    assert np.shares_memory(M.indices, A.indices) and np.shares_memory(M.indptr, A.indptr)
    _same(M, sp.csr_matrix(sp.diags(left) @ A @ sp.diags(right), dtype=np.float32))
    # zeros dropped (a zero factor), on copies of the index arrays
    right[A.indices[0]] = 0.0
    monkeypatch.setattr(_adjacency, "_CHUNK", 97)   # many chunks, same result
    M = scale_csr(A, left, right, np.float32)
    assert M.nnz < A.nnz and not np.shares_memory(M.indices, A.indices)
    _same(M, sp.csr_matrix(sp.diags(left) @ A @ sp.diags(right), dtype=np.float32))
    for a, b in zip(before, (A.data, A.indices, A.indptr), strict=True):
        np.testing.assert_array_equal(a, b)


def test_row_sums_in_chunks(monkeypatch):
    A = _graph(True, True)
    monkeypatch.setattr(_adjacency, "_CHUNK", 50)
    np.testing.assert_array_equal(row_sums(A), np.asarray(A.astype(np.float64).sum(axis=1)).ravel())
    assert row_sums(A, np.float32).dtype == np.float32
