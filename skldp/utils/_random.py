"""Counter-based randomness: each user's draws are a pure function of (seed, node key).

The generator itself lives in :mod:`skldp.device._random` (numpy only), where the
devices' encoder uses it too; this module adds the server's seeds and hashes.

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

from ..device._random import (  # noqa: F401  (the one implementation, shared with devices)
    _GOLDEN,
    _mix,
    node_uniforms,
    node_uniforms_fine,
    node_uniforms_ragged,
    sample_k_of_d,
)
from ._blocks import row_blocks

__all__ = ["node_uniforms", "node_uniforms_fine", "node_normals", "node_uniforms_ragged",
           "sample_k_of_d",
           "draw_seed", "training_seed", "collection_seed", "array_fingerprint"]

_FINGERPRINT_BLOCK = 1 << 18  # entries per row block of array_fingerprint (cache-sized)


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


def training_seed(random_state):
    """The seed a model trains with (its initialisation, batches, validation split).

    :func:`draw_seed`'s, except that a seed drawn from a ``RandomState`` or
    ``Generator`` is hashed first: ``clone`` copies such an object into each
    parameter that holds it, so a model and its label mechanism would draw the
    same number, and the model's outputs would reveal the key of the
    collection's seed. An integer ``random_state`` is public anyway, and keeps
    its seed.
    """
    seed = draw_seed(random_state)
    if isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        digest = hashlib.blake2b(seed.to_bytes(8, "little"), digest_size=8,
                                 person=b"skldp-training").digest()
        seed = int.from_bytes(digest, "little") & (2**63 - 1)
    return seed


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
    X = sp.csr_matrix(X, dtype=np.float64)   # (may share the caller's read-only arrays)
    if not X.has_canonical_format or not np.all(X.data):   # canonicalised on a copy
        X = X.copy()
        X.sum_duplicates()
        X.eliminate_zeros()
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


def node_normals(seed, keys, n_cols, stream=0):
    """Standard normal draws, same determinism as :func:`node_uniforms`."""
    return ndtri(node_uniforms(seed, keys, n_cols, stream))
