import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline, make_pipeline

from skldp import GraphData
from skldp.mechanisms import LaplaceMechanism, OneBitMechanism
from skldp.model_selection import PairData, random_edge_split
from skldp.models import HadamardLinkPredictor, VGAELinkPredictor
from skldp.propagation import PPRPropagation


def _graph(n=120, d=8, seed=0):
    """4-block SBM whose features reveal the block (links are mostly within blocks)."""
    rng = np.random.default_rng(seed)
    b = np.repeat(np.arange(4), n // 4)
    P = np.where(b[:, None] == b[None, :], 0.2, 0.005)
    A = np.triu(rng.random((n, n)) < P, 1)
    A = (A | A.T).astype(float)
    X = np.zeros((n, d))
    X[np.arange(n), b] = 1.0
    X[:, 4:] = rng.random((n, d - 4)) < 0.3
    return GraphData(X, sp.csr_array(A))


@pytest.fixture(scope="module")
def split():
    return random_edge_split(_graph(), val_size=0.1, test_size=0.2, random_state=0)


def _vgae(**kw):
    params = dict(epochs=40, min_epochs=20, check_every=5, patience=3, random_state=0)
    params.update(kw)
    return VGAELinkPredictor(**params)


def _had(**kw):
    params = dict(epochs=40, batch_size=128, random_state=0)
    params.update(kw)
    return HadamardLinkPredictor(**params)


def _with_validation(est, split):
    """``est`` set to validate on the validation pairs, and the pairs and labels to fit."""
    P_tr, P_va, _, y_tr, y_va, _ = split
    return est.set_params(validation=P_va.pairs), P_tr.concat(P_va), np.r_[y_tr, y_va]


@pytest.mark.parametrize("make", [_vgae, _had, lambda: _had(head="mlp", hidden_layer_sizes=(8,)),
                                  lambda: _had(loss="pairwise")])
def test_learns_block_structure(split, make):
    P_tr, P_va, P_te, y_tr, y_va, y_te = split
    est, P_fit, y_fit = _with_validation(make(), split)
    est.fit(P_fit, y_fit)
    auc = est.score(P_te, y_te)
    # Same-block pairs are edges with prob 0.2, cross-block 0.005: features make this easy.
    # (40 epochs of VGAE: 0.82-0.87 over random_state 0-9; chance is 0.5)
    assert auc > 0.8
    assert auc == pytest.approx(roc_auc_score(y_te, est.decision_function(P_te)))
    proba = est.predict_proba(P_te)
    assert proba.shape == (len(P_te), 2)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert set(np.unique(est.predict(P_te))) <= {0, 1}
    assert list(est.classes_) == [0, 1]
    assert est.n_features_in_ == P_tr.shape[1]


@pytest.mark.slow
def test_vgae_uninformative_features_use_structure_only(split):
    """With random features the encoder still sees the training graph: AUC stays above
    chance (structure) but below the informative-feature model."""
    P_tr, P_va, P_te, y_tr, y_va, y_te = split
    rng = np.random.default_rng(1)
    G0 = P_tr.graph.with_features(rng.random(P_tr.graph.features.shape) < 0.5)
    est, P_fit, y_fit = _with_validation(_vgae(), split)
    full = est.fit(P_fit, y_fit).score(P_te, y_te)
    null = clone(est).fit(P_fit._rebase(G0), y_fit).score(P_te._rebase(G0), y_te)
    assert null < full


def test_vgae_reproducible_and_picklable(split):
    P_tr, P_va, P_te, y_tr, y_va, y_te = split
    est, P_fit, y_fit = _with_validation(_vgae(), split)
    a = est.fit(P_fit, y_fit)
    b = clone(est).fit(P_fit, y_fit)
    np.testing.assert_allclose(a.decision_function(P_te), b.decision_function(P_te))
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_allclose(c.decision_function(P_te), a.decision_function(P_te))
    assert a.embed(P_te).shape == (P_te.n_nodes, 16)
    # early stopping: checks every check_every epochs, never before min_epochs
    assert len(a.validation_scores_) == a.n_iter_ // 5
    assert a.n_iter_ >= 20
    assert a.best_epoch_ is not None and (a.best_epoch_ + 1) % 5 == 0


def test_vgae_min_epochs_delays_the_stop_not_the_checks(split):
    """``min_epochs`` only forbids an early stop: the checks run from epoch ``check_every``
    and the best one is kept even when it came before ``min_epochs``."""
    est, P_fit, y_fit = _with_validation(
        _vgae(epochs=60, min_epochs=50, check_every=5, patience=2, lr=0.05), split)
    est.fit(P_fit, y_fit)
    assert len(est.validation_scores_) == est.n_iter_ // 5 >= 10
    assert est.best_epoch_ < 50 <= est.n_iter_ < 60   # patience ran out before min_epochs
    assert min(est.validation_scores_) == est.validation_scores_[(est.best_epoch_ + 1) // 5 - 1]


def test_vgae_fits_on_several_threads_are_reproducible():
    """The same random_state gives the same model with several CPU threads: the pairs'
    rows are gathered with index_select, whose gradient sums each row's copies in
    turn (indexing's accumulating index_put split them between threads)."""
    rng = np.random.default_rng(0)
    n = 3000
    A = sp.random(n, n, density=0.004, random_state=1, format="csr")
    G = GraphData(rng.random((n, 32)), ((A + A.T) > 0).astype(float))
    P_tr, _, P_te, y_tr, _, _ = random_edge_split(G, random_state=0)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        runs = [VGAELinkPredictor(epochs=20, device="cpu", random_state=0).fit(
            P_tr, y_tr).decision_function(P_te) for _ in range(3)]
    finally:
        torch.set_num_threads(threads)
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0])


