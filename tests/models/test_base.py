"""scikit-learn conformance of every torch classifier (``TorchClassifierBase`` subclasses).

Binary ``decision_function`` shape, NaN features, no use of torch's global
random generator, and clear device errors.
"""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.model_selection import StratifiedKFold, cross_val_score

from skldp import GraphData
from skldp._torch import module_on, resolve_device
from skldp.mechanisms import EdgeRR
from skldp.model_selection import PairData, sample_non_edges
from skldp.models import (
    GATClassifier,
    GCNClassifier,
    HadamardLinkPredictor,
    LPGNNClassifier,
    MLPHead,
    RGNNClassifier,
    SAGEClassifier,
    SolitudeClassifier,
    VGAELinkPredictor,
)

KW = dict(epochs=8, device="cpu", random_state=0)

def _rgnn():
    pytest.importorskip("pymetis")  # RGNN's default label-proportion term partitions with METIS
    return RGNNClassifier(eps_y=np.inf, classes=[0, 1], n_clusters=4, **KW)


# One fast configuration of every graph classifier of skldp.models.
GRAPH_CLASSIFIERS = {
    "gcn": lambda: GCNClassifier(**KW),
    "sage": lambda: SAGEClassifier(**KW),
    "gat": lambda: GATClassifier(heads=2, **KW),
    "lpgnn": lambda: LPGNNClassifier(eps_y=np.inf, classes=[0, 1], x_steps=1, **KW),
    "rgnn": lambda: _rgnn(),
    "solitude": lambda: SolitudeClassifier(**KW),
}


@pytest.fixture
def graph(small_graph):
    A, X, y = small_graph
    return GraphData(X, A), y


# ------------------------------------------------------------ decision_function
@pytest.mark.parametrize("name", GRAPH_CLASSIFIERS)
def test_binary_decision_function_is_one_column(graph, name):
    G, y = graph
    rows = np.arange(0, len(y), 2)
    clf = GRAPH_CLASSIFIERS[name]().fit(G[rows], y[rows])
    s = clf.decision_function(G)
    assert s.shape == (len(y),)
    P = clf.predict_proba(G)
    assert P.shape == (len(y), 2)
    # the score of classes_[1]: positive exactly where classes_[1] is the more probable one
    np.testing.assert_array_equal(s > 0, P[:, 1] > P[:, 0])
    np.testing.assert_allclose(P[:, 1], 1 / (1 + np.exp(-s)), rtol=1e-5)
    np.testing.assert_array_equal(clf.predict(G), clf.classes_[(s > 0).astype(int)])


def test_multiclass_decision_function_keeps_one_column_per_class(graph):
    G, y = graph
    y3 = np.arange(len(y)) % 3
    clf = GCNClassifier(**KW).fit(G, y3)
    assert clf.decision_function(G).shape == (len(y), 3)


def test_predict_takes_the_largest_logit_without_the_softmax(graph, monkeypatch):
    # the class of the largest logit is the most probable one: predict skips the
    # softmax (at millions of rows, passes over n x classes float64 values on the host)
    G, y = graph
    y3 = np.arange(len(y)) % 3
    clf = GCNClassifier(**KW).fit(G, y3)
    want = clf.classes_[np.argmax(clf.predict_proba(G), axis=1)]
    monkeypatch.setattr(type(clf), "predict_proba", None)
    np.testing.assert_array_equal(clf.predict(G), want)


@pytest.mark.parametrize("name", ["gcn", "gat", "solitude"])
def test_roc_auc_in_cross_val_score(graph, name):
    G, y = graph
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(GRAPH_CLASSIFIERS[name](), G, y, cv=cv, scoring="roc_auc")
    assert np.all(np.isfinite(scores))
    assert scores.mean() > 0.8  # two well separated blocks


# -------------------------------------------------------------------- bad input
@pytest.mark.parametrize("name", GRAPH_CLASSIFIERS)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_features_are_refused(graph, name, bad):
    G, y = graph
    X = np.array(G.features, dtype=float)
    X[7, 2] = bad  # a node outside the fitted rows still enters the propagation
    Gbad = GraphData(X, G.adjacency)
    rows = np.arange(0, len(y), 2)
    with pytest.raises(ValueError, match=r"NaN or infinite.*row 7, column 2"):
        GRAPH_CLASSIFIERS[name]().fit(Gbad[rows], y[rows])
    clf = GRAPH_CLASSIFIERS[name]().fit(G[rows], y[rows])
    with pytest.raises(ValueError, match="NaN or infinite"):
        clf.predict(Gbad[rows])


