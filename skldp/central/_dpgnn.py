"""DP-GNN: node-level DP 1-layer GNNs (Daigavane et al., 2021), and DP-MLP.

Both classifiers share one DP optimiser (:class:`_DPTrainerBase`): per-node
gradients with ``torch.func`` (``functional_call`` + ``vmap`` + ``grad``),
per-layer-group clipping, Gaussian noise scaled to the node-level sensitivity
``2 (K + 1) C`` (Lemma 1), batches of fixed size drawn without replacement and
the RDP accountant of Theorem 1 (:mod:`skldp.accounting`).

Per-node gradients of the first encoder layer (``d x h`` weights, with ``d``
up to thousands of sparse bag-of-words features) are never materialised: its
per-node gradient is ``sum_u delta_u x_u^T`` over the node's neighbourhood, so
its squared norm is ``sum_{u,u'} <x_u, x_u'> <delta_u, delta_u'>`` (the "ghost
norm" of Goodfellow 2015; Li et al. 2022), computed from the per-node
gradients ``delta`` with respect to the layer's outputs (given by ``vmap``) and
a Gram matrix of the neighbourhood features precomputed once per fit. The
clipped sum of that layer is then one autograd backward of
``sum <stopgrad(c_v delta_vu), z_vu>``. All other parameters get explicit
per-node gradients from ``vmap(grad(...))``.
"""

import copy
import math
import numbers
import time
import uuid
import warnings

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from joblib import hash as joblib_hash
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted
from torch import nn
from torch.func import functional_call, grad, vmap

from .._graph_data import GraphData, reads_users_data, refusal_is_read
from .._torch import (
    SGD,
    Adam,
    EarlyStopper,
    default_sync_every,
    resolve_device,
    sparse_csr_tensor,
    train,
)
from .._torch._device import DEVICE_CONSTRAINT
from ..accounting._dpsgd import (
    calibrate_dpsgd_noise_multiplier,
    compute_dpsgd_epsilon,
    dp_accounting_installed,
)
from ..accounting._rdp import (
    calibrate_noise_multiplier,
    compute_epsilon,
)
from ..base import (
    LABELS_OUTSIDE_DOMAIN,
    GraphClassifierMixin,
    PrivateStepMixin,
    array_node_keys,
    clean_label_users,
    note_edge_read,
    refuse_foreign_labels,
)
from ..exceptions import PrivacyLeakWarning
from ..model_selection._validation import validation_split
from ..population import (
    BudgetExceededError,
    CollectionSpec,
    default_population,
    feature_digests,
)
from ..population._spec import public_params, step_kind
from ..utils._adjacency import normalized_adjacency
from ..utils._arrays import check_float32_range, distinct
from ..utils._logging import verbose_logger
from ..utils._random import array_fingerprint, collection_seed
from ..utils.validation import (
    RANDOM_STATE_CONSTRAINT,
    Count,
    Interval,
    check_feature_array,
    check_feature_names,
    check_finite_features,
    check_graph_data,
    check_int,
    record_feature_names,
)
from ._sampling import degree_bounded_sample

__all__ = ["DPGNNClassifier", "DPMLPClassifier"]

_ACT = {"tanh": torch.tanh, "relu": F.relu, "elu": F.elu}


def _accountant(kind, N, m, K, T, delta):
    """``(eps_of(z), calibrate(target))`` of the accountant ``kind`` (``"hypergeometric"``:
    Theorem 1; else the ``bound`` of :func:`~skldp.accounting.compute_dpsgd_epsilon`)."""
    if kind == "hypergeometric":
        return (lambda z: compute_epsilon(z, N, m, K, T, delta),
                lambda target: calibrate_noise_multiplier(target, delta, N, m, K, T))
    if K != 0:
        raise ValueError(f"the {kind!r} accountant is for K = 0 (one gradient per user), "
                         f"got K = {K}.")
    # Replace-one with per-example clipping: the clipped sum has sensitivity 2 C (here
    # 2 sqrt(L) in the rescaled space) and z = sigma / (2 C) is exactly the noise
    # multiplier of dp-accounting's GaussianDpEvent (skldp.accounting._dpsgd).
    return (lambda z: compute_dpsgd_epsilon(z, N, m, T, delta, bound=kind),
            lambda target: calibrate_dpsgd_noise_multiplier(target, delta, N, m, T,
                                                             bound=kind))


# --------------------------------------------------------------------- module
class _OneLayerGNN(nn.Module):
    """``MLP_dec(act(A_v act(MLP_enc(X)) Theta_agg))`` (Daigavane et al., 2021, eq. (2)).

    ``forward(z1, w)`` starts from the first encoder layer's outputs ``z1`` of
    the nodes of each neighbourhood (shape ``(..., K + 1, h)``) and their
    aggregation weights ``w`` (``(..., K + 1)``). Without ``agg`` (DP-MLP) the
    neighbourhood is the node alone and ``w = 1``.
    """

    def __init__(self, n_features, n_classes, hidden, n_enc, n_dec, activation, graph,
                 generator=None):
        super().__init__()
        self.activation = activation
        # With a generator, the layers are built under fork_rng (torch's global
        # CPU generator is left exactly as it was) and then initialised from the
        # generator with nn.Linear's default scheme.
        # On the CPU whatever torch's default device: the generator is a CPU one
        with torch.random.fork_rng(devices=[], enabled=generator is not None), \
                torch.device("cpu"):
            self.enc_in = nn.Linear(n_features, hidden)
            self.enc = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(n_enc - 1)])
            self.agg = nn.Linear(hidden, hidden) if graph else None
            self.dec = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(n_dec - 1)]
                                     + [nn.Linear(hidden, n_classes)])
        if generator is not None:
            with torch.no_grad():
                for lin in self.modules():
                    if isinstance(lin, nn.Linear):
                        nn.init.kaiming_uniform_(lin.weight, a=math.sqrt(5), generator=generator)
                        bound = 1.0 / math.sqrt(lin.in_features)
                        nn.init.uniform_(lin.bias, -bound, bound, generator=generator)

    def encode(self, z1):
        act = _ACT[self.activation]
        h = act(z1)
        for lin in self.enc:
            h = act(lin(h))
        return h

    def head(self, h):
        act = _ACT[self.activation]
        if self.agg is not None:
            h = act(self.agg(h))
        for lin in self.dec[:-1]:
            h = act(lin(h))
        return self.dec[-1](h)

    def forward(self, z1, w):
        e = self.encode(z1)
        return self.head((w.unsqueeze(-1) * e).sum(dim=-2))

    def groups(self):
        """Parameter name -> clipping group ("enc", "agg", "dec")."""
        return {name: name.split(".")[0].replace("enc_in", "enc")
                for name, _ in self.named_parameters()}


# ------------------------------------------------------------ fit input helpers
def _check_distinct_users(keys, owner):
    """Refuse a training set that holds a user more than once (``keys``: their node keys).

    The accountants count each training row as one user: a user present twice
    (e.g. a class oversampled with ``G[idx]`` and repeated ids) moves two clipped
    gradients, and is protected only at group size 2, not by ``epsilon_``.
    """
    keys = np.asarray(keys)
    n_distinct = len(distinct(keys))
    if n_distinct != len(keys):
        raise ValueError(
            f"{owner}: the training view contains repeated nodes ({len(keys)} rows, "
            f"{n_distinct} distinct users); each node may appear once (node-level privacy "
            "counts each node once, and epsilon_ would not cover a user present twice). "
            "Do not oversample private rows; weight the classes in the model instead.")


def _fit_digest(*parts):
    """One hash of what a fit reads (arrays and content fingerprints), for its seeds.

    Computed once per fit, only with an explicit ``random_state`` (see
    :meth:`_DPTrainerBase._stream_seed`); never stored on the estimator (an
    unkeyed hash of the training data would tell which data it was).
    """
    return joblib_hash(parts)


def _graph_fingerprints(G):
    """Content hashes of the graph's features and adjacency, computed once per graph (a
    search fits many candidates and folds on it; the graph holds the data anyway)."""
    key = ("DP-GNN fingerprint of the features",)
    features = G.memo_get(key)
    if features is None:
        features = G.memo_set(key, array_fingerprint(G.features))
    return features, G.operator(("DP-GNN fingerprint",), array_fingerprint)


def _check_min_features(shape, owner):
    """Refuse 0 features: the first layer would have no input (and its initialisation
    divides by its input width)."""
    if shape[1] < 1:
        raise ValueError(f"Found {shape[1]} feature(s) (shape={tuple(shape)}) while a minimum "
                         f"of 1 is required by {owner}. Give each node at least one feature, "
                         "e.g. a constant column or its degree.")


