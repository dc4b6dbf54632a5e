"""LPGNNClassifier and SolitudeClassifier centre their features (after the KProp, after
the smoothing): a column offset shared by every node, as multi-bit reports carry, no
longer makes Adam's first steps saturate the hidden units."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.models import LPGNNClassifier, SolitudeClassifier
from skldp.propagation._gcn_aggregation import apply_propagation, propagation_matrix

_SETTINGS = {LPGNNClassifier: {"eps_y": np.inf, "x_steps": 2, "y_steps": 0},
             SolitudeClassifier: {"feature_steps": 1}}


def _data(n=150, d=300):
    # three classes in a stochastic block model, features that separate them; a ring
    # within each class leaves no node isolated
    rng = np.random.default_rng(0)
    y = np.arange(n) % 3
    A = np.triu(rng.random((n, n)) < np.where(y[:, None] == y[None, :], 0.08, 0.01), 1)
    A |= np.eye(n, k=3, dtype=bool)
    A = sp.csr_array((A | A.T).astype(float))
    X = rng.normal(size=(n, d)) + 0.7 * np.eye(3)[y] @ rng.normal(size=(3, d))
    offset = 20 * rng.normal(size=d)   # large next to the signal, the same for every node
    return A, X, offset, y


def _fit(G, y, model=LPGNNClassifier, **kw):
    train = np.arange(len(y)) < len(y) // 2
    clf = model(**{**_SETTINGS[model], "epochs": 60, "early_stopping": False,
                   "random_state": 0, "device": "cpu", **kw})
    return clf.fit(G[train], y[train]), ~train


@pytest.mark.parametrize("model", [LPGNNClassifier, SolitudeClassifier])
@pytest.mark.parametrize("backbone", ["sage", "gcn"])
def test_a_shared_offset_changes_nothing(model, backbone):
    # the mean aggregators keep a constant column constant: centred, X + offset is X
    A, X, offset, y = _data()
    kw = dict(model=model, backbone=backbone)
    if model is LPGNNClassifier:
        kw["normalization"] = "rw"
    clean, test = _fit(GraphData(X, A), y, **kw)
    G = GraphData(X + offset, A)
    shifted, _ = _fit(G, y, **kw)
    np.testing.assert_allclose(shifted.loss_curve_, clean.loss_curve_, rtol=1e-4, atol=1e-5)
    assert shifted.score(G[test], y[test]) >= 0.9
    np.testing.assert_allclose(shifted.decision_function(G[test]),
                               clean.decision_function(GraphData(X, A)[test]), atol=1e-3)


@pytest.mark.parametrize("model", [LPGNNClassifier, SolitudeClassifier])
def test_without_centring_the_offset_breaks_training(model):
    # the failure the centring removes: the model ends near chance
    A, X, offset, y = _data()
    G = GraphData(X + offset, A)
    off, test = _fit(G, y, model=model, center_features=False)
    on, _ = _fit(G, y, model=model)
    assert off.score(G[test], y[test]) < 0.6 < 0.9 <= on.score(G[test], y[test])


@pytest.mark.parametrize("model", [LPGNNClassifier, SolitudeClassifier])
def test_center_features_is_validated(model):
    A, X, _, y = _data()
    with pytest.raises(ValueError, match="center_features"):
        _fit(GraphData(X, A), y, model=model, center_features="yes")


def test_lpgnn_means_are_those_of_the_kprop_output():
    # the symmetric aggregator: the means of P^K X, not of X; the same training as
    # on P^K X centred by hand and no KProp
    A, X, offset, y = _data()
    G = GraphData(X + offset, A)
    a, test = _fit(G, y)
    Z = apply_propagation(propagation_matrix(A, False, "sym", np.float64), X + offset, 2)
    H = GraphData(Z - Z.mean(axis=0), A)
    b, _ = _fit(H, y, x_steps=0, center_features=False)
    np.testing.assert_allclose(a.loss_curve_, b.loss_curve_, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(a.decision_function(G[test]), b.decision_function(H[test]),
                               atol=1e-3)


def test_lpgnn_multi_bit_like_reports_centred_as_dense_ones():
    # a constant per column plus a sparse matrix (an offset-sparse operand) is centred
    # in its offset: the numbers of the dense, centred-by-hand features
    rng = np.random.default_rng(1)
    A, _, _, y = _data()
    X = 0.5 + sp.random(len(y), 300, density=0.02, random_state=rng).toarray() * 300
    a, test = _fit(GraphData(X, A), y, x_steps=0)
    b, _ = _fit(GraphData(X - X.mean(axis=0), A), y, x_steps=0, center_features=False)
    np.testing.assert_allclose(a.loss_curve_, b.loss_curve_, rtol=1e-4, atol=1e-5)


def test_lpgnn_dense_propagation_keeps_centred_and_raw_inputs_apart(monkeypatch):
    # on a GPU the propagated input and its aggregation are kept with the graph: a
    # centred fit must not hand its input to an uncentred one
    from skldp.models import _gnn
    A, X, offset, y = _data()
    G = GraphData(X + offset, A)
    lazy, test = _fit(G, y, center_features=False)
    monkeypatch.setattr(_gnn, "_DENSE_PROPAGATION_ON", ("cpu",))
    _fit(G, y)
    dense, _ = _fit(G, y, center_features=False)
    np.testing.assert_allclose(dense.loss_curve_, lazy.loss_curve_, rtol=1e-4, atol=1e-5)


def test_solitude_without_centring_the_loss_rises_at_the_second_step():
    A, X, offset, y = _data()
    G = GraphData(X + offset, A)
    clf, _ = _fit(G, y, model=SolitudeClassifier, backbone="sage", center_features=False)
    assert clf.loss_curve_[1] > clf.loss_curve_[0]


def test_solitude_sparse_features_are_centred_as_dense_ones():
    # sparse features stay sparse (an offset-sparse operand), with the same numbers
    rng = np.random.default_rng(1)
    A, _, _, y = _data()
    X = sp.random(len(y), 300, density=0.02, random_state=rng, format="csr") * 50
    kw = dict(model=SolitudeClassifier, backbone="sage", dropout=0.0)   # (no input dropout)
    a, test = _fit(GraphData(X, A), y, **kw)
    b, _ = _fit(GraphData(X.toarray(), A), y, **kw)
    np.testing.assert_allclose(a.loss_curve_, b.loss_curve_, rtol=1e-4)
    np.testing.assert_allclose(a.decision_function(GraphData(X, A)[test]),
                               b.decision_function(GraphData(X.toarray(), A)[test]), atol=1e-3)
    off, _ = _fit(GraphData(X, A), y, center_features=False, **kw)
    assert not np.allclose(off.loss_curve_, a.loss_curve_)
