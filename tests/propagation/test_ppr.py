"""Tests of the PPR propagation of PrivGE (paper 002, eq. (12))."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.mechanisms import HDSMechanism
from skldp.propagation import PPRPropagation
from skldp.propagation._ppr import _ppr_operator, chebyshev_coefficients


def _direct(A, X, alpha, r, self_loops=False):
    """Solve (I - (1 - alpha) T) Z = alpha X with T = D^(r-1) A D^(-r), independently."""
    A = np.asarray(A.todense() if sp.issparse(A) else A, dtype=float)
    n = A.shape[0]
    if self_loops:
        A = A + np.eye(n)
    deg = A.sum(axis=1)
    A = A + np.diag(deg == 0)
    deg = np.where(deg == 0, 1.0, deg)
    T = np.diag(deg ** (r - 1)) @ A @ np.diag(deg ** (-r))
    X = X.toarray() if sp.issparse(X) else X
    return np.linalg.solve(np.eye(n) - (1 - alpha) * T, alpha * X)


def _series(A, X, alpha, r, L=400):
    A = np.asarray(A.todense(), dtype=float)
    deg = A.sum(axis=1)
    T = np.diag(deg ** (r - 1)) @ A @ np.diag(deg ** (-r))
    Z, H = alpha * X, alpha * X
    for _ in range(L):
        H = (1 - alpha) * T @ H
        Z = Z + H
    return Z


@pytest.mark.parametrize("solver", ["chebyshev", "cg", "power"])
@pytest.mark.parametrize("backend", ["scipy", "torch"])
@pytest.mark.parametrize("sparse_x", [False, True])
@pytest.mark.parametrize("alpha,r", [(0.1, 0.5), (0.3, 0.0), (0.05, 1.0), (0.2, 0.3)])
def test_matches_direct_solve(small_graph, solver, backend, sparse_x, alpha, r):
    A, X, _ = small_graph
    Xin = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0)) if sparse_x else X
    G = GraphData(Xin, A)
    ppr = PPRPropagation(alpha=alpha, r=r, tol=1e-12, dtype="float64", backend=backend,
                         solver=solver, device="cpu")
    Z = ppr.fit(G).transform(G)
    assert isinstance(Z, GraphData) and not sp.issparse(Z.features)
    assert Z.features.dtype == np.float64
    expected = _direct(A, Xin, alpha, r)
    np.testing.assert_allclose(Z.features, expected, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("solver", ["chebyshev", "cg", "power"])
def test_torch_backend_on_the_cpu_multiplies_with_embedding_bags(solver, monkeypatch):
    # torch.sparse.mm's CPU kernel is 2-3x slower than the embedding-bag product
    import torch
    rng = np.random.default_rng(0)
    A = sp.random(300, 300, density=0.05, random_state=0)
    A = sp.csr_matrix(((A + A.T) > 0).astype(float))
    X = rng.random((300, 20))
    bags = []
    real_bag = torch.embedding_bag
    monkeypatch.setattr(torch, "embedding_bag", lambda *a: bags.append(1) or real_bag(*a))
    ppr = PPRPropagation(solver=solver, backend="torch", device="cpu", tol=1e-6)
    Z = ppr.fit_transform(GraphData(X, A)).features
    assert len(bags) == ppr._run_info["products"] > 0
    ref = PPRPropagation(solver=solver, backend="scipy", tol=1e-6).fit_transform(GraphData(X, A))
    np.testing.assert_allclose(Z, ref.features, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("solver", ["chebyshev", "power"])
@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cpu_chebyshev_multiplies_with_embedding_bags_in_float32(dtype, n_jobs, solver,
                                                                  monkeypatch):
    # the CPU path's default solves (power: directed graphs): torch's kernel is 2-3x
    # scipy's in float32, not in float64
    import torch
    rng = np.random.default_rng(0)
    A = sp.random(300, 300, density=0.05, random_state=0)
    A = sp.csr_matrix(((A + A.T) > 0).astype(float))
    X = rng.random((300, 20))
    bags, threads = [], torch.get_num_threads()
    real_bag = torch.embedding_bag

    def spy(*a):
        bags.append(torch.get_num_threads())   # one torch thread in each block's thread
        return real_bag(*a)

    monkeypatch.setattr(torch, "embedding_bag", spy)
    ppr = PPRPropagation(dtype=dtype, tol=1e-6, n_jobs=n_jobs, device="cpu", solver=solver)
    Z = ppr.fit_transform(GraphData(X, A)).features
    assert ppr._run_info["products"] > 0
    assert bags == ([1] * ppr._run_info["products"] if dtype == "float32" else [])
    assert torch.get_num_threads() == threads
    np.testing.assert_allclose(Z, _direct(A, X, 0.1, 0.5), rtol=1e-5, atol=1e-6)
    # each row of a column block is written as whole cache lines
    assert Z.ctypes.data % 64 == 0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cpu_blocks_are_narrow_for_the_embedding_bag_kernel(dtype):
    # torch's kernel is fastest on narrow blocks (Facebook: 1.3x at 32 columns against
    # 128); scipy's, in float64, on wide ones
    from skldp.propagation import _ppr
    A = sp.random(200, 200, density=0.05, random_state=0)
    A = sp.csr_matrix(((A + A.T) > 0).astype(float))
    X = np.random.default_rng(0).random((200, 150))
    ppr = PPRPropagation(dtype=dtype, tol=1e-6, n_jobs=1, device="cpu")
    Z = ppr.fit_transform(GraphData(X, A)).features
    want = _ppr._BAG_COLUMNS if dtype == "float32" else _ppr._CPU_BLOCK_COLUMNS
    assert ppr._run_info["block_columns"] == want
    np.testing.assert_allclose(Z, _direct(A, X, 0.1, 0.5), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("sparse_x", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_column_blocks_fill_every_column(small_graph, monkeypatch, dtype, sparse_x):
    # blocks narrower than the features: each solve lands in a strided slice of the output
    # (sparse features: their entries sent once, each block densified on the device)
    from skldp.propagation import _ppr
    A, X, _ = small_graph
    if sparse_x:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0))
    G = GraphData(X, A)
    whole = PPRPropagation(tol=1e-10, dtype=dtype, backend="torch", device="cpu").fit_transform(G)
    n, d = X.shape
    monkeypatch.setattr(_ppr, "_BLOCK_ELEMENTS", 2 * n)   # blocks of 2 columns
    widths = []
    get_block = _ppr._TorchOps.get_block
    monkeypatch.setattr(_ppr._TorchOps, "get_block",
                        lambda self, W, out, *rest: widths.append(out.shape[1])
                        or get_block(self, W, out, *rest))
    blocks = PPRPropagation(tol=1e-10, dtype=dtype, backend="torch",
                            device="cpu").fit_transform(GraphData(X, A))
    assert widths[0] == 2 < d and sum(widths) == d
    assert blocks.features.dtype == np.dtype(dtype)
    np.testing.assert_allclose(blocks.features, whole.features, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(blocks.features, _direct(A, X, 0.1, 0.5), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("canonical", [True, False])
def test_sparse_feature_blocks_densify_as_toarray(canonical):
    # entries stored twice add up (as toarray()); canonical entries are scattered as they are
    import torch

    from skldp.propagation._ppr import _DeviceEntries
    indices = [0, 1, 2, 1, 3] if canonical else [2, 0, 2, 1, 3]   # row 0: column 2 twice
    X = sp.csr_matrix((np.arange(1.0, 6.0), indices, [0, 3, 3, 4, 5]), shape=(4, 4))
    assert X.has_canonical_format == canonical
    entries = _DeviceEntries(X, torch.device("cpu"))
    assert entries.canonical == canonical
    np.testing.assert_array_equal(entries[:, 0:4].dense().numpy(), X.toarray())
    np.testing.assert_array_equal(entries[:, 1:3].dense().numpy(), X.toarray()[:, 1:3])
    # scaled by row in float64 and rounded once to float32, as the dense block would be
    left = torch.tensor([[1 / 3], [0.7], [np.pi], [1e-3]], dtype=torch.float64)
    expect = (X.toarray() * left.numpy()).astype(np.float32)
    for cols in (slice(0, 4), slice(1, 3)):
        F = entries[:, cols].dense(left, torch.float32)
        assert F.dtype == torch.float32
        np.testing.assert_array_equal(F.numpy(), expect[:, cols])


def _torch_ppr():
    """The torch backend on the CPU, solved tightly (the card's paths are forced on it)."""
    return PPRPropagation(tol=1e-10, backend="torch", device="cpu")


@pytest.mark.parametrize("blocks", [False, True])
def test_output_pages_mapped_during_the_solve_are_all_overwritten(small_graph, monkeypatch,
                                                                  blocks):
    # the CUDA path maps the output's pages (zeros) while the card solves, and brings
    # blocks of columns back through one buffer: every value must come from the solve
    from skldp.propagation import _ppr
    A, X, _ = small_graph
    want = _torch_ppr().fit_transform(GraphData(X, A)).features
    monkeypatch.setattr(_ppr, "_TOUCH_ON", ("cpu",))
    touched = []
    touch = _ppr._touch_pages
    monkeypatch.setattr(_ppr, "_touch_pages", lambda Z: touched.append(Z.shape) or touch(Z))
    if blocks:
        monkeypatch.setattr(_ppr, "_BLOCK_ELEMENTS", 2 * X.shape[0])
    got = _torch_ppr().fit_transform(GraphData(X, A)).features
    # blocks come back through one contiguous buffer of a block's size, mapped too
    assert touched == ([X.shape, (2 * X.shape[0],)] if blocks else [X.shape])
    np.testing.assert_array_equal(got, want)
    Z = np.full((3, 2048), 7.0, np.float32)      # one zero per 4 KiB page
    _ppr._touch_pages(Z)
    assert (Z == 0).sum() == 3 * 2048 // 1024 and Z[0, 0] == 0 and Z[0, 1] == 7


def test_cuda_blocks_are_as_few_and_as_even_as_the_memory_budget_allows():
    # the block width on a card (memory stubbed: no card here): each block reads the whole
    # adjacency per product, so 128 columns go in the fewest blocks the budget allows
    from types import SimpleNamespace

    from skldp.propagation import _ppr
    ops = _ppr._TorchOps.__new__(_ppr._TorchOps)
    ops.device, ops.dtype = SimpleNamespace(type="cuda"), np.dtype(np.float32)
    free = 140 << 30
    ops.torch = SimpleNamespace(cuda=SimpleNamespace(mem_get_info=lambda dev: (free, free)))
    n = 10_000_000      # 40 MB a column: 8 GiB hold 42 columns of Chebyshev's 5 live blocks
    assert ops.block_columns(n, 128, "chebyshev") == 32                    # 4 blocks, not 3 + 2
    assert ops.block_columns(n, 128, "cg") == 26                           # 8 live: 5 blocks
    assert ops.block_columns(1000, 128, "chebyshev") == 128                # one block
    free = 4 * 5 * 4 * n * 3                                                 # a quarter: 3 columns
    assert ops.block_columns(n, 10, "chebyshev") == 3 and ops.block_columns(n, 2, "cg") == 1


def test_the_cards_fused_series_writes_each_term_over_the_older_one(small_graph):
    # the accelerator's branch (its device type stubbed: no card here) on the host's
    # tensors: ``2 S T_j - T_(j-1)`` written over ``T_(j-1)``, no new block per term
    from types import SimpleNamespace

    import torch

    from skldp.propagation import _ppr
    A, X, _ = small_graph
    S = sp.csr_matrix(A, dtype=np.float64) / 4.0
    ops = _ppr._TorchOps(S, np.float64, torch.device("cpu"))
    H, prev = torch.rand(60, 3, dtype=torch.float64), torch.rand(60, 3, dtype=torch.float64)
    expected = 2 * torch.from_numpy(S.toarray()) @ H - prev
    host = ops.spmm_twice_minus(H, prev.clone())
    ops.device = SimpleNamespace(type="cuda")
    got = ops.spmm_twice_minus(H, prev)
    assert got.data_ptr() == prev.data_ptr() and ops._fused
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(host, expected)
    # the whole series through that branch is the host's
    ppr = PPRPropagation(alpha=0.1, tol=1e-8)
    F = torch.from_numpy(np.asarray(X, np.float64))
    W, ok, products = ppr._chebyshev(ops, F.clone())
    ops.device = torch.device("cpu")
    W_host, _, _ = ppr._chebyshev(ops, F.clone())
    assert ok and products > 2
    torch.testing.assert_close(W, W_host)


def test_direct_solve_equals_series_of_eq_12(small_graph):
    # guards the reference itself: eq. (12) as a truncated series
    A, X, _ = small_graph
    np.testing.assert_allclose(_direct(A, X, 0.15, 0.5), _series(A, X, 0.15, 0.5),
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("solver", ["chebyshev", "cg", "power"])
@pytest.mark.parametrize("backend", ["scipy", "torch"])
def test_float32_default_close_to_exact(small_graph, backend, solver):
    A, X, _ = small_graph
    G = GraphData(X, A)
    Z = PPRPropagation(backend=backend, solver=solver, device="cpu",
                       tol=1e-6).fit_transform(G).features
    assert Z.dtype == np.float32
    exp = _direct(A, X, 0.1, 0.5)
    # tol=1e-6 bounds the estimated relative truncation error; float32 rounding on top
    assert np.linalg.norm(Z - exp) <= 1e-5 * np.linalg.norm(exp)
    # the default tol=1e-3 bounds the relative error of each column by 1e-3
    Zd = PPRPropagation(backend=backend, solver=solver, device="cpu").fit_transform(G).features
    assert np.linalg.norm(Zd - exp) <= 1e-3 * np.linalg.norm(exp)
    assert not np.array_equal(Zd, Z)


def test_r_zero_preserves_constants_and_r_one_preserves_column_sums(small_graph):
    A, X, _ = small_graph
    G = GraphData(np.ones((60, 2)), A)
    Z0 = PPRPropagation(r=0.0, tol=1e-12, dtype="float64").fit_transform(G).features
    np.testing.assert_allclose(Z0, 1.0, rtol=1e-10)   # D^-1 A is row stochastic
    G = GraphData(X, A)
    Z1 = PPRPropagation(r=1.0, tol=1e-12, dtype="float64").fit_transform(G).features
    np.testing.assert_allclose(Z1.sum(axis=0), X.sum(axis=0), rtol=1e-9)  # A D^-1 column st.


def test_isolated_nodes_keep_their_features(small_graph):
    A, X, _ = small_graph
    A = sp.lil_matrix(A)
    A[5, :] = 0
    A[:, 5] = 0
    A[17, :] = 0
    A[:, 17] = 0
    G = GraphData(X, sp.csr_matrix(A))
    for backend, solver in [("scipy", "cg"), ("torch", "cg"), ("scipy", "power"),
                            ("torch", "power"), ("scipy", "chebyshev"), ("torch", "chebyshev")]:
        Z = PPRPropagation(tol=1e-12, dtype="float64", backend=backend, solver=solver,
                           device="cpu").fit_transform(G).features
        assert np.all(np.isfinite(Z))
        np.testing.assert_allclose(Z[[5, 17]], X[[5, 17]], rtol=1e-10)
        np.testing.assert_allclose(Z, _direct(A, X, 0.1, 0.5), rtol=1e-8, atol=1e-10)


def test_add_self_loops(small_graph):
    A, X, _ = small_graph
    G = GraphData(X, A)
    Z = PPRPropagation(add_self_loops=True, tol=1e-12, dtype="float64").fit_transform(G)
    np.testing.assert_allclose(Z.features, _direct(A, X, 0.1, 0.5, self_loops=True),
                               rtol=1e-8, atol=1e-10)
    Z_plain = PPRPropagation(tol=1e-12, dtype="float64").fit_transform(G).features
    assert not np.allclose(Z.features, Z_plain)


def test_transition_matrix(small_graph):
    A, _, _ = small_graph
    T, _, _ = _ppr_operator(A, sym=False, r=0.5, add_self_loops=False, dtype=np.float64)
    Ad = A.toarray()
    d = Ad.sum(1)
    np.testing.assert_allclose(T.toarray(), Ad / np.sqrt(np.outer(d, d)))


def test_rows_of_the_view_and_memo(small_graph):
    A, X, _ = small_graph
    G = GraphData(X, A)
    ppr = PPRPropagation(dtype="float64", tol=1e-10).fit(G[:10])
    calls = []
    orig = PPRPropagation._transform_graph

    def counting(self, Gf):
        calls.append(1)
        return orig(self, Gf)

    PPRPropagation._transform_graph = counting
    try:
        Z1 = ppr.transform(G[[3, 7, 1]])
        Z2 = ppr.transform(G[[40, 3]])
        Z3 = pickle.loads(pickle.dumps(ppr)).transform(G[[1]])  # same params -> same memo key
    finally:
        PPRPropagation._transform_graph = orig
    assert len(calls) == 1
    assert Z1.features is Z2.features is Z3.features
    np.testing.assert_allclose(np.asarray(Z1), Z1.features[[3, 7, 1]])
    np.testing.assert_allclose(np.asarray(Z2)[1], np.asarray(Z1)[0])
    # other parameters -> recomputed, different result
    Z4 = PPRPropagation(alpha=0.5, dtype="float64").fit(G).transform(G)
    assert Z4.features is not Z1.features
    assert not np.allclose(Z4.features, Z1.features)


def test_errors(small_graph):
    A, X, _ = small_graph
    with pytest.raises(ValueError, match="adjacency"):
        PPRPropagation().fit(GraphData(X))
    ppr = PPRPropagation().fit(GraphData(X, A))
    with pytest.raises(ValueError, match="adjacency"):
        ppr.transform(GraphData(X))
    with pytest.raises(TypeError, match="GraphData"):
        PPRPropagation().fit(X)
    with pytest.raises(TypeError, match="GraphData"):
        ppr.transform(X)
    with pytest.raises(ValueError, match="features"):
        ppr.transform(GraphData(X[:, :3], A))


@pytest.mark.parametrize("params,err", [
    ({"alpha": 0.0}, ValueError), ({"alpha": 1.5}, ValueError), ({"alpha": np.nan}, TypeError),
    ({"r": -0.1}, ValueError), ({"r": 2}, ValueError), ({"tol": 0}, ValueError),
    ({"max_iter": 0}, ValueError), ({"max_iter": 2.5}, ValueError),
    ({"dtype": "int8"}, ValueError), ({"solver": "push"}, ValueError),
    ({"backend": "cupy"}, ValueError),
    ({"backend": "scipy", "device": "cuda"}, ValueError)])
def test_bad_params(small_graph, params, err):
    A, X, _ = small_graph
    with pytest.raises(err):
        PPRPropagation(**params).fit(GraphData(X, A))


def test_alpha_one_is_identity_and_max_iter_warns(small_graph):
    A, X, _ = small_graph
    G = GraphData(X, A)
    np.testing.assert_allclose(PPRPropagation(alpha=1.0).fit_transform(G).features, X,
                               rtol=1e-6)
    for solver in ("chebyshev", "cg", "power"):
        with pytest.warns(ConvergenceWarning, match="max_iter"):
            PPRPropagation(max_iter=3, solver=solver).fit_transform(G)


@pytest.mark.filterwarnings("ignore:PPRPropagation. every edge:UserWarning")
def test_directed_graph_uses_power_iteration(small_graph):
    A, X, _ = small_graph
    Ad = sp.csr_matrix(sp.triu(A, format="csr") + sp.eye(60) * 0)  # directed, some sinks
    G = GraphData(X, Ad)
    Z = PPRPropagation(tol=1e-12, dtype="float64").fit_transform(G).features
    np.testing.assert_allclose(Z, _direct(Ad, X, 0.1, 0.5), rtol=1e-7, atol=1e-9)
    for solver in ("cg", "chebyshev"):
        with pytest.raises(ValueError, match="symmetric"):
            PPRPropagation(solver=solver).fit_transform(G)


@pytest.mark.parametrize("backend", ["scipy", "torch"])
def test_cg_and_chebyshev_need_fewer_products_than_power(small_graph, backend):
    A, X, _ = small_graph
    counts = {}
    for solver in ("chebyshev", "cg", "power"):
        ppr = PPRPropagation(solver=solver, tol=1e-8, dtype="float64", backend=backend,
                             device="cpu", n_jobs=1)
        ppr.fit_transform(GraphData(X, A))
        counts[solver] = ppr._run_info["products"]
    assert 0 < counts["cg"] * 2 < counts["power"], counts
    assert 0 < counts["chebyshev"] * 2 < counts["power"], counts
    # the Chebyshev solver does the number of products its coefficients say, per block
    assert counts["chebyshev"] == len(chebyshev_coefficients(0.1, 1e-8, 1000)[0]) - 1


def test_auto_solver_is_chebyshev_on_a_symmetric_graph(small_graph):
    A, X, _ = small_graph
    G = GraphData(X, A)
    auto = PPRPropagation(dtype="float64").fit_transform(G).features
    cheb = PPRPropagation(dtype="float64", solver="chebyshev").fit_transform(G).features
    cg = PPRPropagation(dtype="float64", solver="cg").fit_transform(G).features
    np.testing.assert_array_equal(auto, cheb)
    assert not np.array_equal(auto, cg)


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1, 0.5, 0.9])
@pytest.mark.parametrize("tol", [1e-2, 1e-3, 1e-6])
def test_chebyshev_coefficients_bound_the_relative_error_on_the_whole_interval(alpha, tol):
    gamma, ok = chebyshev_coefficients(alpha, tol, 1000)
    assert ok
    x = np.cos(np.linspace(0, np.pi, 20001))
    f = 1.0 / (1.0 - (1.0 - alpha) * x)
    T = np.polynomial.chebyshev.chebvander(x, len(gamma) - 1)
    rel = np.abs(T @ gamma - f) / f
    assert rel.max() <= tol * (1 + 1e-9)
    if len(gamma) > 1:   # and is the fewest terms that do: one term less misses tol
        rel_shorter = np.abs(T[:, :-1] @ gamma[:-1] - f) / f
        assert rel_shorter.max() > tol
    short, ok = chebyshev_coefficients(alpha, tol, 2)
    assert len(short) == min(3, len(gamma)) and ok == (len(gamma) <= 3)


