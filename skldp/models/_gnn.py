"""Full-batch GNN classifiers on sparse adjacency: GCN, GraphSAGE, GAT."""

import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions
from torch import nn

from .._torch import dropout, sparse_matmul, to_torch_dense, to_torch_sparse
from ..base import clone_private_step
from ..mechanisms._label_rr import randomize_after
from ..utils._adjacency import normalized_adjacency
from ..utils._arrays import torch_blocks_sum
from ..utils.validation import LABEL_MECHANISM_CONSTRAINT, Count, Interval, check_graph_data
from ._base import TorchClassifierBase, take_rows

__all__ = ["GCNClassifier", "SAGEClassifier", "GATClassifier", "GNNClassifierBase",
           "graph_tensors", "GNNEncoder", "PropagatedFeatures", "AggregatedFeatures",
           "aggregated_features", "OffsetSparseFeatures",
           "offset_sparse_features", "feature_tensor", "centred_features"]

_ACTIVATIONS = {"relu": F.relu, "elu": F.elu, "selu": F.selu, "tanh": torch.tanh,
                "leaky_relu": F.leaky_relu}
_SPARSE_DENSITY = 0.05  # sparser features stay sparse on the device


def _repeated_matmul(A, h, k):
    """``A^k @ h`` as ``k`` sparse products."""
    for _ in range(k):
        h = sparse_matmul(A, h)
    return h


class _SpMM(torch.autograd.Function):
    """``A^k @ h`` (``k`` products) for a constant sparse ``A`` whose transpose ``AT`` is given.

    torch's own backward of a sparse CSR product transposes ``A`` at every
    call; keeping ``A^T`` makes the backward a plain sparse product (several
    times faster on CPU). The ``k`` products of a propagation are one autograd
    node: on small graphs each node costs about as much as its product.
    """

    @staticmethod
    def forward(ctx, A, AT, h, k):
        ctx.AT, ctx.k = AT, k
        return _repeated_matmul(A, h, k)

    @staticmethod
    def backward(ctx, grad):
        return None, None, _repeated_matmul(ctx.AT, grad, ctx.k), None


class SparseOperand:
    """A constant sparse matrix with its transpose, for fast ``A @ h`` with autograd."""

    layout = "sparse_operand"

    def __init__(self, A, AT=None, order_t=None):
        self.A = A
        self.AT = A if AT is None else AT  # None: A is symmetric
        self.order_t = order_t  # AT's values are A's values[order_t] (for dropout)

    @classmethod
    def from_scipy(cls, A, device, symmetric=False):
        A = sp.csr_matrix(A)
        if symmetric:
            return cls(to_torch_sparse(A, device))
        # The transpose of the entry numbers: where each value of A^T sits in A
        At = sp.csr_matrix((np.arange(1, A.nnz + 1, dtype=np.float64), A.indices, A.indptr),
                           shape=A.shape).T.tocsr()
        order_t = torch.as_tensor(At.data.astype(np.int64) - 1, device=device)
        return cls(to_torch_sparse(A, device), to_torch_sparse(A.T.tocsr(), device), order_t)

    def dropout(self, p, training=True):
        """The operand with each stored entry dropped with probability ``p`` (scaled by
        ``1 / (1 - p)``), the same mask on ``A`` and its transpose."""
        if not training or p == 0:
            return self
        v = dropout(self.A.values(), p, True)
        A = torch.sparse_csr_tensor(self.A.crow_indices(), self.A.col_indices(), v,
                                    self.A.shape, check_invariants=False)
        if self.order_t is None:  # symmetric: A^T is A
            return SparseOperand(A)
        AT = torch.sparse_csr_tensor(self.AT.crow_indices(), self.AT.col_indices(),
                                     v[self.order_t], self.AT.shape, check_invariants=False)
        return SparseOperand(A, AT, self.order_t)

    def matmul(self, h, steps=1):
        """``A^steps @ h``."""
        if h.requires_grad:
            return _SpMM.apply(self.A, self.AT, h, steps)
        return _repeated_matmul(self.A, h, steps)


def _spmm(g, key, h):
    """``g[key] @ h``, with the fast backward when ``g`` holds ``key + "_op"``."""
    op = g.get(key + "_op")
    if op is not None:
        return op.matmul(h)
    return sparse_matmul(g[key], h)


class PropagatedFeatures:
    """Lazy ``P^K X``: products ``(P^K X) W`` are computed as ``P^K (X W)``.

    Every convolution here touches its input only through ``X W``, so a fixed
    linear propagation of the input (KProp) can be applied after the first
    linear map, on ``n x hidden`` instead of ``n x d`` values: exact (by
    associativity), cheaper, and sparse inputs stay sparse. Input dropout is
    not applied to such an input (it would not commute with ``P``).
    """

    layout = "propagated"  # not torch.strided: GNNEncoder skips input dropout

    def __init__(self, x, P, steps):
        self.x, self.P, self.steps = x, P, int(steps)

    def matmul(self, w):
        h = _matmul(self.x, w)
        if isinstance(self.P, SparseOperand):
            return self.P.matmul(h, self.steps)
        return _repeated_matmul(self.P, h, self.steps)


