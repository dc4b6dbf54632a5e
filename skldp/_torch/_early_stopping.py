"""The one early-stopper: keep the best validated weights, stop after ``patience`` bad checks.

On the CPU each check reads its score on the host (free there) and copies the
weights only when they improve. On an accelerator reading a score waits for
every queued kernel, so the stopper keeps its state on the device instead: the
best score and the patience counter are tensors, the best weights are updated
with ``torch.where`` in place (no branch on a device value), and the host
reads whether training stopped only every ``sync_every`` checks. Training may
then run up to ``sync_every - 1`` epochs past the stopping point, but the stop
is latched (the best score becomes NaN, so no later check improves or resets
the patience): the kept weights, ``best_epoch`` and the epoch count are those
of the host path. The patience counter is kept as the number of the check
that last reset it, and the stopping epoch is found from it when read. A
check costs about a dozen small kernels (the tracked tensors are kept as one flat
copy per dtype) and no wait (on small graphs, kernel launches are what an
epoch costs on a GPU).

A score with several criteria (a 1-d tensor, e.g. the validation loss and
error rate) follows the rule of Veličković et al.'s released GAT code: a
check at least as good as every earlier one on every criterion keeps its
weights; a check at least as good on any criterion resets the patience.
"""

import math

import torch

__all__ = ["EarlyStopper"]


