"""Full-batch GNN classifiers on sparse adjacency: GCN, GraphSAGE, GAT."""

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch import nn

from ..utils.validation import check_graph_data
from ._base import TorchClassifierBase
from ._torch_utils import normalized_adjacency, to_torch_dense, to_torch_sparse

__all__ = ["GCNClassifier", "SAGEClassifier", "GATClassifier", "GNNClassifierBase",
           "graph_tensors", "GNNEncoder"]

_ACTIVATIONS = {"relu": F.relu, "elu": F.elu, "selu": F.selu, "tanh": torch.tanh,
                "leaky_relu": F.leaky_relu}
_SPARSE_DENSITY = 0.05  # sparser features stay sparse on the device


def _matmul(x, w):
    """x @ w for dense or sparse x."""
    if x.layout != torch.strided:
        return torch.sparse.mm(x, w)
    return x @ w


class _GCNConv(nn.Module):
    """H' = Â H W (Kipf & Welling 2017, eq. (2))."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.lin = nn.Linear(n_in, n_out)

    def forward(self, x, g):
        return torch.sparse.mm(g["a_sym"], _matmul(x, self.lin.weight.t())) + self.lin.bias


class _SAGEConv(nn.Module):
    """H' = H W_self + mean_{j in N(i)} H_j W_neigh (Hamilton et al. 2017, mean aggregator)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.lin_self = nn.Linear(n_in, n_out)
        self.lin_neigh = nn.Linear(n_in, n_out, bias=False)

    def forward(self, x, g):
        neigh = torch.sparse.mm(g["a_mean"], _matmul(x, self.lin_neigh.weight.t()))
        return _matmul(x, self.lin_self.weight.t()) + self.lin_self.bias + neigh


class _GATConv(nn.Module):
    """Multi-head graph attention over edges with self loops (Velickovic et al. 2018, eqs. 1-4)."""

    def __init__(self, n_in, n_out, heads, concat):
        super().__init__()
        self.heads, self.n_out, self.concat = heads, n_out, concat
        self.lin = nn.Linear(n_in, heads * n_out, bias=False)
        self.att_src = nn.Parameter(torch.empty(heads, n_out))
        self.att_dst = nn.Parameter(torch.empty(heads, n_out))
        self.bias = nn.Parameter(torch.zeros(heads * n_out if concat else n_out))
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)

    def forward(self, x, g):
        src, dst = g["src"], g["dst"]
        n = g["n"]
        h = _matmul(x, self.lin.weight.t()).view(-1, self.heads, self.n_out)
        e = F.leaky_relu((h * self.att_src).sum(-1)[src] + (h * self.att_dst).sum(-1)[dst], 0.2)
        e_max = torch.full((n, self.heads), -torch.inf, device=e.device, dtype=e.dtype)
        e_max = e_max.scatter_reduce(0, dst[:, None].expand_as(e), e, reduce="amax")
        w = torch.exp(e - e_max[dst])
        denom = torch.zeros((n, self.heads), device=e.device, dtype=e.dtype).index_add_(0, dst, w)
        alpha = w / denom[dst]
        alpha = F.dropout(alpha, p=g.get("att_dropout", 0.0), training=self.training)
        out = torch.zeros((n, self.heads, self.n_out), device=e.device, dtype=h.dtype)
        out.index_add_(0, dst, alpha[..., None] * h[src])
        out = out.reshape(n, -1) if self.concat else out.mean(dim=1)
        return out + self.bias


class GNNEncoder(nn.Module):
    """A stack of graph convolutions with activation and dropout between them."""

    def __init__(self, conv, sizes, activation="relu", dropout=0.5, heads=1):
        super().__init__()
        layers = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            last = i == len(sizes) - 2
            if conv == "gat":
                n_in = a if i == 0 else a * heads
                layers.append(_GATConv(n_in, b, heads=1 if last else heads, concat=not last))
            else:
                layers.append({"gcn": _GCNConv, "sage": _SAGEConv}[conv](a, b))
        self.layers = nn.ModuleList(layers)
        self.act = _ACTIVATIONS[activation]
        self.dropout = dropout

    def forward(self, x, g):
        for i, layer in enumerate(self.layers):
            if x.layout == torch.strided:
                x = F.dropout(x, self.dropout, self.training)
            x = layer(x, g)
            if i < len(self.layers) - 1:
                x = self.act(x)
        return x


def graph_tensors(G, device, conv="gcn", self_loops=True):
    """Tensors a GNN needs for the whole graph of ``G`` (features, normalised adjacency).

    Sparse features with density below 5 % stay sparse on the device.
    """
    A = G.require_adjacency("GNN")
    X = G.features
    if sp.issparse(X) and X.nnz < _SPARSE_DENSITY * X.shape[0] * max(X.shape[1], 1):
        x = to_torch_sparse(X, device)
    else:
        x = to_torch_dense(X, device)
    g = {"n": A.shape[0]}
    if conv == "gcn":
        g["a_sym"] = to_torch_sparse(normalized_adjacency(A, self_loops, "sym"), device)
    elif conv == "sage":
        g["a_mean"] = to_torch_sparse(normalized_adjacency(A, False, "rw"), device)
    else:
        A1 = sp.coo_matrix(A + sp.eye(A.shape[0]) if self_loops else A)
        g["src"] = torch.as_tensor(A1.col, dtype=torch.long, device=device)
        g["dst"] = torch.as_tensor(A1.row, dtype=torch.long, device=device)
    return x, g