@pytest.mark.parametrize("backend", ["scipy", "torch"])
def test_chebyshev_error_reaches_its_bound_on_a_bipartite_graph(backend):
    # an even cycle is bipartite: S has the eigenvalue -1, where the series' relative
    # error is largest, so tol is attained there and must not be exceeded
    n = 40
    i = np.arange(n)
    A = sp.csr_matrix((np.ones(2 * n), (np.r_[i, (i + 1) % n], np.r_[(i + 1) % n, i])),
                      shape=(n, n))
    X = np.c_[(-1.0) ** i, np.random.default_rng(0).normal(size=n)]   # eigenvector at -1
    exact = _direct(A, X, 0.1, 0.5)
    for tol in (1e-2, 1e-3):
        Z = PPRPropagation(tol=tol, dtype="float64", solver="chebyshev", backend=backend,
                           device="cpu").fit_transform(GraphData(X, A)).features
        rel = np.linalg.norm(Z - exact, axis=0) / np.linalg.norm(exact, axis=0)
        assert rel.max() <= tol
        assert rel[0] > tol / 2    # the bound is tight, not loose by a margin


def test_pipeline_hds_then_ppr(small_graph):
    A, X, y = small_graph
    G = GraphData(sp.csr_matrix(X), A, node_ids=np.arange(60) * 7)
    pipe = Pipeline([("hds", HDSMechanism(eps=1.0, k=2, feature_range=(-1, 2),
                                          random_state=0)),
                     ("ppr", PPRPropagation(dtype="float64", tol=1e-10))])
    Ztr = pipe.fit(G[:30]).transform(G[:30])
    Zte = pipe.transform(G[30:])
    Zall = pipe.transform(G)
    np.testing.assert_allclose(np.asarray(Zte), np.asarray(Zall)[30:])
    np.testing.assert_allclose(np.asarray(Ztr), np.asarray(Zall)[:30])
    # PPR of the reports equals a direct solve on the reports
    R = pipe.named_steps["hds"].transform(G).features
    np.testing.assert_allclose(np.asarray(Zall), _direct(A, R, 0.1, 0.5), rtol=1e-5,
                               atol=1e-7)


