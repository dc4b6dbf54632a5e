"""Normalised adjacency operators shared by propagation, reconstruction and the GNNs.

Normalising ``A`` by diagonal matrices scales its stored values: row ``i`` by
``left[i]``, column ``j`` by ``right[j]``. Doing that on the data array (here)
instead of with two sparse products (``diags(l) @ A @ diags(r)``) gives the same
values, entry for entry, several times faster and without the two intermediate
matrices; the result shares ``A``'s index arrays when no entry becomes zero.
"""

import numpy as np
import scipy.sparse as sp

__all__ = ["index_dtype", "normalized_adjacency", "scale_csr", "row_sums",
           "with_remaining_self_loops"]

# Stored entries handled per pass: bounds the temporaries of large graphs
# (32 MiB of float64 for the row factors of a chunk).
_CHUNK = 1 << 22


def _row_chunks(indptr, chunk=None):
    """``(r0, r1)`` row ranges holding about ``chunk`` (``_CHUNK``) stored entries each."""
    chunk = _CHUNK if chunk is None else chunk
    n = len(indptr) - 1
    nnz = int(indptr[-1])
    if nnz <= chunk:
        yield 0, n
        return
    cuts = np.searchsorted(indptr, np.arange(chunk, nnz, chunk), side="right") - 1
    bounds = np.unique(np.concatenate([[0], cuts, [n]]))
    for r0, r1 in zip(bounds[:-1], bounds[1:], strict=True):
        yield int(r0), int(r1)


def index_dtype(*sizes):
    """int32 for indices when every count in ``sizes`` fits, else int64 (numpy dtype)."""
    return np.int32 if max(sizes) < 2**31 else np.int64


def row_sums(A, dtype=np.float64):
    """Row sums of the CSR matrix ``A``, accumulated in ``dtype``.

    The same values as ``A.astype(dtype).sum(axis=1)`` (one sum per row, in
    order) without converting the whole matrix: rows are summed in chunks.
    """
    A = sp.csr_matrix(A)
    n, m = A.shape
    if A.dtype == dtype:
        return np.asarray(A.sum(axis=1), dtype=dtype).ravel()
    out = np.empty(n, dtype=dtype)
    ones = np.ones(m, dtype=dtype)
    for r0, r1 in _row_chunks(A.indptr):
        lo, hi = A.indptr[r0], A.indptr[r1]
        block = sp.csr_matrix((A.data[lo:hi].astype(dtype), A.indices[lo:hi],
                               A.indptr[r0:r1 + 1] - lo), shape=(r1 - r0, m))
        out[r0:r1] = block @ ones
    return out


def with_remaining_self_loops(A, dtype=None):
    """``A`` (CSR, ``dtype``) with a self loop of weight 1 on each node that has none.

    A node's own loop keeps its weight, as PyTorch Geometric's
    ``add_remaining_self_loops`` (used by ``gcn_norm``) does: ``A + I`` would
    give a node with a loop of weight 1 a loop of weight 2. A stored zero on
    the diagonal counts as no loop.
    """
    A = sp.csr_matrix(A, dtype=dtype)
    missing = (A.diagonal() == 0).astype(A.dtype)
    return A + sp.diags(missing, format="csr")