class _Features:
    """All nodes' features on the CPU; gathers rows as torch tensors on the device."""

    def __init__(self, X, device):
        self.sparse = sp.issparse(X)
        self.X = sp.csr_matrix(X, dtype=np.float32) if self.sparse else \
            np.ascontiguousarray(X, dtype=np.float32)
        self.device = device
        self._dense_t = None if self.sparse else torch.as_tensor(self.X, device=device)

    def rows(self, idx, transpose=False):
        """Rows ``idx`` (1-D int array) as a torch tensor (sparse CSR when the input is sparse).

        With ``transpose=True`` also returns the transpose (CSR too), used to
        form ``X_b^T D`` without autograd through a sparse product.
        """
        if not self.sparse:
            x = self._dense_t[torch.as_tensor(idx, device=self.device)]
            return (x, None) if transpose else x
        R = self.X[idx]
        x = _csr_tensor(R, self.device)
        if not transpose:
            return x
        return x, _csr_tensor(R.T.tocsr(), self.device)

    def row_dots(self, a, b):
        """``<x_a[i], x_b[i]>`` for index arrays ``a``, ``b`` (numpy), in float64.

        Products of float32 numbers are exact in float64; the ghost norm subtracts
        these dots from one another, which float32 sums cannot afford.
        """
        if self.sparse:
            Xa, Xb = self.X[a].astype(np.float64), self.X[b].astype(np.float64)
            return np.asarray(Xa.multiply(Xb).sum(axis=1)).ravel()
        return np.einsum("ij,ij->i", self.X[a], self.X[b], dtype=np.float64)


def _csr_tensor(R, device):
    R = sp.csr_matrix(R)
    return sparse_csr_tensor(torch.from_numpy(R.indptr.astype(np.int64)),
                             torch.from_numpy(R.indices.astype(np.int64)),
                             torch.from_numpy(R.data.astype(np.float32)), size=R.shape,
                             device=device, check_invariants=False)


def _linear(x, lin):
    """``x W^T + b`` for dense or sparse CSR ``x`` (no autograd through ``x``)."""
    return x @ lin.weight.t() + lin.bias


def _first_layer_grads(x, xt, D):
    """Gradients of ``z = x W^T + b`` given ``D = dL/dz``: ``(D^T x, sum D)``."""
    gW = (xt @ D).t() if xt is not None else D.t() @ x
    return gW.contiguous(), D.sum(dim=0)


def _neighbourhood_gram(feats, nb, chunk=8192):
    """Gram matrices ``<x_u, x_u'>`` of each row's neighbourhood, shape (N, k, k), float64."""
    N, k = nb.shape
    out = np.empty((N, k, k), dtype=np.float64)
    for s in range(0, N, chunk):  # blocks of nodes, a loop over (K+1)^2 pairs inside
        b = nb[s:s + chunk]
        for i in range(k):
            for j in range(i, k):
                d = feats.row_dots(b[:, i], b[:, j])
                out[s:s + chunk, i, j] = d
                out[s:s + chunk, j, i] = d
    return out


def _padded_neighbourhoods(S, nodes, K):
    """Indices (N, k) [self, neighbours..., padding=self] and row-normalised weights.

    ``k - 1 = min(K, largest degree of the nodes in S)``: the padding follows the
    sampled graph, not the bound ``K`` (a generous ``K`` would otherwise allocate
    ``N (K+1)^2`` Gram entries of zeros; the accountant still uses ``K``).
    Weights follow ``(D + I)^-1 (A + I)`` on the sampled graph ``S`` (the
    "inverse-degree" normalisation of Daigavane et al., 2021, Appendix E);
    padding gets 0.
    """
    S = sp.csr_matrix(S)
    nodes = np.asarray(nodes, dtype=np.int64)
    deg = np.diff(S.indptr)[nodes]
    N = len(nodes)
    top = int(deg.max(initial=0))
    if top > K:
        raise ValueError(f"a node has {top} neighbours in the sampled graph, more than "
                         f"max_degree={K}; sample it with degree_bounded_sample(A, {K}).")
    width = top + 1
    nb = np.repeat(nodes[:, None], width, axis=1)
    w = np.zeros((N, width), dtype=np.float32)
    w[:, 0] = 1.0 / (deg + 1)
    if top > 0:
        starts = S.indptr[nodes]
        row = np.repeat(np.arange(N), deg)
        pos = np.arange(deg.sum()) - np.repeat(np.cumsum(deg) - deg, deg)
        nb[row, 1 + pos] = S.indices[np.repeat(starts, deg) + pos]
        w[row, 1 + pos] = (1.0 / (deg + 1))[row]
    return nb, w


def _row_inputs(feats, rows, A_rows, device, dtype):
    """What :func:`_forward_inputs` needs for the rows ``rows``: their features, or the
    features of the nodes they aggregate and the aggregation as a sparse tensor."""
    if A_rows is None:
        return feats.rows(rows).to(dtype), None
    A = sp.csr_matrix(A_rows)
    cols = distinct(A.indices)  # encode only the nodes that are aggregated
    A = sp.csr_matrix((A.data, np.searchsorted(cols, A.indices), A.indptr),
                      shape=(A.shape[0], len(cols))).tocoo()
    At = torch.sparse_coo_tensor(
        torch.from_numpy(np.vstack([A.row, A.col]).astype(np.int64)),
        torch.from_numpy(A.data).to(dtype), A.shape, device=device, check_invariants=False)
    return feats.rows(cols).to(dtype), At


def _forward_inputs(module, x, At):
    """Logits of ``_OneLayerGNN`` from :func:`_row_inputs` (full neighbourhoods)."""
    E = module.encode(_linear(x, module.enc_in))
    return module.head(E if At is None else torch.sparse.mm(At, E))


def _forward_rows(module, feats, rows, A_rows, device, dtype):
    """Logits of the rows ``rows`` (aggregating over ``A_rows`` when given)."""
    return _forward_inputs(module, *_row_inputs(feats, rows, A_rows, device, dtype))


class _PerNodeGradients:
    """Per-node gradients of ``_OneLayerGNN`` on padded neighbourhoods, and their clipped sums.

    ``nb``/``w`` hold, for each training node, the indices of the nodes it
    aggregates (itself first) and their weights. Everything but the first
    encoder layer gets explicit per-node gradients from
    ``vmap(grad(functional_call(...)))``; the first layer uses the ghost norm
    (module docstring).
    """

    def __init__(self, module, feats, nb, w_t, y_t, with_gram=True):
        self.module, self.feats, self.nb, self.w_t, self.y_t = module, feats, nb, w_t, y_t
        self.device = w_t.device
        self.group_of = module.groups()
        self.groups = tuple(dict.fromkeys(self.group_of.values()))
        self.params = dict(module.named_parameters())
        self.rest_names = [n for n in self.group_of if not n.startswith("enc_in.")]
        self.gram = torch.as_tensor(_neighbourhood_gram(feats, nb), device=self.device) \
            if with_gram else None

        def loss_one(rest, z1, wv, yv):
            out = functional_call(module, rest, (z1, wv))
            return F.cross_entropy(out.unsqueeze(0), yv.unsqueeze(0))

        self._per_node = vmap(grad(loss_one, argnums=(0, 1)), in_dims=(None, 0, 0, 0))

    def z1(self, idx):
        x, xt = self.feats.rows(self.nb[idx].ravel(), transpose=True)
        with torch.no_grad():
            z1 = _linear(x, self.module.enc_in).reshape(len(idx), self.nb.shape[1], -1)
        return z1, x, xt

    #: Below this share of the sum of its terms' absolute values, the ghost norm's signed
    #: sum has lost digits to cancellation (and the float32 sum that adds the node's
    #: gradient is no longer small beside it): the node's norm is then bounded instead.
    GHOST_CANCELLATION = 1e-2

    def parts(self, idx):
        """Per-node gradients (all but the first layer), ``dl/dz1`` and per-group norms.

        The first layer's norm is the ghost norm ``sum <x_u,x_u'><d_u,d_u'>`` in
        float64, or, where that sum cancels, its bound ``sum_u |x_u| |d_u|`` (the
        triangle inequality: the node is clipped more, never less); no host
        synchronisation either way. A non-finite norm is returned as ``inf`` (the
        node's gradient of that group is then dropped).
        """
        z1, x, xt = self.z1(idx)
        rest = {n: self.params[n].detach() for n in self.rest_names}
        g_rest, delta_z = self._per_node(rest, z1, self.w_t[idx], self.y_t[idx])
        sq = {g: torch.zeros(len(idx), device=self.device) for g in self.groups}
        # in float32 this sum's cancellation gave norms 9% too small (the clipped gradient
        # then exceeded C) or NaN, for large, nearly opposite features of two neighbours
        d64, gram = delta_z.double(), self.gram[idx]
        terms = gram * torch.einsum("bih,bjh->bij", d64, d64)
        w_sq = terms.sum(dim=(1, 2))
        bound = (torch.diagonal(gram, dim1=1, dim2=2).clamp(min=0).sqrt()
                 * d64.norm(dim=2)).sum(dim=1)
        w_sq = torch.where(w_sq >= self.GHOST_CANCELLATION * terms.abs().sum(dim=(1, 2)),
                           w_sq, bound * bound)
        sq["enc"] = w_sq + d64.sum(dim=1).pow(2).sum(dim=1)
        for n, g in g_rest.items():
            sq[self.group_of[n]] = sq[self.group_of[n]] + g.reshape(len(idx), -1).pow(2).sum(1)
        inf = torch.tensor(math.inf, device=self.device)
        norms = {g: torch.where(torch.isfinite(v), v.sqrt(), inf) for g, v in sq.items()}
        return (x, xt), g_rest, delta_z, norms

    def clipped_sum(self, idx, C):
        """``sum_v Clip_{C_l}(grad_l l_v)`` for each layer group ``l`` (Algorithm 1).

        A node whose norm is not finite contributes nothing to that group (as if its
        norm were infinite): its contribution stays within ``C`` whatever its data, as
        the guarantee needs, where a NaN would spread to the whole sum.
        """
        (x, xt), g_rest, delta_z, nrm = self.parts(idx)
        keep = {g: torch.isfinite(nrm[g]) for g in self.groups}
        c = {g: torch.where(keep[g], torch.clamp(C[g] / (nrm[g] + 1e-12), max=1.0), 0.0)
             for g in self.groups}
        # first encoder layer: clipped sum X_b^T (c * delta), never per node
        c_enc = c["enc"].to(delta_z.dtype)
        D = torch.where(keep["enc"][:, None, None], c_enc[:, None, None] * delta_z, 0.0)
        out = dict(zip(("enc_in.weight", "enc_in.bias"),
                       _first_layer_grads(x, xt, D.reshape(-1, delta_z.shape[-1])), strict=True))
        for n, g in g_rest.items():
            k = keep[self.group_of[n]].reshape(-1, *([1] * (g.dim() - 1)))
            out[n] = torch.einsum("b,b...->...", c[self.group_of[n]].to(g.dtype),
                                  torch.where(k, g, 0.0))
        return out

    def summed(self, idx):
        """Plain (unclipped) sum of the per-node gradients, by one backward pass."""
        z1, x, xt = self.z1(idx)
        z1.requires_grad_(True)
        for p in self.params.values():
            p.grad = None
        out = self.module(z1, self.w_t[idx])
        F.cross_entropy(out, self.y_t[idx], reduction="sum").backward()
        res = dict(zip(("enc_in.weight", "enc_in.bias"),
                       _first_layer_grads(x, xt, z1.grad.reshape(-1, z1.shape[-1])), strict=True))
        for n in self.rest_names:
            res[n] = self.params[n].grad
            self.params[n].grad = None
        return res