def test_non_finite_features_are_refused(small_graph):
    A, X, _ = small_graph
    X = X.copy()
    X[7, 3] = np.nan
    G = GraphData(X, A)
    with pytest.raises(ValueError, match=r"PPRPropagation contain NaN or infinite values "
                                         r"\(first at row 7, column 3\)"):
        PPRPropagation().fit(G)
    ppr = PPRPropagation().fit(GraphData(np.zeros_like(X), A))
    with pytest.raises(ValueError, match="NaN or infinite"):
        ppr.transform(G[[0]])
    # sparse features: NaN stored in the CSR data
    Xs = sp.csr_matrix(np.where(np.isnan(X), np.nan, 0.0))
    with pytest.raises(ValueError, match="NaN or infinite"):
        PPRPropagation().fit(GraphData(Xs, A))


def test_operator_built_once_per_graph_and_input_untouched(small_graph, monkeypatch):
    """Reports of several collections on one graph share the normalised operator
    (and its copy on the torch device); the caller's features are never written."""
    from skldp.propagation import _ppr
    A, X, _ = small_graph
    calls = []
    real = _ppr._ppr_operator
    monkeypatch.setattr(_ppr, "_ppr_operator", lambda *a: calls.append(a) or real(*a))
    G = GraphData(X, A)
    for backend in ("scipy", "torch"):
        for scale in (1.0, 2.0):   # e.g. two mechanisms' reports: new features, same graph
            Xs = X * scale
            before = Xs.copy()
            Z = PPRPropagation(backend=backend, device="cpu", dtype="float64",
                               tol=1e-10).fit_transform(G.with_features(Xs))
            np.testing.assert_array_equal(Xs, before)
            np.testing.assert_allclose(Z.features, scale * _direct(A, X, 0.1, 0.5),
                                       rtol=1e-7, atol=1e-9)
    # one build per form (the CPU's ordered operator, the torch one); a fresh
    # GraphData on the same matrix shares them too
    PPRPropagation(dtype="float64").fit_transform(GraphData(X, G.adjacency))
    assert len(calls) == 2


