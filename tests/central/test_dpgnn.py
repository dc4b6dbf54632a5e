"""Tests of DPGNNClassifier / DPMLPClassifier (paper 004)."""

import importlib.util
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
from skldp.accounting import compute_dpsgd_epsilon, compute_epsilon, privacy_report
from skldp.central import DPGNNClassifier, DPMLPClassifier, degree_bounded_sample
from skldp.central import _dpgnn as dpgnn_module
from skldp.central._dpgnn import (
    GRID_BITS,
    _Features,
    _grid_gaussian,
    _neighbourhood_gram,
    _OneLayerGNN,
    _padded_neighbourhoods,
    _PerNodeGradients,
)
from skldp.exceptions import PrivacyBudgetError, PrivacyLeakWarning

CL = dict(classes=[0, 1])  # the public label domain of small_graph
# DPMLPClassifier's default accountant ("combined") needs the optional dp-accounting;
# tests about other things than the accounting use the paper's, which needs nothing.
HYP = dict(accountant="hypergeometric")
needs_dp_accounting = pytest.mark.skipif(
    importlib.util.find_spec("dp_accounting") is None,
    reason="DPMLPClassifier's default accountant needs dp-accounting (the accounting extra)")


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
                          hidden_size=8, random_state=0, **CL).fit(G[tr], y[tr])
    assert DPGNNClassifier.privacy_model == "central"
    assert clf.protects_ == ("features", "labels", "edges")
    assert clf.delta_ == pytest.approx(1 / (10 * len(tr)))
    assert clf.epsilon_ <= 5.0
    # DP-GNN keeps paper 004's hypergeometric Theorem 1 accountant
    assert clf.epsilon_ == pytest.approx(
        compute_epsilon(clf.noise_multiplier_, len(tr), 10, 3, 30, clf.delta_), rel=1e-12)
    # noise of each group: z sqrt(L) 2 (K+1) C_l, times the rounding inflation
    for _g, s in clf.noise_std_.items():
        assert s == pytest.approx(clf.noise_multiplier_ * math.sqrt(3) * 2 * 4 * 1.0
                                  * clf.sensitivity_inflation_, rel=1e-12)
    te = np.arange(1, 60, 2)
    assert clf.predict(G[te]).shape == (30,)
    P = clf.predict_proba(G[te])
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    rep = privacy_report(clf)
    assert rep.central and rep.central[0].model == "central"
    assert rep.local_epsilon == 0.0
    # no timing is released with the model: it depends on the data (not covered by epsilon)
    assert not any("time" in k for k in vars(clf))


def test_reproducible_and_picklable(small_graph):
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)
    kw = dict(max_degree=2, batch_size=10, n_steps=10, noise_multiplier=1.0, hidden_size=8, **CL)
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
                           max_grad_norm=None, hidden_size=16, random_state=0, **CL)
    assert free.fit(G[tr], y[tr]).score(G[te], y[te]) >= 0.9
    assert math.isinf(free.epsilon_)
    loud = DPGNNClassifier(max_degree=5, batch_size=10, n_steps=5, noise_multiplier=1e3,
                           hidden_size=16, random_state=0, **CL).fit(G[tr], y[tr])
    assert loud.epsilon_ < 1e-2


def test_sgd_and_percentile_clipping(small_graph):
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)
    clf = DPGNNClassifier(max_degree=2, batch_size=10, n_steps=5, optimizer="sgd", lr=0.5,
                          hidden_size=8, random_state=0, **CL).fit(G[tr], y[tr])
    assert np.isfinite(clf.predict_proba(G)).all()
    with pytest.warns(PrivacyLeakWarning, match="not differentially private"):
        clf = DPGNNClassifier(max_degree=2, batch_size=10, n_steps=5, clip_percentile=75,
                              max_grad_norm=2.0, hidden_size=8, random_state=0, **CL)
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


def test_dpgnn_without_neighbours_is_charged_as_dpmlp(small_graph, monkeypatch):
    # max_degree=0: each node changes only its own clipped gradient, batches of fixed size
    # without replacement, noise z * 2 C: DP-MLP's training, so DP-MLP's accountant
    pytest.importorskip("dp_accounting")
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)
    kw = dict(batch_size=3, n_steps=2, noise_multiplier=0.8, hidden_size=4, random_state=0,
              **CL)
    gnn = DPGNNClassifier(max_degree=0, **kw).fit(G[tr], y[tr])
    mlp = DPMLPClassifier(**kw).fit(G[tr], y[tr])
    assert gnn.accountant_ == mlp.accountant_ == "combined"
    assert gnn.epsilon_ == mlp.epsilon_ == compute_dpsgd_epsilon(0.8, 30, 3, 2, 1 / 300)
    theorem1 = compute_epsilon(0.8, 30, 3, 0, 2, 1 / 300)
    assert gnn.epsilon_ < 0.6 * theorem1   # 2.20 against 4.04, charged before
    # calibrated alike, and with K >= 1 Theorem 1 as before
    t = dict(kw, noise_multiplier=None, target_epsilon=3.0)
    assert DPGNNClassifier(max_degree=0, **t).fit(G[tr], y[tr]).noise_multiplier_ == \
        DPMLPClassifier(**t).fit(G[tr], y[tr]).noise_multiplier_
    one = DPGNNClassifier(max_degree=1, **kw).fit(G[tr], y[tr])
    assert one.accountant_ == "hypergeometric"
    assert one.epsilon_ == compute_epsilon(0.8, 30, 3, 1, 2, 1 / 300)
    # without dp-accounting DP-GNN keeps Theorem 1 (larger, still valid) and says so
    monkeypatch.setattr(dpgnn_module, "dp_accounting_installed", lambda: False)
    alone = DPGNNClassifier(max_degree=0, **kw).fit(G[tr], y[tr])
    assert alone.accountant_ == "hypergeometric" and alone.epsilon_ == theorem1


