"""Small torch helpers: device choice, local random generators, sparse conversion.

Randomness of the torch models never comes from torch's global generator:
``fit`` seeds local :class:`torch.Generator` objects from ``random_state``
(one for the initial weights, one for dropout and sampling), builds its
network under :func:`torch.random.fork_rng` (so the default initialisation
draws of the layer constructors leave the caller's generator as it was) and
then re-initialises every parameter from the local generator with the
layer's default scheme (:func:`init_parameters`). Dropout inside ``fit``
reads the generator installed for the current thread by
:func:`dropout_generator`, so concurrent fits (joblib's threading backend)
cannot change each other's draws.
"""

import contextlib
import copy
import math
import numbers
import threading
import warnings

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["resolve_device", "torch_generator", "stream_seed", "build_module",
           "init_parameters", "dropout_generator", "current_generator", "dropout", "Dropout",
           "sparse_csr_tensor", "to_torch_sparse", "to_torch_dense", "sparse_matmul",
           "class_softmax", "class_cross_entropy"]


def resolve_device(device="auto"):
    """The torch device to use, with a clear error when it is not available.

    Parameters
    ----------
    device : str, torch.device or None, default="auto"
        ``"auto"`` (or ``None``) picks CUDA when ``torch.cuda.is_available()``,
        else the CPU; any other value names a device (``"cpu"``, ``"cuda"``,
        ``"cuda:1"``, ...).

    Returns
    -------
    torch.device

    Raises
    ------
    ValueError
        If ``device`` is not a device name, or names a CUDA device that this
        torch cannot use (no CUDA build, no GPU, or an index beyond the
        visible devices).
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if isinstance(device, numbers.Integral) and not isinstance(device, bool):
        device = f"cuda:{int(device)}"  # torch's convention: an int is a CUDA index
    if not isinstance(device, (str, torch.device)):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda', 'cuda:<index>' or a "
                         f"torch.device, got {device!r}.")
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise ValueError(f"device={device!r} is not a torch device name; use 'auto', 'cpu', "
                         f"'cuda' or 'cuda:<index>' ({exc}).") from None
    if dev.type == "cuda":
        name = str(device) if isinstance(device, str) else str(dev)
        if not torch.cuda.is_available():
            why = ("this torch build has no CUDA support" if torch.version.cuda is None
                   else "no usable GPU was found")
            raise ValueError(f"device={name!r} was requested but torch.cuda.is_available() is "
                             f"False ({why}; torch {torch.__version__}). Use device='auto' "
                             "(CUDA when available, else the CPU) or device='cpu'.")
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            raise ValueError(f"device={name!r} was requested but torch sees {count} CUDA "
                             f"device{'s' if count != 1 else ''} (indices 0..{count - 1}).")
    return dev


def torch_generator(seed, device="cpu"):
    """A :class:`torch.Generator` on ``device`` seeded from an int.

    Parameters
    ----------
    seed : int
        Any non-negative integer (reduced modulo 2**63 - 1).
    device : str or torch.device, default="cpu"
        Where the generator draws (a CUDA tensor needs a CUDA generator).

    Returns
    -------
    torch.Generator
    """
    g = torch.Generator(device=device)
    g.manual_seed(int(seed) % (2**63 - 1))
    return g


def stream_seed(seed, stream):
    """A 63-bit seed of the independent stream ``stream`` (a str) derived from ``seed``.

    Parameters
    ----------
    seed : int
        The fit's seed (e.g. from ``random_state``).
    stream : str
        Name of the random quantity ("init", "dropout", ...).

    Returns
    -------
    int
    """
    words = [int(b) for b in stream.encode()]
    ss = np.random.SeedSequence([int(seed) % (2**63), *words])
    return int(ss.generate_state(1, np.uint64)[0] >> np.uint64(1))


def build_module(factory, generator):
    """Build ``factory()`` without touching torch's global generator, then initialise it.

    Parameters
    ----------
    factory : callable
        Returns a fresh :class:`torch.nn.Module` (built on the CPU).
    generator : torch.Generator
        CPU generator the parameters are initialised from.

    Returns
    -------
    torch.nn.Module
    """
    # On the CPU whatever torch's default device (a user's set_default_device("cuda")
    # would otherwise build it where the CPU generator cannot initialise it)
    with torch.random.fork_rng(devices=[]), torch.device("cpu"):
        module = factory()
    init_parameters(module, generator)
    return module


def module_on(module, device):
    """A fitted ``module`` (kept on the CPU) ready to run on ``device``.

    On the CPU it is the module itself; elsewhere a copy moved there, so that the
    fitted estimator's weights never leave the CPU: a predict that fails (or one
    running in another thread) cannot leave them on a GPU, where pickling would
    tie the estimator to CUDA.

    Parameters
    ----------
    module : torch.nn.Module
    device : torch.device

    Returns
    -------
    torch.nn.Module
    """
    if device.type == "cpu":
        return module.cpu()
    return copy.deepcopy(module).to(device)


def init_parameters(module, generator):
    """Re-initialise every parameter of ``module`` from ``generator`` (default schemes).

    ``nn.Linear`` gets its default initialisation (Kaiming uniform weights,
    uniform bias in ``+-1/sqrt(fan_in)``); a module with a method
    ``reset_parameters_with(generator)`` initialises its own parameters;
    batch normalisation is deterministic (ones and zeros) and is reset.

    Parameters
    ----------
    module : torch.nn.Module
    generator : torch.Generator

    Raises
    ------
    TypeError
        If a module holds parameters that none of these rules covers (their
        initialisation would come from the global generator).
    """
    with torch.no_grad():
        for m in module.modules():
            own = [p for p in m._parameters.values() if p is not None]
            if hasattr(m, "reset_parameters_with"):
                m.reset_parameters_with(generator)
            elif isinstance(m, nn.Linear):
                nn.init.kaiming_uniform_(m.weight, a=math.sqrt(5), generator=generator)
                if m.bias is not None:
                    fan_in = m.weight.shape[1]
                    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
                    nn.init.uniform_(m.bias, -bound, bound, generator=generator)
            elif isinstance(m, nn.modules.batchnorm._NormBase):
                m.reset_parameters()
            elif own:
                raise TypeError(f"init_parameters does not know how to initialise the "
                                f"parameters of {type(m).__name__}; give it a "
                                "reset_parameters_with(generator) method.")
    return module


_LOCAL = threading.local()


@contextlib.contextmanager
def dropout_generator(generator):
    """Make ``generator`` the source of :func:`dropout` draws in this thread.

    Parameters
    ----------
    generator : torch.Generator or None
        On the device of the tensors dropped out; ``None`` falls back to
        torch's global generator.

    Yields
    ------
    torch.Generator or None
    """
    previous = getattr(_LOCAL, "generator", None)
    _LOCAL.generator = generator
    try:
        yield generator
    finally:
        _LOCAL.generator = previous


def current_generator():
    """The generator installed by :func:`dropout_generator` in this thread, or ``None``.

    Returns
    -------
    torch.Generator or None
    """
    return getattr(_LOCAL, "generator", None)


def dropout(x, p, training=True):
    """``F.dropout`` drawing its mask from this thread's :func:`dropout_generator`.

    Parameters
    ----------
    x : torch.Tensor
    p : float
        Drop probability in [0, 1).
    training : bool, default=True
        No-op when ``False``.

    Returns
    -------
    torch.Tensor
    """
    if not training or p == 0:
        return x
    gen = current_generator()
    if gen is None:
        return F.dropout(x, p, training)
    # Uniform draws compared with the keep probability: the same Bernoulli mask
    # as bernoulli_, 2-4x faster on CPU (torch's CPU bernoulli_ draws element by
    # element); the mask is scaled in place, so x is read once.
    keep = 1.0 - p
    scale = torch.rand(x.shape, generator=gen, dtype=x.dtype, device=x.device)
    return x * scale.lt_(keep).div_(keep)


class Dropout(nn.Dropout):
    """``nn.Dropout`` drawing from this thread's :func:`dropout_generator`."""

    def forward(self, x):
        return dropout(x, self.p, self.training)


