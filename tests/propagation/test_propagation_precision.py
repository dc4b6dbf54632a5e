"""Precision (dtype) and threading (n_jobs) of the propagation transformers."""

import sys

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.propagation import FeatureSmoothing, GCNAggregation, KProp, PPRPropagation, _spmm
from skldp.propagation._ppr import (
    _cg_cpu,
    _chebyshev_runner,
    _power_cpu,
    _spmm_acc,
    chebyshev_coefficients,
)


def _graph(n=300, d=20, seed=0):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, 4 * n), rng.integers(0, n, 4 * n)
    keep = src != dst
    A = sp.csr_matrix((np.ones(2 * keep.sum()), (np.r_[src[keep], dst[keep]],
                                                 np.r_[dst[keep], src[keep]])), shape=(n, n))
    A.data[:] = 1.0
    return GraphData(rng.normal(size=(n, d)), A)


STEPS = [
    lambda **kw: GCNAggregation(**kw),
    lambda **kw: KProp(steps=4, **kw),
    lambda **kw: FeatureSmoothing(steps=3, **kw),
    lambda **kw: PPRPropagation(alpha=0.2, tol=1e-7, **kw),
]


@pytest.mark.parametrize("make", STEPS)
@pytest.mark.parametrize("sparse_x", [False, True])
def test_float32_default_float64_option(make, sparse_x):
    G = _graph()
    if sparse_x:
        X = G.features.copy()
        X[np.abs(X) < 1.0] = 0.0
        G = GraphData(sp.csr_matrix(X), G.adjacency)
    Z32 = make().fit_transform(G).features
    Z64 = make(dtype="float64").fit_transform(G).features
    assert Z32.dtype == np.float32 and Z64.dtype == np.float64
    Z32 = Z32.toarray() if sp.issparse(Z32) else Z32
    Z64 = Z64.toarray() if sp.issparse(Z64) else Z64
    # float32 rounding only: the relative difference is ~1e-7, far below 1e-5
    assert np.linalg.norm(Z32 - Z64) <= 1e-5 * np.linalg.norm(Z64)
    assert not np.array_equal(Z32, Z64)


@pytest.mark.parametrize("make", STEPS)
def test_output_does_not_depend_on_threads(make, monkeypatch):
    monkeypatch.setattr(_spmm, "_PARALLEL_MIN_WORK", 0)   # thread even a small graph
    G = _graph()
    Z1 = make(n_jobs=1).fit_transform(G).features
    Z2 = make(n_jobs=2).fit_transform(G).features
    Z3 = make(n_jobs=3).fit_transform(G).features
    np.testing.assert_array_equal(Z1, Z2)
    np.testing.assert_array_equal(Z1, Z3)


