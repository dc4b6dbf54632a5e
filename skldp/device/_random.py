"""Counter-based randomness: every random number of a report is a pure function of
(seed, stream, key, counter).

Instead of a stateful generator, whose output depends on which rows are processed
and in what order, every draw is a hash of ``(seed, stream, key, counter)``
(SplitMix64's finaliser, Steele et al., OOPSLA 2014). The server's simulation
draws from ``(collection seed, report key)``; a device draws from a seed and a
key it takes from its operating system's entropy. Both run these functions, so
the same seed and key give the same report, and a port to another language is
checked against the test vectors (``skldp/device/vectors``).

Everything here is unsigned 64-bit arithmetic modulo 2^64 and the conversion of
the top 53 bits of a word to a float, so it ports bit for bit to any language
with 64-bit integers and IEEE doubles.
"""

import datetime
import hashlib
import itertools
import numbers

import numpy as np

__all__ = ["node_uniforms", "node_uniforms_fine", "node_bernoulli_fine", "node_uniforms_ragged",
           "node_uniforms_ragged_fine", "pair_uniforms", "sample_k_of_d", "sample_columns",
           "ids_to_keys"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_CHUNK = 1 << 22  # numbers generated per block, bounds temporary memory


def _mix(z):
    """SplitMix64's finaliser (a bijection of 64-bit words)."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def _row_keys(seed, keys, stream):
    keys = np.asarray(keys, dtype=np.uint64)
    with np.errstate(over="ignore"):
        s = np.uint64(seed & 0xFFFFFFFFFFFFFFFF) ^ _mix(np.uint64(stream) * _GOLDEN + _GOLDEN)
        return _mix(keys * _GOLDEN ^ _mix(s))


# The largest double below 1: the top word's (2^53 - 1/2) / 2^53 would round up to 1.
_BELOW_ONE = 1.0 - 2.0 ** -53


def _to_unit(z):
    # 53 random bits m -> (m + 1/2) / 2^53 in (0, 1): never 0 nor 1 (safe for log/ppf)
    u = ((z >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / (1 << 53))
    return np.minimum(u, _BELOW_ONE)


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
        The collection's seed (the server's simulation) or the device's secret.
    keys : array of uint64
        One key per user (the report keys).
    n_cols : int
        Draws per user; column j of a user is the same whatever ``n_cols`` is.
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
    r, v = _fine_parts(_node_words(seed, keys, n_cols, stream),
                       _node_words(seed, keys, n_cols, stream + _FINE_STREAM_OFFSET))
    return _fine_uniform(r, v)


def _fine_parts(w1, w2):
    """The fine uniform's two parts: ``r``, the top 53 bits of ``w1``, and ``v`` in [0, 1)
    from ``w2``; the uniform is ``(r + v) 2^-53``."""
    r = (w1 >> np.uint64(11)).astype(np.float64)
    v = (w2 >> np.uint64(12)).astype(np.float64) * (1.0 / (1 << 52))
    return r, v


def _fine_uniform(r, v):
    # in (0, 1): r = 2^53 - 1 with v >= 1/2 would round up to 1
    return np.clip((r + v) * (1.0 / (1 << 53)), np.finfo(np.float64).smallest_subnormal,
                   _BELOW_ONE)


def node_bernoulli_fine(seed, keys, n_cols, stream, p, p_complement):
    """Draws that are ``True`` with probability ``p`` (same shape as the draws), with
    full relative precision whether ``p`` or ``1 - p`` is tiny.

    ``u < p`` with the uniforms of :func:`node_uniforms_fine` resolves a tiny ``p``, but
    not a tiny ``1 - p``: a double just below 1 is a multiple of 2^-53, so a ``1 - p``
    below that has no uniform at all (the output "False" would be impossible). Where
    ``p > 1/2`` the same two words give the complement ``1 - u = ((2^53 - r) - v)
    2^-53`` exactly, compared with ``p_complement`` (the caller's accurate ``1 - p``):
    the same event as ``u < p``, up to rounding.
    """
    return _bernoulli_from_words(_node_words(seed, keys, n_cols, stream),
                                 _node_words(seed, keys, n_cols, stream + _FINE_STREAM_OFFSET),
                                 p, p_complement)


def _bernoulli_from_words(w1, w2, p, p_complement):
    r, v = _fine_parts(w1, w2)
    u = _fine_uniform(r, v)
    complement = ((float(1 << 53) - r) - v) * (1.0 / (1 << 53))
    return np.where(np.broadcast_to(p, u.shape) <= 0.5, u < p, complement > p_complement)


def _ragged_words(seed, keys, counts, stream, start):
    counts = np.asarray(counts, dtype=np.int64)
    rk = _row_keys(seed, keys, stream)
    owner = np.repeat(np.arange(len(rk)), counts)
    starts = np.cumsum(counts) - counts
    j = np.arange(len(owner)) - np.repeat(starts, counts) + 1
    if start is not None:
        j = j + np.repeat(np.asarray(start, dtype=np.int64), counts)
    with np.errstate(over="ignore"):
        return _mix(rk[owner] + j.astype(np.uint64) * _GOLDEN)


def node_uniforms_ragged(seed, keys, counts, stream=0, start=None):
    """A variable number of uniforms per user, concatenated in user order.

    User i gets ``counts[i]`` draws; its j-th draw is the same for any ``counts``
    with ``counts[i] > j``. ``start[i]`` (default 0) skips the first draws of
    user i: its draws are then numbers ``start[i] .. start[i] + counts[i] - 1``.
    """
    return _to_unit(_ragged_words(seed, keys, counts, stream, start))


def node_uniforms_ragged_fine(seed, keys, counts, stream=0, start=None):
    """:func:`node_uniforms_ragged` with the full relative precision of
    :func:`node_uniforms_fine` near 0."""
    w1 = _ragged_words(seed, keys, counts, stream, start)
    w2 = _ragged_words(seed, keys, counts, stream + _FINE_STREAM_OFFSET, start)
    return _fine_uniform(*_fine_parts(w1, w2))


def pair_uniforms(seed, ukeys, vkeys, stream):
    """One uniform per (user, other user) pair of keys, a pure function of both keys."""
    with np.errstate(over="ignore"):
        return _to_unit(_mix(_row_keys(seed, ukeys, stream)
                             + _mix(np.asarray(vkeys, dtype=np.uint64) + _GOLDEN) * _GOLDEN))


def sample_k_of_d(seed, keys, d, k, stream=0):
    """k distinct column indices per user out of d, uniformly at random, in increasing order.

    The k columns whose per-user uniforms are the smallest (computed in row
    blocks so that memory stays bounded). Returns an int64 array of shape
    (len(keys), k).
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
    out.sort(axis=1)
    return out


# Up to this k, k-of-d sampling uses Floyd's algorithm on k uniforms per user
# (O(n k^2)) instead of ranking d uniforms per user (O(n d)).
_FLOYD_MAX_K = 64


def sample_columns(seed, keys, d, k, stream=0):
    """k distinct columns out of d per user, uniformly, in increasing order.

    For ``k <= 64`` (and ``k < d``) this is R. W. Floyd's subset sampling
    (Bentley & Floyd, CACM 1987), vectorised over users: for j = d-k .. d-1 draw
    t uniform in 0..j and take t, or j if t was already taken; every k-subset is
    equally likely. It needs k uniforms per user instead of the d of
    :func:`sample_k_of_d`, which is used for larger k.
    """
    if k > _FLOYD_MAX_K or k >= d:
        return sample_k_of_d(seed, keys, d, k, stream=stream)
    U = node_uniforms(seed, keys, k, stream=stream)
    out = np.empty((len(keys), k), dtype=np.int64)
    for i, j in enumerate(range(d - k, d)):  # k steps, vectorised over users
        t = np.minimum((U[:, i] * (j + 1)).astype(np.int64), j)
        if i:
            t = np.where((out[:, :i] == t[:, None]).any(axis=1), j, t)
        out[:, i] = t
    out.sort(axis=1)
    return out


_FLOAT64_EXACT = 2.0 ** 53   # (a Python float's, without asking numpy)


def _exact_limit(dtype):
    """The magnitude from which a float of ``dtype`` names no integer exactly: 2**53 for
    float64, 2**24 for float32 (the integers next to it read the same float)."""
    return 2.0 ** (np.finfo(dtype).nmant + 1)


def _inexact_float_id(v):
    bits = int(np.log2(_exact_limit(np.asarray(v).dtype)))
    raise ValueError(
        f"The id {float(v)!r} is a {np.asarray(v).dtype} of magnitude 2**{bits} or more, which "
        f"cannot name an integer user exactly: it reads {int(v)}, and the integers next to it "
        "read the same float (an id read from a float column was rounded). Read the id "
        "column as integers (e.g. dtype=np.int64, or pandas' 'Int64' where it has gaps).")


def _integer_value(v):
    """The int that the id ``v`` names (an integer, or a float with an integer value),
    else None: the same user is the same key whether its id reads 7, 7.0 or np.int32(7).
    A finite float of magnitude 2**53 or more (a float32's 2**24) is refused: it names
    no integer exactly."""
    if isinstance(v, (bool, np.bool_)):
        return None
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, (float, np.floating)) and np.isfinite(v):
        limit = _FLOAT64_EXACT if isinstance(v, float) else _exact_limit(np.asarray(v).dtype)
        if abs(v) >= limit:   # (2**53; a float32's 2**24)
            _inexact_float_id(v)
        if float(v).is_integer():
            return int(v)
    return None


def _retyped(user):
    """The id ``user`` is in the other type (the text ``"5"`` for the int 5, the int 5 for
    the text ``"5"``), else ``None``; only the canonical text of an integer (not ``"05"``,
    ``"+5"`` or ``"5.0"``)."""
    if isinstance(user, int):
        return str(user) if user.bit_length() <= 64 else None
    if isinstance(user, str):
        if user[:1] not in _INTEGER_STARTS:   # (quick: most text ids are no integer)
            return None
        try:
            return int(user) if str(int(user)) == user else None
        except ValueError:
            return None
    return None


_INTEGER_STARTS = frozenset("-0123456789")


def has_integer_text(ids):
    """Whether some id of the array ``ids`` is the canonical text of an integer (``"5"``:
    :func:`_retyped`)."""
    if ids.dtype.kind in "iu":
        return False
    return any(isinstance(v, str) and _retyped(v) is not None for v in ids.tolist())


def other_spellings(ids):
    """The ids of the array ``ids`` that have another spelling (:func:`_retyped`: an
    integer within 64 bits and its canonical text), as ``(positions, keys)``: where they
    are, and the keys of that other spelling (keyed in one call: one by one is slow)."""
    values = ids.tolist()
    if ids.dtype.kind in "iu":   # (each has one: its text)
        at, others = np.arange(len(values)), [str(v) for v in values]
    else:   # (numpy's integers and 7.0 as the ints they are keyed as)
        plain = values if ids.dtype.kind == "U" else (
            v if isinstance(v, str) or (n := _integer_value(v)) is None else n for v in values)
        found = [(i, o) for i, v in enumerate(plain) if (o := _retyped(v)) is not None]
        at = np.array([i for i, _ in found], dtype=np.intp)
        others = [o for _, o in found]
    if not others:
        return np.zeros(0, np.intp), np.zeros(0, np.uint64)
    return at, ids_to_keys(_as_id_array(others))


def _as_integers(ids):
    """``ids`` as an int64 (else uint64) array when every id is an integer, in an object
    array (as pandas gives) or as a float with an integer value (1.0, as a column with
    gaps reads); any other array is returned unchanged, and so are integers beyond 64
    bits (hashed as text). A float id of magnitude 2**53 or more (a float32's 2**24) is
    refused."""
    if ids.size == 0 or ids.dtype.kind not in "fO":
        return ids
    if ids.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            big = np.flatnonzero(np.isfinite(ids) & (np.abs(ids) >= _exact_limit(ids.dtype)))
        if len(big):
            _inexact_float_id(ids.ravel()[big[0]])
        exact = np.isfinite(ids).all() and (ids == np.round(ids)).all()
        return ids.astype(np.int64) if exact else ids
    types = set(map(type, ids.ravel()))
    if not all(issubclass(t, (numbers.Integral, float, np.floating)) and
               not issubclass(t, np.timedelta64) for t in types):
        return ids   # text (or other objects, durations) among them: not all integers
    if any(issubclass(t, (bool, np.bool_, float, np.floating)) for t in types):
        values = [_integer_value(v) for v in ids.ravel()]   # floats: which are integers
        if any(v is None for v in values):
            return ids
        values = np.array(values, dtype=object).reshape(ids.shape)
    else:
        values = ids   # integers only
    for dtype in (np.int64, np.uint64):
        if np.all(values >= np.iinfo(dtype).min) and np.all(values <= np.iinfo(dtype).max):
            return values.astype(dtype)
    return ids


def _plain_element(v):
    """``v`` with numpy's scalars made plain (``np.int64(0)`` becomes ``0``), inside tuples
    too, recursively; a tuple with nothing to change is returned as it is."""
    if isinstance(v, tuple):
        if not any(isinstance(x, (np.generic, tuple)) for x in v):
            return v   # (most tuples: nothing to rebuild)
        items = tuple(_plain_element(x) for x in v)
        if all(a is b for a, b in zip(items, v, strict=True)):
            return v
        if type(v) is tuple:
            return items
        make = getattr(type(v), "_make", None)   # a namedtuple
        try:
            return make(items) if make is not None else v
        except Exception:   # a tuple subclass of its own construction: as it is
            return v
    if isinstance(v, np.generic):   # np.int64, np.bytes_, np.complex128, np.datetime64...
        return v.item()
    return v


def _tuple_element_types(values, types=None):
    """The types of the elements of the tuples among ``values`` (whose own types are
    ``types``, when known), in one pass: most tuple ids hold only Python ints and
    strings, which need no look at each id."""
    if not all(issubclass(t, tuple) for t in (types or set(map(type, values)))):
        values = [v for v in values if isinstance(v, tuple)]
    return set(map(type, itertools.chain.from_iterable(values)))


def _id_text(v):
    """The text whose digest is the key of a non-integer id: ``str(id)``, with numpy's
    scalars inside a tuple written as the plain values they equal (numpy 2 writes
    ``(np.int64(0), np.int64(0))``, which would key the user ``(0, 0)`` apart)."""
    return str(_plain_element(v) if isinstance(v, tuple) else v)


def _id_sequence(node_ids):
    """Ids given as any iterable, as :func:`_as_id_array` takes them: arrays (a pandas
    Index included) as they are, as GraphData reads them; anything else iterable (a
    generator, ``dict.keys()``) as a list. A set is refused: its order (the rows') is
    arbitrary, and changes from run to run for text."""
    if isinstance(node_ids, (set, frozenset)):
        raise TypeError("node_ids must be in the rows' order, got a set, whose order is "
                        "arbitrary: the ids would name other rows. Pass a list (or array) "
                        "of the ids in the order of the rows.")
    if isinstance(node_ids, (list, tuple, str, bytes)) or hasattr(node_ids, "__array__"):
        return node_ids   # (a str: one id, refused by the caller as no sequence)
    try:
        return list(node_ids)
    except TypeError:   # not iterable: the caller's check names it
        return node_ids


def _id_list(ids, where):
    """``ids`` read as a sequence of ids (see :func:`_id_sequence`), refusing a single
    string: ``"u17"`` would be read as the three users ``"u"``, ``"1"``, ``"7"``."""
    if isinstance(ids, (str, bytes)):
        raise TypeError(f"{where} must be a sequence of user ids, got the single "
                        f"{type(ids).__name__} {ids!r:.40}: wrap one id in a list.")
    return _id_sequence(ids)


def _is_missing(v):
    if v is None:
        return True
    if isinstance(v, (np.ndarray, list)):   # (a 2-D mistake: the caller names its shape)
        return False
    try:
        return bool(v != v)       # NaN, NaT
    except TypeError:             # pandas' NA: its truth value is ambiguous
        return True


def _not_an_id(v):
    """Why the single value ``v`` names no user (a boolean; a number that is neither an
    integer nor a float), else None."""
    if isinstance(v, (bool, np.bool_)):
        # keyed, True would be the integer 1 beside integers (numpy makes [True, 7] an
        # integer array) but the text "True" elsewhere: one user named two ways
        return f"the boolean {bool(v)!r}, which is no user id: user ids are strings or integers"
    if isinstance(v, numbers.Number) and \
            not isinstance(v, (numbers.Integral, float, np.floating)):
        # Decimal("5") equals 5 but was keyed as its text (and Decimal("5.0") as another)
        return (f"the {type(v).__name__} {v!r:.40}, a number that is neither an integer nor "
                "a float: convert the ids to integers (or text) first")
    return None


def _check_ids(ids, where="node_ids"):
    """Refuse what names no user among the 1-D ids ``ids`` (a list, tuple or array): a
    boolean, a number other than an integer or a float (a ``TypeError``), a missing id
    (None, NaN, NaT, pandas' NA: a ``ValueError``; NaN equals nothing, and was keyed as
    the text user "nan"). Returns ``ids``."""
    if isinstance(ids, np.ndarray):
        kind = ids.dtype.kind
        if ids.ndim != 1 or kind in "iuUST":   # (2-D: refused by the caller)
            return ids
        if kind in "bc":
            raise TypeError(f"{where} holds {_not_an_id(ids[0]) if len(ids) else 'no id'} "
                            f"(an array of dtype {ids.dtype}).")
        if kind == "f":
            bad = np.flatnonzero(np.isnan(ids))
        elif kind in "mM":
            bad = np.flatnonzero(np.isnat(ids))
        else:   # (structured, void: keyed as their text)
            bad = ()
    if not isinstance(ids, np.ndarray) or ids.dtype.kind == "O":
        if set(map(type, ids)) <= {int, str}:   # (most ids: nothing to look at)
            return ids
        # one value of each type (why a value names no user depends on its type alone):
        # the per-value loops below run only where a type calls for them
        one = dict(zip(map(type, ids), ids, strict=True))
        odd = {t for t, v in one.items() if _not_an_id(v) is not None}
        if odd:
            v = next(v for v in ids if type(v) in odd)   # (the first, for the message)
            raise TypeError(f"{where} holds {_not_an_id(v)}.")
        maybe = {t for t in one if not issubclass(t, (str, bytes, tuple, numbers.Integral))}
        if not maybe:
            return ids
        if all(issubclass(t, (float, np.floating)) for t in one):
            bad = np.flatnonzero(np.isnan(np.asarray(ids, dtype=float)))
        else:
            bad = [i for i, v in enumerate(ids) if type(v) in maybe and _is_missing(v)]
    if len(bad):
        i = int(bad[0])
        v = ids[i]
        raise ValueError(f"{where} has a missing id, {getattr(v, 'item', lambda: v)()!r} at "
                         f"position {i} ({len(bad)} missing in all); every user needs an id: "
                         "drop those rows or give them ids first.")
    return ids


def _as_id_array(node_ids, where="node_ids"):
    """``node_ids`` as an array; a list or tuple mixing text and numbers (or holding
    tuples, as networkx nodes may be) as a 1-D object array of the very ids.

    ``np.asarray`` would turn ``["u1", 2]`` into the strings ``"u1", "2"`` (no longer
    the graph's node 2) and tuples into rows of a 2-D array. Ids of one kind (numbers,
    text) keep ``np.asarray``'s array, dtype included: their keys must not change. But
    integers of 2**53 or more that numpy would hold as floats (``[2**63 + 1, 5]``, or
    beside a float) stay exact, in an object array: 2**63 + 1 would be user 2**63.
    What names no user is refused (:func:`_check_ids`, ``where`` names the ids).
    """
    listed = isinstance(node_ids, (list, tuple))
    if listed:
        _check_ids(node_ids, where)   # (before numpy makes [True, 7] integers)
    ids = _as_id_array_of(node_ids)
    return ids if listed else _check_ids(ids, where)


def _id_kinds(node_ids):
    """The kinds (str, bytes, tuple, numbers.Number) of the listed ids ``node_ids``, or
    None if one is of no kind (a list, a date)."""
    kinds = set()
    for t in set(map(type, node_ids)):   # a few types, however many ids
        kind = next((k for k in (str, bytes, tuple) if issubclass(t, k)), None)
        if kind is None and issubclass(t, (numbers.Number, np.bool_)):
            kind = numbers.Number
        if kind is None:
            return None
        kinds.add(kind)
    return kinds


def _as_id_array_of(node_ids):
    if isinstance(node_ids, (list, tuple)) and len(node_ids) and \
            isinstance(node_ids[0], tuple) and _id_kinds(node_ids) is not None:
        # tuple ids (networkx nodes) become the object array below; np.asarray would
        # first make rows of them, to no use (a sixth of the time of keying them)
        out = np.empty(len(node_ids), dtype=object)
        out[:] = list(node_ids)
        return out
    try:
        ids = np.asarray(node_ids)
    except ValueError:   # tuples of several lengths
        ids = None
    if ids is not None and ids.dtype.kind == "f" and ids.ndim == 1 and \
            isinstance(node_ids, (list, tuple)) and any(
                isinstance(node_ids[i], numbers.Integral) and not isinstance(node_ids[i], bool)
                for i in np.flatnonzero(np.abs(ids) >= 2.0 ** 53)):   # (smaller: exact)
        out = np.empty(len(node_ids), dtype=object)
        out[:] = list(node_ids)
        return out
    # only text or a 2-D array (or an error) may have come from ids of several kinds
    if not isinstance(node_ids, (list, tuple)) or (
            ids is not None and ids.ndim == 1 and ids.dtype.kind not in "US"):
        return np.asarray(node_ids) if ids is None else ids
    kinds = _id_kinds(node_ids)
    if kinds is None or (tuple not in kinds and len(kinds) == 1):
        # (a list, a date among them: np.asarray's array, or error, as before)
        return np.asarray(node_ids) if ids is None else ids
    out = np.empty(len(node_ids), dtype=object)
    out[:] = list(node_ids)   # element by element: tuples stay whole
    return out


def check_node_keys(keys, name="keys"):
    """The users' node keys ``keys`` (``GraphData.node_keys``) as a uint64 array, refusing
    what is no key with a ``ValueError``: integers only, of an integer dtype (a signed one
    read as its 64 bits: the keys as an int64 column of a table stores them) or Python
    integers in 0..2**64-1. A cast would truncate the floats 0.2, 0.5 and 0.9 to the one
    key 0 (three users answering and charged as one)."""
    arr = np.asarray(keys)
    if arr.dtype == np.uint64:
        return arr
    if arr.size == 0:
        return arr.astype(np.uint64)
    if arr.dtype.kind == "O" or (arr.dtype.kind == "f" and not isinstance(keys, np.ndarray)):
        # Python integers (beyond int64, a list of them reads as floats): each one checked
        values = np.asarray(keys, dtype=object).ravel().tolist()
        if all(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
               and 0 <= v < 1 << 64 for v in values):
            return np.array([int(v) for v in values], dtype=np.uint64).reshape(arr.shape)
        bad = next((v for v in values if not isinstance(v, numbers.Integral)
                    or isinstance(v, (bool, np.bool_)) or not 0 <= v < 1 << 64), None)
    elif arr.dtype.kind in "ui":
        return arr.astype(np.uint64)
    else:
        bad = arr.ravel()[0]
    raise ValueError(
        f"{name} must be the users' node keys, integers in 0..2**64-1 (as GraphData.node_keys "
        f"gives them), got {getattr(bad, 'item', lambda: bad)()!r} in an array of dtype "
        f"{arr.dtype}. A cast would change them "
        "(0.2, 0.5 and 0.9 would all be the key 0: one user). Pass the GraphData, or its "
        "node_keys.")


# one instant has several forms (datetime64 units, Timestamp or datetime, time zones),
# each of another text or count: as ids, one user would have several keys
_TIME_TYPES = (datetime.date, datetime.time, datetime.timedelta, np.datetime64, np.timedelta64)


def _is_time(v):
    return isinstance(v, _TIME_TYPES) or (isinstance(v, tuple) and any(map(_is_time, v)))


def _check_no_time_ids(ids):
    """Refuse dates, times and durations (also inside tuples) among the array ``ids``:
    ``2020-01-01`` in ``datetime64[us]``, in ``datetime64[ns]`` and as a Timestamp would
    be three keys, three users each charged apart, for one."""
    types = set(map(type, ids.ravel())) if ids.dtype == object else set()
    if ids.dtype.kind in "mM":
        bad = ids.ravel()[0] if ids.size else ids.dtype
    elif any(issubclass(t, _TIME_TYPES + (tuple,)) for t in types):
        values = ids.ravel().tolist()
        if not any(issubclass(t, _TIME_TYPES) for t in types) and not any(
                issubclass(t, _TIME_TYPES + (tuple,))
                for t in _tuple_element_types(values, types)):
            return   # tuples of plain values, none a date (nested ones looked at below)
        bad = next((v for v in values if _is_time(v)), None)
        if bad is None:   # tuples without a date
            return
    else:
        return
    raise ValueError(
        f"user ids cannot be dates, times or durations, got {bad!r}: one instant has "
        "several forms (datetime64 units, pandas Timestamps, Python datetimes, time zones) "
        "that would be several users, each charged apart. Convert the ids once, the same "
        "way wherever these users appear: to integers (pd.DatetimeIndex(ids).as_unit('ns')"
        ".asi8, nanoseconds since 1970) or to text in one format "
        "(pd.DatetimeIndex(ids).strftime('%Y-%m-%d %H:%M:%S')).")


def ids_to_keys(ids):
    """Stable uint64 key per user id: an integer id within 64 bits (of any integer type,
    or a float with an integer value, in any array) maps to itself modulo 2^64; any
    other id maps to the first 8 bytes (little-endian) of the BLAKE2b digest of
    ``str(id)`` (numpy's scalars inside a tuple written as the plain values they equal:
    ``(np.int64(0), 0)`` is the user ``(0, 0)``). Dates, times and durations are refused
    (a ``ValueError``): one instant has several texts; so is what names no user
    (:func:`_check_ids`: booleans, missing ids, Decimal and other numbers)."""
    ids = _check_ids(np.asarray(ids), "a list of ids")
    _check_no_time_ids(ids)   # (before _as_integers: a timedelta64 is an integer to numpy)
    ids = _as_integers(ids)
    if np.issubdtype(ids.dtype, np.integer):
        return ids.astype(np.uint64)
    if ids.dtype.kind in "US" or (ids.dtype == object and not any(
            issubclass(t, (numbers.Integral, float, np.floating)) for t in set(map(type, ids)))):
        # no id is a number (text, as pandas' string ids): each is hashed
        values = ids.tolist()   # (Python's str: no numpy scalar to look into)
        if all(type(v) is str for v in values):
            texts = values
        elif not any(issubclass(t, (np.generic, tuple)) for t in _tuple_element_types(values)):
            texts = map(str, values)   # no numpy scalar in a tuple: _id_text is str
        else:
            texts = map(_id_text, values)
        digests = [hashlib.blake2b(t.encode(), digest_size=8).digest() for t in texts]
        return np.frombuffer(b"".join(digests), dtype="<u8").astype(np.uint64)
    keys = np.empty(len(ids), dtype=np.uint64)
    for i, v in enumerate(ids):
        n = _integer_value(v)
        in_range = n is not None and -(1 << 63) <= n < (1 << 64)
        keys[i] = n % (1 << 64) if in_range else int.from_bytes(
            hashlib.blake2b(_id_text(v).encode(), digest_size=8).digest(), "little")
    return keys