def scale_csr(A, left=None, right=None, dtype=None):
    """``diag(left) @ A @ diag(right)`` as CSR, by scaling the stored values.

    The values are those of ``sp.diags(left) @ A @ sp.diags(right)`` entry for
    entry: ``(left[i] * a_ij) * right[j]`` computed in the result type of ``A``,
    ``left`` and ``right``, then cast to ``dtype``; entries that become zero are
    dropped, as the sparse products drop them. The work runs over chunks of rows,
    so the temporaries stay small whatever the size of the graph.

    Parameters
    ----------
    A : sparse matrix of shape (n, m)
        Canonical CSR (sorted indices, no duplicates) is shared, not copied.
    left : ndarray of shape (n,) or None
        Row factors (``None``: 1).
    right : ndarray of shape (m,) or None
        Column factors (``None``: 1).
    dtype : dtype or None, default=None
        Dtype of the result (``None``: the computation's).

    Returns
    -------
    scipy.sparse.csr_matrix
        Shares the index arrays of ``A`` unless some entry became zero.
    """
    A = sp.csr_matrix(A)
    if not A.has_canonical_format:
        A = A.copy()
        A.sum_duplicates()
    work = np.result_type(A.dtype, *(v.dtype for v in (left, right) if v is not None))
    dtype = work if dtype is None else np.dtype(dtype)
    data = np.empty(A.nnz, dtype=dtype)
    indptr, indices = A.indptr, A.indices
    for r0, r1 in _row_chunks(indptr):
        lo, hi = indptr[r0], indptr[r1]
        v = A.data[lo:hi].astype(work)
        if left is not None:   # left[i] * a_ij, then times right[j], as the products do
            v = np.multiply(np.repeat(left[r0:r1].astype(work, copy=False),
                                      np.diff(indptr[r0:r1 + 1])), v, out=v)
        if right is not None:
            np.multiply(v, right.astype(work, copy=False)[indices[lo:hi]], out=v)
        data[lo:hi] = v
    if data.all():
        M = sp.csr_matrix((data, indices, indptr), shape=A.shape)
    else:   # never compact the caller's index arrays in place
        M = sp.csr_matrix((data, indices.copy(), indptr.copy()), shape=A.shape)
        M.eliminate_zeros()
    M.has_sorted_indices = True
    return M


def normalized_adjacency(A, self_loops=True, kind="sym", *, dtype=np.float32,
                         isolated_keep_own=False):
    """GCN propagation matrix as scipy CSR.

    ``kind="sym"``: D^-1/2 (A + I) D^-1/2 (Kipf & Welling 2017, eq. (2));
    ``kind="rw"``: D^-1 (A + I) (row-normalised mean aggregation).
    ``A + I`` keeps existing self loops' weights (:func:`with_remaining_self_loops`).
    A node without neighbours (an all-zero row) gets a zero row, or the identity
    row with ``isolated_keep_own`` (it keeps its own features).
    The values are those of the products with diagonal matrices
    (``diags(d) @ A @ diags(d)`` in ``dtype``), computed by :func:`scale_csr`; where
    ``dtype``'s degrees or factors would overflow or lose their precision (float32
    weights near its largest or smallest values), the degrees and the products are
    computed in float64 and rounded once to ``dtype``.
    """
    if kind not in ("sym", "rw"):
        raise ValueError(f"kind must be 'sym' or 'rw', got {kind!r}.")
    A = with_remaining_self_loops(A, dtype) if self_loops else sp.csr_matrix(A, dtype=dtype)
    deg = np.asarray(A.sum(axis=1)).ravel()
    if isolated_keep_own and np.any(deg == 0):
        A = A + sp.diags((deg == 0).astype(dtype), format="csr")
        deg = np.where(deg == 0, 1.0, deg)
    d = _degree_factors(deg, kind)
    if not _usable_factors(deg, d):
        # a degree beyond the dtype's range, or a factor that overflows or is subnormal:
        # the degrees and factors in float64 (rounded once to dtype by scale_csr)
        deg = row_sums(A, np.float64)
        d = _degree_factors(deg, kind)
    return scale_csr(A, d, d if kind == "sym" else None, dtype)


def _degree_factors(deg, kind):
    """``deg^-1/2`` (``"sym"``) or ``1 / deg`` (``"rw"``) in ``deg``'s dtype; 0 where
    ``deg`` is 0."""
    with np.errstate(divide="ignore", over="ignore"):
        if kind == "sym":
            return np.where(deg > 0, deg ** -0.5, 0.0)
        return np.where(deg > 0, 1.0 / deg, 0.0)


def _usable_factors(deg, d):
    """Whether the degrees are finite and the factors of the positive ones finite and
    normal (not subnormal: their precision would be lost)."""
    pos = deg > 0
    return bool(np.isfinite(deg).all() and np.isfinite(d).all()
                and (d[pos] >= np.finfo(d.dtype).tiny).all())