def test_non_finite_sparse_features_are_refused(graph):
    G, y = graph
    X = sp.csr_matrix(np.asarray(G.features))
    X.data[3] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        GCNClassifier(**KW).fit(GraphData(X, G.adjacency), y)


# ----------------------------------------------------------------- random state
def _pairs(G, y):
    """40 edges and 40 non-edges (random pairs drew pairs among the edges, labelled both)."""
    A = sp.triu(G.adjacency, 1).tocoo()
    pos = np.stack([A.row, A.col], axis=1)[:40]
    neg = sample_non_edges(G, 40, random_state=0)
    pairs = np.vstack([pos, neg])
    return PairData(G, pairs), np.r_[np.ones(len(pos)), np.zeros(len(neg))].astype(int)


ALL_MODELS = {
    **GRAPH_CLASSIFIERS,
    "mlp": lambda: MLPHead(hidden_layer_sizes=(8,), **KW),
    "solitude_noisy": lambda: SolitudeClassifier(dropout=0.5, **KW),
    "vgae": lambda: VGAELinkPredictor(dropout=0.3, epochs=8, min_epochs=1, device="cpu",
                                      random_state=0),
    "hadamard": lambda: HadamardLinkPredictor("mlp", hidden_layer_sizes=(8,), dropout=0.3,
                                              epochs=8, device="cpu", random_state=0),
}


def _fit_predict(name, G, y):
    est = ALL_MODELS[name]()
    if name in ("vgae", "hadamard"):
        X, t = _pairs(G, y)
        est.fit(X, t)
        with warnings.catch_warnings():   # the training pairs: edges of the graph, as meant
            warnings.filterwarnings("ignore", ".*pairs scored are edges of the graph")
            return est.decision_function(X)
    if name == "solitude_noisy":
        G = EdgeRR(4.0, random_state=0).fit_transform(G)
    if name == "mlp":
        return est.fit(np.asarray(G.features), y).predict_proba(np.asarray(G.features))
    return est.fit(G, y).predict_proba(G)


@pytest.mark.parametrize("make", [
    lambda: GATClassifier(heads=2, epochs=2, device="cpu", random_state=0),
    lambda: SolitudeClassifier(epochs=3, device="cpu", random_state=0),
], ids=["gat", "solitude"])
def test_fits_on_several_threads_are_reproducible(make):
    """The same random_state gives the same model with several CPU threads: the
    gradients of gathered rows are scatter-adds, not indexing's accumulating index_put
    (which summed in a different order from run to run)."""
    rng = np.random.default_rng(0)
    n = 1500
    A = sp.random(n, n, density=0.01, random_state=1, format="csr")
    G = GraphData(rng.random((n, 10)), ((A + A.T) > 0).astype(float))
    y = rng.integers(0, 3, n)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        runs = [make().fit(G, y).predict_proba(G) for _ in range(4)]
    finally:
        torch.set_num_threads(threads)
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0])


@pytest.mark.parametrize("name", ALL_MODELS)
def test_fit_leaves_the_global_torch_generator_alone(graph, name):
    G, y = graph
    torch.manual_seed(123)
    before = torch.get_rng_state()
    _fit_predict(name, G, y)
    assert torch.equal(torch.get_rng_state(), before)


@pytest.mark.long
@pytest.mark.parametrize("name", ALL_MODELS)
def test_training_ignores_global_draws_made_meanwhile(graph, name, monkeypatch):
    """Another thread drawing from torch's global generator (e.g. a concurrent CV fold
    under joblib's threading backend) must not change this fit."""
    G, y = graph
    ref = _fit_predict(name, G, y)
    np.testing.assert_array_equal(_fit_predict(name, G, y), ref)  # same random_state
    step = torch.optim.Adam.step

    def step_with_foreign_draw(self, *args, **kwargs):
        torch.rand(5)  # what a concurrent fit would do between two of our steps
        return step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", step_with_foreign_draw)
    torch.manual_seed(999)
    np.testing.assert_array_equal(_fit_predict(name, G, y), ref)


def test_different_random_states_give_different_models(graph):
    G, y = graph
    a = GCNClassifier(**{**KW, "random_state": 0}).fit(G, y).decision_function(G)
    b = GCNClassifier(**{**KW, "random_state": 1}).fit(G, y).decision_function(G)
    assert not np.allclose(a, b)


