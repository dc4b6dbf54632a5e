"""Tests of the full-batch GNN classifiers (GCN, GraphSAGE, GAT) and their label-LDP option."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.baselines import LabelPropagationClassifier
from skldp.mechanisms import LabelRandomizedResponse
from skldp.models import GATClassifier, GCNClassifier, LPGNNClassifier, SAGEClassifier
from skldp.models._gnn import (
    OffsetSparseFeatures,
    PropagatedFeatures,
    SparseOperand,
    _matmul,
    feature_tensor,
    graph_tensors,
    offset_sparse_features,
)

CLASSIFIERS = [GCNClassifier, SAGEClassifier, GATClassifier]
FAST = dict(epochs=60, patience=30, device="cpu")


def sbm(n=180, c=3, p_in=0.08, p_out=0.005, d=8, signal=0.6, seed=0, sparse=False):
    """A homophilous SBM whose features carry a weak class signal."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % c
    P = np.where(y[:, None] == y[None, :], p_in, p_out)
    A = np.triu(rng.random((n, n)) < P, 1)
    A = (A | A.T).astype(float)
    X = rng.normal(size=(n, d))
    X[np.arange(n), y] += signal
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 1.5, X, 0.0))
    G = GraphData(X, sp.csr_array(A))
    idx = rng.permutation(n)
    return G, y, idx[: n // 2], idx[n // 2:]


@pytest.fixture(scope="module")
def data():
    return sbm()


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_learns_above_chance_and_uses_graph(cls, data):
    G, y, tr, te = data
    clf = cls(random_state=0, **FAST).fit(G[tr], y[tr])
    acc = clf.score(G[te], y[te])
    # chance is 1/3; the graph (homophily) + features make it easy
    assert acc > 0.7
    # Graph-only baseline: same model, features with no information (i.i.d. noise)
    noise = G.with_features(np.random.default_rng(1).normal(size=G.shape))
    acc_noise = cls(random_state=0, **FAST).fit(noise[tr], y[tr]).score(noise[te], y[te])
    assert acc > acc_noise


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_predict_proba_rows_sum_to_one(cls, data):
    G, y, tr, te = data
    clf = cls(random_state=0, epochs=5, device="cpu").fit(G[tr], y[tr])
    P = clf.predict_proba(G[te])
    assert P.shape == (len(te), 3)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-6)
    assert np.all(P >= 0)
    np.testing.assert_array_equal(clf.predict(G[te]), clf.classes_[P.argmax(axis=1)])
    np.testing.assert_array_equal(clf.classes_, [0, 1, 2])


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_prediction_depends_on_neighbours_features(cls, data):
    G, y, tr, te = data
    clf = cls(random_state=0, epochs=20, device="cpu").fit(G[tr], y[tr])
    A = G.adjacency
    v = int(te[0])
    nbrs = A[[v]].indices
    assert len(nbrs) > 0
    X2 = np.array(G.features, copy=True)
    X2[nbrs] += 5.0  # change only the neighbours of v, not v
    G2 = G.with_features(X2)
    p1 = clf.predict_proba(G[[v]])
    p2 = clf.predict_proba(G2[[v]])
    assert np.abs(p1 - p2).max() > 1e-4
    # a node far from the changes is unaffected (2-layer receptive field)
    two_hop = set(nbrs) | set((A[nbrs] @ A).indices) | set(A[nbrs].indices) | {v}
    far = [u for u in range(G.n_nodes) if u not in two_hop
           and not set(A[[u]].indices) & set(two_hop) and not set((A @ A)[[u]].indices)
           & set(nbrs)]
    if far:
        u = far[0]
        np.testing.assert_allclose(clf.predict_proba(G[[u]]), clf.predict_proba(G2[[u]]),
                                   atol=1e-5)


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_view_prediction_equals_full_graph_rows(cls, data):
    G, y, tr, te = data
    clf = cls(random_state=0, epochs=5, device="cpu").fit(G[tr], y[tr])
    full = clf.predict_proba(G)
    np.testing.assert_allclose(clf.predict_proba(G[te[::-1]]), full[te[::-1]], atol=1e-6)