# ------------------------------------------------------------- noise on a grid
#: The grid step is at most 2**-GRID_BITS times the noise standard deviation
#: (and times the sensitivity): see the classifiers' Notes, "Noise on a grid".
GRID_BITS = 20


def _grid_step(scale):
    """Largest power of two that is at most ``scale * 2**-GRID_BITS``."""
    return 2.0 ** (math.floor(math.log2(scale)) - GRID_BITS)


def _check_noise_grid(z, base, C, m, why="", after=""):
    """Raise unless every group's grid holds noise ``z`` (``why``: where ``z`` came from).

    The step (:func:`_grid_step` of ``min(z, 1) base C_g``) must be a positive float
    and a batch's clipped sum (at most ``m C_g``) a finite number of steps, with room
    for the noise; else the noise rounds to nothing or the sums overflow.
    """
    after = after or "Nothing was trained or charged."
    for g, c in C.items():
        scale = min(z, 1.0) * base * c
        if math.isinf(scale):
            raise ValueError(
                f"max_grad_norm={c:.4g} (layer group {g!r}) is too large for the noise grid: "
                f"the noise scale {min(z, 1.0):.4g} * {base:.4g} * max_grad_norm overflows "
                f"float64. Use a smaller max_grad_norm. {after}")
        step = _grid_step(scale) if scale > 0 else 0.0
        if step == 0.0 or m * (c / step) >= 2.0 ** 1020:
            raise ValueError(
                f"noise_multiplier={z:.4g}{why} is too small for the noise grid: its step "
                f"(2**-{GRID_BITS} of the noise of layer group {g!r}, max_grad_norm={c:.4g}) "
                "underflows "
                "float64, or a batch's gradient sum counted in steps overflows it. Such "
                "noise protects nothing; use noise_multiplier=0 for non-private training, "
                f"or a larger noise. {after}")


def _grid_gaussian(s, sigma, step, generator):
    """``s`` randomly rounded to ``step * Z`` plus Gaussian noise rounded to ``step * Z``.

    Each coordinate ``x`` of ``s / step`` becomes ``floor(x + u)`` with ``u ~ U[0, 1)``
    (unbiased randomized rounding), then ``round(e sigma / step)`` with
    ``e ~ N(0, 1)`` is added. The result, returned in float64, is an integer
    multiple of ``step`` whatever ``s`` is: the low-order bits of floating-point
    noise that carry information about the data (Mironov 2012) never reach the
    output. ``step`` must be a power of two (division by it is exact); the
    integers stay exact in float64 while ``|s| / step < 2**52``.

    Parameters
    ----------
    s : torch.Tensor
        The clipped sum (any float dtype).
    sigma : float
        Noise standard deviation (before rounding).
    step : float
        Grid step, a power of two.
    generator : torch.Generator
        The noise generator (on ``s``'s device).

    Returns
    -------
    noisy : torch.Tensor of float64
        ``step * k`` for an integer tensor ``k``; mean ``s``, variance
        ``sigma^2 + step^2 / 12 +`` (rounding variance ``<= step^2 / 4``).
    """
    x = s.detach().to(torch.float64) / step
    u = torch.rand(x.shape, generator=generator, dtype=torch.float64, device=x.device)
    k = torch.floor(x + u)
    e = torch.randn(x.shape, generator=generator, dtype=torch.float64, device=x.device)
    return (k + torch.round(e * (sigma / step))) * step


def _refuse_non_finite_parameters(module, n_iter):
    """Raise if a parameter ended NaN or inf (the noisy sums or the steps overflowed
    float32): the model would predict NaN probabilities and the first class everywhere.
    The check reads only the released parameters (post-processing), once per fit."""
    bad = [n for n, p in module.named_parameters() if not bool(torch.isfinite(p).all())]
    if bad:
        raise ValueError(
            f"Training diverged: after {n_iter} step(s) the parameters {bad} hold NaN or "
            "infinite values, so the model would predict NaN probabilities. The noisy "
            "gradient sums or the updates overflowed float32: use a smaller "
            "noise_multiplier or lr, or scale the features to [-1, 1].")


# ------------------------------------------------------------------ the base
#: Most steps ``T`` a training may run (``n_steps``, or ``epochs`` converted): more is
#: refused before anything is read or charged (the training would run for days).
MAX_STEPS = 10**8