def test_permuted_operator_equals_fancy_indexing(small_graph):
    from skldp.propagation._ppr import _permuted
    A, _, _ = small_graph
    M = sp.csr_matrix(A, dtype=np.float32)
    perm = np.random.default_rng(0).permutation(M.shape[0])
    P = _permuted(M, perm)
    R = sp.csr_matrix(M[perm][:, perm])
    R.sort_indices()
    for a, b in [(P.indptr, R.indptr), (P.indices, R.indices), (P.data, R.data)]:
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("r", [0.5, 0.1])
@pytest.mark.parametrize("solver", ["chebyshev", "power"])
def test_operator_normalised_on_the_device(small_graph, monkeypatch, r, solver):
    """On CUDA the raw adjacency goes to the device and is normalised there: the
    same operator, and the same output, as the host-built one (checked here with
    the device path forced on the CPU)."""
    import torch

    from skldp.propagation import _ppr
    from skldp.utils import _adjacency
    monkeypatch.setattr(_adjacency, "_CHUNK", 37)   # many chunks of rows
    A, X, _ = small_graph
    G = GraphData(X, A)
    sym = solver != "power"
    dev = _ppr._TorchOps.normalised_on_device(G.adjacency, sym, r, np.float64,
                                              torch.device("cpu"))
    host = _ppr._TorchOps(*_ppr._ppr_operator(G.adjacency, sym, r, False, np.float64)[:1],
                          np.float64, torch.device("cpu"),
                          *_ppr._ppr_operator(G.adjacency, sym, r, False, np.float64)[1:])
    for a, b in [(dev.M.crow_indices(), host.M.crow_indices()),
                 (dev.M.col_indices(), host.M.col_indices())]:
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_allclose(dev.M.values().numpy(), host.M.values().numpy(), rtol=1e-14)
    expected = PPRPropagation(r=r, solver=solver, backend="torch", device="cpu",
                              dtype="float64").fit_transform(G).features
    monkeypatch.setattr(_ppr, "_NORMALISE_ON", ("cuda", "cpu"))
    Z = PPRPropagation(r=r, solver=solver, backend="torch", device="cpu",
                       dtype="float64").fit_transform(GraphData(X, A))
    np.testing.assert_allclose(Z.features, expected, rtol=1e-12, atol=1e-14)
    # a node without edges needs a self loop: built on the host instead
    B = sp.lil_matrix(A)
    B[0, :] = 0
    B[:, 0] = 0
    assert _ppr._TorchOps.normalised_on_device(
        GraphData(X, B.tocsr()).adjacency, sym, r, np.float64, torch.device("cpu")) is None


