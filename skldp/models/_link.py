"""Link predictors on node pairs: VGAE and Hadamard edge-feature heads.

VGAE as in Sajadmanesh & Gatica-Perez (arXiv 2020), the Hadamard head as in
Li et al. (CIKM 2024).
"""

import warnings
from numbers import Real

import numpy as np
import torch
import torch.nn.functional as F
from scipy.special import expit
from sklearn.base import BaseEstimator, _fit_context
from sklearn.metrics import roc_auc_score
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_consistent_length, check_is_fitted
from torch import nn

from .._graph_data import reads_users_data
from .._torch import (
    Adam,
    Dropout,
    EarlyStopper,
    build_module,
    current_generator,
    default_sync_every,
    dropout,
    dropout_generator,
    host_to_device,
    module_on,
    resolve_device,
    stream_seed,
    to_torch_dense,
    torch_generator,
    train,
)
from .._torch._device import DEVICE_CONSTRAINT
from ..base import (
    GraphClassifierMixin,
    charge_clear_read,
    edges_collected,
    note_edge_read,
    note_feature_read,
)
from ..model_selection._edge_splits import PairData, edge_codes, edge_lookup
from ..model_selection._validation import validation_rows, validation_split
from ..utils._arrays import distinct
from ..utils._logging import verbose_logger
from ..utils._random import training_seed
from ..utils.validation import (
    RANDOM_STATE_CONSTRAINT,
    Count,
    Interval,
    check_feature_names,
    check_finite_features,
    check_has_features,
    check_int,
    record_feature_names,
)
from ._base import gather_rows
from ._gnn import (
    _DENSE_PROPAGATION_MAX,
    _DENSE_PROPAGATION_ON,
    _GCNConv,
    _spmm,
    aggregated_features,
    feature_tensor,
    graph_tensors,
    offset_sparse_features,
)

__all__ = ["VGAELinkPredictor", "HadamardLinkPredictor"]


def _check_pairdata(X, owner):
    if not isinstance(X, PairData):
        raise TypeError(f"{type(owner).__name__} predicts links between node pairs: pass a "
                        f"skldp.model_selection.PairData (e.g. from random_edge_split), not "
                        f"{type(X).__name__}.")
    return X


def _edges_among(X, pairs):
    """Whether each pair ``(u, v)`` is an edge of the graph of ``X``, in either orientation.

    A lookup of the pairs' entries in the CSR adjacency (scipy's ``csr_sample_values``:
    no copy of the graph, a binary search per pair in a canonical adjacency); all
    ``False`` when the graph is unknown (``adjacency=None``).
    """
    A = X._store.adjacency
    pairs = np.asarray(pairs)
    if A is None or not len(pairs):
        return np.zeros(len(pairs), dtype=bool)
    u, v = pairs[:, 0], pairs[:, 1]
    return (np.asarray(A[u, v]).ravel() != 0) | (np.asarray(A[v, u]).ravel() != 0)


