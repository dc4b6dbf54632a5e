"""The devices' counter-based hashes on a torch device, bit for bit: HDS's k-of-d
sampler, its uniforms and square-wave cells, and the digests of the users' rows.

The devices' ``sample_k_of_d`` draws one uniform per user and feature and keeps
the ``k`` smallest: ``n * d`` hashes, the HDS mechanism's main cost (about 2 s for
Facebook's 22,470 users and 4,714 features on one core). The server's simulation of
the devices runs the same hashes here, on the GPU when there is one: the same
(seed, key, stream) give the same columns as the numpy code the devices run, so the
reports, and what they reveal, do not depend on where they were simulated.

Torch has no unsigned 64-bit arithmetic on every device; int64 wraps modulo 2^64
as uint64 does, and a logical right shift is an arithmetic one with the sign bits
masked off.
"""

import warnings

import numpy as np
import torch

from ..device._random import _BELOW_ONE, _FINE_STREAM_OFFSET, _GOLDEN, _M1, _M2, _row_keys

__all__ = ["sample_k_of_d", "sampling_device", "node_uniforms", "node_uniforms_fine",
           "square_wave_cells", "digest_sums"]

# n * d hashes from which a CUDA device pays for its start-up and transfers
_MIN_HASHES_ON_CUDA = 1 << 22
_CHUNK = 1 << 24   # hashes per block, bounds the device memory (128 MiB of int64)


def _signed(c):
    c = int(c)
    return c - (1 << 64) if c >= 1 << 63 else c


_G, _A, _B = _signed(_GOLDEN), _signed(_M1), _signed(_M2)


def _shift_right(z, s):
    """Logical right shift of int64 words read as uint64."""
    return (z >> s) & ((1 << (64 - s)) - 1)


def _mix(z):
    """SplitMix64's finaliser on int64 words (wrapping products)."""
    z = (z ^ _shift_right(z, 30)) * _A
    z = (z ^ _shift_right(z, 27)) * _B
    return z ^ _shift_right(z, 31)


def sampling_device(n, d):
    """The torch device on which to sample ``k`` of ``d`` columns for ``n`` users, or None.

    CUDA when it is available and the draw is large; None (numpy on the host)
    otherwise, where torch's int64 kernels are slower than numpy's.
    """
    if n * d < _MIN_HASHES_ON_CUDA or not torch.cuda.is_available():
        return None
    return torch.device("cuda")