def test_cv_scores_are_reproducible_under_the_threading_backend(graph):
    from joblib import parallel_config

    G, y = graph
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    runs = []
    for _ in range(2):  # the folds' fits run concurrently in two threads
        with parallel_config(backend="threading", n_jobs=2):
            runs.append(cross_val_score(GCNClassifier(**KW), G, y, cv=cv, n_jobs=2,
                                        scoring="neg_log_loss"))
    np.testing.assert_array_equal(runs[0], runs[1])


# ----------------------------------------------------------------------- device
def test_cuda_without_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"device='cuda'.*torch\.cuda\.is_available\(\) is "
                                         r"False"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match=r"device='cuda:1'"):
        resolve_device("cuda:1")


@pytest.mark.parametrize("name", GRAPH_CLASSIFIERS)
def test_graph_classifiers_ignore_the_default_device(graph, name, under_meta):
    """Every tensor is made on the estimator's device: under a "meta" default device
    (which would fail on the first tensor made without ``device=``) the results equal
    those of a run with the usual default."""
    G, y = graph
    rows = np.arange(0, len(y), 2)

    def run():
        return GRAPH_CLASSIFIERS[name]().fit(G[rows], y[rows]).predict_proba(G)
    np.testing.assert_array_equal(under_meta(run), run())


def test_module_on_another_device_is_a_copy():
    m = torch.nn.Linear(3, 2)
    assert module_on(m, torch.device("cpu")) is m
    other = module_on(m, torch.device("meta"))  # "meta" stands in for a GPU
    assert other is not m and other.weight.device.type == "meta"
    assert m.weight.device.type == "cpu"


@pytest.mark.parametrize("name", GRAPH_CLASSIFIERS)
def test_predict_elsewhere_keeps_the_fitted_weights_on_the_cpu(graph, name):
    """A predict on another device ("meta" stands in for CUDA) that fails, on bad input
    or in the forward, leaves ``module_`` on the CPU, where it pickles anywhere."""
    G, y = graph
    clf = GRAPH_CLASSIFIERS[name]().fit(G, y)
    expected = clf.predict_proba(G)
    clf.set_params(device="meta")
    with pytest.raises(ValueError, match="NaN"):
        clf.predict(G.with_features(np.full(G.features.shape, np.nan)))
    with pytest.raises((RuntimeError, NotImplementedError)):
        clf.predict(G)  # meta tensors hold no values: the copy back fails
    assert {p.device.type for p in clf.module_.parameters()} == {"cpu"}
    np.testing.assert_allclose(clf.set_params(device="cpu").predict_proba(G), expected)


