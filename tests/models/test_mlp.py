import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from skldp import GraphData
from skldp.models import MLPHead

# Tiny networks: one thread avoids oversubscription on the shared 2-core machine.
torch.set_num_threads(1)


def _blobs(n=300, d=6, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n)
    centres = rng.normal(size=(3, d)) * 4
    X = centres[y] + rng.normal(size=(n, d))
    return X, y


def _fast(**kw):
    # a fixed penalty: these tests are of the training, not of weight_decay="auto"'s choice
    params = dict(hidden_layer_sizes=(16,), epochs=60, dropout=0.1, weight_decay=5e-5,
                  random_state=0)
    params.update(kw)
    return MLPHead(**params)


def test_learns_separable_problem():
    X, y = _blobs()
    clf = _fast().fit(X[:200], y[:200])
    assert clf.score(X[200:], y[200:]) > 0.95
    assert clf.loss_curve_[-1] < clf.loss_curve_[0]


def test_string_labels_and_proba():
    X, y = _blobs()
    names = np.array(["cat", "dog", "eel"])[y]
    clf = _fast().fit(X, names)
    assert list(clf.classes_) == ["cat", "dog", "eel"]
    assert set(clf.predict(X)) <= set(names)
    P = clf.predict_proba(X)
    assert P.shape == (len(X), 3)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-9)
    assert np.all(P >= 0)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[P.argmax(axis=1)])


def test_graph_view_uses_only_view_rows(small_graph):
    A, X, y = small_graph
    G = GraphData(X, A)
    train, test = np.arange(0, 60, 2), np.arange(1, 60, 2)
    clf = _fast().fit(G[train], y[train])
    # the same rows as a plain array give the same predictions
    np.testing.assert_allclose(clf.predict_proba(G[test]), clf.predict_proba(X[test]))
    # the graph is not needed
    G_nograph = GraphData(X)
    np.testing.assert_allclose(clf.predict_proba(G_nograph[test]), clf.predict_proba(X[test]))
    assert clf.score(G[test], y[test]) > 0.8


@pytest.mark.parametrize("method", ["predict", "predict_proba", "decision_function"])
def test_predicting_node_pairs_is_refused(small_graph, method):
    # fit refused a PairData; predict returned one row per pair *end* (2 per pair, the
    # features of u and of v in turn), which score() then failed on with a shape error
    from skldp.model_selection import PairData
    A, X, y = small_graph
    G = GraphData(X, A)
    clf = _fast(epochs=2).fit(G[:40], y[:40])
    P = PairData(G, np.array([[0, 1], [2, 3], [4, 5]]))
    with pytest.raises(TypeError, match="classifies nodes, but X is a PairData"):
        getattr(clf, method)(P)


@pytest.mark.parametrize("weight_decay", [1e-4, "auto"])
@pytest.mark.parametrize("sparse", [False, True])
def test_graph_features_beyond_float32_are_refused(small_graph, weight_decay, sparse):
    # MLPHead computes in float32: the rows of a GraphData beyond float32's range became
    # inf at predict, so predict_proba was NaN and predict the first class, silently (a
    # plain array is refused by check_array); fit refused them with check_array's message
    # only through weight_decay="auto"'s search
    A, X, y = small_graph
    big = X * 1e300
    G_big = GraphData(sp.csr_matrix(big) if sparse else big, A)
    clf = _fast(epochs=2).fit(GraphData(X, A)[:40], y[:40])
    for method in ("predict", "predict_proba", "decision_function"):
        with pytest.raises(ValueError, match="MLPHead exceed float32's range"):
            getattr(clf, method)(G_big[40:])
    with pytest.raises(ValueError, match="MLPHead exceed float32's range"):
        _fast(epochs=2, weight_decay=weight_decay).fit(G_big[:40], y[:40])


def test_sparse_input_matches_dense():
    X, y = _blobs(d=5)
    X = np.abs(X) * (np.abs(X) > 1)
    a = _fast().fit(X, y).predict_proba(X)
    b = _fast().fit(sp.csr_array(X), y).predict_proba(sp.csr_matrix(X))
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_large_sparse_batched_path(monkeypatch):
    # The per-batch densification of a large sparse input does the arithmetic of the dense
    # path in another order, so the two agree up to float32 rounding: about (d + h) * eps32
    # per forward pass (sums of d inputs and h hidden units), and at most that per training
    # step added up over the steps of a fit. A wrong row, batch or chunk moves the
    # probabilities by orders of magnitude more.
    import skldp.models._mlp as mod
    X, y = _blobs(d=5)
    X = np.abs(X) * (np.abs(X) > 1)
    per_pass = (X.shape[1] + 16) * np.finfo(np.float32).eps
    dense = _fast(batch_size=32).fit(X, y)
    b = dense.predict_proba(X)
    monkeypatch.setattr(mod, "_DENSE_BYTES", 0)  # force the per-batch densification
    monkeypatch.setattr(mod, "_CHUNK_ROWS", 7)
    np.testing.assert_allclose(dense.predict_proba(sp.csr_matrix(X)), b, rtol=0,
                               atol=per_pass)
    batched = _fast(batch_size=32).fit(sp.csr_matrix(X), y)
    steps = batched.n_iter_ * -(-len(X) // 32)
    a = batched.predict_proba(sp.csr_matrix(X))
    np.testing.assert_allclose(a, b, rtol=0, atol=steps * per_pass)


def test_reproducible_with_random_state():
    X, y = _blobs()
    a = _fast(random_state=3).fit(X, y).predict_proba(X)
    b = _fast(random_state=3).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)


