"""LPGNN (later version): KProp denoising of features and labels, label RR, forward correction."""


import hashlib

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions

from .._graph_data import refusal_is_read
from .._torch import class_softmax
from ..base import LABELS_OUTSIDE_DOMAIN, clean_label_users
from ..mechanisms._label_rr import LabelRandomizedResponse, classifier_label_mechanism
from ..propagation._gcn_aggregation import apply_propagation, graph_propagation_matrix
from ..utils.validation import EPS_CONSTRAINT, Count, check_graph_data
from ._base import take_rows
from ._gnn import (
    GNNClassifierBase,
    GNNEncoder,
    SparseOperand,
    aggregated_features,
    centred_features,
    feature_tensor,
    graph_tensors,
    offset_sparse_features,
    propagated_features,
)

__all__ = ["LPGNNClassifier"]

_BACKBONES = ("gcn", "sage", "gat")
_DISAGREEMENT = ("relabel", "drop")
_NORMALIZATIONS = ("rw", "sym")
_AT_FIT = object()   # _feature_mean before the fit's _prepare sets it


def _kprop(P, Z, steps):
    return apply_propagation(P, Z, steps)  # K sparse products, not a loop over nodes


class LPGNNClassifier(GNNClassifierBase):
    r"""Locally private GNN (LPGNN) with feature and label denoising.

    The server aggregates the users' (already perturbed) features ``x_steps``
    times over the graph (KProp), randomizes the training labels once with
    k-ary randomized response at budget ``eps_y``, denoises them by
    propagating them ``y_steps`` times ("Drop") and trains a GNN with a loss
    corrected for the label noise. No clean label is used, early stopping
    included.

    Read more in the :ref:`User Guide <lpgnn>`.

    Parameters
    ----------
    eps_y : float, default=1.0
        Label budget per user (``inf``: labels are not private, no RR, no
        correction).
    classes : array-like or None, default=None
        Public label domain. ``None`` derives it from the training labels; with
        a finite ``eps_y`` that is charged as a read of their labels in the
        clear (epsilon inf; refused under a budget), with a
        :class:`~skldp.exceptions.PrivacyLeakWarning`.
    x_steps : int, default=4
        KProp steps over the features (``Kx``).
    y_steps : int, default=2
        KProp steps over the noisy labels (``Ky``); 0 trains on the noisy
        labels themselves.
    backbone : {"sage", "gcn", "gat"}, default="sage"
        GNN after the feature KProp.
    center_features : bool, default=True
        Subtract each feature's mean over the nodes (after the feature KProp;
        the means of ``fit``) before the first layer, as
        :class:`SolitudeClassifier` does. Multi-bit reports have large column
        means shared by every node, which Adam's first steps can turn into
        shifts that saturate the hidden units for good; the first layer's bias
        can absorb the offset. Post-processing: no privacy cost.
    self_loops : bool, default=False
        Whether KProp's aggregator includes the node itself (``A + I``) or only
        its neighbours (``A``).
    normalization : {"sym", "rw"}, default="sym"
        KProp's aggregator: the symmetric ``D^-1/2 A D^-1/2`` of the authors'
        code, or the mean over the neighbours ``D^-1 A`` of the papers.
    propagate_predictions : bool, default=True
        Propagate the model's noisy-label posteriors before the loss, as the
        authors' code does. Needs ``y_steps > 0``; predictions are unpropagated.
    forward_correction : bool, default=True
        Train with the forward-corrected loss (plain cross-entropy otherwise).
    disagreement : {"relabel", "drop"}, default="relabel"
        Fit rows whose propagated label differs from their own noisy label
        take the propagated label, or are left out of the loss.
    hidden_size : int, default=16
        Width of the hidden layers.
    n_layers : int, default=2
        Number of GNN layers.
    activation : str, default="selu"
        Non-linearity between the layers.
    dropout : float, default=0.5
        Dropout probability.
    lr, weight_decay : float, default=0.01, 1e-4
        Adam learning rate and L2 penalty.
    epochs : int, default=200
        Maximum number of epochs (full batch).
    early_stopping : bool or "auto", default=True
        Select the weights on the validation rows.
        ``"auto"``: as ``True`` with ``validation`` or when ``fit`` gets at
        least 1,000 rows, else as ``False`` (``validation_fraction`` is
        checked as with ``True``).
    validation : array-like or None, default=None
        Validation nodes (positions or a boolean mask over the graph's nodes),
        fitted with the training nodes; ``None``: hold out
        ``validation_fraction`` of the fit rows. See :ref:`validation_nodes`.
    validation_fraction : float, default=0.1
        Share of the fit rows held out without ``validation``.
    patience : int or None, default=50
        Epochs without improvement before stopping;
        ``None``: never stop (all ``epochs`` run; the best validated epoch is
        still kept).
    selection : {"accuracy", "loss", "both", "auto"}, default="accuracy"
        What early stopping monitors on the validation rows: the error rate
        against their denoised noisy labels, the corrected loss, or both (as
        :class:`GATClassifier`; ``"auto"``: ``"both"`` with ``validation``
        nodes, else the loss).
    heads : int, default=4
        Attention heads of the GAT backbone.
    device : {"auto", "cpu", "cuda", ...}, default="auto"
        Torch device; ``"auto"`` uses CUDA when ``torch.cuda.is_available()``.
    random_state : int, RandomState, Generator or None, default=None
        Seeds the label RR collection, initialisation, dropout and the split
        (generators local to ``fit``; torch's global generator is untouched).
    verbose : int, default=0
        Log the loss of every epoch (logger ``skldp.models``, INFO).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The public label domain (``classes``, or the training labels').
    n_features_in_ : int
        Number of node features.
    label_mechanism_ : LabelRandomizedResponse or None
        The fitted label RR (``None`` when ``eps_y`` is infinite); its
        ``epsilon_`` and ``protects_`` reach
        :func:`skldp.accounting.privacy_report`.
    transition_matrix_ : ndarray of shape (n_classes, n_classes)
        Matrix used by the forward correction (identity when not private).
    n_dropped_ : int
        Fit rows left out with ``disagreement="drop"``.
    label_agreement_ : float
        Share of the fit rows whose propagated label equals their own noisy
        label.
    module_ : torch.nn.Module
        The trained network (on the CPU).
    n_iter_ : int
        Epochs run.
    loss_curve_ : list of float
        Training loss per epoch.
    validation_scores_ : list of float
        The monitored validation value per epoch (see ``selection``).
    best_epoch_ : int or None
        Epoch (0-based) whose weights were kept when early stopping.

    See Also
    --------
    skldp.mechanisms.MultiBitMechanism : The feature mechanism of LPGNN.
    skldp.mechanisms.LabelRandomizedResponse : The label mechanism.
    skldp.propagation.KProp : Feature KProp as a pipeline step.
    skldp.models.RGNNClassifier : Label reconstruction instead of label propagation.

    Notes
    -----
    Training is full batch (one Adam step per epoch), so there is no
    ``batch_size``. ``decision_function`` returns the clean-label logits.

    References
    ----------
    .. [1] S. Sajadmanesh and D. Gatica-Perez, "Locally Private Graph Neural
       Networks", ACM CCS 2021 (KProp, label RR, Drop).
    .. [2] W. Lin, B. Li and C. Wang, "Towards Private Learning on
       Decentralized Graphs with Local Differential Privacy", IEEE TIFS 2022,
       eqs. (7)-(8) and (11)-(12).
    .. [3] G. Patrini et al., "Making Deep Neural Networks Robust to Label
       Noise: a Loss Correction Approach", CVPR 2017 (forward correction).

    Examples
    --------
    >>> from sklearn.pipeline import Pipeline
    >>> from skldp.datasets import load_cora
    >>> from skldp.mechanisms import MultiBitMechanism
    >>> from skldp.models import LPGNNClassifier
    >>> cora = load_cora()
    >>> G, y = cora.data, cora.target
    >>> pipe = Pipeline([("mb", MultiBitMechanism(1.0, feature_range=(0, 1), random_state=0)),
    ...                  ("clf", LPGNNClassifier(eps_y=2.0, classes=range(7), x_steps=4,
    ...                                          y_steps=2, epochs=20, random_state=0))])
    >>> pipe.fit(G[cora.train_mask], y[cora.train_mask]).predict(G[cora.test_mask]).shape
    (1000,)
    """

    _parameter_constraints = {
        **GNNClassifierBase._parameter_constraints,
        "eps_y": [EPS_CONSTRAINT],
        "classes": ["array-like", None],
        "x_steps": [Count(0)],
        "y_steps": [Count(0)],
        "backbone": [StrOptions(set(_BACKBONES))],
        "center_features": ["boolean"],
        "self_loops": ["boolean"],
        "normalization": [StrOptions(set(_NORMALIZATIONS))],
        "propagate_predictions": ["boolean"],
        "forward_correction": ["boolean"],
        "disagreement": [StrOptions(set(_DISAGREEMENT))],
        "heads": [Count(1)],
    }

    def __init__(self, eps_y=1.0, *, classes=None, x_steps=4, y_steps=2, backbone="sage",
                 center_features=True, self_loops=False, normalization="sym",
                 propagate_predictions=True, forward_correction=True, disagreement="relabel",
                 hidden_size=16, n_layers=2, activation="selu", dropout=0.5, lr=0.01,
                 weight_decay=1e-4, epochs=200, early_stopping=True, validation=None,
                 validation_fraction=0.1, patience=50, selection="accuracy", heads=4,
                 device="auto", random_state=None, verbose=0):
        super().__init__(hidden_size, n_layers=n_layers, activation=activation, dropout=dropout,
                         lr=lr, weight_decay=weight_decay, epochs=epochs,
                         early_stopping=early_stopping, validation=validation,
                         validation_fraction=validation_fraction, patience=patience,
                         selection=selection, device=device, random_state=random_state,
                         verbose=verbose, label_mechanism=None)
        self.eps_y = eps_y
        self.classes = classes
        self.x_steps = x_steps
        self.y_steps = y_steps
        self.backbone = backbone
        self.center_features = center_features
        self.self_loops = self_loops
        self.normalization = normalization
        self.propagate_predictions = propagate_predictions
        self.forward_correction = forward_correction
        self.disagreement = disagreement
        self.heads = heads

    @property
    def _conv(self):
        return self.backbone

    # ------------------------------------------------------------ labels
    def _make_label_mechanism(self, G, y):
        if np.isinf(float(self.eps_y)):
            return None
        return classifier_label_mechanism(self).fit(G, y)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Randomize the labels, denoise them by propagation and train (see class doc).

        Parameters
        ----------
        X : GraphData
            View of the labelled training (and ``validation``) nodes, features
            already perturbed.
        y : array-like of shape (n_rows,)
            Their true labels; randomized inside before any use (the
            validation rows' too).

        Returns
        -------
        self
        """
        self.label_mechanism_ = None
        self._feature_mean = _AT_FIT   # taken by the fit's _prepare
        try:
            super().fit(X, y)
        finally:
            self.__dict__.pop("_transition_t", None)
        if getattr(self, "label_mechanism_", None) is None:
            self.label_mechanism_ = None
        return self

    def _encode_labels(self, y, n_rows, X=None):
        if getattr(self, "label_mechanism_", None) is None and self.classes is not None:
            # Not private, but the public domain is known: keep its order and size.
            classes = np.unique(np.asarray(self.classes))
            enc = LabelRandomizedResponse(np.inf, classes=classes).fit()
            self.classes_ = classes
            with refusal_is_read(self, "labels", clean_label_users(X, y),
                                 LABELS_OUTSIDE_DOMAIN):
                return enc.encode(y)
        return super()._encode_labels(y, n_rows, X)

    def _fit_targets(self, y_enc, X):
        c = len(self.classes_)
        mech = getattr(self, "label_mechanism_", None)
        self.transition_matrix_ = (mech.transition_matrix_ if mech is not None
                                   else np.eye(c))
        G = X
        own = np.asarray(y_enc, dtype=np.int64)
        target = own
        if self.y_steps > 0:
            n = G.n_nodes
            Y = sp.csr_matrix((np.ones(len(own)), (G.rows, own)), shape=(n, c))
            P = graph_propagation_matrix(G, self.self_loops, self.normalization)
            Z = _kprop(P, Y, self.y_steps)
            Z = Z.toarray() if sp.issparse(Z) else np.asarray(Z)
            Zr = Z[G.rows]
            prop = np.argmax(Zr, axis=1)
            target = np.where(Zr.sum(axis=1) > 0, prop, own)
        if self.disagreement == "drop":
            keep = target == own
            self.n_dropped_ = int(np.count_nonzero(~keep))
            target = np.where(keep, own, -100)  # ignored by the loss
        else:
            self.n_dropped_ = 0
        self.label_agreement_ = float(np.mean(target == own))
        return torch.as_tensor(target, dtype=torch.long, device="cpu")

    def _loss(self, logits, targets, positions):
        # Targets of dropped rows are -100: nll_loss ignores them, as the selection does.
        # Nothing here reads a value on the host (no wait for the device per step).
        drops = self.disagreement == "drop"
        if self._trains_on_propagated():
            logp = logits  # _output's propagated log-posteriors
        elif self._corrects():
            logp = torch.log(self._noisy_posterior(logits).clamp_min(1e-12))
        else:
            logp = class_softmax(logits, log=True)
        if not drops:
            return F.nll_loss(logp, targets)
        # The mean over the rows kept (0 when none is: every row dropped)
        return F.nll_loss(logp, targets, reduction="sum") / (targets >= 0).sum().clamp_min(1)

    def _corrects(self):
        return self.forward_correction and getattr(self, "label_mechanism_", None) is not None

    def _propagates_predictions(self):
        return self.propagate_predictions and self.y_steps > 0

    def _trains_on_propagated(self):
        """Whether ``_output`` gives propagated log-posteriors (training steps only)."""
        return self._propagates_predictions() and torch.is_grad_enabled()

    def _noisy_posterior(self, logits):
        """``softmax(z) T``: the noisy-label posterior (``softmax(z)`` without correction)."""
        p = class_softmax(logits)
        if not self._corrects():
            return p
        key = (logits.device, logits.dtype)
        cached = self.__dict__.get("_transition_t")
        if cached is None or cached[0] != key:  # moved to the device once per fit
            cached = self._transition_t = (key, torch.as_tensor(
                self.transition_matrix_, dtype=logits.dtype, device=logits.device))
        return p @ cached[1]

    def _output(self, z, g, positions):
        if not self._trains_on_propagated():
            return take_rows(z, positions)  # validation and predictions: the model's own outputs
        # Training with propagated predictions (step 4): all nodes' noisy-label
        # posteriors through the labels' KProp, renormalized by a softmax as in the
        # authors' code; log-probabilities of the loss rows.
        p = g["label_prop"].matmul(self._noisy_posterior(z), self.y_steps)
        return class_softmax(take_rows(p, positions), log=True)

    # ------------------------------------------------------------ network
    def _prepare(self, X, device):
        G = check_graph_data(X, self, require_adjacency=True, require_finite=True)
        _, g = graph_tensors(G, device, self.backbone, features=False)
        x = offset_sparse_features(G, device)  # e.g. multi-bit reports: constant + sparse, exact
        if x is None:
            x = feature_tensor(G, device, operand=True)
        if self.x_steps > 0 or self._propagates_predictions():
            symmetric = self.normalization == "sym" and G.is_symmetric()
            key = ("lpgnn_kprop", self.self_loops, self.normalization, symmetric, str(device))
            P = G.operator(  # once per graph and device (kept with the adjacency)
                key, lambda A: SparseOperand.from_scipy(
                    graph_propagation_matrix(G, self.self_loops, self.normalization), device,
                    symmetric=symmetric))
        dense_key = None
        if self.x_steps > 0:
            # KProp of the features: on the CPU applied lazily after the first linear map
            # (exact: P^K X W = P^K (X W)), so it costs K products on n x hidden; on a
            # GPU computed once where it fits
            x, dense_key = propagated_features(G, x, P, self.x_steps, device, key)
        if self._feature_mean is _AT_FIT:
            self._feature_mean = self._kprop_means(G) if self.center_features else None
        mean = getattr(self, "_feature_mean", None)
        x = centred_features(x, mean, device)
        if dense_key is not None:   # fixed and dense: the first aggregation made once
            if mean is not None:    # (kept apart from the uncentred input's)
                dense_key = (dense_key, hashlib.sha1(mean.tobytes()).hexdigest())
            x = aggregated_features(G, x, g, self.backbone, dense_key)
        if self._propagates_predictions():
            g["label_prop"] = P
        return (x, g), G.rows

    def _kprop_means(self, G):
        """The column means over the nodes of ``P^K X`` (``x_steps`` KProp steps), as
        ``((P^T)^K 1)^T X / n``: K products on a vector, never ``P^K X`` itself."""
        u = np.ones(G.n_nodes)
        if self.x_steps > 0:
            P = graph_propagation_matrix(G, self.self_loops, self.normalization)
            for _ in range(self.x_steps):
                u = P.T @ u
        st = G._store
        X = st._on_device if st._features is None else st.features
        if isinstance(X, torch.Tensor):   # left on a device by a step: summed there
            u = torch.as_tensor(u, dtype=X.dtype, device=X.device)
            return (u @ X).double().cpu().numpy() / G.n_nodes
        return np.asarray(X.T @ u, dtype=np.float64).ravel() / G.n_nodes

    def _build_module(self, n_features, n_classes):
        # Dropout after each hidden activation, none on the (propagated) input.
        return GNNEncoder(self.backbone, self._sizes(n_features, n_classes), self.activation,
                          self.dropout, heads=self.heads, input_dropout=0.0)