class _LinkPredictorBase(GraphClassifierMixin, BaseEstimator):
    """Shared input handling: PairData rows, binary labels, validation pairs, ROC-AUC score."""

    _predicts_pairs = True   # (check_graph_data refuses pairs to the node classifiers)

    #: The constraints of the parameters both link predictors have (subclasses add theirs).
    _parameter_constraints = {
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "lr": [Interval(Real, 0, np.inf, closed="neither")],
        "weight_decay": [Interval(Real, 0, np.inf, closed="left")],
        "epochs": [Count(1)],
        "patience": [Count(1)],
        "early_stopping": ["boolean", StrOptions({"auto"})],
        "validation": ["array-like", None],   # check_validation checks what it names
        "validation_fraction": [Interval(Real, 0, 1, closed="both")],
        "device": DEVICE_CONSTRAINT,
        "random_state": RANDOM_STATE_CONSTRAINT,
        "verbose": ["verbose"],
    }

    def _setup_fit(self):
        """The checks of several parameters together, after the declared ones."""
        if self.early_stopping and not 0 < self.validation_fraction < 1:
            raise ValueError("validation_fraction must be in (0, 1) when early_stopping=True, "
                             f"got {self.validation_fraction}.")

    def _check_before_reads(self, X, y):
        """``X`` (PairData) and ``y`` (as many labels), with the parameters and the
        ``validation`` pairs checked: all public, so fit checks them before it notes any
        read and a refused fit charges nothing."""
        check_has_features(X, type(self).__name__)   # one score for every pair: refused
        X = _check_pairdata(X, self)
        self._setup_fit()
        y = self._check_labels(y, len(X))   # their number: the call's own argument (free)
        validation_rows(X, self.validation, self.early_stopping, self)
        self._check_graph(X)
        record_feature_names(self, X)   # the columns' names: public
        return X, y

    def _check_graph(self, X):
        """Refuse a graph the model cannot use, before any read is noted (a refusal that
        tells something of the users' data is charged by ``refusal_is_read``)."""

    def _encode_pairs(self, X, y):
        """The labels ``y`` of the pairs ``X`` (both from :meth:`_check_before_reads`)
        encoded, their read charged first."""
        # the labels say which pairs are edges: charged before any refusal of their values
        self._note_label_read(X)
        self._check_pair_labels(y)
        y_enc = self._encode_labels(y, len(X))
        if len(self.classes_) != 2:
            raise ValueError(f"link prediction needs two classes (non-edge, edge), got "
                             f"{len(self.classes_)}: {self.classes_!r}.")
        self._check_pair_conflicts(X, y_enc)
        return X, y_enc

    def _check_pair_labels(self, y):
        """Refuse unlabelled markers (a negative number, NaN, None; e.g. -1/+1 labels):
        every pair is an edge or not."""
        from ..model_selection._node_splits import _labelled_mask

        unlabelled = ~_labelled_mask(y)
        if not unlabelled.any():
            return
        given = list(dict.fromkeys(y.tolist()))
        try:
            given = sorted(given)
        except TypeError:   # labels that do not compare (None among strings): first seen
            pass
        shown = repr(given[:5])[:-1] + (", ...]" if len(given) > 5 else "]")
        raise ValueError(
            f"{type(self).__name__}: pair labels must be 0 (non-edge) or 1 (edge), or two "
            f"labels whose sorted order puts the edge label last; got the labels {shown}, "
            f"where {int(unlabelled.sum())} pair(s) carry a marker of an unlabelled row (a "
            "negative number, NaN or None). For -1/+1 labels pass (np.asarray(y) > 0)"
            ".astype(int).")

    def _check_pair_conflicts(self, X, y_enc):
        """Refuse an unordered pair labelled both edge and non-edge (in either orientation);
        the labels' read is charged before (a refusal tells which pair they disagree on)."""
        pairs = np.asarray(X.pairs, dtype=np.int64)
        lo, hi = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
        codes = lo * X.n_nodes + hi
        both = np.intersect1d(codes[y_enc == 1], codes[y_enc == 0])
        if not len(both):
            return
        first = int(np.flatnonzero(np.isin(codes, both))[0])
        same = np.flatnonzero(codes == codes[first])
        other = int(same[y_enc[same] != y_enc[first]][0])
        (u, v), (c0, c1) = pairs[first].tolist(), self.classes_.tolist()
        raise ValueError(
            f"{type(self).__name__}: {len(both)} pair(s) are labelled both edge and "
            f"non-edge; the pair ({u}, {v}) is labelled both edge ({c1!r}) and non-edge "
            f"({c0!r}): rows {first} and {other} of X ((u, v) and (v, u) are one pair). "
            "Label each pair once: draw the non-edges among the pairs that are not edges "
            "(skldp.model_selection.sample_non_edges, or random_edge_split).")

    def _note_label_read(self, X):
        """Charge the users at the ends of the fit pairs a read of their edges in the clear.

        The labels ``y`` say which pairs are edges. When an edge mechanism collected the
        graph the model trains on (``EdgeRR`` before it), the edges are meant to be
        private, but labels read from the users' true graph (``random_edge_split`` of
        the raw graph, or pairs of unknown origin) hand the true edges of those pairs to
        the model: epsilon inf for the users at both ends, refused under a budget. Pairs
        labelled from the collected graph itself (``random_edge_split`` of the mechanism's
        output) read nothing more. Without an edge mechanism the graph is taken as given
        to the server, as documented (docs/privacy.rst), and nothing is charged.
        """
        st = X._store
        if not edges_collected(st.adjacency_origin):
            return
        labels_from = X._labels()
        if labels_from is not None and not reads_users_data(labels_from):
            return   # labelled from the collected reports: post-processing
        keys = X.node_keys[distinct(X.pairs)]
        charge_clear_read(self, X, "edges", keys, (
            f"{type(self).__name__} would train on pair labels read from the users' true "
            f"graph (or of unknown origin: pairs the caller built) for {len(keys)} user(s) "
            "whose edges an edge mechanism collected: it reads those edges in the clear "
            "(epsilon=inf)",
            "Nothing was fitted. Label the pairs from the collected graph instead: split the "
            "edge mechanism's output, random_edge_split(EdgeRR(...).fit_transform(G)), and "
            "leave the edge mechanism out of the pipeline."))

    def _split_validation(self, X, y_enc, seed):
        """Training and validation (pairs, labels): the fit pairs named by ``validation``, or a
        stratified ``validation_fraction`` of them (``None, None`` without early stopping)."""
        tr, va = validation_split(X, y_enc, validation=self.validation,
                                  early_stopping=self.early_stopping,
                                  validation_fraction=self.validation_fraction, seed=seed,
                                  owner=self)
        pairs = X.pairs
        if va is None:
            return pairs[tr], y_enc[tr], None, None
        if self.validation is not None:
            # the pairs named by ``validation`` are held out: none should be an edge of the
            # training graph (a share held out by ``validation_fraction`` is training pairs,
            # edges by construction, and is not checked)
            self._warn_edges(X, pairs[va], "validation")
        return pairs[tr], y_enc[tr], pairs[va], y_enc[va]

    def _warn_edges(self, X, pairs, what="scored"):
        """A ``UserWarning`` when some of ``pairs`` (those scored, or the ``validation``
        pairs at fit) are edges of the graph of ``X``: a pair one predicts is not an edge
        of the graph given, and a held-out edge left in it leaks to the model."""
        k = int(np.count_nonzero(_edges_among(X, pairs)))
        if not k:
            return
        name, m = type(self).__name__, len(pairs)
        collected = edges_collected(X._store.adjacency_origin)
        if collected:
            noun = "pairs scored" if what == "scored" else "validation pairs"
            head = (f"{name}: {k} of the {m} {noun} are edges of the graph an edge mechanism "
                    "collected (PairData.graph), and the model sees those edges.")
        elif what == "validation":
            head = (f"{name}: {k} of the {m} validation pairs are edges of the graph it is "
                    "fitted on. Validation pairs are held out: an edge left in the graph is "
                    "seen in training (by the encoder, or by the propagation that made the "
                    "features), so early stopping judges the model on edges it saw.")
        else:
            head = (f"{name}: {k} of the {m} pairs scored are edges of the graph they are "
                    "given on (PairData.graph). A pair one predicts is not an edge of that "
                    "graph: a held-out (test) edge left in it is seen by the model (its "
                    "encoder, or the propagation that made the features) and its score is "
                    "optimistic.")
        tail = (" Give the pairs over the training graph, with the held-out pairs removed: "
                "the PairData of random_edge_split live on it.")
        if collected:
            tail += (" On edges an edge mechanism collected, split its output "
                     "(random_edge_split(EdgeRR(...).fit_transform(G))) rather than "
                     "randomizing the training graph in the pipeline, where random edges join "
                     "some of the pairs.")
        warnings.warn(head + tail, UserWarning, stacklevel=3)

    def _finish_training(self, module, result):
        """The fitted attributes (the best validated weights are already restored)."""
        self.n_iter_ = result.n_iter
        self.loss_curve_ = result.loss_curve
        self.validation_scores_ = result.validation_scores
        self.best_epoch_ = result.best_epoch
        self.module_ = module.cpu().eval()
        return self

    def _epoch_logger(self):
        """``log`` of :func:`~skldp._torch.train`: one INFO line per epoch."""
        logger, name = verbose_logger(__name__), type(self).__name__

        def log(epoch, loss, score, seconds):
            msg = f"epoch {epoch + 1} loss {loss:.4f}"
            if score is not None:
                msg += f" val_loss {score:.4f}"
            logger.info("[%s] %s (%.2fs)", name, msg, seconds)
        return log

    def _check_fitted_pairs(self, X):
        """``X`` as PairData with as many node features as at fit time; raw node features
        are charged as read in the clear (``note_feature_read``), as ``fit`` does."""
        check_is_fitted(self, "module_")
        X = _check_pairdata(X, self)
        check_feature_names(self, X)   # names as at fit (public): before the reads
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        self._check_graph(X)
        # every prediction path reads the node features here: raw ones are read in the
        # clear, as at fit (once per graph: the ledger remembers the graph's token)
        note_feature_read(self, X)
        note_edge_read(self, X)   # the edges it reads (charged when due)
        return X

    def predict_proba(self, X):
        """Probability of each pair being a non-edge / an edge.

        Parameters
        ----------
        X : PairData
            Pairs over the graph the predictor was fitted on.

        Returns
        -------
        proba : ndarray of shape (n_pairs, 2)
            Columns follow ``classes_`` (``classes_[1]`` is "edge").
        """
        s = self.decision_function(X)
        # each column its own logistic: exact at large |s|, where 1 - p rounds to 0
        return np.stack([expit(-s), expit(s)], axis=1)

    def score(self, X, y, sample_weight=None):
        """ROC-AUC of :meth:`decision_function` against ``y`` (positive class ``classes_[1]``).

        This is the link prediction metric of Sajadmanesh & Gatica-Perez (2020)
        and Li et al. (2024); it replaces the accuracy of
        :class:`~sklearn.base.ClassifierMixin`.

        Parameters
        ----------
        X : PairData
            Pairs to score.
        y : array-like of shape (n_pairs,)
            Their labels (``classes_[1]`` marks edges).
        sample_weight : array-like of shape (n_pairs,), default=None
            Weights of the pairs.

        Returns
        -------
        auc : float
            Area under the ROC curve.

        Raises
        ------
        ValueError
            Labels not in ``classes_``, or a ``y`` without both classes.
        """
        check_is_fitted(self, "module_")
        X = _check_pairdata(X, self)
        y = np.asarray(y)
        # the numbers of pairs, labels and weights (the call's own) compared before the
        # scoring notes its reads, so that a refused score charges nothing
        check_consistent_length(X.pairs, y, sample_weight)
        unknown = ~np.isin(y, self.classes_)
        if unknown.any():
            raise ValueError(f"y has labels {list(dict.fromkeys(y[unknown].tolist()))[:5]} "
                             f"that are not in classes_ {self.classes_.tolist()}.")
        is_edge = y == self.classes_[1]
        if is_edge.all() or not is_edge.any():
            raise ValueError("ROC-AUC needs both edges and non-edges: y has "
                             + ("no pair." if not len(y) else
                                f"only the class {y.flat[0]!r}."))
        return float(roc_auc_score(is_edge, self.decision_function(X),
                                   sample_weight=sample_weight))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = False
        return tags