class _DPTrainerBase(PrivateStepMixin, GraphClassifierMixin, BaseEstimator):
    """DP-SGD / DP-Adam on per-node gradients of ``_OneLayerGNN`` (shared code)."""

    privacy_model = "central"
    _graph = True
    #: The constraints of the parameters both trainers have (subclasses add theirs).
    _parameter_constraints = {
        "classes": ["array-like", None],
        "batch_size": [Count(1)],
        "n_steps": [Count(1), None],           # needed when epochs is None (_setup_fit)
        "epochs": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "lr": [Interval(numbers.Real, 0, np.inf, closed="neither")],
        "optimizer": [StrOptions({"adam", "sgd"})],
        "noise_multiplier": [Interval(numbers.Real, 0, None, closed="left"), None],
        "target_epsilon": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "delta": [Interval(numbers.Real, 0, 1, closed="neither"), None],
        # a number, one per layer group (dict or list), or None: checked in _thresholds
        "max_grad_norm": [Interval(numbers.Real, 0, np.inf, closed="neither"), dict,
                          "array-like", None],
        "clip_percentile": [Interval(numbers.Real, 0, 100, closed="right"), None],
        "hidden_size": [Count(1)],
        "encoder_layers": [Count(1)],
        "decoder_layers": [Count(1)],
        "activation": [StrOptions(set(_ACT))],
        "validation": ["array-like", None],   # check_validation checks what it names
        "patience": [Count(1), None],
        "device": DEVICE_CONSTRAINT,
        "random_state": RANDOM_STATE_CONSTRAINT,
        "verbose": ["verbose"],
    }

    # ------------------------------------------------------------ accounting
    def _record_training(self, population, eps, delta, n_train, n_users, node_keys=None):
        """Charge the ``n_users`` whose data a training on ``n_train`` nodes reads (before
        it runs: a capped budget refuses it). ``node_keys`` names them (a GraphData's
        users): the training then protects their parts as a collection would
        (:meth:`Population.record_training <skldp.population.Population.record_training>`).

        Each training is a new event: two trainings on different data release two
        models, even with the same seed.
        """
        spec = CollectionSpec(id="", kind=step_kind(self),
                              protects=tuple(self.protects), epsilon=float(eps),
                              delta=float(delta), model="central",
                              # where and how verbosely it runs is not part of the release
                              params=public_params(self, exclude=("random_state", "device",
                                                                  "verbose")),
                              public_state={"n_train": int(n_train)}
                              ).with_nonce(uuid.uuid4().hex[:16])
        population.record_training(spec, n_users, node_keys)
        self.collection_, self.ledger_ = spec, population.ledger

    def _clear_reads(self, population, reads):
        """Charge the users whose data a non-private option reads (epsilon = inf).

        ``reads`` lists ``(option, part, node_keys)``: ``option`` (clip_percentile,
        validation, classes=None) reads ``part`` of those users in the clear. Done before
        anything is read or trained: a population with a budget refuses it, and nothing
        happens (the label domain read for ``classes=None`` is dropped).
        """
        for option, part, keys in reads:
            if keys is None or len(keys) == 0:
                continue
            try:
                population.note_clear_read(f"{step_kind(self)}({option})", part,
                                           distinct(np.asarray(keys, dtype=np.uint64)))
            except BudgetExceededError as exc:
                if option == "classes=None":
                    self.__dict__.pop("classes_", None)
                    raise BudgetExceededError(
                        f"{type(self).__name__}(classes=None) reads the label domain (which "
                        f"classes occur) from the labels of {len(distinct(keys))} user(s) "
                        "in the clear (epsilon=inf), which no privacy budget admits (this "
                        f"population's is {population.budget:.4g} per user). Nothing was "
                        "trained. Pass the public label domain, e.g. classes=[0, 1, 2, 3]."
                    ) from exc
                what = {"clip_percentile": "sets the clipping thresholds from the private "
                                           "per-node gradient norms",
                        "validation": "selects the iterate on the validation nodes' loss"}
                raise BudgetExceededError(
                    f"{type(self).__name__}({option}=...) {what[option]}, reading the {part} "
                    f"of {len(distinct(keys))} user(s) in the clear (epsilon=inf), which no "
                    f"privacy budget admits (this population's is {population.budget:.4g} "
                    f"per user). Nothing was trained. Use {option}=None"
                    + (" and fixed max_grad_norm values." if option == "clip_percentile"
                       else " (release the last iterate), or pick the iterate on public "
                       "data outside the fit.")) from exc

    # ------------------------------------------------------------ randomness
    def _stream_seed(self, stream, data=None):
        """Seed of one independent random stream of this fit.

        A keyed hash of ``random_state`` and the stream's identity (its name,
        the estimator's class, its privacy-relevant parameters and ``data``,
        the fit's :func:`_fit_digest` of what it trains on): the noise, the
        batches, the initialisation and the degree-bounded sample never share
        random numbers; two fits with the same integer ``random_state`` but,
        say, different ``target_epsilon`` do not reuse the same noise (which
        would let ``(x1 sigma2 - x2 sigma1)`` reveal the clipped sums); and
        neither do two trainings on different data (the folds of a
        cross-validation, neighbouring datasets), whose difference would
        otherwise be a difference of clipped sums without noise. The same fit
        on the same data draws the same numbers. ``random_state=None`` takes
        each seed from the OS's entropy (``data`` is then not needed).
        """
        # validation and patience choose among the noisy iterates; they change
        # neither the collection nor its noise (the rows they hold out are in ``data``)
        params = {k: v for k, v in self.get_params().items()
                  if k not in ("random_state", "verbose", "device", "validation", "patience")}
        identity = (stream, type(self).__name__, params)
        return collection_seed(self.random_state,
                               identity if data is None else identity + (data,))

    def _data_digest(self, *parts):
        """:func:`_fit_digest` of ``parts`` (callables are called), or ``None`` with
        ``random_state=None``, whose seeds come from the OS's entropy (no hashing)."""
        if self.random_state is None:
            return None
        return _fit_digest(*(p() if callable(p) else p for p in parts))

    # ---------------------------------------------------------------- labels
    def _encode_targets(self, y, n_rows, X=None):
        """Encode ``y`` against the public label domain ``classes`` (sets ``classes_``)."""
        refuse_foreign_labels(self, X, y)   # another population's reports: no one's here
        if self.classes is None:
            warnings.warn(
                f"{type(self).__name__}(classes=None) reads the set of classes from the "
                "private training labels, which reveals which classes occur (not covered by "
                "epsilon_): the ledger charges those users a read of their labels in the "
                "clear (epsilon=inf). Pass the public label domain, e.g. "
                "classes=[0, 1, 2, 3].", PrivacyLeakWarning, stacklevel=3)
            return self._encode_labels(y, n_rows, X)
        classes = np.asarray(self.classes)
        if classes.ndim != 1:
            raise ValueError(f"classes must be a 1-D array-like, got shape {classes.shape}.")
        classes = np.unique(classes)
        if len(classes) < 2:
            raise ValueError(f"classes must hold at least two distinct labels, got "
                             f"{self.classes!r}.")
        y = self._check_labels(y, n_rows, X)
        # (refusals of the values of clean labels are reads of them)
        with refusal_is_read(self, "labels", clean_label_users(X, y), LABELS_OUTSIDE_DOMAIN):
            check_classification_targets(y)
            unknown = ~np.isin(y, classes)
            if unknown.any():
                if np.issubdtype(y.dtype, np.number) and np.any(y[unknown] == -1):
                    raise ValueError("y contains -1 (unlabelled) for some rows; fit only on "
                                     "labelled nodes, e.g. G[y >= 0], y[y >= 0].")
                bad = np.unique(y[unknown])
                raise ValueError(f"y contains {len(bad)} label(s) outside classes="
                                 f"{classes.tolist()!r}, e.g. {bad[:5].tolist()!r}; classes "
                                 "must be the full public label domain.")
        self.classes_ = classes
        return np.searchsorted(classes, y)

    def _validation_rows(self, X, y_enc):
        """Positions of the fit rows that train and of those named by ``validation``."""
        if self.validation is None:
            return np.arange(len(y_enc)), None
        warnings.warn(
            f"{type(self).__name__}(validation=...) keeps the iterate with the lowest loss on "
            "the validation rows: that choice reads their labels and features (and, for "
            "DP-GNN, their neighbours' features) outside the DP training, so epsilon_ covers "
            "it only if those data are public; the ledger charges those users epsilon=inf.",
            PrivacyLeakWarning, stacklevel=3)
        return validation_split(X, y_enc, validation=self.validation, early_stopping=True,
                                validation_fraction=None, seed=0, owner=self)

    # ------------------------------------------------------------ accounting
    def _accountant_kind(self, K):
        """The accountant of ``epsilon_``: ``"hypergeometric"`` (Daigavane et al.,
        Theorem 1) or a bound of :func:`~skldp.accounting.compute_dpsgd_epsilon`."""
        return "hypergeometric"

    # ------------------------------------------------------------ validation
    def _setup_fit(self):
        """The checks of several parameters together, after the declared ones."""
        if self.epochs is None:
            check_int(self.n_steps, "n_steps", 1)
        if self.target_epsilon is None and self.noise_multiplier is None:
            raise ValueError("noise_multiplier must be a number >= 0 (0 = no privacy), "
                             "got None; or give target_epsilon.")

    def _n_steps(self, N, m):
        """``T``: ``n_steps``, or ``ceil(epochs * N / m)``; at most :data:`MAX_STEPS`."""
        if self.epochs is not None:
            steps = float(self.epochs) * N / m   # (inf when it overflows)
            what = (f"epochs={self.epochs!r} gives ceil(epochs * N_train / batch_size) = "
                    f"{steps:.3g} steps (N_train={N}, batch_size={m})")
        else:
            steps = int(self.n_steps)
            what = f"n_steps={self.n_steps!r}"
        if steps > MAX_STEPS:
            raise ValueError(
                f"{what}: a training runs at most {MAX_STEPS:.0e} steps (more would not "
                "finish in days). Use fewer steps or epochs.")
        return int(math.ceil(steps))

    def _thresholds(self, groups):
        C = self.max_grad_norm
        if C is None:
            if self.target_epsilon is not None:
                raise ValueError(
                    f"max_grad_norm=None (no clipping) conflicts with target_epsilon="
                    f"{self.target_epsilon!r}: a privacy target needs noise, and noise needs "
                    "a bounded sensitivity. Give a max_grad_norm, or drop target_epsilon "
                    "and set noise_multiplier=0 for non-private training.")
            if self.noise_multiplier != 0:
                raise ValueError(
                    f"max_grad_norm=None (no clipping) conflicts with noise_multiplier="
                    f"{self.noise_multiplier!r}: it is only allowed for non-private "
                    "training (noise_multiplier=0), as noise needs a bounded sensitivity.")
            return None

        def number(c):   # one threshold: a real number (numpy's 0-d values included)
            if isinstance(c, np.ndarray) and c.ndim == 0:
                c = c[()]
            if isinstance(c, bool | np.bool_) or not isinstance(c, numbers.Real):
                raise ValueError(
                    f"max_grad_norm must be a number > 0, or one per layer group {groups} "
                    f"(a sequence or a dict), got {self.max_grad_norm!r}, which holds "
                    f"{c!r}.")
            return float(c)

        if isinstance(C, dict):
            if set(C) != set(groups):
                raise ValueError(f"max_grad_norm as a dict needs the keys {sorted(groups)}.")
            C = {g: number(C[g]) for g in groups}
        elif isinstance(C, numbers.Real) or np.ndim(C) == 0:
            C = {g: number(C) for g in groups}
        else:
            vals = list(C)
            if len(vals) != len(groups):
                raise ValueError(f"max_grad_norm needs one value per layer group {groups}, "
                                 f"got {len(vals)}.")
            C = {g: number(c) for g, c in zip(groups, vals, strict=True)}
        if not all(np.isfinite(c) and c > 0 for c in C.values()):
            raise ValueError(f"max_grad_norm must be > 0 and finite, got {self.max_grad_norm!r}.")
        return C

    # ------------------------------------------------------------- training
    def _dp_fit(self, feats, nb, w, y_enc, n_features, account_K, population,
                validation=None, clear_reads=(), data=None, users=None):
        """Train on neighbourhoods ``nb``/``w`` (one row per training node).

        ``validation`` is ``None`` or ``(feats, rows, A_rows, y_enc)`` of the
        validation rows (``A_rows``: their rows of the inference aggregator, or
        ``None`` without a graph). ``clear_reads`` (see :meth:`_clear_reads`) are
        charged before the training. ``data`` is the fit's digest of its input
        (:meth:`_data_digest`), part of every stream's seed. ``users`` maps the
        positions in ``nb`` to the users' node keys (a GraphData's; ``None``: a plain
        array, whose rows are no known users).
        """
        N = len(nb)
        m = int(self.batch_size)
        if m > N:
            raise ValueError(f"batch_size={m} is larger than the training set ({N} nodes); "
                             "batches are drawn without replacement, so use batch_size <= "
                             f"{N}.")
        steps = self._n_steps(N, m)
        delta = float(self.delta) if self.delta is not None else 1.0 / (10.0 * N)
        if delta >= 1.0 / N:   # N is public (the training set's size)
            raise ValueError(
                f"delta={self.delta!r} is at least 1 / N_train = 1/{N} = {1.0 / N:.3g}: a "
                "training that publishes one training user's data in the clear meets such "
                "a delta, so (epsilon_, delta) would promise nothing (a delta of 0.9 gives "
                "epsilon_ = 0). Use a delta well below 1 / N_train, e.g. delta=None "
                f"(1 / (10 N_train) = {1.0 / (10.0 * N):.3g}).")
        device = resolve_device(self.device)
        # Three independent streams, none of them numpy's or torch's global state.
        batch_rng = np.random.default_rng(self._stream_seed("DPSGD-batches", data))
        init_gen = torch.Generator().manual_seed(self._stream_seed("DPSGD-init", data))
        noise_gen = torch.Generator(device=device).manual_seed(
            self._stream_seed("DPSGD-noise", data))

        module = _OneLayerGNN(n_features, len(self.classes_), int(self.hidden_size),
                              int(self.encoder_layers), int(self.decoder_layers),
                              self.activation, self._graph, generator=init_gen).to(device)
        group_of = module.groups()
        groups = tuple(dict.fromkeys(group_of.values()))
        C = self._thresholds(groups)
        private = C is not None
        # ----- privacy calibration
        kind = self._accountant_kind(account_K)
        eps_of, calibrate = _accountant(kind, N, m, account_K, steps, delta)
        if self.target_epsilon is not None:
            z = calibrate(self.target_epsilon)
        else:
            z = float(self.noise_multiplier)
        eps = eps_of(z) if private and z > 0 else math.inf
        L = len(groups)
        base = 2.0 * (account_K + 1) * math.sqrt(L)
        if private and z > 0:   # before anything is read or charged
            _check_noise_grid(z, base, C, m, "" if self.target_epsilon is None else
                              f" (calibrated for target_epsilon={self.target_epsilon!r})")
        # clip_percentile reads gradient norms only when clipping (private)
        self._clear_reads(population, [r for r in clear_reads
                                       if r[0] != "clip_percentile" or private])
        # the users whose data the training reads: its nodes and their sampled neighbours
        read = distinct(nb)
        self._record_training(population, eps, delta, N, read.size,
                              None if users is None else users[read])

        y_t = torch.as_tensor(y_enc, dtype=torch.long, device=device)
        w_t = torch.as_tensor(w, device=device)
        engine = _PerNodeGradients(module, feats, nb, w_t, y_t, with_gram=private)
        params = engine.params

        # ----- optional non-private clipping thresholds from gradient percentiles
        if private and self.clip_percentile is not None:
            warnings.warn(
                "clip_percentile reads the gradient norms of the private training data to "
                "set the clipping thresholds; this step is not differentially private and "
                "is not counted in epsilon_ (the ledger charges the users it reads "
                "epsilon=inf). Pass fixed max_grad_norm values for a guarantee that covers "
                "every step.", PrivacyLeakWarning, stacklevel=3)
            norms = {g: [] for g in groups}
            for s in range(0, N, m):
                _, _, _, nrm = engine.parts(np.arange(s, min(s + m, N)))
                for g in groups:
                    norms[g].append(nrm[g].cpu().numpy())
            C = {g: C[g] * max(float(np.percentile(np.concatenate(norms[g]),
                                                   self.clip_percentile)), 1e-12)
                 for g in groups}
            if not all(math.isfinite(c) for c in C.values()):   # inf: non-finite norms
                raise ValueError(f"clip_percentile={self.clip_percentile} gives non-finite "
                                 f"clipping thresholds {C}: some gradient norms are not "
                                 "finite. Use a lower percentile or fixed max_grad_norm.")

        # Noise per group (class Notes): scaling group g by 1/C_g gives L clipped
        # blocks of norm <= 1, a vector of norm <= sqrt(L), so the rescaled update
        # has node-level sensitivity 2 (K+1) sqrt(L) (Lemma 1). Randomized rounding
        # to the grid step_g moves each coordinate by less than step_g, which adds
        # at most s = sqrt(sum_g p_g (step_g / C_g)^2). The accountant's term for i
        # of the K+1 affected nodes in a batch assumes the share i / (K+1) of the
        # sensitivity, but the rounding adds the whole s for any i >= 1: the noise
        # std is z (base + (K+1) s), so that 2 i sqrt(L) + s <= i (base + (K+1) s) / (K+1).
        if private and z > 0:
            if self.clip_percentile is not None:   # thresholds rescaled by the norms
                _check_noise_grid(z, base, C, m, after="Nothing was trained; the gradient "
                                  "norms were read (charged by clip_percentile).")
            step = {g: _grid_step(min(z, 1.0) * base * C[g]) for g in groups}
            n_par = {g: sum(p.numel() for n, p in params.items() if group_of[n] == g)
                     for g in groups}
            slack = (account_K + 1) * math.sqrt(
                sum(n_par[g] * (step[g] / C[g]) ** 2 for g in groups))
            sigma = {g: z * (base + slack) * C[g] for g in groups}
            inflation = (base + slack) / base
        else:
            step, sigma, inflation = None, {g: 0.0 for g in groups}, 1.0

        opt = (Adam(module.parameters(), lr=self.lr) if self.optimizer == "adam"
               else SGD(module.parameters(), lr=self.lr))

        def dp_step(t):
            idx = np.sort(batch_rng.choice(N, size=m, replace=False))  # without replacement
            opt.zero_grad(set_to_none=True)
            sums = engine.summed(idx) if not private else engine.clipped_sum(idx, C)
            for n, p in params.items():
                g = sums[n]
                if step is not None:
                    g = _grid_gaussian(g, sigma[group_of[n]], step[group_of[n]], noise_gen)
                p.grad = (g / m).to(p.dtype)
            opt.step()
            return None  # the per-node losses are never summed: no loss curve

        # The one trainer runs the steps; with validation rows it keeps the best iterate
        # (post-processing of the noisy iterates; see the class Notes on what it reads).
        validate = stopper = None
        if validation is not None:
            validate = self._validation_score(module, validation, device)
            stopper = EarlyStopper(list(module.state_dict().values()), self.patience,
                                   sync_every=default_sync_every(device))
        every = max(1, steps // 10)

        def log(t, loss, score, seconds):
            if (t + 1) % every == 0:
                verbose_logger(__name__).info("[%s] step %d/%d (%.1fs)", type(self).__name__,
                                              t + 1, steps, time.perf_counter() - t0)

        t0 = time.perf_counter()
        result = train(dp_step, steps, validate=validate, stopper=stopper,
                       log=log if self.verbose else None)
        _refuse_non_finite_parameters(module, result.n_iter)
        self.n_iter_ = result.n_iter
        self.validation_scores_ = result.validation_scores
        self.best_step_ = result.best_epoch
        self.module_ = module.cpu().eval()
        self.noise_multiplier_ = z if private else 0.0
        self.clip_thresholds_ = dict(C) if private else None
        self.noise_std_ = dict(sigma)
        self.grid_step_ = dict(step) if step is not None else None
        self.sensitivity_inflation_ = inflation
        self.steps_ = steps
        self.n_train_ = N
        self.epsilon_ = float(eps)
        self.delta_ = delta
        self.accountant_ = kind
        return self

    def _logits(self, feats, rows, A_rows=None):
        # Inference in float64: predictions of a row do not depend on which
        # other rows are predicted with it (no float32 batch-size rounding).
        device = resolve_device(self.device)
        module = copy.deepcopy(self.module_).double().to(device)
        with torch.no_grad():
            out = _forward_rows(module, feats, rows, A_rows, device, torch.float64)
        return out.cpu().numpy()

    def _validation_score(self, module, validation, device):
        """``validate`` of the trainer: the validation cross-entropy at the current iterate."""
        feats, rows, A_rows, y_val = validation
        y_t = torch.as_tensor(y_val, dtype=torch.long, device=device)
        inputs = _row_inputs(feats, rows, A_rows, device, torch.float32)  # gathered once

        def score(t):
            with torch.no_grad():
                return F.cross_entropy(_forward_inputs(module, *inputs), y_t)
        return score

    def decision_function(self, X):
        """Class scores of the rows of ``X``.

        Parameters
        ----------
        X : GraphData or array-like of shape (n_rows, n_features)
            Rows to score: a view of the graph (DP-GNN) or features (DP-MLP).

        Returns
        -------
        scores : ndarray of shape (n_rows,) or (n_rows, n_classes)
            The logits, columns in the order of ``classes_``; for two classes,
            as in scikit-learn, the score of ``classes_[1]`` (logit
            difference), positive where it is predicted.
        """
        z = self._raw_logits(X)
        return z[:, 1] - z[:, 0] if z.shape[1] == 2 else z

    def predict_proba(self, X):
        """Class probabilities of the rows of ``X``.

        Parameters
        ----------
        X : GraphData or array-like of shape (n_rows, n_features)
            Rows to score: a view of the graph (DP-GNN) or features (DP-MLP).

        Returns
        -------
        proba : ndarray of shape (n_rows, n_classes)
            Softmax of the logits, columns in the order of ``classes_``.
        """
        z = self._raw_logits(X)
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)


