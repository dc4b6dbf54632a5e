"""The one training loop of skldp's torch models: epochs, validation checks, early stopping.

A model gives :func:`train` two closures: ``step(epoch)`` runs one epoch of
updates (its own batches, optimisers and, for the central DP trainers, its
clipping and noise) and returns the epoch's training loss as a 0-d tensor (or
``None``); ``validate(epoch)`` returns the validation score of the current
weights (lower is better). The loop owns everything else: the loss curve, the
validation scores, the :class:`~skldp._torch.EarlyStopper`, the log and when
the host waits for the device.

Losses and scores stay where the steps made them (on the device); the host reads
them once, at the end, in one stack (or every epoch with ``log``, which formats them). On
an accelerator the stop flag is read every ``sync_every`` checks only
(:func:`default_sync_every`), so a fit of a few hundred small full-batch
epochs does not wait for the GPU hundreds of times.
"""

import math
import time
from dataclasses import dataclass, field

import torch

__all__ = ["train", "TrainResult", "default_sync_every"]

#: Checks between two host reads of the stop flag on an accelerator.
SYNC_EVERY = 16


def default_sync_every(device):
    """1 on the CPU (reading a value is free there), :data:`SYNC_EVERY` elsewhere.

    Parameters
    ----------
    device : torch.device

    Returns
    -------
    int
    """
    return 1 if torch.device(device).type == "cpu" else SYNC_EVERY


@dataclass
class TrainResult:
    """What :func:`train` returns.

    Attributes
    ----------
    n_iter : int
        Epochs counted (up to the one where the stopping rule fired).
    loss_curve : list of float
        Training loss of each counted epoch (empty when ``step`` returns ``None``).
    validation_scores : list of float
        Score of each counted validation check (a list of the criteria per
        check when the score has several).
    best_epoch : int or None
        Epoch (0-based) of the best check, whose weights were restored.
    """

    n_iter: int
    loss_curve: list = field(default_factory=list)
    validation_scores: list = field(default_factory=list)
    best_epoch: int = None


def train(step, epochs, *, validate=None, stopper=None, check_every=1, log=None):
    """Run up to ``epochs`` epochs of ``step`` with validation checks and early stopping.

    Parameters
    ----------
    step : callable
        ``step(epoch) -> torch.Tensor or None``: one epoch of updates; returns
        its training loss (a 0-d tensor, kept on the device and never written
        again: the loop keeps it, not a copy) or ``None``.
    epochs : int
        Maximum number of epochs.
    validate : callable or None, default=None
        ``validate(epoch) -> torch.Tensor``: the validation score of the weights
        after ``epoch`` (lower is better), 0-d or a 1-d tensor of criteria
        (see :class:`~skldp._torch.EarlyStopper`). ``None``: no checks, the
        last weights are kept.
    stopper : EarlyStopper or None, default=None
        Decides when to stop and keeps the best weights; needs ``validate``.
        After the loop its best weights are restored.
    check_every : int, default=1
        Validate after every ``check_every``-th epoch.
    log : callable or None, default=None
        ``log(epoch, loss, score, seconds)`` after every epoch (``score`` is
        a float, a list of floats for several criteria, or ``None`` without a
        check); reading the values waits for the device.

    Returns
    -------
    TrainResult
    """
    epochs = int(epochs)
    # each epoch's loss and score tensors, stacked once at the end: no copy per epoch
    # (on a GPU each copy is a kernel launch, and launches are what a small epoch costs)
    losses, scores = [], []
    epoch = -1
    for epoch in range(epochs):
        t0 = time.perf_counter() if log is not None else 0.0
        loss = step(epoch)
        losses.append(None if loss is None else loss.detach())
        score = None
        stop = False
        if validate is not None and (epoch + 1) % check_every == 0:
            score = validate(epoch)
            score = (score.detach() if torch.is_tensor(score)
                     else torch.tensor(float(score), dtype=torch.float64))
            scores.append(score)
            if stopper is not None:
                stop = stopper.update(score, epoch)
        if log is not None:
            log(epoch, float(loss) if loss is not None else None,
                None if score is None else score.tolist(), time.perf_counter() - t0)
        if stop:
            break
    n_iter = epoch + 1
    restored = False
    if stopper is not None:
        stopped_at = stopper.stop_epoch
        if stopped_at is not None:  # on the device path a few epochs may have run past it
            n_iter = stopped_at + 1
        restored = stopper.restore()
    n_counted = n_iter // check_every if validate is not None else 0
    has_loss = any(v is not None for v in losses)
    result = TrainResult(
        n_iter=n_iter,
        loss_curve=_float64_list(losses[:n_iter]) if has_loss else [],
        validation_scores=_float64_list(scores[:n_counted]),
        best_epoch=stopper.best_epoch if stopper is not None else None)
    if not restored:   # (restored weights had a finite validation score)
        _refuse_non_finite_end(result)
    return result


def _refuse_non_finite_end(result):
    """Raise if training ended on a non-finite loss (or score, without a loss): the kept
    weights would give NaN probabilities and the first class everywhere. Read from the
    values the host already holds (no wait for the device)."""
    last = (result.loss_curve or result.validation_scores or [None])[-1]
    if last is None or math.isfinite(sum(last) if isinstance(last, list) else last):
        return
    what = "training loss" if result.loss_curve else "validation score"
    kept = (", and no validated epoch with a finite score was kept"
            if result.validation_scores else "")
    raise ValueError(
        f"Training diverged: the {what} of the last epoch ({result.n_iter}) is {last}{kept}, "
        "so the model would predict NaN probabilities. The usual cause is features of very "
        "large magnitude, whose products overflow float32: scale the features (e.g. divide "
        "them by a public constant so that they lie in [-1, 1]); else lower lr.")


def _float64_list(values):
    """The values of equal-shaped tensors (``None``: 0) as float64 lists, read in one
    transfer: one stack per dtype and device, not one copy per epoch."""
    if not values:
        return []
    like = next(v for v in values if v is not None)
    groups = {}
    for i, v in enumerate(values):
        if v is not None:
            groups.setdefault((v.dtype, v.device), []).append(i)
    out = torch.zeros((len(values), *like.shape), dtype=torch.float64, device="cpu")
    for idx in groups.values():
        out[idx] = torch.stack([values[i] for i in idx]).double().cpu()
    return out.tolist()