def test_dpmlp_uses_the_standard_dpsgd_accountant(small_graph):
    dpa = pytest.importorskip("dp_accounting")
    _, X, y = small_graph
    kw = dict(batch_size=6, n_steps=20, noise_multiplier=1.3, hidden_size=8, random_state=0,
              **CL)
    clf = DPMLPClassifier(accountant="wor", **kw).fit(X, y)
    assert clf.epsilon_ == pytest.approx(
        compute_dpsgd_epsilon(1.3, 60, 6, 20, 1 / 600, bound="wor"), rel=1e-12)
    assert clf.protects_ == ("features", "labels")
    # two groups (encoder, decoder), noise z sqrt(2) 2 C (times the rounding inflation)
    assert set(clf.noise_std_) == {"enc", "dec"}
    infl = clf.sensitivity_inflation_
    assert clf.noise_std_["dec"] == pytest.approx(1.3 * math.sqrt(2) * 2 * infl, rel=1e-12)
    # Replace-one: one example moves the rescaled clipped sum by at most 2 sqrt(L) (inflated
    # by the rounding); dp-accounting's GaussianDpEvent takes sigma / sensitivity.
    z_seen = clf.noise_std_["enc"] / (2 * math.sqrt(2) * clf.clip_thresholds_["enc"] * infl)
    acc = dpa.rdp.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    acc.compose(dpa.SelfComposedDpEvent(
        dpa.SampledWithoutReplacementDpEvent(60, 6, dpa.GaussianDpEvent(z_seen)), 20))
    assert clf.epsilon_ == pytest.approx(acc.get_epsilon(1 / 600), rel=1e-9)
    # the paper's hypergeometric accountant (no dependency) and the combined default
    hyp = DPMLPClassifier(accountant="hypergeometric", **kw).fit(X, y)
    assert hyp.epsilon_ == pytest.approx(compute_epsilon(1.3, 60, 6, 0, 20, 1 / 600))
    comb = DPMLPClassifier(**kw).fit(X, y)
    assert comb.accountant == "combined"
    assert comb.epsilon_ == pytest.approx(compute_dpsgd_epsilon(1.3, 60, 6, 20, 1 / 600))
    assert comb.epsilon_ <= min(clf.epsilon_, hyp.epsilon_ + 0.05)  # (orders grids differ)
    with pytest.raises(ValueError, match="accountant"):
        DPMLPClassifier(accountant="moments", batch_size=12, **CL).fit(X, y)


def test_dpmlp_target_epsilon_is_met(small_graph):
    pytest.importorskip("dp_accounting")
    _, X, y = small_graph
    for acc in ("combined", "hypergeometric"):  # "wor" calibrates the same way (test_dpsgd)
        clf = DPMLPClassifier(accountant=acc, target_epsilon=3.0, batch_size=30, n_steps=10,
                              hidden_size=4, random_state=0, **CL).fit(X, y)
        assert 2.99 <= clf.epsilon_ <= 3.0, acc


@parametrize_with_checks(
    # the default accountant needs dp-accounting; without it, the one that does not
    [DPMLPClassifier(batch_size=5, n_steps=10, noise_multiplier=0.5, hidden_size=8,
                     random_state=0, accountant="combined" if importlib.util.find_spec(
                         "dp_accounting") else "hypergeometric")],
    expected_failed_checks=lambda est: {
        # Both causes read from the check's own error (sklearn 1.9):
        "check_classifiers_classes": "its last sub-check fits labels [-1, 1]; -1 means "
                                     "'unlabelled' in skldp and fit rejects it (ValueError "
                                     "'y contains -1')",
        "check_classifiers_train": "10 noisy DP steps of batch 5 (the fast setting used for "
                                   "all checks) reach 0.50 training accuracy on the binary "
                                   "blobs, below the check's 0.83 (200 steps reach 0.97)",
    })
@needs_dp_accounting
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


# ----------------------------------------------------------- the label domain
def test_classes_none_warns_that_the_class_set_leaks(small_graph):
    _, X, y = small_graph
    with pytest.warns(PrivacyLeakWarning, match="classes=None"):
        DPMLPClassifier(batch_size=12, n_steps=2, hidden_size=4, random_state=0,
                        **HYP).fit(X, y)


@pytest.mark.parametrize("Est,graph", [(DPGNNClassifier, True), (DPMLPClassifier, False)])
def test_classes_is_the_public_domain(small_graph, Est, graph):
    G, y = _graph(small_graph)
    Xtr = G if graph else np.asarray(G)
    kw = dict(batch_size=12, n_steps=3, hidden_size=4, random_state=0,
              **(HYP if Est is DPMLPClassifier else {}))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # no warning with classes given
        clf = Est(classes=[2, 1, 0, 1], **kw).fit(Xtr, y)  # class 2 has no training label
    np.testing.assert_array_equal(clf.classes_, [0, 1, 2])
    P = clf.predict_proba(Xtr)
    assert P.shape == (60, 3)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert set(np.unique(clf.predict(Xtr))) <= {0, 1, 2}
    with pytest.raises(ValueError, match=r"outside classes=\[0, 1\].*\[5\]"):
        Est(classes=[0, 1], **kw).fit(Xtr, np.where(np.arange(60) == 3, 5, y))
    with pytest.raises(ValueError, match="unlabelled"):
        Est(classes=[0, 1], **kw).fit(Xtr, np.where(np.arange(60) == 3, -1, y))
    with pytest.raises(ValueError, match="at least two"):
        Est(classes=[1], **kw).fit(Xtr, y)
    # string labels against a string domain
    names = np.array(["a", "b"])[y]
    clf = Est(classes=["c", "b", "a"], **kw).fit(Xtr, names)
    np.testing.assert_array_equal(clf.classes_, ["a", "b", "c"])
    assert set(clf.predict(Xtr)) <= {"a", "b", "c"}