def test_early_stopping_stops_early():
    X, y = _blobs(n=200)
    clf = _fast(epochs=500, patience=5, lr=0.05, early_stopping=True,
                normalization="standardize", weight_decay=5e-4).fit(X, y)
    assert clf.n_iter_ < 500
    assert len(clf.validation_scores_) == clf.n_iter_
    assert clf.best_epoch_ == int(np.argmin(clf.validation_scores_))
    assert clf.n_iter_ - 1 - clf.best_epoch_ == 5  # stopped after `patience` bad epochs
    full = _fast(epochs=30, early_stopping=False).fit(X, y)
    assert full.n_iter_ == 30 and full.validation_scores_ == []


def test_minibatch_and_architectures():
    X, y = _blobs()
    for kw in (dict(batch_size=16, epochs=20), dict(hidden_layer_sizes=()),
               dict(hidden_layer_sizes=(8, 8), activation="tanh"),
               dict(activation="elu"), dict(hidden_layer_sizes=4, activation="gelu")):
        clf = _fast(**kw).fit(X, y)
        assert clf.score(X, y) > 0.9, kw
    linear = _fast(hidden_layer_sizes=()).fit(X, y)
    assert sum(isinstance(m, __import__("torch").nn.Linear) for m in linear.module_) == 1


def test_verbose_logs_each_epoch(caplog):
    X, y = _blobs(n=60)
    with caplog.at_level("INFO", logger="skldp"):
        _fast(epochs=3, verbose=1, early_stopping=False).fit(X, y)
    out = [r.getMessage() for r in caplog.records if r.name.startswith("skldp.models")]
    assert len(out) == 3
    assert out[0].startswith("[MLPHead] epoch 1/3 loss")
    caplog.clear()
    with caplog.at_level("INFO", logger="skldp"):
        _fast(epochs=2, verbose=1, early_stopping=True).fit(X, y)
    assert "val_loss" in caplog.text
    caplog.clear()
    _fast(epochs=2, verbose=0).fit(X, y)
    assert not caplog.records  # silent without verbose


@pytest.mark.parametrize("params, match", [
    (dict(hidden_layer_sizes=(0,)), "hidden_layer_sizes"),
    (dict(hidden_layer_sizes=("a",)), "hidden_layer_sizes"),
    (dict(hidden_layer_sizes=None), "hidden_layer_sizes"),
    (dict(activation="sigmoidal"), "activation"),
    (dict(dropout=1.0), "dropout"),
    (dict(dropout=-0.1), "dropout"),
    (dict(lr=0), "lr"),
    (dict(lr=float("nan")), "lr"),
    (dict(weight_decay=-1), "weight_decay"),
    (dict(epochs=0), "epochs"),
    (dict(epochs=2.5), "epochs"),
    (dict(batch_size=0), "batch_size"),
    (dict(batch_size=1.5), "batch_size"),
    (dict(validation_fraction=1.0), "validation_fraction"),
    (dict(patience=0), "patience"),
])
def test_bad_hyperparameters(params, match):
    X, y = _blobs(n=40)
    with pytest.raises(ValueError, match=match):
        MLPHead(**params).fit(X, y)


def test_bad_labels_and_features():
    X, y = _blobs(n=60)
    y_bad = y.copy()
    y_bad[0] = -1
    with pytest.raises(ValueError, match="-1"):
        _fast().fit(X, y_bad)
    with pytest.raises(ValueError, match=r"single class \(0\); need at least two\.$"):
        _fast().fit(X, np.zeros(len(X), int))  # a plain value, not numpy's np.int64(0)
    with pytest.raises(ValueError, match=r"single class \('cat'\)"):
        _fast().fit(X, np.array(["cat"] * len(X), dtype=object))
    with pytest.raises(ValueError, match="labels"):
        _fast().fit(X, y[:-1])
    clf = _fast(epochs=2).fit(X, y)
    with pytest.raises(ValueError, match="6 features"):
        clf.predict(X[:, :5])
    with pytest.raises(ValueError, match="6 features"):
        clf.predict(GraphData(X[:, :5]))
    X_nan = X.copy()
    X_nan[3, 2] = np.nan
    with pytest.raises(ValueError):
        _fast().fit(X_nan, y)
    with pytest.raises(ValueError, match="NaN"):
        _fast().fit(GraphData(X_nan), y)