def test_vgae_paper_architecture():
    P_tr, _, _, y_tr, _, _ = random_edge_split(_graph(), random_state=1)
    m = _vgae(epochs=2, early_stopping=False).fit(P_tr, y_tr).module_
    assert m.conv1.lin.weight.shape == (32, 8)
    assert m.conv_mu.lin.weight.shape == m.conv_logstd.lin.weight.shape == (16, 32)
    assert isinstance(m.bn, __import__("torch").nn.BatchNorm1d)
    gae = _vgae(epochs=2, variational=False, batch_norm=False,
                early_stopping=False).fit(P_tr, y_tr).module_
    assert gae.conv_logstd is None


def test_pipeline_with_mechanism_and_propagation(split):
    """Mechanism -> propagation -> head on pairs; the mechanism perturbs each node once."""
    P_tr, P_va, P_te, y_tr, y_va, y_te = split
    pipe = Pipeline([("mech", LaplaceMechanism(eps=50.0, feature_range=(0, 1),
                                               random_state=0)),
                     ("ppr", PPRPropagation(alpha=0.2)),
                     ("link", _had())])
    _, P_fit, y_fit = _with_validation(pipe["link"], split)
    pipe.fit(P_fit, y_fit)
    Z = pipe[:-1].transform(P_te)
    assert isinstance(Z, PairData) and Z.token == pipe[:-1].transform(P_tr).token
    np.testing.assert_array_equal(Z.pairs, P_te.pairs)
    assert pipe.score(P_te, y_te) > 0.8
    # VGAE after a mechanism, with validation pairs routed to the last step
    pipe2 = make_pipeline(OneBitMechanism(eps=5.0, feature_range=(0, 1), random_state=0),
                          _vgae(validation=P_va.pairs))
    pipe2.fit(P_fit, y_fit)
    assert pipe2.score(P_te, y_te) > 0.7


# the folds share one graph: each held-out fold's edges are in it (warned about, as tested
# in test_cross_validation_over_one_graph_warns)
@pytest.mark.filterwarnings("ignore:.*pairs scored are edges of the graph:UserWarning")
def test_cross_validation_and_grid_search(split):
    P_tr, _, _, y_tr, _, _ = split
    pipe = Pipeline([("ppr", PPRPropagation(alpha=0.2)),
                     ("link", _had(epochs=10, early_stopping=False))])
    scores = cross_val_score(pipe, P_tr, y_tr, cv=3, scoring="roc_auc")
    assert scores.shape == (3,) and np.all(scores > 0.7)
    gs = GridSearchCV(pipe, {"ppr__alpha": [0.2, 0.9]}, cv=2).fit(P_tr, y_tr)
    assert gs.best_params_["ppr__alpha"] in (0.2, 0.9)
    assert 0.5 < gs.best_score_ <= 1.0


def test_plain_sklearn_head_sees_hadamard_features(split):
    """np.asarray(PairData) is the Hadamard edge feature matrix, so a plain
    LogisticRegression after propagation is a Hadamard link predictor too."""
    P_tr, _, P_te, y_tr, _, y_te = split
    pipe = make_pipeline(PPRPropagation(alpha=0.2), LogisticRegression(max_iter=500))
    pipe.fit(P_tr, y_tr)
    assert roc_auc_score(y_te, pipe.decision_function(P_te)) > 0.8