# ------------------------------------------------------------- noise on a grid
def test_grid_gaussian_is_on_the_grid_whatever_the_data():
    gen = torch.Generator().manual_seed(0)
    step = 2.0 ** -12
    for s in (torch.randn(1000) * 3.7, torch.full((1000,), 0.1 + 1e-9), torch.zeros(1000)):
        out = _grid_gaussian(s.to(torch.float32), 0.5, step, gen)
        assert out.dtype == torch.float64
        k = out / step
        assert torch.equal(k, torch.round(k))  # exact integer multiples of the step


def test_grid_gaussian_mean_and_variance():
    # E[out] = s (unbiased rounding, symmetric noise); Var[out - s] = sigma^2 + step^2/12 +
    # f(1 - f) step^2 for the fractional part f of s / step. 5 standard errors.
    gen = torch.Generator().manual_seed(1)
    n, sigma, step = 400_000, 0.3, 2.0 ** -3  # coarse grid so the rounding terms show
    s = torch.full((n,), 1.3, dtype=torch.float64)  # s / step = 10.4: f = 0.4
    e = (_grid_gaussian(s, sigma, step, gen) - s).numpy()
    f = 0.4
    var = sigma**2 + step**2 / 12 + f * (1 - f) * step**2
    assert abs(e.mean()) < 5 * math.sqrt(var / n)
    # standard error of the sample variance: sqrt(2 / n) var (near-Gaussian)
    assert abs(e.var() - var) < 5 * math.sqrt(2.0 / n) * var
    # without noise, randomized rounding alone: P(round up) = f
    r = (_grid_gaussian(s, 0.0, step, gen) - s).numpy()
    up = np.isclose(r, (1 - f) * step)
    assert np.all(up | np.isclose(r, -f * step))
    assert abs(up.mean() - f) < 5 * math.sqrt(f * (1 - f) / n)


def test_randomized_rounding_inflates_the_sensitivity_by_at_most_step_sqrt_p():
    # The bound behind sensitivity_inflation_: with the same uniforms (coupling), the
    # rounded versions of two sums differ by at most ||x - x'|| + step sqrt(p).
    rng = np.random.default_rng(0)
    p, step = 5000, 2.0 ** -4
    for scale in (1e-3, 0.05, 1.0, 10.0):
        x = torch.as_tensor(rng.normal(size=p) * 3)
        x2 = x + torch.as_tensor(rng.normal(size=p)) * scale / math.sqrt(p)
        r = _grid_gaussian(x, 0.0, step, torch.Generator().manual_seed(5))
        r2 = _grid_gaussian(x2, 0.0, step, torch.Generator().manual_seed(5))
        gap = float(torch.linalg.norm(r - r2))
        assert gap <= float(torch.linalg.norm(x - x2)) + step * math.sqrt(p)
        assert torch.all((r - r2).abs() < (x - x2).abs() + step)  # per coordinate


def test_grid_and_sensitivity_inflation_in_a_fit(small_graph):
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)
    C = {"enc": 0.5, "agg": 1.0, "dec": 2.0}
    clf = DPGNNClassifier(max_degree=2, batch_size=10, n_steps=3, noise_multiplier=0.8,
                          max_grad_norm=C, hidden_size=8, random_state=0, **CL).fit(G[tr], y[tr])
    base = 2 * 3 * math.sqrt(3)  # 2 (K + 1) sqrt(L)
    n_par = {g: 0 for g in C}
    for n, p in clf.module_.named_parameters():
        n_par[clf.module_.groups()[n]] += p.numel()
    slack = 0.0
    for g in C:
        step = clf.grid_step_[g]
        assert math.log2(step).is_integer()  # a power of two
        assert step <= 2.0 ** -GRID_BITS * min(clf.noise_std_[g], base * C[g])
        assert step > 2.0 ** -GRID_BITS * min(0.8, 1.0) * base * C[g] / 2
        slack += n_par[g] * (step / C[g]) ** 2
    s = math.sqrt(slack)   # the rounding's whole slack, whatever the affected nodes
    infl = 1 + 3 * s / base   # (K + 1) s: the accountant shares the sensitivity over K + 1
    assert clf.sensitivity_inflation_ == pytest.approx(infl, rel=1e-12)
    assert 1 < infl < 1 + 3 * 2.0 ** -GRID_BITS * math.sqrt(sum(n_par.values())) + 1e-12
    # Theorem 1's term for i of the K + 1 affected nodes in a batch takes the sensitivity
    # i / (K + 1) of z's; the rounding adds its whole slack to each: 2 i sqrt(L) + s.
    for i in (1, 2, 3):
        assert (2 * i * math.sqrt(3) + s) / (0.8 * base * infl) <= i / (3 * 0.8) * (1 + 1e-12)
    for g in C:
        assert clf.noise_std_[g] == pytest.approx(0.8 * base * C[g] * infl, rel=1e-12)
    free = DPGNNClassifier(max_degree=2, batch_size=10, n_steps=2, noise_multiplier=0,
                           max_grad_norm=None, hidden_size=8, random_state=0, **CL)
    free.fit(G[tr], y[tr])
    assert free.grid_step_ is None and free.sensitivity_inflation_ == 1.0