@pytest.mark.parametrize("sym", [True, False])
def test_unit_weights_travel_as_indices_alone(small_graph, monkeypatch, sym):
    """A graph whose weights are all 1 sends only its indices to the device: the
    degrees are the rows' counts. The operator is bit for bit the one built from the
    values, which are not read (garbage in them changes nothing); a weighted graph
    takes the path that reads them, and PPR's output is the host path's either way."""
    import torch

    from skldp.propagation import _ppr
    A, X, _ = small_graph
    G = GraphData(X, A)
    assert G._has_unit_weights()
    cpu = torch.device("cpu")
    ref = _ppr._TorchOps.normalised_on_device(G.adjacency, sym, 0.3, np.float32, cpu)
    garbage = sp.csr_matrix((np.full(G.adjacency.nnz, np.nan, np.float32),
                             G.adjacency.indices, G.adjacency.indptr), shape=A.shape)
    unit = _ppr._TorchOps.normalised_on_device(garbage, sym, 0.3, np.float32, cpu, True)
    for a, b in [(unit.M.crow_indices(), ref.M.crow_indices()),
                 (unit.M.col_indices(), ref.M.col_indices()), (unit.M.values(), ref.M.values())]:
        assert torch.equal(a, b)
    assert (unit.left is None) == (ref.left is None) and (
        unit.left is None or torch.equal(unit.left, ref.left) and torch.equal(unit.right,
                                                                              ref.right))
    seen = []
    real = _ppr._TorchOps.normalised_on_device
    monkeypatch.setattr(_ppr._TorchOps, "normalised_on_device", staticmethod(
        lambda *a: seen.append(a[-1]) or real(*a)))
    monkeypatch.setattr(_ppr, "_NORMALISE_ON", ("cuda", "cpu"))
    W = sp.csr_matrix(A) * 2.0
    W.data[:3] = 0.5
    W = sp.csr_matrix((W + W.T) * 0.5)   # still symmetric, weights 2 and 1.25
    solver = "chebyshev" if sym else "power"
    for adjacency, is_unit in [(A, True), (W, False)]:
        want = PPRPropagation(solver=solver, r=0.3, dtype="float64").fit_transform(
            GraphData(X, adjacency))
        got = PPRPropagation(solver=solver, r=0.3, backend="torch", device="cpu",
                             dtype="float64").fit_transform(GraphData(X, adjacency))
        assert seen.pop() is is_unit
        np.testing.assert_allclose(got.features, want.features, rtol=1e-10, atol=1e-12)