def test_string_labels_and_clone(split):
    P_tr, _, P_te, y_tr, _, y_te = split
    names = np.array(["no", "yes"])[y_tr]
    est = _had(early_stopping=False, epochs=5).fit(P_tr, names)
    assert list(est.classes_) == ["no", "yes"]
    assert est.score(P_te, np.array(["no", "yes"])[y_te]) == pytest.approx(
        roc_auc_score(y_te, est.decision_function(P_te)))
    assert clone(est).get_params() == est.get_params()


def test_bad_input(split):
    P_tr, P_va, P_te, y_tr, y_va, y_te = split
    X = np.asarray(P_tr)
    for est in (_vgae(), _had()):
        with pytest.raises(TypeError, match="PairData"):
            est.fit(X, y_tr)
        with pytest.raises(ValueError, match="two classes"):
            est.fit(P_tr, np.arange(len(y_tr)) % 3)
        with pytest.raises(ValueError, match="single class"):
            est.fit(P_tr, np.ones(len(y_tr)))
        with pytest.raises(ValueError, match="rows"):
            est.fit(P_tr, y_tr[:-1])
        with pytest.raises(ValueError, match="none of the"):
            clone(est).set_params(validation=P_va.pairs).fit(P_tr, y_tr)
        with pytest.raises(ValueError, match="shape"):
            clone(est).set_params(validation=P_va.pairs[:, 0]).fit(P_tr, y_tr)
        with pytest.raises(TypeError, match="pairs"):
            clone(est).set_params(validation=P_va).fit(P_tr, y_tr)
    with pytest.raises(ValueError, match="negative_sampling"):
        _vgae(negative_sampling="bogus").fit(P_tr, y_tr)
    with pytest.raises(ValueError, match="negative_ratio"):
        _vgae(negative_ratio=0).fit(P_tr, y_tr)
    with pytest.raises(ValueError, match="head"):
        _had(head="svm").fit(P_tr, y_tr)
    with pytest.raises(ValueError, match="lr"):
        _had(lr=0).fit(P_tr, y_tr)
    with pytest.raises(ValueError, match="epochs"):
        _vgae(epochs=0).fit(P_tr, y_tr)
    est = _had(epochs=2, early_stopping=False).fit(P_tr, y_tr)
    with pytest.raises(ValueError, match="features"):
        est.decision_function(PairData(GraphData(np.ones((P_tr.n_nodes, 3)),
                                                 P_tr.adjacency), [[0, 1]]))
    G_nan = P_tr.graph.with_features(np.where(np.eye(P_tr.n_nodes, 8) > 0, np.nan, 0.0))
    with pytest.raises(ValueError, match="NaN"):
        _had().fit(P_tr._rebase(G_nan), y_tr)
    with pytest.raises(ValueError, match="NaN"):
        _vgae().fit(P_tr._rebase(G_nan), y_tr)


@pytest.mark.parametrize("make", [_vgae, _had])
def test_predict_elsewhere_keeps_the_fitted_weights_on_the_cpu(split, make):
    """As for the node classifiers: "meta" stands in for CUDA; a failed predict there
    leaves ``module_`` on the CPU."""
    P_tr, P_va, P_te, y_tr, y_va, y_te = split
    est = make(epochs=4, min_epochs=1) if make is _vgae else make(epochs=4)
    est.fit(P_tr, y_tr)
    expected = est.decision_function(P_te)
    est.set_params(device="meta")
    G_nan = P_te.graph.with_features(np.full(P_te.graph.features.shape, np.nan))
    with pytest.raises(ValueError, match="NaN"):
        est.decision_function(P_te._rebase(G_nan))
    with pytest.raises((RuntimeError, NotImplementedError)):
        est.decision_function(P_te)
    assert {p.device.type for p in est.module_.parameters()} == {"cpu"}
    # ``expected`` came from the fitting device (CUDA through device="auto" on a GPU
    # machine), where float32 sums run in another order: each sum of m terms may then
    # differ by about m * eps32 of the values' scale. The longest chain adds the
    # neighbours of a node and the inputs of every layer.
    A = P_te.graph.adjacency
    m = int(np.diff(A.indptr).max()) + 1 + sum(
        p.shape[-1] for p in est.module_.parameters() if p.ndim == 2)
    tol = m * np.finfo(np.float32).eps
    np.testing.assert_allclose(est.set_params(device="cpu").decision_function(P_te), expected,
                               rtol=tol, atol=tol * np.abs(expected).max())