# ---------------------------------------------------------------- randomness
def test_global_generators_are_neither_used_nor_changed(small_graph):
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)
    kw = dict(max_degree=2, batch_size=10, n_steps=3, noise_multiplier=1.0, hidden_size=8,
              **CL)
    torch.manual_seed(123)
    np.random.seed(123)
    t_state, np_state = torch.get_rng_state(), np.random.get_state()
    a = DPGNNClassifier(random_state=None, **kw).fit(G[tr], y[tr])
    DPMLPClassifier(random_state=5, batch_size=10, n_steps=3, hidden_size=8,
                    **CL, **HYP).fit(np.asarray(G[tr]), y[tr])
    assert torch.equal(torch.get_rng_state(), t_state)
    np.testing.assert_array_equal(np.random.get_state()[1], np_state[1])
    # random_state=None: same global seeds, different fits (OS entropy)
    torch.manual_seed(123)
    np.random.seed(123)
    b = DPGNNClassifier(random_state=None, **kw).fit(G[tr], y[tr])
    assert not np.allclose(a.predict_proba(G), b.predict_proba(G))
    # an integer random_state reproduces the fit whatever the global state
    torch.manual_seed(1)
    c = DPGNNClassifier(random_state=7, **kw).fit(G[tr], y[tr]).predict_proba(G)
    torch.manual_seed(2)
    np.random.seed(2)
    d = DPGNNClassifier(random_state=7, **kw).fit(G[tr], y[tr]).predict_proba(G)
    np.testing.assert_array_equal(c, d)


def test_streams_are_separate_and_keyed_by_the_parameters():
    clf = DPGNNClassifier(random_state=0, target_epsilon=1.0)
    names = ("DPSGD-noise", "DPSGD-batches", "DPSGD-init", "DPGNN-degree-sample")
    seeds = [clf._stream_seed(n) for n in names]
    assert len(set(seeds)) == len(seeds)
    assert clf._stream_seed("DPSGD-noise") == seeds[0]  # deterministic for an int
    # another budget, same random_state: different noise (no reuse across releases)
    assert DPGNNClassifier(random_state=0, target_epsilon=2.0)._stream_seed("DPSGD-noise") \
        != seeds[0]
    assert DPMLPClassifier(random_state=0, target_epsilon=1.0)._stream_seed("DPSGD-noise") \
        != seeds[0]
    # verbose/device do not change the draws
    assert DPGNNClassifier(random_state=0, target_epsilon=1.0, verbose=1,
                           device="cpu")._stream_seed("DPSGD-noise") == seeds[0]
    assert DPGNNClassifier(random_state=None)._stream_seed("DPSGD-noise") != \
        DPGNNClassifier(random_state=None)._stream_seed("DPSGD-noise")


def test_module_init_from_a_local_generator():
    t_state = torch.get_rng_state()
    a = _OneLayerGNN(5, 3, 8, 2, 2, "tanh", True, generator=torch.Generator().manual_seed(4))
    b = _OneLayerGNN(5, 3, 8, 2, 2, "tanh", True, generator=torch.Generator().manual_seed(4))
    assert torch.equal(torch.get_rng_state(), t_state)
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
        bound = 1 / math.sqrt(p.shape[-1]) if p.ndim == 2 else None
        if bound is not None:  # nn.Linear's default scheme: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
            assert p.abs().max() <= bound and p.abs().max() > 0.5 * bound, n


def test_without_dp_accounting(small_graph, monkeypatch):
    # skldp imports without the optional dependency; the DP-MLP accountants that need it
    # raise a clear ImportError, the paper's hypergeometric one still works.
    import sys
    _, X, y = small_graph
    monkeypatch.setitem(sys.modules, "dp_accounting", None)  # "import dp_accounting" fails
    kw = dict(batch_size=12, n_steps=2, hidden_size=4, random_state=0, **CL)
    with pytest.raises(ImportError, match=r'pip install "skldp\[accounting\]"'):
        DPMLPClassifier(**kw).fit(X, y)
    clf = DPMLPClassifier(accountant="hypergeometric", **kw).fit(X, y)
    assert np.isfinite(clf.epsilon_)


def test_predict_refuses_nan_features_as_fit_does(small_graph):
    G, y = _graph(small_graph)
    X = np.asarray(G.features, dtype=float)
    clf = DPGNNClassifier(batch_size=10, n_steps=5, random_state=0, **CL).fit(G, y)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    Gn = GraphData(Xn, G.adjacency)
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(Gn, y)
    for method in (clf.predict_proba, clf.predict, clf.decision_function):
        with pytest.raises(ValueError, match=r"NaN or infinite values \(first at row 0"):
            method(Gn[[0, 1]])
    Xn[0, 0] = np.inf   # sparse features too
    with pytest.raises(ValueError, match="NaN or infinite"):
        clf.predict(GraphData(sp.csr_matrix(Xn), G.adjacency)[[0, 1]])
    mlp = DPMLPClassifier(batch_size=10, n_steps=5, random_state=0, **HYP, **CL).fit(G, y)
    with pytest.raises(ValueError, match="NaN or infinite"):
        mlp.predict_proba(Gn[[0, 1]])