def test_repeated_spmm_blocks_equal_one_product(monkeypatch):
    monkeypatch.setattr(_spmm, "_PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(_spmm, "_BLOCK_COLUMNS", 3)   # several blocks per thread
    G = _graph(d=11)
    P = sp.csr_matrix(G.adjacency, dtype=np.float64) / 8.0
    X = G.features
    exp = P @ (P @ X)
    np.testing.assert_allclose(_spmm.repeated_spmm(P, X, 2, n_jobs=2), exp, rtol=1e-12)
    np.testing.assert_array_equal(_spmm.repeated_spmm(P, X, 0, n_jobs=2), X)
    assert _spmm.repeated_spmm(P.astype(np.float32), X, 1, 2).dtype == np.float32


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_repeated_spmm_multiplies_float32_with_embedding_bags_in_narrow_blocks(
        dtype, n_jobs, monkeypatch):
    # torch's kernel is 3-4x scipy's in float32 on blocks of 32-64 columns, not on wide
    # ones: narrow blocks even on one thread, each block's thread with one torch thread
    import torch
    monkeypatch.setattr(_spmm, "_PARALLEL_MIN_WORK", 0)
    G = _graph(d=70)
    P = (sp.csr_matrix(G.adjacency, dtype=np.float64) / 8.0).astype(dtype)
    X = np.asarray(G.features, dtype=dtype)
    calls, real_bag, threads = [], torch.embedding_bag, torch.get_num_threads()

    def spy(weight, *args):
        calls.append((weight.shape[1], torch.get_num_threads()))
        return real_bag(weight, *args)

    monkeypatch.setattr(torch, "embedding_bag", spy)
    Z = _spmm.repeated_spmm(P, X, 3, n_jobs)
    X64 = X.astype(np.float64)
    P64 = P.astype(np.float64)
    exp = P64 @ (P64 @ (P64 @ X64))
    np.testing.assert_allclose(Z, exp, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-6 if dtype == np.float32 else 0)
    assert Z.dtype == dtype and torch.get_num_threads() == threads
    if dtype == np.float32:
        widths = [w for w, _ in calls]
        assert max(widths) <= _spmm._BAG_COLUMNS and sum(widths) == 3 * 70
        assert {t for _, t in calls} == {1}
        np.testing.assert_array_equal(Z, _spmm.repeated_spmm(P, X, 3, 3 - n_jobs))
    else:
        assert calls == []


def test_repeated_spmm_imports_torch_only_for_work_that_pays_for_it(monkeypatch):
    P = sp.identity(4, dtype=np.float32, format="csr")
    assert _spmm._product(P, 1)[1]                         # torch loaded: its kernel
    assert not _spmm._product(P.astype(np.float64), 1 << 40)[1]   # float64: scipy's
    monkeypatch.delitem(sys.modules, "torch")
    product, bags = _spmm._product(P, _spmm._IMPORT_TORCH_MIN_WORK - 1)
    assert not bags and "torch" not in sys.modules
    np.testing.assert_array_equal(product(np.ones((4, 2), np.float32)), np.ones((4, 2)))


def test_repeated_spmm_refuses_features_of_another_graph():
    P = sp.identity(4, dtype=np.float32, format="csr")
    with pytest.raises(ValueError, match="operator by 3 rows"):
        _spmm.repeated_spmm(P, np.ones((3, 2)), 1)


@pytest.mark.parametrize("make", STEPS)
@pytest.mark.parametrize("bad", [{"dtype": "float16"}, {"dtype": np.float64}, {"n_jobs": 0},
                                 {"n_jobs": -2}, {"n_jobs": 1.5}])
def test_bad_dtype_and_n_jobs(make, bad):
    with pytest.raises((ValueError, TypeError)):
        make(**bad).fit_transform(_graph())


def test_n_threads():
    assert _spmm.n_threads(3) == 3
    assert _spmm.n_threads(None) == _spmm.n_threads(-1) >= 1


def test_ppr_cpu_cg_matches_torch_backend_float64():
    # the fused scipy CG (rows in RCM order) against the generic torch CG
    G = _graph(d=7)
    kw = dict(alpha=0.1, r=0.3, tol=1e-10, dtype="float64", device="cpu")
    Zs = PPRPropagation(backend="scipy", **kw).fit_transform(G).features
    Zt = PPRPropagation(backend="torch", **kw).fit_transform(G).features
    np.testing.assert_allclose(Zs, Zt, rtol=1e-8, atol=1e-10)


def test_ppr_default_tol_error_and_product_count():
    G = _graph(d=5)
    exact = PPRPropagation(tol=1e-12, dtype="float64").fit_transform(G).features
    loose = PPRPropagation(dtype="float64")
    Z = loose.fit_transform(G).features
    col_err = np.linalg.norm(Z - exact, axis=0) / np.linalg.norm(exact, axis=0)
    assert col_err.max() <= 1e-3            # tol=1e-3 bounds each column's relative error
    tight = PPRPropagation(tol=1e-6, dtype="float64")
    tight.fit_transform(G)
    assert 0 < loose._run_info["products"] < tight._run_info["products"]


def test_cg_kernel_pieces():
    rng = np.random.default_rng(1)
    M = sp.random(40, 40, density=0.1, format="csr", random_state=1) * -0.5
    P = rng.normal(size=(40, 3))
    Q = P.copy()
    _spmm_acc(M, P, Q)
    np.testing.assert_allclose(Q, P + M @ P, rtol=1e-12)
    S = (M + M.T) / 4.0
    F = rng.normal(size=(40, 3))
    W, ok, its = _cg_cpu(sp.csr_matrix(S), F.copy(), 0.3, 1e-12, 200)
    np.testing.assert_allclose((np.eye(40) + S.toarray()) @ W, F, atol=1e-9)
    assert ok and 0 < its <= 41
    W, ok, its = _cg_cpu(sp.csr_matrix(S), F.copy(), 0.3, 1e-12, 1)
    assert not ok and its == 1
    W, ok, its = _cg_cpu(sp.csr_matrix(S), F.copy(), 1.0, 1e-12, 5)
    np.testing.assert_array_equal(W, F)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_power_kernel_stops_as_the_exact_rule_without_a_norm_of_z_per_step(dtype,
                                                                           monkeypatch):
    # ||Z|| is only computed once a bound on it would let the series stop: the same
    # stopping step and output as checking ||H|| (1 - a) <= tol a ||Z|| at every step
    rng = np.random.default_rng(2)
    M = sp.random(80, 80, density=0.08, format="csr", random_state=2, dtype=dtype)
    T = sp.csr_matrix(M / np.maximum(abs(M).sum(axis=1), 1e-9), dtype=dtype)
    F = rng.normal(size=(80, 4)).astype(dtype)
    a, tol = 0.1, 1e-4
    Z, H, want = F.copy(), F.copy(), None
    for it in range(500):   # the rule as written in PPRPropagation._power
        H = (T * dtype(1 - a)) @ H
        Z += H
        if np.linalg.norm(H) * (1 - a) <= tol * a * np.linalg.norm(Z):
            want = it + 1
            break
    norms = []
    real = np.linalg.norm
    monkeypatch.setattr(np.linalg, "norm", lambda x, *k: norms.append(1) or real(x, *k))
    W, ok, its = _power_cpu(sp.csr_matrix(T * dtype(1 - a)), F.copy(), a, tol, 500)
    assert ok and its == want > 10
    assert len(norms) < 1.5 * its   # (twice per step before)
    if dtype == np.float64:   # float32 multiplies on torch's kernel: float32 rounding
        np.testing.assert_array_equal(W, Z)
    np.testing.assert_allclose(W, Z, rtol=1e-5, atol=1e-5 * np.abs(Z).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chebyshev_kernel_matches_a_dense_solve(dtype):
    # the in-place recurrence (signs alternating between the -2S and 2S operators)
    rng = np.random.default_rng(2)
    M = sp.random(50, 50, density=0.1, format="csr", random_state=2)
    S = sp.csr_matrix((M + M.T) / 2, dtype=dtype)
    S = S / abs(sp.linalg.eigsh(S.astype(float), k=1, which="LM")[0][0])  # spectrum in [-1, 1]
    S = sp.csr_matrix(S, dtype=dtype)
    F = rng.normal(size=(50, 4)).astype(dtype)
    exact = np.linalg.solve(np.eye(50) - 0.8 * S.toarray().astype(float), F.astype(float))
    W, ok, its = _chebyshev_runner(S)(None, F.copy(), 0.2, 1e-6, 1000)
    assert ok and its == len(chebyshev_coefficients(0.2, 1e-6, 1000)[0]) - 1
    assert W.dtype == dtype
    rel = np.linalg.norm(W - exact, axis=0) / np.linalg.norm(exact, axis=0)
    assert rel.max() <= (1e-6 if dtype == np.float64 else 1e-5)
    W, ok, its = _chebyshev_runner(S)(None, F.copy(), 0.2, 1e-6, 3)
    assert not ok and its == 3


def test_ppr_auto_backend_follows_the_device(monkeypatch):
    # CPU-only machines: "auto" runs the scipy path; with a (claimed) GPU it picks torch.
    import torch
    assert PPRPropagation(device="cpu")._use_torch() is False
    assert PPRPropagation(backend="torch", device="cpu")._use_torch() is True
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert PPRPropagation()._use_torch() is True
    assert PPRPropagation(backend="scipy")._use_torch() is False


def test_ppr_scipy_backend_with_the_automatic_device_on_a_gpu_machine(monkeypatch, small_graph):
    # device=None means "auto" (as for the models): with a GPU present, backend="scipy"
    # runs on the CPU instead of refusing; a named GPU device is still refused.
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    A, X, _ = small_graph
    G = GraphData(X, A)
    ref = PPRPropagation(backend="scipy", device="cpu").fit_transform(G).features
    for device in ("auto", None):
        Z = PPRPropagation(backend="scipy", device=device).fit_transform(G).features
        np.testing.assert_array_equal(Z, ref)
    with pytest.raises(ValueError, match="backend='scipy' runs on the CPU"):
        PPRPropagation(backend="scipy", device="cuda").fit(G)


@pytest.mark.parametrize("layout", ["C", "F", "read-only"])
def test_repeated_spmm_float32_blocks_read_any_layout(layout, monkeypatch):
    # the bag path gathers each block into a buffer of its thread: strided (Fortran-order)
    # and read-only features give the same output as a C-ordered writable copy
    monkeypatch.setattr(_spmm, "_PARALLEL_MIN_WORK", 0)
    G = _graph(d=75)
    P = (sp.csr_matrix(G.adjacency, dtype=np.float64) / 8.0).astype(np.float32)
    X = np.asarray(G.features, dtype=np.float32)
    want = _spmm.repeated_spmm(P, X.copy(), 2, 1)
    Y = np.asfortranarray(X) if layout == "F" else X.copy()
    if layout == "read-only":
        Y.flags.writeable = False
    for n_jobs in (1, 2):
        np.testing.assert_array_equal(_spmm.repeated_spmm(P, Y, 2, n_jobs), want)
    np.testing.assert_array_equal(Y, X)   # the input is left as it was


@pytest.mark.parametrize("max_iter", [0, 1, 2, 1000])
def test_chebyshev_float32_solve_follows_float64(max_iter):
    # float32 runs its own recurrence (bare products, then two passes): it matches the
    # float64 solve to float32 rounding, down to the shortest series (K = 0, 1, 2)
    rng = np.random.default_rng(3)
    M = sp.random(60, 60, density=0.1, format="csr", random_state=3)
    S = (M + M.T) / 2
    S = sp.csr_matrix(S / abs(sp.linalg.eigsh(S, k=1, which="LM")[0][0]))
    F = rng.normal(size=(60, 5))
    W64, ok64, its64 = _chebyshev_runner(S)(None, F.copy(), 0.3, 1e-6, max(max_iter, 1))
    W32, ok32, its32 = _chebyshev_runner(sp.csr_matrix(S, dtype=np.float32))(
        None, F.astype(np.float32), 0.3, 1e-6, max(max_iter, 1))
    assert W32.dtype == np.float32 and (ok32, its32) == (ok64, its64)
    np.testing.assert_allclose(W32, W64, rtol=1e-5, atol=1e-5 * np.abs(W64).max())
    if max_iter == 0:   # alpha = 1: no product, the features scaled
        W, ok, its = _chebyshev_runner(sp.csr_matrix(S, dtype=np.float32))(
            None, F.astype(np.float32), 1.0, 1e-6, 5)
        assert its == 0 and ok
        np.testing.assert_array_equal(W, F.astype(np.float32))


@pytest.mark.parametrize("density", [0.03, 0.5])
def test_chebyshev_float32_adds_sparse_features_through_their_non_zeros(density, monkeypatch):
    # a block of features with few non-zeros (HDS reports) is added to each term of the
    # recurrence through them, not by a pass over the block: the same solve
    import torch
    rng = np.random.default_rng(5)
    M = sp.random(200, 200, density=0.05, format="csr", random_state=5)
    S = (M + M.T) / 2
    S = sp.csr_matrix(S / abs(sp.linalg.eigsh(S, k=1, which="LM")[0][0]))
    F = np.where(rng.random((200, 8)) < density, rng.normal(size=(200, 8)), 0.0)
    scattered = []
    real = torch.Tensor.index_add_
    monkeypatch.setattr(torch.Tensor, "index_add_",
                        lambda self, *a, **k: scattered.append(1) or real(self, *a, **k))
    W64, _, its = _chebyshev_runner(S)(None, F.copy(), 0.1, 1e-6, 1000)
    W32, _, its32 = _chebyshev_runner(sp.csr_matrix(S, dtype=np.float32))(
        None, F.astype(np.float32), 0.1, 1e-6, 1000)
    assert its32 == its > 1
    assert len(scattered) == (its if density < 1 / 16 else 0)   # once per product
    np.testing.assert_allclose(W32, W64, rtol=1e-5, atol=1e-5 * np.abs(W64).max())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ppr_sparse_and_dense_features_give_the_same_output(dtype):
    # sparse features are scaled entry by entry, dense ones block by block: same values
    G = _graph(d=40)
    X = np.where(np.random.default_rng(4).random(G.features.shape) < 0.1, G.features, 0.0)
    A = G.adjacency
    Zs = PPRPropagation(dtype=dtype, n_jobs=2).fit_transform(GraphData(sp.csr_matrix(X), A))
    Zd = PPRPropagation(dtype=dtype, n_jobs=1).fit_transform(GraphData(X, A))
    np.testing.assert_array_equal(np.asarray(Zs.features), np.asarray(Zd.features))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("solver, directed", [("power", True), ("power", False),
                                              ("chebyshev", False), ("cg", False)])
def test_ppr_output_does_not_depend_on_threads_with_uneven_columns(solver, directed, dtype):
    # the CPU path narrowed its column blocks to give every thread one (60 columns: one
    # block of 60 on one thread, two of 30 on two): the power series' stopping rule is
    # per block, and float32 Chebyshev adds a block's features through its non-zeros
    # when the block is sparse, so a column's output depended on its neighbours in the
    # block, and so on n_jobs (None: the CPUs of the machine)
    G = _graph(d=60)
    rng = np.random.default_rng(1)
    X = G.features * np.exp(3 * rng.normal(size=60))          # columns of other scales
    X[:, :40][rng.random((X.shape[0], 40)) < 0.99] = 0.0      # sparse columns first
    A = G.adjacency
    if directed:   # each stored entry kept with probability 1/2: a directed graph
        A = sp.csr_matrix(A.multiply(rng.random(A.shape) < 0.5))
    outs = [PPRPropagation(alpha=0.1, solver=solver, dtype=dtype, n_jobs=jobs)
            .fit_transform(GraphData(X, A)).features for jobs in (1, 2, 3)]
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])