# Devices on which the propagated input is computed once, densely, where it fits (the
# tests add "cpu"): each epoch is then one dense product instead of K sparse products
# forward and K backward, each several kernel launches and tens of microseconds of host
# time on a GPU. On the CPU the lazy product on n x hidden values is cheaper.
_DENSE_PROPAGATION_ON = ("cuda",)
_DENSE_PROPAGATION_MAX = 1 << 28   # entries of P^K X (1 GiB of float32)


def propagated_features(G, x, P, steps, device, key):
    """``P^steps X`` for the first layer: dense on a GPU where it fits, else lazy.

    ``x`` is the features' operand on ``device`` (dense, sparse or offset-sparse),
    ``P`` a :class:`SparseOperand`; ``key`` names ``P`` (the dense result is kept
    with the graph's features under it). Returns the input and the key of the dense
    result (``None`` when lazy).
    """
    n, d = G.n_nodes, G.shape[1]
    if device.type not in _DENSE_PROPAGATION_ON or n * d > _DENSE_PROPAGATION_MAX:
        return PropagatedFeatures(x, P, steps), None
    memo_key = ("skldp.dense_propagation", key, int(steps), str(device))
    D = G.memo_get(memo_key)
    if D is None:
        with torch.no_grad():
            D = _repeated_matmul(P.A, _dense(x), steps)
        G.memo_set(memo_key, D)
    return D, memo_key


class AggregatedFeatures:
    """A constant dense input ``x`` with its neighbourhood aggregation ``A x``, made once.

    A first convolution's ``A (x W)`` is ``(A x) W``: with a fixed input (LPGNN's
    KProp of its features, no input dropout) an epoch's first layer is then dense
    products alone, without a sparse product forward, backward and in validation.
    """

    layout = "aggregated"  # not torch.strided: GNNEncoder draws no input dropout

    def __init__(self, x, aggregated):
        self.x, self.aggregated = x, aggregated


_AGGREGATIONS = {"gcn": "a_sym", "sage": "a_mean"}   # the first layer's operator in g


def aggregated_features(G, x, g, conv, key):
    """``x`` with its first layer's aggregation (:class:`AggregatedFeatures`) for a dense
    ``x`` on a device of ``_DENSE_PROPAGATION_ON`` and a GCN or SAGE first layer, else
    ``x``. ``key`` names ``x`` among the graph's results (the aggregation is kept there)."""
    agg = _AGGREGATIONS.get(conv)
    if agg is None or not isinstance(x, torch.Tensor) or x.layout != torch.strided or \
            x.device.type not in _DENSE_PROPAGATION_ON:
        return x
    memo_key = ("skldp.aggregated_input", key, agg)
    AX = G.memo_get(memo_key)
    if AX is None:
        with torch.no_grad():
            AX = _spmm(g, agg, x)
        G.memo_set(memo_key, AX)
    return AggregatedFeatures(x, AX)


def _dense(x):
    """A features operand as a dense tensor."""
    if isinstance(x, OffsetSparseFeatures):
        return _dense(x.S).add_(x.offset[None, :])
    if isinstance(x, SparseOperand):
        return x.A.to_dense()
    return x.to_dense() if x.layout != torch.strided else x


class OffsetSparseFeatures:
    """Dense features stored as ``1 c^T + S`` (a constant row plus a sparse matrix).

    Reports of sampling mechanisms (e.g. multi-bit) equal a per-column
    constant for the unsampled coordinates; ``X W = 1 (c^T W) + S W`` then
    costs O(nnz(S) h) instead of O(n d h). Exact; no input dropout.
    """

    layout = "offset_sparse"

    def __init__(self, offset, S):
        self.offset, self.S = offset, S

    def matmul(self, w):
        # In place on the fresh product: no second n x k buffer (the same values)
        return _matmul(self.S, w).add_((self.offset @ w)[None, :])


def offset_sparse_features(G, device, max_density=0.25):
    """``OffsetSparseFeatures`` of ``G.features`` when its dense features are mostly a
    per-column constant (the column median), else ``None``. Cached on the graph;
    ``None`` for features a step left on ``device`` (dense outputs, read there)."""
    if G._features_on(device) is not None:
        return None
    X = G.features
    if sp.issparse(X):
        return None
    key = ("skldp.offset_sparse", max_density)
    dec = G.memo_get(key)
    if dec is None:
        n, d = X.shape
        # The constant only decides sparsity (the decomposition is exact for any
        # c): the column median of <= 257 evenly spaced rows is enough.
        c = np.median(X[np.linspace(0, n - 1, min(n, 257)).astype(np.intp)], axis=0)
        budget = max_density * n * max(d, 1)
        blocks, nnz = [], 0
        step = max(1, (1 << 22) // max(d, 1))
        for s0 in range(0, n, step):  # row blocks bound the temporary memory
            block = X[s0:s0 + step]
            # The entries off the constant, found on a boolean mask: half the time
            # of converting the dense difference (Cora's multi-bit reports: 40 ms)
            r, j = np.nonzero(block != c)
            indptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=len(block)))])
            B = sp.csr_matrix((block[r, j] - c[j], j, indptr), shape=block.shape)
            nnz += B.nnz
            if nnz > budget:
                break
            blocks.append(B)
        dec = (c, sp.vstack(blocks, format="csr")) if nnz <= budget else False
        G.memo_set(key, dec)
    if dec is False:
        return None
    c, S = dec
    return OffsetSparseFeatures(to_torch_dense(c, device), SparseOperand.from_scipy(S, device))