@pytest.mark.parametrize("Est", [DPGNNClassifier, DPMLPClassifier])
@pytest.mark.parametrize("sparse", [False, True])
def test_zero_features_is_a_clear_error(small_graph, Est, sparse):
    A, _, y = small_graph
    X0 = sp.csr_matrix((len(y), 0)) if sparse else np.zeros((len(y), 0))
    extra = HYP if Est is DPMLPClassifier else {}
    clf = Est(batch_size=10, n_steps=5, random_state=0, **extra, **CL)
    with pytest.raises(ValueError, match=r"Found 0 feature\(s\) \(shape=\(60, 0\)\) while a "
                                         rf"minimum of 1 is required by {Est.__name__}"):
        clf.fit(GraphData(X0, A), y)
    if Est is DPMLPClassifier:   # a plain array: scikit-learn's own check
        with pytest.raises(ValueError, match=r"0 feature\(s\) \(shape=\(60, 0\)\)"):
            clf.fit(X0, y)


# ----------------------------------------------- ghost norm: cancellation, NaN
def _cancelling_pair(M, sparse=False):
    """Two adjacent nodes whose features nearly cancel (M a, -M a + b): the first layer's
    ghost norm is a difference of terms of size M^2, its result of size 1."""
    rng = np.random.default_rng(0)
    d = 4
    a, b = rng.normal(size=d), rng.normal(size=d) * 0.5
    X = np.stack([M * a, -M * a + b]).astype(np.float32)
    X = sp.csr_matrix(X) if sparse else X
    A = sp.csr_matrix(np.array([[0, 1], [1, 0]], float))
    nb, w = _padded_neighbourhoods(A, np.array([0, 1]), 1)
    mod = _OneLayerGNN(d, 2, 4, 1, 1, "tanh", True, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():   # an iterate where tanh is not saturated
        mod.enc_in.weight.mul_(1e-3 / M)
        mod.enc_in.bias.zero_()
    eng = _PerNodeGradients(mod, _Features(X, torch.device("cpu")), nb, torch.as_tensor(w),
                            torch.as_tensor([0, 1]))
    return eng, X, nb


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("M", [1e3, 1e4, 3e4, 1e6])
def test_ghost_norm_survives_cancellation_and_clipping_holds(M, sparse):
    # In float32 the ghost norm came out 9% too small at M = 3e4 (the clipped gradient
    # exceeded C) and NaN at M = 1e4 (the whole clipped sum became NaN).
    eng, X, nb = _cancelling_pair(M, sparse)
    _, _, dz, nrm = eng.parts(np.array([0]))
    Xd = X.toarray() if sparse else X
    D = dz[0].double().numpy()
    exact = math.sqrt(np.linalg.norm(D.T @ Xd[nb[0]].astype(np.float64)) ** 2
                      + np.linalg.norm(D.sum(0)) ** 2)
    # the cancelling sum is replaced by its bound sum |x_u| |d_u|: never below the norm
    bound = math.sqrt(sum(np.linalg.norm(Xd[u].astype(np.float64)) * np.linalg.norm(D[i])
                          for i, u in enumerate(nb[0])) ** 2 + np.linalg.norm(D.sum(0)) ** 2)
    assert exact * (1 - 1e-9) <= float(nrm["enc"]) <= bound * (1 + 1e-9)
    for C in (exact / 2, exact * 2):   # clipping active, or not needed
        cs = eng.clipped_sum(np.array([0]), {"enc": C, "agg": 1.0, "dec": 1.0})
        got = math.sqrt(float(cs["enc_in.weight"].double().pow(2).sum()
                              + cs["enc_in.bias"].double().pow(2).sum()))
        assert got <= C * (1 + 1e-6)
        # the gradient added is summed in float32: at M = 1e6 it keeps ~3 digits
        assert got == pytest.approx(exact * min(1.0, C / float(nrm["enc"])), rel=1e-2)


def test_ghost_norm_is_exact_without_cancellation():
    # the common case (features of one sign): the float64 ghost norm, not the bound
    eng, X, nb = _cancelling_pair(1.0)
    eng.feats = _Features(np.abs(X), torch.device("cpu"))
    eng.gram = torch.as_tensor(_neighbourhood_gram(eng.feats, nb))
    _, _, dz, nrm = eng.parts(np.array([0]))
    D = dz[0].double().numpy()
    Xd = np.abs(X).astype(np.float64)[nb[0]]
    exact = math.sqrt(np.linalg.norm(D.T @ Xd) ** 2 + np.linalg.norm(D.sum(0)) ** 2)
    assert float(nrm["enc"]) == pytest.approx(exact, rel=1e-9)


def test_a_non_finite_norm_drops_the_node_instead_of_spreading_nan(small_graph):
    G, y = _graph(small_graph)
    rows = np.arange(20)
    S = degree_bounded_sample(G.adjacency, 3, nodes=rows, random_state=0)
    nb, w = _padded_neighbourhoods(S, rows, 3)
    module = _OneLayerGNN(G.shape[1], 2, 8, 1, 1, "tanh", True,
                          generator=torch.Generator().manual_seed(0))
    eng = _PerNodeGradients(module, _Features(G.features, torch.device("cpu")), nb,
                            torch.as_tensor(w), torch.as_tensor(y[rows]))
    idx = np.array([0, 1, 2, 3])
    C = {g: 0.1 for g in eng.groups}
    want = eng.clipped_sum(idx[1:], C)   # what the three finite nodes give
    real = eng._per_node

    def poisoned(rest, z1, wv, yv):      # node 0's gradients overflow
        g, dz = real(rest, z1, wv, yv)
        g = {n: torch.cat([torch.full_like(t[:1], float("inf")), t[1:]]) for n, t in g.items()}
        return g, torch.cat([torch.full_like(dz[:1], float("nan")), dz[1:]])
    eng._per_node = poisoned
    _, _, _, nrm = eng.parts(idx)
    assert all(math.isinf(float(v[0])) and torch.isfinite(v[1:]).all() for v in nrm.values())
    got = eng.clipped_sum(idx, C)
    for n in want:
        assert torch.isfinite(got[n]).all()
        torch.testing.assert_close(got[n], want[n], rtol=1e-5, atol=1e-7)


def test_gram_is_float64():
    eng, _, _ = _cancelling_pair(1e4)
    assert eng.gram.dtype == torch.float64


# --------------------------------------------- padding follows the sampled graph
def test_padding_follows_the_sampled_graph_not_max_degree(small_graph):
    G, _ = _graph(small_graph)
    rows = np.arange(0, 60, 2)
    S = degree_bounded_sample(G.adjacency, 10**6, nodes=rows, random_state=0)
    top = int(np.diff(sp.csr_matrix(S).indptr)[rows].max())
    nb, w = _padded_neighbourhoods(S, rows, 10**6)   # used to allocate (K+1) columns
    assert nb.shape == w.shape == (30, top + 1)
    nb_t, w_t = _padded_neighbourhoods(S, rows, top)   # the same arrays, bit for bit
    np.testing.assert_array_equal(nb, nb_t)
    np.testing.assert_array_equal(w, w_t)
    with pytest.raises(ValueError, match="more than max_degree"):
        _padded_neighbourhoods(S, rows, top - 1)


def test_a_huge_max_degree_fits_and_only_the_accountant_sees_it(small_graph):
    # max_degree=10**6 on a graph of max degree ~20 used to ask for 100 TiB
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)
    kw = dict(batch_size=10, n_steps=3, noise_multiplier=1.0, hidden_size=4, random_state=0,
              device="cpu", **CL)
    big = DPGNNClassifier(max_degree=10**6, **kw).fit(G[tr], y[tr])
    assert big.epsilon_ == compute_epsilon(1.0, len(tr), 10, 10**6, 3, big.delta_)
    assert big.noise_std_["enc"] == pytest.approx(
        1.0 * math.sqrt(3) * 2 * (10**6 + 1) * big.sensitivity_inflation_, rel=1e-12)
    assert np.isfinite(big.predict_proba(G)).all()


