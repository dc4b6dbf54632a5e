"""A torch multi-layer perceptron head for node embeddings (PrivGE's classifier)."""

import copy
import itertools
import numbers
import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted
from torch import nn

from .._graph_data import GraphData
from .._torch import Dropout, resolve_device, stream_seed
from ..base import note_feature_read
from ..utils._arrays import check_float32_range, torch_sum_is_finite
from ..utils.validation import (
    Count,
    Interval,
    check_feature_array,
    check_feature_names,
    check_finite_features,
    check_has_features,
    refuse_pairs,
)
from ._base import TorchClassifierBase
from ._mlp_search import batched_decay_scores

__all__ = ["MLPHead"]

_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "gelu": nn.GELU,
                "identity": nn.Identity}

# Sparse inputs are densified once when the dense copy stays under this size,
# otherwise batch by batch (so a large bag-of-words matrix never lives densely).
_DENSE_BYTES = 1 << 28
_CHUNK_ROWS = 4096
# A full batch whose widest layer output exceeds this many bytes trains in row chunks
# (the same gradient, summed): at 3.3M rows and 64 hidden units a step's activations
# took about 2 GB more.
_ACTIVATION_BYTES = 1 << 28
_STATS_CHUNK = 1 << 22   # entries per row chunk of the column statistics
# Entries per row chunk normalised on the host: its float64 temporaries (512 KiB) stay in
# the CPU's caches (1M x 64 rows: 0.29 -> 0.13 s). Each row is normalised on its own, so
# the chunks do not change the result; the statistics' sums keep _STATS_CHUNK's.
_NORM_CHUNK = 1 << 16

# weight_decay="auto": below this many fit rows (and without validation nodes) the
# penalty matters most and the 45 fits of a cross-validation are cheap, so it is
# chosen on this grid; otherwise it is _DECAY (with many rows, small penalties keep the
# weak signal of noisy reports).
_AUTO_DECAY_ROWS = 500
_AUTO_DECAYS = tuple(float(w) for w in np.logspace(-5, -1, 9))
_AUTO_FOLDS = 5
_DECAY = 5e-5
_GIVEN = "the features given to MLPHead"   # NaN advice: a server step, no mechanism


