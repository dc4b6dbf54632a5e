"""Tests of DPGNNClassifier / DPMLPClassifier (paper 004)."""

import math
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from sklearn.utils.estimator_checks import parametrize_with_checks

from skldp import GraphData
from skldp.accounting import compute_epsilon, privacy_report
from skldp.central import DPGNNClassifier, DPMLPClassifier, degree_bounded_sample
from skldp.central._dpgnn import _Features, _OneLayerGNN, _padded_neighbourhoods, _PerNodeGradients
from skldp.exceptions import PrivacyBudgetError, PrivacyLeakWarning


def _graph(small_graph, sparse=False):
    A, X, y = small_graph
    X = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0)) if sparse else X
    return GraphData(X, A), y


# ------------------------------------------------------- per-node gradients
def _naive_clipped_sum(module, X, nb, w, y, idx, C):
    """Loop over nodes: autograd of each node's loss, per-group clipping, sum."""
    groups = module.groups()
    total = {n: torch.zeros_like(p) for n, p in module.named_parameters()}
    Xd = torch.as_tensor(X.toarray() if sp.issparse(X) else X, dtype=torch.float32)
    for v in idx:
        module.zero_grad()
        z1 = module.enc_in(Xd[nb[v]])
        out = module(z1, torch.as_tensor(w[v]))
        F.cross_entropy(out[None], torch.as_tensor(y[v:v + 1])).backward()
        g = {n: p.grad.clone() for n, p in module.named_parameters()}
        norms = {}
        for n, t in g.items():
            norms[groups[n]] = norms.get(groups[n], 0.0) + float((t ** 2).sum())
        for n, t in g.items():
            total[n] += t * min(1.0, C[groups[n]] / math.sqrt(norms[groups[n]]))
    return total


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("graph,K", [(True, 3), (False, 0)])
@pytest.mark.parametrize("C", [0.05, 1e6])
def test_per_node_clipped_sum_matches_loop(small_graph, sparse, graph, K, C):
    G, y = _graph(small_graph, sparse)
    rows = np.arange(40)
    S = degree_bounded_sample(G.adjacency, K, nodes=rows, random_state=0)
    nb, w = _padded_neighbourhoods(S, rows, K)
    torch.manual_seed(0)
    module = _OneLayerGNN(G.shape[1], 2, 8, 2, 2, "tanh", graph)
    eng = _PerNodeGradients(module, _Features(G.features, torch.device("cpu")), nb,
                            torch.as_tensor(w), torch.as_tensor(y[rows]))
    idx = np.array([0, 3, 5, 11, 20, 39])
    Cd = {g: C for g in eng.groups}
    got = eng.clipped_sum(idx, Cd)
    want = _naive_clipped_sum(module, G.features, nb, w, y[rows], idx, Cd)
    for n in want:
        torch.testing.assert_close(got[n], want[n], rtol=1e-4, atol=1e-6)
    if C > 1:  # no clipping: equal to the plain summed gradient as well
        plain = eng.summed(idx)
        for n in want:
            torch.testing.assert_close(plain[n], want[n], rtol=1e-4, atol=1e-6)


def test_neighbourhoods_and_weights(small_graph):
    G, _ = _graph(small_graph)
    rows = np.arange(0, 60, 2)
    S = degree_bounded_sample(G.adjacency, 4, nodes=rows, random_state=0)
    nb, w = _padded_neighbourhoods(S, rows, 4)
    assert nb.shape == (30, 5) and np.all(nb[:, 0] == rows)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-6)  # (D + I)^-1 (A + I) rows
    for i, v in enumerate(rows):
        got = set(nb[i, 1:][w[i, 1:] > 0].tolist())
        assert got == set(S[v].indices.tolist())


# ------------------------------------------------------------ the estimator
def test_fit_predict_privacy_attributes(small_graph):
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)
    clf = DPGNNClassifier(max_degree=3, batch_size=10, n_steps=30, target_epsilon=5.0,
                          hidden_size=8, random_state=0).fit(G[tr], y[tr])
    assert DPGNNClassifier.privacy_model == "central"
    assert clf.protects_ == ("features", "labels", "edges")
    assert clf.delta_ == pytest.approx(1 / (10 * len(tr)))
    assert clf.epsilon_ <= 5.0
    assert clf.epsilon_ == pytest.approx(
        compute_epsilon(clf.noise_multiplier_, len(tr), 10, 3, 30, clf.delta_))
    # noise of each group: z sqrt(L) 2 (K+1) C_l
    for _g, s in clf.noise_std_.items():
        assert s == pytest.approx(clf.noise_multiplier_ * math.sqrt(3) * 2 * 4 * 1.0)
    te = np.arange(1, 60, 2)
    assert clf.predict(G[te]).shape == (30,)
    P = clf.predict_proba(G[te])
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    rep = privacy_report(clf)
    assert rep.central and rep.central[0].model == "central"
    assert rep.local_epsilon == 0.0