def test_fit_is_reproducible(data):
    G, y, tr, te = data
    a = GCNClassifier(random_state=3, epochs=10, device="cpu").fit(G[tr], y[tr])
    b = GCNClassifier(random_state=3, epochs=10, device="cpu").fit(G[tr], y[tr])
    np.testing.assert_allclose(a.predict_proba(G[te]), b.predict_proba(G[te]))


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_pickle_roundtrip(cls, data):
    G, y, tr, te = data
    clf = cls(random_state=0, epochs=5, device="cpu").fit(G[tr], y[tr])
    clf2 = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(clf.predict_proba(G[te]), clf2.predict_proba(G[te]))
    assert next(clf2.module_.parameters()).device.type == "cpu"


def test_sparse_features(data):
    G, y, tr, te = sbm(sparse=True)
    assert sp.issparse(G.features)
    for cls in CLASSIFIERS:   # input (and GAT's attention) dropout: GAT needs more epochs
        clf = cls(random_state=0, epochs=100, device="cpu").fit(G[tr], y[tr])
        assert clf.score(G[te], y[te]) > 0.5


def test_string_labels(data):
    G, y, tr, te = data
    names = np.array(["a", "b", "c"])[y]
    clf = SAGEClassifier(random_state=0, **FAST).fit(G[tr], names[tr])
    assert set(clf.predict(G[te])) <= {"a", "b", "c"}


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_rejects_plain_arrays_and_missing_graph(cls, data):
    G, y, tr, te = data
    with pytest.raises(TypeError, match="GraphData"):
        cls(epochs=2).fit(np.asarray(G[tr]), y[tr])
    no_graph = GraphData(np.asarray(G))
    with pytest.raises(ValueError, match="adjacency"):
        cls(epochs=2).fit(no_graph[tr], y[tr])
    clf = cls(epochs=2, device="cpu").fit(G[tr], y[tr])
    with pytest.raises(TypeError, match="GraphData"):
        clf.predict(np.asarray(G[te]))


def test_rejects_unlabelled_and_bad_shapes(data):
    G, y, tr, te = data
    y_bad = y[tr].copy()
    y_bad[0] = -1
    with pytest.raises(ValueError, match="-1"):
        GCNClassifier(epochs=2).fit(G[tr], y_bad)
    with pytest.raises(ValueError, match="labels"):
        GCNClassifier(epochs=2).fit(G[tr], y[tr][:-1])
    clf = GCNClassifier(epochs=2, device="cpu").fit(G[tr], y[tr])
    other = GraphData(np.zeros((G.n_nodes, 3)), G.adjacency)
    with pytest.raises(ValueError, match="features"):
        clf.predict(other)


@pytest.mark.parametrize("param,value", [
    ("hidden_size", 0), ("hidden_size", 2.5), ("n_layers", 0), ("activation", "foo"),
    ("dropout", 1.0), ("dropout", -0.1), ("lr", 0.0), ("epochs", 0), ("weight_decay", -1.0),
    ("patience", 0), ("validation_fraction", 1.0), ("selection", "f1"),
])
def test_bad_hyperparameters(param, value, data):
    G, y, tr, te = data
    with pytest.raises(ValueError):
        GCNClassifier(epochs=2).set_params(**{param: value}).fit(G[tr], y[tr])


def test_bad_label_mechanism(data):
    G, y, tr, te = data
    with pytest.raises(TypeError, match="The 'label_mechanism' parameter of GCNClassifier must "
                                        "be an object implementing 'fit' and 'randomize'"):
        GCNClassifier(epochs=2, label_mechanism="rr").fit(G[tr], y[tr])


def test_device_cpu(data):
    G, y, tr, te = data
    clf = GCNClassifier(epochs=3, device="cpu").fit(G[tr], y[tr])
    assert next(clf.module_.parameters()).device.type == "cpu"