def centred_features(x, mean, device):
    """The features operand ``x`` minus the column means ``mean`` (``None``: ``x`` as is).

    Sparse, offset-sparse and lazily propagated features keep their form: ``-mean``
    becomes (part of) the offset of an offset-sparse operand.
    """
    if mean is None:
        return x
    if isinstance(x, OffsetSparseFeatures):   # one offset: c - mean
        m = torch.as_tensor(mean, dtype=x.offset.dtype, device=device)
        return OffsetSparseFeatures(x.offset - m, x.S)
    m = torch.as_tensor(mean, dtype=getattr(x, "dtype", torch.float32), device=device)
    return x - m if x.layout == torch.strided else OffsetSparseFeatures(-m, x)


def _matmul(x, w):
    """x @ w for dense, sparse, offset-sparse or lazily propagated x."""
    if isinstance(x, (PropagatedFeatures, OffsetSparseFeatures, SparseOperand)):
        return x.matmul(w)
    if x.layout != torch.strided:
        return sparse_matmul(x, w)
    return x @ w


class _GCNConv(nn.Module):
    """H' = Â H W (Kipf & Welling 2017, eq. (2))."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.lin = nn.Linear(n_in, n_out)

    def forward(self, x, g):
        if isinstance(x, AggregatedFeatures):   # (A x) W + b: A x made once
            return torch.addmm(self.lin.bias, x.aggregated, self.lin.weight.t())
        return _spmm(g, "a_sym", _matmul(x, self.lin.weight.t())).add_(self.lin.bias)


class _SAGEConv(nn.Module):
    """H' = H W_self + mean_{j in N(i)} H_j W_neigh (Hamilton et al. 2017, mean aggregator)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.lin_self = nn.Linear(n_in, n_out)
        self.lin_neigh = nn.Linear(n_in, n_out, bias=False)

    def forward(self, x, g):
        if isinstance(x, AggregatedFeatures):   # X W_self + b + (A X) W_neigh: A X made once
            return torch.addmm(self.lin_self.bias, x.x, self.lin_self.weight.t()).add_(
                x.aggregated @ self.lin_neigh.weight.t())
        # One product [X W_neigh, X W_self] instead of two: one pass over X (one
        # lazy propagation when X is PropagatedFeatures), one autograd node. The
        # transposes are concatenated: one contiguous copy, not a cat then a copy.
        w = torch.cat([self.lin_neigh.weight.t(), self.lin_self.weight.t()], dim=1)
        h_neigh, h_self = _matmul(x, w).split(self.lin_neigh.out_features, dim=1)
        # (h_self + b) + A h_neigh, the second sum in place: one n x k buffer less
        return (h_self + self.lin_self.bias).add_(_spmm(g, "a_mean", h_neigh))


class _GATConv(nn.Module):
    """Multi-head graph attention over edges with self loops (Velickovic et al. 2018, eqs. 1-4)."""

    def __init__(self, n_in, n_out, heads, concat, attention_dropout=0.0, input_scale=1.0):
        super().__init__()
        self.heads, self.n_out, self.concat = heads, n_out, concat
        self.attention_dropout = attention_dropout
        self.input_scale = float(input_scale)  # the input times this (a constant, see GAT)
        self.lin = nn.Linear(n_in, heads * n_out, bias=False)
        self.att_src = nn.Parameter(torch.empty(heads, n_out))
        self.att_dst = nn.Parameter(torch.empty(heads, n_out))
        self.bias = nn.Parameter(torch.zeros(heads * n_out if concat else n_out))
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)

    def reset_parameters_with(self, generator):
        """Initialise the attention vectors from ``generator`` (``lin`` is a child)."""
        nn.init.xavier_uniform_(self.att_src, generator=generator)
        nn.init.xavier_uniform_(self.att_dst, generator=generator)
        nn.init.zeros_(self.bias)

    def forward(self, x, g):
        src, dst = g["src"], g["dst"]
        n = g["n"]
        h = _matmul(x, self.lin.weight.t())
        scale = getattr(self, "input_scale", 1.0)
        if scale != 1.0:   # (c x) W = c (x W): the input stays as it is (sparse, offset)
            h = h * scale
        h = h.view(-1, self.heads, self.n_out)
        # rows gathered with index_select: its gradient is a scatter-add (indexing's
        # accumulating index_put made CPU fits with several threads differ run to run)
        e = F.leaky_relu(take_rows((h * self.att_src).sum(-1), src)
                         + take_rows((h * self.att_dst).sum(-1), dst), 0.2)
        e_max = torch.full((n, self.heads), -torch.inf, device=e.device, dtype=e.dtype)
        e_max = e_max.scatter_reduce(0, dst[:, None].expand_as(e), e, reduce="amax")
        w = torch.exp(e - take_rows(e_max, dst))
        denom = torch.zeros((n, self.heads), device=e.device, dtype=e.dtype).index_add_(0, dst, w)
        alpha = w / take_rows(denom, dst)
        alpha = dropout(alpha, getattr(self, "attention_dropout", 0.0), self.training)
        out = torch.zeros((n, self.heads, self.n_out), device=e.device, dtype=h.dtype)
        out.index_add_(0, dst, alpha[..., None] * take_rows(h, src))
        out = out.reshape(n, -1) if self.concat else out.mean(dim=1)
        return out + self.bias