_CLASSES_PARAM = """
    classes : array-like or None, default=None
        The public label domain; labels outside it raise a ``ValueError``.
        ``None`` reads it from the private training labels (not covered by
        ``epsilon_``), with a :class:`~skldp.exceptions.PrivacyLeakWarning`:
        the ledger charges the users of the fit rows a read of their labels
        in the clear (epsilon = inf), which a population with a budget
        refuses."""

_COMMON_PARAMS = """
    batch_size : int, default=1000
        Batch size ``m``; batches are drawn uniformly *without replacement*
        from the training nodes, as the accountant assumes. Must not exceed
        the number of training nodes.
    n_steps : int, default=200
        Number of DP steps ``T`` (at most ``10**8``).
    epochs : float or None, default=None
        If given, overrides ``n_steps`` with ``ceil(epochs * N_train / batch_size)``
        (at most ``10**8`` steps).
    lr : float, default=0.01
        Learning rate (Adam step size, or SGD step ``eta``).
    optimizer : {"adam", "sgd"}, default="adam"
        DP-Adam or DP-SGD; the privacy cost is the same (the optimiser only
        post-processes the noisy sums).
    noise_multiplier : float >= 0, default=1.0
        ``z``: noise standard deviation over the sensitivity of one update.
        Ignored with ``target_epsilon``; ``0`` (with ``max_grad_norm=None``)
        trains without privacy.
    target_epsilon : float or None, default=None
        If given, ``z`` is calibrated by bisection so that the whole training
        run is (``target_epsilon``, ``delta``) node-level DP.
    delta : float in (0, 1 / N_train) or None, default=None
        ``None`` uses ``1 / (10 N_train)``. A delta of at least ``1 / N_train``
        (which a training publishing one user's data in the clear meets) is
        refused with a ``ValueError``.
    max_grad_norm : float, sequence or dict, default=1.0
        Clipping threshold ``C_l`` of each layer group (one value for all, or
        one per group). With ``clip_percentile`` it is the scaling factor
        ``C_f``. ``None`` disables clipping (only with ``noise_multiplier=0`` and no
        ``target_epsilon``).
    clip_percentile : float in (0, 100] or None, default=None
        **Not private.** The thresholds are ``C_f`` times this percentile of
        each group's per-node gradient norms at initialisation, with a
        :class:`~skldp.exceptions.PrivacyLeakWarning`; the ledger charges the
        users it reads (training nodes, their neighbourhoods) epsilon = inf,
        which a population with a budget refuses.
    hidden_size : int, default=64
        Width of every hidden layer.
    encoder_layers, decoder_layers : int, default=1
        Number of linear layers of the encoder and decoder MLPs.
    activation : {"tanh", "relu", "elu"}, default="tanh"
        Non-linearity of the hidden layers.
    validation : array-like or None, default=None
        Validation nodes, left out of training, whose loss selects the
        iterate; ``None`` releases the last iterate. **Not covered by**
        ``epsilon_`` (a :class:`~skldp.exceptions.PrivacyLeakWarning`): the
        ledger charges the validation nodes (and, for DP-GNN, their
        neighbours' features and edges) epsilon = inf, which a population with
        a budget refuses; see :ref:`validation_nodes`.
    patience : int or None, default=None
        With ``validation``, stop after this many steps without a lower
        validation loss (``None``: run all ``T`` steps, keep the best).
    device : str, default="auto"
        "auto" uses CUDA when available.
    random_state : int, RandomState, Generator or None, default=None
        Seeds the sample, the batches, the initialisation and the noise.
        ``None`` draws them from the operating system's entropy; **an integer
        makes the noise reproducible**: for simulations only.
    verbose : int, default=0
        Log the training progress.
"""