# ------------------------------------------------------------ validation set
def test_validation_nodes(data):
    G, y, tr, te = data
    val, test = te[:40], te[40:]
    fit = np.concatenate([tr, val])
    clf = GCNClassifier(random_state=0, validation=val, **FAST).fit(G[fit], y[fit])
    assert len(clf.validation_scores_) == clf.n_iter_
    assert clf.score(G[test], y[test]) > 0.7
    mask = np.zeros(G.n_nodes, bool)
    mask[val] = True   # a boolean mask over the nodes names the same validation rows
    same = GCNClassifier(random_state=0, validation=mask, **FAST).fit(G[fit], y[fit])
    assert same.validation_scores_ == clf.validation_scores_
    with pytest.raises(ValueError, match="none of the"):
        GCNClassifier(epochs=2, validation=val).fit(G[tr], y[tr])
    with pytest.raises(ValueError, match="nothing"):
        GCNClassifier(epochs=2, validation=val).fit(G[val], y[val])
    with pytest.raises(ValueError, match="early_stopping"):
        GCNClassifier(epochs=2, early_stopping=False, validation=val).fit(G[fit], y[fit])
    with pytest.raises(ValueError, match="entries"):
        GCNClassifier(epochs=2, validation=mask[:-1]).fit(G[fit], y[fit])
    with pytest.raises(ValueError, match="outside"):
        GCNClassifier(epochs=2, validation=[G.n_nodes]).fit(G[fit], y[fit])


def test_validation_rows_never_train(data):
    """The loss never sees the validation rows: wrong labels there change only the scores."""
    G, y, tr, te = data
    val = te[:40]
    fit = np.concatenate([tr, val])
    y_wrong = y[fit].copy()
    y_wrong[len(tr):] = (y_wrong[len(tr):] + 1) % 3  # if these leaked, training would change
    kw = dict(random_state=0, patience=1000, epochs=40, device="cpu", validation=val)
    a = GCNClassifier(**kw).fit(G[fit], y[fit])
    b = GCNClassifier(**kw).fit(G[fit], y_wrong)
    # identical training trajectory, only the monitored loss differs
    np.testing.assert_allclose(a.loss_curve_, b.loss_curve_, rtol=1e-5)
    assert not np.allclose(a.validation_scores_, b.validation_scores_)


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_selection_by_accuracy_keeps_the_first_best_epoch(cls, data):
    """With selection="accuracy" the scores are error rates and the kept weights the best's."""
    G, y, tr, te = data
    val = te[:40]
    fit = np.concatenate([tr, val])
    clf = cls(random_state=0, validation=val, selection="accuracy", **FAST).fit(G[fit], y[fit])
    scores = np.asarray(clf.validation_scores_)
    np.testing.assert_allclose(scores * len(val), np.round(scores * len(val)), atol=1e-9)
    assert clf.best_epoch_ == int(np.argmin(scores))   # the first epoch of the lowest error
    assert 1 - scores.min() == pytest.approx(clf.score(G[val], y[val]))
    by_loss = cls(random_state=0, validation=val, selection="loss", **FAST).fit(G[fit], y[fit])
    losses = np.asarray(by_loss.validation_scores_) * len(val)
    assert not np.allclose(losses, np.round(losses))   # cross-entropies, not error counts


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_selection_by_both_keeps_an_epoch_best_on_loss_and_accuracy(cls, data):
    """With selection="both" the scores are [loss, error] pairs; the kept epoch is as good
    as every earlier one on both, and its weights are restored."""
    G, y, tr, te = data
    val = te[:40]
    fit = np.concatenate([tr, val])
    clf = cls(random_state=0, validation=val, selection="both", **FAST).fit(G[fit], y[fit])
    scores = np.asarray(clf.validation_scores_)
    assert scores.shape == (clf.n_iter_, 2)
    b = clf.best_epoch_
    assert np.all(scores[b] <= scores[:b + 1].min(axis=0))
    assert 1 - scores[b, 1] == pytest.approx(clf.score(G[val], y[val]))
    by_loss = cls(random_state=0, validation=val, selection="loss", **FAST).fit(G[fit], y[fit])
    np.testing.assert_allclose(scores[:, 0], by_loss.validation_scores_[:clf.n_iter_], rtol=1e-5)


