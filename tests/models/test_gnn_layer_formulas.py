"""The GNN classifiers compute the layers their papers define.

Each fitted network is recomputed here in numpy (float64) from its parameters:

* GCN: ``D^-1/2 (A + I) D^-1/2 H W + b`` (Kipf & Welling 2017, eq. (2));
* GraphSAGE (mean): ``H W_self + b + D^-1 A H W_neigh``, no self loop in the mean;
* GAT: per head, ``softmax_j LeakyReLU_0.2(a_dst . h_i + a_src . h_j)`` over the
  neighbours and the node itself, hidden heads concatenated, output heads averaged,
  the input times ``input_scale_``;
* the activation between layers, none on the output.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.models import GATClassifier, GCNClassifier, SAGEClassifier


def _data(n=40, d=5, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    A = np.triu(rng.random((n, n)) < 0.12, 1)
    A = (A | A.T).astype(float)
    A[0] = A[:, 0] = 0.0          # an isolated node
    X = rng.normal(size=(n, d)) * 2.0 + y[:, None]   # rms > 1: GAT rescales its input
    return GraphData(X, sp.csr_array(A)), A, X, y


def _params(clf):
    return {k: v.detach().double().numpy() for k, v in clf.module_.state_dict().items()}


def _act(name, h):
    return {"relu": np.maximum(h, 0.0), "elu": np.where(h > 0, h, np.expm1(np.minimum(h, 0))),
            "tanh": np.tanh(h)}[name]


def _fit(cls, G, y, **kw):
    return cls(epochs=3, early_stopping=False, random_state=0, device="cpu", **kw).fit(G, y)


@pytest.mark.parametrize("n_layers", [1, 3])
def test_gcn_layers(n_layers):
    G, A, X, y = _data()
    clf = _fit(GCNClassifier, G, y, n_layers=n_layers, hidden_size=6, activation="tanh")
    P = _params(clf)
    B = A + np.eye(len(A))
    d = B.sum(axis=1) ** -0.5
    S = d[:, None] * B * d[None, :]
    h = X
    for i in range(n_layers):
        h = S @ (h @ P[f"layers.{i}.lin.weight"].T) + P[f"layers.{i}.lin.bias"]
        if i < n_layers - 1:
            h = _act("tanh", h)
    assert h.shape == (len(X), 3)
    np.testing.assert_allclose(clf.decision_function(G), h, rtol=1e-5, atol=1e-6)


def test_sage_layers():
    G, A, X, y = _data()
    clf = _fit(SAGEClassifier, G, y, hidden_size=6, activation="relu")
    P = _params(clf)
    deg = A.sum(axis=1)
    M = A / np.where(deg > 0, deg, 1.0)[:, None]   # mean over the neighbours, no self loop
    h = X
    for i in range(2):
        h = (h @ P[f"layers.{i}.lin_self.weight"].T + P[f"layers.{i}.lin_self.bias"]
             + M @ (h @ P[f"layers.{i}.lin_neigh.weight"].T))
        if i == 0:
            h = _act("relu", h)
    np.testing.assert_allclose(clf.decision_function(G), h, rtol=1e-5, atol=1e-6)


def _gat_layer(h, B, W, a_src, a_dst, bias, heads, concat):
    n = len(h)
    Z = (h @ W.T).reshape(n, heads, -1)
    out = np.zeros_like(Z)
    for k in range(heads):
        s = Z[:, k] @ a_src[k]
        t = Z[:, k] @ a_dst[k]
        e = t[:, None] + s[None, :]                    # e[i, j]: i attends to j
        e = np.where(e > 0, e, 0.2 * e)
        e = np.where(B > 0, e, -np.inf)
        alpha = np.exp(e - e.max(axis=1, keepdims=True))
        alpha /= alpha.sum(axis=1, keepdims=True)
        out[:, k] = alpha @ Z[:, k]
    out = out.reshape(n, -1) if concat else out.mean(axis=1)
    return out + bias


@pytest.mark.parametrize("heads", [1, 3])
def test_gat_layers(heads):
    G, A, X, y = _data()
    clf = _fit(GATClassifier, G, y, hidden_size=4, heads=heads)
    assert clf.input_scale_ == pytest.approx(1.0 / np.sqrt(np.mean(X ** 2)), rel=1e-9)
    assert clf.input_scale_ < 1.0
    P = _params(clf)
    B = A + np.eye(len(A))
    h = X * clf.input_scale_
    for i in range(2):
        last = i == 1
        h = _gat_layer(h, B, P[f"layers.{i}.lin.weight"], P[f"layers.{i}.att_src"],
                       P[f"layers.{i}.att_dst"], P[f"layers.{i}.bias"],
                       1 if last else heads, not last)
        if not last:
            h = _act("elu", h)
    assert h.shape == (len(X), 3)
    np.testing.assert_allclose(clf.decision_function(G), h, rtol=1e-5, atol=1e-6)


def test_gat_input_scale_is_one_for_small_inputs():
    G, A, X, y = _data()
    small = G.with_features(X / (4 * np.sqrt(np.mean(X ** 2))))   # rms 0.25
    clf = _fit(GATClassifier, small, y, hidden_size=4, heads=2)
    assert clf.input_scale_ == 1.0


def test_gat_uses_edges_not_weights_and_says_so():
    G, A, X, y = _data()
    W = A * (1 + np.arange(len(A))[:, None] % 3)          # weights 1, 2, 3, symmetric
    W = np.maximum(W, W.T)
    with pytest.warns(UserWarning, match="not their weights"):
        weighted = _fit(GATClassifier, GraphData(X, sp.csr_array(W)), y, hidden_size=4)
    np.testing.assert_array_equal(weighted.decision_function(G),
                                  _fit(GATClassifier, G, y, hidden_size=4).decision_function(G))
    gcn = _fit(GCNClassifier, GraphData(X, sp.csr_array(W)), y, hidden_size=4)
    assert not np.allclose(gcn.decision_function(G),
                           _fit(GCNClassifier, G, y, hidden_size=4).decision_function(G))