_BAG_MIN_NNZ = 1 << 16  # below it, and under 16 columns, torch.sparse.mm is as fast


def sparse_matmul(A, h):
    """``A @ h`` for a sparse CSR tensor ``A`` and a dense 2-D tensor ``h``.

    On the CPU, for float32, the product runs as a weighted embedding-bag sum
    (row ``i`` of ``A`` is the bag of rows ``h[j]`` weighted by ``A[i, j]``),
    whose kernel (fbgemm) is 2-4x faster than ``torch.sparse.mm``'s on the
    shapes of GNN training (one thread: Facebook's 22,470 x 22,470 mean
    aggregator times 32 columns 1.7 against 6.5 ms; a 1M-node graph with 10M
    edges times 16 columns 0.18 against 0.40 s; ``benchmarks/bench_sparse_matmul.py``).
    Elsewhere it is ``torch.sparse.mm``: on CUDA, for other layouts or dtypes,
    for fewer than 16 columns on a small matrix (under 65,536 stored entries,
    where MKL's product is as fast: Cora times 7 columns), and when ``h`` needs a
    gradient (the embedding bag's own backward is slower than torch's; the
    models' custom backward calls this function without autograd). No
    gradient flows to ``A``.

    Parameters
    ----------
    A : torch.Tensor, sparse CSR of shape (m, n)
    h : torch.Tensor of shape (n, k)

    Returns
    -------
    torch.Tensor of shape (m, k)
    """
    if h.dim() != 2 or A.shape[1] != h.shape[0]:
        raise ValueError(f"cannot multiply a {tuple(A.shape)} sparse matrix by a "
                         f"{tuple(h.shape)} tensor.")
    if (A.layout is torch.sparse_csr and h.dtype is torch.float32 and A.dtype is torch.float32
            and A.device.type == "cpu" and (h.shape[1] >= 16 or A._nnz() >= _BAG_MIN_NNZ)
            and not (h.requires_grad and torch.is_grad_enabled())):
        # torch.embedding_bag itself (F.embedding_bag's checks cost as much as the
        # product on Cora), in "sum" mode (0) over the CSR rows as bags; detach: a
        # tensor that requires a gradient (inside a custom backward, with autograd
        # off) would make the bag keep the bookkeeping of its own backward
        return torch.embedding_bag(h.detach().contiguous(), A.col_indices(), A.crow_indices(),
                                   False, 0, False, A.values(), True)[0]
    return torch.sparse.mm(A, h)


