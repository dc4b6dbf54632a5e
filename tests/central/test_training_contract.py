"""What a central DP training does against what it reports.

* The noise added to each group's clipped sum has the standard deviation reported in
  ``noise_std_`` (``z * 2 (K + 1) sqrt(L) * C_g * inflation``) and the update is the noisy
  sum divided by the batch size.
* ``epochs`` counts ``ceil(epochs * N / m)`` steps; the steps run are the steps accounted.
* The ledger is charged the ``epsilon_`` / ``delta_`` the estimator reports.
* The neighbourhoods a DP-GNN trains on have at most ``max_degree`` neighbours.
* Per-group thresholds (a list, a dict, ``clip_percentile``) reach the groups they name.
* Predictions aggregate with ``(D + I)^-1 (A + I)`` over the 0/1 graph, as in training.
* ``patience`` stops the training; ``best_step_`` is the iterate of the lowest loss.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import skldp.central._dpgnn as dpgnn
from skldp import GraphData
from skldp.accounting import compute_epsilon, privacy_report
from skldp.central import DPGNNClassifier, DPMLPClassifier
from skldp.exceptions import PrivacyLeakWarning

CL = dict(classes=[0, 1])
HYP = dict(accountant="hypergeometric")


def _graph(small_graph):
    A, X, y = small_graph
    return GraphData(X, A), y


def _spy_noise(monkeypatch):
    """Record every ``_grid_gaussian`` call: (clipped sum, sigma, step, noisy sum)."""
    calls = []
    real = dpgnn._grid_gaussian

    def spy(s, sigma, step, generator):
        out = real(s, sigma, step, generator)
        calls.append((s.detach().double().clone(), sigma, step, out.clone()))
        return out
    monkeypatch.setattr(dpgnn, "_grid_gaussian", spy)
    return calls


def _spy_initial_params(monkeypatch):
    """The parameters at the optimiser's creation (the initial iterate)."""
    seen = []

    class SpySGD(dpgnn.SGD):
        def __init__(self, params, *args, **kwargs):
            params = list(params)
            seen.append([p.detach().clone() for p in params])
            super().__init__(params, *args, **kwargs)
    monkeypatch.setattr(dpgnn, "SGD", SpySGD)
    return seen


@pytest.mark.parametrize("Est,extra,K", [(DPGNNClassifier, dict(max_degree=2), 2),
                                         (DPMLPClassifier, HYP, 0)], ids=["DPGNN", "DPMLP"])
def test_the_noise_added_is_the_noise_reported_and_the_step_divides_by_m(
        small_graph, monkeypatch, Est, extra, K):
    G, y = _graph(small_graph)
    tr, m, z = np.arange(0, 60, 2), 10, 20.0
    C = {"enc": 0.5, "agg": 1.0, "dec": 2.0} if Est is DPGNNClassifier else \
        {"enc": 0.5, "dec": 2.0}
    calls = _spy_noise(monkeypatch)
    init = _spy_initial_params(monkeypatch)
    clf = Est(batch_size=m, n_steps=1, optimizer="sgd", lr=1.0, noise_multiplier=z,
              max_grad_norm=C, hidden_size=16, random_state=0, **extra, **CL).fit(G[tr], y[tr])
    names = [n for n, _ in clf.module_.named_parameters()]
    groups = clf.module_.groups()
    assert len(calls) == len(names)   # every parameter is noised, once per step
    L = len(C)
    pooled = {g: [] for g in C}
    for n, (s, sigma, step, out), p0, p1 in zip(names, calls, init[0],
                                                clf.module_.parameters(), strict=True):
        g = groups[n]
        # the sigma used is the one reported: z * 2 (K + 1) sqrt(L) * C_g * inflation
        assert sigma == clf.noise_std_[g]
        assert sigma == pytest.approx(z * 2 * (K + 1) * math.sqrt(L) * C[g]
                                      * clf.sensitivity_inflation_, rel=1e-12)
        assert step == clf.grid_step_[g]
        pooled[g].append((out - s).ravel())
        # one SGD step of lr 1: theta_1 = theta_0 - noisy sum / m
        torch.testing.assert_close(p1.detach().double().cpu(), (p0.double() - out / m).cpu(),
                                   rtol=1e-6, atol=1e-6 * sigma / m)
    for g, parts in pooled.items():   # the noise drawn has that standard deviation
        e = torch.cat(parts)
        assert float(e.std()) == pytest.approx(clf.noise_std_[g], rel=6 / math.sqrt(len(e)))