class GNNEncoder(nn.Module):
    """A stack of graph convolutions with activation and dropout between them."""

    def __init__(self, conv, sizes, activation="relu", dropout=0.5, heads=1, input_dropout=None,
                 sparse_input_dropout=False, attention_dropout=0.0, input_scale=1.0):
        super().__init__()
        # input_dropout=None: the same dropout on the input features as between layers;
        # on a sparse input only with sparse_input_dropout (its stored entries).
        self.input_dropout = input_dropout
        self.sparse_input_dropout = sparse_input_dropout
        # Python ints: a numpy integer (from a parameter grid) passes the parameter checks,
        # but torch's split (the SAGE layer) refuses it
        sizes, heads = [int(s) for s in sizes], int(heads)
        layers = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            last = i == len(sizes) - 2
            if conv == "gat":
                n_in = a if i == 0 else a * heads
                layers.append(_GATConv(n_in, b, heads=1 if last else heads, concat=not last,
                                       attention_dropout=attention_dropout,
                                       input_scale=input_scale if i == 0 else 1.0))
            else:
                layers.append({"gcn": _GCNConv, "sage": _SAGEConv}[conv](a, b))
        self.layers = nn.ModuleList(layers)
        self.act = _ACTIVATIONS[activation]
        self.dropout = dropout

    def forward(self, x, g):
        return self.rest(self.first(x, g), g)

    def _input_dropout(self):
        p_in = getattr(self, "input_dropout", None)
        return self.dropout if p_in is None else p_in

    def _drops_sparse_input(self, x):
        return getattr(self, "sparse_input_dropout", False) and isinstance(x, SparseOperand)

    def first(self, x, g):
        """The first layer (after input dropout) and its activation."""
        if x.layout == torch.strided:
            x = dropout(x, self._input_dropout(), self.training)
        elif self._drops_sparse_input(x):
            x = x.dropout(self._input_dropout(), self.training)
        x = self.layers[0](x, g)
        return self.act(x) if len(self.layers) > 1 else x

    def rest(self, h, g, training=None):
        """The layers after the first, each after dropout on its input.

        ``training`` overrides the module's mode for that dropout (``None``:
        ``self.training``), so that a validation pass need not switch the
        mode of every submodule twice per epoch.
        """
        training = self.training if training is None else training
        for i in range(1, len(self.layers)):
            h = self.layers[i](dropout(h, self.dropout, training), g)
            if i < len(self.layers) - 1:
                h = self.act(h)
        return h

    def first_is_deterministic(self, x, g):
        """Whether :meth:`first` gives the same in training and evaluation mode.

        True when it draws nothing: no dropout on the input (a lazily propagated,
        offset-sparse or sparse input, or input dropout 0) and no attention
        dropout. One evaluation of the first layer can then serve both the
        validation of one step and the training of the next.
        """
        no_input_dropout = ((x.layout != torch.strided and not self._drops_sparse_input(x))
                            or self._input_dropout() == 0)
        # attention dropout in any layer: rest(..., training=False) would still draw it
        return no_input_dropout and not any(
            isinstance(layer, _GATConv) and layer.attention_dropout > 0
            for layer in self.layers)


def feature_tensor(G, device, operand=False):
    """The features of ``G`` on the device.

    Sparse features with density below 5 % stay sparse: a torch sparse CSR
    tensor, or with ``operand=True`` a :class:`SparseOperand` (which keeps the
    transpose for a fast backward); others are a dense tensor. Non-finite
    features (NaN, inf) of any node are refused with a ``ValueError``:
    propagation would spread them to every node.
    """
    T = G._features_on(device)
    if T is not None:   # left on the device by the step before (PPRPropagation on CUDA)
        G._check_finite("GNN")
        return T.float()
    X = G.require_finite_features("GNN")  # cached on the graph: checked once
    if sp.issparse(X) and X.nnz < _SPARSE_DENSITY * X.shape[0] * max(X.shape[1], 1):
        return SparseOperand.from_scipy(X, device) if operand else to_torch_sparse(X, device)
    return to_torch_dense(X, device)


