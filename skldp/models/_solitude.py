"""Solitude: GNN training on an edge-LDP graph with learned graph-structure denoising."""

import hashlib
import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from .._torch import (
    Adam,
    EarlyStopper,
    build_module,
    class_cross_entropy,
    class_softmax,
    default_sync_every,
    dropout_generator,
    resolve_device,
    sparse_csr_tensor,
    sparse_matmul,
    stream_seed,
    torch_generator,
    train,
)
from ..base import note_edge_read, note_feature_read, note_label_read
from ..model_selection._validation import validation_split, warn_untrained_classes
from ..propagation._smoothing import smooth_features, smooth_labels
from ..utils._adjacency import index_dtype
from ..utils._random import training_seed
from ..utils.validation import Count, Interval, check_graph_data, record_feature_names
from ._base import TorchClassifierBase, take_rows
from ._gnn import (
    _ACTIVATIONS,
    GNNClassifierBase,
    GNNEncoder,
    centred_features,
    graph_tensors,
)

__all__ = ["SolitudeClassifier"]

_BACKBONES = ("gcn", "sage")


def _pattern_hash(A):
    """Hash of a sparse matrix's pattern (which entries are stored)."""
    A = sp.csr_matrix(A)
    h = hashlib.blake2b(digest_size=16)
    h.update(np.asarray(A.shape, dtype=np.int64).tobytes())
    h.update(A.indptr.astype(np.int64).tobytes())
    h.update(A.indices.astype(np.int64).tobytes())
    return h.hexdigest()


class _WeightedSpMM(torch.autograd.Function):
    """``A(v) @ h`` for a sparse ``A`` of fixed pattern whose values ``v`` are learned.

    torch's backward of a sparse product forms the dense ``n x n`` matrix
    ``grad @ h^T`` and then keeps the stored entries; on Facebook (22,470
    nodes) that is a 2 GiB product per step. Here the gradient of the values is
    computed on the stored entries only: ``dv[e] = <grad[row_e], h[col_e]>``
    (``O(nnz * width)``, in blocks of entries so that the gathered rows never
    take ``nnz * width`` numbers at once), and that of ``h`` is a product with ``A^T``.
    """

    # entries per block of the values' gradient: 3 blocks of 2^16 x width floats
    # (3 MiB at width 4, 12 MiB at 16) in place of 3 of nnz x width
    _BLOCK = 1 << 16

    @staticmethod
    def forward(ctx, v, h, pattern):
        ctx.save_for_backward(v, h)
        ctx.pattern = pattern
        return sparse_matmul(pattern.matrix(v), h)

    @staticmethod
    def backward(ctx, grad):
        v, h = ctx.saved_tensors
        p = ctx.pattern
        grad_v = grad_h = None
        if ctx.needs_input_grad[0]:
            # each entry's sum runs over its own row of width numbers: blocks of
            # entries give the same numbers as one product over all of them
            grad_v = torch.empty(p.size, dtype=grad.dtype, device=grad.device)
            for s in range(0, p.size, _WeightedSpMM._BLOCK):
                e = min(s + _WeightedSpMM._BLOCK, p.size)
                torch.sum(grad.index_select(0, p.rows[s:e]) * h.index_select(0, p.cols[s:e]),
                          1, out=grad_v[s:e])
        if ctx.needs_input_grad[1]:
            grad_h = sparse_matmul(p.matrix_t(v), grad)
        return grad_v, grad_h, None