def _chunk_rows(d, entries=None):
    """Rows per chunk of ``d`` features: ``entries`` (``_STATS_CHUNK``), at least one row."""
    return max(1, (_STATS_CHUNK if entries is None else entries) // max(d, 1))


def _check_rows(X, head):
    """Refuse rows of a GraphData (read and charged already) that are NaN, infinite or
    beyond float32's range, in which the head computes (inf, then NaN probabilities); an
    array input gets scikit-learn's ``check_array`` errors instead."""
    name = f"the features given to {type(head).__name__}"
    check_finite_features(X, name=name)
    check_float32_range(X, name=name)


def _store_map(n, order):
    """Map from the ``n`` positions to rows of a store holding the rows ``order`` (-1: absent)."""
    where = np.full(n, -1, dtype=np.intp)
    where[order] = np.arange(len(order))
    return where


def _arranged_block(blocks, positions):
    """``(start, stop)`` when the rows ``positions`` of an arranged store are one block
    of it, else ``None``; ``blocks`` is the store's memo (``None``: not arranged, so
    mini-batches, which gather their rows).

    An arranged full batch asks for the same two tensors (training, validation rows)
    every epoch: whether each is a block is read once (from the device, one wait),
    then the block is read in place (no gather of n x d values per epoch).
    """
    if blocks is None:
        return None
    seen = blocks.get(id(positions))
    if seen is None or seen[0] is not positions:
        p = positions
        block = (int(p[0]), int(p[-1]) + 1) if len(p) and (
            len(p) == 1 or bool((p.diff() == 1).all())) else None
        blocks[id(positions)] = seen = (positions, block)
    return seen[1]


class _Standardized:
    """Dense training rows normalised once before the epochs.

    The module's first layer (the input normalisation) is skipped on them, so
    an epoch does not normalise every row again (on Facebook's 4,714
    features that took longer than the layers themselves). The normalised
    copy is made on first use, in the order :meth:`arrange` gives (a full
    batch: the training rows, then the validation rows), so that an epoch
    reads each block in place instead of gathering its rows (on Facebook,
    gathering 11,000 x 4,714 values took longer than the linear layer).
    """

    def __init__(self, X, norm, device):
        self._X, self._norm, self.device = np.asarray(X), norm, device
        self.a = self.t = None
        self._blocks = None   # once arranged: _arranged_block's memo

    def arrange(self, order):
        """Store the rows ``order`` (positions of ``X``), in that order; returns the map
        from positions of ``X`` to rows of the store (-1: not stored)."""
        self._build(np.asarray(order, dtype=np.intp))
        self._blocks = {}
        return _store_map(self._n, order)

    def _build(self, order=None):
        X, self._X = self._X, None
        self._n = X.shape[0]
        n = X.shape[0] if order is None else len(order)
        Z = np.empty((n, X.shape[1]), dtype=np.float32)
        step = _chunk_rows(X.shape[1], _NORM_CHUNK)
        for s in range(0, n, step):
            Z[s:s + step] = self._norm(X[s:s + step] if order is None else X[order[s:s + step]])
        self.a = Z if self.device.type == "cpu" else None
        self.t = torch.as_tensor(Z, device=self.device)

    def rows(self, positions):
        if self._X is not None:
            self._build()
        block = _arranged_block(self._blocks, positions)
        if block is not None:   # an arranged full batch: a block of rows, in place
            return self.t[block[0]:block[1]]
        if self.a is not None:
            # numpy's take gathers rows ~4x faster than torch indexing
            return torch.from_numpy(np.take(self.a, positions.numpy(), axis=0))
        return self.t[positions]


class _DeviceStandardized:
    """Dense training rows moved to an accelerator raw and normalised there, once.

    The device path of :class:`_Standardized`: the column statistics and the
    normalisation (float64 arithmetic, stored as float32) run on the device, so
    the host only gathers and sends the float32 rows (on CUDA the host's float64
    passes over the rows were about half of a large head's fit). Rows of
    features already on the device (:meth:`of_rows`) are gathered there, once,
    in the order :meth:`arrange` gives: a single copy of the training rows.
    """

    def __init__(self, X, device):
        self.device, self._blocks, self._src = device, None, None
        X = np.asarray(X)
        self.t = torch.empty(X.shape, dtype=torch.float32, device=device)
        self._n, self._step = X.shape[0], _chunk_rows(X.shape[1])
        with warnings.catch_warnings():
            # rows of a read-only input (a memory map, a mechanism's output) are only read
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            for s in range(0, X.shape[0], self._step):
                self.t[s:s + self._step] = torch.as_tensor(
                    np.asarray(X[s:s + self._step], dtype=np.float32), device=device)

    @classmethod
    def of_rows(cls, T, rows):
        """The rows ``rows`` (a tensor of positions) of ``T``, all nodes' features on the
        device, gathered when first needed (NaN or inf raise in :meth:`column_stats`)."""
        self = cls.__new__(cls)
        self.device, self._blocks, self.t, self._norm = T.device, None, None, None
        self._src, self._rows = T, rows
        self._n, self._step = len(rows), _chunk_rows(T.shape[1])
        return self

    def _chunk(self, s, order=None):
        """Rows ``s:s + step`` (of ``order`` when given) as float32, from where they are."""
        if self.t is not None:
            return self.t[s:s + self._step]
        at = self._rows[s:s + self._step] if order is None else self._rows[order[s:s + self._step]]
        return self._src[at].float()   # float32, as rows sent from the host are

    def _chunks(self):
        return (self._chunk(s).double() for s in range(0, self._n, self._step))

    def column_stats(self):
        """Column mean and standard deviation, as :func:`_column_stats` computes them."""
        n = self._n   # at least 2 (MLPHead.fit)
        mean = sum(c.sum(0) for c in self._chunks()) / n
        if self._src is not None and not bool(mean.isfinite().all()):
            check_finite_features(self._src[self._rows], name=_GIVEN)   # raises, naming the row
        var = sum(((c - mean) ** 2).sum(0) for c in self._chunks()) / n
        return _scale_stats(mean.cpu().numpy(), var.cpu().numpy())

    def normalize(self, norm):
        """Apply ``norm`` (float64 tensor -> tensor) to every row, in place (rows still
        to be gathered: as they are gathered)."""
        if self.t is None:
            self._norm = norm
            return
        for s in range(0, self._n, self._step):
            self.t[s:s + self._step] = norm(self.t[s:s + self._step].double())

    def _gather(self, order=None):
        """The rows from the device's features (in ``order``), normalised, as ``t``."""
        t = torch.empty((self._n, self._src.shape[1]), dtype=torch.float32, device=self.device)
        for s in range(0, self._n, self._step):
            c = self._chunk(s, order)
            t[s:s + self._step] = c if self._norm is None else self._norm(c.double())
        self.t, self._src, self._rows = t, None, None

    def arrange(self, order):
        """:meth:`_Standardized.arrange`, the rows reordered on the device."""
        where = _store_map(self._n, order)
        order = torch.as_tensor(np.asarray(order, dtype=np.intp), device=self.device)
        if self.t is None:
            self._gather(order)
        else:
            self.t = self.t[order]
        self._blocks = {}   # _arranged_block's memo
        return where

    def rows(self, positions):
        if self.t is None:
            self._gather()
        block = _arranged_block(self._blocks, positions)
        return self.t[positions] if block is None else self.t[block[0]:block[1]]


class _HeldRows:
    """Rows ``rows`` of ``T`` (all nodes' features on the device) to predict, gathered
    chunk by chunk as float32 (as a host array would be sent): no copy of them all."""

    def __init__(self, T, rows):
        # all nodes finite (one pass, no copy) or the rows themselves: else the error
        if not torch_sum_is_finite(T):
            check_finite_features(T[rows], name=_GIVEN)
        self.T, self.index, self.shape = T, rows, (len(rows), T.shape[1])

    def __getitem__(self, key):   # a slice of the rows
        return self.T[self.index[key]].float()


class _SparseRows:
    """CSR rows kept on the CPU; densified per batch on the target device."""

    def __init__(self, X, device):
        self.X = sp.csr_matrix(X, dtype=np.float32)
        self.device = device

    def rows(self, positions):
        idx = positions.detach().cpu().numpy()
        return torch.as_tensor(self.X[idx].toarray(), device=self.device)


class _Standardize(nn.Module):
    """``(x - mean) / scale``, statistics fixed at fit time (buffers, pickled with the module)."""

    def __init__(self, mean, scale):
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
        self.register_buffer("scale", torch.as_tensor(scale, dtype=torch.float32))

    def forward(self, x):
        return (x - self.mean) / self.scale


class _CenterL2(nn.Module):
    """``(x - mean) / ||x - mean||``: columns centred (mean fixed at fit), rows of unit norm."""

    def __init__(self, mean):
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))

    def forward(self, x):
        x = x - self.mean
        return x / torch.linalg.vector_norm(x, dim=1, keepdim=True).clamp_min(1e-12)