def test_unit_weights_known_per_graph(small_graph):
    # from the constructor's checks, for new matrices, the graph's own and its pickle
    import pickle
    A, X, _ = small_graph
    G = GraphData(X, A)
    W = sp.csr_matrix(A) * 3.0
    assert G._has_unit_weights() and not GraphData(X, W)._has_unit_weights()
    assert not G.with_adjacency(W)._has_unit_weights()
    assert GraphData(X, W).with_adjacency(A)._has_unit_weights()
    assert GraphData(X, G.adjacency)._has_unit_weights()   # the graph's own matrix
    assert G[:10]._has_unit_weights() and not GraphData(X)._has_unit_weights()
    assert not pickle.loads(pickle.dumps(GraphData(X, W)))._has_unit_weights()
    assert pickle.loads(pickle.dumps(G))._has_unit_weights()
    assert GraphData(X, sp.csr_matrix(A.shape))._has_unit_weights()   # no edge: vacuous
    for other in (2.0, 0.5):   # one weight of another value, as the first or the last
        for k in (0, -1):
            M = sp.csr_matrix(A, dtype=np.float64, copy=True)
            M.data[k] = other
            assert not GraphData(X, M)._has_unit_weights()
            G2 = GraphData(X, M)
            G2._store.info().unit_weights = None   # found from the values instead
            assert not G2._has_unit_weights()
    E = sp.csr_matrix(A, dtype=np.float64, copy=True)
    E.data[0] = 1 + 1e-9   # 1 in float32, as the graph stores it
    assert GraphData(X, E)._has_unit_weights()