def test_balanced_bce_equals_the_two_sides_masked_means():
    import torch
    import torch.nn.functional as F

    from skldp.models._link import _BalancedBCE, _positives_first
    rng = np.random.default_rng(0)
    y = (rng.random(50) < 0.3).astype(np.float32)
    pairs = rng.integers(0, 9, size=(50, 2))
    ordered, n_pos = _positives_first(pairs, y)
    assert n_pos == int(y.sum()) and ordered.shape == (2, 50)
    # positives first, each side in its own order
    np.testing.assert_array_equal(ordered.T, np.r_[pairs[y > 0.5], pairs[y <= 0.5]])
    t = torch.as_tensor(np.r_[np.sort(y)[::-1], np.zeros(7, np.float32)].copy())
    logits = torch.tensor(rng.normal(size=57), dtype=torch.float32, requires_grad=True)
    loss = _BalancedBCE(n_pos, 60, "cpu")   # room for more logits than these 57
    masked = (F.binary_cross_entropy_with_logits(logits[t > 0.5], t[t > 0.5])
              + F.binary_cross_entropy_with_logits(logits[t <= 0.5], t[t <= 0.5]))
    got = loss(logits)
    torch.testing.assert_close(got, masked, rtol=1e-6, atol=0)
    g1, = torch.autograd.grad(got, logits)
    g2, = torch.autograd.grad(masked, logits)
    torch.testing.assert_close(g1, g2, rtol=1e-5, atol=1e-8)
    # one side empty: its term is left out
    only_neg = _BalancedBCE(0, 5, "cpu")(logits[:5])
    torch.testing.assert_close(only_neg, F.binary_cross_entropy_with_logits(
        logits[:5], torch.zeros(5)), rtol=1e-6, atol=0)


def test_gaussian_latent_gradient_is_the_formulas_gradient():
    """The reparameterisation and the KL term as one node: the same values and gradients
    as autograd's graph of the formulas (float64)."""
    import torch

    from skldp.models._link import _GaussianLatent
    gen = torch.Generator().manual_seed(0)
    mu, logstd = (torch.randn(6, 3, generator=gen, dtype=torch.float64, requires_grad=True)
                  for _ in range(2))
    eps = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    scale = 0.5 / 36
    z, kl = _GaussianLatent.apply(mu, logstd, eps, scale)
    z_ref = mu + eps * torch.exp(logstd)
    kl_ref = -0.5 * torch.mean(torch.sum(1 + 2 * logstd - mu ** 2
                                         - torch.exp(logstd) ** 2, dim=1)) / 6
    torch.testing.assert_close(z, z_ref)
    torch.testing.assert_close(kl, kl_ref)
    up = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    got = torch.autograd.grad((z * up).sum() + 3 * kl, (mu, logstd))
    ref = torch.autograd.grad((z_ref * up).sum() + 3 * kl_ref, (mu, logstd))
    for a, b in zip(got, ref, strict=True):
        torch.testing.assert_close(a, b)
    assert torch.autograd.gradcheck(lambda m, s: _GaussianLatent.apply(m, s, eps, scale),
                                    (mu, logstd))