# ---------------------------------------------------------------------------------- VGAE
class _VGAEModule(nn.Module):
    """GCN -> BatchNorm -> ReLU -> (GCN_mu, GCN_logstd).

    Kipf & Welling 2016; layer sizes of Sajadmanesh & Gatica-Perez 2020, §5.
    """

    def __init__(self, n_in, hidden, out, batch_norm, dropout, variational):
        super().__init__()
        self.conv1 = _GCNConv(n_in, hidden)
        self.bn = nn.BatchNorm1d(hidden) if batch_norm else nn.Identity()
        self.conv_mu = _GCNConv(hidden, out)
        self.conv_logstd = _GCNConv(hidden, out) if variational else None
        self.dropout = dropout

    def forward(self, x, g, means_only=False):
        """``(mu, logstd)``; ``logstd`` is ``None`` for a GAE or with ``means_only``."""
        if x.layout == torch.strided:
            x = dropout(x, self.dropout, self.training)
        h = F.relu(self.bn(self.conv1(x, g)))
        h = dropout(h, self.dropout, self.training)
        if self.conv_logstd is None or means_only:
            return self.conv_mu(h, g), None
        # both heads in one product, one sparse product forward and back: on a GPU,
        # a third fewer launches for them (the weights are joined, not the layers)
        w = torch.cat([self.conv_mu.lin.weight, self.conv_logstd.lin.weight])
        b = torch.cat([self.conv_mu.lin.bias, self.conv_logstd.lin.bias])
        mu, logstd = _spmm(g, "a_sym", h @ w.t()).add_(b).split(self.conv_mu.lin.out_features,
                                                                 dim=1)
        return mu, logstd.clamp(max=10.0)


def _pair_logits(z, pairs):
    """Logits ``z_u . z_v`` of the pairs in the columns of a ``(2, m)`` tensor.

    Both ends are taken in one gather: one backward scatter (on CUDA, one sort of
    the index instead of two), and the two halves' gradients are joined by one stack.
    """
    a, b = gather_rows(z, pairs.reshape(-1)).view(2, -1, z.shape[1]).unbind(0)
    return (a * b).sum(dim=1)


def _positives_first(pairs, y):
    """The pairs as a ``(2, m)`` array, positives (``y > 0.5``) first, each side in its
    order, and the number of positives."""
    y = np.asarray(y)
    order = np.r_[np.flatnonzero(y > 0.5), np.flatnonzero(y <= 0.5)]
    return np.ascontiguousarray(np.asarray(pairs)[order].T), int((y > 0.5).sum())


