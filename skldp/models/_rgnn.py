"""RGNN: GNN training with reconstructed labels and label-proportion regularisation.

Bhaila et al., SDM 2024, §IV-B, §IV-C, Algorithms 2 and 3, eq. (15).
"""

from numbers import Real

import numpy as np
import torch
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions

from .._torch import class_softmax
from ..mechanisms._label_rr import classifier_label_mechanism, randomize_after
from ..reconstruction._labels import reconstruct_labels
from ..reconstruction._llp import cluster_label_proportions, llp_kl_loss, metis_clusters
from ..utils._random import training_seed
from ..utils.validation import EPS_CONSTRAINT, Count, Interval, check_graph_data
from ._base import TorchClassifierBase, take_rows
from ._gnn import _ACTIVATIONS, GNNEncoder, graph_tensors

__all__ = ["RGNNClassifier"]

_BACKBONES = ("sage", "gcn", "gat")


class RGNNClassifier(TorchClassifierBase):
    r"""RGNN node classifier: label randomization, label reconstruction and LLP.

    Every training user randomizes its label with generalized randomized
    response at ``eps_y``; the server reconstructs soft labels from the noisy
    labels propagated over ``hops_y`` hops and trains a GNN on them, with a
    learning-from-label-proportions (LLP) term over ``n_clusters`` METIS
    clusters. The features are whatever the pipeline gives, typically GRR-FS
    reports reconstructed by :class:`~skldp.reconstruction.FrequencyReconstructor`.

    Read more in the :ref:`User Guide <rgnn>`.

    Parameters
    ----------
    backbone : {"sage", "gcn", "gat"}, default="sage"
        GNN trained on the reconstructed labels.
    eps_y : float, default=1.0
        Label privacy budget per user (> 0; ``inf``: the users send their true
        labels, a collection charged epsilon ``inf``, where ``LPGNNClassifier``
        makes no label collection and takes the labels as given).
    hops_y : int, default=2
        Label propagation steps ``K_y`` (0 = each node's own noisy label).
    alpha : float, default=1.0
        Weight of the LLP term (0 disables it).
    n_clusters : int, default=64
        METIS parts (bags); must not exceed the number of nodes (unused when
        ``alpha=0``).
    reconstruct_labels : bool, default=True
        ``False`` trains on the raw noisy labels (one-hot), the "perturbed
        labels" ablation and the GraphSAGE baseline of Bhaila et al.
    classes : array-like or None, default=None
        Public label domain. ``None`` takes it from the training labels,
        charged as a read of their labels in the clear (epsilon inf; refused
        under a budget), with a :class:`~skldp.exceptions.PrivacyLeakWarning`.
    hidden_size : int, default=16
        Width of the hidden layers.
    heads : int, default=4
        Attention heads of the GAT backbone's hidden layer.
    n_layers : int, default=2
        Number of graph convolutions.
    activation : {"relu", "elu", "selu", "tanh", "leaky_relu"}, default="relu"
        Non-linearity after each hidden layer.
    dropout : float in [0, 1), default=0.5
        Dropout on the input of every layer (dense inputs only).
    lr : float, default=0.01
        Adam learning rate.
    weight_decay : float, default=5e-4
        Adam L2 penalty.
    epochs : int, default=100
        Maximum number of full-batch epochs (Bhaila et al. train 100).
    early_stopping : bool or "auto", default=True
        Keep the weights of the epoch with the lowest validation loss on the
        reconstructed (noisy) targets of the validation rows; no clean label
        is used.
        ``"auto"``: as ``True`` with ``validation`` or when ``fit`` gets at
        least 1,000 rows, else as ``False`` (``validation_fraction`` is
        checked as with ``True``).
    validation : array-like or None, default=None
        Validation nodes (positions or a boolean mask over the graph's nodes),
        fitted with the training nodes; ``None``: hold out
        ``validation_fraction`` of the fit rows. See :ref:`validation_nodes`.
    validation_fraction : float in (0, 1), default=0.1
        Share of the fit rows held out for early stopping without ``validation``.
    patience : int or None, default=100
        Epochs without improvement of the validation loss before stopping;
        ``None``: never stop (all ``epochs`` run; the best validated epoch is
        still kept).
    device : {"auto", "cpu", "cuda", ...}, default="auto"
        Torch device; ``"auto"`` uses CUDA when ``torch.cuda.is_available()``.
    random_state : int, RandomState, Generator or None, default=None
        Seeds the label collection (per node id), METIS and training (initial
        weights, dropout, validation split; generators local to ``fit``,
        torch's global generator is untouched).
    verbose : int, default=0
        Log the loss of every epoch (logger ``skldp.models``, INFO).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The public label domain (``classes``, or the training labels').
    n_features_in_ : int
        Number of node features.
    label_mechanism_ : LabelRandomizedResponse
        The fitted label mechanism (``epsilon_ = eps_y``, protects labels).
    clusters_ : ndarray of int of shape (n_nodes,)
        METIS part of every node of the training graph.
    cluster_proportions_ : ndarray of shape (n_clusters, n_classes)
        Reconstructed bag label proportions (NaN for bags without training nodes).
    module_ : torch.nn.Module
        The trained network (on the CPU).
    n_iter_ : int
        Epochs run.
    loss_curve_ : list of float
        Training loss per epoch.
    validation_scores_ : list of float
        Validation loss per epoch (empty without early stopping).
    best_epoch_ : int or None
        Epoch (0-based) whose weights were kept when early stopping.

    See Also
    --------
    skldp.mechanisms.GRRFSMechanism : The feature mechanism of RGNN.
    skldp.reconstruction.reconstruct_labels : The label reconstruction.
    skldp.models.LPGNNClassifier : Label denoising by propagation.

    Notes
    -----
    Training is full batch (the LLP term needs every bag's predictions), so
    there is no ``batch_size``. ``decision_function`` returns the logits.

    References
    ----------
    .. [1] K. Bhaila, W. Huang, Y. Wu and X. Wu, "Local Differential Privacy in
       Graph Neural Networks: a Reconstruction Approach", SIAM SDM 2024,
       eqs. (14)-(15), Algorithms 2-3, Theorem 3.

    Examples
    --------
    >>> from skldp.datasets import load_cora
    >>> from skldp.models import RGNNClassifier
    >>> cora = load_cora()
    >>> G, y = cora.data, cora.target
    >>> clf = RGNNClassifier(eps_y=2.0, classes=range(7), n_clusters=16, epochs=5,
    ...                      random_state=0)
    >>> clf.fit(G[cora.train_mask], y[cora.train_mask]).predict(G[cora.test_mask]).shape
    (1000,)
    """

    _parameter_constraints = {
        **TorchClassifierBase._parameter_constraints,
        "backbone": [StrOptions(set(_BACKBONES))],
        "eps_y": [EPS_CONSTRAINT],
        "hops_y": [Count(0)],
        "alpha": [Interval(Real, 0, np.inf, closed="left")],
        "n_clusters": [Count(1)],
        "reconstruct_labels": ["boolean"],
        "classes": ["array-like", None],
        "hidden_size": [Count(1)],
        "heads": [Count(1)],
        "n_layers": [Count(1)],
        "activation": [StrOptions(set(_ACTIVATIONS))],
        "dropout": [Interval(Real, 0, 1, closed="left")],
    }

    def __init__(self, backbone="sage", *, eps_y=1.0, hops_y=2, alpha=1.0, n_clusters=64,
                 reconstruct_labels=True, classes=None, hidden_size=16, heads=4, n_layers=2,
                 activation="relu", dropout=0.5, lr=0.01, weight_decay=5e-4, epochs=100,
                 early_stopping=True, validation=None, validation_fraction=0.1, patience=100,
                 device="auto", random_state=None, verbose=0):
        self.backbone = backbone
        self.eps_y = eps_y
        self.hops_y = hops_y
        self.alpha = alpha
        self.n_clusters = n_clusters
        self.reconstruct_labels = reconstruct_labels
        self.classes = classes
        self.hidden_size = hidden_size
        self.heads = heads
        self.n_layers = n_layers
        self.activation = activation
        self.dropout = dropout
        self.lr = lr
        self.weight_decay = weight_decay
        self.epochs = epochs
        self.early_stopping = early_stopping
        self.validation = validation
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    batch_size = None  # full batch: every step sees the whole graph

    # -------------------------------------------------------------- training
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Randomise the training labels, reconstruct them and train the GNN.

        Parameters
        ----------
        X : GraphData
            View of the training nodes (the graph must be known).
        y : array-like of shape (n_rows,)
            Their true labels. Each is randomised once per user (keyed by node
            id) before anything else uses it: the validation split, early
            stopping and the targets see only the noisy labels.

        Returns
        -------
        self
        """
        G = check_graph_data(X, self, require_adjacency=True, require_features=True)
        if self.alpha > 0 and self.n_clusters > G.n_nodes:   # (alpha = 0: no clusters)
            raise ValueError(f"n_clusters={self.n_clusters} exceeds the number of nodes "
                             f"({G.n_nodes}).")
        y = self._check_labels(y, len(G), G)
        self._setup_fit()   # (before any read is noted)
        self._check_validation_rows(G)
        # The label collection's seed is hashed from random_state with the label
        # mechanism's identity, so it shares no random numbers with any feature report.
        mech = classifier_label_mechanism(self)
        mech.fit(G, None if self.classes is not None else y)
        # unseen labels raise before the reads of the graph are noted
        y_noisy = randomize_after(mech, y, G, lambda: self._note_fit_reads(G))
        self.label_mechanism_ = mech
        try:
            return super().fit(G, y_noisy)
        finally:
            self.__dict__.pop("_llp_state", None)

    def _encode_labels(self, y, n_rows, X=None):
        # The label domain is the mechanism's (public) one, whatever the noisy labels hold.
        mech = self.label_mechanism_
        self.classes_ = mech.classes_
        return mech.encode(y)

    def _fit_targets(self, y_enc, X):
        """Soft targets from the noisy labels ``y_enc`` (Algorithm 2) and the LLP state."""
        G = X
        mech = self.label_mechanism_
        T = mech.transition_matrix_
        c = T.shape[0]
        A = G.adjacency
        if self.reconstruct_labels:
            targets = reconstruct_labels(A, G.rows, y_enc, T, hops=self.hops_y)
        else:
            targets = np.eye(c)[y_enc]
        self.clusters_ = None
        self.cluster_proportions_ = None
        if self.alpha > 0:
            # Never the mechanism's seed_: METIS's output would reveal bits of the secret.
            seed, k = training_seed(self.random_state) % (2**31), int(self.n_clusters)
            try:
                # once per graph and seed (the folds of a search reuse it): METIS is most
                # of a large graph's fit, and its result depends on the structure alone
                clusters = G.operator(("metis", k, seed),
                                      lambda adj: metis_clusters(adj, k, seed=seed)).copy()
            except ImportError as exc:
                raise ImportError(f"{exc} RGNNClassifier(alpha={self.alpha}) uses METIS for "
                                  "its label-proportion term; alpha=0 trains without it.") \
                    from exc
            props, _ = cluster_label_proportions(clusters[G.rows], y_enc, T,
                                                 n_clusters=int(self.n_clusters))
            self.clusters_ = clusters
            self.cluster_proportions_ = props
            self._llp_state = (torch.as_tensor(clusters, dtype=torch.long, device="cpu"),
                               torch.as_tensor(props, dtype=torch.float32, device="cpu"))
        return torch.as_tensor(targets, dtype=torch.float32, device="cpu")

    def _loss(self, logits, targets, positions):
        loss = -(targets * class_softmax(logits, log=True)).sum(dim=1).mean()
        state = getattr(self, "_llp_state", None)
        if self.alpha > 0 and state is not None:
            clusters, props = state
            if clusters.device != logits.device:  # move once, not at every step
                clusters, props = clusters.to(logits.device), props.to(logits.device)
                self._llp_state = (clusters, props)
            loss = loss + self.alpha * llp_kl_loss(class_softmax(logits),
                                                   clusters[positions], props)
        return loss

    # ---------------------------------------------------------------- model
    def _check_predict_input(self, X):
        check_graph_data(X, self, require_adjacency=True)

    def _prepare(self, X, device):
        G = check_graph_data(X, self, require_adjacency=True, require_finite=True)
        x, g = graph_tensors(G, device, self.backbone)
        return (x, g), G.rows

    def _build_module(self, n_features, n_classes):
        sizes = [n_features] + [self.hidden_size] * (self.n_layers - 1) + [n_classes]
        return GNNEncoder(self.backbone, sizes, self.activation, self.dropout, heads=self.heads)

    def _forward(self, module, data, positions):
        x, g = data
        return take_rows(module(x, g), positions)