_COMMON_ATTRS = """
    classes_ : ndarray
        The public label domain.
    module_ : torch.nn.Module
        The trained network (on the CPU).
    epsilon_, delta_ : float
        The node-level (epsilon, delta) guarantee of the trained parameters
        (``inf`` without noise).
    accountant_ : str
        The accountant that computed ``epsilon_`` (and calibrated ``z``):
        ``"hypergeometric"`` (Theorem 1), ``"combined"`` or ``"wor"``.
    noise_multiplier_ : float
        The ``z`` used (calibrated when ``target_epsilon`` is given).
    clip_thresholds_ : dict
        Clipping threshold of each layer group.
    noise_std_ : dict
        Standard deviation of the noise added to each group's clipped sum
        (including ``sensitivity_inflation_``).
    grid_step_ : dict or None
        Grid step (a power of two) of each group's noisy sum; ``None`` without noise.
    sensitivity_inflation_ : float
        Factor (``>= 1``) by which randomized rounding to the grid inflates
        the sensitivity used to scale the noise.
    steps_ : int
        ``T``, the steps accounted for.
    n_iter_ : int
        Steps run (fewer than ``steps_`` when ``patience`` stopped training).
    validation_scores_ : list of float
        Validation loss after each step (empty without ``validation``).
    best_step_ : int or None
        Step (0-based) whose iterate was kept (``None`` without ``validation``).
    n_train_ : int
        Number of training nodes ``N_train``.
"""


_GRID_NOTES = """
    The noisy sums are released on a grid, so that floating-point noise does
    not leak the data, and all randomness comes from local generators.
"""