@pytest.mark.parametrize("blocks", [False, True])
def test_output_kept_on_the_device_is_the_output_brought_back(small_graph, monkeypatch,
                                                              blocks):
    # on CUDA the output stays on the card for the next step (forced here on the CPU):
    # the same values, whole or written block of columns by block, and no host copy
    import torch

    from skldp.propagation import _ppr
    A, X, _ = small_graph
    want = _torch_ppr().fit_transform(GraphData(X, A)).features
    monkeypatch.setattr(_ppr, "_KEEP_OUTPUT_ON", ("cpu",))
    if blocks:
        monkeypatch.setattr(_ppr, "_BLOCK_ELEMENTS", 2 * X.shape[0])
    ppr = _torch_ppr()
    Z = ppr.fit_transform(GraphData(X, A))
    assert min(ppr._run_info["block_columns"], X.shape[1]) == (2 if blocks else X.shape[1])
    T = Z._features_on(torch.device("cpu"))
    assert T is not None and Z._store._features is None
    assert T.dtype == torch.float32 and T.shape == X.shape
    np.testing.assert_array_equal(T.numpy(), want)
    np.testing.assert_array_equal(Z.features, want)   # the host copy, made on reading
    # the scipy backend, and torch on a device that does not keep it, give host arrays
    assert PPRPropagation(backend="scipy").fit_transform(
        GraphData(X, A))._store._on_device is None
    monkeypatch.setattr(_ppr, "_KEEP_OUTPUT_ON", ("cuda",))
    assert PPRPropagation(backend="torch", device="cpu").fit_transform(
        GraphData(X, A))._store._on_device is None