_FEW_CLASSES = 16


def class_softmax(logits, log=False):
    """Softmax (or log-softmax) over the classes, dim 1, of ``(n, c)`` logits.

    On the CPU, torch's softmax along the last dimension works row by row,
    which is slow for the few classes of node classification (Cora's 7: about
    4x slower than it could be). Along dim 0 of the transpose it runs across
    rows in vector registers. The values agree to one unit in the last place.

    Parameters
    ----------
    logits : torch.Tensor of shape (n, c)
    log : bool, default=False
        Return ``log_softmax``.

    Returns
    -------
    torch.Tensor of shape (n, c)
    """
    fn = F.log_softmax if log else F.softmax
    if logits.device.type == "cpu" and logits.dim() == 2 and logits.shape[1] < _FEW_CLASSES:
        return fn(logits.t(), dim=0).t()
    return fn(logits, dim=1)


def class_cross_entropy(logits, targets, reduction="mean"):
    """``F.cross_entropy`` of ``(n, c)`` logits through :func:`class_softmax`.

    Targets equal to -100 are ignored, as in ``F.cross_entropy``.
    """
    return F.nll_loss(class_softmax(logits, log=True), targets, reduction=reduction)


_CSR_BETA_WARNED = False


def sparse_csr_tensor(*args, **kwargs):
    """:func:`torch.sparse_csr_tensor` without its "support is in beta" warning.

    Sparse CSR tensors are stable for the operations used here (spmm and its
    backward). The warning is silenced here only, never in the user's filters;
    torch gives it once per process, so only the first call needs the (process-wide,
    not thread-safe) ``catch_warnings``: later calls, e.g. from concurrent fits on
    joblib threads, leave the filters alone.
    """
    global _CSR_BETA_WARNED
    if _CSR_BETA_WARNED:
        return torch.sparse_csr_tensor(*args, **kwargs)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta",
                                category=UserWarning)
        t = torch.sparse_csr_tensor(*args, **kwargs)
    _CSR_BETA_WARNED = True
    return t


def to_torch_sparse(A, device="cpu", dtype=torch.float32):
    """scipy sparse matrix -> torch sparse CSR tensor (stays sparse on the device).

    Indices are int32 when they fit: half the memory for
    :func:`sparse_matmul`'s embedding bags, and ``torch.sparse.mm``'s CPU
    kernel (MKL) works on int32 and would otherwise convert int64 indices at
    every product (Cora, 32 columns: about 20 % of the time of a product).
    """
    A = sp.csr_matrix(A)
    idx = np.int32 if max(A.nnz, *A.shape) < 2**31 else np.int64
    return sparse_csr_tensor(torch.from_numpy(A.indptr.astype(idx)),
                             torch.from_numpy(A.indices.astype(idx)),
                             torch.from_numpy(A.data.astype(np.float32)),
                             size=A.shape, dtype=dtype, device=device, check_invariants=False)


def to_torch_dense(X, device="cpu", dtype=torch.float32):
    """Dense or scipy sparse features -> dense torch tensor."""
    if sp.issparse(X):
        X = X.toarray()
    return torch.as_tensor(np.asarray(X), dtype=dtype, device=device)