def test_validation_error_counts_only_rows_with_a_target():
    """The error rate ignores targets of -100 (dropped rows) and is 0 with none left;
    the rows with a target are found once per targets tensor, and forgotten after fit."""
    clf = LPGNNClassifier(selection="accuracy")
    logits = torch.tensor([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 2.0]])
    score = clf._validation_score
    every = torch.tensor([0, 0, 0, 1])
    assert float(score(logits, every, None)) == pytest.approx(0.25)
    some = torch.tensor([0, -100, -100, 0])      # one hit, one miss among the two kept
    assert float(score(logits, some, None)) == pytest.approx(0.5)
    assert clf._targets_seen[0] is some and clf._targets_seen[2] == 2
    assert float(score(logits, torch.full((4,), -100), None)) == 0.0
    both = LPGNNClassifier(selection="both")._validation_score(logits, some, None)
    assert both.shape == (2,) and float(both[1]) == pytest.approx(0.5)


def test_fit_forgets_its_validation_targets(data):
    G, y, tr, te = data
    clf = LPGNNClassifier(random_state=0, selection="accuracy", **FAST).fit(G[tr], y[tr])
    assert clf.validation_scores_ and "_targets_seen" not in clf.__dict__


def test_selection_auto_watches_both_only_on_given_validation_nodes(data, caplog):
    G, y, tr, te = data
    val = te[:40]
    fit = np.concatenate([tr, val])
    kw = dict(random_state=0, **FAST)
    given = GATClassifier(validation=val, **kw).fit(G[fit], y[fit])
    both = GATClassifier(validation=val, selection="both", **kw).fit(G[fit], y[fit])
    # (equal up to float rounding: the CPU's multi-threaded sums may reorder)
    np.testing.assert_allclose(given.validation_scores_, both.validation_scores_, rtol=1e-5)
    held_out = GATClassifier(**kw).fit(G[tr], y[tr])
    by_loss = GATClassifier(selection="loss", **kw).fit(G[tr], y[tr])
    np.testing.assert_allclose(held_out.validation_scores_, by_loss.validation_scores_,
                               rtol=1e-5)
    assert np.ndim(held_out.validation_scores_) == 1
    with caplog.at_level("INFO", logger="skldp.models"):
        GATClassifier(validation=val, verbose=1, **{**kw, "epochs": 2}).fit(G[fit], y[fit])
    assert "val_loss" in caplog.text and "val_error" in caplog.text


def test_selection_defaults():
    assert GCNClassifier().selection == SAGEClassifier().selection == "loss"
    assert GATClassifier().selection == "auto"
    assert LPGNNClassifier().selection == "accuracy"


# ------------------------------------------------------------------ label LDP
def test_label_mechanism_uses_only_noisy_labels(data):
    """Fitting with label_mechanism == fitting on the labels it would report."""
    G, y, tr, te = data
    val = te[:40]
    mech = LabelRandomizedResponse(1.0, classes=[0, 1, 2], random_state=7)
    rows = np.concatenate([tr, val])
    a = GCNClassifier(random_state=0, label_mechanism=mech, validation=val, **FAST).fit(
        G[rows], y[rows])
    noisy = LabelRandomizedResponse(1.0, classes=[0, 1, 2], random_state=7).fit().randomize(
        y[rows], G[rows])
    assert np.any(noisy != y[rows])
    b = GCNClassifier(random_state=0, validation=val, **FAST).fit(G[rows], noisy)
    np.testing.assert_allclose(a.predict_proba(G[te]), b.predict_proba(G[te]), atol=1e-6)
    np.testing.assert_allclose(a.validation_scores_, b.validation_scores_, rtol=1e-5)
    assert a.label_mechanism_ is not mech and a.label_mechanism_.epsilon_ == 1.0
    assert not hasattr(mech, "seed_")  # the parameter is not fitted in place


@pytest.mark.parametrize("make", [
    lambda lm, rs: GCNClassifier(epochs=2, device="cpu", label_mechanism=lm, random_state=rs),
    lambda lm, rs: LabelPropagationClassifier(label_mechanism=lm)])
