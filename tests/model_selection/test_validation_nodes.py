"""Validation nodes: one parameter, ``validation``, for every trainable model.

The rows of ``fit`` named by ``validation`` never train, select the weights,
work inside a Pipeline and inside GridSearchCV(cv=PredefinedSplit(...)).
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, PredefinedSplit
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import Normalizer

from skldp import GraphData, NodeWise
from skldp.central import DPGNNClassifier, DPMLPClassifier
from skldp.exceptions import PrivacyLeakWarning
from skldp.model_selection._validation import check_validation, validation_split
from skldp.models import (
    GATClassifier,
    GCNClassifier,
    LPGNNClassifier,
    MLPHead,
    RGNNClassifier,
    SAGEClassifier,
    SolitudeClassifier,
)


def _graph(n=150, c=3, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % c
    P = np.where(y[:, None] == y[None, :], 0.08, 0.005)
    A = np.triu(rng.random((n, n)) < P, 1)
    A = (A | A.T).astype(float)
    X = np.abs(rng.normal(size=(n, 6)))
    X[np.arange(n), y] += 1.0
    idx = rng.permutation(n)
    return GraphData(X, sp.csr_array(A)), y, idx[:60], idx[60:100], idx[100:]


FAST = dict(epochs=12, device="cpu", random_state=0)
MODELS = {
    "gcn": lambda: GCNClassifier(**FAST),
    "sage": lambda: SAGEClassifier(**FAST),
    "gat": lambda: GATClassifier(heads=2, **FAST),
    "mlp": lambda: MLPHead(hidden_layer_sizes=(8,), **FAST),
    # Their label denoising reads every fit row's (noisy) label, the validation rows'
    # included (class docs); without it the validation rows stay out of training.
    "lpgnn": lambda: LPGNNClassifier(eps_y=np.inf, classes=range(3), y_steps=0, **FAST),
    "rgnn": lambda: RGNNClassifier(eps_y=np.inf, classes=range(3), hops_y=0, alpha=0.0,
                                   **FAST),
    "solitude": lambda: SolitudeClassifier(**FAST),
}


def test_split_of_the_fit_rows():
    G, y, tr, va, _ = _graph()
    fit = np.sort(np.r_[tr, va])
    X = G[fit]

    class Owner:
        classes_ = np.arange(3)
    train, val = validation_split(X, y[fit], validation=va, early_stopping=True,
                                  validation_fraction=0.1, seed=0, owner=Owner())
    np.testing.assert_array_equal(np.sort(fit[val]), np.sort(va))
    np.testing.assert_array_equal(np.sort(fit[train]), np.sort(tr))
    mask = np.isin(np.arange(G.n_nodes), va)
    t2, v2 = validation_split(X, y[fit], validation=mask, early_stopping=True,
                              validation_fraction=0.1, seed=0, owner=Owner())
    np.testing.assert_array_equal(v2, val)
    # without validation nodes: a stratified fraction; without early stopping: nothing
    t3, v3 = validation_split(X, y[fit], validation=None, early_stopping=True,
                              validation_fraction=0.25, seed=0, owner=Owner())
    assert len(v3) == 25 and len(t3) == 75
    t4, v4 = validation_split(X, y[fit], validation=None, early_stopping=False,
                              validation_fraction=0.25, seed=0, owner=Owner())
    assert v4 is None and len(t4) == 100
    with pytest.raises(ValueError, match="plain array"):
        validation_split(np.asarray(X), y[fit], validation=va, early_stopping=True,
                         validation_fraction=0.1, seed=0, owner=Owner())
    with pytest.raises(TypeError, match="not a GraphData"):
        check_validation(G[va], Owner())
    with pytest.raises(TypeError, match="integer"):
        check_validation(np.array([0.5, 1.5]), Owner())


@pytest.mark.parametrize("name", sorted(MODELS))
def test_validation_rows_select_and_never_train(name):
    """Wrong labels on the validation rows change the scores, never the training."""
    G, y, tr, va, te = _graph()
    fit = np.r_[tr, va]
    y_wrong = y[fit].copy()
    y_wrong[len(tr):] = (y_wrong[len(tr):] + 1) % 3
    a = MODELS[name]().set_params(validation=va, patience=100).fit(G[fit], y[fit])
    # other labels of the same users: another simulation (a device answers a collection once)
    b = MODELS[name]().set_params(validation=va, patience=100).fit(
        G.new_simulation()[fit], y_wrong)
    np.testing.assert_allclose(a.loss_curve_, b.loss_curve_, rtol=1e-5)
    assert len(a.validation_scores_) == a.n_iter_ == 12
    assert not np.allclose(a.validation_scores_, b.validation_scores_)
    scores = np.asarray(a.validation_scores_)
    if scores.ndim == 1:
        assert a.best_epoch_ == int(np.argmin(scores))
    else:   # GAT on given validation nodes: loss and error, the kept epoch best on both so far
        assert np.all(scores[a.best_epoch_] <= scores[:a.best_epoch_ + 1].min(axis=0))
    # the same fit as on the training rows alone with no early stopping, up to the epoch kept
    c = MODELS[name]().set_params(early_stopping=False).fit(G[tr], y[tr])
    assert len(c.loss_curve_) == 12
    with pytest.raises(ValueError, match="none of the"):
        MODELS[name]().set_params(validation=va).fit(G[tr], y[tr])


@pytest.mark.parametrize("name", ["gcn", "lpgnn", "solitude"])
def test_a_class_with_one_fit_row_is_never_held_out(name, monkeypatch):
    """With one row of a class among the fit rows, early stopping's held-out share
    leaves that row in the loss (it used to hold it out for some seeds: the class
    was in classes_ but never trained on, never predicted)."""
    import skldp.models._base as base
    import skldp.models._solitude as solitude
    from skldp.utils._random import training_seed
    G, y, *_ = _graph()
    fit = np.r_[np.flatnonzero(y == 0)[:15], np.flatnonzero(y == 1)[:15],
                np.flatnonzero(y == 2)[:1]]
    # a seed whose plain draw of 10 % of the rows holds the lone row out
    from sklearn.model_selection import train_test_split
    rs = next(s for s in range(200) if len(fit) - 1 in train_test_split(
        np.arange(len(fit)), test_size=0.1, random_state=training_seed(s) % 2**31)[1])
    seen = []
    module = solitude if name == "solitude" else base

    def spy(X, y_enc, **kw):
        local, val = validation_split(X, y_enc, **kw)
        seen.append((set(y_enc[local].tolist()), val))
        return local, val
    monkeypatch.setattr(module, "validation_split", spy)
    MODELS[name]().set_params(random_state=rs).fit(G[fit], y[fit])
    (trained, val), = seen
    assert trained == {0, 1, 2} and len(val) > 0


@pytest.mark.parametrize("name", ["gcn", "mlp", "rgnn", "solitude"])
def test_validation_nodes_that_hold_every_fit_row_of_a_class_warn(name):
    """A class all of whose fit rows are validation nodes is in classes_ but never
    trained on, never predicted: it was silent (the validation_fraction split keeps a
    training row of every class). A warning only: the fit is the same."""
    G, y, tr, va, _ = _graph()
    fit = np.r_[tr, va]
    va2 = np.r_[va, tr[y[tr] == 2]]              # every fit row of class 2 validates
    assert set(y[np.setdiff1d(fit, va2)]) == {0, 1}
    with pytest.warns(UserWarning, match=r"class\(es\) \[2\].*move some of its nodes") as rec:
        a = MODELS[name]().set_params(validation=va2).fit(G[fit], y[fit])
    assert 2 in a.classes_
    assert sum("move some of its nodes" in str(w.message) for w in rec) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = MODELS[name]().set_params(validation=va2).fit(G[fit], y[fit])
    np.testing.assert_array_equal(a.loss_curve_, b.loss_curve_)
    # every class keeps a training row: no such warning
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        MODELS[name]().set_params(validation=va).fit(G[fit], y[fit])
    assert not [w for w in rec if "move some of its nodes" in str(w.message)]


def test_the_untrained_class_warning_comes_after_the_label_read_is_charged():
    # The warning depends on the labels' values: a fit refused the read of the clean
    # labels (a budget, the labels collected by a mechanism) must not give it.
    from skldp.mechanisms import LabelRandomizedResponse
    from skldp.population import BudgetExceededError
    G, y, tr, va, _ = _graph()
    G = GraphData(G.features, G.adjacency, budget=2.0).with_features(G.features,
                                                                     source="public")
    fit = np.r_[tr, va]
    LabelRandomizedResponse(1.0, classes=[0, 1, 2], random_state=0).fit().randomize(
        y[fit], G[fit])
    va2 = np.r_[va, tr[y[tr] == 2]]
    n = len(G.ledger.entries())
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with pytest.raises(BudgetExceededError, match="clean labels"):
            GCNClassifier(validation=va2, **FAST).fit(G[fit], y[fit])
    assert not [w for w in rec if "move some of its nodes" in str(w.message)]
    assert len(G.ledger.entries()) == n


def test_pipeline_and_grid_search_with_predefined_split():
    """GridSearchCV(cv=PredefinedSplit): each fold's fit validates on its own validation nodes.

    The validation nodes are split over two folds: fold k scores its half and
    early-stops on the other half (the fold's training rows); the refit
    early-stops on all of them. No held-out label reaches a fit."""
    G, y, tr, va, te = _graph()
    fit = np.r_[tr, va]
    test_fold = np.r_[np.full(len(tr), -1), np.arange(len(va)) % 2]
    seen = []

    class Spy(GCNClassifier):
        def fit(self, X, y):
            seen.append(set(X.rows.tolist()))
            return super().fit(X, y)

    pipe = Pipeline([("norm", NodeWise(Normalizer(norm="l1"))),
                     ("clf", Spy(validation=va, **FAST))])
    search = GridSearchCV(pipe, {"clf__lr": [0.01, 0.05]}, cv=PredefinedSplit(test_fold))
    search.fit(G[fit], y[fit])
    assert len(seen) == 5   # 2 settings x 2 folds + the refit
    for rows, k in zip(seen[:4], [0, 1, 0, 1], strict=True):
        held_out = set(va[test_fold[len(tr):] == k].tolist())
        assert not rows & held_out                 # no held-out label reaches fit
        assert rows >= set(tr.tolist())
    assert seen[4] == set(fit.tolist())
    best = search.best_estimator_[-1]
    assert best.validation_scores_ and best.best_epoch_ is not None
    assert 0 <= search.score(G[te], y[te]) <= 1
    # cloning keeps the validation nodes
    np.testing.assert_array_equal(clone(pipe)[-1].validation, va)


def test_label_mechanism_randomizes_the_validation_labels_too():
    from skldp.mechanisms import LabelRandomizedResponse
    G, y, tr, va, te = _graph()
    fit = np.r_[tr, va]
    mech = LabelRandomizedResponse(1.0, classes=[0, 1, 2], random_state=3)
    a = GCNClassifier(validation=va, label_mechanism=mech, **FAST).fit(G[fit], y[fit])
    noisy = clone(mech).fit().randomize(y[fit], G[fit])
    b = GCNClassifier(validation=va, **FAST).fit(G[fit], noisy)
    np.testing.assert_allclose(a.validation_scores_, b.validation_scores_, rtol=1e-5)


@pytest.mark.parametrize("cls", [DPGNNClassifier, DPMLPClassifier])
def test_central_trainers_select_an_iterate_with_the_same_noise_and_budget(cls):
    G, y, tr, va, te = _graph(n=300)
    fit = np.r_[tr, va]
    kw = dict(classes=range(3), batch_size=40, n_steps=15, target_epsilon=4.0,
              random_state=0, device="cpu")
    if cls is DPGNNClassifier:
        kw["max_degree"] = 3
    else:
        kw["accountant"] = "hypergeometric"
    plain = cls(**kw).fit(G[tr], y[tr])
    assert plain.n_iter_ == 15 and plain.best_step_ is None and plain.validation_scores_ == []
    with pytest.warns(PrivacyLeakWarning, match="validation"):
        sel = cls(validation=va, **kw).fit(G[fit], y[fit])
    # the validation rows are not training rows: same N, noise and epsilon as fit(G[tr])
    assert sel.n_train_ == plain.n_train_ == len(tr)
    assert sel.epsilon_ == plain.epsilon_ and sel.noise_std_ == plain.noise_std_
    assert len(sel.validation_scores_) == 15
    assert sel.best_step_ == int(np.argmin(sel.validation_scores_))
    if sel.best_step_ == 14:   # the last iterate is kept: the very model of fit(G[tr])
        np.testing.assert_allclose(sel.predict_proba(G[te]), plain.predict_proba(G[te]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        stop = cls(validation=va, patience=2, **kw).fit(G[fit], y[fit])
    assert stop.n_iter_ <= 15 and stop.steps_ == 15 and stop.epsilon_ == plain.epsilon_


def test_stratified_fraction_split_is_scikit_learns():
    # the heads' validation rows: scikit-learn's stratified split, draw for draw (without
    # its per-row Python lists), for encoded, gapped, narrow and float labels
    from sklearn.model_selection import train_test_split

    from skldp.model_selection._validation import _stratified_split
    rng = np.random.default_rng(0)
    checked = 0
    for trial in range(120):
        n, c = int(rng.integers(20, 2000)), int(rng.integers(2, 12))
        y = rng.choice(c, size=n, p=rng.dirichlet(np.ones(c)))
        y = [y, y * 7 + 3, y.astype(np.int32), y.astype(float) / 2][trial % 4]
        fraction = float(rng.choice([0.1, 0.25, 1 / 3, 0.5]))
        seed = int(rng.integers(0, 2**31))
        n_val = int(np.ceil(fraction * n))
        counts = np.unique(y, return_counts=True)[1]
        if counts.min() < 2 or min(n_val, n - n_val) < len(counts):
            continue
        want = train_test_split(np.arange(n), test_size=fraction, random_state=seed, stratify=y)
        got = _stratified_split(y, n_val, seed)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        checked += 1
    assert checked > 60


@pytest.mark.parametrize("seed", range(8))
def test_fraction_split_is_stratified_with_a_domain_class_absent_from_the_fit_rows(seed):
    # A public label domain (LPGNN's classes, a label mechanism's) may hold a class that
    # no fit row has: the split was then a plain draw, its count 0 failing "every class
    # has two rows" (e.g. 3 and 1 validation rows of two classes of 20 instead of 2 and 2)
    from types import SimpleNamespace
    y_enc = np.repeat([0, 2], 20)            # classes_ [3, 5, 7]: no 5 among the rows
    owner = SimpleNamespace(classes_=np.array([3, 5, 7]))
    train, val = validation_split(np.zeros((40, 1)), y_enc, validation=None,
                                  early_stopping=True, validation_fraction=0.1, seed=seed,
                                  owner=owner)
    # the same draw as for the two classes encoded without the gap
    t2, v2 = validation_split(np.zeros((40, 1)), y_enc // 2, validation=None,
                              early_stopping=True, validation_fraction=0.1, seed=seed,
                              owner=SimpleNamespace(classes_=np.array([3, 7])))
    np.testing.assert_array_equal(np.bincount(y_enc[val], minlength=3), [2, 0, 2])
    np.testing.assert_array_equal(train, t2)
    np.testing.assert_array_equal(val, v2)