class _BalancedBCE:
    """The mean BCE over the positive pairs plus the mean BCE over the negative pairs
    (PyG's reconstruction loss) of logits ordered positives first.

    One weighted sum (weights ``1 / n_pos`` and ``1 / n_neg``): no mask or index per
    side, and nothing read on the host. The targets and the side of each position
    are made once, for up to ``n_max`` logits.
    """

    def __init__(self, n_pos, n_max, device):
        self.n_pos = int(n_pos)
        self.is_pos = torch.arange(n_max, device=device) < self.n_pos
        self.targets = self.is_pos.float()

    def __call__(self, logits):
        m = logits.shape[0]
        n_neg = m - self.n_pos
        w = torch.where(self.is_pos[:m], 1.0 / max(self.n_pos, 1), 1.0 / max(n_neg, 1))
        return F.binary_cross_entropy_with_logits(logits, self.targets[:m], weight=w,
                                                  reduction="sum")


class _GaussianLatent(torch.autograd.Function):
    """``z = mu + eps * exp(logstd)`` and the loss's KL term, one autograd node.

    The KL divergence of ``N(mu, exp(logstd)^2)`` from ``N(0, 1)``, summed over the
    entries, times ``scale``: ``scale * sum(mu^2 + exp(2 logstd) - 2 logstd - 1)``.
    Its gradient is written out: a few kernels where autograd's graph of the same
    formulas launches about twenty (on a GPU, launches are what a small epoch costs).
    """

    @staticmethod
    def forward(ctx, mu, logstd, eps, scale):
        std = torch.exp(logstd)
        noise = eps * std
        var = std.mul_(std)
        kl = torch.addcmul(var, mu, mu).sub_(logstd, alpha=2).sum()
        ctx.save_for_backward(mu, noise, var)
        ctx.scale = scale
        return mu + noise, kl.sub_(mu.numel()).mul_(scale)

    @staticmethod
    def backward(ctx, grad_z, grad_kl):
        mu, noise, var = ctx.saved_tensors
        g2 = grad_kl * (2 * ctx.scale)   # d kl / d mu = g2 mu; d kl / d logstd = g2 (var - 1)
        grad_mu = torch.addcmul(grad_z, mu, g2)
        grad_logstd = torch.addcmul(grad_z * noise, var, g2).sub_(g2)
        return grad_mu, grad_logstd, None, None