def graph_tensors(G, device, conv="gcn", self_loops=True, features=True):
    """Tensors a GNN needs for the whole graph of ``G`` (features, normalised adjacency).

    The features are :func:`feature_tensor`'s; ``features=False`` returns
    ``None`` in their place (still checked finite), for callers that build their
    own operand: converting Cora's dense features costs 15 ms per call.
    """
    A = G.require_adjacency("GNN")
    if features:
        x = feature_tensor(G, device)
    else:
        G._check_finite("GNN")
        x = None
    g = {"n": A.shape[0]}
    symmetric = G.is_symmetric()
    # Normalised and moved to the device once per graph (kept with the adjacency,
    # GraphData.operator): every fit and predict on the graph reuses the tensors.
    key = ("gnn", conv, bool(self_loops), symmetric, str(device))
    if conv == "gcn":
        g["a_sym_op"] = G.operator(key, lambda A: SparseOperand.from_scipy(
            normalized_adjacency(A, self_loops, "sym"), device, symmetric=symmetric))
        g["a_sym"] = g["a_sym_op"].A
    elif conv == "sage":
        g["a_mean_op"] = G.operator(key, lambda A: SparseOperand.from_scipy(
            normalized_adjacency(A, False, "rw"), device))
        g["a_mean"] = g["a_mean_op"].A
    else:
        g["src"], g["dst"] = G.operator(key, lambda A: _edge_index(A, self_loops, device))
    return x, g


def _edge_index(A, self_loops, device):
    """``(src, dst)`` long tensors of the edges of ``A`` (``+ I`` with self loops)."""
    A1 = sp.coo_matrix(A + sp.eye(A.shape[0]) if self_loops else A)
    return (torch.as_tensor(A1.col, dtype=torch.long, device=device),
            torch.as_tensor(A1.row, dtype=torch.long, device=device))