def test_vgae_epoch_gathers_both_ends_of_the_pairs_once(split, monkeypatch):
    """A training epoch takes the pairs' rows of ``z`` in one gather (one scatter back):
    on CUDA each gather's gradient sorts its index."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from skldp.models import _link

    class Count(TorchDispatchMode):
        on = False
        ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if Count.on:
                Count.ops.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    real_train = _link.train

    def train(step, epochs, **kw):
        def counted(epoch):
            Count.on = epoch == 2
            try:
                return step(epoch)
            finally:
                Count.on = False
        return real_train(counted, epochs, **kw)

    monkeypatch.setattr(_link, "train", train)
    P_tr, P_va, P_te, y_tr, y_va, y_te = split
    with Count():   # the CPU's gather (on CUDA: indexing, and its index_put back)
        _vgae(epochs=4, min_epochs=4, device="cpu").fit(P_tr, y_tr)
    gathers = [op for op in Count.ops if op in ("index_select", "index", "gather")]
    scatters = [op for op in Count.ops if op in ("index_add", "index_put", "scatter_add")]
    assert gathers == ["index_select"] and scatters == ["index_add"]


def test_vgae_epochs_read_nothing_on_the_host(split, monkeypatch):
    """On a GPU every read of a tensor value waits for the device: with the device path
    of the trainer, an epoch of VGAE reads nothing (the loss's sides are found once)."""
    import torch

    from skldp.models import _link
    monkeypatch.setattr(_link, "default_sync_every", lambda device: 16)
    reads = []
    for name in ("__bool__", "item", "__float__", "__int__"):
        orig = getattr(torch.Tensor, name)
        monkeypatch.setattr(torch.Tensor, name, lambda self, *a, _o=orig, **k:
                            (reads.append(1), _o(self, *a, **k))[1])
    est, P_fit, y_fit = _with_validation(_vgae(epochs=60, min_epochs=60), split)
    est.fit(P_fit, y_fit)
    assert est.n_iter_ == 60
    assert len(reads) <= 4   # after training: the best and stopping epochs


def test_vgae_input_forms_give_the_same_model(split, monkeypatch):
    """Without input dropout the encoder reads multi-bit reports as a constant plus a
    sparse part (the CPU) or with their aggregation made once (a GPU; forced here on
    the CPU): exact forms of the dense input, the same model up to rounding."""
    from skldp.mechanisms import MultiBitMechanism
    from skldp.models import _gnn, _link
    from skldp.models._gnn import AggregatedFeatures, OffsetSparseFeatures

    P_tr, P_va, P_te, y_tr, y_va, y_te = split
    R = MultiBitMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(P_tr.graph)
    P_fit = P_tr._rebase(R)
    device = torch.device("cpu")
    est = _vgae(epochs=6, min_epochs=6, device="cpu")
    assert isinstance(est._tensors(P_fit, device)[0], OffsetSparseFeatures)
    sparse_form = est.fit(P_fit, y_tr).decision_function(P_te._rebase(R))
    with monkeypatch.context() as mp:
        mp.setattr(_link, "offset_sparse_features", lambda G, device: None)
        assert est._tensors(P_fit, device)[0].layout == torch.strided
        dense = clone(est).fit(P_fit, y_tr).decision_function(P_te._rebase(R))
    with monkeypatch.context() as mp:
        mp.setattr(_link, "_DENSE_PROPAGATION_ON", ("cuda", "cpu"))
        mp.setattr(_gnn, "_DENSE_PROPAGATION_ON", ("cuda", "cpu"))
        assert isinstance(est._tensors(P_fit, device)[0], AggregatedFeatures)
        aggregated = clone(est).fit(P_fit, y_tr).decision_function(P_te._rebase(R))
    np.testing.assert_allclose(sparse_form, dense, rtol=1e-4, atol=1e-4 * np.abs(dense).max())
    np.testing.assert_allclose(aggregated, dense, rtol=1e-4, atol=1e-4 * np.abs(dense).max())
    # input dropout needs the dense features
    assert est.set_params(dropout=0.5)._tensors(P_fit, device)[0].layout == torch.strided


def test_fresh_negatives_do_not_depend_on_the_batch_of_epochs(monkeypatch):
    """Each epoch's fresh negatives are non-edges (u < v) drawn uniformly, and drawing
    several epochs at once gives every epoch the pairs it gets drawn alone."""
    from skldp.model_selection._edge_splits import edge_codes, edge_lookup
    from skldp.models import _link

    A = sp.random(50, 50, density=0.05, random_state=0, format="csr")
    A = (A + A.T).tocsr()
    is_edge = edge_lookup(edge_codes(A), 50)

    def epochs(draws):
        monkeypatch.setattr(_link, "_FRESH_DRAWS", draws)
        fresh = _link._fresh_non_edges(np.random.default_rng(0), 50, is_edge, 30, 7, "cpu")
        return [t.numpy() for t in fresh]

    alone, batched = epochs(1), epochs(1 << 20)   # one epoch per draw; all seven at once
    assert len(alone) == len(batched) == 7
    for a, b in zip(alone, batched, strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.shape[0] == 2 and 15 < a.shape[1] <= 30   # rejections: edges, u == v
        assert np.all(a[0] < a[1]) and not np.asarray(A[a[0], a[1]]).any()
    assert not np.array_equal(alone[0], alone[1])   # fresh each epoch


def test_vgae_refuses_a_directed_graph():
    """The decoder's score is symmetric and a fresh non-edge must be one both ways: a
    directed training graph is refused, with the fix, not trained on."""
    rng = np.random.default_rng(0)
    A = sp.random(40, 40, density=0.1, random_state=0, format="csr")
    A.setdiag(0)
    A.eliminate_zeros()
    P = PairData(GraphData(rng.random((40, 4)), A), [[0, 1], [2, 3], [4, 5], [6, 7]])
    with pytest.raises(ValueError, match="undirected.*A.maximum"):
        _vgae(epochs=2).fit(P, [1, 0, 1, 0])
    P = PairData(GraphData(rng.random((40, 4)), A.maximum(A.T)), P.pairs)
    assert _vgae(epochs=2).fit(P, [1, 0, 1, 0]).n_iter_ == 2


def test_vgae_on_a_gpu_sends_the_features_once_per_graph(split, monkeypatch):
    """On a GPU's path (forced here on the CPU) the dense input and its aggregation are
    kept with the graph: a second fit on it sends no features and trains the same
    model."""
    from skldp.models import _gnn, _link

    monkeypatch.setattr(_link, "_DENSE_PROPAGATION_ON", ("cuda", "cpu"))
    monkeypatch.setattr(_gnn, "_DENSE_PROPAGATION_ON", ("cuda", "cpu"))
    sent = []
    feature_tensor = _link.feature_tensor
    monkeypatch.setattr(_link, "feature_tensor",
                        lambda G, device: (sent.append(1), feature_tensor(G, device))[1])
    P_tr, P_va, P_te, y_tr, y_va, y_te = split
    est = _vgae(epochs=5, min_epochs=5, device="cpu")
    first = est.fit(P_tr, y_tr).decision_function(P_te)
    assert len(sent) == 1   # the fit and its prediction share one copy
    second = clone(est).fit(P_tr, y_tr).decision_function(P_te)
    assert len(sent) == 1
    np.testing.assert_array_equal(first, second)


def test_vgae_heads_in_one_product_are_the_two_convolutions(split):
    """The mean and log-sigma heads run as one product with joined weights: the values
    and every parameter's gradient of the two convolutions taken apart."""
    import torch.nn.functional as F

    from skldp.models._gnn import graph_tensors
    from skldp.models._link import _VGAEModule

    G = split[0].graph
    x, g = graph_tensors(G, torch.device("cpu"), "gcn")
    torch.manual_seed(0)
    module = _VGAEModule(G.shape[1], 8, 4, batch_norm=False, dropout=0.0, variational=True)
    mu, logstd = module(x, g)
    h = F.relu(module.conv1(x, g))
    mu_ref, logstd_ref = module.conv_mu(h, g), module.conv_logstd(h, g).clamp(max=10.0)
    torch.testing.assert_close(mu, mu_ref)
    torch.testing.assert_close(logstd, logstd_ref)
    up = torch.randn(2, *mu.shape, generator=torch.Generator().manual_seed(1))
    params = list(module.parameters())
    got = torch.autograd.grad((mu * up[0]).sum() + (logstd * up[1]).sum(), params)
    ref = torch.autograd.grad((mu_ref * up[0]).sum() + (logstd_ref * up[1]).sum(), params)
    for a, b in zip(got, ref, strict=True):
        torch.testing.assert_close(a, b)
    # the means alone (validation, prediction): the same means, no second head
    means, none = module(x, g, means_only=True)
    assert none is None
    torch.testing.assert_close(means, mu_ref)


def test_vgae_refuses_labels_whose_sorted_order_makes_non_edges_positive(split):
    P_tr, _, P_te, y_tr, _, y_te = split
    lab = np.array(["nonedge", "edge"])   # sorted: classes_ = ['edge', 'nonedge']
    with pytest.raises(ValueError, match=r"classes_\[1\]='nonedge' are edges of the training "
                                         r"graph.*\['edge', 'nonedge'\].*classes_\[1\] marks "
                                         r"edges: pass 0/1 labels"):
        _vgae().fit(P_tr, lab[y_tr])
    # also with the edges and non-edges swapped as 0/1
    with pytest.raises(ValueError, match="are edges of the training graph"):
        _vgae().fit(P_tr, 1 - y_tr)
    # labels whose sorted order puts the edge label last fit as 0/1 labels do
    good = np.array(["a_nonedge", "b_edge"])
    est = _vgae().fit(P_tr, good[y_tr])
    ref = _vgae().fit(P_tr, y_tr)
    np.testing.assert_array_equal(est.decision_function(P_te), ref.decision_function(P_te))
    # validation pairs (not edges of the training graph) are not counted as training pairs
    est, P_fit, y_fit = _with_validation(_vgae(), split)
    est.fit(P_fit, y_fit)


# ------------------------------------------------- scored pairs that are edges of the graph
_EDGE_WARNING = "are edges of the graph"


@pytest.mark.parametrize("make", [_vgae, _had])
def test_scoring_pairs_that_are_edges_of_the_graph_warns(split, make):
    """Test pairs over a graph holding the held-out test edges (here: the full graph) were
    scored silently, with an optimistic AUC. Every scoring method warns, counting the pairs
    that are edges in either orientation; pairs over the training graph do not warn."""
    P_tr, P_va, P_te, y_tr, y_va, y_te = split
    est, P_fit, y_fit = _with_validation(make(), split)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=f".*{_EDGE_WARNING}")
        est.fit(P_fit, y_fit)            # validation pairs are no edges of the training graph
        est.score(P_te, y_te)            # nor are the test pairs
        est.predict(P_va)
    full = _graph()                      # the graph split: the test edges are in it
    n_pos, m = int(y_te.sum()), len(y_te)
    msg = rf"{type(est).__name__}: {n_pos} of the {m} pairs scored {_EDGE_WARNING}"
    for pairs in (P_te.pairs, P_te.pairs[:, ::-1].copy()):     # either orientation
        P_leak = PairData(full, pairs)
        for method, args in (("decision_function", ()), ("predict_proba", ()),
                             ("predict", ()), ("score", (y_te,))):
            with pytest.warns(UserWarning, match=msg) as rec:
                getattr(est, method)(P_leak, *args)
            assert sum(_EDGE_WARNING in str(w.message) for w in rec) == 1   # once per call
    assert "random_edge_split" in str(rec[0].message)


def test_scored_edges_are_counted_in_either_orientation_of_a_directed_graph(split):
    """An edge stored on one side of the diagonal only counts for the pair both ways."""
    P_tr, _, _, y_tr, _, _ = split
    est = _had(epochs=2, early_stopping=False).fit(P_tr, y_tr)
    full = _graph()
    upper = sp.csr_array(sp.triu(full.adjacency, 1))
    G = GraphData(full.features, upper)
    e = np.stack(upper.nonzero(), axis=1)[:5]             # (u, v), u < v: stored
    non = np.array([[0, 1], [0, 2]])
    non = non[np.asarray(full.adjacency[non[:, 0], non[:, 1]]).ravel() == 0]
    for pairs in (e, e[:, ::-1].copy()):
        with pytest.warns(UserWarning, match=rf"5 of the {5 + len(non)} pairs scored"):
            est.decision_function(PairData(G, np.r_[pairs, non]))


@pytest.mark.parametrize("make", [_vgae, _had])
def test_validation_pairs_that_are_edges_of_the_graph_warn_at_fit(split, make):
    """Validation pairs are held out: those that are edges of the graph given to fit warn;
    training pairs (edges by construction), and a validation_fraction share of them, not."""
    P_tr, P_va, _, y_tr, y_va, _ = split
    full = _graph()
    P_fit = PairData(full, np.r_[P_tr.pairs, P_va.pairs])   # validation edges left in
    with pytest.warns(UserWarning, match=rf"{int(y_va.sum())} of the {len(y_va)} validation "
                                         rf"pairs {_EDGE_WARNING} it is fitted on"):
        make().set_params(validation=P_va.pairs).fit(P_fit, np.r_[y_tr, y_va])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=f".*{_EDGE_WARNING}")
        make().fit(P_tr, y_tr)                               # validation_fraction: no warning


