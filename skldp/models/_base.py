"""Shared training loop of the torch classifiers (MLP head, GNNs)."""

import copy
import time

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_is_fitted

from .._graph_data import GraphData
from ..base import GraphClassifierMixin
from ..utils._logging import verbose_logger
from ..utils._random import draw_seed
from ..utils.validation import check_int
from ._optim import Adam
from ._torch_utils import (
    build_module,
    class_cross_entropy,
    class_softmax,
    dropout_generator,
    module_on,
    resolve_device,
    stream_seed,
    torch_generator,
)

__all__ = ["TorchClassifierBase"]


class TorchClassifierBase(GraphClassifierMixin, BaseEstimator):
    """Base of torch classifiers: Adam, early stopping, device handling.

    Subclasses must define the parameters ``lr``, ``weight_decay``,
    ``epochs``, ``batch_size`` (``None`` = full batch), ``early_stopping``,
    ``validation_fraction``, ``patience``, ``device``, ``random_state`` and
    ``verbose``, and implement:

    - ``_prepare(X, device)`` -> ``(data, index)``: tensors the forward pass
      needs and the positions of ``X``'s rows inside them;
    - ``_build_module(n_features, n_classes)`` -> ``torch.nn.Module``;
    - ``_forward(module, data, positions)`` -> logits of those positions.

    Override ``_loss(logits, targets, positions)`` for other objectives
    (label-noise correction, label proportions) and ``_fit_targets(y_enc, X)``
    for soft targets. The fitted module is kept on the CPU so the estimator
    pickles anywhere; it moves to the chosen device for training and inference.

    Randomness comes only from generators local to ``fit``, seeded from
    ``random_state``: the module is built under :func:`torch.random.fork_rng`
    and re-initialised from its own generator, and dropout draws from another
    (``skldp.models._torch_utils.dropout_generator``). torch's global
    generator is neither read nor advanced, so concurrent fits (joblib's
    threading backend) give the same results as sequential ones.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of input features.
    module_ : torch.nn.Module
        The trained network, on the CPU.
    n_iter_ : int
        Epochs run.
    loss_curve_ : list of float
        Mean training loss per epoch.
    validation_scores_ : list of float
        Validation loss per epoch (empty without early stopping).
    best_epoch_ : int or None
        Epoch (0-based) whose weights were kept when early stopping.
    """

    # ---------------------------------------------------------------- hooks
    def _prepare(self, X, device):  # pragma: no cover - abstract
        raise NotImplementedError

    def _build_module(self, n_features, n_classes):  # pragma: no cover - abstract
        raise NotImplementedError

    def _forward(self, module, data, positions):  # pragma: no cover - abstract
        raise NotImplementedError

    def _fit_targets(self, y_enc, X):
        """Training targets per row of X: class indices (LongTensor) or soft labels."""
        return torch.as_tensor(y_enc, dtype=torch.long, device="cpu")

    def _loss(self, logits, targets, positions):
        if targets.dtype == torch.long:
            return class_cross_entropy(logits, targets)
        return -(targets * class_softmax(logits, log=True)).sum(dim=1).mean()

    def _validation_split(self, y_enc, n, seed):
        """Positions (train, validation) of the fit rows for early stopping.

        Hook: subclasses may override it (e.g. to use a given validation set).
        """
        # Stratify only when every class can appear on both sides of the split.
        n_val, n_cls = int(np.ceil(self.validation_fraction * n)), len(self.classes_)
        strat = (y_enc if np.bincount(y_enc).min() >= 2 and min(n_val, n - n_val) >= n_cls
                 else None)
        return train_test_split(np.arange(n), test_size=self.validation_fraction,
                                random_state=seed % (2**31), stratify=strat)

    def _validate_hyperparameters(self):
        check_int(self.epochs, "epochs", 1)
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}.")
        check_int(self.batch_size, "batch_size", 1, allow_none=True)
        if self.early_stopping:
            if not 0 < self.validation_fraction < 1:
                raise ValueError("validation_fraction must be in (0, 1) when "
                                 f"early_stopping=True, got {self.validation_fraction}.")
            check_int(self.patience, "patience", 1)

    # ------------------------------------------------------------------ fit
    def fit(self, X, y):
        """Train on the rows of ``X`` (a GraphData view or an array) with labels ``y``.

        Parameters
        ----------
        X : GraphData or array-like of shape (n_rows, n_features)
            Training rows (a view of the graph for the GNN classifiers).
        y : array-like of shape (n_rows,)
            Their labels (``-1``, "unlabelled", is an error).

        Returns
        -------
        self : TorchClassifierBase
            The fitted estimator.
        """
        self._validate_hyperparameters()
        if not isinstance(X, GraphData):
            from sklearn.utils.validation import check_array
            X = check_array(X, accept_sparse="csr", dtype=np.float32)
        y_enc = self._encode_labels(y, X.shape[0])
        self.n_features_in_ = X.shape[1]
        seed = draw_seed(self.random_state)
        device = resolve_device(self.device)
        data, index = self._prepare(X, device)
        targets = self._fit_targets(y_enc, X).to(device)
        n = len(index)
        local = np.arange(n)
        val = None
        if self.early_stopping and n >= 2:
            local, val = self._validation_split(y_enc, n, seed)
        # Local generators only: torch's global one is neither read nor advanced, so
        # fits in concurrent threads (joblib's threading backend) cannot disturb each other.
        module = build_module(lambda: self._build_module(X.shape[1], len(self.classes_)),
                              torch_generator(stream_seed(seed, "init"))).to(device)
        drop_gen = torch_generator(stream_seed(seed, "dropout"), device)
        opt = Adam(module.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        rng = np.random.default_rng(seed)
        index_t = torch.as_tensor(index, device=device)
        with dropout_generator(drop_gen):
            epoch, best_state = self._train_loop(module, opt, data, index_t, targets, local,
                                                 val, rng, device)
        if best_state is not None:
            module.load_state_dict(best_state)
        self.n_iter_ = epoch + 1
        self.module_ = module.cpu().eval()
        return self

    def _split_forward(self, module, data):
        """Hook: the forward pass as ``(first, rest)`` when its first stage draws nothing.

        ``first()`` -> ``h`` and ``rest(h, positions, training)`` -> logits, with
        ``rest(first(), positions, module.training) == _forward(module, data,
        positions)``, ``first()`` the same in training and evaluation mode and
        ``rest(..., training=False)`` the evaluation mode whatever the module's.
        The training loop then evaluates ``first`` once per step (the
        validation of one step and the training of the next share it) and never
        switches the module's mode. ``None`` (the default): no split.
        """
        return None

    def _train_loop(self, module, opt, data, index_t, targets, local, val, rng, device):
        """Epochs of Adam with early stopping.

        Returns the last epoch run (0-based) and the state of the best
        validated epoch (``None`` without validation).
        """
        self.loss_curve_, self.validation_scores_ = [], []
        self.best_epoch_ = None
        track = {"best": np.inf, "state": None, "bad": 0}
        full_batch = self.batch_size is None or self.batch_size >= len(local)
        split = self._split_forward(module, data) if full_batch and val is not None else None
        val_t = None if val is None else torch.as_tensor(val, device=device)
        pending = None  # (epoch, t0) trained, its validation waiting for the next `first`
        epoch = -1
        for step in range(self.epochs):
            if not module.training:  # a toggle walks every submodule: only when needed
                module.train()
            h = split[0]() if split is not None else None  # at the weights after the last step
            if pending is not None:
                if self._validate_step(module, data, index_t, targets, val_t, split, h, track,
                                       *pending):
                    break
                pending = None
            epoch, t0 = step, time.perf_counter()
            order = rng.permutation(local)
            bs = len(order) if self.batch_size is None else self.batch_size
            total = 0.0
            for s in range(0, len(order), bs):
                b = torch.as_tensor(order[s:s + bs], device=device)
                pos = index_t[b]
                opt.zero_grad()
                logits = (split[1](h, pos, True) if split is not None
                          else self._forward(module, data, pos))
                loss = self._loss(logits, targets[b], pos)
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(b)
            self.loss_curve_.append(total / len(order))
            if split is not None:
                pending = (epoch, t0)  # validated with the next step's `first`
            elif self._validate_step(module, data, index_t, targets, val_t, None, None,
                                     track, epoch, t0):
                break
        else:
            if pending is not None:  # the last step: no next `first` to share
                self._validate_step(module, data, index_t, targets, val_t, None, None,
                                    track, *pending)
        return epoch, track["state"]

    def _validate_step(self, module, data, index_t, targets, val_t, split, h, track, epoch, t0):
        """Validate the weights after ``epoch``, log it and say whether to stop."""
        msg = f"epoch {epoch + 1}/{self.epochs} loss {self.loss_curve_[-1]:.4f}"
        stop = False
        if val_t is not None:
            pos = index_t[val_t]
            with torch.no_grad():
                if split is not None:
                    logits = split[1](h.detach(), pos, False)
                else:
                    module.eval()
                    logits = self._forward(module, data, pos)
                vloss = float(self._loss(logits, targets[val_t], pos))
            self.validation_scores_.append(vloss)
            msg += f" val_loss {vloss:.4f}"
            if vloss < track["best"] - 1e-6:
                track.update(best=vloss, bad=0)
                self.best_epoch_ = epoch
                track["state"] = copy.deepcopy(module.state_dict())
            else:
                track["bad"] += 1
            stop = track["bad"] >= self.patience
        if self.verbose:
            verbose_logger(__name__).info("[%s] %s (%.2fs)", type(self).__name__, msg,
                                          time.perf_counter() - t0)
        return stop

    # -------------------------------------------------------------- predict
    def _logits(self, X):
        """Logits (pre-softmax scores) of the rows of X, shape (n_rows, n_classes)."""
        check_is_fitted(self, "module_")
        if not isinstance(X, GraphData):
            from sklearn.utils.validation import check_array
            X = check_array(X, accept_sparse="csr", dtype=np.float32)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} was "
                             f"fitted with {self.n_features_in_} features.")
        device = resolve_device(self.device)
        data, index = self._prepare(X, device)
        module = module_on(self.module_, device)
        with torch.no_grad():
            out = self._forward(module, data, torch.as_tensor(index, device=device)).cpu()
        return out.numpy().astype(np.float64)

    def decision_function(self, X):
        """Class scores of the rows of ``X``.

        Parameters
        ----------
        X : GraphData or array-like of shape (n_rows, n_features)
            Rows to score (a view of the graph for the GNN classifiers).

        Returns
        -------
        scores : ndarray of shape (n_rows,) or (n_rows, n_classes)
            The logits (pre-softmax scores), columns in the order of
            ``classes_``. For two classes, as in scikit-learn, one column: the
            score of ``classes_[1]``, the logit difference ``z_1 - z_0``
            (positive where ``classes_[1]`` is predicted), so that
            ``scoring="roc_auc"`` works.
        """
        z = self._logits(X)
        return z[:, 1] - z[:, 0] if z.shape[1] == 2 else z

    def predict_proba(self, X):
        """Class probabilities of the rows of ``X``.

        Parameters
        ----------
        X : GraphData or array-like of shape (n_rows, n_features)
            Rows to score.

        Returns
        -------
        proba : ndarray of shape (n_rows, n_classes)
            Softmax of the logits, columns in the order of ``classes_``.
        """
        z = self._logits(X)
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)
