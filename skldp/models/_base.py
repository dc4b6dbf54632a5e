"""Base of the torch node classifiers (MLP head, GNNs): data, module and the one trainer."""

from numbers import Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from .._graph_data import GraphData
from .._torch import (
    Adam,
    EarlyStopper,
    build_module,
    class_cross_entropy,
    class_softmax,
    default_sync_every,
    dropout_generator,
    host_to_device,
    module_on,
    resolve_device,
    stream_seed,
    torch_generator,
    train,
)
from .._torch._device import DEVICE_CONSTRAINT
from ..base import (
    GraphClassifierMixin,
    note_edge_read,
    note_feature_read,
    note_label_read,
    refuse_foreign_labels,
)
from ..model_selection._validation import (
    validation_rows,
    validation_split,
    warn_untrained_classes,
)
from ..utils._logging import verbose_logger
from ..utils._random import training_seed
from ..utils.validation import (
    RANDOM_STATE_CONSTRAINT,
    Count,
    Interval,
    check_feature_array,
    check_feature_names,
    check_int,
    record_feature_names,
)

__all__ = ["TorchClassifierBase"]


def take_rows(z, positions):
    """``z[positions]`` for a 1-D tensor of row indices, as ``index_select``: its gradient
    is one scatter-add, where advanced indexing's sorts the indices first (on CUDA two
    sorts and a scatter in every backward pass; the same values)."""
    if torch.is_tensor(positions) and positions.dim() == 1 and positions.dtype in (
            torch.int64, torch.int32):
        return z.index_select(0, positions)
    return z[positions]


def gather_rows(z, index):
    """``z[index]`` for a 1-D index whose entries repeat (the ends of edges or pairs),
    with a gradient that sums each row's copies in the same order in every run:
    ``index_select`` on the CPU (its scatter-add walks the index in turn, where
    indexing's accumulating ``index_put`` splits it between threads), indexing
    elsewhere (on CUDA ``index_put`` sorts the index first, where ``index_add``
    adds with atomics)."""
    if z.device.type == "cpu":
        return z.index_select(0, index)
    return z[index]