def sample_k_of_d(seed, keys, d, k, stream=0, device="cpu"):
    """The devices' ``sample_k_of_d`` on a torch device: the same columns.

    The same but where two of a user's 53-bit uniforms tie at the ``k``-th place
    (probability below ``d^2 2^-54`` per user), which numpy's and torch's
    selections may break differently; either way the columns are a uniform
    ``k``-subset.

    Parameters
    ----------
    seed : int
        The collection's seed.
    keys : ndarray of uint64
        One key per user.
    d, k : int
        Columns, and how many each user samples (1 <= k <= d).
    stream : int, default=0
        The stream id of the draw.
    device : str or torch.device, default="cpu"
        Where the hashes run.

    Returns
    -------
    cols : ndarray of int64, shape (len(keys), k)
        Each user's columns, in increasing order.
    """
    if not 1 <= k <= d:
        raise ValueError(f"k must be in 1..{d}, got {k}.")
    rows = torch.from_numpy(_row_keys(seed, keys, stream).view(np.int64)).to(device)
    cols = torch.arange(1, d + 1, dtype=torch.int64, device=device) * _G
    out = torch.empty((len(rows), k), dtype=torch.int64, device=device)
    step = max(1, _CHUNK // d)
    for s in range(0, len(rows), step):
        # a uniform is the word's top 53 bits: their order is the uniforms' order
        top = _shift_right(_mix(rows[s:s + step, None] + cols[None, :]), 11)
        out[s:s + step] = torch.topk(top, k, dim=1, largest=False, sorted=False).indices
    return out.sort(dim=1).values.cpu().numpy()


def _node_words(seed, keys, n_cols, stream, device):
    """The devices' ``_node_words`` as int64 words on ``device``, shape (len(keys), n_cols)."""
    rows = torch.from_numpy(_row_keys(seed, keys, stream).view(np.int64)).to(device)
    cols = torch.arange(1, n_cols + 1, dtype=torch.int64, device=device) * _G
    return _mix(rows[:, None] + cols[None, :])


def node_uniforms(seed, keys, n_cols, stream=0, device="cpu"):
    """The devices' ``node_uniforms`` on a torch device: the same float64 values."""
    top = _shift_right(_node_words(seed, keys, n_cols, stream, device), 11)
    return ((top.double() + 0.5) * (1.0 / (1 << 53))).clamp_(max=_BELOW_ONE)


def node_uniforms_fine(seed, keys, n_cols, stream=0, device="cpu"):
    """The devices' ``node_uniforms_fine`` on a torch device: the same float64 values."""
    r = _shift_right(_node_words(seed, keys, n_cols, stream, device), 11).double()
    v = _shift_right(_node_words(seed, keys, n_cols, stream + _FINE_STREAM_OFFSET, device),
                     12).double() * (1.0 / (1 << 52))
    return ((r + v) * (1.0 / (1 << 53))).clamp_(np.finfo(np.float64).smallest_subnormal,
                                                _BELOW_ONE)


def square_wave_cells(grid, t, seed, keys, device="cpu"):
    """HDS's cells (the devices' ``hds_encode`` after the columns) on a torch device.

    ``t``: the users' sampled values scaled to [-1, 1], shape (n, k), float64 on
    the host. The same uniforms (streams 3, 2 and 1) and the same float64
    arithmetic as ``TwoLevelGrid.sample``, one operation at a time (no fused
    multiply-add), so the same cells; returned as int64 on the host.
    """
    n, k = t.shape
    t = np.ascontiguousarray(t, dtype=np.float64)
    cells = np.empty((n, k), dtype=np.int64)
    step = max(1, _CHUNK // (4 * k))   # four hashes per value
    for s in range(0, n, step):
        rows = slice(s, s + step)
        u_round = node_uniforms(seed, keys[rows], k, stream=3, device=device)
        u_piece = node_uniforms_fine(seed, keys[rows], k, stream=2, device=device)
        u_pos = node_uniforms(seed, keys[rows], k, stream=1, device=device)
        v = (torch.from_numpy(t[rows]).to(device) + 1.0) / 2.0
        v = v * grid.n_steps
        lo = torch.floor(v)
        start = (lo + (u_round < (v - lo))).long() * grid.cells_per_step
        band = start + torch.clamp_max((u_pos * grid.n_band).long(), grid.n_band - 1)
        out = torch.clamp_max((u_pos * grid.n_out).long(), grid.n_out - 1)
        out = out + grid.n_band * (out >= start)
        cells[rows] = torch.where(u_piece < grid.p_outside, out, band).cpu().numpy()
    return cells


def digest_sums(B, words, device):
    """The inner sums of ``feature_digests`` for dense rows ``B`` on a torch device.

    ``sum_j mix(bits(B_ij) ^ words_j)`` over the non-zero entries, modulo 2^64 (int64
    sums wrap as uint64 ones do); returned as uint64 on the host.
    """
    with warnings.catch_warnings():
        # the clipped device input is read-only; it is only read here
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        t = torch.from_numpy(np.ascontiguousarray(B)).to(device).double()
    bits = (t + 0.0).view(torch.int64)   # -0.0 read as 0.0
    w = torch.from_numpy(np.asarray(words).view(np.int64)).to(device)
    terms = _mix(bits ^ w[None, :])
    terms[t == 0] = 0
    return terms.sum(dim=1).cpu().numpy().view(np.uint64)

