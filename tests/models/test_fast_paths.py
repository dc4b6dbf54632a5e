"""The faster code paths of the torch models give the results of the plain ones."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
import torch.nn.functional as F

from skldp._torch import (
    class_cross_entropy,
    class_softmax,
    sparse_matmul,
    to_torch_sparse,
)
from skldp.models import GATClassifier, GCNClassifier, LPGNNClassifier, MLPHead, _gnn, _mlp
from skldp.models._gnn import PropagatedFeatures, SparseOperand, _matmul, _SAGEConv, _spmm


def test_column_stats_in_row_chunks_match_numpy(monkeypatch):
    monkeypatch.setattr(_mlp, "_STATS_CHUNK", 10)   # several chunks of rows
    monkeypatch.setattr(_mlp, "_NORM_CHUNK", 10)
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(53, 4)) * [1, 10, 1e-3, 0] + [0, 5, 1e4, 3]).astype(np.float32)
    mean, scale = _mlp._column_stats(X)
    X64 = X.astype(np.float64)
    np.testing.assert_allclose(mean, X64.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(scale[:3], X64.std(axis=0)[:3], rtol=1e-9)
    assert scale[3] == 1.0   # constant column
    S = _mlp._Standardized(X, lambda B: (B - mean) / scale, torch.device("cpu"))
    expected = (X64 - mean) / scale
    np.testing.assert_allclose(S.rows(torch.arange(53)).numpy(), expected, rtol=1e-5, atol=1e-5)
    # arranged: the rows given first, in that order, then read in place
    order = np.r_[np.arange(40, 53), np.arange(0, 40)][::-1].copy()
    S = _mlp._Standardized(X, lambda B: (B - mean) / scale, torch.device("cpu"))
    where = S.arrange(order)
    np.testing.assert_array_equal(where[order], np.arange(53))
    block = S.rows(torch.arange(10, 30))
    assert block.untyped_storage().data_ptr() == S.t.untyped_storage().data_ptr()
    np.testing.assert_allclose(block.numpy(), expected[order[10:30]], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(S.rows(torch.tensor([5, 2, 50])).numpy(),
                               expected[order[[5, 2, 50]]], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("normalization", ["l2", "standardize"])
def test_rows_normalised_in_small_chunks_are_those_of_one_chunk(monkeypatch, normalization):
    # the host normalises rows in chunks that stay in the CPU's caches: each row on its
    # own, so any chunking stores the same float32 rows, bit for bit
    rng = np.random.default_rng(2)
    X = (rng.normal(size=(61, 5)) * [1, 10, 1e-3, 0, 7] + [0, 5, 1e4, 3, -2]).astype(np.float32)
    head = MLPHead(normalization=normalization)
    head._stats = _mlp._column_stats(X)
    order = rng.permutation(61)[:50]
    stored = []
    for entries in (1 << 22, 15):   # one chunk; chunks of 3 rows
        monkeypatch.setattr(_mlp, "_NORM_CHUNK", entries)
        S = _mlp._Standardized(X, head._normalize_rows, torch.device("cpu"))
        S.arrange(order)
        stored.append(S.a)
    np.testing.assert_array_equal(stored[0], stored[1])
    np.testing.assert_array_equal(stored[1], head._normalize_rows(X[order]).astype(np.float32))


def test_rows_normalised_on_the_device_match_the_host(monkeypatch):
    monkeypatch.setattr(_mlp, "_STATS_CHUNK", 12)   # several chunks of rows
    rng = np.random.default_rng(3)
    X = (rng.normal(size=(41, 4)) * [1, 10, 1e-3, 0] + [0, 5, 1e4, 3]).astype(np.float32)
    D = _mlp._DeviceStandardized(X, torch.device("cpu"))
    mean, scale = D.column_stats()
    host_mean, host_scale = _mlp._column_stats(X)
    np.testing.assert_allclose(mean, host_mean, rtol=1e-12)
    np.testing.assert_allclose(scale, host_scale, rtol=1e-9)
    assert scale[3] == 1.0
    for normalization in ["l2", "standardize", None]:
        head = MLPHead(normalization=normalization)
        head._stats = (mean, scale)
        D = _mlp._DeviceStandardized(X, torch.device("cpu"))
        D.normalize(head._normalize_tensor)
        assert D.t.dtype == torch.float32
        expected = head._normalize_rows(X.astype(np.float64))
        np.testing.assert_allclose(D.rows(torch.arange(41)).numpy(), expected, rtol=1e-6,
                                   atol=1e-6)
    gathered = D.rows(torch.arange(3, 8))   # not arranged: a gather
    assert gathered.untyped_storage().data_ptr() != D.t.untyped_storage().data_ptr()
    D = _mlp._DeviceStandardized(X, torch.device("cpu"))
    order = rng.permutation(41)
    where = D.arrange(order)
    np.testing.assert_array_equal(where[order], np.arange(41))
    # arranged: a block of rows is read in place, the same tensor every epoch
    block = torch.arange(0, 30)
    for _ in range(2):
        rows = D.rows(block)
        assert rows.untyped_storage().data_ptr() == D.t.untyped_storage().data_ptr()
        np.testing.assert_array_equal(rows.numpy(), X[order[:30]])
    scattered = torch.tensor([5, 2, 40])
    np.testing.assert_array_equal(D.rows(scattered).numpy(), X[order[[5, 2, 40]]])
    assert D.rows(torch.tensor([], dtype=torch.int64)).shape == (0, 4)


@pytest.mark.parametrize("batch_size", [None, 16])
def test_mlp_head_normalising_on_the_device_fits_as_on_the_host(monkeypatch, batch_size):
    # the accelerator's path, forced on the CPU: the same model up to float rounding
    rng = np.random.default_rng(4)
    X = rng.normal(size=(120, 5)) * [1, 2, 3, 4, 5] + 2
    y = (X[:, 0] + X[:, 1] / 2 > 3).astype(int)
    kw = dict(hidden_layer_sizes=(8,), epochs=20, batch_size=batch_size, random_state=0)
    host = MLPHead(**kw).fit(X, y)
    monkeypatch.setattr(_mlp, "_normalise_on", lambda device: True)
    built = []
    init = _mlp._DeviceStandardized.__init__
    monkeypatch.setattr(_mlp._DeviceStandardized, "__init__",
                        lambda self, *a: built.append(1) or init(self, *a))
    dev = MLPHead(**kw).fit(X, y)
    assert built   # the device path ran
    np.testing.assert_allclose(dev.module_[0].mean.numpy(), host.module_[0].mean.numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(dev.predict_proba(X), host.predict_proba(X), atol=1e-4)
    assert dev.n_iter_ == host.n_iter_


def test_full_batch_reads_its_training_and_validation_rows_in_place(monkeypatch):
    """An arranged full batch: each epoch's training and validation rows are blocks of
    the normalised store (views, no gather), each found once; mini-batches gather."""
    rng = np.random.default_rng(0)
    X, y = rng.random((90, 6)), np.arange(90) % 3
    reads = []
    rows = _mlp._Standardized.rows
    monkeypatch.setattr(_mlp._Standardized, "rows",
                        lambda self, p: reads.append((self, rows(self, p))) or reads[-1][1])
    # (the host store: on a GPU the device's store, which shares _arranged_block)
    MLPHead(epochs=12, early_stopping=True, validation_fraction=0.3, patience=50, weight_decay=1e-4,
            random_state=0, device="cpu").fit(X, y)
    data = reads[0][0]
    assert len(reads) >= 24 and {id(d) for d, _ in reads} == {id(data)}
    assert all(out._base is data.t for _, out in reads)   # slices of the store
    assert len(data._blocks) == 2                            # training, validation
    reads.clear()
    MLPHead(epochs=3, batch_size=16, weight_decay=1e-4, random_state=0, device="cpu").fit(X, y)
    assert reads and all(out._base is not reads[0][0].t for _, out in reads)


def test_mlp_head_predicts_in_row_chunks_as_in_one_piece(monkeypatch):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 6))
    y = (X[:, 0] > 0).astype(int)
    clf = MLPHead(hidden_layer_sizes=(8,), epochs=10, random_state=0).fit(X, y)
    whole = clf.decision_function(X)
    monkeypatch.setattr(_mlp, "_CHUNK_ROWS", 7)
    monkeypatch.setattr(_mlp, "_STATS_CHUNK", 1)   # chunks of 7 rows
    calls = []
    forward = clf.module_.forward
    monkeypatch.setattr(torch.nn.Sequential, "forward",
                        lambda self, x: calls.append(len(x)) or forward.__func__(self, x))
    np.testing.assert_allclose(clf.decision_function(X), whole, rtol=1e-12, atol=1e-12)
    assert calls == [7] * 42 + [6]
    from skldp import GraphData
    assert clf.predict_proba(GraphData(X)[np.zeros(300, bool)]).shape == (0, 2)


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


def test_torch_sparse_keeps_the_precision_of_its_dtype():
    """dtype=float64 gives the float64 values: they went through float32 (1/3 became
    0.3333333432674408)."""
    A = sp.csr_matrix(np.array([[0.0, 1 / 3], [0.1, 0.0]]))
    T = to_torch_sparse(A, dtype=torch.float64)
    assert T.dtype == torch.float64
    np.testing.assert_array_equal(T.values().numpy(), A.data)
    np.testing.assert_array_equal(to_torch_sparse(A).values().numpy(),
                                  A.data.astype(np.float32))


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_sparse_matmul_equals_the_scipy_product(index_dtype):
    rng = np.random.default_rng(4)
    A = sp.random(50, 40, density=0.1, random_state=4, format="csr", dtype=np.float32)
    A = sp.csr_matrix(A.multiply(np.arange(50)[:, None] % 7 != 0))  # some rows are empty
    assert np.any(np.diff(A.indptr) == 0)
    T = torch.sparse_csr_tensor(torch.as_tensor(A.indptr.astype(index_dtype)),
                                torch.as_tensor(A.indices.astype(index_dtype)),
                                torch.as_tensor(A.data), size=A.shape)
    h = torch.as_tensor(rng.normal(size=(40, 20)), dtype=torch.float32)  # >= 16: the bag
    ref = A @ h.numpy()
    np.testing.assert_allclose(sparse_matmul(T, h).numpy(), ref, rtol=1e-5, atol=1e-6)
    # a column slice (not contiguous), as the fused SAGE product gives
    wide = torch.as_tensor(rng.normal(size=(40, 40)), dtype=torch.float32)
    half = wide.split(20, dim=1)[0]
    assert not half.is_contiguous()
    np.testing.assert_allclose(sparse_matmul(T, half).numpy(), A @ half.numpy(), rtol=1e-5,
                               atol=1e-6)
    # few columns on a small matrix, float64 and inputs that need a gradient take
    # torch.sparse.mm: the same product
    np.testing.assert_allclose(sparse_matmul(T, h[:, :5]).numpy(), ref[:, :5], rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(sparse_matmul(T.double(), h.double()).numpy(), ref, rtol=1e-5,
                               atol=1e-6)
    hg = h.clone().requires_grad_()
    out = sparse_matmul(T, hg)
    out.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hg.grad.numpy(), np.tile(np.asarray(A.sum(axis=0)).T, 20),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="cannot multiply"):
        sparse_matmul(T, torch.ones(41, 2))


def test_sparse_operand_backward_is_the_transposed_product():
    A = sp.random(30, 30, density=0.15, random_state=5, format="csr", dtype=np.float32)
    op = SparseOperand.from_scipy(A, "cpu")
    h = torch.randn(30, 4, requires_grad=True)
    out = op.matmul(h)
    g = torch.randn(30, 4)
    out.backward(g)
    np.testing.assert_allclose(out.detach().numpy(), A @ h.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(h.grad.numpy(), A.T @ g.numpy(), rtol=1e-5, atol=1e-6)


def test_sparse_operand_power_is_one_node_with_the_transposed_backward():
    A = sp.random(30, 30, density=0.15, random_state=6, format="csr", dtype=np.float32)
    op = SparseOperand.from_scipy(A, "cpu")
    h = torch.randn(30, 4, requires_grad=True)
    out = op.matmul(h, steps=3)
    # One autograd node whose input is h itself, not a chain of three products
    assert out.grad_fn.next_functions[2][0].variable is h
    g = torch.randn(30, 4)
    out.backward(g)
    A3 = (A @ A @ A).toarray()
    np.testing.assert_allclose(out.detach().numpy(), A3 @ h.detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(h.grad.numpy(), A3.T @ g.numpy(), rtol=1e-4, atol=1e-5)
    with torch.no_grad():  # without autograd: the same products
        np.testing.assert_allclose(op.matmul(h, steps=3).numpy(), out.detach().numpy())


@pytest.mark.parametrize("n_classes", [2, 7, 40])   # 40: the plain dim-1 kernel
def test_class_softmax_and_cross_entropy_match_torch(n_classes):
    z = torch.randn(300, n_classes, dtype=torch.float32) * 5
    torch.testing.assert_close(class_softmax(z), F.softmax(z, dim=1), rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(class_softmax(z, log=True), F.log_softmax(z, dim=1),
                               rtol=1e-6, atol=1e-6)
    y = torch.randint(0, n_classes, (300,))
    y[::4] = -100   # ignored, as by F.cross_entropy
    for reduction in ("mean", "sum", "none"):
        torch.testing.assert_close(class_cross_entropy(z, y, reduction),
                                   F.cross_entropy(z, y, reduction=reduction),
                                   rtol=1e-6, atol=1e-5)
    zg = z.clone().requires_grad_()
    class_cross_entropy(zg, y).backward()
    zr = z.clone().requires_grad_()
    F.cross_entropy(zr, y).backward()
    torch.testing.assert_close(zg.grad, zr.grad, rtol=1e-5, atol=1e-7)


class _NoSplitLPGNN(LPGNNClassifier):
    """The same model trained without sharing the first layer between steps."""

    def _split_forward(self, module, data):
        return None


def _multi_bit_cora_view():
    from skldp.datasets import load_cora
    from skldp.mechanisms import MultiBitMechanism
    cora = load_cora()
    G = MultiBitMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(cora.data)
    return G, np.asarray(cora.target), cora.train_mask, cora.val_mask


@pytest.mark.parametrize("patience", [3, 100])   # 3: early stopping ends the loop
def test_shared_first_layer_trains_exactly_like_the_plain_loop(patience, monkeypatch):
    G, y, tr, va = _multi_bit_cora_view()
    params = dict(eps_y=2.0, classes=range(7), x_steps=2, y_steps=2, epochs=25,
                  patience=patience, device="cpu", random_state=0)
    calls, modes = [], []
    first, train = _gnn.GNNEncoder.first, _gnn.GNNEncoder.train
    monkeypatch.setattr(_gnn.GNNEncoder, "first",
                        lambda self, x, g: calls.append(1) or first(self, x, g))
    monkeypatch.setattr(_gnn.GNNEncoder, "train",
                        lambda self, mode=True: modes.append(mode) or train(self, mode))
    fit = tr | va
    shared = LPGNNClassifier(validation=va, **params).fit(G[fit], y[fit])
    n_shared, n_modes_shared, calls[:], modes[:] = len(calls), len(modes), [], []
    plain = _NoSplitLPGNN(validation=va, **params).fit(G[fit], y[fit])
    n_plain, n_modes_plain = len(calls), len(modes)
    # the shared loop never switches the module's mode (only eval() at the end)
    assert n_modes_shared <= 2 < n_modes_plain
    assert shared.loss_curve_ == plain.loss_curve_
    assert shared.validation_scores_ == plain.validation_scores_
    assert (shared.n_iter_, shared.best_epoch_) == (plain.n_iter_, plain.best_epoch_)
    np.testing.assert_array_equal(shared.decision_function(G[va]),
                                  plain.decision_function(G[va]))
    # one first-layer evaluation per step (plus one to validate the last step, or
    # one wasted when early stopping ends the loop) instead of two
    assert n_plain == 2 * plain.n_iter_
    assert n_shared == shared.n_iter_ + 1
    if patience == 3:
        assert shared.n_iter_ < 25


def test_no_shared_first_layer_when_it_draws_dropout():
    from skldp.datasets import load_cora
    G = load_cora().data   # bag-of-words features, stored sparse
    assert sp.issparse(G.features)
    clf = GCNClassifier(dropout=0.5, device="cpu")
    data, _ = clf._prepare(G, torch.device("cpu"))
    module = clf._build_module(G.shape[1], 7)
    assert clf._split_forward(module, data) is None   # dropout on the sparse input's entries
    module.sparse_input_dropout = False
    assert clf._split_forward(module, data) is not None   # sparse input, no input dropout
    x, g = data
    dense_x = torch.as_tensor(G.features.toarray(), dtype=torch.float32)
    assert clf._split_forward(module, (dense_x, g)) is None   # dropout on a dense input
    module.input_dropout = 0.0
    assert clf._split_forward(module, (dense_x, g)) is not None


@pytest.mark.parametrize("batch_size, dtype", [(None, "float32"), (128, "float32"),
                                               (None, "float64")])
def test_mlp_head_reads_features_left_on_its_device_there(monkeypatch, batch_size, dtype):
    # PPRPropagation -> MLPHead on an accelerator (forced on the CPU): the head gathers
    # its rows from the propagation's output on the device, never from a host copy,
    # and fits and predicts as from host features
    from sklearn.pipeline import make_pipeline

    from skldp import GraphData
    from skldp._graph_data import _GraphStore
    from skldp.propagation import PPRPropagation, _ppr
    rng = np.random.default_rng(7)
    n = 900   # >= 500 fit rows: no weight-decay search (it reads the rows on the host)
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, 6)) + y[:, None]
    A = sp.random(n, n, density=0.01, random_state=7, format="csr")
    A = ((A + A.T) > 0).astype(float)
    fit = rng.random(n) < 0.7
    monkeypatch.setattr(_mlp, "_normalise_on", lambda device: True)

    def run():
        pipe = make_pipeline(PPRPropagation(backend="torch", device="cpu", dtype=dtype),
                             MLPHead(hidden_layer_sizes=(8,), epochs=30, device="cpu",
                                     batch_size=batch_size, random_state=0))
        G = GraphData(X, A)
        pipe.fit(G[fit], y[fit])
        return pipe.predict_proba(G[~fit])

    host = run()
    monkeypatch.setattr(_ppr, "_KEEP_OUTPUT_ON", ("cpu",))
    copied = []
    read = _GraphStore.features.fget
    monkeypatch.setattr(_GraphStore, "features", property(
        lambda st: copied.append(st._features is None) or read(st)))
    kept = run()
    assert not any(copied)   # no host copy of the propagated features was made
    np.testing.assert_array_equal(kept, host)
    # the training rows were gathered there once, in the order of the full batch
    data = _mlp._DeviceStandardized.of_rows(torch.arange(12.).reshape(6, 2),
                                            torch.tensor([4, 0, 2]))
    assert data.t is None
    data.arrange([2, 0, 1])
    np.testing.assert_array_equal(data.t.numpy(), [[4, 5], [8, 9], [0, 1]])


def test_mlp_head_rejects_non_finite_features_on_its_device(monkeypatch):
    from skldp import GraphData
    monkeypatch.setattr(_mlp, "_normalise_on", lambda device: True)
    T = torch.ones(40, 3)
    T[17, 2] = float("nan")
    G = GraphData(np.zeros((40, 3)))._with_features_on_device(T)
    y = np.arange(40) % 2
    with pytest.raises(ValueError, match=r"NaN or infinite values \(first at row 17, column 2"):
        MLPHead(epochs=2, device="cpu").fit(G, y)
    # predicting: rows of the view are checked (named within it), other nodes' are not
    clf = MLPHead(epochs=2, device="cpu").fit(G[:10], y[:10])
    assert clf.predict(G[20:]).shape == (20,)
    with pytest.raises(ValueError, match=r"first at row 7, column 2"):
        clf.predict(G[10:30])


@pytest.mark.parametrize("hidden", [(), (8,)])
def test_mlp_head_trains_a_large_full_batch_in_row_chunks_as_at_once(monkeypatch, hidden):
    # a full batch whose activations would be large is summed over row chunks: the same
    # gradient (the chunks' mean losses weighted by their shares), up to rounding
    rng = np.random.default_rng(8)
    X = rng.normal(size=(1000, 5))
    y = (X[:, 0] + X[:, 1] ** 2 > 1).astype(int) + (X[:, 2] > 1)
    kw = dict(hidden_layer_sizes=hidden, dropout=0.0, epochs=40, random_state=0,
              device="cpu")
    whole = MLPHead(**kw).fit(X, y)
    chunks = []
    loss = MLPHead._loss
    monkeypatch.setattr(MLPHead, "_loss", lambda self, z, t, p: chunks.append(len(z)) or
                        loss(self, z, t, p))
    width = max(hidden + (3,))                                         # 3 classes
    monkeypatch.setattr(_mlp, "_ACTIVATION_BYTES", 4 * width * 300)   # 300 rows per chunk
    parts = MLPHead(**kw).fit(X, y)
    # 900 training rows (early stopping holds out 100): chunks of 300 each epoch
    assert chunks[:3] == [300, 300, 300] and parts.n_iter_ == whole.n_iter_
    np.testing.assert_allclose(parts.loss_curve_, whole.loss_curve_, rtol=1e-5)
    np.testing.assert_allclose(parts.predict_proba(X), whole.predict_proba(X), atol=1e-5)


@pytest.mark.parametrize("model", [GCNClassifier, LPGNNClassifier, GATClassifier])
def test_gnn_reads_features_left_on_its_device_there(small_graph, monkeypatch, model):
    # features a step left on the device (PPRPropagation on CUDA; here a CPU tensor): the
    # GNN checks and reads them there, no host copy, the same model as from the host
    from skldp import GraphData
    from skldp._graph_data import _GraphStore
    A, X, y = small_graph
    T = torch.as_tensor(X, dtype=torch.float32)
    kw = dict(epochs=5, random_state=0, device="cpu")
    if model is LPGNNClassifier:
        kw.update(eps_y=np.inf, classes=[0, 1])
    want = model(**kw).fit(GraphData(T.numpy(), A), y).predict_proba(GraphData(T.numpy(), A))
    copied = []
    read = _GraphStore.features.fget
    monkeypatch.setattr(_GraphStore, "features", property(
        lambda st: copied.append(st._features is None) or read(st)))
    H = GraphData(np.zeros_like(X), A)._with_features_on_device(T)
    got = model(**kw).fit(H, y).predict_proba(H)
    assert not any(copied)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    if model is GATClassifier:   # its input scale, summed on the device
        big = GraphData(np.zeros_like(X), A)._with_features_on_device(T * 10)
        np.testing.assert_allclose(_gnn.rms_input_scale(big), _gnn.rms_input_scale(
            GraphData((T * 10).numpy(), A)), rtol=1e-12)
        assert _gnn.rms_input_scale(big) < 1
    T2 = T.clone()
    T2[3, 1] = float("inf")
    with pytest.raises(ValueError, match=r"first at row 3, column 1"):
        model(**kw).fit(GraphData(np.zeros_like(X), A)._with_features_on_device(T2), y)
    assert not any(copied)