class TorchClassifierBase(GraphClassifierMixin, BaseEstimator):
    """Base of torch classifiers: Adam, early stopping, device handling.

    Subclasses must define the parameters ``lr``, ``weight_decay``,
    ``epochs``, ``batch_size`` (``None`` = full batch), ``early_stopping``,
    ``validation``, ``validation_fraction``, ``patience``, ``device``,
    ``random_state`` and ``verbose``, and implement:

    - ``_prepare(X, device)`` -> ``(data, index)``: tensors the forward pass
      needs and the positions of ``X``'s rows inside them;
    - ``_build_module(n_features, n_classes)`` -> ``torch.nn.Module``;
    - ``_forward(module, data, positions)`` -> logits of those positions.

    Override ``_loss(logits, targets, positions)`` for other objectives
    (label-noise correction, label proportions) and ``_fit_targets(y_enc, X)``
    for soft targets. The epochs run in skldp's one training loop with its
    early-stopper; the rows named by ``validation``
    (or ``validation_fraction`` of the fit rows) validate and never train. The
    fitted module is kept on the CPU so the estimator pickles anywhere; it
    moves to the chosen device for training and inference.

    Randomness comes only from generators local to ``fit``, seeded from
    ``random_state``: the module is built under :func:`torch.random.fork_rng`
    and re-initialised from its own generator, and dropout draws from another
    (a generator of its own). torch's global
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

    #: The constraints of the parameters every torch classifier has (subclasses add theirs).
    _parameter_constraints = {
        "lr": [Interval(Real, 0, np.inf, closed="neither")],
        "weight_decay": [Interval(Real, 0, np.inf, closed="left")],
        "epochs": [Count(1)],
        "batch_size": [Count(1), None],
        "early_stopping": ["boolean", StrOptions({"auto"})],
        "validation": ["array-like", None],   # check_validation checks what it names
        "validation_fraction": [Interval(Real, 0, 1, closed="both")],
        "patience": [Count(1), None],
        "device": DEVICE_CONSTRAINT,
        "random_state": RANDOM_STATE_CONSTRAINT,
        "verbose": ["verbose"],
    }

    def _setup_fit(self):
        """The checks of several parameters together, after the declared ones."""
        if self.early_stopping:
            if not 0 < self.validation_fraction < 1:
                raise ValueError("validation_fraction must be in (0, 1) when "
                                 f"early_stopping=True, got {self.validation_fraction}.")
            if self.patience is not None:   # None: never stop, run all epochs, keep the best
                check_int(self.patience, "patience", 1)

    def _check_validation_rows(self, X):
        """The checks of ``validation`` on the fit rows ``X`` that need no label: before
        any read is noted, so that a refused ``validation`` charges nothing."""
        validation_rows(X, self.validation, self.early_stopping, self)

    # ------------------------------------------------------------------ fit
    def _note_fit_reads(self, X):
        """The fit's reads of the features (raw ones: in the clear) and of the adjacency of
        ``X``, charged when due. A model that collects labels notes them between the checks
        of that collection and its sending (:func:`~skldp.mechanisms._label_rr.randomize_after`):
        a refused read spends no label, a refused collection leaves no read (once per graph:
        ``fit`` notes again)."""
        note_feature_read(self, X, fitting=True)
        note_edge_read(self, X, fitting=True)

    @_fit_context(prefer_skip_nested_validation=True)
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
        self._setup_fit()
        self._check_validation_rows(X)
        refuse_foreign_labels(self, X, y)   # before any read is noted
        record_feature_names(self, X)
        Xc = X if isinstance(X, GraphData) else check_feature_array(X, dtype=np.float32)
        y_enc = self._encode_labels(y, Xc.shape[0], Xc)   # bad labels: before any read too
        self._note_fit_reads(X)
        X = Xc
        note_label_read(self, X, y)   # clean labels: charged once a label mechanism collects them
        self.n_features_in_ = X.shape[1]
        seed = training_seed(self.random_state)
        weight_decay = self._fit_weight_decay(X, y, seed)
        device = resolve_device(self.device)
        data, index = self._prepare(X, device)
        targets = self._fit_targets(y_enc, X).to(device)
        local, val = validation_split(X, y_enc, validation=self.validation,
                                      early_stopping=self.early_stopping,
                                      validation_fraction=self.validation_fraction, seed=seed,
                                      owner=self)
        warn_untrained_classes(y_enc, local, val, self)   # (after the labels' read is noted)
        # Local generators only: torch's global one is neither read nor advanced, so
        # fits in concurrent threads (joblib's threading backend) cannot disturb each other.
        module = build_module(lambda: self._build_module(X.shape[1], len(self.classes_)),
                              torch_generator(stream_seed(seed, "init"))).to(device)
        drop_gen = torch_generator(stream_seed(seed, "dropout"), device)
        opt = Adam(module.parameters(), lr=self.lr, weight_decay=weight_decay)
        rng = np.random.default_rng(seed)
        index_t = torch.as_tensor(index, device=device)
        with dropout_generator(drop_gen):
            result = self._train(module, opt, data, index_t, targets, local, val, rng, device)
        self.n_iter_ = result.n_iter
        self.loss_curve_ = result.loss_curve
        self.validation_scores_ = result.validation_scores
        self.best_epoch_ = result.best_epoch
        self.module_ = module.cpu().eval()
        return self

    def _validation_score(self, logits, targets, positions):
        """Hook: what early stopping minimises on the validation rows (the loss).

        A 0-d tensor, or a 1-d tensor of criteria (see :class:`~skldp._torch.EarlyStopper`).
        """
        return self._loss(logits, targets, positions)

    def _fit_weight_decay(self, X, y, seed):
        """Hook: the L2 penalty of this fit (``weight_decay``; a head may choose it)."""
        return self.weight_decay

    def _batch_chunk_rows(self, n_rows):
        """Hook: rows per chunk of a full batch of ``n_rows`` (``None``: all at once).

        Only for a loss that is a mean over rows (the chunks' losses are weighted by
        their share of the rows) and a forward pass row by row.
        """
        return None

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

    def _train(self, module, opt, data, index_t, targets, local, val, rng, device):
        """Epochs of Adam on the ``local`` rows, validated on the ``val`` rows (:func:`train`)."""
        full_batch = self.batch_size is None or self.batch_size >= len(local)
        split = self._split_forward(module, data) if full_batch and val is not None else None
        val_t = None if val is None else torch.as_tensor(val, device=device)
        # A full batch is not permuted (the order of a mean changes nothing but rounding):
        # the same rows in the same order every epoch, no index copy to the device (so no
        # wait for it), and the head can read its rows in place (MLPHead).
        fixed_t = torch.as_tensor(local, device=device) if full_batch else None
        bs = len(local) if self.batch_size is None else self.batch_size
        nxt = {}  # the first stage at the last validated weights, reused by the next step

        chunks = None
        if full_batch:
            # The rows of the full batch and of the validation, gathered once
            pos_fit, tgt_fit = index_t[fixed_t], targets[fixed_t]
            # A very large batch in row chunks (_batch_chunk_rows): one gradient, summed
            # over chunks whose activations stay small; each chunk's tensors made once
            rows = self._batch_chunk_rows(len(local)) if split is None else None
            if rows is not None and rows < len(local):
                chunks = [(pos_fit[s:s + rows], tgt_fit[s:s + rows],
                           len(fixed_t[s:s + rows]) / len(local))
                          for s in range(0, len(local), rows)]
        if val_t is not None:
            pos_val, tgt_val = index_t[val_t], targets[val_t]

        def step(epoch):
            if not module.training:  # a toggle walks every submodule: only when needed
                module.train()
            h = None
            if split is not None:
                h = nxt.pop("h", None)
                if h is None:
                    h = split[0]()
            if chunks is not None:
                opt.zero_grad()
                total = 0.0
                for pos, tgt, share in chunks:   # the batch's mean loss, chunk by chunk
                    loss = self._loss(self._forward(module, data, pos), tgt, pos) * share
                    loss.backward()
                    total = total + loss.detach()
                opt.step()
                return total
            if full_batch:
                opt.zero_grad()
                logits = (split[1](h, pos_fit, True) if split is not None
                          else self._forward(module, data, pos_fit))
                loss = self._loss(logits, tgt_fit, pos_fit)
                loss.backward()
                opt.step()
                return loss.detach()   # the mean over the batch (the trainer keeps float64)
            # Mini-batches: a new order every epoch, queued to the device without a wait
            order_t = host_to_device(rng.permutation(local), device)
            total = torch.zeros((), dtype=torch.float64, device=device)
            for s in range(0, len(order_t), bs):
                b = order_t[s:s + bs]
                pos = index_t[b]
                opt.zero_grad()
                loss = self._loss(self._forward(module, data, pos), targets[b], pos)
                loss.backward()
                opt.step()
                total += loss.detach().double() * len(b)
            return total / len(order_t)

        def validate(epoch):
            if split is not None:
                # At the weights after this epoch: the next step trains from the same h
                nxt["h"] = h = split[0]()
                with torch.no_grad():
                    logits = split[1](h.detach(), pos_val, False)
            else:
                module.eval()
                with torch.no_grad():
                    logits = self._forward(module, data, pos_val)
            with torch.no_grad():
                return self._validation_score(logits, tgt_val, pos_val)

        stopper = None
        if val is not None:
            stopper = EarlyStopper(list(module.state_dict().values()), self.patience,
                                   sync_every=default_sync_every(device))
        return train(step, self.epochs, validate=validate if val is not None else None,
                     stopper=stopper, log=self._epoch_logger() if self.verbose else None)

    def _epoch_logger(self):
        """``log`` of the training loop: one INFO line per epoch."""
        logger, name, epochs = verbose_logger(__name__), type(self).__name__, self.epochs
        names = self._validation_names()

        def log(epoch, loss, score, seconds):
            msg = f"epoch {epoch + 1}/{epochs} loss {loss:.4f}"
            if score is not None:
                values = score if isinstance(score, list) else [score]
                msg += "".join(f" {n} {v:.4f}" for n, v in zip(names, values, strict=True))
            logger.info("[%s] %s (%.2fs)", name, msg, seconds)
        return log

    def _validation_names(self):
        """Hook: the names of the criteria :meth:`_validation_score` returns, for the log."""
        return ("val_loss",)

    # -------------------------------------------------------------- predict
    def _logits(self, X):
        """Logits (pre-softmax scores) of the rows of X, shape (n_rows, n_classes).

        Every prediction path (``predict``, ``predict_proba``, ``decision_function``)
        comes here. The forward pass reads the features of ``X``'s graph: raw ones are
        charged as read in the clear, exactly as ``fit`` is (refused under a budget),
        before anything is read; once per graph, as the ledger remembers its token.
        """
        check_is_fitted(self, "module_")
        # what X is (a graph, its columns: public) checked before the reads are noted, so
        # that a refused prediction charges nothing
        self._check_predict_input(X)
        check_feature_names(self, X)
        if isinstance(X, GraphData):
            self._refuse_other_width(X)
        note_feature_read(self, X)   # raw features read here: in the clear
        note_edge_read(self, X)      # and the edges (charged when due)
        if not isinstance(X, GraphData):
            X = check_feature_array(X, dtype=np.float32)
            self._refuse_other_width(X)
        device = resolve_device(self.device)
        data, index = self._prepare(X, device)
        module = module_on(self.module_, device)
        with torch.no_grad():
            out = self._forward(module, data, torch.as_tensor(index, device=device)).cpu()
        return out.numpy().astype(np.float64)

    def _check_predict_input(self, X):
        """Hook: refuse an input of the wrong kind (e.g. no graph) before any read is noted."""

    def _refuse_other_width(self, X):
        """A ``ValueError`` if the rows ``X`` have another number of features than fit's."""
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} was "
                             f"fitted with {self.n_features_in_} features.")

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

    def predict(self, X):
        """Most probable class of each row.

        Parameters
        ----------
        X : GraphData or array-like of shape (n_rows, n_features)
            Rows to classify.

        Returns
        -------
        y_pred : ndarray of shape (n_rows,)
            The class of the largest logit (the softmax keeps the order).
        """
        z = self._logits(X)   # (raises NotFittedError before classes_ is read)
        return self.classes_[np.argmax(z, axis=1)]

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
