"""array_fingerprint: the dense fast path hashes the same bytes as the canonical CSR form."""

import hashlib

import numpy as np
import pytest
import scipy.sparse as sp

from skldp.utils import _random
from skldp.utils._random import array_fingerprint


def _reference(X):
    """The canonical-CSR hash (the implementation before the dense fast path)."""
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sum_duplicates()
    X.eliminate_zeros()
    X.sort_indices()
    h = hashlib.blake2b(digest_size=16)
    h.update(repr(X.shape).encode())
    for part in (X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)):
        h.update(np.ascontiguousarray(part).view(np.uint8))
    return h.hexdigest()


def _arrays():
    rng = np.random.default_rng(0)
    X = rng.random((57, 13))
    X[X < 0.7] = 0
    X[3, 4] = -0.0
    X[5, :] = 0
    yield X
    yield X.astype(np.float32)
    yield X.astype(np.float16)
    yield np.asfortranarray(X)
    yield X[::2, 1::3]                       # not contiguous
    yield (X > 0.5)                          # bool
    yield (X * 100).astype(np.int64) - 20    # ints, negatives
    yield (X * 100).astype(np.uint8)
    Y = X.copy()
    Y[7, 2] = np.nan
    Y[8, 3] = -np.inf
    yield Y
    yield np.full((4, 3), 1e-320, dtype=np.longdouble) * np.longdouble(1e-30)  # 0 in float64
    yield np.zeros((0, 5))
    yield np.zeros((6, 0))
    yield np.zeros((4, 4))
    yield rng.standard_normal((30, 1))


@pytest.mark.parametrize("i", range(14))
def test_dense_fast_path_matches_canonical_csr(i, monkeypatch):
    X = list(_arrays())[i]
    expected = _reference(X)
    assert array_fingerprint(X) == expected
    monkeypatch.setattr(_random, "_FINGERPRINT_BLOCK", 7)  # several row blocks, of one row
    assert array_fingerprint(X) == expected


def test_dense_and_sparse_agree_and_differ_from_other_content():
    X = np.random.default_rng(1).random((40, 9)).astype(np.float32)
    X[X < 0.5] = 0
    f = array_fingerprint(X)
    assert f == array_fingerprint(sp.csr_matrix(X)) == array_fingerprint(X.astype(np.float64))
    assert f == array_fingerprint(sp.csc_array(X))
    Y = X.copy()
    Y[39, 8] += 1.0
    assert array_fingerprint(Y) != f
    assert array_fingerprint(X.reshape(9, 40)) != f      # same values, other shape


def test_pinned_value():
    """The hash of a fixed array never changes (populations saved with a model depend on it)."""
    X = np.arange(12, dtype=np.float64).reshape(3, 4) - 5
    assert array_fingerprint(X) == _reference(X)
    assert array_fingerprint(X) == "dc6efc4ee84ecff45aa12f7171637e6c"
