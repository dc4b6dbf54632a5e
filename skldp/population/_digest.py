"""What a device answered about: one 64-bit digest of each user's input, and the keys it draws from.

A device answers a collection once and remembers its answer. The simulation
keys every random number of a report on ``(collection seed, report key)``, where
the report key mixes the user's node key with a digest of the input the device
encodes (its clipped feature row, its label, its adjacency list), and the
population refuses a second request to the same user about a different input
(see :meth:`~skldp.population.Population.collect`): the same random numbers
never meet two inputs.

The digests need two different inputs of one user to differ: each entry is
mixed (SplitMix64's finaliser, a bijection of 64-bit words) with its column
before the entries are summed, so that structured data (0/1 rows, small
counts) spreads over all 64 bits; a collision then has probability about
``2^-64`` for data no one chose. The column words are public and the mixing a
bijection, so a pair of rows can be crafted to collide: the second would then be
taken for the first and encoded with its random numbers (a known limit; keying the
words with the devices' secret would change every report's random numbers). They
never leave the simulated devices (the ledger's journal keeps keyed tags of them).
"""

import sys

import numpy as np
import scipy.sparse as sp

from ..device._random import check_node_keys
from ..utils._arrays import refuse_graph_data
from ..utils._blocks import row_blocks
from ..utils._random import _GOLDEN, _mix

__all__ = ["feature_digests", "list_digests", "label_digests", "report_keys", "answer_tags"]

_BLOCK = 1 << 21                     # entries per block of dense rows
_DEVICE_BLOCK = 1 << 24              # the same on a GPU (fewer, larger transfers)
_FEATURE_SALT = np.uint64(0x6A09E667F3BCC909)
_LIST_SALT = np.uint64(0xBB67AE8584CAA73B)
_LABEL_SALT = np.uint64(0x3C6EF372FE94F82B)
_REPORT_SALT = np.uint64(0xA54FF53A5F1D36F1)


def _column_words(d):
    """One 64-bit word per column (a fixed public function of the column index)."""
    with np.errstate(over="ignore"):
        return _mix(np.arange(1, d + 1, dtype=np.uint64) * _GOLDEN ^ _FEATURE_SALT)


def _value_bits(values):
    """The float64 bit patterns of ``values``, with -0.0 read as 0.0 (the same number)."""
    v = np.asarray(values, dtype=np.float64) + 0.0
    return v.view(np.uint64)


def _entry_terms(bits, words):
    """``mix(bits ^ word)``: each (column, value) to a pseudo-random 64-bit term."""
    with np.errstate(over="ignore"):
        return _mix(bits ^ words)


def feature_digests(X):
    """Digest of each row of a dense or sparse feature matrix.

    ``mix(sum_j mix(bits(x_ij) ^ c_j))`` over the non-zero entries (mod 2^64),
    with a public word ``c_j`` per column. Zeros contribute nothing, so a row has
    the same digest stored dense or sparse, in any float dtype.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)

    Returns
    -------
    digests : ndarray of uint64 of shape (n,)
    """
    n, d = X.shape
    words = _column_words(d)
    out = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        if sp.issparse(X):
            X = sp.csr_matrix(X)   # (shares a CSR input's arrays: canonicalised on a copy)
            if not X.has_canonical_format or not np.all(X.data):
                X = X.copy()
                X.sum_duplicates()
                X.eliminate_zeros()
            terms = _entry_terms(_value_bits(X.data), words[X.indices])
            _add_by_row(out, X.indptr.astype(np.int64), terms)
        else:
            X = np.asarray(X)
            device = _hashing_device(n, d)
            if device is not None:   # the same sums, by torch on the GPU
                from .._torch._counter_random import digest_sums
            for rows in row_blocks(n, d, _BLOCK if device is None else _DEVICE_BLOCK):
                if device is not None:
                    out[rows] = digest_sums(X[rows], words, device)
                    continue
                B = X[rows]
                terms = _entry_terms(_value_bits(B), words)
                terms[B == 0] = 0
                out[rows] = terms.sum(axis=1, dtype=np.uint64)
        return _mix(out ^ _FEATURE_SALT)


def _hashing_device(n, d):
    """The GPU on which to hash ``n x d`` dense entries, or None (numpy on the host).

    Only in a process that has already imported torch: the digests alone never
    import it (a CPU-only mechanism would pay for torch's import).
    """
    if "torch" not in sys.modules:
        return None
    from .._torch._counter_random import sampling_device
    return sampling_device(n, d)


def _add_by_row(out, indptr, terms):
    """``out[i] = sum of terms[indptr[i]:indptr[i+1]]`` (wrapping), without a Python loop."""
    nonempty = np.flatnonzero(np.diff(indptr))
    if len(nonempty):
        out[nonempty] = np.add.reduceat(terms, indptr[nonempty], dtype=np.uint64)


def list_digests(A, node_keys):
    """Digest of each row of an adjacency: the set of neighbours, named by their node keys.

    Order-free (a sum over the neighbours), so it does not depend on how the
    users are stored, only on whom each user lists.

    Parameters
    ----------
    A : sparse matrix of shape (n, n)
        The users' adjacency lists (rows).
    node_keys : ndarray of uint64 of shape (n,)
        The users' keys.

    Returns
    -------
    digests : ndarray of uint64 of shape (n,)
    """
    refuse_graph_data(A, "list_digests", "A")
    A = sp.csr_matrix(A)
    n = A.shape[0]
    keys = check_node_keys(node_keys, "node_keys")
    out = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        _add_by_row(out, A.indptr.astype(np.int64), _mix(keys[A.indices] ^ _LIST_SALT))
        return _mix(out ^ _LIST_SALT)


def label_digests(codes):
    """Digest of each label, given as its position in the public label domain.

    Parameters
    ----------
    codes : array-like of int
        Positions of the labels in the domain.

    Returns
    -------
    digests : ndarray of uint64
    """
    with np.errstate(over="ignore"):
        return _mix(np.asarray(codes, dtype=np.int64).astype(np.uint64) * _GOLDEN ^ _LABEL_SALT)


def report_keys(node_keys, digests):
    """The keys a report's random numbers are drawn from: the user and what it answers about.

    Parameters
    ----------
    node_keys : array-like of uint64
        The users.
    digests : array-like of uint64
        A digest of each user's input.

    Returns
    -------
    keys : ndarray of uint64
    """
    with np.errstate(over="ignore"):
        return _mix(check_node_keys(node_keys, "node_keys") * _GOLDEN
                    ^ _mix(np.asarray(digests, dtype=np.uint64) ^ _REPORT_SALT))


def answer_tags(secret, collection_id, rkeys):
    """Keyed tags of (collection, user, input), from the report keys ``rkeys``: equal iff the
    same user answered about the same input. ``secret`` is the simulated devices' and never
    leaves them, so the tags (kept by the ledger's journal) reveal nothing about the inputs
    beyond that equality."""
    cid = np.uint64(int(collection_id[:16], 16))
    with np.errstate(over="ignore"):
        k = _mix(np.uint64(secret) ^ _mix(cid))
        return _mix(np.asarray(rkeys, dtype=np.uint64) ^ k)