def test_clipped_sums_stay_within_m_times_the_threshold(small_graph, monkeypatch):
    # each node contributes at most C_g to its group: a batch's sum has norm <= m C_g
    G, y = _graph(small_graph)
    calls = _spy_noise(monkeypatch)
    C = {"enc": 1e-3, "agg": 2e-3, "dec": 4e-3}   # far below the gradients' norms
    clf = DPGNNClassifier(max_degree=3, batch_size=10, n_steps=2, noise_multiplier=1.0,
                          max_grad_norm=C, hidden_size=8, random_state=0,
                          **CL).fit(G[::2], y[::2])
    groups = clf.module_.groups()
    names = [n for n, _ in clf.module_.named_parameters()]
    for t in range(2):
        sq = {g: 0.0 for g in C}
        for n, (s, _, _, _) in zip(names, calls[t * len(names):(t + 1) * len(names)],
                                   strict=True):
            sq[groups[n]] += float(s.pow(2).sum())
        for g in C:
            assert math.sqrt(sq[g]) <= 10 * C[g] * (1 + 1e-5)
            assert math.sqrt(sq[g]) > 0.5 * C[g]   # (and clipping keeps a signal)


def test_epochs_count_the_ceiling_of_their_steps_and_all_are_run_and_accounted(monkeypatch):
    X = np.random.default_rng(0).normal(size=(30, 4))
    y = (X[:, 0] > 0).astype(int)
    calls = []
    real = dpgnn._PerNodeGradients.clipped_sum
    monkeypatch.setattr(dpgnn._PerNodeGradients, "clipped_sum",
                        lambda self, idx, C: calls.append(len(idx)) or real(self, idx, C))
    clf = DPMLPClassifier(batch_size=8, epochs=1.5, noise_multiplier=1.0, hidden_size=4,
                          random_state=0, **HYP, **CL).fit(X, y)
    steps = math.ceil(1.5 * 30 / 8)   # 6 (5.625 steps: the last one is run)
    assert clf.steps_ == clf.n_iter_ == len(calls) == steps
    assert clf.epsilon_ == pytest.approx(compute_epsilon(1.0, 30, 8, 0, steps, 1 / 300),
                                         rel=1e-12)


@pytest.mark.parametrize("Est,extra", [(DPGNNClassifier, dict(max_degree=2)),
                                       (DPMLPClassifier, HYP)], ids=["DPGNN", "DPMLP"])
@pytest.mark.parametrize("steps", [dict(epochs=1e12), dict(epochs=1e308),
                                   dict(n_steps=10**18), dict(epochs=1e12, target_epsilon=1.0)],
                         ids=["epochs", "epochs-overflow", "n_steps", "epochs-calibrated"])
def test_a_huge_number_of_steps_is_refused_before_anything_runs(small_graph, Est, extra, steps):
    # ran for ever (the steps), or raised OverflowError (epochs * N past the floats)
    G, y = _graph(small_graph)
    G = G.new_simulation()
    tr = np.arange(0, 60, 2)
    with pytest.raises(ValueError, match="at most"):
        Est(batch_size=10, hidden_size=4, random_state=0, **extra, **CL,
            **steps).fit(G[tr], y[tr])
    assert G.ledger.entries() == []   # refused before any charge


@pytest.mark.parametrize("Est,extra", [(DPGNNClassifier, dict(max_degree=2)),
                                       (DPMLPClassifier, HYP)], ids=["DPGNN", "DPMLP"])
def test_the_ledger_is_charged_the_reported_guarantee(small_graph, Est, extra):
    G, y = _graph(small_graph)
    G = G.new_simulation()
    tr = np.arange(0, 60, 2)
    clf = Est(batch_size=10, n_steps=4, noise_multiplier=1.5, hidden_size=4, random_state=0,
              **extra, **CL).fit(G[tr], y[tr])
    assert clf.collection_.epsilon == clf.epsilon_ and clf.collection_.delta == clf.delta_
    (spend,) = privacy_report(clf).central
    assert spend.epsilon == pytest.approx(clf.epsilon_, rel=1e-12)
    assert spend.delta == pytest.approx(clf.delta_, rel=1e-12)
    # the users whose data it read: the training nodes and (DP-GNN) their sampled neighbours
    A = sp.csr_matrix(G.adjacency)
    assert spend.n_users == len(tr) if Est is DPMLPClassifier else \
        len(tr) < spend.n_users <= len(np.union1d(tr, A[tr].indices))
    assert f"{spend.n_users} users' data read" in str(privacy_report(clf))
    assert G.ledger.central_epsilon == pytest.approx(clf.epsilon_, rel=1e-12)


