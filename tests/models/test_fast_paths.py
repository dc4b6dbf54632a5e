"""The faster code paths of the torch models give the results of the plain ones."""

import numpy as np
import scipy.sparse as sp
import torch

from skldp.models import MLPHead, _mlp
from skldp.models._gnn import PropagatedFeatures, SparseOperand, _matmul, _SAGEConv, _spmm
from skldp.models._torch_utils import to_torch_sparse


def test_column_stats_in_row_chunks_match_numpy(monkeypatch):
    monkeypatch.setattr(_mlp, "_STATS_CHUNK", 10)   # several chunks of rows
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(53, 4)) * [1, 10, 1e-3, 0] + [0, 5, 1e4, 3]).astype(np.float32)
    mean, scale = _mlp._column_stats(X)
    X64 = X.astype(np.float64)
    np.testing.assert_allclose(mean, X64.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(scale[:3], X64.std(axis=0)[:3], rtol=1e-9)
    assert scale[3] == 1.0   # constant column
    S = _mlp._Standardized(X, mean, scale, torch.device("cpu")).t
    np.testing.assert_allclose(S.numpy(), (X64 - mean) / scale, rtol=1e-5, atol=1e-5)


def test_mlp_trained_on_standardised_rows_predicts_through_its_own_layer():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 6)) * 3 + 7
    y = (X[:, 0] + X[:, 1] > 14).astype(int)
    clf = MLPHead(hidden_layer_sizes=(8,), epochs=30, random_state=0).fit(X, y)
    # the fitted module standardises raw rows itself: same scores as standardise-then-rest
    raw = torch.as_tensor(X, dtype=torch.float32)
    with torch.no_grad():
        full = clf.module_(raw)
        split = clf.module_[1:](clf.module_[0](raw))
    np.testing.assert_allclose(full.numpy(), split.numpy(), rtol=1e-6)
    np.testing.assert_allclose(clf.module_[0].mean.numpy(), X.mean(axis=0), rtol=1e-6)
    assert clf.score(X, y) > 0.9


def test_sage_with_propagated_features_equals_two_projections():
    rng = np.random.default_rng(2)
    n, d = 30, 5
    A = sp.random(n, n, density=0.2, random_state=2, format="csr")
    A = ((A + A.T) > 0).astype(np.float32)
    P = sp.diags(1.0 / np.maximum(np.asarray(A.sum(axis=1)).ravel(), 1)) @ A
    x = PropagatedFeatures(torch.as_tensor(rng.normal(size=(n, d)), dtype=torch.float32),
                           SparseOperand.from_scipy(P, "cpu"), 3)
    g = {"n": n, "a_mean_op": SparseOperand.from_scipy(P, "cpu")}
    g["a_mean"] = g["a_mean_op"].A
    with torch.random.fork_rng():   # the caller's global generator is left as it was
        torch.manual_seed(0)
        conv = _SAGEConv(d, 4)
    fused = conv(x, g)
    plain = (_matmul(x, conv.lin_self.weight.t()) + conv.lin_self.bias
             + _spmm(g, "a_mean", _matmul(x, conv.lin_neigh.weight.t())))
    torch.testing.assert_close(fused, plain, rtol=1e-5, atol=1e-6)
    fused.sum().backward()   # gradients flow to both weight matrices
    assert conv.lin_self.weight.grad is not None and conv.lin_neigh.weight.grad is not None


def test_torch_sparse_has_int32_indices_and_the_same_product():
    A = sp.random(40, 30, density=0.1, random_state=3, format="csr")
    T = to_torch_sparse(A)
    assert T.crow_indices().dtype == torch.int32 and T.col_indices().dtype == torch.int32
    h = torch.randn(30, 3)
    np.testing.assert_allclose(torch.sparse.mm(T, h).numpy(), A @ h.numpy(), rtol=1e-5,
                               atol=1e-6)