# ------------------------------------------------------------------ DP-GNN
class DPGNNClassifier(_DPTrainerBase):
    __doc__ = """Node-level differentially private 1-layer GNN (DP-GNN, Daigavane et al., 2021).

    A 1-layer GCN with MLP encoder and decoder, trained with DP-Adam or
    DP-SGD on a training graph whose degrees are bounded by ``max_degree``:
    each node's gradient is clipped per layer group and Gaussian noise is
    added to their sum over a batch. The released parameters are
    (``epsilon_``, ``delta_``) node-level DP: a node's features, label and
    edges, under the zero-out relation (the training set and its size are
    public), on the sampled training graph taken as given (see the User
    Guide's caveats).

    Read more in the :ref:`User Guide <dpgnn>`.

    Parameters
    ----------
    max_degree : int >= 0, default=10
        ``K``, the degree bound of the training graph.""" + _CLASSES_PARAM + _COMMON_PARAMS + """
    Attributes
    ----------""" + _COMMON_ATTRS + """
    privacy_model : "central"
    protects_ : tuple
        ``("features", "labels", "edges")``.

    See Also
    --------
    skldp.central.DPMLPClassifier : The same training without the graph.
    skldp.central.degree_bounded_sample : The degree-bounded training graph.

    Notes
    -----
    One node affects at most ``K + 1`` clipped per-node gradients of a batch,
    so the noise is scaled to the node-level sensitivity ``2 (K + 1) C``;
    ``noise_multiplier`` is the effective multiplier the accountant sees.

    With ``max_degree=0`` no edge is sampled and the training is DP-MLP's
    (:class:`DPMLPClassifier`): each node changes only its own clipped
    gradient (the zero-out relation is a case of replace-one), the noise is
    scaled to ``2 C`` and the batches are drawn the same way (fixed size,
    without replacement). ``epsilon_`` is then DP-MLP's default
    ``accountant="combined"``, several times smaller than Theorem 1 at small
    batch fractions (1.70 against 4.66 for one step, ``z = 0.8``, batches of
    100 of 10,000 nodes, ``delta = 1e-5``); without ``dp-accounting``
    (``skldp[accounting]``) it stays Theorem 1 (``accountant_`` says which).
""" + _GRID_NOTES + """
    References
    ----------
    .. [1] A. Daigavane, G. Madan, A. Sinha, A. G. Thakurta, G. Aggarwal and
       P. Jain, "Node-Level Differentially Private Graph Neural Networks",
       arXiv:2111.15521, 2021, eq. (2), Algorithms 1-3, Lemma 1, Theorem 1.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skldp import GraphData
    >>> from skldp.central import DPGNNClassifier
    >>> rng = np.random.default_rng(0)
    >>> n = 400; y = rng.integers(0, 2, n)
    >>> A = sp.random(n, n, density=0.02, random_state=0); A = ((A + A.T) > 0).astype(float)
    >>> G = GraphData(rng.normal(size=(n, 8)) + y[:, None], A)
    >>> clf = DPGNNClassifier(max_degree=5, classes=[0, 1], batch_size=100, n_steps=50,
    ...                       target_epsilon=8.0, random_state=0).fit(G[:200], y[:200])
    >>> bool(clf.epsilon_ <= 8.0), clf.predict(G[200:]).shape
    (True, (200,))
    """

    _graph = True

    protects = ("features", "labels", "edges")

    _parameter_constraints = {**_DPTrainerBase._parameter_constraints,
                              "max_degree": [Count(0)]}

    def __init__(self, max_degree=10, *, classes=None, batch_size=1000, n_steps=200,
                 epochs=None, lr=0.01, optimizer="adam", noise_multiplier=1.0,
                 target_epsilon=None, delta=None, max_grad_norm=1.0, clip_percentile=None,
                 hidden_size=64, encoder_layers=1, decoder_layers=1, activation="tanh",
                 validation=None, patience=None, device="auto", random_state=None, verbose=0):
        self.max_degree = max_degree
        self.classes = classes
        self.batch_size = batch_size
        self.n_steps = n_steps
        self.epochs = epochs
        self.lr = lr
        self.optimizer = optimizer
        self.noise_multiplier = noise_multiplier
        self.target_epsilon = target_epsilon
        self.delta = delta
        self.max_grad_norm = max_grad_norm
        self.clip_percentile = clip_percentile
        self.hidden_size = hidden_size
        self.encoder_layers = encoder_layers
        self.decoder_layers = decoder_layers
        self.activation = activation
        self.validation = validation
        self.patience = patience
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train on the view's rows (the training nodes) over the whole graph of ``X``.

        Parameters
        ----------
        X : GraphData
            View of the training nodes; its graph must be known and symmetric.
        y : array-like of shape (n_rows,)
            Labels of the training nodes.

        Returns
        -------
        self : DPGNNClassifier
            The fitted estimator.
        """
        K = int(self.max_degree)
        self._setup_fit()
        G = check_graph_data(X, self, require_symmetric=True)
        _check_min_features(G.shape, type(self).__name__)
        G.require_finite_features(type(self).__name__)   # (a refusal: a read of them)
        y_enc = self._encode_targets(y, len(G), G)
        # classes=None read the label domain from the labels of every fit row
        classes_keys = G.node_keys[G.rows] if self.classes is None else None
        tr, va = self._validation_rows(G, y_enc)
        G_val, y_val = (G._replace(G.rows[va]), y_enc[va]) if va is not None else (None, None)
        G, y_enc = (G._replace(G.rows[tr]), y_enc[tr]) if va is not None else (G, y_enc)
        keys = G.node_keys[G.rows]
        _check_distinct_users(keys, type(self).__name__)
        # what the training reads: its rows (their users), their labels, and the features
        # and graph its neighbourhoods are drawn from (not the validation labels)
        data = self._data_digest(G.rows, keys, y_enc, lambda: _graph_fingerprints(G))
        if int(self.batch_size) > len(G):
            raise ValueError(f"batch_size={self.batch_size} is larger than the training set "
                             f"({len(G)} nodes); use batch_size <= {len(G)}.")
        self.n_features_in_ = G.shape[1]
        record_feature_names(self, G)
        S = degree_bounded_sample(
            G.adjacency, K, nodes=G.rows,
            random_state=np.random.default_rng(self._stream_seed("DPGNN-degree-sample", data)))
        nb, w = _padded_neighbourhoods(S, G.rows, K)
        feats = _Features(G.features, resolve_device(self.device))
        validation = None
        if G_val is not None:  # scored like predict: over their full neighbourhoods
            validation = (feats, G_val.rows, self._aggregator(G_val)[G_val.rows], y_val)
        self._dp_fit(feats, nb, w, y_enc, G.shape[1], K, G.population, validation,
                     clear_reads=self._graph_clear_reads(G, nb, validation, classes_keys),
                     data=data, users=G.node_keys)
        self.protects_ = tuple(self.protects)
        note_edge_read(self, G, fitting=True)   # whether its graph's edges were collected
        return self

    def _graph_clear_reads(self, G, nb, validation, classes_keys=None):
        """Who the non-private options read (:meth:`_clear_reads`): with classes=None the
        labels of every fit row (``classes_keys``, their users); with clip_percentile
        the training nodes' labels and the features and edges of their sampled
        neighbourhoods; with validation the validation nodes' labels and the features
        and edges of their full neighbourhoods. Features and edges that are already
        reports of a local mechanism cost nothing more."""
        st, keys = G._store, G.node_keys
        data_parts = [p for p, origin in (("features", st.feature_origin),
                                          ("edges", st.adjacency_origin))
                      if reads_users_data(origin)]
        reads = []
        if classes_keys is not None:
            reads += [("classes=None", "labels", classes_keys)]
        if self.clip_percentile is not None:
            seen = distinct(nb)
            reads += [("clip_percentile", "labels", keys[G.rows])]
            reads += [("clip_percentile", p, keys[seen]) for p in data_parts]
        if validation is not None:
            _, rows, A_rows, _ = validation
            seen = distinct(np.concatenate([rows, sp.csr_matrix(A_rows).indices]))
            reads += [("validation", "labels", keys[rows])]
            reads += [("validation", p, keys[seen]) for p in data_parts]
        return reads

    def _accountant_kind(self, K):
        # K = 0: DP-MLP's training (Notes), so DP-MLP's default accountant, when installed
        if K == 0 and dp_accounting_installed():
            return "combined"
        return "hypergeometric"

    def _aggregator(self, G):
        """The inference aggregator ``D^-1 (A + I)`` of ``G``'s graph (memoised on the
        graph), over the graph training samples from: 0/1, without self loops (the
        degree-bounded sample ignores weights and drops self loops)."""
        key = ("skldp.dpgnn.adj_rw", G.token)
        P = G.memo_get(key)
        if P is None:
            A = sp.csr_matrix(G.adjacency, dtype=np.float32, copy=True)
            A.setdiag(0)
            A.eliminate_zeros()
            A.data[:] = 1.0
            P = G.memo_set(key, normalized_adjacency(A, kind="rw"))
        return P

    def _raw_logits(self, X):
        """Logits of the rows of ``X``, aggregating over their full neighbourhoods."""
        check_is_fitted(self, "module_")
        # finite as in fit (NaN features would give NaN probabilities and a made-up
        # class); checked once per graph
        G = check_graph_data(X, self, require_adjacency=True, require_finite=True)
        check_feature_names(self, G)
        # the full neighbourhoods of G's graph: its true edges, if the model was fitted on
        # collected ones (charged before anything is read; refused under a budget)
        note_edge_read(self, G)
        if G.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {G.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        feats = _Features(G.features, resolve_device(self.device))
        return self._logits(feats, G.rows, A_rows=self._aggregator(G)[G.rows])


# ------------------------------------------------------------------ DP-MLP
class DPMLPClassifier(_DPTrainerBase):
    __doc__ = """MLP trained with DP-Adam / DP-SGD on node features only (DP-MLP baseline).

    The private baseline of DP-GNN: an MLP encoder and decoder, no graph,
    trained by the same DP optimiser with ``K = 0``. Accepts a
    :class:`~skldp.GraphData` view (its rows' features) or a plain array.

    Read more in the :ref:`User Guide <dpmlp>`.

    Parameters
    ----------""" + _CLASSES_PARAM + """
    accountant : {"combined", "wor", "hypergeometric"}, default="combined"
        How ``epsilon_`` is computed: the subsampled-Gaussian bound
        (``"wor"``), DP-GNN's Theorem 1 (``"hypergeometric"``) or the minimum
        of both (``"combined"``; it and ``"wor"`` need
        ``skldp[accounting]``).""" + _COMMON_PARAMS + """
    Attributes
    ----------""" + _COMMON_ATTRS + """
    privacy_model : "central"
    protects_ : tuple
        ``("features", "labels")``; the graph is not used.

    See Also
    --------
    skldp.central.DPGNNClassifier : The same training with the graph.
    skldp.accounting.compute_dpsgd_epsilon : The accountants.

    Notes
    -----
    Replacing one example changes one clipped gradient, so the noise is
    scaled to the replace-one sensitivity ``2 C``.
""" + _GRID_NOTES + """
    References
    ----------
    .. [1] A. Daigavane et al., "Node-Level Differentially Private Graph Neural
       Networks", arXiv:2111.15521, 2021, §5 (DP-MLP), Theorem 1.
    .. [2] M. Abadi et al., "Deep Learning with Differential Privacy", CCS 2016.
    .. [3] Y.-X. Wang, B. Balle and S. Kasiviswanathan, "Subsampled Rényi
       Differential Privacy and Analytical Moments Accountant", AISTATS 2019,
       Theorem 27.

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.central import DPMLPClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 5)); y = (X[:, 0] > 0).astype(int)
    >>> clf = DPMLPClassifier(classes=[0, 1], batch_size=100, n_steps=100, target_epsilon=4.0,
    ...                       random_state=0).fit(X, y)
    >>> bool(clf.epsilon_ <= 4.0), bool(clf.score(X, y) > 0.7)
    (True, True)
    """

    _graph = False

    protects = ("features", "labels")

    _parameter_constraints = {
        **_DPTrainerBase._parameter_constraints,
        "accountant": [StrOptions({"combined", "wor", "hypergeometric"})]}

    def __init__(self, *, classes=None, accountant="combined", batch_size=1000,
                 n_steps=200, epochs=None, lr=0.01, optimizer="adam", noise_multiplier=1.0,
                 target_epsilon=None, delta=None, max_grad_norm=1.0, clip_percentile=None,
                 hidden_size=64, encoder_layers=1, decoder_layers=1, activation="tanh",
                 validation=None, patience=None, device="auto", random_state=None, verbose=0):
        self.classes = classes
        self.accountant = accountant
        self.batch_size = batch_size
        self.n_steps = n_steps
        self.epochs = epochs
        self.lr = lr
        self.optimizer = optimizer
        self.noise_multiplier = noise_multiplier
        self.target_epsilon = target_epsilon
        self.delta = delta
        self.max_grad_norm = max_grad_norm
        self.clip_percentile = clip_percentile
        self.hidden_size = hidden_size
        self.encoder_layers = encoder_layers
        self.decoder_layers = decoder_layers
        self.activation = activation
        self.validation = validation
        self.patience = patience
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _accountant_kind(self, K):
        return self.accountant

    def _rows(self, X, fitting=False):
        """The feature rows of ``X``; at fit, a refusal of their values is charged as a
        read of the features of their users (``refusal_is_read``), as the training's."""
        if isinstance(X, GraphData):
            Xf = X.features[X.rows]
        else:
            # (NaN is checked below, where its refusal is charged)
            Xf = check_feature_array(X, dtype=np.float32, estimator=self,
                                     ensure_all_finite=False)
        _check_min_features(Xf.shape, type(self).__name__)

        def users():   # the rows read (their users' raw data or values computed from it)
            if not fitting:
                return None
            if isinstance(X, GraphData):
                return (X.population, X.node_keys[X.rows]) \
                    if reads_users_data(X._store.feature_origin) else None
            return default_population(), array_node_keys(array_fingerprint(Xf), len(Xf))

        name = type(self).__name__
        with refusal_is_read(self, "features", users, "non-finite features"):
            check_finite_features(Xf, name=f"the features given to {name}")
            check_float32_range(Xf, name=f"the features given to {name}")
        return Xf

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train on the rows of ``X`` (features only) with labels ``y``.

        Parameters
        ----------
        X : GraphData, array-like or sparse matrix of shape (n_rows, n_features)
            Training rows; on a GraphData view only the view's rows are read
            (no graph is used).
        y : array-like of shape (n_rows,)
            Their labels.

        Returns
        -------
        self : DPMLPClassifier
            The fitted estimator.
        """
        self._setup_fit()
        Xf = self._rows(X, fitting=True)
        if Xf.shape[0] < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 samples, got "
                             f"n_samples = {Xf.shape[0]}.")
        y_enc = self._encode_targets(y, Xf.shape[0], X)
        self.n_features_in_ = Xf.shape[1]
        record_feature_names(self, X)
        device = resolve_device(self.device)
        tr, va = self._validation_rows(X, y_enc)
        graph = isinstance(X, GraphData)
        keys = X.node_keys[X.rows][tr] if graph else None
        if graph:   # a plain array's rows are its users; a view may repeat one
            _check_distinct_users(keys, type(self).__name__)
        # what the training reads: its rows' users (a plain array: their order), labels
        # and features (one digest per row; not the validation rows')
        data = self._data_digest(keys, y_enc[tr], lambda: feature_digests(
            Xf[tr] if va is not None else Xf))
        clear_reads = self._array_clear_reads(X, Xf, tr, va)
        validation = None
        if va is not None:
            validation = (_Features(Xf[va], device), np.arange(len(va)), None, y_enc[va])
            Xf, y_enc = Xf[tr], y_enc[tr]
        N = Xf.shape[0]
        feats = _Features(Xf, device)
        nb = np.arange(N)[:, None]
        w = np.ones((N, 1), dtype=np.float32)
        self._dp_fit(feats, nb, w, y_enc, Xf.shape[1], 0,
                     # plain arrays carry no user ids: every training on them is charged
                     # to one process-wide ledger (a search's folds are other arrays)
                     X.population if graph else default_population(),
                     validation, clear_reads, data, users=keys)
        self.protects_ = tuple(self.protects)
        return self

    def _array_clear_reads(self, X, Xf, tr, va):
        """Who the non-private options read (:meth:`_clear_reads`): every fit row's label
        (classes=None), the training rows (clip_percentile) and the validation rows
        (validation), features and labels. A plain array's rows are keyed as its users
        (``array_node_keys``) on the process-wide ledger its training is charged to."""
        if self.clip_percentile is None and va is None and self.classes is not None:
            return []   # nothing read in the clear (and no hash of a large array)
        if isinstance(X, GraphData):
            keys = X.node_keys[X.rows]
            parts = ["labels"] + (["features"] if reads_users_data(X._store.feature_origin)
                                  else [])
        else:
            keys = array_node_keys(array_fingerprint(Xf), Xf.shape[0])
            parts = ["labels", "features"]
        reads = [("classes=None", "labels", keys)] if self.classes is None else []
        if self.clip_percentile is not None:
            reads += [("clip_percentile", p, keys[tr]) for p in parts]
        if va is not None:
            reads += [("validation", p, keys[va]) for p in parts]
        return reads

    def _raw_logits(self, X):
        """Logits of the rows of ``X``."""
        check_is_fitted(self, "module_")
        check_feature_names(self, X)
        Xf = self._rows(X)
        if Xf.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {Xf.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        feats = _Features(Xf, resolve_device(self.device))
        return self._logits(feats, np.arange(Xf.shape[0]))