def test_training_neighbourhoods_respect_max_degree(small_graph, monkeypatch):
    G, y = _graph(small_graph)
    seen = []
    real = dpgnn._PerNodeGradients.__init__

    def spy(self, module, feats, nb, w_t, y_t, with_gram=True):
        seen.append((nb.copy(), w_t.cpu().numpy().copy()))
        real(self, module, feats, nb, w_t, y_t, with_gram)
    monkeypatch.setattr(dpgnn._PerNodeGradients, "__init__", spy)
    tr = np.arange(60)
    A = sp.csr_matrix(G.adjacency)
    assert np.diff(A.indptr).max() > 3   # the bound binds
    clf = DPGNNClassifier(max_degree=2, batch_size=10, n_steps=1, hidden_size=4,
                          random_state=0, **CL).fit(G[tr], y[tr])
    (nb, w), = seen
    n_nb = (w[:, 1:] > 0).sum(axis=1)
    assert n_nb.max() == 2   # at most K = 2 neighbours (and some node has them)
    for v in range(len(tr)):
        assert set(nb[v, 1:][w[v, 1:] > 0]) <= set(A[[v]].indices)
    assert clf.epsilon_ == pytest.approx(
        compute_epsilon(1.0, 60, 10, 2, 1, clf.delta_), rel=1e-12)


def test_per_group_thresholds_reach_their_groups(small_graph):
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)
    kw = dict(max_degree=2, batch_size=10, n_steps=1, hidden_size=4, random_state=0, **CL)
    a = DPGNNClassifier(max_grad_norm=[0.5, 1.0, 2.0], **kw).fit(G[tr], y[tr])
    assert a.clip_thresholds_ == {"enc": 0.5, "agg": 1.0, "dec": 2.0}
    assert a.noise_std_["dec"] == pytest.approx(4 * a.noise_std_["enc"], rel=1e-12)
    for bad in ({"enc": 0.0, "agg": 1.0, "dec": 1.0}, {"enc": 1.0, "agg": -1.0, "dec": 1.0},
                {"enc": 1.0, "agg": 1.0, "dec": math.inf}, [1.0, math.nan, 1.0]):
        with pytest.raises(ValueError, match="max_grad_norm must be > 0 and finite"):
            DPGNNClassifier(max_grad_norm=bad, **kw).fit(G[tr], y[tr])


