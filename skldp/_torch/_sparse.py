"""Sparse operands on torch: scipy -> torch conversion and fast sparse x dense products."""

import warnings

import numpy as np
import scipy.sparse as sp
import torch

__all__ = ["sparse_csr_tensor", "sparse_matmul", "bag_matmul", "read_tensor", "to_torch_sparse",
           "to_torch_dense"]

_CSR_BETA_WARNED = False


def sparse_csr_tensor(*args, **kwargs):
    """:func:`torch.sparse_csr_tensor` without its "support is in beta" warning.

    Sparse CSR tensors are stable for the operations used here (spmm and its
    backward). The warning is silenced here only, never in the user's filters;
    torch gives it once per process, so only the first call needs the (process-wide,
    not thread-safe) ``catch_warnings``: later calls, e.g. from concurrent fits on
    joblib threads, leave the filters alone.
    """
    global _CSR_BETA_WARNED
    if _CSR_BETA_WARNED:
        return torch.sparse_csr_tensor(*args, **kwargs)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta",
                                category=UserWarning)
        t = torch.sparse_csr_tensor(*args, **kwargs)
    _CSR_BETA_WARNED = True
    return t


_BAG_MIN_NNZ = 1 << 16  # below it, and under 16 columns, torch.sparse.mm is as fast


def sparse_matmul(A, h):
    """``A @ h`` for a sparse CSR tensor ``A`` and a dense 2-D tensor ``h``.

    On the CPU, for float32, the product runs as a weighted embedding-bag sum
    (row ``i`` of ``A`` is the bag of rows ``h[j]`` weighted by ``A[i, j]``),
    whose kernel (fbgemm) is 2-4x faster than ``torch.sparse.mm``'s on the
    shapes of GNN training (one thread: Facebook's 22,470 x 22,470 mean
    aggregator times 32 columns 1.7 against 6.5 ms; a 1M-node graph with 10M
    edges times 16 columns 0.18 against 0.40 s; ``benchmarks/bench_sparse_matmul.py``).
    Elsewhere it is ``torch.sparse.mm``: on CUDA, for other layouts or dtypes,
    for fewer than 16 columns on a small matrix (under 65,536 stored entries,
    where MKL's product is as fast: Cora times 7 columns), and when ``h`` needs a
    gradient (the embedding bag's own backward is slower than torch's; the
    models' custom backward calls this function without autograd). No
    gradient flows to ``A``.

    Parameters
    ----------
    A : torch.Tensor, sparse CSR of shape (m, n)
    h : torch.Tensor of shape (n, k)

    Returns
    -------
    torch.Tensor of shape (m, k)
    """
    if h.dim() != 2 or A.shape[1] != h.shape[0]:
        raise ValueError(f"cannot multiply a {tuple(A.shape)} sparse matrix by a "
                         f"{tuple(h.shape)} tensor.")
    if (A.layout is torch.sparse_csr and h.dtype is torch.float32 and A.dtype is torch.float32
            and A.device.type == "cpu" and (h.shape[1] >= 16 or A._nnz() >= _BAG_MIN_NNZ)
            and not (h.requires_grad and torch.is_grad_enabled())):
        # detach: a tensor that requires a gradient (inside a custom backward, with
        # autograd off) would make the bag keep the bookkeeping of its own backward
        return bag_matmul(A.crow_indices(), A.col_indices(), A.values(), h.detach())
    return torch.sparse.mm(A, h)


def bag_matmul(indptr, indices, values, h):
    """``A @ h`` for the CSR arrays of ``A`` (tensors; ``indptr`` and ``indices`` of one
    integer dtype) by torch's embedding-bag kernel: row ``i`` of ``A`` is the bag of
    rows ``h[j]`` weighted by ``A[i, j]``, summed. CPU, float32; no autograd.

    Parameters
    ----------
    indptr, indices, values : torch.Tensor
        CSR arrays of ``A`` (shape (m, n)).
    h : torch.Tensor of shape (n, k)

    Returns
    -------
    torch.Tensor of shape (m, k)
    """
    # torch.embedding_bag itself (F.embedding_bag's checks cost as much as the product
    # on Cora), in "sum" mode (0), the last offset included
    return torch.embedding_bag(h.contiguous(), indices, indptr, False, 0, False, values,
                               True)[0]


def read_tensor(a):
    """``torch.from_numpy(a)`` for an array that is only read, without a copy even when
    it is read-only (a graph's adjacency and features are): torch would warn."""
    if a.flags.writeable:
        return torch.from_numpy(a)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(a)


def to_torch_sparse(A, device="cpu", dtype=torch.float32):
    """scipy sparse matrix -> torch sparse CSR tensor (stays sparse on the device).

    Indices are int32 when they fit: half the memory for
    :func:`sparse_matmul`'s embedding bags, and ``torch.sparse.mm``'s CPU
    kernel (MKL) works on int32 and would otherwise convert int64 indices at
    every product (Cora, 32 columns: about 20 % of the time of a product).
    """
    A = sp.csr_matrix(A)
    idx = np.int32 if max(A.nnz, *A.shape) < 2**31 else np.int64
    # the values in ``dtype`` itself (through float32, float64 ones lost their precision)
    values = A.data.astype(torch.empty(0, dtype=dtype, device="cpu").numpy().dtype)
    t = sparse_csr_tensor(torch.from_numpy(A.indptr.astype(idx)),
                                torch.from_numpy(A.indices.astype(idx)),
                                torch.from_numpy(values),
                                size=A.shape, dtype=dtype, device=device,
                                check_invariants=False)
    return t


def to_torch_dense(X, device="cpu", dtype=torch.float32):
    """Dense or scipy sparse features -> dense torch tensor."""
    if sp.issparse(X):
        X = X.toarray()
    X = np.asarray(X)
    if not X.flags.writeable:   # torch would share (and warn about) read-only memory
        # one copy, converted (the dtype read on the CPU: the default device may be another)
        X = X.astype(torch.empty(0, dtype=dtype, device="cpu").numpy().dtype)
    elif any(s < 0 for s in X.strides):   # torch cannot wrap them (X[:, ::-1]): one copy
        X = np.ascontiguousarray(X)
    return torch.as_tensor(X, dtype=dtype, device=device)