@pytest.mark.parametrize("width", [5, 7])
@pytest.mark.parametrize("method", ["predict", "predict_proba", "decision_function"])
def test_rows_of_another_width_given_as_lists_are_refused_with_the_count(width, method):
    # a list of rows has no .shape: the width was not checked and torch raised "The size
    # of tensor a (5) must match the size of tensor b (6)" from inside the network
    X, y = _blobs(n=60)
    clf = _fast(epochs=2).fit(X, y)
    rows = np.c_[X, X][:4, :width].tolist()
    with pytest.raises(ValueError, match=f"X has {width} features, but MLPHead is expecting "
                                         "6 features as input"):
        getattr(clf, method)(rows)
    assert getattr(clf, method)(X[:4].tolist()).shape[0] == 4


def test_unfitted_raises():
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        MLPHead().predict(np.zeros((2, 3)))


def test_pickle_and_clone():
    X, y = _blobs()
    clf = _fast().fit(X, y)
    clf2 = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(clf.predict_proba(X), clf2.predict_proba(X))
    c = clone(clf)
    assert not hasattr(c, "module_") and c.get_params() == clf.get_params()
    assert next(clf2.module_.parameters()).device.type == "cpu"


_EXPECTED_FAILED = {
    # Read from the check's own error (sklearn 1.9); every other check passes.
    "check_classifiers_classes": "its last sub-check fits labels [-1, 1]; -1 means "
                                 "'unlabelled' in skldp (semi-supervised convention) and fit "
                                 "rejects it (ValueError 'y contains -1')",
}


@pytest.mark.long
@parametrize_with_checks([MLPHead(hidden_layer_sizes=(16,), epochs=30, random_state=0)],
                         expected_failed_checks=lambda est: _EXPECTED_FAILED)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_normalization_options():
    """l2: centred columns, unit rows; standardize: the former head; None: the inputs."""
    rng = np.random.default_rng(0)
    X = rng.random((300, 6)) * [1, 1, 1, 1, 1, 100] + 50   # a large common offset
    y = (X[:, 0] > X[:, 1]).astype(int)
    for norm in ("l2", "standardize", None):
        clf = MLPHead(normalization=norm, epochs=50, random_state=0).fit(X, y)
        first = clf.module_[0]
        Z = first(torch.as_tensor(X, dtype=torch.float32)).detach().numpy()
        if norm == "l2":
            np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=1e-5)
            np.testing.assert_allclose(first.mean.numpy(), X.mean(0), rtol=1e-5)
        elif norm == "standardize":
            np.testing.assert_allclose(Z.std(0), 1.0, rtol=1e-3)
        else:
            np.testing.assert_allclose(Z, X, rtol=1e-6)
    with pytest.raises(ValueError, match="normalization"):
        MLPHead(normalization="max").fit(X, y)


def test_early_stopping_auto_holds_out_rows_only_when_there_are_many():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1200, 4))
    y = (X[:, 0] > 0).astype(int)
    few = MLPHead(epochs=5, random_state=0).fit(X[:200], y[:200])
    assert few.validation_scores_ == [] and few.n_iter_ == 5
    many = MLPHead(epochs=5, random_state=0).fit(X, y)
    assert len(many.validation_scores_) == 5
    with pytest.raises(ValueError, match="early_stopping"):
        MLPHead(early_stopping="sometimes").fit(X, y)