class GNNClassifierBase(TorchClassifierBase):
    # The docstring (with the Parameters section shared by the subclasses) is set below.

    _conv = None
    _parameter_constraints = {
        **TorchClassifierBase._parameter_constraints,
        "hidden_size": [Count(1)],
        "n_layers": [Count(1)],
        "activation": [StrOptions(set(_ACTIVATIONS))],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "selection": [StrOptions({"auto", "loss", "accuracy", "both"})],
        "label_mechanism": LABEL_MECHANISM_CONSTRAINT,
    }

    def __init__(self, hidden_size=16, *, n_layers=2, activation="relu", dropout=0.5,
                 lr=0.01, weight_decay=5e-4, epochs=200, early_stopping=True, validation=None,
                 validation_fraction=0.1, patience=50, selection="loss", device="auto",
                 random_state=None, verbose=0, label_mechanism=None):
        self.hidden_size = hidden_size
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
        self.selection = selection
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.label_mechanism = label_mechanism

    batch_size = None  # full batch: every step sees the whole graph

    # ------------------------------------------------------------------ fit
    # not prefer_skip_nested_validation: the label mechanism is the user's, unchecked
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Train on the rows of the view ``X`` with labels ``y``.

        Propagation runs over the whole graph of ``X``; the loss uses only the
        view's rows, less those named by ``validation``, which select the
        weights. With ``label_mechanism`` every label (the validation rows'
        included) is randomized once per node, keyed by node id, before
        anything else touches it: training, early stopping and model
        selection see only noisy labels.

        Parameters
        ----------
        X : GraphData
            View of the training (and validation) nodes, with an adjacency.
        y : array-like of shape (n_rows,)
            Their labels (``-1``, "unlabelled", is an error).

        Returns
        -------
        self
        """
        # without features every node gets the same output: refused before anything is read
        G = check_graph_data(X, self, require_adjacency=True, require_features=True)
        y = self._check_labels(y, len(G), G)   # before any label is collected
        if hasattr(self, "label_mechanism_"):
            del self.label_mechanism_
        self._setup_fit()   # (before any read is noted)
        self._check_validation_rows(G)
        mech = self._make_label_mechanism(G, y)
        # the users answer through their population, once the reads of the graph are noted
        y = randomize_after(mech, y, G, lambda: self._note_fit_reads(G))
        if mech is not None:
            self.label_mechanism_ = mech
        try:
            return super().fit(G, y)
        finally:
            self.__dict__.pop("_targets_seen", None)

    def _selection(self):
        """``selection`` with "auto" resolved: "both" on given validation nodes, else "loss"."""
        if self.selection != "auto":
            return self.selection
        # A held-out tenth of a small training set (14 nodes of Cora's 140) gives an
        # accuracy in steps of 7 points that ties most epochs: only the loss ranks them.
        return "both" if self.validation is not None else "loss"

    def _validation_names(self):
        return {"loss": ("val_loss",), "accuracy": ("val_error",),
                "both": ("val_loss", "val_error")}[self._selection()]

    def _validation_score(self, logits, targets, positions):
        selection = self._selection()
        if selection == "loss":
            return super()._validation_score(logits, targets, positions)
        # The error rate of the rows with a target (a target of -100 is ignored, as by
        # the loss). With randomized labels it is the error against the noisy labels:
        # under symmetric RR, E[noisy acc] = q + (p - q) * clean acc, so it ranks epochs
        # as the clean accuracy would. Nothing is read on the host per epoch.
        valid, n_valid = self._rows_with_a_target(targets)
        if n_valid == 0:
            err = torch.zeros((), dtype=torch.float64, device=logits.device)
        else:
            hits = logits.argmax(dim=1) == targets
            if valid is not None:
                hits.logical_and_(valid)
            err = 1.0 - hits.sum(dtype=torch.float64) / n_valid   # (counted in float64)
        if selection == "accuracy":
            return err
        loss = super()._validation_score(logits, targets, positions)
        return torch.stack([loss.double(), err])

    def _rows_with_a_target(self, targets):
        """``(mask or None when every row has one, count)`` of the validation rows with
        a target: the same tensor every epoch, so read once per fit (one wait)."""
        seen = self.__dict__.get("_targets_seen")
        if seen is None or seen[0] is not targets:
            valid = targets >= 0
            n = int(valid.sum())
            seen = self._targets_seen = (targets, None if n == len(targets) else valid, n)
        return seen[1], seen[2]

    def _make_label_mechanism(self, G, y):
        """A fitted clone of ``label_mechanism`` (``None`` when labels are not private)."""
        if self.label_mechanism is None:
            return None
        return clone_private_step(self.label_mechanism).fit(G, y)

    def _encode_labels(self, y, n_rows, X=None):
        mech = getattr(self, "label_mechanism_", None)
        if mech is None:
            return super()._encode_labels(y, n_rows, X)
        # The label domain is the mechanism's public one, whatever the noisy labels hold.
        self.classes_ = mech.classes_
        return mech.encode(y)

    def _check_predict_input(self, X):
        check_graph_data(X, self, require_adjacency=True)

    def _prepare(self, X, device):
        G = check_graph_data(X, self, require_adjacency=True, require_finite=True)
        _, g = graph_tensors(G, device, self._conv, features=False)
        # sparse features as an operand: it keeps X^T for a fast backward
        return (feature_tensor(G, device, operand=True), g), G.rows

    def _sizes(self, n_features, n_classes):
        return [n_features] + [self.hidden_size] * (self.n_layers - 1) + [n_classes]

    def _build_module(self, n_features, n_classes):
        # Input dropout on sparse features too (their stored entries), as on dense ones
        return GNNEncoder(self._conv, self._sizes(n_features, n_classes), self.activation,
                          self.dropout, sparse_input_dropout=True)

    def _forward(self, module, data, positions):
        x, g = data
        return self._output(module(x, g), g, positions)

    def _output(self, z, g, positions):
        """Hook: what the loss sees from the logits ``z`` of all nodes (their rows)."""
        return take_rows(z, positions)

    def _split_forward(self, module, data):
        if type(self)._forward is not GNNClassifierBase._forward:
            return None  # a subclass changed the forward pass: no split
        x, g = data
        if not module.first_is_deterministic(x, g):
            return None
        # No layer draws anything but the encoder's dropout (see first_is_deterministic),
        # so rest(..., training=False) is the evaluation mode without switching modes.
        return ((lambda: module.first(x, g)),
                (lambda h, positions, training: self._output(module.rest(h, g, training), g,
                                                             positions)))


def _params_doc(hidden_size=16, activation="relu", dropout=0.5, lr=0.01, heads=None, epochs=200,
                patience=50, selection="loss"):
    """The Parameters section of the GNN classifiers (their defaults differ)."""
    heads_doc = "" if heads is None else f"""
    heads : int, default={heads}
        Attention heads of each hidden layer (concatenated); the output layer
        uses one head.
    attention_dropout : float in [0, 1), default=0.6
        Dropout on the normalised attention coefficients of every layer
        (Velickovic et al., 2018, §3.3).
    input_scale : "auto" or float > 0, default="auto"
        A constant that multiplies every input feature. ``"auto"``: the
        inverse of the root-mean-square entry of the graph's features when it
        exceeds 1, else 1. See :ref:`gat_input_scale`."""
    return f"""
    Parameters
    ----------
    hidden_size : int, default={hidden_size}
        Width of the hidden layers (per attention head for GAT).{heads_doc}
    n_layers : int, default=2
        Number of graph convolutions.
    activation : {{"relu", "elu", "selu", "tanh", "leaky_relu"}}, default="{activation}"
        Non-linearity after each hidden layer.
    dropout : float in [0, 1), default={dropout}
        Dropout on the input of every layer; on sparse features, on their
        stored entries.
    lr : float, default={lr}
        Adam learning rate.
    weight_decay : float, default=5e-4
        Adam L2 penalty.
    epochs : int, default={epochs}
        Maximum number of epochs; each is one full-batch step (see Notes).
    early_stopping : bool or "auto", default=True
        Keep the weights of the epoch with the best ``selection`` score on the
        validation rows (``validation``, else a stratified
        ``validation_fraction`` of the fit rows) and stop after ``patience``
        epochs without improvement.
        ``"auto"``: as ``True`` with ``validation`` or when ``fit`` gets at
        least 1,000 rows, else as ``False`` (``validation_fraction`` is
        checked as with ``True``).
    validation : array-like or None, default=None
        Validation nodes (positions or a boolean mask over the graph's nodes),
        fitted with the training nodes; ``None``: hold out
        ``validation_fraction`` of the fit rows. See :ref:`validation_nodes`.
    validation_fraction : float in (0, 1), default=0.1
        Share of the fit rows held out for early stopping without ``validation``.
    patience : int or None, default={patience}
        Epochs without improvement of the validation score before stopping;
        ``None``: never stop (all ``epochs`` run; the best validated epoch is
        still kept).
    selection : {{"auto", "loss", "accuracy", "both"}}, default="{selection}"
        What early stopping monitors on the validation rows: the loss, the
        accuracy (the first epoch of the best one is kept), or both (an epoch
        as good as every earlier one on both is kept; one as good on either
        resets the patience, as Veličković et al.'s code). ``"auto"``:
        ``"both"`` with ``validation`` nodes, else ``"loss"``. See
        :ref:`validation_nodes`.
    device : {{"auto", "cpu", "cuda", ...}}, default="auto"
        Torch device; ``"auto"`` uses CUDA when ``torch.cuda.is_available()``.
        Naming an unavailable device is a ``ValueError``.
    random_state : int, RandomState, Generator or None, default=None
        Seeds the initial weights, dropout and the validation split
        (generators local to ``fit``). An int makes ``fit`` reproducible.
    verbose : int, default=0
        Log the loss of every epoch (logger ``skldp.models``, INFO).
    label_mechanism : label mechanism or None, default=None
        Label local DP, e.g. ``LabelRandomizedResponse(eps_y, classes=...)``:
        ``fit`` randomizes each fit row's label once and uses no clean label,
        early stopping included.
"""


_ATTRS_DOC = """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of node features.
    module_ : torch.nn.Module
        The trained network (on the CPU).
    n_iter_ : int
        Epochs run.
    loss_curve_ : list of float
        Training loss per epoch.
    validation_scores_ : list of float
        The monitored validation score per epoch, lower is better: the loss,
        the error rate with ``selection="accuracy"``, or the pair ``[loss,
        error rate]`` with ``"both"`` (empty without early stopping).
    best_epoch_ : int or None
        Epoch (0-based) whose weights were kept when early stopping.
    label_mechanism_ : fitted label mechanism
        Only with ``label_mechanism``; its ``epsilon_`` is the label budget.
"""

_FULL_BATCH_NOTES = """
    Notes
    -----
    Training is full batch: every epoch is one Adam step on the loss of all
    fitted rows, computed with the whole graph propagated, so there is no
    ``batch_size`` parameter. Memory grows with the graph (the sparse
    adjacency and ``n_nodes x hidden_size`` activations per layer).
    ``decision_function`` returns the logits, one column per class, or for
    two classes the score of ``classes_[1]`` (logit difference), as in
    scikit-learn.
"""

GNNClassifierBase.__doc__ = """Full-batch GNN node classifier on a :class:`~skldp.GraphData` view.

    ``fit(G[train], y[train])`` propagates over the whole graph of ``G`` and
    fits the loss on the view's rows; ``predict(G[test])`` likewise.
    Subclasses set ``_conv`` (the layer type).

    Read more in the :ref:`User Guide <gnn_classifiers>`.
    """ + _params_doc() + _ATTRS_DOC + _FULL_BATCH_NOTES


class GCNClassifier(GNNClassifierBase):
    __doc__ = """Graph convolutional network node classifier.

    Each layer computes ``D^-1/2 (A + I) D^-1/2 H W``, trained full batch.

    Read more in the :ref:`User Guide <gnn_classifiers>`.
    """ + _params_doc() + _ATTRS_DOC + _FULL_BATCH_NOTES + """
    References
    ----------
    .. [1] T. N. Kipf and M. Welling, "Semi-Supervised Classification with
       Graph Convolutional Networks", ICLR 2017, eq. (2).

    Examples
    --------
    >>> from skldp.datasets import load_cora
    >>> from skldp.models import GCNClassifier
    >>> cora = load_cora()
    >>> G, y = cora.data, cora.target
    >>> clf = GCNClassifier(epochs=20, random_state=0).fit(G[cora.train_mask], y[cora.train_mask])
    >>> clf.predict(G[cora.test_mask]).shape
    (1000,)
    """
    _conv = "gcn"


class SAGEClassifier(GNNClassifierBase):
    __doc__ = """GraphSAGE node classifier with the mean aggregator.

    Each layer computes ``H W_self + mean_{j in N(i)} H_j W_neigh``, trained
    full batch.

    Read more in the :ref:`User Guide <gnn_classifiers>`.
    """ + _params_doc() + _ATTRS_DOC + _FULL_BATCH_NOTES + """
    References
    ----------
    .. [1] W. L. Hamilton, R. Ying and J. Leskovec, "Inductive Representation
       Learning on Large Graphs", NeurIPS 2017, Algorithm 1.

    Examples
    --------
    >>> from skldp.datasets import load_cora
    >>> from skldp.models import SAGEClassifier
    >>> cora = load_cora()
    >>> G, y = cora.data, cora.target
    >>> clf = SAGEClassifier(epochs=10, random_state=0).fit(G[cora.train_mask],
    ...                                                     y[cora.train_mask])
    >>> clf.predict_proba(G[cora.test_mask]).shape
    (1000, 7)
    """
    _conv = "sage"


class GATClassifier(GNNClassifierBase):
    __doc__ = """Graph attention network node classifier.

    Multi-head attention over each node's neighbours and itself; hidden
    layers concatenate ``heads`` heads, the output layer uses one head. Edge
    weights are not used: each edge counts once.

    Read more in the :ref:`User Guide <gnn_classifiers>`.
    """ + _params_doc(hidden_size=8, activation="elu", dropout=0.6, lr=0.005,
                      heads=8, epochs=1000, patience=100,
                      selection="auto") + _ATTRS_DOC + """    input_scale_ : float
        The constant that multiplied the input features (see ``input_scale``).
""" + _FULL_BATCH_NOTES + """
    References
    ----------
    .. [1] P. Veličković, G. Cucurull, A. Casanova, A. Romero, P. Liò and
       Y. Bengio, "Graph Attention Networks", ICLR 2018, eqs. (1)-(4).

    Examples
    --------
    >>> from skldp.datasets import load_cora
    >>> from skldp.models import GATClassifier
    >>> cora = load_cora()
    >>> G, y = cora.data, cora.target
    >>> clf = GATClassifier(heads=2, epochs=10, random_state=0).fit(G[cora.train_mask],
    ...                                                             y[cora.train_mask])
    >>> clf.predict(G[cora.test_mask]).shape
    (1000,)
    """
    _conv = "gat"

    def __init__(self, hidden_size=8, *, heads=8, attention_dropout=0.6, input_scale="auto",
                 n_layers=2, activation="elu", dropout=0.6, lr=0.005, weight_decay=5e-4,
                 epochs=1000, early_stopping=True, validation=None,
                 validation_fraction=0.1, patience=100, selection="auto", device="auto",
                 random_state=None, verbose=0, label_mechanism=None):
        super().__init__(hidden_size, n_layers=n_layers, activation=activation, dropout=dropout,
                         lr=lr, weight_decay=weight_decay, epochs=epochs,
                         early_stopping=early_stopping, validation=validation,
                         validation_fraction=validation_fraction, patience=patience,
                         selection=selection, device=device, random_state=random_state,
                         verbose=verbose, label_mechanism=label_mechanism)
        self.heads = heads
        self.attention_dropout = attention_dropout
        self.input_scale = input_scale

    _parameter_constraints = {
        **GNNClassifierBase._parameter_constraints,
        "heads": [Count(1)],
        "attention_dropout": [Interval(Real, 0, 1, closed="left")],
        "input_scale": [StrOptions({"auto"}), Interval(Real, 0, np.inf, closed="neither")],
    }

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        G = check_graph_data(X, self, require_adjacency=True, require_finite=True)
        if not G._has_unit_weights():
            warnings.warn("GATClassifier uses the graph's edges, not their weights: every "
                          "edge counts once (a duplicate edge, stored as weight 2, too). "
                          "GCNClassifier and SAGEClassifier use the weights.", UserWarning,
                          stacklevel=3)   # (through scikit-learn's fit wrapper)
        self.input_scale_ = (rms_input_scale(G) if isinstance(self.input_scale, str)
                             else float(self.input_scale))
        return super().fit(X, y)

    fit.__doc__ = GNNClassifierBase.fit.__doc__

    def _build_module(self, n_features, n_classes):
        return GNNEncoder("gat", self._sizes(n_features, n_classes), self.activation,
                          self.dropout, heads=self.heads, sparse_input_dropout=True,
                          attention_dropout=self.attention_dropout,
                          input_scale=getattr(self, "input_scale_", 1.0))  # set by fit


def rms_input_scale(G):
    """``1 / rms`` when the root-mean-square entry of ``G``'s features exceeds 1, else 1.

    Over every node's features (a GNN reads them all), in float64; cached on the graph.
    """
    key = ("skldp.rms_input_scale",)
    scale = G.memo_get(key)
    if scale is None:
        st = G._store
        X = st._on_device if st._features is None else st.features
        n, d = X.shape
        if isinstance(X, torch.Tensor):   # left on a device by a step: summed there
            sq = float(torch_blocks_sum(X, lambda b: b.double().square().sum()))
        elif sp.issparse(X):
            sq = float(np.square(sp.csr_matrix(X).data, dtype=np.float64).sum())
        else:
            X = np.asarray(X)
            step = max(1, (1 << 22) // max(d, 1))
            sq = sum(float(np.square(X[s:s + step], dtype=np.float64).sum())
                     for s in range(0, n, step))
        rms = np.sqrt(sq / max(n * d, 1))
        scale = 1.0 / rms if rms > 1.0 else 1.0
        G.memo_set(key, scale)
    return scale
