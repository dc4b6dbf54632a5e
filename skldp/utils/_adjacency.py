"""Normalised adjacency operators shared by propagation, reconstruction and the GNNs."""

import numpy as np
import scipy.sparse as sp

__all__ = ["normalized_adjacency"]


def normalized_adjacency(A, self_loops=True, kind="sym", *, dtype=np.float32,
                         isolated_keep_own=False):
    """GCN propagation matrix as scipy CSR.

    ``kind="sym"``: D^-1/2 (A + I) D^-1/2 (Kipf & Welling 2017, eq. (2));
    ``kind="rw"``: D^-1 (A + I) (row-normalised mean aggregation).
    A node without neighbours (an all-zero row) gets a zero row, or the identity
    row with ``isolated_keep_own`` (it keeps its own features).
    """
    if kind not in ("sym", "rw"):
        raise ValueError(f"kind must be 'sym' or 'rw', got {kind!r}.")
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
