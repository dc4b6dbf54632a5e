"""SolitudeClassifier's alternating steps on tiny graphs, against references written here.

The model's learning rate is tiny (1e-9) so that its weights stay those of the fitted
module, and the steps on ``A^c`` (eq. (13): the summed cross entropy plus
``lambda_1 ||A^c - A||_F^2``, an Adam step, the proximal step of ``lambda_2 ||A^c||_1``
and the clip to [0, 1]) can be replayed on dense matrices.
"""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
import torch.nn.functional as F

from skldp import GraphData
from skldp.models import SolitudeClassifier
from skldp.propagation import smooth_features, smooth_labels


def _graph():
    # 7 nodes, undirected: a stored self loop on node 0, a weight 2 on the pair (2, 3)
    # (clipped to 1 as a target), node 6 of degree one
    pairs = [(0, 0), (0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (4, 5), (3, 5), (5, 6), (1, 4)]
    n = 7
    A = np.zeros((n, n))
    for i, j in pairs:
        A[i, j] = A[j, i] = 2.0 if (i, j) == (2, 3) else 1.0
    rng = np.random.default_rng(0)
    y = np.array([0, 0, 0, 1, 1, 1, 1])
    X = rng.normal(size=(n, 3)) + 1.5 * np.eye(2)[y] @ rng.normal(size=(2, 3))
    return GraphData(X, sp.csr_array(A)), y, pairs


class _Dense:
    """A dense propagation matrix where the GNN expects its operand."""

    def __init__(self, P):
        self.P = P

    def matmul(self, h):
        return self.P @ h


def _propagation(pairs, w, n, backbone):
    """``D^-1/2 (A^c + I) D^-1/2`` (GCN) or ``max(D, 1)^-1 A^c`` (mean) from pair weights."""
    Ac = torch.zeros(n, n, dtype=w.dtype)
    for k, (i, j) in enumerate(pairs):
        ij = sorted({(i, j), (j, i)})   # a self loop once
        Ac = Ac.index_put((torch.tensor([a for a, _ in ij]), torch.tensor([b for _, b in ij])),
                          w[k].expand(len(ij)))
    if backbone == "gcn":
        Ac = Ac + torch.eye(n, dtype=w.dtype)
        d = Ac.sum(1).pow(-0.5)
        return {"a_sym_op": _Dense(d[:, None] * Ac * d[None, :])}
    return {"a_mean_op": _Dense(Ac / Ac.sum(1).clamp_min(1.0)[:, None])}


@pytest.mark.parametrize("backbone, adj_every", [("gcn", 1), ("sage", 1), ("gcn", 2)])
def test_structure_steps_follow_eq_13_and_the_l1_prox(backbone, adj_every):
    G, y, pairs = _graph()
    n, epochs = 7, 3
    lam_fro, lam_l1, lr_adj = 0.3, 0.2, 0.05
    clf = SolitudeClassifier(backbone, hidden_size=4, dropout=0.5, lr=1e-9, weight_decay=0.0,
                             epochs=epochs, lambda_fro=lam_fro, lambda_l1=lam_l1, lr_adj=lr_adj,
                             adj_every=adj_every, early_stopping=False, random_state=0,
                             device="cpu").fit(G, y)
    module = clf.module_.eval()   # the steps on A^c run the model without dropout
    X = np.asarray(G)
    x = torch.as_tensor(X - X.mean(0), dtype=torch.float32)   # the centred features
    target = torch.tensor([1.0] * len(pairs))   # the received weights clipped to [0, 1]
    mult = torch.tensor([1.0 if i == j else 2.0 for i, j in pairs])   # entries per pair
    w = target.clone().requires_grad_()
    m, v, t = torch.zeros_like(w), torch.zeros_like(w), 0   # Adam's moments
    yt = torch.as_tensor(y)
    for epoch in range(epochs):
        if epoch % adj_every:   # a step on A^c every adj_every epochs
            continue
        logits = module(x, _propagation(pairs, w, n, backbone))
        ce = F.cross_entropy(logits, yt, reduction="sum")
        g, = torch.autograd.grad(ce + lam_fro * (mult * (w - target) ** 2).sum(), w)
        with torch.no_grad():   # Adam (Kingma & Ba, Algorithm 1), learning rate lr_adj
            t += 1
            m.mul_(0.9).add_(0.1 * g)
            v.mul_(0.999).add_(0.001 * g * g)
            w -= lr_adj * (m / (1 - 0.9 ** t)) / ((v / (1 - 0.999 ** t)).sqrt() + 1e-8)
            w.copy_((w.abs() - lr_adj * lam_l1 * mult).clamp_min(0.0) * torch.sign(w))
            w.clamp_(0.0, 1.0)
    w = w.detach().numpy()
    L = clf.learned_adjacency_.toarray()
    expected = np.zeros((n, n))
    for k, (i, j) in enumerate(pairs):
        expected[i, j] = expected[j, i] = w[k]
    np.testing.assert_allclose(L, expected, atol=2e-5)
    assert np.ptp(w) > 1e-3   # the cross entropy moved the pairs apart (not only the prox)


def test_early_stopping_keeps_the_graph_of_the_best_epoch():
    # The same fit cut after the best epoch ends with the weights of that epoch: the
    # learned graph of the longer fit is that one, not its last epoch's.
    G, y, _ = _graph()
    kw = dict(hidden_size=8, dropout=0.0, lr=0.3, lr_adj=0.2, validation=[2, 5],
              patience=None, random_state=0, device="cpu")
    full = SolitudeClassifier(epochs=30, **kw).fit(G, y)
    assert full.best_epoch_ < full.n_iter_ - 1
    cut = SolitudeClassifier(epochs=full.best_epoch_ + 1, **kw).fit(G, y)
    assert cut.best_epoch_ == full.best_epoch_
    np.testing.assert_array_equal(full.edge_weights_, cut.edge_weights_)
    np.testing.assert_allclose(full.decision_function(G), cut.decision_function(G),
                               atol=1e-6)
    # (and the last epoch's graph was another one)
    last = SolitudeClassifier(epochs=30, **{**kw, "validation": None},
                              early_stopping=False).fit(G, y)
    assert not np.array_equal(last.edge_weights_, full.edge_weights_)


def test_label_smoothing_reads_the_fitting_rows_only():
    # The validation rows' labels choose the epoch; they never enter the smoothed
    # targets, so the training losses do not depend on them.
    G, y, _ = _graph()
    kw = dict(label_steps=2, epochs=6, validation=[2, 4], patience=None, random_state=0,
              device="cpu")
    a = SolitudeClassifier(**kw).fit(G, y)
    y2 = y.copy()
    y2[[2, 4]] = 1 - y2[[2, 4]]
    b = SolitudeClassifier(**kw).fit(G, y2)
    np.testing.assert_allclose(a.loss_curve_, b.loss_curve_, rtol=1e-6)


@pytest.mark.parametrize("feature_steps, label_steps", [(1, 1), (2, 3)])
def test_first_loss_is_the_smoothed_targets_cross_entropy(feature_steps, label_steps):
    # First epoch's loss: the (almost untrained) model on K_x-smoothed features against
    # the K_y-smoothed labels of the fitting rows, eq. (12) (neighbours only: no self
    # loop, so a labelled node's own label gets no weight). Both settings fit one graph:
    # the memoised smoothed features are those of their own number of steps.
    G, y, _ = _graph()
    G = G.new_simulation()
    for fs, ls in [(1, 1), (feature_steps, label_steps)]:
        clf = SolitudeClassifier(feature_steps=fs, label_steps=ls, learn_structure=False,
                                 dropout=0.0, lr=1e-9, epochs=1, early_stopping=False,
                                 random_state=0, device="cpu").fit(G, y)
    A = G.adjacency
    Xs = smooth_features(np.asarray(G), A, feature_steps)
    Xs = torch.as_tensor(Xs - Xs.mean(0), dtype=torch.float32)   # centred after smoothing
    P = torch.as_tensor(smooth_labels(np.eye(2)[y], A, label_steps, self_loops=False),
                        dtype=torch.float32)
    # the GCN on the received graph, its weights clipped to [0, 1], plus a self loop each
    Ahat = torch.as_tensor(np.minimum(A.toarray(), 1.0), dtype=torch.float32) + torch.eye(7)
    d = Ahat.sum(1).pow(-0.5)
    with torch.no_grad():
        logits = clf.module_(Xs, {"a_sym_op": _Dense(d[:, None] * Ahat * d[None, :])})
        expected = -(P * torch.log_softmax(logits, 1)).sum(1).mean()
    assert clf.loss_curve_[0] == pytest.approx(expected.item(), rel=1e-5)