def test_padding_width_does_not_change_the_fit(small_graph, monkeypatch):
    # pad to K as before vs to the sampled graph's degree: the same model, to rounding
    import skldp.central._dpgnn as mod
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)
    kw = dict(max_degree=40, batch_size=10, n_steps=4, noise_multiplier=1.0, hidden_size=4,
              random_state=0, device="cpu", **CL)
    a = DPGNNClassifier(**kw).fit(G[tr], y[tr])
    real = mod._padded_neighbourhoods

    def padded_to_K(S, nodes, K):
        nb, w = real(S, nodes, K)
        extra = K + 1 - nb.shape[1]
        return (np.hstack([nb, np.repeat(nb[:, :1], extra, axis=1)]),
                np.hstack([w, np.zeros((len(w), extra), np.float32)]))
    monkeypatch.setattr(mod, "_padded_neighbourhoods", padded_to_K)
    b = DPGNNClassifier(**kw).fit(G[tr], y[tr])
    assert a.noise_std_ == b.noise_std_ and a.epsilon_ == b.epsilon_
    for k, v in a.module_.state_dict().items():
        torch.testing.assert_close(v, b.module_.state_dict()[k], rtol=1e-5, atol=1e-6)


# -------------------------------------------- non-private options on the ledger
def _simulated(small_graph, budget=None):
    G, y = _graph(small_graph)
    return G.new_simulation(budget=budget), y


@pytest.mark.parametrize("Est", [DPGNNClassifier, DPMLPClassifier])
def test_clip_percentile_is_charged_as_a_read_in_the_clear(small_graph, Est):
    G, y = _simulated(small_graph)
    tr = np.arange(0, 60, 2)
    extra = dict(max_degree=2) if Est is DPGNNClassifier else HYP
    with pytest.warns(PrivacyLeakWarning, match="not differentially private"):
        clf = Est(batch_size=10, n_steps=2, clip_percentile=75, hidden_size=4,
                  random_state=0, device="cpu", **extra, **CL).fit(G[tr], y[tr])
    rep = privacy_report(clf)
    assert math.isinf(rep.local_epsilon) and math.isinf(rep.epsilon_for("labels"))
    clear = {(s.kind, s.protects[0]): s.n_users for s in rep.spends if s.model == "clear"}
    name = f"{Est.__name__}(clip_percentile)"
    assert clear[(name, "labels")] == len(tr)          # the training nodes' labels
    assert clear[(name, "features")] >= len(tr)        # (DP-GNN: and their neighbours')
    # fixed thresholds read nothing in the clear
    G2, _ = _simulated(small_graph)
    fixed = Est(batch_size=10, n_steps=2, hidden_size=4, random_state=0, device="cpu",
                **extra, **CL).fit(G2[tr], y[tr])
    assert privacy_report(fixed).local_epsilon == 0.0