def test_pairs_randomized_into_edges_by_an_edge_mechanism_warn_with_the_split_to_use(split):
    """Randomizing the training graph in the pipeline adds edges between some test pairs:
    the message says to split the mechanism's output instead."""
    from skldp.mechanisms import EdgeRR
    P_tr, _, P_te, y_tr, _, y_te = split
    pipe = Pipeline([("edges", EdgeRR(eps=1.0, random_state=0)),
                     ("ppr", PPRPropagation(alpha=0.2)), ("link", _had(epochs=2))])
    pipe.fit(P_tr, y_tr)
    with pytest.warns(UserWarning, match=r"pairs scored are edges(.|\n)*split its output "
                                         r"\(random_edge_split\(EdgeRR"):
        pipe.predict(P_te)


def test_cross_validation_over_one_graph_warns(split):
    """The folds of one PairData share its graph: a held-out fold's positives are edges of
    it (the optimistic scores PairData's Notes describe), and scoring them warns."""
    P_tr, _, _, y_tr, _, _ = split
    pipe = Pipeline([("ppr", PPRPropagation(alpha=0.2)),
                     ("link", _had(epochs=2, early_stopping=False))])
    with pytest.warns(UserWarning, match=f"pairs scored {_EDGE_WARNING}"):
        cross_val_score(pipe, P_tr, y_tr, cv=2, scoring="roc_auc")


