"""The one training loop and the one early-stopper (skldp._torch)."""

import math

import numpy as np
import pytest
import torch

from skldp._torch import EarlyStopper, default_sync_every, train


def _scores(seed=0, n=60):
    """Validation scores that improve, then wander (a typical curve)."""
    rng = np.random.default_rng(seed)
    return np.r_[np.linspace(2.0, 1.0, n // 3), 1.0 + np.abs(rng.normal(0, 0.2, n - n // 3))]


def _run(scores, sync_every, patience=5, min_epochs=0):
    """Train a 'model' whose weight is the epoch number; returns the result and the weight."""
    w = torch.zeros(3)
    stopper = EarlyStopper([w], patience, min_epochs=min_epochs, sync_every=sync_every)

    def step(epoch):
        w.fill_(epoch)
        return torch.tensor(float(epoch) * 0.5)

    result = train(step, len(scores), validate=lambda e: torch.tensor(scores[e]),
                   stopper=stopper)
    return result, w


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("patience", [1, 5, None])
def test_device_path_keeps_what_the_host_path_keeps(seed, patience):
    """Reading the stop flag every 7 checks runs past the stop but keeps the same result."""
    scores = _scores(seed)
    host, w_host = _run(scores, 1, patience)
    lazy, w_lazy = _run(scores, 7, patience)
    assert (lazy.n_iter, lazy.best_epoch) == (host.n_iter, host.best_epoch)
    assert lazy.loss_curve == host.loss_curve
    assert lazy.validation_scores == host.validation_scores
    assert torch.equal(w_host, w_lazy)
    # the restored weights are those of the best check
    assert float(w_host[0]) == host.best_epoch == int(np.argmin(scores[:host.n_iter]))


def test_stopping_rule():
    scores = np.r_[3.0, 2.0, 1.0, [1.5] * 10]
    res, w = _run(scores, 1, patience=4)
    assert res.best_epoch == 2 and res.n_iter == 7   # 4 checks without improvement
    assert float(w[0]) == 2
    assert res.loss_curve == [0.5 * e for e in range(7)]
    res, _ = _run(scores, 1, patience=4, min_epochs=10)
    assert res.n_iter == 10                          # never before min_epochs
    res, _ = _run(scores, 1, patience=None)
    assert res.n_iter == len(scores) and res.best_epoch == 2


def _reference_rule(pairs, patience):
    """Veličković et al.'s rule on (loss, error) pairs, written as their released code."""
    best_acc, best_loss, bad, kept = -math.inf, math.inf, 0, None
    for epoch, (loss, err) in enumerate(pairs):
        acc = 1 - err
        if acc >= best_acc or loss <= best_loss:
            if acc >= best_acc and loss <= best_loss:
                kept = epoch
            best_acc, best_loss, bad = max(acc, best_acc), min(loss, best_loss), 0
        else:
            bad += 1
        if bad >= patience:
            return kept, epoch + 1
    return kept, len(pairs)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("sync_every", [1, 7])
def test_several_criteria_follow_the_reference_rule(seed, sync_every):
    """A 1-d score keeps an epoch as good as every earlier one on each criterion and
    resets the patience when one criterion is as good (ties count), on both paths."""
    rng = np.random.default_rng(seed)
    losses = _scores(seed)
    errors = np.round(0.5 - 0.3 * np.linspace(0, 1, len(losses)) ** 0.5
                      + rng.normal(0, 0.05, len(losses)), 1)   # coarse: many ties
    pairs = np.c_[losses, errors]
    w = torch.zeros(3)
    stopper = EarlyStopper([w], 5, sync_every=sync_every)

    def step(epoch):
        w.fill_(epoch)

    res = train(step, len(pairs), validate=lambda e: torch.tensor(pairs[e]), stopper=stopper)
    kept, n_iter = _reference_rule(pairs, 5)
    assert (res.best_epoch, res.n_iter) == (kept, n_iter)
    assert float(w[0]) == kept
    assert res.validation_scores == pairs[:n_iter].tolist()


def test_host_path_reads_a_score_of_several_criteria_once_per_check(monkeypatch):
    """Each read of a device value waits for the device: one read per check, not one
    for the values and one per decision (improved, reset)."""
    reads = []
    for name in ("__bool__", "item", "__float__", "__int__", "tolist", "cpu", "numpy"):
        orig = getattr(torch.Tensor, name)
        monkeypatch.setattr(torch.Tensor, name, lambda self, *a, _o=orig, _n=name, **k:
                            (reads.append(_n), _o(self, *a, **k))[1])
    w = torch.zeros(2)
    s = EarlyStopper([w], 3)
    scores = [[1.0, 0.5], [0.9, 0.6], [1.1, 0.7], [1.2, 0.8], [1.3, 0.9]]
    for epoch, score in enumerate(scores):
        stop = s.update(torch.tensor(score), epoch)
        assert len(reads) == epoch + 1
    assert stop and s.best_epoch == 0 and s.stop_epoch == 4


def test_several_criteria_with_nan():
    w = torch.zeros(1)
    s = EarlyStopper([w], 2)
    assert not s.update(torch.tensor([1.0, 0.5]), 0)
    assert not s.update(torch.tensor([float("nan"), 0.5]), 1)   # the error ties: a reset
    assert s.best_epoch == 0
    assert not s.update(torch.tensor([0.9, 0.5]), 2)            # NaN never became the best
    assert s.best_epoch == 2
    assert not s.update(torch.tensor([float("nan")] * 2), 3)
    assert s.update(torch.tensor([float("nan")] * 2), 4)
    assert s.stop_epoch == 4


def test_tolerance_and_nan_scores():
    w = torch.zeros(1)
    s = EarlyStopper([w], 2, tol=0.1)
    assert not s.update(torch.tensor(1.0), 0)
    assert not s.update(torch.tensor(0.95), 1)     # not better by more than tol
    assert s.update(torch.tensor(float("nan")), 2)
    assert s.best_epoch == 0 and s.stop_epoch == 2


def test_without_validation_keeps_the_last_weights():
    w = torch.zeros(1)

    def step(epoch):
        w.fill_(epoch)

    res = train(step, 5)
    assert res.n_iter == 5 and res.best_epoch is None
    assert res.loss_curve == [] and res.validation_scores == []
    assert float(w[0]) == 4


def test_check_every_and_log():
    lines = []
    w = torch.zeros(1)
    stopper = EarlyStopper([w], 2)
    res = train(lambda e: torch.tensor(1.0), 20, validate=lambda e: torch.tensor(float(e)),
                stopper=stopper, check_every=3,
                log=lambda e, loss, score, s: lines.append((e, loss, score)))
    # checks after epochs 2, 5, 8: the scores rise, so the third check stops training
    assert res.validation_scores == [2.0, 5.0, 8.0]
    assert res.n_iter == 9 and res.best_epoch == 2
    assert [e for e, _, s in lines if s is not None] == [2, 5, 8]
    assert all(loss == 1.0 for _, loss, _ in lines)


def test_default_sync_every():
    assert default_sync_every("cpu") == 1
    assert default_sync_every(torch.device("cuda")) > 1
    assert math.isfinite(default_sync_every("meta"))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("min_epochs", [0, 25, 45])
def test_device_path_with_min_epochs(seed, min_epochs):
    scores = _scores(seed)
    host, w_host = _run(scores, 1, 3, min_epochs)
    lazy, w_lazy = _run(scores, 7, 3, min_epochs)
    assert (lazy.n_iter, lazy.best_epoch) == (host.n_iter, host.best_epoch)
    assert lazy.validation_scores == host.validation_scores
    assert torch.equal(w_host, w_lazy)


@pytest.mark.parametrize("check_every", [2, 3])
@pytest.mark.parametrize("min_epochs", [0, 20])
def test_device_path_with_check_every(check_every, min_epochs):
    """The patience counts checks, not epochs, on both paths."""
    scores = _scores(1, 90)
    results = {}
    for sync_every in (1, 4):
        w = torch.zeros(3)
        stopper = EarlyStopper([w], 3, min_epochs=min_epochs, sync_every=sync_every)

        def step(epoch, w=w):
            w.fill_(epoch)

        res = train(step, len(scores), validate=lambda e: torch.tensor(scores[e]),
                    stopper=stopper, check_every=check_every)
        results[sync_every] = (res.n_iter, res.best_epoch, res.validation_scores, float(w[0]))
    assert results[4] == results[1]
    assert results[1][0] < len(scores)   # the rule fired


@pytest.mark.parametrize("score_dim", [0, 1])
def test_device_path_latch_holds_against_minus_infinity(score_dim):
    """Checks the lazy path runs past the stop never improve, not even on -inf."""
    scores = np.r_[3.0, 2.0, 1.0, [1.5] * 4, [-np.inf] * 10]
    results = {}
    for sync_every in (1, 8):
        w = torch.zeros(3)
        stopper = EarlyStopper([w], 4, sync_every=sync_every)

        def step(epoch, w=w):
            w.fill_(epoch)

        def validate(e):
            return torch.tensor([scores[e]] * 2 if score_dim else scores[e])

        res = train(step, len(scores), validate=validate, stopper=stopper)
        results[sync_every] = (res.n_iter, res.best_epoch, float(w[0]))
    assert results[1] == (7, 2, 2.0)
    assert results[8] == results[1]


@pytest.mark.parametrize("check_every", [1, 2])
@pytest.mark.parametrize("scores", [
    [math.nan] * 20,                                  # no 0-d check ever improves
    [[math.nan, float(e)] for e in range(20)],        # nor a 1-d one (a NaN criterion)
], ids=["0d", "1d"])
def test_device_path_keeps_the_stop_weights_when_no_check_improved(scores, check_every):
    """When the rule fires without any check having improved, nothing is restored: the
    host path keeps the weights of the stopping epoch. The lazy path ran past it and
    kept those of a later epoch (n_iter said otherwise)."""
    results = {}
    for sync_every in (1, 8):
        w = torch.zeros(3)
        stopper = EarlyStopper([w], 2, sync_every=sync_every)

        def step(epoch, w=w):
            w.fill_(epoch)
            return torch.tensor(1.0)

        res = train(step, len(scores), validate=lambda e: torch.tensor(scores[e]),
                    stopper=stopper, check_every=check_every)
        results[sync_every] = (res.n_iter, res.best_epoch, float(w[0]))
    assert results[1][1] is None and results[1][0] < len(scores)
    assert results[1][2] == results[1][0] - 1     # the weights of the last epoch run
    assert results[8] == results[1]


def test_device_path_reads_values_only_every_sync_every(monkeypatch):
    """On an accelerator a read waits for the device: the lazy stopper's loop reads the
    stop flag every ``sync_every`` checks and nothing else until the end."""
    reads = []
    for name in ("__bool__", "item", "__float__", "__int__", "tolist", "cpu", "numpy"):
        orig = getattr(torch.Tensor, name)
        monkeypatch.setattr(torch.Tensor, name, lambda self, *a, _o=orig, _n=name, **k:
                            (reads.append((_n, len(epochs))), _o(self, *a, **k))[1])
    epochs = []
    w = torch.zeros(3)
    stopper = EarlyStopper([w], 1000, sync_every=7)

    def step(epoch):
        epochs.append(epoch)
        w.fill_(epoch)
        return torch.tensor(1.0)

    res = train(step, 30, validate=lambda e: torch.tensor(30.0 - e), stopper=stopper)
    during = [r for r in reads if r[1] < 30]
    assert [r[1] for r in during] == [7, 14, 21, 28]   # the flag, after checks 7, 14, ...
    assert res.n_iter == 30 and res.best_epoch == 29 and float(w[0]) == 29


def test_host_to_device():
    from skldp._torch import host_to_device
    a = np.arange(5)
    t = host_to_device(a, "cpu")
    assert t.device.type == "cpu" and t.tolist() == [0, 1, 2, 3, 4]
    assert host_to_device(a, torch.device("cpu"), dtype=torch.float32).dtype == torch.float32
    # another device: an asynchronous copy (pinned first on CUDA)
    m = host_to_device(a, "meta", dtype=torch.float64)
    assert m.device.type == "meta" and m.dtype == torch.float64 and m.shape == (5,)


def test_device_path_restores_tensors_of_several_shapes_and_dtypes():
    # the device path keeps one flat copy per dtype: each tensor comes back in its shape
    tensors = [torch.zeros(2, 3), torch.zeros(4), torch.zeros((), dtype=torch.int64),
               torch.zeros(3, dtype=torch.float64), torch.zeros(1, 2),
               torch.zeros(3, 2, dtype=torch.float64).t()]   # not contiguous
    scores = [3.0, 1.0, 2.0, 2.5, 0.5, 4.0, 5.0]
    kept = {}
    for sync_every in (1, 4):
        ts = [t.clone() if t.is_contiguous() else t.clone().t().contiguous().t()
              for t in tensors]
        stopper = EarlyStopper(ts, None, sync_every=sync_every)
        for epoch, score in enumerate(scores):
            for k, t in enumerate(ts):   # each tensor a value of its own at each epoch
                t.fill_(10 * epoch + k)
            if epoch == 5:   # a diverged check: never kept, never leaks into the best
                ts[0].fill_(float("nan"))
            stopper.update(torch.tensor(score) if sync_every > 1 else score, epoch)
        assert stopper.restore() and stopper.best_epoch == 4
        kept[sync_every] = ts
        for k, t in enumerate(ts):
            assert t.shape == tensors[k].shape and t.dtype == tensors[k].dtype
            assert t.is_contiguous() == tensors[k].is_contiguous()
            assert torch.equal(t, torch.full_like(t, 40 + k))
    assert all(torch.equal(a, b) for a, b in zip(kept[1], kept[4], strict=True))


def test_losses_and_scores_are_read_once_not_copied_every_epoch():
    """The loop keeps each epoch's tensors and stacks them at the end: as many copies for
    5 epochs as for 40 (on a GPU a copy per epoch is a kernel launch per epoch)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Copies(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.__name__.startswith(("copy_", "_to_copy", "index_put")):
                Copies.n += 1
            return func(*args, **(kwargs or {}))

    def run(epochs):
        losses = [torch.tensor(1.0 / (e + 1)) for e in range(epochs)]          # float32
        scores = [torch.tensor([2.0 - e, 0.5], dtype=torch.float64) for e in range(epochs)]
        Copies.n = 0
        with Copies():
            res = train(lambda e: None if e == 1 else losses[e], epochs,
                        validate=lambda e: scores[e])
        return res, Copies.n

    res, few = run(5)
    _, many = run(40)
    assert few == many
    # float32's values, exactly; a step without a loss counts 0
    assert res.loss_curve == [float(torch.tensor(1.0 / (e + 1))) if e != 1 else 0.0
                              for e in range(5)]
    assert res.validation_scores == [[2.0 - e, 0.5] for e in range(5)]


def _diverging(nan_from, losses=True):
    """A step whose loss (and weight) become NaN from epoch ``nan_from``."""
    w = torch.zeros(1)

    def step(epoch):
        w.fill_(float("nan") if epoch >= nan_from else epoch)
        return torch.tensor(float(w[0])) if losses else None
    return w, step


@pytest.mark.parametrize("sync_every", [1, 4])
def test_training_that_ends_on_a_nan_loss_is_refused(sync_every):
    # Before: the fit ended with NaN weights, NaN probabilities and classes_[0] everywhere
    w, step = _diverging(2)
    with pytest.raises(ValueError, match=r"Training diverged: the training loss of the last "
                       r"epoch \(6\) is nan.*scale the features"):
        train(step, 6)
    w, step = _diverging(0)   # no validated epoch with a finite score: nothing to restore
    stopper = EarlyStopper([w], None, sync_every=sync_every)
    with pytest.raises(ValueError, match="no validated epoch with a finite score was kept"):
        train(step, 6, validate=lambda e: w[0].double(), stopper=stopper)
    w, step = _diverging(0, losses=False)   # no loss: the last validation score
    stopper = EarlyStopper([w], None, sync_every=sync_every)
    with pytest.raises(ValueError, match="the validation score of the last epoch"):
        train(step, 6, validate=lambda e: w[0].double(), stopper=stopper)


@pytest.mark.parametrize("sync_every", [1, 4])
def test_restored_finite_weights_are_kept_after_a_divergence(sync_every):
    # early stopping restores the best finite check: the fit stands, as before
    w, step = _diverging(3)
    stopper = EarlyStopper([w], None, sync_every=sync_every)
    res = train(step, 6, validate=lambda e: -w[0].double(), stopper=stopper)
    assert res.best_epoch == 2 and float(w[0]) == 2.0
    assert math.isnan(res.loss_curve[-1])
