"""Counter-based randomness: each user's draws are a pure function of (seed, node key).

Local DP requires that a user answers once (Design page of the documentation, "Per-user
determinism"). Instead of a stateful
generator, whose output depends on which rows are processed and in what order,
every random number here is a hash of ``(seed, stream, node_key, counter)``
(SplitMix64 finaliser, Steele et al. 2014). The same user therefore gets the same
report at fit and predict time, for any subset or order of rows, and after
pickling, with fully vectorised numpy code.
"""

import hashlib
import secrets

import numpy as np
from joblib import hash as joblib_hash
from scipy.special import ndtri

from ._blocks import row_blocks

__all__ = ["node_uniforms", "node_uniforms_fine", "node_normals", "node_uniforms_ragged",
           "sample_k_of_d",
           "draw_seed", "collection_seed", "array_fingerprint"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_CHUNK = 1 << 22  # numbers generated per block, bounds temporary memory
_FINGERPRINT_BLOCK = 1 << 18  # entries per row block of array_fingerprint (cache-sized)


def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def draw_seed(random_state):
    """One 63-bit seed from ``random_state`` (int, RandomState, Generator or None).

    ``None`` takes the seed from the operating system's entropy (:mod:`secrets`), not
    from numpy's global state: a seed that protects reports must not be reproducible
    by anyone who calls ``np.random.seed``.
    """
    from sklearn.utils import check_random_state
    if random_state is None:
        return secrets.randbits(63)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    return int(check_random_state(random_state).randint(0, 2**63 - 1, dtype=np.int64))


def collection_seed(random_state, identity):
    """Seed of one *collection*: a keyed hash of ``random_state``'s seed and ``identity``.

    A collection is one use of the privacy budget: a mechanism's kind and its
    privacy-relevant parameters (``identity``, any picklable value, e.g. the class
    name, its parameters and its public bounds) together with ``random_state``.
    Two different collections never share random numbers, whatever their
    ``random_state``: a 1-bit report at eps = 1 and one at eps = 2 drawn from the
    same uniform would reveal the input, and a label randomiser reusing a feature
    mechanism's uniforms would make the label readable from the feature report.
    The same identity and the same integer ``random_state`` give the same seed,
    so a user answers once.

    Parameters
    ----------
    random_state : int, RandomState, Generator or None
        ``None`` draws the seed from the operating system's entropy.
    identity : object
        What makes this collection different from any other (hashed with joblib).

    Returns
    -------
    seed : int
        A 63-bit seed for the counter-based generator of this module.
    """
    base = draw_seed(random_state)
    digest = hashlib.blake2b(joblib_hash(identity).encode(), digest_size=8,
                             key=base.to_bytes(8, "little"), person=b"skldp-coll").digest()
    return int.from_bytes(digest, "little") & (2**63 - 1)


def array_fingerprint(X):
    """Content hash of a dense or sparse array: which users a plain array holds.

    Plain arrays carry no user ids, so a mechanism keys row ``i`` by its position;
    the fingerprint lets it refuse any other array, whose row ``i`` is another user
    and would otherwise receive the same noise. The same values give the same
    fingerprint whether they are stored dense or sparse, in any float dtype.

    The hash is that of the canonical CSR form (float64 values, int64 column
    indices and row pointers, duplicates summed, zeros removed, indices sorted).
    A dense real ndarray is streamed into the hash in row blocks, without
    building that CSR matrix: the same bytes are hashed, and the memory used is
    a few blocks, not the 16 bytes per non-zero of the CSR form (5 GiB for
    1M x 128 dense features).
    """
    import scipy.sparse as sp
    h = hashlib.blake2b(digest_size=16)
    if type(X) is np.ndarray and X.ndim == 2 and X.dtype.kind in "biuf":
        h.update(repr(tuple(int(s) for s in X.shape)).encode())  # python ints, as scipy's
        _hash_dense_csr(h, X)
        return h.hexdigest()
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sum_duplicates()
    X.eliminate_zeros()
    X.sort_indices()
    h.update(repr(X.shape).encode())
    for part in (X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)):
        h.update(np.ascontiguousarray(part).view(np.uint8))
    return h.hexdigest()


def _nonzero_mask(C):
    """Where block ``C`` is non-zero in float64 (as ``csr_matrix(C, dtype=float64)``
    after ``eliminate_zeros``)."""
    m = C != 0
    if C.dtype.kind == "f" and C.dtype.itemsize > 8:   # a tiny long double is 0 in float64
        m &= C.astype(np.float64) != 0
    return m


def _hash_dense_csr(h, X):
    """Feed ``h`` the bytes of ``data``, ``indices`` and ``indptr`` of the canonical
    CSR form of the dense 2-D array ``X``, read in row blocks.

    CSR stores all values before all column indices, so the blocks are read twice:
    once for the values and the row counts, once for the column indices.
    """
    n, d = X.shape
    counts = np.zeros(n, dtype=np.int64)
    for rows in row_blocks(n, d, _FINGERPRINT_BLOCK):
        C = X[rows]
        m = _nonzero_mask(C)
        counts[rows] = np.count_nonzero(m, axis=1)
        h.update(C[m].astype(np.float64).view(np.uint8))   # row-major order, as in CSR
    for rows in row_blocks(n, d, _FINGERPRINT_BLOCK):
        h.update((np.flatnonzero(_nonzero_mask(X[rows])) % d).astype(np.int64).view(np.uint8))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    h.update(indptr.view(np.uint8))


