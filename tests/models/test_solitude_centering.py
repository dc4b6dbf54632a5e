"""SolitudeClassifier centres the features: a column offset shared by every node (as
the column means of multi-bit reports) no longer makes Adam's first steps saturate the
hidden units."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.models import SolitudeClassifier


def _data(n=150, d=300):
    # three classes in a stochastic block model, features that separate them
    rng = np.random.default_rng(0)
    y = np.arange(n) % 3
    A = np.triu(rng.random((n, n)) < np.where(y[:, None] == y[None, :], 0.08, 0.01), 1)
    X = rng.normal(size=(n, d)) + 0.7 * np.eye(3)[y] @ rng.normal(size=(3, d))
    offset = 20 * rng.normal(size=d)   # large next to the signal, the same for every node
    return sp.csr_array((A | A.T).astype(float)), X, offset, y


def _fit(G, y, **kw):
    train = np.arange(len(y)) < len(y) // 2
    clf = SolitudeClassifier(**{"feature_steps": 1, "epochs": 60, "early_stopping": False,
                                "random_state": 0, "device": "cpu", **kw})
    return clf.fit(G[train], y[train]), ~train


@pytest.mark.parametrize("backbone", ["sage", "gcn"])
def test_a_shared_offset_changes_nothing(backbone):
    A, X, offset, y = _data()
    clean, test = _fit(GraphData(X, A), y, backbone=backbone)
    G = GraphData(X + offset, A)
    shifted, _ = _fit(G, y, backbone=backbone)
    # the centred features are those of X: the same training, the same scores
    np.testing.assert_allclose(shifted.loss_curve_, clean.loss_curve_, rtol=1e-4, atol=1e-5)
    assert shifted.score(G[test], y[test]) >= 0.9
    np.testing.assert_allclose(shifted.decision_function(G[test]),
                               clean.decision_function(GraphData(X, A)[test]), atol=1e-3)


def test_without_centring_the_offset_breaks_training():
    # the failure the centring removes: the loss rises at the second step and the
    # model ends near chance
    A, X, offset, y = _data()
    G = GraphData(X + offset, A)
    clf, test = _fit(G, y, backbone="sage", center_features=False)
    assert clf.loss_curve_[1] > clf.loss_curve_[0]
    assert clf.score(G[test], y[test]) < 0.6


def test_sparse_features_are_centred_as_dense_ones():
    # sparse features stay sparse (an offset-sparse operand), with the same numbers
    rng = np.random.default_rng(1)
    A, _, _, y = _data()
    X = sp.random(len(y), 300, density=0.02, random_state=rng, format="csr") * 50
    kw = dict(backbone="sage", dropout=0.0)   # (no input dropout on sparse features)
    a, test = _fit(GraphData(X, A), y, **kw)
    b, _ = _fit(GraphData(X.toarray(), A), y, **kw)
    np.testing.assert_allclose(a.loss_curve_, b.loss_curve_, rtol=1e-4)
    np.testing.assert_allclose(a.decision_function(GraphData(X, A)[test]),
                               b.decision_function(GraphData(X.toarray(), A)[test]), atol=1e-3)
    off, _ = _fit(GraphData(X, A), y, center_features=False, **kw)
    assert not np.allclose(off.loss_curve_, a.loss_curve_)


def test_center_features_is_validated():
    A, X, _, y = _data()
    with pytest.raises(ValueError, match="center_features"):
        _fit(GraphData(X, A), y, center_features="yes")