def test_pairs_given_in_reverse_are_scored():
    # a PairData of pairs[:, ::-1] holds a negative-stride view: torch refused it
    from skldp.models import HadamardLinkPredictor

    G = _graph()
    pairs = np.array([[0, 5], [1, 7], [2, 9], [3, 11]])
    X = PairData(G, pairs)
    model = HadamardLinkPredictor(epochs=3, random_state=0).fit(X, np.array([1, 0, 1, 0]))
    with warnings.catch_warnings():   # some of these pairs are edges: not the point here
        warnings.simplefilter("ignore")
        forward = model.decision_function(X)
        backward = model.decision_function(PairData(G, pairs[:, ::-1]))
    np.testing.assert_allclose(backward, forward, rtol=1e-6)


@pytest.mark.parametrize("make", [_vgae, _had])
def test_score_refuses_unknown_labels_and_one_class(split, make):
    # one class gave NaN with a warning; labels {0, 2} were read as non-edges and 2 ignored
    P_tr, _, P_te, y_tr, _, y_te = split
    est = make(epochs=2, min_epochs=1) if make is _vgae else make(epochs=2)
    est.fit(P_tr, y_tr)
    with pytest.raises(ValueError, match=r"labels \[2\] that are not in classes_ \[0, 1\]"):
        est.score(P_te, y_te * 2)
    for y in (np.ones(len(P_te)), np.zeros(len(P_te))):
        with pytest.raises(ValueError, match="ROC-AUC needs both edges and non-edges"):
            est.score(P_te, y)
    assert 0 <= est.score(P_te, y_te) <= 1