def _row_keys(seed, keys, stream):
    keys = np.asarray(keys, dtype=np.uint64)
    with np.errstate(over="ignore"):
        s = np.uint64(seed & 0xFFFFFFFFFFFFFFFF) ^ _mix(np.uint64(stream) * _GOLDEN + _GOLDEN)
        return _mix(keys * _GOLDEN ^ _mix(s))


def _to_unit(z):
    # 53 random bits -> [0, 1); add half an ulp so 0 is never returned (safe for log/ppf).
    return ((z >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / (1 << 53))


def _node_words(seed, keys, n_cols, stream):
    """Raw uint64 words, shape (len(keys), n_cols), row i a function of keys[i]."""
    rk = _row_keys(seed, keys, stream)
    cols = (np.arange(1, n_cols + 1, dtype=np.uint64) * _GOLDEN)
    out = np.empty((len(rk), n_cols), dtype=np.uint64)
    step = max(1, _CHUNK // max(n_cols, 1))
    with np.errstate(over="ignore"):
        for s in range(0, len(rk), step):  # blocks of rows, not a loop over nodes
            out[s:s + step] = _mix(rk[s:s + step, None] + cols[None, :])
    return out


def node_uniforms(seed, keys, n_cols, stream=0):
    """Uniform(0, 1) draws of shape (len(keys), n_cols), row i a function of keys[i].

    Parameters
    ----------
    seed : int
        The fitted mechanism's ``seed_``.
    keys : array of uint64
        Per-node keys (``GraphData.node_keys`` or row positions for plain arrays).
    n_cols : int
        Draws per node; column j of a node is the same whatever ``n_cols`` is.
    stream : int
        Independent stream id, so one mechanism can draw several independent quantities.
    """
    return _to_unit(_node_words(seed, keys, n_cols, stream))


# Offset of the second word's stream in node_uniforms_fine (mechanisms use small ids).
_FINE_STREAM_OFFSET = 1 << 40


def node_uniforms_fine(seed, keys, n_cols, stream=0):
    """Uniform(0, 1) draws with full *relative* precision near 0.

    :func:`node_uniforms` returns multiples of 2^-53, so an event of probability
    1e-13 is resolved only to about 1e-3 of its size. Here a second 64-bit word
    fills the low bits: ``u = (r + v) 2^-53`` with ``r`` the top 53 bits of one
    word and ``v`` in [0, 1) from another, so that every interval ``[a, a(1 + t))``
    has probability ``a t`` up to a relative error of about ``2^-50 / t``, for any
    ``a`` down to 2^-100. Used where a mechanism compares a uniform with a tiny
    probability or takes its logarithm (discrete Laplace tails, grid mechanisms).
    """
    w1 = _node_words(seed, keys, n_cols, stream)
    w2 = _node_words(seed, keys, n_cols, stream + _FINE_STREAM_OFFSET)
    r = (w1 >> np.uint64(11)).astype(np.float64)
    v = (w2 >> np.uint64(12)).astype(np.float64) * (1.0 / (1 << 52))
    u = (r + v) * (1.0 / (1 << 53))
    return np.maximum(u, np.finfo(np.float64).smallest_subnormal)


def node_normals(seed, keys, n_cols, stream=0):
    """Standard normal draws, same determinism as :func:`node_uniforms`."""
    return ndtri(node_uniforms(seed, keys, n_cols, stream))


def node_uniforms_ragged(seed, keys, counts, stream=0):
    """A variable number of uniforms per node, concatenated in node order.

    Node i gets ``counts[i]`` draws; its j-th draw is the same for any ``counts``
    with ``counts[i] > j``.
    """
    counts = np.asarray(counts, dtype=np.int64)
    rk = _row_keys(seed, keys, stream)
    owner = np.repeat(np.arange(len(rk)), counts)
    starts = np.cumsum(counts) - counts
    j = (np.arange(len(owner)) - np.repeat(starts, counts) + 1).astype(np.uint64)
    with np.errstate(over="ignore"):
        return _to_unit(_mix(rk[owner] + j * _GOLDEN))


def sample_k_of_d(seed, keys, d, k, stream=0):
    """k distinct column indices per node out of d, uniformly at random.

    Returns an int array of shape (len(keys), k). Uses the k smallest of d
    per-node uniform keys, in row blocks so memory stays bounded.
    """
    if not 1 <= k <= d:
        raise ValueError(f"k must be in 1..{d}, got {k}.")
    n = len(keys)
    out = np.empty((n, k), dtype=np.int64)
    step = max(1, _CHUNK // d)
    for s in range(0, n, step):
        u = node_uniforms(seed, keys[s:s + step], d, stream)
        out[s:s + step] = np.argpartition(u, k - 1, axis=1)[:, :k] if k < d else \
            np.broadcast_to(np.arange(d), (len(u), d))
    return out