class EarlyStopper:
    """Track validation scores (lower is better) and the weights of the best one.

    A 0-d score improves when it is below the best one minus ``tol``. A 1-d
    score (several criteria, each lower is better) is kept when no criterion
    is above its best so far, and resets the patience when one criterion is
    not above its best (ties count: an error rate on few rows often ties).

    Parameters
    ----------
    tensors : list of torch.Tensor
        What a check saves when it improves (the module's state and any other
        learned tensor, e.g. a learned graph); :meth:`restore` copies the best
        back into them, in place.
    patience : int or None, default=None
        Stop after this many checks without improvement; ``None`` never stops
        (the best check is still kept).
    min_epochs : int, default=0
        Never stop before this many epochs.
    tol : float, default=1e-6
        A 0-d score improves when it is below the best one minus ``tol``.
    sync_every : int, default=1
        Checks between two reads of the stop flag on the host; 1 reads every
        check and keeps the state on the host (the CPU path).
    """

    def __init__(self, tensors, patience=None, *, min_epochs=0, tol=1e-6, sync_every=1):
        self.tensors = [t for t in tensors]
        self.patience = patience
        self.min_epochs = int(min_epochs)
        self.tol = float(tol)
        self.sync_every = max(1, int(sync_every))
        self._best = None       # copies of the tensors at the best check
        self._groups = None     # (lazy) positions of the tensors in each flat copy
        self._views = None      # (lazy) their flat views, per group
        self._checks = 0
        if self.sync_every == 1:
            self._score, self._bad, self._best_epoch, self._stop_epoch = math.inf, 0, None, None
        else:
            device = self.tensors[0].device if self.tensors else "cpu"
            f64 = dict(dtype=torch.float64, device=device)
            i64 = dict(dtype=torch.int64, device=device)
            self._score = torch.tensor(math.inf, **f64)
            self._best_epoch = torch.full((), -1, **i64)
            # the patience counter as the check (1-based) of the last reset: a check's
            # counter is its number minus that one; 0 is "before the first check"
            self._last_reset = torch.zeros((), **i64)
            self._stopped = None   # whether the rule has fired (a device bool)
            self._epochs = []      # the epoch of each check (on the host)

    @property
    def lazy(self):
        """Whether the state lives on the device (``sync_every > 1``)."""
        return self.sync_every > 1

    def update(self, score, epoch):
        """Record the check of ``epoch`` (0-based) and say whether to stop.

        Parameters
        ----------
        score : torch.Tensor or float
            The validation score, a 0-d tensor, or a 1-d tensor of criteria
            (lower is better).
        epoch : int
            The epoch that was validated.

        Returns
        -------
        stop : bool
            Whether training should stop now (on the device path, only known
            every ``sync_every`` checks; ``False`` in between).
        """
        self._checks += 1
        if not self.lazy:
            return self._update_host(score, epoch)
        return self._update_device(score, epoch)

    def _update_host(self, score, epoch):
        if torch.is_tensor(score) and score.dim() == 1:
            s = score.detach().tolist()   # one read; the rule runs on the host's floats
            best = [math.inf] * len(s) if isinstance(self._score, float) else self._score
            not_worse = [v <= b for v, b in zip(s, best, strict=True)]
            resets, keeps = any(not_worse), all(not_worse)
            # NaN never becomes the best
            self._score = [v if ok else b for v, b, ok in zip(s, best, not_worse, strict=True)]
        else:
            score = float(score)
            resets = keeps = score < self._score - self.tol
            if keeps:
                self._score = score
        if keeps:
            self._best_epoch = epoch
            with torch.no_grad():
                if self._best is None:
                    self._best = [t.detach().clone() for t in self.tensors]
                else:
                    for b, t in zip(self._best, self.tensors, strict=True):
                        b.copy_(t)
        self._bad = 0 if resets else self._bad + 1
        stop = (self.patience is not None and self._bad >= self.patience
                and epoch + 1 >= self.min_epochs)
        if stop:
            self._stop_epoch = epoch
        return stop

    def _update_device(self, score, epoch):
        check = self._checks
        self._epochs.append(epoch)
        score = torch.as_tensor(score, device=self._score.device).to(torch.float64)
        # After the stop the best score is NaN (the latch): no check improves or resets
        if score.dim() == 1:
            if self._score.dim() == 0:
                self._score = self._score.expand(score.shape).clone()
            not_worse = score <= self._score
            resets, keeps = not_worse.any(), not_worse.all()
            self._score = torch.where(not_worse, score, self._score)
        else:
            resets = keeps = score < self._score - self.tol
            self._score = torch.where(keeps, score, self._score)
        with torch.no_grad():
            if self._best is None:   # one flat copy per dtype and device
                groups = {}
                for i, t in enumerate(self.tensors):
                    groups.setdefault((t.dtype, t.device), []).append(i)
                self._groups = list(groups.values())
                # flat views of contiguous tensors, made once (they see in-place updates)
                self._views = [[self.tensors[i].view(-1) for i in g]
                               if all(self.tensors[i].is_contiguous() for i in g) else None
                               for g in self._groups]
                self._best = [self._flat(k).clone() for k in range(len(self._groups))]
            # Until a check improves, the copy follows the weights (up to the stop): a rule
            # that fires with no improved check then restores the stopping epoch's weights,
            # those the host path ends on (the loop here ran past them)
            take = keeps | (self._best_epoch < 0)
            if self._stopped is not None:
                take = take & ~self._stopped
            for k, b in enumerate(self._best):
                torch.where(take, self._flat(k), b, out=b)
        self._best_epoch = torch.where(keeps, epoch, self._best_epoch)
        self._last_reset = torch.where(resets, check, self._last_reset)
        if self.patience is None or epoch + 1 < self.min_epochs:
            return False
        # the counter reached the patience; once it has, the latch freezes the last reset
        self._stopped = self._last_reset <= check - self.patience
        self._score = torch.where(self._stopped, math.nan, self._score)
        if check % self.sync_every:
            return False
        return bool(self._stopped)

    def _flat(self, k):
        """The tensors of group ``k`` as one flat tensor: a check then updates the best
        copy in two kernels (a concatenation and a ``where``), not one per tensor."""
        parts = self._views[k] or [self.tensors[i].reshape(-1) for i in self._groups[k]]
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    @property
    def best_epoch(self):
        """Epoch (0-based) of the best check, ``None`` before any improvement."""
        e = self._best_epoch if not self.lazy else int(self._best_epoch)
        return None if e is None or e < 0 else int(e)

    @property
    def stop_epoch(self):
        """Epoch (0-based) at which the stopping rule fired, ``None`` if it did not."""
        if not self.lazy:
            return self._stop_epoch
        if self._stopped is None or not bool(self._stopped):
            return None
        # the check where the counter first reached the patience, not before min_epochs
        first = next(c for c, e in enumerate(self._epochs, 1) if e + 1 >= self.min_epochs)
        check = max(int(self._last_reset) + self.patience, first)
        return self._epochs[check - 1]

    def restore(self):
        """Copy the best check's weights back into the tracked tensors (if any check improved).

        On the device path, when the rule fired without any check having improved, the
        weights of the stopping epoch are copied back instead (those the host path ends
        on: the loop ran past them), and ``False`` is returned.

        Returns
        -------
        restored : bool
            Whether the weights of an improved check were restored.
        """
        if self._best is None or self.best_epoch is None:
            if self.lazy and self._best is not None and self.stop_epoch is not None:
                self._copy_back()
            return False
        self._copy_back()
        return True

    def _copy_back(self):
        """Copy the kept copies back into the tracked tensors, in place."""
        with torch.no_grad():
            if not self.lazy:
                for b, t in zip(self._best, self.tensors, strict=True):
                    t.copy_(b)
                return
            for b, g in zip(self._best, self._groups, strict=True):
                parts = b.split([self.tensors[i].numel() for i in g])
                for i, part in zip(g, parts, strict=True):
                    self.tensors[i].copy_(part.view_as(self.tensors[i]))