class VGAELinkPredictor(_LinkPredictorBase):
    """Variational graph auto-encoder for link prediction (the link model of LPGNN).

    A GCN encoder on the training graph of the
    :class:`~skldp.model_selection.PairData` gives each node a Gaussian latent
    ``z``; the decoder scores a pair by ``sigmoid(z_u . z_v)``. On unbiased
    reports of a mechanism placed before it, the first GCN layer computes the
    estimate of the graph convolution of LPGNN. Prediction uses the latent
    means.

    Read more in the :ref:`User Guide <vgae>`.

    Parameters
    ----------
    hidden_size : int, default=32
        Width of the first GCN layer.
    embedding_size : int, default=16
        Dimension of the latent ``z``.
    batch_norm : bool, default=True
        Batch normalisation after the first GCN layer.
    variational : bool, default=True
        ``False`` gives the plain graph auto-encoder (GAE): no KL term, ``z = mu``.
    dropout : float, default=0.0
        Dropout on the (dense) input and the hidden layer.
    lr : float, default=0.01
        Adam learning rate.
    weight_decay : float, default=0.01
        Adam L2 penalty.
    epochs : int, default=500
        Maximum number of full-batch epochs.
    min_epochs : int, default=100
        Epochs before training may stop early. The validation checks start
        at epoch ``check_every``; the best check is kept, also one before.
    check_every : int, default=10
        Epochs between validation checks.
    patience : int, default=10
        Checks without improvement before stopping.
    negative_sampling : {"per_epoch", "given"}, default="per_epoch"
        ``"given"``: the negative pairs are the ``y == 0`` training pairs.
        ``"per_epoch"``: in addition, each epoch draws ``negative_ratio``
        times as many fresh non-edges of the training graph as positive pairs.
    negative_ratio : float, default=1.0
        Fresh non-edges per positive training pair and epoch (``"per_epoch"``).
    early_stopping : bool or "auto", default=True
        Keep the weights of the best validation check; stop after
        ``patience`` checks without improvement.
        ``"auto"``: as ``True`` with ``validation`` or when ``fit`` gets at
        least 1,000 pairs, else as ``False`` (``validation_fraction`` is
        checked as with ``True``).
    validation : array-like of shape (m, 2) or None, default=None
        Validation pairs (e.g. ``P_val.pairs``), fitted with the training
        pairs (``P_train.concat(P_val)``); ``None``: hold out
        ``validation_fraction`` of the fit pairs. See :ref:`validation_nodes`.
        These pairs are held out: ``fit`` warns (``UserWarning``) if some are
        edges of the graph it is given.
    validation_fraction : float, default=0.05
        Share of the fit pairs held out (stratified) without ``validation``.
    device : str, default="auto"
        "auto" uses CUDA when available.
    random_state : int, RandomState, Generator or None
        Seeds initialisation, the latent noise, negative sampling and the
        validation split. A ``RandomState`` or ``Generator`` gives the seed of
        one draw from it (hashed), so it advances at each fit.
    verbose : int, default=0
        Log the loss of every epoch.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the "edge" class.
    module_ : torch.nn.Module
        The trained encoder (on the CPU).
    n_features_in_ : int
    feature_names_in_ : ndarray of str objects
        Names of the node features, when the graph has ``feature_names``;
        scoring refuses other names.
    n_iter_ : int
        Epochs run.
    loss_curve_ : list of float
        Training loss per epoch.
    validation_scores_ : list of float
        Validation loss at each check.
    best_epoch_ : int or None

    See Also
    --------
    skldp.models.HadamardLinkPredictor : An MLP on the Hadamard product of node embeddings.
    skldp.model_selection.random_edge_split : Held-out edges and their pairs.

    References
    ----------
    .. [1] T. N. Kipf and M. Welling, "Variational Graph Auto-Encoders", NIPS
       Bayesian Deep Learning Workshop 2016, eqs. (1)-(3).
    .. [2] S. Sajadmanesh and D. Gatica-Perez, "When Differential Privacy Meets
       Graph Neural Networks", arXiv 2020, eq. (4), §5 and Table 4.

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.datasets import load_cora
    >>> from skldp.model_selection import random_edge_split
    >>> from skldp.models import VGAELinkPredictor
    >>> P_tr, P_va, P_te, y_tr, y_va, y_te = random_edge_split(load_cora().data,
    ...                                                        random_state=0)
    >>> vgae = VGAELinkPredictor(epochs=20, min_epochs=20, validation=P_va.pairs,
    ...                          random_state=0)
    >>> vgae.fit(P_tr.concat(P_va), np.r_[y_tr, y_va]).score(P_te, y_te) > 0.7
    True
    """

    _parameter_constraints = {
        **_LinkPredictorBase._parameter_constraints,
        "hidden_size": [Count(1)],
        "embedding_size": [Count(1)],
        "batch_norm": ["boolean"],
        "variational": ["boolean"],
        "min_epochs": [Count(0)],
        "check_every": [Count(1)],
        "negative_sampling": [StrOptions({"per_epoch", "given"})],
        "negative_ratio": [Interval(Real, 0, np.inf, closed="neither")],
    }

    def __init__(self, hidden_size=32, embedding_size=16, *, batch_norm=True, variational=True,
                 dropout=0.0, lr=0.01, weight_decay=0.01, epochs=500, min_epochs=100,
                 check_every=10, patience=10, negative_sampling="per_epoch",
                 negative_ratio=1.0, early_stopping=True, validation=None,
                 validation_fraction=0.05, device="auto",
                 random_state=None, verbose=0):
        self.hidden_size = hidden_size
        self.embedding_size = embedding_size
        self.batch_norm = batch_norm
        self.variational = variational
        self.dropout = dropout
        self.lr = lr
        self.weight_decay = weight_decay
        self.epochs = epochs
        self.min_epochs = min_epochs
        self.check_every = check_every
        self.patience = patience
        self.negative_sampling = negative_sampling
        self.negative_ratio = negative_ratio
        self.early_stopping = early_stopping
        self.validation = validation
        self.validation_fraction = validation_fraction
        self.device = device
        self.random_state = random_state
        self.verbose = verbose


    def _tensors(self, X, device):
        """The encoder's input and the graph's tensors.

        Without input dropout the input is fixed, and two exact forms of it save
        work: on a GPU the first layer's aggregation ``A X`` made once (an epoch's
        first layer is then one dense product, no sparse product forward and back),
        elsewhere the features as a constant row plus a sparse matrix when they are
        mostly constant by column (reports of sampling mechanisms, e.g. multi-bit:
        ``X W`` costs the sparse entries only).
        """
        G = X.graph   # (undirected: _check_graph refused a directed one before the reads)
        _, g = graph_tensors(G, device, "gcn", features=False)   # checks finite (once per graph)
        if self.dropout == 0:
            if device.type in _DENSE_PROPAGATION_ON:
                key = ("skldp.vgae_input", str(device))
                x = G.memo_get(key)
                if x is None:
                    x = feature_tensor(G, device)
                    if x.layout != torch.strided or x.numel() > _DENSE_PROPAGATION_MAX:
                        return x, g
                    G.memo_set(key, x)   # kept with the graph, as A X is: sent once
                return aggregated_features(G, x, g, "gcn", key), g   # A X beside X
            x = offset_sparse_features(G, device)
            if x is not None:
                return x, g
        return feature_tensor(G, device), g

    def _check_graph(self, X):
        # an undirected model: a pair's score is symmetric, and a non-edge is one both
        # ways. Checked before the reads are noted: a refused graph charges no read of
        # its features (the refusal, about the edges, is charged as require_symmetric says)
        X.graph.require_symmetric(type(self).__name__)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train the auto-encoder on the pairs of ``X`` (labels ``y``: edge / non-edge).

        Parameters
        ----------
        X : PairData
            Training (and ``validation``) pairs over the training graph, which
            must be undirected (a symmetric adjacency).
        y : array-like of shape (n_pairs,)
            Binary labels; ``classes_[1]`` (e.g. 1, the last in sorted order)
            marks edges. A ValueError if the labels read the other way round:
            fewer than half of the training pairs labelled ``classes_[1]`` are
            edges of the training graph and those labelled ``classes_[0]`` are
            edges more often (e.g. labels ``["nonedge", "edge"]``, whose sorted
            order is reversed), or if a pair (either orientation) has both labels.

        Returns
        -------
        self
        """
        X, y = self._check_before_reads(X, y)
        note_feature_read(self, X, fitting=True)   # raw features read here: in the clear
        note_edge_read(self, X, fitting=True)
        X, y_enc = self._encode_pairs(X, y)
        self.n_features_in_ = X.shape[1]
        seed = training_seed(self.random_state)
        rng = np.random.default_rng(seed)
        device = resolve_device(self.device)
        x, g = self._tensors(X, device)
        tr_pairs, tr_y, va_pairs, va_y = self._split_validation(X, y_enc, seed)
        n = X.n_nodes
        is_edge = edge_lookup(edge_codes(X.graph.adjacency), n)
        self._check_edge_class(tr_pairs, tr_y, n, is_edge)
        # positives first: the loss's sides are the logits' two ends, found with no index
        tr_pairs, n_pos = _positives_first(tr_pairs, tr_y)
        n_fresh = int(np.ceil(self.negative_ratio * n_pos))
        tp = torch.as_tensor(tr_pairs, device=device)
        fresh_each_epoch = self.negative_sampling == "per_epoch" and n_pos > 0
        if fresh_each_epoch:
            fresh_pairs = _fresh_non_edges(rng, n, is_edge, n_fresh, self.epochs, device)
        tr_loss = _BalancedBCE(n_pos, tp.shape[1] + (n_fresh if fresh_each_epoch else 0),
                               device)
        kl_scale = 0.5 / (n * n)   # the KL term: its mean over the n nodes, divided by n
        # Local generators only (init, dropout and the reparameterisation noise):
        # torch's global generator is neither read nor advanced.
        module = build_module(lambda: _VGAEModule(X.shape[1], self.hidden_size,
                                                  self.embedding_size, self.batch_norm,
                                                  self.dropout, self.variational),
                              torch_generator(stream_seed(seed, "init"))).to(device)
        opt = Adam(module.parameters(), lr=self.lr, weight_decay=self.weight_decay)

        def step(epoch):
            if not module.training:  # a toggle walks every submodule
                module.train()
            opt.zero_grad()
            mu, logstd = module(x, g)
            kl = None
            if logstd is None:
                z = mu
            else:  # reparameterisation, drawn from the fit's own generator
                eps = torch.randn(mu.shape, generator=current_generator(), device=mu.device,
                                  dtype=mu.dtype)
                z, kl = _GaussianLatent.apply(mu, logstd, eps, kl_scale)
            pairs = tp
            if fresh_each_epoch:
                pairs = torch.cat([tp, next(fresh_pairs)], dim=1)
            loss = tr_loss(_pair_logits(z, pairs))
            if kl is not None:
                loss = loss + kl
            loss.backward()
            opt.step()
            return loss

        validate = stopper = None
        if va_pairs is not None:
            va_pairs, n_va_pos = _positives_first(va_pairs, va_y)
            vp = torch.as_tensor(va_pairs, device=device)
            va_loss = _BalancedBCE(n_va_pos, vp.shape[1], device)

            def validate(epoch):
                module.eval()
                with torch.no_grad():
                    return va_loss(_pair_logits(module(x, g, means_only=True)[0], vp))

            stopper = EarlyStopper(list(module.state_dict().values()), self.patience,
                                   min_epochs=self.min_epochs,
                                   sync_every=default_sync_every(device))
        with dropout_generator(torch_generator(stream_seed(seed, "dropout"), device)):
            result = train(step, self.epochs, validate=validate, stopper=stopper,
                           check_every=self.check_every,
                           log=self._epoch_logger() if self.verbose else None)
        return self._finish_training(module, result)

    def _check_edge_class(self, pairs, y_enc, n, is_edge):
        """Refuse labels whose ``classes_[1]`` is not the edge class.

        The auto-encoder reconstructs the training graph, whose edges are the
        positive training pairs (``random_edge_split``). ``classes_[1]`` comes
        from the sorted labels, so labels such as ``["nonedge", "edge"]`` make
        the non-edges the positives and the model learns the opposite,
        silently. Refused when fewer than half of the ``classes_[1]`` pairs are
        edges and the ``classes_[0]`` pairs are edges more often: labels that
        read the other way round (pairs that are not edges on either side, as
        on a graph without the training edges, are left alone).
        """
        pairs, y_enc = np.asarray(pairs), np.asarray(y_enc)
        lo = np.minimum(pairs[:, 0], pairs[:, 1]).astype(np.int64)
        hi = np.maximum(pairs[:, 0], pairs[:, 1]).astype(np.int64)
        edge = is_edge(lo * n + hi) if len(pairs) else np.zeros(0, dtype=bool)
        pos, neg = edge[y_enc == 1], edge[y_enc == 0]
        if not len(pos) or not len(neg):
            return
        if 2 * pos.sum() < len(pos) and neg.mean() > pos.mean():
            classes = self.classes_.tolist()
            raise ValueError(
                f"{type(self).__name__}: only {int(pos.sum())} of the {len(pos)} training "
                f"pairs labelled classes_[1]={classes[1]!r} are edges of the training graph, "
                f"against {int(neg.sum())} of the {len(neg)} labelled {classes[0]!r}. "
                f"classes_ is {classes!r} (the sorted labels) and classes_[1] marks edges: "
                "pass 0/1 labels (1 = edge), or labels whose sorted order puts the edge "
                "label last.")

    def embed(self, X):
        """Node embeddings ``mu`` of all nodes of ``X``'s graph.

        Parameters
        ----------
        X : PairData
            Pairs over a graph; only the graph is used.

        Returns
        -------
        z : torch.Tensor of shape (n_nodes, embedding_size)
            The encoder's means, on the estimator's device.
        """
        X = self._check_fitted_pairs(X)
        device = resolve_device(self.device)
        x, g = self._tensors(X, device)
        module = module_on(self.module_, device)
        with torch.no_grad():
            z = module(x, g, means_only=True)[0]
        return z

    def decision_function(self, X):
        """Edge logits of the pairs of ``X``: inner products :math:`z_u^T z_v`.

        Parameters
        ----------
        X : PairData
            Pairs over the graph the predictor was fitted on (the training
            graph, held-out edges removed).

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
            Logit of ``classes_[1]`` ("edge") for each pair.

        Warns
        -----
        UserWarning
            If some of the pairs are edges of ``X``'s graph (either
            orientation): a held-out edge left in the graph the encoder reads.
            Every scoring method (``predict``, ``predict_proba``, ``score``)
            goes through this one.
        """
        z = self.embed(X)
        self._warn_edges(X, X.pairs)
        pairs = torch.as_tensor(np.ascontiguousarray(X.pairs.T), device=z.device)
        with torch.no_grad():
            return _pair_logits(z, pairs).cpu().numpy().astype(np.float64)


# Node draws per batch of epochs' fresh negatives (int64 each, and a few temporaries)
_FRESH_DRAWS = 1 << 20


def _fresh_non_edges(rng, n, is_edge, m, epochs, device):
    """Each epoch's fresh negatives: about ``m`` uniform random pairs (u != v) that are not
    edges (``is_edge``: an ``edge_lookup``), as a ``(2, m')`` tensor on ``device``.

    Drawn for a batch of epochs at once (numpy's generator gives the same integers
    asked for at once or in parts: the pairs of drawing epoch by epoch) and sent to the
    device once per batch (pinned, without a wait): an epoch costs the host a slice,
    where a draw of its own cost a dozen array operations and a transfer.
    """
    per_batch = max(1, _FRESH_DRAWS // (2 * m))
    while epochs > 0:
        k = min(per_batch, epochs)
        epochs -= k
        uv = rng.integers(0, n, size=(k, 2, m))
        u, v = uv[:, 0], uv[:, 1]
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        keep = (u != v) & ~is_edge(lo * n + hi)
        batch = host_to_device(np.stack([lo[keep], hi[keep]]), device)   # epoch by epoch
        ends = np.cumsum(keep.sum(axis=1))
        for start, end in zip(np.r_[0, ends[:-1]], ends, strict=True):
            yield batch[:, start:end]


# ----------------------------------------------------------------------- Hadamard
class _EdgeHead(nn.Module):
    """(standardised) Hadamard features -> logistic regression or MLP -> one logit.

    The MLP is Linear -> ReLU -> Dropout per hidden layer, then a Linear: the edge
    features themselves are not dropped.
    """

    def __init__(self, d, hidden, dropout, mean, std):
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("inv_std", 1.0 / std)
        layers, n_in = [], d
        for h in hidden:
            layers += [nn.Linear(n_in, h), nn.ReLU(), Dropout(dropout)]
            n_in = h
        layers.append(nn.Linear(n_in, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, z, pairs):
        h = z[pairs[:, 0]] * z[pairs[:, 1]]
        return self.net((h - self.mean) * self.inv_std).squeeze(1)


class HadamardLinkPredictor(_LinkPredictorBase):
    """Edge classifier on Hadamard products of node embeddings (PrivGE's link head).

    For a pair ``(u, v)`` the edge feature is the element-wise product
    ``z_u * z_v`` of the node features of the graph the
    :class:`~skldp.model_selection.PairData` lives on (in PrivGE, the
    propagated private embeddings). A logistic regression (default) or an MLP
    on these edge features, trained with Adam on mini-batches, predicts the
    edge.

    Read more in the :ref:`User Guide <hadamard_link>`.

    Parameters
    ----------
    head : {"logistic", "mlp"}, default="logistic"
        Logistic regression or an MLP with ``hidden_layer_sizes`` and ReLU.
    hidden_layer_sizes : tuple of int, default=(64,)
        Only for ``head="mlp"``.
    loss : {"bce", "pairwise"}, default="bce"
        ``"bce"``: binary cross-entropy (calibrated ``predict_proba``).
        ``"pairwise"``: a pairwise ranking loss (optimises AUC; the
        probabilities are then uncalibrated).
    standardize : bool, default=True
        Centre and scale each edge feature with its mean and standard
        deviation over the training pairs.
    dropout : float, default=0.0
        Dropout probability after each hidden layer.
    lr : float, default=0.01
        Adam learning rate.
    weight_decay : float, default=0.0
        Adam L2 penalty.
    epochs : int, default=100
        Maximum number of epochs.
    batch_size : int, default=1024
        Pairs per mini-batch.
    early_stopping : bool or "auto", default=True
        Stop after ``patience`` epochs without a lower validation loss and keep
        the best weights.
        ``"auto"``: as ``True`` with ``validation`` or when ``fit`` gets at
        least 1,000 pairs, else as ``False`` (``validation_fraction`` is
        checked as with ``True``).
    validation : array-like of shape (m, 2) or None, default=None
        Validation pairs (e.g. ``P_val.pairs``), fitted with the training
        pairs (``P_train.concat(P_val)``); ``None``: hold out
        ``validation_fraction`` of the fit pairs. See :ref:`validation_nodes`.
        These pairs are held out: ``fit`` warns (``UserWarning``) if some are
        edges of the graph it is given.
    validation_fraction : float, default=0.05
        Share of the fit pairs held out (stratified) without ``validation``.
    patience : int, default=10
        Epochs without improvement before stopping.
    device : str, default="auto"
        Torch device; ``"auto"`` uses CUDA when available.
    random_state : int, RandomState, Generator or None
        Seeds initialisation, dropout, batch order and the validation split. A
        ``RandomState`` or ``Generator`` gives the seed of one draw from it
        (hashed), so it advances at each fit.
    verbose : int, default=0
        Log the loss of every epoch.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    module_ : torch.nn.Module
        The trained head (on the CPU), including the standardisation.
    n_features_in_ : int
    feature_names_in_ : ndarray of str objects
        Names of the node features, when the graph has ``feature_names``;
        scoring refuses other names.
    n_iter_ : int
    loss_curve_, validation_scores_ : list of float
    best_epoch_ : int or None

    See Also
    --------
    skldp.models.VGAELinkPredictor : A variational graph auto-encoder.
    skldp.propagation.PPRPropagation : The embeddings of PrivGE.

    References
    ----------
    .. [1] Z. Li, R.-H. Li, M. Liao, F. Jin and G. Wang, "Privacy-Preserving
       Graph Embedding based on Local Differential Privacy", CIKM 2024, §4.1.
    .. [2] A. Grover and J. Leskovec, "node2vec: Scalable Feature Learning for
       Networks", KDD 2016 (the Hadamard operator).

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from skldp.datasets import load_cora
    >>> from skldp.mechanisms import HDSMechanism
    >>> from skldp.propagation import PPRPropagation
    >>> from skldp.model_selection import random_edge_split
    >>> from skldp.models import HadamardLinkPredictor
    >>> P_tr, P_va, P_te, y_tr, y_va, y_te = random_edge_split(load_cora().data,
    ...                                                        random_state=0)
    >>> pipe = make_pipeline(HDSMechanism(eps=1.0, k=20, feature_range=(0, 1), random_state=0),
    ...                      PPRPropagation(alpha=0.1),
    ...                      HadamardLinkPredictor(epochs=20, random_state=0))
    >>> pipe.fit(P_tr, y_tr).score(P_te, y_te) > 0.6
    True
    """

    _parameter_constraints = {
        **_LinkPredictorBase._parameter_constraints,
        "head": [StrOptions({"logistic", "mlp"})],
        "hidden_layer_sizes": ["array-like"],   # entries checked in fit
        "loss": [StrOptions({"bce", "pairwise"})],
        "standardize": ["boolean"],
        "batch_size": [Count(1)],
    }

    def __init__(self, head="logistic", *, hidden_layer_sizes=(64,), loss="bce",
                 standardize=True, dropout=0.0, lr=0.01, weight_decay=0.0, epochs=100,
                 batch_size=1024, early_stopping=True, validation=None,
                 validation_fraction=0.05, patience=10,
                 device="auto", random_state=None, verbose=0):
        self.head = head
        self.hidden_layer_sizes = hidden_layer_sizes
        self.loss = loss
        self.standardize = standardize
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

    def _setup_fit(self):
        super()._setup_fit()
        self._hidden_sizes()

    def _hidden_sizes(self):
        hidden = tuple(self.hidden_layer_sizes) if self.head == "mlp" else ()
        for h in hidden:
            check_int(h, "hidden_layer_sizes entries", 1)
        return hidden

    @staticmethod
    def _embeddings(X, device):
        Z = X.features
        check_finite_features(Z, name="the features given to HadamardLinkPredictor")
        return to_torch_dense(Z, device)

    def _moments(self, z, pairs):
        d = z.shape[1]
        if not self.standardize:
            return torch.zeros(d, device=z.device), torch.ones(d, device=z.device)
        s = torch.zeros(d, dtype=torch.float64, device=z.device)
        s2 = torch.zeros_like(s)
        for b in range(0, len(pairs), 8192):
            p = pairs[b:b + 8192]
            h = (z[p[:, 0]] * z[p[:, 1]]).double()
            s += h.sum(0)
            s2 += (h * h).sum(0)
        mean = s / len(pairs)
        std = torch.sqrt(torch.clamp(s2 / len(pairs) - mean ** 2, min=0))
        std = torch.where(std > 1e-12 * torch.clamp(mean.abs(), min=1e-30), std,
                          torch.ones_like(std))
        std = torch.where(std > 0, std, torch.ones_like(std))
        return mean.float(), std.float()

    def _batch_loss(self, logits, targets):
        if self.loss == "bce":
            return F.binary_cross_entropy_with_logits(logits, targets)
        pos, neg = logits[targets > 0.5], logits[targets <= 0.5]
        if len(pos) == 0 or len(neg) == 0:
            return logits.sum() * 0.0
        return F.softplus(neg[None, :] - pos[:, None]).mean()

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train the head on the pairs of ``X`` (labels ``y``: edge / non-edge).

        Parameters
        ----------
        X : PairData
            Training (and ``validation``) pairs; their graph's node features
            are the embeddings.
        y : array-like of shape (n_pairs,)
            Binary labels; ``classes_[1]`` marks edges. A ValueError if a pair
            (either orientation) has both labels.

        Returns
        -------
        self
        """
        X, y = self._check_before_reads(X, y)   # (hidden_layer_sizes too)
        note_feature_read(self, X, fitting=True)   # raw features read here: in the clear
        note_edge_read(self, X, fitting=True)   # (scoring reads the graph given: its edges)
        hidden = self._hidden_sizes()
        X, y_enc = self._encode_pairs(X, y)
        self.n_features_in_ = X.shape[1]
        seed = training_seed(self.random_state)
        rng = np.random.default_rng(seed)
        device = resolve_device(self.device)
        z = self._embeddings(X, device)
        tr_pairs, tr_y, va_pairs, va_y = self._split_validation(X, y_enc, seed)
        tp = torch.as_tensor(tr_pairs, device=device)
        ty = torch.as_tensor(tr_y, dtype=torch.float32, device=device)
        mean, std = self._moments(z, tp)
        # Local generators only: torch's global generator is neither read nor advanced.
        module = build_module(lambda: _EdgeHead(X.shape[1], hidden, self.dropout, mean, std),
                              torch_generator(stream_seed(seed, "init"))).to(device)
        opt = Adam(module.parameters(), lr=self.lr, weight_decay=self.weight_decay)

        def step(epoch):
            if not module.training:  # a toggle walks every submodule
                module.train()
            order = host_to_device(rng.permutation(len(tp)), device)   # no wait
            total = torch.zeros((), dtype=torch.float64, device=device)
            for s in range(0, len(order), self.batch_size):
                b = order[s:s + self.batch_size]
                opt.zero_grad()
                loss = self._batch_loss(module(z, tp[b]), ty[b])
                loss.backward()
                opt.step()
                total += loss.detach().double() * len(b)
            return total / len(order)

        validate = stopper = None
        if va_pairs is not None:
            vp = torch.as_tensor(va_pairs, device=device)
            vy = torch.as_tensor(va_y, dtype=torch.float32, device=device)

            def validate(epoch):
                module.eval()
                with torch.no_grad():
                    return self._batch_loss(_chunked_logits(module, z, vp), vy)

            stopper = EarlyStopper(list(module.state_dict().values()), self.patience,
                                   sync_every=default_sync_every(device))
        with dropout_generator(torch_generator(stream_seed(seed, "dropout"), device)):
            result = train(step, self.epochs, validate=validate, stopper=stopper,
                           log=self._epoch_logger() if self.verbose else None)
        return self._finish_training(module, result)

    def decision_function(self, X):
        """Logit of an edge for each pair of ``X``.

        Parameters
        ----------
        X : PairData
            Pairs whose graph's node features are the embeddings.

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
            Logit of ``classes_[1]`` ("edge") for each pair.

        Warns
        -----
        UserWarning
            If some of the pairs are edges of ``X``'s graph (either
            orientation): a held-out edge left in the graph that propagation
            read to make the embeddings. Every scoring method (``predict``,
            ``predict_proba``, ``score``) goes through this one.
        """
        X = self._check_fitted_pairs(X)
        self._warn_edges(X, X.pairs)
        device = resolve_device(self.device)
        z = self._embeddings(X, device)
        module = module_on(self.module_, device)
        with torch.no_grad():
            pairs = np.ascontiguousarray(X.pairs)   # pairs[:, ::-1] is a negative stride
            out = _chunked_logits(module, z, torch.as_tensor(pairs, device=device))
        return out.cpu().numpy().astype(np.float64)


def _chunked_logits(module, z, pairs, chunk=8192):
    if len(pairs) == 0:
        return z.new_zeros(0)
    return torch.cat([module(z, pairs[s:s + chunk]) for s in range(0, len(pairs), chunk)])
