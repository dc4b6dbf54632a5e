"""RGNNClassifier's objective and targets on tiny inputs, computed here from their formulas."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from skldp import GraphData
from skldp.mechanisms import LabelRandomizedResponse
from skldp.models import RGNNClassifier
from skldp.reconstruction import cluster_label_proportions, reconstruct_labels


def _graph(n=24, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    P = np.where(y[:, None] == y[None, :], 0.5, 0.05)
    A = np.triu(rng.random((n, n)) < P, 1)
    A = sp.csr_array((A | A.T).astype(float))
    X = rng.random((n, 4)) + np.eye(3)[y] @ rng.random((3, 4))
    return GraphData(X, A), y


def test_loss_is_soft_cross_entropy_plus_alpha_times_the_bag_kl():
    # eq. (15): mean over rows of -sum_c t log softmax(z) + alpha * mean over bags of
    # KL(props_k || mean predicted proba of the bag's rows); the rows are nodes 4, 0, 2, 5
    # of a graph whose bags are [0, 1, 0, 1, 1, 0] (so their bags are 1, 0, 0, 0).
    clf = RGNNClassifier(alpha=0.5)
    clusters = torch.tensor([0, 1, 0, 1, 1, 0])
    props = torch.tensor([[0.6, 0.4], [0.1, 0.9]])
    clf._llp_state = (clusters, props)
    z = torch.tensor([[2.0, -1.0], [0.0, 1.0], [0.5, 0.5], [-1.0, 1.5]], dtype=torch.float64)
    t = torch.tensor([[1.0, 0.0], [0.3, 0.7], [0.5, 0.5], [0.0, 1.0]], dtype=torch.float64)
    pos = torch.tensor([4, 0, 2, 5])
    p = torch.softmax(z, 1).numpy()
    ce = -np.mean(np.sum(t.numpy() * np.log(p), axis=1))
    bag0, bag1 = p[1:].mean(axis=0), p[0]
    kl = [np.sum(props[0].numpy() * np.log(props[0].numpy() / bag0)),
          np.sum(props[1].numpy() * np.log(props[1].numpy() / bag1))]
    expected = ce + 0.5 * np.mean(kl)
    assert float(clf._loss(z, t, pos)) == pytest.approx(expected, rel=1e-6)
    clf.alpha = 0.0
    assert float(clf._loss(z, t, pos)) == pytest.approx(ce, rel=1e-6)


@pytest.mark.parametrize("hops", [0, 1, 3])
def test_targets_are_reconstructed_over_hops_y(hops):
    G, y = _graph()
    rows = np.arange(0, 24, 2)
    clf = RGNNClassifier(eps_y=1.0, hops_y=hops, alpha=0.0, classes=[0, 1, 2], epochs=1,
                         early_stopping=False, random_state=0, device="cpu").fit(G[rows], y[rows])
    noisy = np.array([2, 0, 1, 1, 0, 2, 2, 1, 0, 0, 1, 2])
    T = clf.label_mechanism_.transition_matrix_
    expected = reconstruct_labels(G.adjacency, rows, noisy, T, hops=hops)
    np.testing.assert_allclose(clf._fit_targets(noisy, G[rows]).numpy(), expected, atol=1e-6)
    # reconstruct_labels=False: the noisy labels themselves, one-hot
    clf.set_params(reconstruct_labels=False)
    np.testing.assert_array_equal(clf._fit_targets(noisy, G[rows]).numpy(), np.eye(3)[noisy])


def test_bag_proportions_are_debiased_over_the_training_rows():
    pytest.importorskip("pymetis")
    G, y = _graph()
    rows = np.arange(1, 24, 2)   # not the first nodes: their bags are clusters_[rows]
    clf = RGNNClassifier(eps_y=1.0, n_clusters=3, classes=[0, 1, 2], epochs=1,
                         early_stopping=False, random_state=0, device="cpu").fit(G[rows], y[rows])
    mech = clf.label_mechanism_
    noisy = mech.randomize_encoded(y[rows], G[rows])
    expected, _ = cluster_label_proportions(clf.clusters_[rows], noisy,
                                            mech.transition_matrix_, n_clusters=3)
    np.testing.assert_allclose(clf.cluster_proportions_, expected)
    # the proportions of the reports themselves are not debiased: not the same
    raw, _ = cluster_label_proportions(clf.clusters_[rows], noisy, np.eye(3), n_clusters=3)
    assert not np.allclose(raw, expected)


def test_training_sees_the_randomized_labels():
    # Without reconstruction and LLP the targets are the one-hot reported labels: the fit
    # at eps_y equals a non-private fit (eps_y=inf) on the labels the users reported.
    G, y = _graph()
    rows = np.arange(0, 24, 2)
    kw = dict(classes=[0, 1, 2], alpha=0.0, reconstruct_labels=False, epochs=5,
              early_stopping=False, random_state=3, device="cpu")
    a = RGNNClassifier(eps_y=0.5, **kw).fit(G[rows], y[rows])
    noisy = LabelRandomizedResponse(0.5, classes=[0, 1, 2], random_state=3).fit().randomize(
        y[rows], G[rows])
    assert np.any(noisy != y[rows])
    b = RGNNClassifier(eps_y=np.inf, **kw).fit(G[rows], noisy)
    np.testing.assert_allclose(a.loss_curve_, b.loss_curve_, rtol=1e-6)
    np.testing.assert_allclose(a.predict_proba(G), b.predict_proba(G), atol=1e-6)
    G2 = G.new_simulation()   # other users: the true labels collected once more
    c = RGNNClassifier(eps_y=np.inf, **kw).fit(G2[rows], y[rows])
    assert not np.allclose(a.loss_curve_, c.loss_curve_)


def test_layers_and_heads_reach_the_module():
    G, y = _graph()
    rows = np.arange(0, 24, 2)
    clf = RGNNClassifier("gat", eps_y=np.inf, alpha=0.0, classes=[0, 1, 2], heads=3,
                         n_layers=3, hidden_size=5, epochs=1, early_stopping=False,
                         device="cpu").fit(G[rows], y[rows])
    layers = clf.module_.layers
    assert len(layers) == 3
    assert [layer.heads for layer in layers] == [3, 3, 1]
    assert layers[-1].n_out == 3 and layers[0].n_out == 5


def test_as_many_bags_as_nodes_is_allowed():
    # n_clusters must not exceed the number of nodes: equal is a valid setting
    pytest.importorskip("pymetis")
    G, y = _graph(n=12)
    rows = np.arange(0, 12, 2)
    clf = RGNNClassifier(eps_y=1.0, n_clusters=12, classes=[0, 1, 2], epochs=1,
                         early_stopping=False, random_state=0, device="cpu").fit(G[rows], y[rows])
    assert clf.cluster_proportions_.shape == (12, 3)
    with pytest.raises(ValueError, match="n_clusters=13 exceeds"):
        clf.set_params(n_clusters=13).fit(G[rows], y[rows])
