"""What the link predictors' outputs, validation and training pairs are, pinned exactly.

Round-5 mutation tests: each test here failed on a mutant of ``skldp/models/_link.py``
that the other tests let through (inverted probabilities, validation on the training
pairs, moments of the wrong pairs, the epoch loss not a mean, ``negative_ratio`` or
``negative_sampling`` ignored, the last chunk of pairs dropped...).
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from sklearn.metrics import roc_auc_score

from skldp import GraphData
from skldp.model_selection import PairData, random_edge_split
from skldp.models import HadamardLinkPredictor, VGAELinkPredictor


def _graph(n=40, d=6, seed=0):
    """Two blocks, linked mostly within; features: the block and noise."""
    rng = np.random.default_rng(seed)
    b = np.repeat(np.arange(2), n // 2)
    P = np.where(b[:, None] == b[None, :], 0.3, 0.02)
    A = np.triu(rng.random((n, n)) < P, 1)
    A = (A | A.T).astype(float)
    X = np.zeros((n, d))
    X[np.arange(n), b] = 1.0
    X[:, 2:] = rng.random((n, d - 2))
    return GraphData(X, sp.csr_array(A))


@pytest.fixture(scope="module")
def split():
    return random_edge_split(_graph(), val_size=0.1, test_size=0.2, random_state=0)


def _vgae(**kw):
    params = dict(hidden_size=8, embedding_size=4, epochs=30, min_epochs=10, check_every=5,
                  patience=2, device="cpu", random_state=0)
    params.update(kw)
    return VGAELinkPredictor(**params)


def _had(**kw):
    params = dict(epochs=20, batch_size=16, device="cpu", random_state=0)
    params.update(kw)
    return HadamardLinkPredictor(**params)


def _fit_with_validation(est, split):
    P_tr, P_va, _, y_tr, y_va, _ = split
    return est.set_params(validation=P_va.pairs).fit(P_tr.concat(P_va), np.r_[y_tr, y_va])


def _balanced_bce(s, y):
    s, t = torch.as_tensor(s, dtype=torch.float64), torch.as_tensor(y, dtype=torch.float64)
    return float(F.binary_cross_entropy_with_logits(s[t > 0.5], t[t > 0.5])
                 + F.binary_cross_entropy_with_logits(s[t <= 0.5], t[t <= 0.5]))


@pytest.mark.parametrize("make", [_vgae, _had])
def test_predict_proba_and_predict_follow_the_decision_function(split, make):
    """``predict_proba[:, 1]`` is the sigmoid of the edge logit (column 1 is ``classes_[1]``,
    the edge class) and ``predict`` names the edge class exactly where the logit is > 0."""
    P_tr, _, P_te, y_tr, _, _ = split
    names = np.array(["a_nonedge", "b_edge"])
    est = make(early_stopping=False, epochs=40).fit(P_tr, names[y_tr])
    s = est.decision_function(P_te)
    proba = est.predict_proba(P_te)
    np.testing.assert_allclose(proba[:, 1], 1.0 / (1.0 + np.exp(-s)), rtol=1e-12)
    np.testing.assert_allclose(proba[:, 0], 1.0 / (1.0 + np.exp(s)), rtol=1e-9, atol=1e-15)
    assert (s > 0).any() and (s < 0).any()   # both predictions occur: the check can fail
    np.testing.assert_array_equal(est.predict(P_te), np.where(s > 0, "b_edge", "a_nonedge"))


@pytest.mark.parametrize("make", [_vgae, _had])
def test_predict_proba_is_exact_and_silent_for_large_logits(split, make, monkeypatch):
    """Each column is the logistic of its own logit (``expit(-s)``, ``expit(s)``): logits of
    +-1000 give exactly 0 and 1 with no overflow warning, and a logit of 40 leaves the
    non-edge column its tiny probability (``1 - expit(40)`` rounds to 0)."""
    P_tr, _, P_te, y_tr, _, _ = split
    est = make(early_stopping=False, epochs=1).fit(P_tr, y_tr)
    s = np.array([1000.0, -1000.0, 0.0, 40.0])
    monkeypatch.setattr(est, "decision_function", lambda X: s)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        proba = est.predict_proba(P_te)
    np.testing.assert_array_equal(proba[:3], [[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]])
    assert proba[3, 0] == pytest.approx(np.exp(-40.0), rel=1e-12)
    assert proba[3, 1] == 1.0


@pytest.mark.parametrize("make", [_vgae, _had])
def test_score_weights_the_pairs(split, make):
    """``score``'s ``sample_weight`` reaches the ROC-AUC: weighted and unweighted differ."""
    P_tr, _, P_te, y_tr, _, y_te = split
    est = make(early_stopping=False, epochs=5).fit(P_tr, y_tr)
    s = est.decision_function(P_te)
    w = np.where(np.arange(len(y_te)) % 3 == 0, 5.0, 0.2)
    want = roc_auc_score(y_te, s, sample_weight=w)
    assert want != pytest.approx(roc_auc_score(y_te, s), abs=1e-6)
    assert est.score(P_te, y_te, sample_weight=w) == pytest.approx(want, rel=1e-12)