@pytest.mark.parametrize("Est", [DPGNNClassifier, DPMLPClassifier])
def test_validation_is_charged_on_the_validation_nodes(small_graph, Est):
    G, y = _simulated(small_graph)
    fit, va = np.arange(40), np.arange(30, 40)
    extra = dict(max_degree=2) if Est is DPGNNClassifier else HYP
    with pytest.warns(PrivacyLeakWarning, match="validation"):
        clf = Est(batch_size=10, n_steps=2, validation=va, hidden_size=4, random_state=0,
                  device="cpu", **extra, **CL).fit(G[fit], y[fit])
    rep = privacy_report(clf)
    assert math.isinf(rep.local_epsilon)
    clear = {(s.kind, s.protects[0]): s.n_users for s in rep.spends if s.model == "clear"}
    assert clear[(f"{Est.__name__}(validation)", "labels")] == len(va)
    if Est is DPMLPClassifier:
        assert clear[("DPMLPClassifier(validation)", "features")] == len(va)
    else:   # scored over their full neighbourhoods: their neighbours' features too
        A = sp.csr_matrix(G.adjacency)
        seen = np.union1d(va, A[va].indices)
        assert clear[("DPGNNClassifier(validation)", "features")] == len(seen)
        assert clear[("DPGNNClassifier(validation)", "edges")] == len(seen)
    # the training nodes that are nobody's neighbour here are not charged in the clear
    tr = np.arange(30)
    A = sp.csr_matrix(G.adjacency)
    assert rep.central and (rep.central[0].n_users == 30 if Est is DPMLPClassifier else
                            30 <= rep.central[0].n_users <= len(np.union1d(tr, A[tr].indices)))


@pytest.mark.parametrize("Est", [DPGNNClassifier, DPMLPClassifier])
@pytest.mark.parametrize("option", ["clip_percentile", "validation"])
def test_a_budget_refuses_the_non_private_options(small_graph, Est, option):
    G, y = _simulated(small_graph, budget=100.0)
    fit = np.arange(40)
    extra = dict(max_degree=2) if Est is DPGNNClassifier else HYP
    opt = {"clip_percentile": dict(clip_percentile=75),
           "validation": dict(validation=np.arange(30, 40))}[option]
    clf = Est(batch_size=10, n_steps=2, hidden_size=4, random_state=0, device="cpu",
              **opt, **extra, **CL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(PrivacyBudgetError, match=rf"{option}=\.\.\..*in the clear.*"
                                                     rf"Nothing was trained\. Use {option}=None"):
            clf.fit(G[fit], y[fit])
    assert not hasattr(clf, "module_")
    assert G.ledger.entries() == []            # nothing recorded, not even the training
    # without the option the same budget admits the training
    Est(batch_size=10, n_steps=2, hidden_size=4, random_state=0, device="cpu", **extra,
        **CL).fit(G[fit], y[fit])


def test_dpmlp_on_a_plain_array_charges_its_rows(small_graph):
    _, X, y = small_graph
    X = X + np.random.default_rng(7).normal(size=X.shape) * 1e-3   # users of this test only
    with pytest.warns(PrivacyLeakWarning):
        clf = DPMLPClassifier(batch_size=10, n_steps=2, clip_percentile=75,
                              hidden_size=4, random_state=0, device="cpu", **HYP,
                              **CL).fit(X, y)
    rep = privacy_report(clf)
    assert math.isinf(rep.local_epsilon)
    assert any(s.kind == "DPMLPClassifier(clip_percentile)" and s.n_users == len(X)
               for s in rep.spends)


@pytest.mark.parametrize("Est", [DPGNNClassifier, DPMLPClassifier])
def test_classes_none_is_charged_as_a_read_of_the_labels(small_graph, Est):
    # it was only warned about: the report and a budget cap showed the training's epsilon
    G, y = _simulated(small_graph)
    fit, va = np.arange(40), np.arange(30, 40)
    extra = dict(max_degree=2) if Est is DPGNNClassifier else HYP
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)   # (validation's warning)
        with pytest.warns(PrivacyLeakWarning, match=r"classes=None.*charges.*epsilon=inf"):
            clf = Est(batch_size=10, n_steps=2, hidden_size=4, validation=va,
                      random_state=0, device="cpu", **extra).fit(G[fit], y[fit])
    line = (f"{Est.__name__}(classes=None) read the users' labels in the clear: "
            "epsilon=inf (40 users)")   # every fit row's label, the validation rows' too
    for rep in (privacy_report(clf), privacy_report(G)):
        assert math.isinf(rep.local_epsilon) and math.isinf(rep.epsilon_for("labels"))
        assert line in str(rep)
    # the public domain reads nothing in the clear
    G2, _ = _simulated(small_graph)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        clf = Est(batch_size=10, n_steps=2, hidden_size=4, random_state=0, device="cpu",
                  **extra, **CL).fit(G2[fit], y[fit])
    assert [s.model for s in privacy_report(clf).spends] == ["central"]