@pytest.mark.parametrize("solver,backend", [("chebyshev", "scipy"), ("cg", "scipy"),
                                            ("chebyshev", "torch"), ("cg", "torch")])
def test_another_r_on_the_same_graph_is_solved_with_its_own_scalings(solver, backend):
    # the graph's cached operator was keyed without r for the symmetric solvers, but it
    # keeps D^(1/2-r) and D^(r-1/2): a second r on a graph was off by 16-32 %
    rng = np.random.default_rng(0)
    A = sp.random(40, 40, density=0.15, random_state=1, format="csr")
    A = sp.csr_matrix(((A + A.T) > 0).astype(float))
    A.setdiag(0)
    A.eliminate_zeros()
    X = rng.random((40, 4))
    G = GraphData(X, A)
    kw = dict(alpha=0.1, tol=1e-8, solver=solver, dtype="float64", backend=backend)
    if backend == "torch":
        kw["device"] = "cpu"
    for r in (0.5, 0.0, 1.0):
        Z = PPRPropagation(r=r, **kw).fit_transform(G).features
        np.testing.assert_allclose(np.asarray(Z), _direct(A, X, 0.1, r), rtol=1e-5,
                                   atol=1e-7)


def _pulse_then_fan(length, fan):
    """A directed path ``length -> ... -> 1 -> 0 -> sink`` and ``fan`` nodes pointing to
    ``length``: a feature on node 0 travels up the path, a term of norm ``0.9^l`` at
    step ``l``, and then reaches the fan at once (``||T||_2 = sqrt(fan)``)."""
    n = length + fan + 2
    rows = [0, *range(1, length + 1), *range(length + 1, length + 1 + fan)]
    cols = [n - 1, *range(length), *[length] * fan]
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))


@pytest.mark.parametrize("r", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("backend", ["scipy", "torch"])
def test_power_series_meets_tol_where_the_operator_norm_exceeds_one(r, backend):
    # the rule ||H|| (1 - a) / a <= tol ||Z|| assumed ||T||_2 <= 1: here it stopped
    # after 79 products, before the term reached the fan, with a relative error of
    # 8.6e-3 at tol=1e-3
    if backend == "torch":
        pytest.importorskip("torch")
    from scipy.sparse.linalg import spsolve

    from skldp.propagation._ppr import _with_loops
    A = _pulse_then_fan(80, 10000)
    n = A.shape[0]
    X = np.zeros((n, 1))
    X[0] = 1.0
    A1, deg = _with_loops(A, False)
    T = sp.diags(deg ** (r - 1)) @ A1 @ sp.diags(deg ** -r)
    want = spsolve(sp.csc_matrix(sp.eye(n) - 0.9 * T), 0.1 * X)[:, None]
    ppr = PPRPropagation(alpha=0.1, r=r, tol=1e-3, solver="power", dtype="float64",
                         backend=backend, device="cpu")
    Z = np.asarray(ppr.fit_transform(GraphData(X, A)).features)
    assert np.linalg.norm(Z - want) <= 1e-3 * np.linalg.norm(want)