def test_label_mechanism_with_a_random_state_object_draws_from_it(data, make, monkeypatch):
    """A RandomState given to the label mechanism is used, not copied: each fit is a new
    collection (as for the mechanism alone), and a model given the same object never
    draws the collection's key as its own training seed."""
    import skldp.models._base as models_base
    import skldp.utils._random as random_mod
    G, y, tr, te = data
    G = G.new_simulation()
    drawn, draw = [], random_mod.draw_seed
    trained, train = [], random_mod.training_seed

    def spy(rs):
        drawn.append(draw(rs))
        return drawn[-1]

    def spy_training(rs):
        trained.append(train(rs))
        return trained[-1]
    monkeypatch.setattr(random_mod, "draw_seed", spy)
    monkeypatch.setattr(models_base, "training_seed", spy_training)
    rs = np.random.RandomState(7)
    clf = make(LabelRandomizedResponse(1.0, classes=[0, 1, 2], random_state=rs), rs)
    ids = []
    for _ in range(3):
        drawn.clear()
        ids.append(clf.fit(G[tr], y[tr]).label_mechanism_.collection_.id)
        assert len(drawn) == len(set(drawn))   # no seed drawn twice from the one object
    assert len(set(ids)) == 3
    labels = [e for e in G.ledger.entries() if "labels" in e.spec.protects]
    assert len(labels) == 3
    # a clone (every search makes them) copies the object into both parameters: the two
    # copies draw the same number, but the model trains with a hash of it, never the key
    drawn.clear()
    clone(clf).fit(G[tr], y[tr])
    assert not set(trained) & set(drawn)


def test_label_mechanism_privacy_report_and_classes(data):
    G, y, tr, te = data
    G = G.new_simulation()     # users who have sent nothing yet
    clf = SAGEClassifier(label_mechanism=LabelRandomizedResponse(2.0, classes=[0, 1, 2, 3],
                                                                 random_state=0),
                         random_state=0, epochs=5, device="cpu").fit(G[tr], y[tr])
    np.testing.assert_array_equal(clf.classes_, [0, 1, 2, 3])  # the public domain
    assert clf.predict_proba(G[te]).shape[1] == 4
    rep = privacy_report(clf)
    assert rep.epsilon_for("labels") == 2.0
    # the GNN read the raw features on the server: the ledger says so (epsilon inf)
    assert np.isinf(rep.local_epsilon) and np.isinf(rep.epsilon_for("features"))
    assert [s.kind for s in rep.spends if s.model == "clear"] == ["SAGEClassifier"]
    clf.set_params(label_mechanism=None).fit(G[tr], y[tr])
    assert not hasattr(clf, "label_mechanism_")
    # the model still leads to its users' ledger, where the first fit's labels are spent;
    # this fit read the clean labels of users whose labels were collected: in the clear
    rep = privacy_report(clf)
    assert np.isinf(rep.local_epsilon) and np.isinf(rep.epsilon_for("labels"))
    assert [s.kind for s in rep.spends if s.model == "clear" and "labels" in s.protects] \
        == ["SAGEClassifier"]
    assert [s.step for s in rep.spends if s.model == "local"] == [""]   # not this fit's


def test_strong_label_noise_hurts(data):
    G, y, tr, te = data
    clean = GCNClassifier(random_state=0, **FAST).fit(G[tr], y[tr]).score(G[te], y[te])
    noisy = GCNClassifier(random_state=0, label_mechanism=LabelRandomizedResponse(
        0.01, classes=[0, 1, 2], random_state=0), **FAST).fit(G[tr], y[tr]).score(G[te], y[te])
    assert noisy < clean - 0.2


def test_classifiers_with_a_label_mechanism_refuse_unlabelled_markers(data):
    # a label mechanism reading its domain from y took -2 for a class, and randomized it
    from skldp.models import LPGNNClassifier
    G, y, tr, te = data
    y_bad = y[tr].copy()
    y_bad[0] = -2
    for clf in (GCNClassifier(epochs=2, label_mechanism=LabelRandomizedResponse(1.0)),
                LPGNNClassifier(epochs=2)):
        with pytest.raises(ValueError, match="unlabelled"):
            clf.fit(G[tr], y_bad)
    with pytest.raises(ValueError, match="continuous"):
        LPGNNClassifier(epochs=2).fit(G[tr], y[tr] + 0.5)


def test_label_mechanism_rejects_unknown_labels(data):
    G, y, tr, te = data
    mech = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0)
    with pytest.raises(ValueError, match="not in classes"):
        GCNClassifier(epochs=2, label_mechanism=mech).fit(G[tr], y[tr])