# ------------------------------------------------------------------- the pair labels
@pytest.mark.parametrize("make", [_vgae, _had])
@pytest.mark.parametrize("reverse", [False, True])
def test_fit_refuses_a_pair_labelled_both_edge_and_non_edge(split, make, reverse):
    """The same unordered pair among the positives and the negatives was fitted silently,
    as both classes at once; refused, naming the pair and its two rows."""
    P_tr, _, _, y_tr, _, _ = split
    i = int(np.flatnonzero(y_tr == 1)[3])
    u, v = P_tr.pairs[i]
    again = [v, u] if reverse else [u, v]
    X = PairData(P_tr.graph, np.vstack([P_tr.pairs, again]))
    with pytest.raises(ValueError, match=rf"pair \({u}, {v}\) is labelled both edge \(1\) and "
                                         rf"non-edge \(0\): rows {i} and {len(P_tr)}"):
        make().fit(X, np.r_[y_tr, 0])
    # the same pair twice with the same label is no conflict
    make(epochs=1).fit(X, np.r_[y_tr, 1])


@pytest.mark.parametrize("y, refusal", [
    ([1, 0, 1, 0], r"pair \(0, 1\) is labelled both"),   # (0, 1) labelled 1, then (1, 0) 0
    ([1, -1, 1, -1], r"pair labels must be 0 \(non-edge\) or 1"),
    ([1, 1, 1, 1], "single class"),
])
def test_pair_labels_are_charged_before_a_refusal_of_their_values(y, refusal):
    """A refusal of the labels' values tells of them (which pair they disagree on): labels
    of pairs the caller built over edges an edge mechanism collects are charged first
    (epsilon inf), refused under a budget."""
    from skldp.accounting import privacy_report
    from skldp.mechanisms import EdgeRR, MultiBitMechanism
    from skldp.population import BudgetExceededError

    def fit(G):
        make_pipeline(EdgeRR(1.0, random_state=0),
                      MultiBitMechanism(1.0, feature_range=(0, 1), random_state=0),
                      _had(epochs=1)).fit(PairData(G, [[0, 1], [2, 3], [4, 5], [1, 0]]), y)

    G = _graph()
    with pytest.raises(ValueError, match=refusal):
        fit(G)
    assert privacy_report(G).epsilon_for("edges") == np.inf
    with pytest.raises(BudgetExceededError, match="pair labels read from the users' true"):
        fit(GraphData(G.features, G.adjacency, budget=5.0))


@pytest.mark.parametrize("make", [_vgae, _had])
def test_fit_refuses_plus_minus_one_pair_labels_saying_what_they_must_be(split, make):
    """-1/+1 labels got the node classifiers' advice about unlabelled nodes
    (``G[y >= 0], y[y >= 0]``), which would drop every non-edge."""
    P_tr, _, _, y_tr, _, _ = split
    with pytest.raises(ValueError, match=r"pair labels must be 0 \(non-edge\) or 1 \(edge\).*"
                                         r"got the labels \[-1, 1\].*"
                                         r"\(np.asarray\(y\) > 0\).astype\(int\)") as err:
        make().fit(P_tr, 2 * y_tr - 1)
    assert "G[y >= 0]" not in str(err.value)


@pytest.mark.parametrize("cls", [VGAELinkPredictor, HadamardLinkPredictor])
def test_a_numpy_generator_seeds_the_fit_reproducibly(split, cls):
    # the docstrings said "int, RandomState or None"; a Generator gives the seed of one
    # (hashed) draw from it: two fresh Generators of one seed fit the same model
    P_tr, _, P_te, y_tr, _, _ = split
    fits = [cls(epochs=2, device="cpu", random_state=np.random.default_rng(7)).fit(P_tr, y_tr)
            for _ in range(2)]
    np.testing.assert_array_equal(fits[0].decision_function(P_te),
                                  fits[1].decision_function(P_te))
    doc = cls.__doc__.split("random_state :")[1].splitlines()[0]
    assert "Generator" in doc
