"""Dense products over column blocks cover every column, whatever the block widths.

``repeated_spmm`` (KProp, GCNAggregation, FeatureSmoothing) splits dense features
into column blocks, one share per thread. When the last block holds a single
column it must still be computed: the output is allocated uninitialised, so a
skipped block returns garbage. Checked against the dense matrix power on a
small graph, with threading forced on it.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.propagation import KProp, _spmm


def _graph(seed=0, n=40):
    rng = np.random.default_rng(seed)
    A = np.triu(rng.random((n, n)) < 0.15, 1).astype(float)
    return A + A.T, rng.normal(size=(n, 7))


@pytest.mark.parametrize("d, block_columns, n_jobs", [(7, 3, 2), (3, 128, 2), (5, 2, 3)])
def test_last_block_of_one_column_is_computed(d, block_columns, n_jobs, monkeypatch):
    monkeypatch.setattr(_spmm, "_PARALLEL_MIN_WORK", 0)   # thread even a small graph
    monkeypatch.setattr(_spmm, "_BLOCK_COLUMNS", block_columns)
    A, X = _graph()
    X = X[:, :d]
    P = sp.csr_matrix(A / np.maximum(A.sum(axis=1), 1)[:, None])
    Z = _spmm.repeated_spmm(P, X, 2, n_jobs=n_jobs)
    np.testing.assert_allclose(Z, P.toarray() @ (P.toarray() @ X), rtol=1e-12, atol=1e-14)


def test_kprop_threads_compute_every_column(monkeypatch):
    monkeypatch.setattr(_spmm, "_PARALLEL_MIN_WORK", 0)
    A, X = _graph(1)
    X = X[:, :3]                        # two threads: blocks of 2 and 1 columns
    Ah = A + np.eye(len(A))
    T = Ah / Ah.sum(axis=1, keepdims=True)
    G = GraphData(X, sp.csr_matrix(A))
    Z = np.asarray(KProp(steps=3, dtype="float64", n_jobs=2).fit_transform(G))
    np.testing.assert_allclose(Z, np.linalg.matrix_power(T, 3) @ X, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_float32_blocks_are_written_into_a_cache_line_aligned_output(n_jobs, monkeypatch):
    # torch's kernel (float32) on blocks of 2 columns: each block's rows land on whole
    # cache lines of the output, and every column is computed
    monkeypatch.setattr(_spmm, "_PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(_spmm, "_BAG_COLUMNS", 2)
    A, X = _graph(2)
    P = sp.csr_matrix(A / np.maximum(A.sum(axis=1), 1)[:, None], dtype=np.float32)
    Z = _spmm.repeated_spmm(P, X.astype(np.float32), 2, n_jobs=n_jobs)
    assert Z.dtype == np.float32 and Z.ctypes.data % 64 == 0
    np.testing.assert_allclose(Z, P.toarray() @ (P.toarray() @ X), rtol=1e-5, atol=1e-6)