class _SparsePattern:
    """The CSR pattern of ``n x n`` entries ``(row, col)`` and of its transpose.

    Repeated entries are summed (``slot``), as a COO tensor's ``coalesce`` would.
    All index tensors are int32 when ``n`` and the number of entries allow (half
    the memory; the gathers and scatter-adds they drive give the same numbers in
    the same order as with int64): ``rows``/``cols`` (the pattern's entries in CSR
    order, ``cols`` doubling as the CSR column indices), ``slot`` (entry ->
    pattern entry), ``order_t`` (the pattern's entries in column-major order) and
    the CSR arrays of ``A`` and ``A^T``.
    """

    def __init__(self, row, col, n, device):
        row, col = np.asarray(row), np.asarray(col)
        m = len(row)
        idx = index_dtype(m, n + 1)
        codes = row.astype(np.int64)
        codes *= n
        codes += col
        if m == 0 or np.all(codes[1:] > codes[:-1]):
            # already the CSR order, no repeats (the usual sorted CSR input): the pattern
            # is the entries themselves, as np.unique would find
            del codes
            slot = np.arange(m, dtype=idx)
            rows, cols = row.astype(idx, copy=False), col.astype(idx, copy=False)
        else:
            uniq, slot = np.unique(codes, return_inverse=True)  # row-major: the CSR order
            del codes
            slot = slot.astype(idx)
            rows, cols = (uniq // n).astype(idx), (uniq % n).astype(idx)
            del uniq
        size = len(rows)
        crow = np.zeros(n + 1, dtype=idx)
        np.cumsum(np.bincount(rows, minlength=n), out=crow[1:])
        # the transpose by scipy's counting sort (csr -> csc): entries by column, then by
        # row (each column's entries come in row order), as np.lexsort((rows, cols))
        At = sp.csr_matrix((np.arange(size, dtype=idx), cols, crow), shape=(n, n),
                           copy=False).T.tocsr()

        def t(a):
            return torch.as_tensor(a, device=device)

        self.n, self.size = n, size
        self.slot, self.rows, self.cols = t(slot), t(rows), t(cols)
        self.crow, self.crow_t = t(crow), t(At.indptr.astype(idx, copy=False))
        self.csr_cols, self.csr_cols_t = self.cols, t(At.indices.astype(idx, copy=False))
        self.order_t = t(At.data)

    def values(self, entry_values):
        """Values of the unique entries (differentiable in ``entry_values``)."""
        return torch.zeros(self.size, dtype=entry_values.dtype,
                           device=entry_values.device).index_add(0, self.slot, entry_values)

    def matrix(self, v):
        """``A`` with values ``v`` (a constant: gradients go through ``_WeightedSpMM``)."""
        return sparse_csr_tensor(self.crow, self.csr_cols, v.detach(), (self.n, self.n),
                                 device=v.device, check_invariants=False)

    def matrix_t(self, v):
        """``A^T`` with values ``v``."""
        return sparse_csr_tensor(self.crow_t, self.csr_cols_t,
                                 v.detach().index_select(0, self.order_t),
                                 (self.n, self.n), device=v.device, check_invariants=False)


class _WeightedOperand:
    """``A @ h`` with ``A``'s values ``v`` differentiable (the ``_op`` entry of a graph)."""

    def __init__(self, pattern, v):
        self.pattern, self.v = pattern, v
        self.A = pattern.matrix(v)

    def matmul(self, h):
        if self.v.requires_grad or h.requires_grad:
            return _WeightedSpMM.apply(self.v, h, self.pattern)
        return sparse_matmul(self.A, h)


class _EdgeStructure:
    """Candidate edges of the received graph and the differentiable propagation matrix.

    The learnable weights live on the stored entries of the received
    adjacency only (``nnz`` numbers, never ``n^2``). For a symmetric received
    graph one weight is shared by ``(i, j)`` and ``(j, i)`` so the learned
    graph stays undirected.

    Index arrays are int32 when the sizes allow, and each is kept once: ``row``
    and ``col`` are views of the first ``nnz`` entries of ``t_row``/``t_col``
    (on the CPU) and ``param_of_entry`` shares ``t_param``'s memory.
    """

    def __init__(self, A, conv, device):
        A = sp.csr_matrix(A)
        if not A.has_sorted_indices:   # sorted on a copy: A may be the graph's (read-only)
            A = A.sorted_indices()
        n, nnz = A.shape[0], A.nnz
        idx = index_dtype(nnz + n, n + 1)
        # the COO rows and columns of the CSR entries (A.tocoo()'s, in int32 when they fit)
        row = np.repeat(np.arange(n, dtype=idx), np.diff(A.indptr))
        col = A.indices.astype(idx)
        self.n, self.conv, self.device = n, conv, device
        self.symmetric = nnz == 0 or (A != A.T).nnz == 0
        if self.symmetric:
            codes = np.minimum(row, col).astype(np.int64) * n
            codes += np.maximum(row, col)
            # the first entry of each pair: np.unique sorts stably when asked for it
            uniq, first, inv = np.unique(codes, return_index=True, return_inverse=True)
            del codes
            param_of_entry = inv.astype(idx)
            del inv
            target = np.asarray(A.data, dtype=np.float64)[first]
            del first
            # a pair (i, j), i != j, is stored twice; a self loop once
            multiplicity = np.where(uniq // n == uniq % n, 1.0, 2.0)
            del uniq
        else:
            param_of_entry = np.arange(nnz, dtype=idx)
            target = np.asarray(A.data, dtype=np.float64)
            multiplicity = np.ones(nnz)
        # float32 as the weights they initialise (one rounding of the clipped float64 values)
        self.target = np.clip(target, 0.0, 1.0).astype(np.float32)
        del target

        def t(a, dt=None):
            return torch.as_tensor(a, dtype=dt, device=device)

        self.t_param = t(param_of_entry)
        self.t_target = t(self.target)
        self.t_mult = t(multiplicity, torch.float32)
        del multiplicity
        # the entries the GNN multiplies by: the GCN adds a self loop of weight 1 per node
        if conv == "gcn":
            loops = np.arange(n, dtype=idx)
            row, col = np.concatenate([row, loops]), np.concatenate([col, loops])
        self.t_row, self.t_col = t(row), t(col)
        self.pattern = _SparsePattern(row, col, n, device)
        self._nnz = nnz

    @property
    def param_of_entry(self):
        """The parameter (pair) of each stored entry of the received adjacency."""
        return self.t_param.cpu().numpy()

    @property
    def row(self):
        return self.t_row[:self._nnz].cpu().numpy()

    @property
    def col(self):
        return self.t_col[:self._nnz].cpu().numpy()

    def graph(self, w):
        """The GNN's propagation tensors for pair weights ``w`` (differentiable in ``w``)."""
        n = self.n
        # entries gathered with index_select (take_rows): their gradients are scatter-adds
        # (indexing's accumulating index_put made CPU fits with several threads differ)
        vals = take_rows(w, self.t_param)
        if self.conv == "gcn":
            vals = torch.cat([vals, torch.ones(n, device=vals.device, dtype=vals.dtype)])
            row, col = self.t_row, self.t_col
            deg = torch.zeros(n, device=vals.device, dtype=vals.dtype).index_add_(0, row, vals)
            dinv = deg.clamp_min(1e-12).pow(-0.5)
            op = _WeightedOperand(self.pattern, self.pattern.values(
                vals * take_rows(dinv, row) * take_rows(dinv, col)))
            return {"n": n, "a_sym_op": op, "a_sym": op.A}
        # mean aggregation D^-1 A^c with the degree floored at 1: once edges are pruned to
        # tiny weights their messages shrink instead of being re-normalised (and their
        # gradients amplified) by a near-zero degree
        deg = torch.zeros(n, device=vals.device, dtype=vals.dtype).index_add_(0, self.t_row, vals)
        dinv = 1.0 / deg.clamp_min(1.0)
        op = _WeightedOperand(self.pattern, self.pattern.values(vals * take_rows(dinv, self.t_row)))
        return {"n": n, "a_mean_op": op, "a_mean": op.A}

    def to_csr(self, w):
        """The learned adjacency as CSR (entries of weight 0 removed)."""
        w = np.asarray(w, dtype=np.float32)[self.param_of_entry]
        A = sp.csr_matrix((w, (self.row, self.col)), shape=(self.n, self.n))
        A.eliminate_zeros()
        A.sort_indices()
        return A


class SolitudeClassifier(GNNClassifierBase):
    r"""Solitude: a GNN trained on an edge-LDP graph with learned structure denoising.

    The server received a noisy graph (each user randomized its adjacency
    list, :class:`~skldp.mechanisms.EdgeRR`) and possibly noisy features.
    Solitude smooths the features and the training labels over the received
    graph and learns a calibrated adjacency ``A^c`` jointly with a GCN or
    GraphSAGE backbone,

    .. math:: \min_{\theta, A^c} L_{GNN}(A^c, X^c, \theta)
              + \lambda_1 \|A^c - A\|_F^2 + \lambda_2 \|A^c\|_1,
              \quad A^c_{ij} \in [0, 1].

    ``A^c`` is learned on the received entries only. All of this is
    post-processing of the reports and spends no privacy budget.

    Read more in the :ref:`User Guide <solitude>`.

    Parameters
    ----------
    backbone : {"gcn", "sage"}, default="gcn"
        GCN (``D^-1/2 (A^c + I) D^-1/2``) or GraphSAGE with the mean
        aggregator (``max(D, 1)^-1 A^c``).
    hidden_size : int, default=16
        Width of the hidden layers.
    n_layers : int, default=2
        Number of graph convolutions.
    activation : {"relu", "elu", "selu", "tanh", "leaky_relu"}, default="selu"
        Non-linearity after each hidden layer (the paper uses SeLU).
    dropout : float in [0, 1), default=0.5
        Dropout on the input of every layer (dense inputs only).
    lr : float, default=0.01
        Adam learning rate of the model.
    weight_decay : float, default=5e-4
        Adam L2 penalty of the model.
    epochs : int, default=500
        Maximum number of alternating epochs, each one full-batch step on the
        model and one on ``A^c``.
    feature_steps : int, default=0
        Feature smoothing steps ``K_x``.
    label_steps : int, default=0
        Label smoothing steps ``K_y``.
    center_features : bool, default=True
        Subtract each feature's mean over the nodes (after smoothing; the
        means of ``fit``) before the first layer. Noisy reports have large
        column means shared by every node, which Adam's first steps can turn
        into shifts that saturate the hidden units for good; the first
        layer's bias can absorb the offset. Post-processing: no privacy cost.
    learn_structure : bool, default=True
        Learn ``A^c``; ``False`` trains the backbone on the (smoothed) data
        and the received graph as is.
    lambda_fro : float, default=1e-3
        ``lambda_1``, weight of ``||A^c - A||_F^2`` (keeps ``A^c`` near the
        received graph).
    lambda_l1 : float, default=1e-3
        ``lambda_2``, weight of ``||A^c||_1`` (sparsity).
    lr_adj : float, default=0.01
        Adam learning rate of ``A^c``.
    adj_every : int, default=1
        Update ``A^c`` every ``adj_every`` epochs.
    early_stopping : bool or "auto", default=True
        Keep the model and graph of the epoch with the best ``selection``
        score on the validation rows.
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
        Epochs without improvement of the validation score before stopping;
        ``None``: never stop (all ``epochs`` run; the best validated epoch is
        still kept).
    selection : {"auto", "loss", "accuracy", "both"}, default="accuracy"
        What early stopping monitors on the validation rows, as for
        :class:`~skldp.models.GCNClassifier`: the loss, the accuracy (the
        first epoch of the best one is kept), or both. ``"auto"``: ``"both"``
        with ``validation`` nodes, else ``"loss"``. The accuracy by default, as
        the paper selects the epoch and as :class:`~skldp.models.LPGNNClassifier`:
        on noisy reports the loss can stop at the first epochs while the
        accuracy still climbs.
    device : {"auto", "cpu", "cuda", ...}, default="auto"
        Torch device; ``"auto"`` uses CUDA when ``torch.cuda.is_available()``.
    random_state : int, RandomState, Generator or None, default=None
        Seeds initialisation, dropout and the validation split (generators
        local to ``fit``; torch's global generator is untouched).
    verbose : int, default=0
        Log the losses of every epoch (logger ``skldp.models``, INFO).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of node features.
    module_ : torch.nn.Module
        The trained backbone (on the CPU).
    learned_adjacency_ : CSR matrix of shape (n_nodes, n_nodes)
        The calibrated graph ``A^c`` (entries of the received graph, weights
        in [0, 1], zeros removed); used by ``predict`` on the same graph.
    edge_weights_ : ndarray of shape (nnz,)
        ``A^c`` on every stored entry of the received adjacency, in CSR order.
    n_iter_ : int
        Epochs run.
    loss_curve_ : list of float
        Training loss of the model step per epoch.
    validation_scores_ : list of float
        The monitored validation score per epoch, lower is better: the loss,
        the error rate with ``selection="accuracy"``, or the pair ``[loss,
        error rate]`` with ``"both"`` (empty without early stopping).
    best_epoch_ : int or None
        Epoch (0-based) whose model and graph were kept when early stopping.

    See Also
    --------
    skldp.mechanisms.EdgeRR : The edge mechanism whose graph Solitude denoises.
    skldp.propagation.FeatureSmoothing : Feature smoothing as a pipeline step.

    Notes
    -----
    Training is full batch (the graph step needs the loss of every labelled
    node), so there is no ``batch_size``. ``decision_function`` returns the
    logits.

    References
    ----------
    .. [1] W. Lin, B. Li and C. Wang, "Towards Private Learning on
       Decentralized Graphs with Local Differential Privacy", IEEE TIFS 2022,
       §III-B, eqs. (10)-(14).

    Examples
    --------
    >>> from skldp.datasets import load_cora
    >>> from skldp.mechanisms import EdgeRR
    >>> from skldp.models import SolitudeClassifier
    >>> cora = load_cora()
    >>> G = EdgeRR(eps=7.0, symmetrize="directed", random_state=0).fit_transform(cora.data)
    >>> clf = SolitudeClassifier("gcn", epochs=20, random_state=0)
    >>> clf = clf.fit(G[cora.train_mask], cora.target[cora.train_mask])
    >>> clf.predict(G[cora.test_mask]).shape
    (1000,)
    >>> clf.learned_adjacency_.shape
    (2708, 2708)
    """

    _parameter_constraints = {
        **TorchClassifierBase._parameter_constraints,
        "backbone": [StrOptions(set(_BACKBONES))],
        "hidden_size": [Count(1)],
        "n_layers": [Count(1)],
        "activation": [StrOptions(set(_ACTIVATIONS))],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "feature_steps": [Count(0)],
        "label_steps": [Count(0)],
        "center_features": ["boolean"],
        "learn_structure": ["boolean"],
        "lambda_fro": [Interval(Real, 0, np.inf, closed="left")],
        "lambda_l1": [Interval(Real, 0, np.inf, closed="left")],
        "lr_adj": [Interval(Real, 0, None, closed="neither")],
        "adj_every": [Count(1)],
        "selection": GNNClassifierBase._parameter_constraints["selection"],
    }

    def __init__(self, backbone="gcn", hidden_size=16, *, n_layers=2, activation="selu",
                 dropout=0.5, lr=0.01, weight_decay=5e-4, epochs=500, feature_steps=0,
                 label_steps=0, center_features=True, learn_structure=True, lambda_fro=1e-3,
                 lambda_l1=1e-3, lr_adj=0.01, adj_every=1, early_stopping=True, validation=None,
                 validation_fraction=0.1, patience=100, selection="accuracy", device="auto",
                 random_state=None, verbose=0):
        self.backbone = backbone
        self.hidden_size = hidden_size
        self.n_layers = n_layers
        self.activation = activation
        self.dropout = dropout
        self.lr = lr
        self.weight_decay = weight_decay
        self.epochs = epochs
        self.feature_steps = feature_steps
        self.label_steps = label_steps
        self.center_features = center_features
        self.learn_structure = learn_structure
        self.lambda_fro = lambda_fro
        self.lambda_l1 = lambda_l1
        self.lr_adj = lr_adj
        self.adj_every = adj_every
        self.early_stopping = early_stopping
        self.validation = validation
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.selection = selection
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    @property
    def _conv(self):
        return self.backbone

    # ---------------------------------------------------------------- data
    def _features(self, G):
        """Features of all nodes after ``feature_steps`` smoothing steps (memoised on G)."""
        G.require_finite_features(type(self).__name__)  # before smoothing spreads them
        if self.feature_steps == 0:
            return G
        key = ("skldp.solitude.features", int(self.feature_steps))
        out = G.memo_get(key)
        if out is None:
            full = G.full()
            out = G.memo_set(key, full.with_features(
                smooth_features(G.features, G.adjacency, self.feature_steps)))
        return out._replace(G.rows)

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the backbone and the calibrated graph on the rows of the view ``X``.

        Parameters
        ----------
        X : GraphData
            View of the training nodes over the server's (noisy) graph.
        y : array-like of shape (n_rows,)
            Their labels (``-1`` is an error).

        Returns
        -------
        self
        """
        G = check_graph_data(X, self, require_adjacency=True, require_features=True)
        y = self._check_labels(y, len(G), G)   # (all three before a read is charged)
        self._setup_fit()
        self._check_validation_rows(G)
        note_feature_read(self, X, fitting=True)   # raw features read here: in the clear
        note_edge_read(self, X, fitting=True)
        G = check_graph_data(X, self, require_adjacency=True)
        y_enc = self._encode_labels(y, len(G), G)
        note_label_read(self, G, y)
        self.n_features_in_ = G.shape[1]
        record_feature_names(self, G)
        seed = training_seed(self.random_state)
        device = resolve_device(self.device)
        A = G.adjacency
        Gx = self._features(G)
        x, _ = graph_tensors(Gx, device, self.backbone)
        self._feature_mean = (np.asarray(Gx.features.mean(axis=0), dtype=np.float64).ravel()
                              if self.center_features else None)
        x = centred_features(x, self._feature_mean, device)
        struct = _EdgeStructure(A, self.backbone, device)
        n_cls = len(self.classes_)
        rows = G.rows
        local, val = validation_split(G, y_enc, validation=self.validation,
                                      early_stopping=self.early_stopping,
                                      validation_fraction=self.validation_fraction, seed=seed,
                                      owner=self)
        warn_untrained_classes(y_enc, local, val, self)   # (after the labels' read is noted)
        # targets: hard labels, or label smoothing (eq. (12)) from the fitting rows only
        if self.label_steps > 0:
            Y0 = np.zeros((G.n_nodes, n_cls))
            Y0[rows[local], y_enc[local]] = 1.0
            P = smooth_labels(Y0, A, self.label_steps, self_loops=False)   # eq. (12)
            train_targets = torch.as_tensor(P[rows[local]], dtype=torch.float32, device=device)
        else:
            train_targets = torch.as_tensor(y_enc[local], dtype=torch.long, device=device)
        pos_train = torch.as_tensor(rows[local], device=device)
        pos_val = torch.as_tensor(rows[val], device=device) if val is not None else None
        y_val = torch.as_tensor(y_enc[val], device=device) if val is not None else None

        # Local generators only (see TorchClassifierBase.fit): torch's global one is untouched.
        module = build_module(lambda: GNNEncoder(self.backbone, self._sizes(G.shape[1], n_cls),
                                                 self.activation, self.dropout),
                              torch_generator(stream_seed(seed, "init"))).to(device)
        drop_gen = torch_generator(stream_seed(seed, "dropout"), device)
        opt = Adam(module.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        w = torch.tensor(struct.target, dtype=torch.float32, device=device,
                         requires_grad=bool(self.learn_structure))
        opt_adj = Adam([w], lr=self.lr_adj) if self.learn_structure else None

        def task_loss(logits, targets, reduction="mean"):
            if targets.dtype == torch.long:
                return class_cross_entropy(logits, targets, reduction=reduction)
            out = -(targets * class_softmax(logits, log=True)).sum(dim=1)
            return out.sum() if reduction == "sum" else out.mean()

        graph = {"fixed": struct.graph(w.detach())}

        def step(epoch):
            # (a) Adam step on the model, graph fixed
            if not module.training:  # a toggle walks every submodule
                module.train()
            opt.zero_grad()
            loss = task_loss(take_rows(module(x, graph["fixed"]), pos_train), train_targets)
            loss.backward()
            opt.step()
            # (b) Adam step on A^c for CE + lambda_1 ||A^c - A||_F^2, prox of lambda_2 ||.||_1
            if self.learn_structure and epoch % self.adj_every == 0:
                module.eval()
                opt_adj.zero_grad()
                # eq. (13) sums the cross entropy over the labelled nodes; the scale matters
                # here because it is weighed against lambda_1 and lambda_2
                ce = task_loss(take_rows(module(x, struct.graph(w)), pos_train), train_targets,
                               "sum")
                fro = (struct.t_mult * (w - struct.t_target) ** 2).sum()
                (ce + self.lambda_fro * fro).backward()
                opt_adj.step()
                with torch.no_grad():
                    thr = self.lr_adj * self.lambda_l1
                    w.copy_(torch.sign(w) * (w.abs() - thr * struct.t_mult).clamp_min(0.0))
                    w.clamp_(0.0, 1.0)
                graph["fixed"] = struct.graph(w.detach())
            return loss

        def validate(epoch):
            module.eval()
            with torch.no_grad():
                return self._validation_score(take_rows(module(x, graph["fixed"]), pos_val),
                                              y_val, pos_val)

        stopper = None
        if val is not None:  # the model and the learned graph of the best epoch
            stopper = EarlyStopper([*module.state_dict().values(), w], self.patience,
                                   sync_every=default_sync_every(device))
        try:
            with dropout_generator(drop_gen):
                result = train(step, self.epochs, validate=validate if val is not None else None,
                               stopper=stopper,
                               log=self._epoch_logger() if self.verbose else None)
        finally:
            self.__dict__.pop("_targets_seen", None)   # _validation_score's per-fit cache
        self.n_iter_ = result.n_iter
        self.loss_curve_ = result.loss_curve
        self.validation_scores_ = result.validation_scores
        self.best_epoch_ = result.best_epoch
        self.module_ = module.cpu().eval()
        w_np = w.detach().cpu().numpy().astype(np.float32)
        self.edge_weights_ = w_np[struct.param_of_entry]
        self.learned_adjacency_ = struct.to_csr(w_np)
        self._received_pattern = _pattern_hash(A)
        return self

    # -------------------------------------------------------------- predict
    def _prepare(self, X, device):
        check_is_fitted(self, "learned_adjacency_")
        G = check_graph_data(X, self, require_adjacency=True)
        Gx = self._features(G)
        x, g = graph_tensors(Gx, device, self.backbone)
        x = centred_features(x, self._feature_mean, device)
        A = G.adjacency
        if _pattern_hash(A) == self._received_pattern:
            struct = _EdgeStructure(A, self.backbone, device)
            w = torch.as_tensor(self.edge_weights_, dtype=torch.float32, device=device)
            # edge_weights_ is per stored entry; map back to the structure's parameters
            w_param = torch.zeros(len(struct.target), device=device).index_put_(
                (struct.t_param,), w)
            g = struct.graph(w_param)
        else:
            warnings.warn("SolitudeClassifier: predicting on a graph other than the one it "
                          "was fitted on; the learned calibration does not apply, so the "
                          "received adjacency is used as is.", UserWarning, stacklevel=3)
        return (x, g), G.rows

    def _forward(self, module, data, positions):
        x, g = data
        return take_rows(module(x, g), positions)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

