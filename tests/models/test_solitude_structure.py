"""SolitudeClassifier's edge structure: same numbers as the plain construction, less memory."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from skldp.models._solitude import _EdgeStructure, _SparsePattern, _WeightedSpMM


def _reference_pattern(row, col, n):
    """The pattern's arrays as np.unique and np.lexsort give them (int64)."""
    codes = np.asarray(row, np.int64) * n + np.asarray(col, np.int64)
    uniq, slot = np.unique(codes, return_inverse=True)
    rows, cols = uniq // n, uniq % n
    order_t = np.lexsort((rows, cols))
    crow = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])
    crow_t = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=n))])
    return dict(slot=slot, rows=rows, cols=cols, order_t=order_t, crow=crow, crow_t=crow_t,
                csr_cols=cols, csr_cols_t=rows[order_t])


def _graphs():
    rng = np.random.default_rng(0)
    for n in (1, 7, 60):
        for density in (0.0, 0.1, 0.4):
            M = sp.random(n, n, density=density, random_state=int(rng.integers(2**31)),
                          format="csr")
            M.data[:] = rng.choice([1.0, 0.5, 2.0], size=M.nnz)
            yield M                       # directed, self loops
            S = (M + M.T).tocsr()
            yield S                       # symmetric, self loops
            S = S.copy()
            S.setdiag(0)
            S.eliminate_zeros()
            yield S                       # symmetric, none


@pytest.mark.parametrize("conv", ["gcn", "sage"])
def test_pattern_matches_unique_and_lexsort(conv):
    for A in _graphs():
        s = _EdgeStructure(A, conv, "cpu")
        row, col = s.t_row.numpy(), s.t_col.numpy()
        ref = _reference_pattern(row, col, A.shape[0])
        for name, want in ref.items():
            got = getattr(s.pattern, name)
            assert got.dtype == torch.int32          # small graphs: int32 indices
            np.testing.assert_array_equal(got.numpy(), want, err_msg=name)
        assert s.pattern.size == len(ref["rows"])
        # the received entries, as A.tocoo() lists them
        coo = sp.csr_matrix(A).tocoo()
        np.testing.assert_array_equal(s.row, coo.row)
        np.testing.assert_array_equal(s.col, coo.col)


def test_pattern_with_repeated_unsorted_entries():
    row = np.array([3, 0, 3, 1, 0, 3, 2], dtype=np.int32)
    col = np.array([1, 2, 1, 1, 0, 0, 2], dtype=np.int32)
    p = _SparsePattern(row, col, 4, "cpu")
    for name, want in _reference_pattern(row, col, 4).items():
        np.testing.assert_array_equal(getattr(p, name).numpy(), want, err_msg=name)


@pytest.mark.parametrize("block", [1, 5, 1 << 16])
def test_blocked_value_gradient_is_the_one_product(block, monkeypatch):
    # the gradient of the values runs in blocks of entries; any block size gives the
    # numbers of one product over all entries, bit for bit
    monkeypatch.setattr(_WeightedSpMM, "_BLOCK", block)
    A = sp.random(80, 80, density=0.2, random_state=0, format="csr")
    s = _EdgeStructure(A + A.T, "gcn", "cpu")
    gen = torch.Generator().manual_seed(0)
    w = torch.rand(len(s.target), generator=gen, requires_grad=True)
    h = torch.randn(80, 7, generator=gen, requires_grad=True)
    grad = torch.randn(80, 7, generator=gen)
    v = torch.rand(s.pattern.size, generator=gen, requires_grad=True)
    _WeightedSpMM.apply(v, h, s.pattern).backward(grad)
    p = s.pattern
    want = (grad.index_select(0, p.rows.long()) * h.detach().index_select(0, p.cols.long())).sum(1)
    assert torch.equal(v.grad, want)
    # and through the learned weights
    s.graph(w)["a_sym_op"].matmul(h).sum().backward()
    assert w.grad is not None and torch.isfinite(w.grad).all()


def test_setup_memory_per_entry():
    # A symmetric 20,000-node graph with 300,000 entries. Measured (numpy's allocations,
    # traced): the set-up peaked at 150 bytes per entry and kept 83 with int64 copies of
    # every index array; 76 and 36 with int32 indices, each kept once.
    rng = np.random.default_rng(0)
    n, m = 20_000, 150_000
    u, v = rng.integers(0, n, m), rng.integers(0, n, m)
    A = sp.csr_matrix((np.ones(2 * m), (np.r_[u, v], np.r_[v, u])), shape=(n, n))
    A.data[:] = 1.0
    tracemalloc.start()
    try:
        s = _EdgeStructure(A, "gcn", "cpu")
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert s.symmetric
    assert peak / A.nnz < 105
    assert kept / A.nnz < 55