# ------------------------------------------------------- lazy feature operands
def test_lazy_operands_are_exact():
    rng = np.random.default_rng(0)
    n, d, h = 30, 12, 4
    A = sp.random(n, n, density=0.2, random_state=1, format="csr")
    S = sp.random(n, d, density=0.1, random_state=2, format="csr")
    c = rng.normal(size=d)
    X = S.toarray() + c
    W = torch.randn(d, h, dtype=torch.float32, requires_grad=True)
    G = GraphData(X, A)
    off = offset_sparse_features(G, "cpu", max_density=0.5)
    assert isinstance(off, OffsetSparseFeatures)
    ref = torch.as_tensor(X, dtype=torch.float32) @ W
    np.testing.assert_allclose(_matmul(off, W).detach(), ref.detach(), atol=1e-5)
    op = SparseOperand.from_scipy(A, "cpu")
    prop = PropagatedFeatures(off, op, 3)
    P3 = (A @ A @ A).toarray()
    ref3 = torch.as_tensor(P3 @ X, dtype=torch.float32) @ W
    out = _matmul(prop, W)
    np.testing.assert_allclose(out.detach(), ref3.detach(), rtol=1e-4, atol=1e-4)
    # gradients agree with the dense computation
    g1 = torch.autograd.grad(out.sum(), W)[0]
    g2 = torch.autograd.grad(ref3.sum(), W)[0]
    np.testing.assert_allclose(g1, g2, rtol=1e-4, atol=1e-4)
    dense = GraphData(rng.normal(size=(n, d)), A)
    assert offset_sparse_features(dense, "cpu") is None


def test_offset_sparse_features_keep_empty_rows_in_place():
    # Rows equal to the constant (first, middle, last) store nothing; the others
    # must stay on their own rows.
    rng = np.random.default_rng(3)
    n, d = 9, 6
    c = np.round(rng.normal(size=d), 3)
    X = np.tile(c, (n, 1))
    for i, j in [(1, 2), (1, 5), (4, 0), (7, 3)]:
        X[i, j] += i + j + 1.0
    off = offset_sparse_features(GraphData(X, sp.eye(n, format="csr")), "cpu")
    S = off.S.A.to_dense().numpy()
    assert np.count_nonzero(S) == 4
    np.testing.assert_allclose(S + off.offset.numpy(), X, atol=1e-6)


def test_feature_tensor_layouts_and_graph_tensors_without_features():
    A = sp.random(20, 20, density=0.2, random_state=0, format="csr")
    A = ((A + A.T) > 0).astype(float)
    S = sp.random(20, 50, density=0.02, random_state=1, format="csr")
    G = GraphData(S, A)
    op = feature_tensor(G, "cpu", operand=True)
    assert isinstance(op, SparseOperand)
    np.testing.assert_allclose(op.A.to_dense().numpy(), S.toarray(), rtol=1e-6)
    assert feature_tensor(G, "cpu").layout == torch.sparse_csr
    dense = feature_tensor(GraphData(S.toarray(), A), "cpu")
    assert dense.layout == torch.strided and dense.shape == (20, 50)
    x, g = graph_tensors(G, "cpu", "sage", features=False)
    assert x is None and g["a_mean"].shape == (20, 20)
    X = S.toarray()
    X[3, 4] = np.nan
    with pytest.raises(ValueError, match="finite|NaN"):
        graph_tensors(GraphData(X, A), "cpu", "sage", features=False)


# ------------------------------------------------------- dropout on sparse inputs
def test_sparse_operand_dropout_drops_the_same_entries_of_a_and_its_transpose():
    from skldp._torch import dropout_generator, torch_generator
    X = sp.random(30, 12, density=0.3, random_state=0, format="csr")
    op = SparseOperand.from_scipy(X, torch.device("cpu"))
    with dropout_generator(torch_generator(0)):
        dropped = op.dropout(0.5)
    A = dropped.A.to_dense().numpy()
    AT = dropped.AT.to_dense().numpy()
    np.testing.assert_array_equal(A.T, AT)
    kept = A != 0
    assert 0.3 < kept.sum() / X.nnz < 0.7
    np.testing.assert_allclose(A[kept], 2 * X.toarray()[kept], rtol=1e-6)   # scaled by 1/(1-p)
    assert op.dropout(0.5, training=False) is op and op.dropout(0.0) is op