def test_reproducible_and_picklable(small_graph):
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)
    kw = dict(max_degree=2, batch_size=10, n_steps=10, noise_multiplier=1.0, hidden_size=8)
    a = DPGNNClassifier(random_state=3, **kw).fit(G[tr], y[tr]).predict_proba(G)
    b = DPGNNClassifier(random_state=3, **kw).fit(G[tr], y[tr])
    np.testing.assert_allclose(a, b.predict_proba(G))
    c = pickle.loads(pickle.dumps(b))
    np.testing.assert_allclose(a, c.predict_proba(G))
    d = DPGNNClassifier(random_state=4, **kw).fit(G[tr], y[tr]).predict_proba(G)
    assert not np.allclose(a, d)


def test_learns_without_noise_and_noise_hurts(small_graph):
    G, y = _graph(small_graph)
    rng = np.random.default_rng(0)
    tr = rng.permutation(60)[:30]
    te = np.setdiff1d(np.arange(60), tr)
    free = DPGNNClassifier(max_degree=5, batch_size=15, n_steps=60, lr=0.05, noise_multiplier=0,
                           max_grad_norm=None, hidden_size=16, random_state=0)
    assert free.fit(G[tr], y[tr]).score(G[te], y[te]) >= 0.9
    assert math.isinf(free.epsilon_)
    loud = DPGNNClassifier(max_degree=5, batch_size=10, n_steps=5, noise_multiplier=1e3,
                           hidden_size=16, random_state=0).fit(G[tr], y[tr])
    assert loud.epsilon_ < 1e-2


def test_sgd_and_percentile_clipping(small_graph):
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)
    clf = DPGNNClassifier(max_degree=2, batch_size=10, n_steps=5, optimizer="sgd", lr=0.5,
                          hidden_size=8, random_state=0).fit(G[tr], y[tr])
    assert np.isfinite(clf.predict_proba(G)).all()
    with pytest.warns(PrivacyLeakWarning, match="not differentially private"):
        clf = DPGNNClassifier(max_degree=2, batch_size=10, n_steps=5, clip_percentile=75,
                              max_grad_norm=2.0, hidden_size=8, random_state=0)
        clf.fit(G[tr], y[tr])
    assert set(clf.clip_thresholds_) == {"enc", "agg", "dec"}
    assert all(0 < c < 1e6 for c in clf.clip_thresholds_.values())


def test_bad_input(small_graph):
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)
    Xtr, ytr = G[tr], y[tr]
    for K in (-1, 2.5, "2"):
        with pytest.raises((ValueError, TypeError), match="max_degree"):
            DPGNNClassifier(max_degree=K, batch_size=10).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="larger than the training set"):
        DPGNNClassifier(batch_size=31).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="larger than the training set"):
        DPMLPClassifier(batch_size=31).fit(np.asarray(Xtr), ytr)
    for delta in (0.0, 1.0, 2.0):
        with pytest.raises(ValueError, match="delta"):
            DPGNNClassifier(batch_size=10, delta=delta).fit(Xtr, ytr)
    with pytest.raises(PrivacyBudgetError, match="unreachable with steps=100000"):
        DPGNNClassifier(batch_size=30, n_steps=100000, target_epsilon=1e-3).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="noise needs a bounded sensitivity"):
        DPGNNClassifier(batch_size=10, max_grad_norm=None).fit(Xtr, ytr)
    with pytest.raises(TypeError, match="GraphData"):
        DPGNNClassifier(batch_size=10).fit(np.asarray(Xtr), ytr)
    with pytest.raises(ValueError, match="no adjacency"):
        DPGNNClassifier(batch_size=10).fit(GraphData(np.asarray(G))[tr], ytr)
    D = sp.csr_matrix(np.triu(np.ones((60, 60)), 1))
    with pytest.raises(ValueError, match="symmetric"):
        DPGNNClassifier(batch_size=10).fit(GraphData(np.asarray(G), D)[tr], ytr)
    with pytest.raises(ValueError, match="optimizer"):
        DPGNNClassifier(batch_size=10, optimizer="rmsprop").fit(Xtr, ytr)


def test_dpmlp_accounting_is_k0(small_graph):
    _, X, y = small_graph
    clf = DPMLPClassifier(batch_size=12, n_steps=20, noise_multiplier=1.3, hidden_size=8,
                          random_state=0).fit(X, y)
    assert clf.epsilon_ == pytest.approx(compute_epsilon(1.3, 60, 12, 0, 20, 1 / 600))
    assert clf.protects_ == ("features", "labels")
    # two groups (encoder, decoder), noise z sqrt(2) 2 C
    assert set(clf.noise_std_) == {"enc", "dec"}
    assert clf.noise_std_["dec"] == pytest.approx(1.3 * math.sqrt(2) * 2)
    G = GraphData(X, small_graph[0])
    np.testing.assert_allclose(clf.predict_proba(G), clf.predict_proba(X), rtol=1e-5)


@parametrize_with_checks(
    [DPMLPClassifier(batch_size=5, n_steps=10, noise_multiplier=0.5, hidden_size=8,
                     random_state=0)],
    expected_failed_checks=lambda est: {
        "check_classifiers_classes": "few noisy DP steps cannot fit the toy problem",
        "check_classifiers_train": "few noisy DP steps cannot reach the accuracy required",
    })
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)