def _words(n, d=400, seed=0):
    """Few rows, many noisy columns, the class in a handful: a penalty matters."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n)
    X = rng.random((n, d)) < 0.05
    for c in range(3):
        X[y == c, 5 * c:5 * c + 5] |= rng.random(((y == c).sum(), 5)) < 0.5
    return X.astype(float), y


@pytest.mark.long
def test_auto_weight_decay_is_cross_validated_on_few_rows(monkeypatch):
    from skldp.models import _mlp
    X, y = _words(1100)
    tr, te = slice(0, 90), slice(100, None)
    searched = []
    choose = _mlp.MLPHead._choose_weight_decay

    def spy(self, *args):
        w = choose(self, *args)
        searched.append(w)
        return w

    monkeypatch.setattr(_mlp.MLPHead, "_choose_weight_decay", spy)
    auto = MLPHead(random_state=0).fit(X[tr], y[tr])
    # one search among the grid (the candidates' own fits choose nothing), then the
    # final fit is the plain fit at the chosen penalty
    assert searched == [auto.weight_decay_] and auto.weight_decay_ in _mlp._AUTO_DECAYS
    fixed = MLPHead(weight_decay=auto.weight_decay_, random_state=0).fit(X[tr], y[tr])
    np.testing.assert_array_equal(auto.predict_proba(X[te]), fixed.predict_proba(X[te]))
    # with 90 rows of 400 noisy columns the default's tiny penalty over-fits
    assert auto.weight_decay_ > 5e-5
    small = MLPHead(weight_decay=5e-5, random_state=0).fit(X[tr], y[tr])
    assert auto.score(X[te], y[te]) > small.score(X[te], y[te]) + 0.02
    # reproducible with random_state
    again = MLPHead(random_state=0).fit(X[tr], y[tr])
    assert again.weight_decay_ == auto.weight_decay_


def test_auto_weight_decay_is_fixed_with_many_rows_or_validation_nodes(monkeypatch):
    from skldp.models import _mlp

    def no_search(*args, **kwargs):
        raise AssertionError("no cross-validation expected")

    X, y = _words(1100)
    monkeypatch.setattr("sklearn.model_selection.GridSearchCV.fit", no_search)
    assert MLPHead(epochs=3, random_state=0).fit(X[:500], y[:500]).weight_decay_ == 5e-5
    G = GraphData(X[:200], sp.identity(200, format="csr"))
    val = np.zeros(200, bool)
    val[150:] = True
    head = MLPHead(epochs=3, validation=val, random_state=0).fit(G, y[:200])
    assert head.weight_decay_ == 5e-5
    # a class of one row leaves no fold to hold it out
    y1 = y[:50].copy()
    y1[0] = 7
    assert MLPHead(epochs=3, random_state=0).fit(X[:50], y1).weight_decay_ == 5e-5
    # a number is used as given
    assert MLPHead(weight_decay=0.01, epochs=3).fit(X[:50], y[:50]).weight_decay_ == 0.01
    with pytest.raises(ValueError, match="weight_decay"):
        MLPHead(weight_decay="best").fit(X[:50], y[:50])
    assert _mlp._AUTO_DECAY_ROWS == 500


def test_full_batch_reads_its_rows_in_place(monkeypatch):
    # A full batch reads the same rows every epoch: the normalised rows are stored
    # training rows first, then validation rows, and each epoch reads both blocks in
    # place (a gather of n x d values per epoch cost more than the linear head).
    from skldp.models import _mlp
    X, y = _blobs(n=400, d=8)
    seen = []
    rows = _mlp._Standardized.rows

    def spy(self, positions):
        out = rows(self, positions)
        seen.append(out.untyped_storage().data_ptr() == self.t.untyped_storage().data_ptr())
        return out

    monkeypatch.setattr(_mlp._Standardized, "rows", spy)
    kw = dict(hidden_layer_sizes=(), epochs=15, early_stopping=True, validation_fraction=0.25,
              weight_decay=5e-5, random_state=0, device="cpu")
    arranged = MLPHead(**kw).fit(X, y)
    assert len(seen) == 2 * 15 and all(seen)
    # the same fit as gathering the same rows in the same order, bit for bit
    monkeypatch.setattr(_mlp.MLPHead, "_train", _mlp.TorchClassifierBase._train)
    seen.clear()
    gathered = MLPHead(**kw).fit(X, y)
    assert not any(seen)
    np.testing.assert_array_equal(arranged.predict_proba(X), gathered.predict_proba(X))
    assert arranged.validation_scores_ == gathered.validation_scores_
    # mini-batches gather their (permuted) rows
    seen.clear()
    MLPHead(**{**kw, "batch_size": 64}).fit(X, y)
    assert seen and not all(seen)


def test_column_vector_y_warns_once_and_fits_as_1d():
    import warnings

    from sklearn.exceptions import DataConversionWarning
    X = np.random.default_rng(0).random((60, 4))
    y = (X[:, 0] > .5).astype(int)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        # weight_decay="auto" on 60 rows: a cross-validated choice, many inner fits
        head = MLPHead(epochs=30, random_state=0).fit(X, y[:, None])
    conversions = [x for x in w if issubclass(x.category, DataConversionWarning)]
    assert len(conversions) == 1, [str(x.message) for x in conversions]
    ref = MLPHead(epochs=30, random_state=0).fit(X, y)
    assert head.weight_decay_ == ref.weight_decay_
    np.testing.assert_array_equal(head.predict_proba(X), ref.predict_proba(X))