@pytest.mark.parametrize("Est", [DPGNNClassifier, DPMLPClassifier])
def test_a_budget_refuses_classes_none(small_graph, Est):
    G, y = _simulated(small_graph, budget=100.0)
    fit = np.arange(40)
    extra = dict(max_degree=2) if Est is DPGNNClassifier else HYP
    clf = Est(batch_size=10, n_steps=2, hidden_size=4, random_state=0, device="cpu", **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(PrivacyBudgetError,
                           match=r"classes=None\) reads the label domain.*40 user\(s\) in the "
                                 r"clear.*Nothing was trained\. Pass the public label domain"):
            clf.fit(G[fit], y[fit])
    assert not hasattr(clf, "module_") and not hasattr(clf, "classes_")
    assert G.ledger.entries() == []            # nothing recorded, not even the training
    Est(batch_size=10, n_steps=2, hidden_size=4, random_state=0, device="cpu", **extra,
        **CL).fit(G[fit], y[fit])
    assert [e.spec.model for e in G.ledger.entries()] == ["central"]


def test_dpmlp_classes_none_on_a_plain_array_is_charged_to_its_rows(small_graph):
    from sklearn.pipeline import Pipeline
    _, X, y = small_graph
    X = X + np.random.default_rng(8).normal(size=X.shape) * 1e-3   # users of this test only
    pipe = Pipeline([("clf", DPMLPClassifier(batch_size=10, n_steps=2, hidden_size=4,
                                             random_state=0, device="cpu", **HYP))])
    with pytest.warns(PrivacyLeakWarning, match="classes=None"):
        pipe.fit(X, y)
    rep = privacy_report(pipe)
    assert math.isinf(rep.local_epsilon)
    # (one process-wide ledger for plain arrays: other tests' rows may be on it too)
    assert "DPMLPClassifier(classes=None) read the users' labels in the clear: epsilon=inf (" \
        in str(rep)


def test_dpgnn_predicts_over_the_graph_it_trains_on(small_graph):
    # training samples a 0/1 graph without self loops; predict aggregated with the
    # weights and self loops, so scaling every weight changed the predictions
    A, X, y = small_graph
    A = sp.csr_matrix(A, dtype=np.float64)
    clf = DPGNNClassifier(max_degree=5, classes=np.unique(y), batch_size=20, n_steps=20,
                          noise_multiplier=0.0, max_grad_norm=None, random_state=0)
    clf.fit(GraphData(X, A)[:40], y[:40])
    p = clf.predict_proba(GraphData(X, A)[40:])
    for B in (A * 1000.0, A * 0.001, A + sp.eye(A.shape[0])):
        np.testing.assert_allclose(clf.predict_proba(GraphData(X, B)[40:]), p, atol=1e-6)


@pytest.mark.parametrize("Est", [DPGNNClassifier, DPMLPClassifier])
def test_delta_of_at_least_one_over_n_train_is_refused(small_graph, Est):
    # delta >= 1 / N_train admits releasing one training user's data in the clear; a
    # delta of 0.9 printed epsilon_ = 0.0 ("perfectly private") for a noisy fit.
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)   # 30 training nodes: delta must be < 1/30
    kw = dict(batch_size=10, n_steps=2, hidden_size=4, random_state=0, **CL)
    kw.update(HYP if Est is DPMLPClassifier else dict(max_degree=2))
    for delta in (0.9, 1 / 30):
        est = Est(delta=delta, **kw)
        with pytest.raises(ValueError, match=r"delta=.* at least 1 / N_train"):
            est.fit(G[tr], y[tr])
        assert not hasattr(est, "collection_")   # refused before the training is charged
    clf = Est(delta=0.99 / 30, **kw).fit(G[tr], y[tr])
    assert clf.delta_ == pytest.approx(0.99 / 30) and clf.epsilon_ > 0


@pytest.mark.parametrize("C", [np.ones((3, 1)), [1.0, "x", 1.0], [True, 1.0, 1.0],
                               {"enc": 1.0, "agg": 1.0, "dec": "x"}, [[1.0, 1.0, 1.0]],
                               [1.0, None, 1.0]])
def test_max_grad_norm_of_the_wrong_shape_or_type_is_a_clear_error(small_graph, C):
    # a 2-D array and non-numbers raised numpy's TypeError / ValueError (a 0-d array
    # raised "iteration over a 0-d array"; it is one value for all groups)
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)
    kw = dict(max_degree=2, batch_size=10, n_steps=2, hidden_size=4, random_state=0, **CL)
    with pytest.raises(ValueError, match="max_grad_norm"):
        DPGNNClassifier(max_grad_norm=C, **kw).fit(G[tr], y[tr])
    clf = DPGNNClassifier(max_grad_norm=np.array(2.0), **kw).fit(G[tr], y[tr])
    assert clf.clip_thresholds_ == {"enc": 2.0, "agg": 2.0, "dec": 2.0}


@pytest.mark.parametrize("Est", [DPGNNClassifier, DPMLPClassifier])
def test_no_clipping_with_a_target_epsilon_names_target_epsilon(small_graph, Est):
    # max_grad_norm=None with target_epsilon said "only allowed for ... noise_multiplier=0"
    # even when noise_multiplier was 0: the conflict is with target_epsilon.
    G, y = _graph(small_graph)
    tr = np.arange(0, 60, 2)
    kw = dict(batch_size=10, n_steps=2, hidden_size=4, random_state=0, max_grad_norm=None,
              **CL)
    kw.update(HYP if Est is DPMLPClassifier else dict(max_degree=2))
    for z in (0.0, 1.0):
        est = Est(noise_multiplier=z, target_epsilon=4.0, **kw)
        with pytest.raises(ValueError, match=r"max_grad_norm=None .* target_epsilon"):
            est.fit(G[tr], y[tr])
        assert not hasattr(est, "collection_")
    with pytest.raises(ValueError, match=r"max_grad_norm=None .*noise_multiplier=1\.0"):
        Est(noise_multiplier=1.0, **kw).fit(G[tr], y[tr])
    assert math.isinf(Est(noise_multiplier=0.0, **kw).fit(G[tr], y[tr]).epsilon_)