def test_fit_with_unavailable_cuda_fails_before_training(graph, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    G, y = graph
    with pytest.raises(ValueError, match="torch.cuda.is_available"):
        GCNClassifier(epochs=2, device="cuda").fit(G, y)


def test_cuda_index_beyond_the_visible_devices(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device("cuda:0") == torch.device("cuda", 0)
    with pytest.raises(ValueError, match=r"device='cuda:3'.*1 CUDA device"):
        resolve_device("cuda:3")


@pytest.mark.parametrize("name", ["mps", "xpu", "hpu", "privateuseone"])
def test_unavailable_non_cuda_device_is_a_clear_error(name, monkeypatch):
    """A device type torch knows but this machine lacks ("mps" on Linux) is refused
    up front, as CUDA is: it was accepted, and the fit failed in torch's own error
    (RuntimeError "PyTorch is not linked with support for mps devices")."""
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    if hasattr(torch, "xpu"):
        monkeypatch.setattr(torch.xpu, "is_available", lambda: False)
    with pytest.raises(ValueError, match=rf"device='{name}'.*not available"):
        resolve_device(name)
    with pytest.raises(ValueError, match=rf"device='{name}:0'"):
        resolve_device(f"{name}:0")


def test_available_non_cuda_device_passes(monkeypatch):
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert resolve_device("mps") == torch.device("mps")
    assert resolve_device("meta") == torch.device("meta")   # values-free, for tests


def test_fit_on_unavailable_mps_fails_before_training(graph, monkeypatch):
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    G, y = graph
    with pytest.raises(ValueError, match="device='mps'"):
        MLPHead(epochs=2, device="mps").fit(G, y)


def test_auto_picks_cuda_when_available(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == torch.device("cuda")
    assert resolve_device(None) == torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", 3.5])
def test_unknown_device_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="device"):
        resolve_device(bad)


def test_explicit_devices_pass_through():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")


def test_importing_and_fitting_leave_the_users_warning_filters_alone():
    # torch's "Sparse CSR tensor support is in beta" warning is silenced where skldp builds
    # its CSR tensors, not by a filter installed at import. Fresh interpreter: torch warns
    # once per process.
    code = textwrap.dedent("""
        import warnings

        def csr_filters():
            return [f for f in warnings.filters if f[1] is not None
                    and "Sparse CSR" in f[1].pattern]

        import numpy as np, scipy.sparse as sp
        import skldp.central, skldp.models, skldp.propagation
        assert not csr_filters(), "importing skldp installed a warning filter"
        from skldp import GraphData
        from skldp.models import GCNClassifier, SolitudeClassifier
        rng = np.random.default_rng(0)
        A = sp.random(30, 30, density=0.2, random_state=0, format="csr")
        G = GraphData(sp.csr_matrix(rng.random((30, 4))), (A + A.T).tocsr())
        y = np.repeat([0, 1], 15)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            for clf in (GCNClassifier(epochs=2), SolitudeClassifier(epochs=2)):
                clf.set_params(device="cpu", random_state=0).fit(G, y)
        assert not [w for w in seen if "Sparse CSR tensor support" in str(w.message)]
        assert not csr_filters(), "fitting left a warning filter"
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"


def test_rows_of_the_logits_are_taken_by_index_select():
    # the same rows and gradient as advanced indexing, whose backward sorts the indices
    # (two sorts and a scatter per epoch on CUDA); index_select's is one scatter-add
    from skldp.models._base import take_rows
    z = torch.randn(50, 3, requires_grad=True)
    positions = torch.tensor([7, 3, 41, 0, 19])
    out = take_rows(z, positions)
    assert type(out.grad_fn).__name__.startswith("IndexSelectBackward")
    (out ** 2).sum().backward()
    got, z.grad = z.grad.clone(), None
    (z[positions] ** 2).sum().backward()
    torch.testing.assert_close(out, z[positions], rtol=0, atol=0)
    torch.testing.assert_close(got, z.grad, rtol=0, atol=0)
    assert take_rows(z, slice(2, 4)).shape == (2, 3)   # anything else: indexing as before


# ---------------------------------------------------------------------- patience=None
@pytest.mark.parametrize("name", [*GRAPH_CLASSIFIERS, "mlp"])
def test_patience_none_runs_every_epoch_and_keeps_the_best(graph, name):
    """``patience=None`` was allowed by the declared constraints but refused by the fit's
    own check. It never stops: every epoch runs, and the best validated iterate is kept
    (the model of a patience no run reaches)."""
    G, y = graph
    X = np.asarray(G.features) if name == "mlp" else G
    make = ALL_MODELS[name]
    # a large step: the validation loss of GCN and the MLP is lowest early (epochs 5-6)
    kw = dict(epochs=40, lr=0.3, early_stopping=True, validation_fraction=0.3)
    est = make().set_params(patience=None, **kw).fit(X, y)
    assert est.n_iter_ == 40 and len(est.validation_scores_) == 40
    ref = make().set_params(patience=10 ** 6, **kw).fit(X, y)
    assert est.best_epoch_ == ref.best_epoch_
    np.testing.assert_array_equal(est.predict_proba(X), ref.predict_proba(X))
    scores = np.asarray(est.validation_scores_, dtype=float)
    if scores.ndim == 1:   # one criterion: the kept epoch is the first of the lowest loss
        assert scores[est.best_epoch_] <= scores.min() + 1e-6
    if name in ("gcn", "mlp"):   # the kept weights: those after epoch best_epoch_
        assert est.best_epoch_ < 20
        last = make().set_params(patience=None, **{**kw, "epochs": est.best_epoch_ + 1})
        np.testing.assert_allclose(last.fit(X, y).predict_proba(X), est.predict_proba(X),
                                   rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("early_stopping", [True, False])
def test_a_gnn_whose_loss_overflows_is_refused(early_stopping, small_graph):
    # Before: GCN fitted on features near float32's limit, predicted NaN probabilities
    # and classes_[0] for every node
    A, X, y = small_graph
    G = GraphData(np.abs(X) / np.abs(X).max() * 3e38, A)
    clf = GCNClassifier(epochs=5, early_stopping=early_stopping, random_state=0)
    with pytest.raises(ValueError, match=r"Training diverged: the training loss .* is nan.*"
                       r"scale the features"):
        clf.fit(G, y)
    assert not hasattr(clf, "classes_")   # a failed fit leaves the classifier as it was