def test_clip_percentile_thresholds_are_that_percentile_of_the_initial_norms(
        small_graph, monkeypatch):
    G, y = _graph(small_graph)
    tr, m = np.arange(0, 60, 2), 10
    calls = []
    real = dpgnn._PerNodeGradients.parts

    def spy(self, idx):
        out = real(self, idx)
        calls.append({g: v.cpu().numpy().copy() for g, v in out[3].items()})
        return out
    monkeypatch.setattr(dpgnn._PerNodeGradients, "parts", spy)
    with pytest.warns(PrivacyLeakWarning):
        clf = DPGNNClassifier(max_degree=2, batch_size=m, n_steps=1, clip_percentile=25,
                              max_grad_norm=3.0, hidden_size=4, random_state=0,
                              **CL).fit(G[tr], y[tr])
    first = calls[:len(tr) // m]   # the percentile pass over the training nodes
    for g, c in clf.clip_thresholds_.items():
        norms = np.concatenate([n[g] for n in first])
        assert len(norms) == len(tr)
        assert c == pytest.approx(3.0 * np.percentile(norms, 25), rel=1e-6)
        assert np.percentile(norms, 24) < c / 3.0 < np.percentile(norms, 26)


def test_dpgnn_predicts_with_the_training_aggregation(small_graph):
    A, X, _ = small_graph
    y3 = np.arange(60) % 3   # three classes: decision_function returns the logits
    G = GraphData(X, A)
    clf = DPGNNClassifier(max_degree=3, classes=[0, 1, 2], batch_size=10, n_steps=3,
                          hidden_size=8, random_state=0).fit(G[:40], y3[:40])
    mod = clf.module_.double()
    B = sp.csr_matrix(A, dtype=np.float64)
    B.setdiag(0)
    B.eliminate_zeros()
    B.data[:] = 1.0
    P = sp.diags(1.0 / (np.asarray(B.sum(axis=1)).ravel() + 1)) @ (B + sp.eye(60))
    with torch.no_grad():
        E = mod.encode(mod.enc_in(torch.as_tensor(X, dtype=torch.float64)))
        want = mod.head(torch.as_tensor(P.toarray()) @ E).numpy()
    np.testing.assert_allclose(clf.decision_function(G[40:]), want[40:], rtol=1e-6,
                               atol=1e-9)
    # DP-MLP, two classes: the score of classes_[1], the logit difference
    mlp = DPMLPClassifier(batch_size=10, n_steps=2, hidden_size=4, random_state=0, **HYP,
                          **CL).fit(X, y3 % 2)
    with torch.no_grad():
        m2 = mlp.module_.double()
        z = m2(m2.enc_in(torch.as_tensor(X, dtype=torch.float64))[:, None, :],
               torch.ones(60, 1, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(mlp.decision_function(X), z[:, 1] - z[:, 0], rtol=1e-6,
                               atol=1e-9)


def test_patience_stops_and_the_best_validated_iterate_is_kept(small_graph):
    G, y = _graph(small_graph)
    kw = dict(max_degree=2, batch_size=10, n_steps=40, noise_multiplier=50.0, lr=0.5,
              hidden_size=8, validation=np.arange(40, 60), random_state=0, **CL)
    with pytest.warns(PrivacyLeakWarning):
        clf = DPGNNClassifier(patience=2, **kw).fit(G, y)
    scores = clf.validation_scores_
    assert clf.n_iter_ == len(scores) < clf.steps_ == 40
    assert clf.best_step_ == int(np.argmin(scores))
    assert clf.n_iter_ - 1 - clf.best_step_ == 2   # stopped 2 steps after the best
    # the epsilon covers the steps accounted, whatever the stop
    assert clf.epsilon_ == pytest.approx(compute_epsilon(50.0, 40, 10, 2, 40, clf.delta_),
                                         rel=1e-12)


def test_training_forward_is_the_one_layer_gnn_on_the_sampled_graph(small_graph):
    # Daigavane et al. eq. (2): dec(act(agg((D + I)^-1 (A + I) act(enc(X))))) on the
    # sampled graph, the padding of each neighbourhood weighing nothing
    A, X, y = small_graph
    rows = np.arange(0, 60, 3)
    S = sp.csr_matrix(dpgnn.degree_bounded_sample(A, 3, nodes=rows, random_state=0))
    nb, w = dpgnn._padded_neighbourhoods(S, rows, 3)
    mod = dpgnn._OneLayerGNN(X.shape[1], 2, 6, 1, 1, "tanh", True,
                             generator=torch.Generator().manual_seed(0)).double()
    Xt = torch.as_tensor(X, dtype=torch.float64)
    with torch.no_grad():
        got = mod(mod.enc_in(Xt[torch.as_tensor(nb)]), torch.as_tensor(w, dtype=torch.float64))
        B = S + sp.eye(60)
        P = torch.as_tensor((sp.diags(1.0 / np.asarray(B.sum(axis=1)).ravel()) @ B).toarray())
        h = P @ torch.tanh(mod.enc_in(Xt))
        want = mod.dec[0](torch.tanh(mod.agg(h)))[rows]
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("z", [0.3, 1.0, 4.0])
def test_the_grid_is_finer_than_the_noise_by_two_to_the_twenty(small_graph, z):
    # below z = 1 the grid follows the noise down: a step of 2^-20 of C alone would be
    # coarse against a noise of z C (Notes, "Noise on a grid")
    G, y = _graph(small_graph)
    clf = DPMLPClassifier(batch_size=10, n_steps=1, noise_multiplier=z, random_state=0,
                          **HYP, **CL).fit(G[:40], y[:40])
    for g, step in clf.grid_step_.items():
        assert step == 2.0 ** round(math.log2(step))                  # a power of two
        assert step <= 2.0 ** -dpgnn.GRID_BITS * clf.noise_std_[g]
        assert step > 2.0 ** (-dpgnn.GRID_BITS - 1) * clf.noise_std_[g] / (
            max(z, 1.0) * clf.sensitivity_inflation_)                 # the largest such


@pytest.mark.parametrize("Est,extra", [(DPGNNClassifier, dict(max_degree=2)),
                                       (DPMLPClassifier, HYP)], ids=["DPGNN", "DPMLP"])
@pytest.mark.parametrize("params", [dict(noise_multiplier=1e300),
                                    dict(noise_multiplier=0.0, max_grad_norm=None,
                                         optimizer="sgd", lr=1e38, activation="relu")],
                         ids=["noise-past-float32", "non-private-sgd-overflow"])
def test_a_training_that_ends_on_non_finite_parameters_is_refused(small_graph, Est, extra,
                                                                     params):
    # the noisy sums (or the steps) overflowed float32: the parameters ended NaN or inf, and
    # the fitted model predicted NaN probabilities and the first class everywhere
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)
    clf = Est(batch_size=10, n_steps=3, hidden_size=4, random_state=0, **extra, **CL,
              **params)
    with pytest.raises(ValueError, match="Training diverged"):
        clf.fit(G[tr], y[tr])
    assert not hasattr(clf, "module_")
