"""Small torch helpers: device choice, seeding, sparse conversion."""

import warnings

import numpy as np
import scipy.sparse as sp
import torch

# Sparse CSR tensors are stable for the operations used here (spmm and its backward).
warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta",
                        category=UserWarning)

__all__ = ["resolve_device", "torch_generator", "to_torch_sparse", "to_torch_dense"]


def resolve_device(device="auto"):
    """``"auto"`` picks CUDA when it is available, else the CPU."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def torch_generator(seed, device="cpu"):
    """A torch Generator seeded from an int (for reproducible init and dropout)."""
    g = torch.Generator(device="cpu")
    g.manual_seed(int(seed) % (2**63 - 1))
    return g


def to_torch_sparse(A, device="cpu", dtype=torch.float32):
    """scipy sparse matrix -> torch sparse CSR tensor (stays sparse on the device)."""
    A = sp.csr_matrix(A)
    t = torch.sparse_csr_tensor(torch.from_numpy(A.indptr.astype(np.int64)),
                                torch.from_numpy(A.indices.astype(np.int64)),
                                torch.from_numpy(A.data.astype(np.float32)),
                                size=A.shape, dtype=dtype, check_invariants=False)
    return t.to(device)


def to_torch_dense(X, device="cpu", dtype=torch.float32):
    """Dense or scipy sparse features -> dense torch tensor."""
    if sp.issparse(X):
        X = X.toarray()
    return torch.as_tensor(np.asarray(X), dtype=dtype).to(device)