_NORMALIZATIONS = ("l2", "standardize", None)


def _normalise_on(device):
    """Whether the training rows are normalised on ``device`` (an accelerator) itself."""
    return device.type != "cpu"


def _column_stats(X):
    """Column mean and standard deviation (1 for constant columns) of dense or CSR X."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        mean = np.asarray(X.mean(axis=0), dtype=np.float64).ravel()
        sq = np.asarray(X.multiply(X).mean(axis=0), dtype=np.float64).ravel()
        var = np.maximum(sq - mean ** 2, 0.0)
    else:
        # two passes over row chunks in float64: no float64 copy of all of X
        X = np.asarray(X)
        n = max(X.shape[0], 1)
        step = _chunk_rows(X.shape[1])
        mean = sum(X[s:s + step].sum(axis=0, dtype=np.float64)
                   for s in range(0, X.shape[0], step)) / n
        # the squares in one float64 buffer: a new array per chunk (32 MiB) is mapped
        # afresh by the allocator, and its page faults took as long as the arithmetic
        buf, var = np.empty((min(step, X.shape[0]),) + X.shape[1:]), 0
        for s in range(0, X.shape[0], step):
            B = buf[:min(step, X.shape[0] - s)]
            B[...] = X[s:s + step]
            B -= mean
            var = var + np.square(B, out=B).sum(axis=0)
        var = var / n
        mean, var = np.full(X.shape[1:], mean), np.full(X.shape[1:], var)  # 0 rows: scalars
    return _scale_stats(mean, var)


def _scale_stats(mean, var):
    """``(mean, std)`` with 1 as the scale of constant columns."""
    std = np.sqrt(var)
    return mean, np.where(std > 1e-12 * np.maximum(1.0, np.abs(mean)), std, 1.0)


class MLPHead(TorchClassifierBase):
    """Multi-layer perceptron classifier trained with Adam (PrivGE's classification head).

    Maps each node's (propagated, privatised) features to class probabilities,
    ``softmax(MLP(Z))``, trained with the cross-entropy loss. It reads only the
    features of the rows it is given and needs no graph, so it ends pipelines
    such as ``HDSMechanism -> PPRPropagation -> MLPHead``; it also accepts
    plain dense or scipy sparse arrays. The default head is linear
    (multinomial logistic regression) on centred, unit-norm rows.

    Read more in the :ref:`User Guide <mlp_head>`.

    Parameters
    ----------
    hidden_layer_sizes : tuple of int, default=()
        Width of each hidden layer; ``()`` gives multinomial logistic
        regression.
    normalization : {"l2", "standardize", None}, default="l2"
        ``"l2"``: centre each feature on its training mean, then scale each
        row to unit norm (embeddings, propagated reports). ``"standardize"``:
        each feature to zero mean and unit variance (tabular features).
        ``None``: the inputs as they are.
    activation : {"relu", "tanh", "elu", "gelu", "identity"}, default="relu"
        Non-linearity after each hidden layer.
    dropout : float in [0, 1), default=0.5
        Dropout probability after each hidden layer (the inputs are not
        dropped).
    lr : float, default=0.05
        Adam learning rate.
    weight_decay : float or "auto", default="auto"
        Adam L2 penalty. ``"auto"``: fitted on fewer than 500 rows
        without ``validation``, chosen by a stratified 5-fold
        cross-validation (accuracy) of the fit rows among nine values from
        1e-5 to 0.1 (as many folds as the smallest class has rows, when that
        is 2 to 4); otherwise 5e-5, also when a class has a single fit row
        (with a warning). See :ref:`mlp_head`.
    epochs : int, default=300
        Maximum number of passes over the training rows.
    batch_size : int or None, default=None
        Mini-batch size; ``None`` trains on all rows at once (full batch).
    early_stopping : bool or "auto", default="auto"
        Stop when the validation loss has not improved for ``patience``
        epochs and restore the best weights. ``"auto"``: with ``validation``,
        or when ``fit`` gets at least 1,000 rows.
    validation : array-like or None, default=None
        Validation nodes (positions or a boolean mask over the graph's nodes),
        fitted with the training nodes; ``None``: hold out
        ``validation_fraction`` of the fit rows. See :ref:`validation_nodes`.
    validation_fraction : float in (0, 1), default=0.1
        Share of the fit rows held out for early stopping without
        ``validation`` (stratified when every class has two rows).
    patience : int or None, default=100
        Epochs without improvement of the validation loss before stopping;
        ``None``: never stop (all ``epochs`` run; the best validated epoch is
        still kept).
    device : {"auto", "cpu", "cuda", ...}, default="auto"
        Torch device; ``"auto"`` uses CUDA when available.
    random_state : int, RandomState, Generator or None, default=None
        Seeds the weight initialisation, dropout, batch order and validation
        split. An int makes ``fit`` reproducible.
    verbose : int, default=0
        Log the training (and validation) loss after every epoch (logger
        ``skldp.models``, INFO).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels (any sortable type, e.g. strings).
    n_features_in_ : int
        Number of input features.
    module_ : torch.nn.Sequential
        The trained network (input normalisation, linear layers), kept on
        the CPU.
    n_iter_ : int
        Epochs run.
    loss_curve_ : list of float
        Mean training loss per epoch.
    validation_scores_ : list of float
        Validation loss per epoch (empty without early stopping).
    best_epoch_ : int or None
        Epoch (0-based) whose weights were kept when early stopping.
    weight_decay_ : float
        The L2 penalty of the fit (the chosen one with ``"auto"``).

    See Also
    --------
    skldp.propagation.PPRPropagation : The propagation step before the head in PrivGE.
    skldp.central.DPMLPClassifier : An MLP trained with DP-SGD.

    References
    ----------
    .. [1] Z. Li, R.-H. Li, M. Liao, F. Jin and G. Wang, "Privacy-Preserving
       Graph Embedding based on Local Differential Privacy", CIKM 2024,
       eq. (21) and §4.1.

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.models import MLPHead
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 4)); y = (X[:, 0] > 0).astype(int)
    >>> clf = MLPHead(hidden_layer_sizes=(16,), epochs=50, random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _parameter_constraints = {
        **TorchClassifierBase._parameter_constraints,
        "hidden_layer_sizes": ["array-like", Count(1)],   # entries checked in _setup_fit
        "normalization": [StrOptions({n for n in _NORMALIZATIONS if n}), None],
        "activation": [StrOptions(set(_ACTIVATIONS))],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "weight_decay": [Interval(Real, 0, np.inf, closed="left"), StrOptions({"auto"})],
    }

    #: It reads the features of its rows only, never the adjacency (see note_edge_read).
    _reads_adjacency = False

    def __init__(self, hidden_layer_sizes=(), *, normalization="l2", activation="relu",
                 dropout=0.5, lr=0.05, weight_decay="auto", epochs=300, batch_size=None,
                 early_stopping="auto", validation=None, validation_fraction=0.1, patience=100,
                 device="auto", random_state=None, verbose=0):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.normalization = normalization
        self.activation = activation
        self.dropout = dropout
        self.lr = lr
        self.weight_decay = weight_decay
        self.epochs = epochs
        self.batch_size = batch_size
        self.early_stopping = early_stopping
        self.validation = validation
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------ validation
    def _hidden_sizes(self):
        sizes = self.hidden_layer_sizes
        if isinstance(sizes, numbers.Integral):
            sizes = (sizes,)
        try:
            sizes = tuple(sizes)
        except TypeError:
            raise ValueError("hidden_layer_sizes must be a tuple of positive integers, got "
                             f"{self.hidden_layer_sizes!r}.") from None
        if not all(isinstance(h, numbers.Integral) and not isinstance(h, bool) and h >= 1
                   for h in sizes):
            raise ValueError("hidden_layer_sizes must be a tuple of positive integers, got "
                             f"{self.hidden_layer_sizes!r}.")
        return tuple(int(h) for h in sizes)

    def _setup_fit(self):
        self._hidden_sizes()
        super()._setup_fit()

    # ----------------------------------------------------------------- hooks
    def _prepare(self, X, device):
        if isinstance(X, GraphData):
            # Only the view's own rows are read: the head needs no graph. Features a
            # step left on this device (PPRPropagation on CUDA) are gathered there.
            T = X._features_on(device) if _normalise_on(device) else None
            if T is not None:
                return self._prepare_held(T, torch.as_tensor(X.rows, device=device))
            X = X.features[X.rows]
            _check_rows(X, self)
        n, d = X.shape
        if sp.issparse(X) and n * d * 4 <= _DENSE_BYTES:
            X = X.toarray()   # densified once: the same statistics as a dense input
        fitting = not hasattr(self, "module_") or getattr(self, "_fitting", False)
        if fitting and not sp.issparse(X) and _normalise_on(device):
            data = _DeviceStandardized(X, device)
            self._stats = data.column_stats()  # training rows only; consumed by _build_module
            data.normalize(self._normalize_tensor)
            return data, np.arange(n)
        if fitting:
            self._stats = _column_stats(X)  # training rows only; consumed by _build_module
        if sp.issparse(X):
            data = _SparseRows(X, device)
        elif fitting:
            data = _Standardized(X, self._normalize_rows, device)
        else:
            data = torch.as_tensor(np.asarray(X, dtype=np.float32), device=device)
        return data, np.arange(n)

    def _prepare_held(self, T, rows):
        """:meth:`_prepare` of the rows ``rows`` of ``T``, features held on the device."""
        if not hasattr(self, "module_") or getattr(self, "_fitting", False):
            data = _DeviceStandardized.of_rows(T, rows)
            self._stats = data.column_stats()  # training rows only; consumed by _build_module
            data.normalize(self._normalize_tensor)
        else:
            data = _HeldRows(T, rows)
        return data, np.arange(len(rows))

    def _input_norm(self):
        """The first layer: the input normalisation with the training rows' statistics."""
        mean, scale = self._stats
        if self.normalization == "standardize":
            return _Standardize(mean, scale)
        return _CenterL2(mean) if self.normalization == "l2" else nn.Identity()

    def _normalize_rows(self, X):
        """:meth:`_input_norm` on a numpy block, in float64 (the training rows, once)."""
        mean, scale = self._stats
        if self.normalization is None:
            return X
        Z = X - mean   # a float64 copy: divided in place
        if self.normalization == "standardize":
            Z /= scale
        else:   # "l2"
            Z /= np.maximum(np.linalg.norm(Z, axis=1, keepdims=True), 1e-12)
        return Z

    def _normalize_tensor(self, T):
        """:meth:`_normalize_rows` on a float64 tensor, stored back as float32."""
        mean, scale = (torch.as_tensor(v, dtype=torch.float64, device=T.device)
                       for v in self._stats)
        if self.normalization == "standardize":
            T = (T - mean) / scale
        elif self.normalization == "l2":
            T = T - mean
            T = T / torch.linalg.vector_norm(T, dim=1, keepdim=True).clamp_min(1e-12)
        return T.float()

    def _build_module(self, n_features, n_classes):
        act = _ACTIVATIONS[self.activation]
        layers, width = [self._input_norm()], n_features
        for h in self._hidden_sizes():
            layers += [nn.Linear(width, h), act(), Dropout(self.dropout)]
            width = h
        layers += [nn.Linear(width, n_classes)]
        return nn.Sequential(*layers)

    def _train(self, module, opt, data, index_t, targets, local, val, rng, device):
        if isinstance(data, (_Standardized, _DeviceStandardized)) and (
                self.batch_size is None or self.batch_size >= len(local)):
            # A full batch reads the same rows every epoch: store them in that order
            order = local if val is None else np.concatenate([local, val])
            where = data.arrange(index_t.cpu().numpy()[order])
            index_t = torch.as_tensor(where[index_t.cpu().numpy()], device=device)
        return super()._train(module, opt, data, index_t, targets, local, val, rng, device)

    def _forward(self, module, data, positions):
        if isinstance(data, _SparseRows):
            if module.training or len(positions) <= _CHUNK_ROWS:
                return module(data.rows(positions))
            return torch.cat([module(data.rows(positions[s:s + _CHUNK_ROWS]))
                              for s in range(0, len(positions), _CHUNK_ROWS)])
        if isinstance(data, (_Standardized, _DeviceStandardized)):
            # the layers after the input normalisation, in turn (module[1:] would build
            # a new Sequential at every step: a tenth of a small fit's host time)
            h = data.rows(positions)
            for layer in itertools.islice(module, 1, None):
                h = layer(h)
            return h
        return module(data[positions])

    def _batch_chunk_rows(self, n_rows):
        width = max(self._hidden_sizes() + (len(self.classes_),))
        return max(1, _ACTIVATION_BYTES // (4 * width))

    def _fit_weight_decay(self, X, y, seed):
        self.weight_decay_ = (self._choose_weight_decay(X, y, seed)
                              if self.weight_decay == "auto" else float(self.weight_decay))
        return self.weight_decay_

    def _choose_weight_decay(self, X, y, seed):
        """``weight_decay="auto"``: cross-validated on few fit rows, else the fixed default."""
        n = X.shape[0]
        if self.validation is not None or n >= _AUTO_DECAY_ROWS:
            return _DECAY
        # every class in every training fold: fewer folds for a class of 2 to 4 rows
        classes, counts = np.unique(np.asarray(y), return_counts=True)
        folds = min(_AUTO_FOLDS, int(counts.min()))
        if folds < 2:
            one = classes[np.argmin(counts)]
            one = one.item() if isinstance(one, np.generic) else one
            warnings.warn(
                f"{type(self).__name__}: weight_decay='auto' is not cross-validated: class "
                f"{one!r} has a single fit row, which no fold can both train on and "
                f"validate; weight_decay_ is {_DECAY}. Pass a number to set it.",
                UserWarning, stacklevel=7)
            return _DECAY
        from sklearn.base import clone
        from sklearn.model_selection import GridSearchCV, StratifiedKFold
        if isinstance(X, GraphData):
            X = X.features[X.rows]   # the rows alone: the folds need no graph
            _check_rows(X, self)
        cv_seed = stream_seed(seed, "weight_decay") % (1 << 32)
        # each candidate seeded alike, so that the comparison is of the penalty alone
        est = clone(self).set_params(weight_decay=_DECAY, random_state=cv_seed, verbose=0)
        cv = StratifiedKFold(folds, shuffle=True, random_state=cv_seed)
        # The fits as one batched training (a subclass may change the loss or the layers;
        # a large sparse input is densified batch by batch: fitted in turn)
        if type(self) is MLPHead and (not sp.issparse(X) or n * X.shape[1] * 4 <= _DENSE_BYTES):
            dense = X.toarray() if sp.issparse(X) else X   # as each fit densifies its rows
            scores = batched_decay_scores(est, check_feature_array(dense, dtype=np.float32), y,
                                          list(cv.split(dense, y)), _AUTO_DECAYS)
            if scores is not None:
                return _AUTO_DECAYS[int(np.argmax(scores))]   # GridSearchCV's: the first best
        search = GridSearchCV(est, {"weight_decay": list(_AUTO_DECAYS)}, cv=cv, refit=False,
                              error_score="raise")
        search.fit(X, y)
        return float(search.best_params_["weight_decay"])

    # ------------------------------------------------------------------- fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train on the rows of ``X`` (a GraphData view, dense or sparse array) with labels ``y``.

        Parameters
        ----------
        X : GraphData, array-like or sparse matrix of shape (n_rows, n_features)
            Training rows. On a GraphData view only the view's rows are read.
        y : array-like of shape (n_rows,)
            Class labels (any type; ``-1`` is rejected as "unlabelled").

        Returns
        -------
        self : MLPHead
        """
        # Once, here: the weight_decay="auto" search refits on y many times, and a column
        # vector would warn (DataConversionWarning) at each of those fits.
        from ..model_selection._node_splits import _label_column
        y = _label_column(y, warn=True, X=X)   # a list of strings keeps its NaN markers
        n = getattr(X, "shape", (None,))[0]
        if n == 1:
            raise ValueError("MLPHead needs at least two training rows, got n_samples=1.")
        if isinstance(X, GraphData):   # (arrays get scikit-learn's message)
            refuse_pairs(X, self)
            check_has_features(X, "MLPHead")   # before the validation split takes rows away
        self._fitting = True
        try:
            super().fit(X, y)
        finally:
            del self._fitting
            self.__dict__.pop("_stats", None)
        return self

    # --------------------------------------------------------------- predict
    def _logits(self, X):
        if isinstance(X, GraphData):   # node pairs: refused, as by fit (nothing read)
            refuse_pairs(X, self)
        check_feature_names(self, X)
        self._check_width(X)
        check_is_fitted(self, "module_")
        note_feature_read(self, X)   # raw features read here: in the clear, as at fit
        if not isinstance(X, GraphData):
            X = check_feature_array(X, dtype=np.float32)
            self._check_width(X)   # (rows given as a list have no shape before)
        device = resolve_device(self.device)
        # Inference in float64 on a copy: a row's scores do not depend on which
        # other rows are predicted with it (float32 kernels vary with batch shape).
        module = copy.deepcopy(self.module_).double().to(device).eval()
        data, index = self._prepare(X, device)
        with torch.no_grad():
            if isinstance(data, _SparseRows):
                outs = [module(data.rows(torch.as_tensor(index[s:s + _CHUNK_ROWS],
                                                         device=device)).double())
                        for s in range(0, len(index), _CHUNK_ROWS)]
                out = (torch.cat(outs) if outs
                       else torch.zeros((0, len(self.classes_)), device=device))
            else:
                # in row chunks, each chunk's scores to the host: a large prediction's
                # float64 temporaries stay small (at 5M rows of 128 features, four
                # whole-matrix copies are about 18 GB) and its scores leave the device
                step = max(_CHUNK_ROWS, _chunk_rows(data.shape[1]))
                out = np.empty((data.shape[0], len(self.classes_)))
                for s in range(0, data.shape[0], step):
                    out[s:s + step] = module(data[s:s + step].double()).cpu().numpy()
                return out
        return out.cpu().numpy()

    def _check_width(self, X):
        """Refuse rows of another width than the fit's (scikit-learn's message)."""
        n_in = getattr(self, "n_features_in_", None)
        shape = getattr(X, "shape", None)
        if n_in is not None and shape is not None and len(shape) == 2 and shape[1] != n_in:
            raise ValueError(f"X has {shape[1]} features, but {type(self).__name__} is "
                             f"expecting {n_in} features as input.")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.non_deterministic = self.random_state is None
        return tags