def test_vgae_validation_scores_are_the_balanced_loss_of_the_validation_pairs(split):
    """The restored (best) weights give the validation pairs the balanced BCE that the best
    check recorded: validation judges the ``validation`` pairs, not the training pairs."""
    _, P_va, _, _, y_va, _ = split
    est = _fit_with_validation(_vgae(), split)
    assert len(est.validation_scores_) >= 2
    got = _balanced_bce(est.decision_function(P_va), y_va)
    assert got == pytest.approx(min(est.validation_scores_), rel=1e-5)


def test_hadamard_validation_scores_are_the_loss_of_the_validation_pairs(split):
    _, P_va, _, _, y_va, _ = split
    est = _fit_with_validation(_had(), split)
    s = torch.as_tensor(est.decision_function(P_va))
    got = float(F.binary_cross_entropy_with_logits(s, torch.as_tensor(y_va, dtype=s.dtype)))
    assert got == pytest.approx(est.validation_scores_[est.best_epoch_], rel=1e-5)
    assert got == pytest.approx(min(est.validation_scores_), rel=1e-5)


def test_hadamard_standardises_with_the_training_pairs_moments(split):
    """``standardize``: each edge feature is centred and scaled by its mean and (population)
    standard deviation over the *training* pairs (not the validation pairs), and the
    logistic head is then ``w . (h - mean) / std + b``."""
    P_tr, P_va, P_te, y_tr, _, _ = split
    est = _fit_with_validation(_had(), split)
    X = P_tr.graph.features
    H = X[P_tr.pairs[:, 0]] * X[P_tr.pairs[:, 1]]
    head = est.module_
    np.testing.assert_allclose(head.mean.numpy(), H.mean(0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(1.0 / head.inv_std.numpy(), H.std(0), rtol=1e-5, atol=1e-7)
    # the validation pairs are not among the moments' pairs
    Hall = np.r_[H, X[P_va.pairs[:, 0]] * X[P_va.pairs[:, 1]]]
    assert not np.allclose(head.mean.numpy(), Hall.mean(0), rtol=1e-5, atol=1e-7)
    lin = [m for m in head.modules() if isinstance(m, torch.nn.Linear)]
    assert len(lin) == 1 and lin[0].weight.shape == (1, X.shape[1])
    w, b = lin[0].weight.detach().numpy()[0], float(lin[0].bias.detach())
    Ht = X[P_te.pairs[:, 0]] * X[P_te.pairs[:, 1]]
    want = ((Ht - H.mean(0)) / H.std(0)) @ w + b
    np.testing.assert_allclose(est.decision_function(P_te), want, rtol=1e-4, atol=1e-5)


def test_hadamard_without_standardize_reads_the_raw_products(split):
    P_tr, _, P_te, y_tr, _, _ = split
    est = _had(standardize=False, early_stopping=False, epochs=3).fit(P_tr, y_tr)
    lin = est.module_.net[-1]
    X = P_tr.graph.features
    Ht = X[P_te.pairs[:, 0]] * X[P_te.pairs[:, 1]]
    want = Ht @ lin.weight.detach().numpy()[0] + float(lin.bias.detach())
    np.testing.assert_allclose(est.decision_function(P_te), want, rtol=1e-4, atol=1e-5)


def test_hadamard_epoch_loss_is_the_mean_over_the_pairs_whatever_the_batches(split):
    """``loss_curve_`` holds each epoch's mean loss per pair: with a learning rate too small
    to move the weights, one batch of every pair and batches of 16 give the same value."""
    P_tr, _, _, y_tr, _, _ = split
    kw = dict(lr=1e-12, epochs=1, early_stopping=False)
    whole = _had(batch_size=len(P_tr), **kw).fit(P_tr, y_tr).loss_curve_[0]
    parts = _had(batch_size=16, **kw).fit(P_tr, y_tr).loss_curve_[0]
    assert len(P_tr) % 16 != 0   # an uneven last batch, weighted by its size
    assert parts == pytest.approx(whole, rel=1e-5)


def test_chunked_logits_cover_every_pair(split):
    """Pairs scored in chunks: the logits of every pair, as in one piece."""
    from skldp.models._link import _chunked_logits
    P_tr, _, P_te, y_tr, _, _ = split
    est = _had(early_stopping=False, epochs=2).fit(P_tr, y_tr)
    z = torch.as_tensor(P_te.graph.features, dtype=torch.float32)
    pairs = torch.as_tensor(P_te.pairs)
    with torch.no_grad():
        whole = _chunked_logits(est.module_, z, pairs)
        for chunk in (1, 7, len(pairs) - 1):
            got = _chunked_logits(est.module_, z, pairs, chunk=chunk)
            assert got.shape == (len(pairs),)
            torch.testing.assert_close(got, whole)
        assert _chunked_logits(est.module_, z, pairs[:0]).shape == (0,)


def test_hadamard_mlp_head_has_the_hidden_layers(split):
    P_tr, _, _, y_tr, _, _ = split
    est = _had(head="mlp", hidden_layer_sizes=(5, 3), early_stopping=False,
               epochs=1).fit(P_tr, y_tr)
    shapes = [tuple(m.weight.shape) for m in est.module_.modules()
              if isinstance(m, torch.nn.Linear)]
    assert shapes == [(5, 6), (3, 5), (1, 3)]


def test_hadamard_mlp_head_drops_out_after_hidden_layers_only(split):
    """The MLP head is Linear -> ReLU -> Dropout per hidden layer, then a Linear: the edge
    features themselves are never dropped, so in training the first layer's output is
    the same whatever the dropout."""
    P_tr, _, P_te, y_tr, _, _ = split
    est = _had(head="mlp", hidden_layer_sizes=(5, 3), dropout=0.9, early_stopping=False,
               epochs=1).fit(P_tr, y_tr)
    net = est.module_.net
    assert [type(m).__name__ for m in net] == ["Linear", "ReLU", "Dropout", "Linear", "ReLU",
                                               "Dropout", "Linear"]
    assert all(m.p == 0.9 for m in net if isinstance(m, torch.nn.Dropout))
    # in training, the first Linear reads the standardised edge features, none dropped
    z = torch.as_tensor(P_te.graph.features, dtype=torch.float32)
    pairs = torch.as_tensor(P_te.pairs)
    head, seen = est.module_.train(), []
    first = next(m for m in head.modules() if isinstance(m, torch.nn.Linear))
    first.register_forward_pre_hook(lambda m, args: seen.append(args[0]))
    with torch.no_grad():
        head(z, pairs)
    h = (z[pairs[:, 0]] * z[pairs[:, 1]] - head.mean) * head.inv_std
    torch.testing.assert_close(seen[0], h)


@pytest.mark.parametrize("fraction", [0.0, 1.0])
@pytest.mark.parametrize("make", [_vgae, _had])
def test_early_stopping_refuses_a_validation_fraction_of_none_or_all(split, make, fraction):
    P_tr, _, _, y_tr, _, _ = split
    with pytest.raises(ValueError, match=r"validation_fraction must be in \(0, 1\)"):
        make(validation_fraction=fraction).fit(P_tr, y_tr)
    # without early stopping the fraction is not used
    make(validation_fraction=fraction, early_stopping=False, epochs=1).fit(P_tr, y_tr)


def _record_training(monkeypatch):
    """Wrap ``_fresh_non_edges`` (its ``m``) and ``_pair_logits`` (pairs per call)."""
    from skldp.models import _link
    calls, widths = [], []
    real_fresh, real_logits = _link._fresh_non_edges, _link._pair_logits

    def fresh(rng, n, is_edge, m, epochs, device):
        calls.append(m)
        return real_fresh(rng, n, is_edge, m, epochs, device)

    def logits(z, pairs):
        if torch.is_grad_enabled():   # training epochs (prediction runs without grad)
            widths.append(pairs.shape[1])
        return real_logits(z, pairs)

    monkeypatch.setattr(_link, "_fresh_non_edges", fresh)
    monkeypatch.setattr(_link, "_pair_logits", logits)
    return calls, widths


@pytest.mark.parametrize("ratio", [1.0, 2.5])
def test_vgae_draws_negative_ratio_fresh_non_edges_per_positive(split, monkeypatch, ratio):
    """``negative_sampling="per_epoch"``: each epoch trains on the fit pairs and about
    ``ceil(negative_ratio * n_pos)`` fresh pairs (fewer: edges and u == v are rejected)."""
    P_tr, _, _, y_tr, _, _ = split
    calls, widths = _record_training(monkeypatch)
    _vgae(negative_ratio=ratio, early_stopping=False, epochs=6).fit(P_tr, y_tr)
    n_pos = int(y_tr.sum())
    assert calls == [int(np.ceil(ratio * n_pos))]
    assert len(widths) == 6
    fresh = np.array(widths) - len(P_tr)
    assert np.all(fresh <= calls[0]) and np.all(fresh > 0.7 * calls[0])


def test_vgae_given_negatives_draw_no_fresh_pairs(split, monkeypatch):
    P_tr, _, _, y_tr, _, _ = split
    calls, widths = _record_training(monkeypatch)
    _vgae(negative_sampling="given", early_stopping=False, epochs=4).fit(P_tr, y_tr)
    assert calls == [] and widths == [len(P_tr)] * 4


def test_vgae_log_sigma_is_clamped():
    """log sigma is capped at 10 (``exp(2 * logstd)`` in the KL term stays finite)."""
    from skldp.models._gnn import graph_tensors
    from skldp.models._link import _VGAEModule
    G = _graph()
    x, g = graph_tensors(G, torch.device("cpu"), "gcn")
    module = _VGAEModule(G.shape[1], 4, 3, batch_norm=False, dropout=0.0, variational=True)
    with torch.no_grad():
        module.conv_logstd.lin.bias.fill_(60.0)
    with torch.no_grad():
        _, logstd = module(x, g)
    assert float(logstd.max()) == 10.0


def test_vgae_refuses_swapped_labels_on_pairs_given_high_end_first(split):
    """The check that ``classes_[1]`` is the edge class looks the pairs up in either
    orientation: pairs given as ``(v, u)``, ``u < v``, with edges and non-edges swapped
    are refused as those given ``(u, v)`` are, and the right labels fit."""
    P_tr, _, _, y_tr, _, _ = split
    P_rev = PairData(P_tr.graph, P_tr.pairs[:, ::-1].copy())
    assert np.all(P_rev.pairs[:, 0] > P_rev.pairs[:, 1])
    with pytest.raises(ValueError, match="are edges of the training graph"):
        _vgae().fit(P_rev, 1 - y_tr)
    assert _vgae(early_stopping=False, epochs=1).fit(P_rev, y_tr).n_iter_ == 1


def test_hadamard_batches_are_reshuffled_every_epoch(split, monkeypatch):
    """Mini-batches take the training pairs in a fresh random order each epoch (seeded
    by ``random_state``): every pair once per epoch, not in the given order, and not in
    the same order twice."""
    from skldp.models._link import _EdgeHead
    P_tr, _, _, y_tr, _, _ = split
    seen = []
    real = _EdgeHead.forward

    def forward(self, z, pairs):
        if self.training:
            seen.append(pairs.numpy().copy())
        return real(self, z, pairs)

    monkeypatch.setattr(_EdgeHead, "forward", forward)
    _had(early_stopping=False, epochs=2).fit(P_tr, y_tr)
    per_epoch = -(-len(P_tr) // 16)
    assert len(seen) == 2 * per_epoch
    epochs = [np.concatenate(seen[:per_epoch]), np.concatenate(seen[per_epoch:])]
    for e in epochs:
        assert e.shape == P_tr.pairs.shape
        assert sorted(map(tuple, e.tolist())) == sorted(map(tuple, P_tr.pairs.tolist()))
        assert not np.array_equal(e, P_tr.pairs)
    assert not np.array_equal(epochs[0], epochs[1])
