"""MLPHead: what its layers are, what training and prediction feed them.

* ``normalization="standardize"``: the first layer centres and scales every column with
  the training rows' statistics (a large sparse input gives the dense statistics).
* Hidden layers are ``Linear, activation, Dropout(dropout)``; the output a ``Linear``.
* Training feeds the rows through the same normalisation as the fitted module: the
  first recorded loss is the module's own loss on the training rows.
* Predictions are the module's evaluation-mode forward pass (no dropout).
"""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch import nn

from skldp.models import MLPHead, _mlp


def _rows(n=120, d=5, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d)) * [1, 2, 3, 4, 5] + [10, -20, 30, 0, 5] + y[:, None]
    return X, y


def test_standardize_centres_and_scales_with_the_training_statistics():
    X, y = _rows()
    clf = MLPHead(normalization="standardize", epochs=2, weight_decay=0.0,
                  random_state=0).fit(X, y)
    first = clf.module_[0]
    np.testing.assert_allclose(first.mean.numpy(), X.mean(0), rtol=1e-5)
    np.testing.assert_allclose(first.scale.numpy(), X.std(0), rtol=1e-5)
    Z = first(torch.as_tensor(X, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(Z.mean(0), 0.0, atol=1e-4)
    np.testing.assert_allclose(Z.std(0), 1.0, rtol=1e-4)


def test_a_large_sparse_input_gets_the_dense_statistics(monkeypatch):
    X, y = _rows()
    X = np.where(np.abs(X) > 8, X, 0.0)
    dense = MLPHead(normalization="standardize", epochs=2, weight_decay=0.0,
                    random_state=0).fit(X, y)
    monkeypatch.setattr(_mlp, "_DENSE_BYTES", 0)   # kept sparse, statistics from CSR
    sparse = MLPHead(normalization="standardize", epochs=2, weight_decay=0.0,
                     random_state=0).fit(sp.csr_matrix(X), y)
    for name in ("mean", "scale"):
        np.testing.assert_allclose(getattr(sparse.module_[0], name).numpy(),
                                   getattr(dense.module_[0], name).numpy(), rtol=1e-4)


def test_hidden_layers_are_linear_activation_dropout():
    X, y = _rows()
    clf = MLPHead(hidden_layer_sizes=(7, 4), activation="tanh", dropout=0.3, epochs=2,
                  weight_decay=0.0, random_state=0).fit(X, y)
    kinds = [type(m).__name__ for m in clf.module_]
    assert kinds[1:] == ["Linear", "Tanh", "Dropout", "Linear", "Tanh", "Dropout", "Linear"]
    assert [m.p for m in clf.module_ if type(m).__name__ == "Dropout"] == [0.3, 0.3]
    lins = [m for m in clf.module_ if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in lins] == [(5, 7), (7, 4), (4, 3)]


@pytest.mark.parametrize("norm", ["l2", "standardize"])
def test_training_feeds_the_rows_the_module_normalises(norm):
    # lr ~ 0: the fitted module is the initial one, whose loss is the first recorded
    X, y = _rows()
    clf = MLPHead(normalization=norm, dropout=0.0, lr=1e-12, epochs=1, weight_decay=0.0,
                  early_stopping=False, random_state=0).fit(X, y)
    with torch.no_grad():
        out = clf.module_(torch.as_tensor(X, dtype=torch.float32))
        loss = float(F.cross_entropy(out, torch.as_tensor(y)))
    assert clf.loss_curve_[0] == pytest.approx(loss, rel=1e-5)


def test_predictions_are_the_evaluation_forward_pass():
    X, y = _rows()
    clf = MLPHead(hidden_layer_sizes=(16,), dropout=0.5, epochs=3, weight_decay=0.0,
                  random_state=0).fit(X, y)
    P = clf.predict_proba(X)
    np.testing.assert_array_equal(P, clf.predict_proba(X))   # no dropout drawn
    mod = clf.module_.double().eval()
    with torch.no_grad():
        want = torch.softmax(mod(torch.as_tensor(X, dtype=torch.float32).double()), 1)
    np.testing.assert_allclose(P, want.numpy(), rtol=1e-9, atol=1e-12)