class GNNClassifierBase(TorchClassifierBase):
    """Full-batch GNN node classifier on a :class:`~skldp.GraphData` view.

    ``fit(G[train], y[train])`` propagates over the whole graph of ``G`` and
    fits the loss on the view's rows; ``predict(G[test])`` likewise.
    Subclasses set ``_conv``.
    """

    _conv = None

    def __init__(self, hidden_size=16, *, n_layers=2, activation="relu", dropout=0.5,
                 lr=0.01, weight_decay=5e-4, epochs=200, early_stopping=True,
                 validation_fraction=0.1, patience=50, device="auto", random_state=None,
                 verbose=0):
        self.hidden_size = hidden_size
        self.n_layers = n_layers
        self.activation = activation
        self.dropout = dropout
        self.lr = lr
        self.weight_decay = weight_decay
        self.epochs = epochs
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    batch_size = None  # full batch: every step sees the whole graph

    def _validate_hyperparameters(self):
        super()._validate_hyperparameters()
        if not isinstance(self.n_layers, (int, np.integer)) or self.n_layers < 1:
            raise ValueError(f"n_layers must be a positive integer, got {self.n_layers!r}.")
        if self.activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, "
                             f"got {self.activation!r}.")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}.")

    def _prepare(self, X, device):
        G = check_graph_data(X, self, require_adjacency=True)
        x, g = graph_tensors(G, device, self._conv)
        return (x, g), G.rows

    def _sizes(self, n_features, n_classes):
        return [n_features] + [self.hidden_size] * (self.n_layers - 1) + [n_classes]

    def _build_module(self, n_features, n_classes):
        return GNNEncoder(self._conv, self._sizes(n_features, n_classes), self.activation,
                          self.dropout)

    def _forward(self, module, data, positions):
        x, g = data
        return module(x, g)[positions]


_PARAMS_DOC = """
    Parameters
    ----------
    hidden_size : int, default=16
        Width of the hidden layers.
    n_layers : int, default=2
        Number of graph convolutions.
    activation : {"relu", "elu", "selu", "tanh", "leaky_relu"}, default="relu"
    dropout : float, default=0.5
        Dropout on the input of every layer (dense inputs).
    lr, weight_decay : float
        Adam learning rate and L2 penalty.
    epochs : int, default=200
        Maximum number of full-batch epochs.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the training rows (stratified) and
        keep the weights of the epoch with the lowest validation loss; stop
        after ``patience`` epochs without improvement.
    validation_fraction : float, default=0.1
    patience : int, default=50
    device : str, default="auto"
        "auto" uses CUDA when available.
    random_state : int, RandomState or None
        Seeds initialisation, dropout and the validation split.
    verbose : int, default=0
        Print the loss of every epoch.

    Attributes
    ----------
    classes_ : ndarray
    module_ : torch.nn.Module
        The trained network (on the CPU).
    n_iter_ : int
    loss_curve_, validation_scores_ : list of float
"""


class GCNClassifier(GNNClassifierBase):
    __doc__ = """Graph convolutional network node classifier.

    Each layer computes D^-1/2 (A + I) D^-1/2 H W (Kipf & Welling, ICLR 2017,
    eq. (2)); this is the model of paper 000 (LPGNN, §5) and of the GCN rows
    of papers 001 and 003.
    """ + _PARAMS_DOC + """
    References
    ----------
    Kipf & Welling, "Semi-Supervised Classification with Graph Convolutional
    Networks", ICLR 2017.

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

    Each layer computes H W_self + mean_{j in N(i)} H_j W_neigh (Hamilton et
    al., NeurIPS 2017, Algorithm 1 with the mean aggregator, full batch). This
    is the backbone of LPGNN (later version) and RGNN (paper 001).
    """ + _PARAMS_DOC + """
    References
    ----------
    Hamilton, Ying & Leskovec, "Inductive Representation Learning on Large
    Graphs", NeurIPS 2017.
    """
    _conv = "sage"


class GATClassifier(GNNClassifierBase):
    __doc__ = """Graph attention network node classifier.

    Multi-head attention over each node's neighbours and itself (Velickovic et
    al., ICLR 2018, eqs. (1)-(4)); hidden layers concatenate ``heads`` heads,
    the output layer uses one head.
    """ + _PARAMS_DOC + """
    heads : int, default=8
        Attention heads in the hidden layers.

    References
    ----------
    Velickovic et al., "Graph Attention Networks", ICLR 2018.
    """
    _conv = "gat"

    def __init__(self, hidden_size=8, *, heads=8, n_layers=2, activation="elu", dropout=0.6,
                 lr=0.005, weight_decay=5e-4, epochs=200, early_stopping=True,
                 validation_fraction=0.1, patience=50, device="auto", random_state=None,
                 verbose=0):
        super().__init__(hidden_size, n_layers=n_layers, activation=activation, dropout=dropout,
                         lr=lr, weight_decay=weight_decay, epochs=epochs,
                         early_stopping=early_stopping, validation_fraction=validation_fraction,
                         patience=patience, device=device, random_state=random_state,
                         verbose=verbose)
        self.heads = heads

    def _build_module(self, n_features, n_classes):
        return GNNEncoder("gat", self._sizes(n_features, n_classes), self.activation,
                          self.dropout, heads=self.heads)