def test_gnn_classifiers_drop_sparse_inputs_and_gat_attention():
    G, y, tr, te = sbm(sparse=True)
    assert sp.issparse(G.features)
    clf = GCNClassifier(device="cpu")
    data, _ = clf._prepare(G, torch.device("cpu"))
    module = clf._build_module(G.shape[1], 3)
    assert module.sparse_input_dropout and not module.first_is_deterministic(*data)
    gat = GATClassifier(heads=2, dropout=0.0, device="cpu")
    module = gat._build_module(G.shape[1], 3)
    assert all(layer.attention_dropout == 0.6 for layer in module.layers)
    assert not module.first_is_deterministic(*gat._prepare(G, torch.device("cpu"))[0])
    a = GATClassifier(heads=2, epochs=5, random_state=0, device="cpu").fit(G[tr], y[tr])
    b = GATClassifier(heads=2, epochs=5, random_state=0, device="cpu").fit(G[tr], y[tr])
    np.testing.assert_array_equal(a.predict_proba(G[te]), b.predict_proba(G[te]))
    with pytest.raises(ValueError, match="attention_dropout"):
        GATClassifier(attention_dropout=1.0, epochs=2).fit(G[tr], y[tr])


def test_gat_input_scale_makes_large_inputs_unit_scale():
    # Unbiased reports are large (multi-bit on Cora at eps = 1: +-1550); GAT's attention
    # saturates on them. "auto" divides by the root-mean-square entry when it exceeds 1.
    G, y, tr, te = sbm(seed=1)
    X = np.asarray(G.features)
    fits = {}
    for c in (10.0, 1000.0):
        Gc = GraphData(X * c, G.adjacency)
        clf = GATClassifier(heads=2, epochs=30, random_state=0, device="cpu").fit(Gc[tr], y[tr])
        rms = np.sqrt(np.mean((X * c) ** 2))
        assert clf.input_scale_ == pytest.approx(1 / rms, rel=1e-12)
        assert clf.module_.layers[0].input_scale == pytest.approx(1 / rms, rel=1e-12)
        assert clf.module_.layers[1].input_scale == 1.0
        fits[c] = clf.predict_proba(Gc[te])
    # the same network whatever the scale above 1 (up to rounding)
    np.testing.assert_allclose(fits[10.0], fits[1000.0], atol=1e-4)
    # features of unit scale or less (row-normalised, binary) are left as they are
    Gs = GraphData(X / np.abs(X).sum(axis=1, keepdims=True), G.adjacency)
    a = GATClassifier(heads=2, epochs=5, random_state=0, device="cpu").fit(Gs[tr], y[tr])
    b = GATClassifier(heads=2, epochs=5, input_scale=1.0, random_state=0,
                      device="cpu").fit(Gs[tr], y[tr])
    assert a.input_scale_ == 1.0
    np.testing.assert_array_equal(a.predict_proba(Gs[te]), b.predict_proba(Gs[te]))
    # an explicit constant is used as given
    d = GATClassifier(heads=2, epochs=2, input_scale=0.5, device="cpu").fit(G[tr], y[tr])
    assert d.input_scale_ == 0.5 and d.module_.layers[0].input_scale == 0.5


@pytest.mark.parametrize("value", [0.0, -1.0, np.inf, "max", True])
def test_gat_rejects_bad_input_scale(value, data):
    G, y, tr, te = data
    with pytest.raises(ValueError, match="input_scale"):
        GATClassifier(input_scale=value, epochs=2).fit(G[tr], y[tr])


@pytest.mark.parametrize("cls", [SAGEClassifier, LPGNNClassifier])
def test_numpy_integer_hidden_size_fits(cls, data):
    # A numpy integer (from a grid, np.arange) passes the parameter check: the SAGE layer
    # split its product with it, and torch's split refused a non-Python int.
    G, y, tr, te = data
    a = cls(hidden_size=np.int64(8), n_layers=np.int32(2), epochs=3, random_state=0,
            device="cpu").fit(G[tr], y[tr])
    b = cls(hidden_size=8, epochs=3, random_state=0, device="cpu").fit(G[tr], y[tr])
    np.testing.assert_array_equal(a.predict_proba(G[te]), b.predict_proba(G[te]))
