"""One user's device: answers each collection once, with its own secret randomness."""

import contextlib
import copy
import errno
import hashlib
import json
import math
import os
import re
import secrets
import tempfile
import threading
import warnings

import numpy as np

from ._errors import DeviceStateError
from ._kinds import directory_digest, plan
from ._random import _as_id_array, _id_list, check_node_keys, ids_to_keys, node_uniforms
from ._spec import CollectionSpec, SpecError, read_spec, significant
from ._steps import device_steps

try:   # POSIX: an advisory lock serializes the devices (processes, threads) on one state file
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["Device", "Directory", "encode", "AlreadyAnswered", "DeviceStateError"]

#: The answer id a device draws for each answer: 16 lowercase hex digits.
ANSWER_ID = re.compile(r"[0-9a-f]{16}")


class AlreadyAnswered(UserWarning):
    """Warned on the device, once per collection and ``Device`` object, when it is asked a
    collection again about other data: it resends its first answer. A second answer would
    spend the budget again, and a refusal would tell the server that the data changed; the
    server opens a new collection to ask about new data."""


class Directory:
    """The public directory of users an edge collection's lists name: their ids, read once.

    Parameters
    ----------
    ids : sequence
        Every user's id (integers or strings), in any order (a set too).

    Attributes
    ----------
    keys : ndarray of uint64
        The users' keys, sorted: a report names a user by its position here.
    digest : str
        What an edge spec states (``public_state["directory"]``).
    """

    def __init__(self, ids):
        if isinstance(ids, (set, frozenset)):   # (its keys are sorted: any order will do)
            ids = list(ids)
        ids = _as_id_array(_id_list(ids, "the directory"), "the directory")
        self.keys = np.sort(ids_to_keys(ids))   # as GraphData reads them
        self.digest = directory_digest(self.keys)


def _directory_keys(spec, directory):
    if directory is None:
        raise ValueError("An edge collection needs the public directory of users (their ids) "
                         "that the adjacency lists name.")
    if not isinstance(directory, Directory):
        directory = Directory(directory)
    if len(directory.keys) != spec.public_state.get("n_users") or \
            directory.digest != spec.public_state.get("directory"):
        raise ValueError("The directory does not match the collection's (its size or digest "
                         "differs): the device would name other users than the server means.")
    return directory.keys


# id(spec) -> (spec, its validated copy, plan): a spec object read once is not validated
# again, and the device answers the copy, whatever is done later to the object's dicts
_PLANS = {}


def _validated(spec):
    """(spec, plan) of a spec given as an object, a dict, JSON text or a path: the spec as
    read and validated, which shares nothing with ``spec``."""
    hit = _PLANS.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1:]
    parsed = read_spec(spec)
    entry = (parsed, plan(parsed))
    if isinstance(spec, CollectionSpec):
        if len(_PLANS) > 64:
            _PLANS.clear()
        _PLANS[id(spec)] = (spec, *entry)
    return entry


def encode(spec, data, *, seed, key, user=None, directory=None):
    """One user's report for ``spec`` from its raw ``data``, drawn from ``(seed, key)``.

    A pure function: the same spec, data, seed and key give the same report (the test
    vectors fix them). A device draws ``seed`` and ``key`` from its operating
    system's entropy (:class:`Device`); the server's simulation draws them from the
    collection's seed and the user's report key.

    Whether a report is made never depends on the data: a value outside the spec's
    public domain (a label not in its classes, a category not in its domain, a
    feature that is not 0 or 1 for a set-valued spec, a missing feature) is
    replaced by a uniformly random one drawn from ``(seed, key)``, and a neighbour
    outside the directory is left out, with a warning here on the device (User
    Guide, "Deploying"). A number in public bounds (one-bit, multi-bit, HDS, ...)
    is clipped to them, without a warning: an infinite one is clipped to its bound.

    Parameters
    ----------
    spec : CollectionSpec, dict or JSON text
    data : array-like, label or list of ids
        A feature row (the raw row: the spec's on-device steps and bounds are
        applied here), a label (a 0-d array is read as the label it holds), or the
        ids of the user's neighbours.
    seed : int
        63-bit secret seed, in ``0..2**63 - 1`` (another value is refused).
    key : int
        The user's 64-bit key: an integer (a negative one read as its 64 bits; a float,
        text or anything else is refused).
    user : object, default=None
        The user's own id (edge collections).
    directory : sequence or Directory, default=None
        Every user's id (edge collections; checked against the spec's digest).

    Returns
    -------
    report : dict
        The report as JSON data (its fields are those of the kind's wire format).
    """
    report, replaced, left_out = _encode(spec, data, seed=_check_seed(seed), key=key,
                                         user=user, directory=directory)
    _warn_outside(replaced, left_out, stacklevel=3)
    return report


def _check_seed(seed):
    """``seed`` as a Python int in ``0..2**63 - 1`` (numpy's integers too); anything else
    refused, not cut to its low bits (a port's bad seed must not draw another seed's
    reports)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer (63 random bits), got {seed!r:.60} (a "
                        f"{type(seed).__name__}).")
    seed = int(seed)
    if not 0 <= seed < 1 << 63:
        raise ValueError(f"seed must be in 0..2**63 - 1 (63 random bits), got {seed}.")
    return seed


def _warn_outside(replaced, left_out, stacklevel):
    # (on the device only: the server receives a report like any other)
    if replaced:
        warnings.warn(f"{replaced} value(s) outside the collection's public domain (its "
                      "classes, categories, 0/1 features, or a missing value) were replaced "
                      "by uniformly random ones before the report was drawn: a device "
                      "answers whatever its data, so that who answers tells the server "
                      "nothing.", UserWarning, stacklevel=stacklevel)
    if left_out:
        warnings.warn(f"{left_out} neighbour(s) are not in the directory, or are the user "
                      "itself, and were left out of the list (they are no other users of the "
                      "graph). A list names users by their ids, not by positions.",
                      UserWarning, stacklevel=stacklevel)


def _encode(spec, data, *, seed, key, user=None, directory=None):
    """:func:`encode` without warnings: ``(report, values replaced, neighbours left out)``.
    (It never touches the warning filters: devices may answer in threads.)"""
    spec, p = _validated(spec)
    keys = check_node_keys([key], "key")
    if p.protects == "edges":
        dkeys = _directory_keys(spec, directory)
        own = int(ids_to_keys(_as_id_array([user], "the user's id"))[0])
        if not np.isin(np.uint64(own), dkeys):
            raise ValueError("The user is not in the directory.")
        _check_neighbours(data)
        data = list(data)
        nbr = ids_to_keys(_as_id_array(data, "the neighbour list")) if data else \
            np.zeros(0, np.uint64)
        # Neighbours outside the directory are no users of the graph, and the user is not
        # its own neighbour: left out, never a refusal (a server could leave a user out of
        # the directory to learn who knows it)
        known = np.isin(nbr, dkeys) & (nbr != np.uint64(own))
        batch = p.encode_one(own, nbr[known], dkeys, seed, keys[0])
        return p.row(batch, 0), 0, len(set(nbr[~known].tolist()))
    # Values outside the public domain: replaced by random ones, never a refusal (whether
    # a device answers must not depend on its data); drawn from (seed, key), as a port can
    rng = _OutsideDraws(seed, keys)
    if p.protects == "labels":
        if isinstance(data, np.ndarray) and data.ndim == 0:
            data = data[()]   # one label (np.asarray(y[i])): the numpy scalar it holds
        if isinstance(data, (list, tuple, dict, set, np.ndarray)):
            shape = f" of shape {data.shape}" if isinstance(data, np.ndarray) else ""
            raise TypeError(f"A device answers about one label (its user's), got a "
                            f"{type(data).__name__}{shape}: pass the label itself (y[i], "
                            "not y[i:i + 1] or [y[i]]).")
        inputs, replaced = p.prepare_on_device([data], rng)
    else:
        rows = _float_row(_dense_row(data))
        if rows.ndim > 1 and rows.shape[0] != 1:
            raise ValueError(f"A device answers about one row (its user's), got an array of "
                             f"shape {rows.shape}.")
        rows = rows.reshape(1, -1)
        inputs, replaced = p.prepare_on_device(device_steps(spec, rows), rng)
    return p.row(p.encode(inputs, seed, keys), 0), replaced, 0


_OUTSIDE = 0x6F75747369646521   # the stream of the values drawn for those outside the domain


class _OutsideDraws:
    """The draws replacing values outside the public domain: uniforms of the counter-based
    stream ``_OUTSIDE``, counters 0, 1, ... in the order the values are replaced (a numpy
    generator would tie every port to numpy's seeding). Offers what ``prepare_on_device``
    calls: ``random(n)`` and ``integers(0, c, size=n)`` (``min(floor(u c), c - 1)``)."""

    def __init__(self, seed, keys):
        self.seed, self.keys, self.used = seed, keys, 0

    def random(self, n):
        u = node_uniforms(self.seed, self.keys, self.used + n, stream=_OUTSIDE)[0, self.used:]
        self.used += n
        return u

    def integers(self, low, high, size):
        return low + np.minimum(np.floor(self.random(size) * (high - low)).astype(np.int64),
                                high - low - 1)


def _dense_row(data):
    """A feature row given as a one-row sparse matrix (scipy's, duck-typed: the device does
    not import scipy) as a dense array; anything else as it is."""
    if hasattr(data, "toarray") and hasattr(data, "shape") and hasattr(data, "nnz"):
        if len(data.shape) != 2 or data.shape[0] != 1:
            raise ValueError(f"A device answers about one row (its user's), got a sparse "
                             f"matrix of shape {data.shape}.")
        return np.asarray(data.toarray(), dtype=np.float64).reshape(-1)
    return data


def _float_row(data):
    """A feature row as floats; a value that is no number (``"n/a"``) is missing (NaN), and
    an integer past float's range is infinite: replaced or clipped as such values are, never
    a refusal (whether a device answers must not depend on its data)."""
    try:
        return np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        values = np.asarray(data, dtype=object)
        out = np.full(values.shape, np.nan)
        for i, v in np.ndenumerate(values):
            try:
                out[i] = float(v)
            except OverflowError:
                out[i] = math.inf if v > 0 else -math.inf
            except (TypeError, ValueError):
                pass
        return out


def _check_neighbours(data):
    """An edge collection's data: an iterable of user ids (``[]`` for none), not None."""
    if data is None or isinstance(data, (str, bytes)) or not hasattr(data, "__iter__"):
        raise TypeError("the data of an edge collection is this user's neighbours, a list "
                        f"of user ids ([] for none), got {data!r:.60}.")


def _input_digest(data, user, edges=False):
    """A hash of what the device answered about (to refuse answering about other data).

    ``edges``: ``data`` is a list of neighbours, whose order and repeats do not change
    the report (the same set, the same answer)."""
    h = hashlib.sha256(repr(plain_id(user)).encode())
    if edges:   # the neighbours' keys, as the report reads them (not floats: 2**53 + 1)
        _check_neighbours(data)
        data = list(data)
        keys = ids_to_keys(_as_id_array(data, "the neighbour list")) if data else []
        h.update(b"keys" + np.unique(np.asarray(keys, dtype=np.uint64)).tobytes())
        return h.hexdigest()
    try:
        h.update(np.ascontiguousarray(np.asarray(data, dtype=np.float64)).tobytes())
    except (TypeError, ValueError, OverflowError):   # strings, string ids, huge integers
        h.update(json.dumps(np.asarray(data, dtype=object).tolist(), default=str).encode())
    return h.hexdigest()


_PATH_LOCKS = {}                 # real path of a state file -> its lock in this process
_PATH_LOCKS_GUARD = threading.Lock()


def _path_lock(path):
    """The lock of one state file in this process: every ``Device`` object on that file
    takes it (their own locks would not exclude each other)."""
    key = os.path.realpath(path)
    with _PATH_LOCKS_GUARD:
        return _PATH_LOCKS.setdefault(key, threading.Lock())


class Device:
    """A user's device: it answers each collection once and remembers its answer.

    The report of a collection is drawn with a seed and a key taken from the
    operating system's entropy (:mod:`secrets`), used once and never stored: the
    device keeps only its answers (the records the server receives, and their
    epsilon; nothing of the data they are about), so that asking again returns the
    same record (a **resend**, which costs nothing), also about changed data: a
    second answer would spend the budget again, and a refusal would tell the server
    that the data changed. A ``Device`` object that saw the earlier data warns
    (:class:`AlreadyAnswered`, once per collection); it keeps a hash of that data in
    memory only (a hash of a label or a 0/1 row in a file would give the data back to
    whoever reads it).

    Each answer carries an **answer id** (``"answer"``: 16 hex digits the device
    draws from its entropy when it answers, kept with the answer): a resend repeats
    it, so the server tells a resend (the same answer id and report) from a further,
    independent answer (charged again), whatever the reports hold.

    Parameters
    ----------
    user : object
        The user's id, sent with every report (the server learns who answered).
    path : str or None, default=None
        A JSON file where the answers are kept across restarts. ``None`` keeps
        them in memory only. Several ``Device`` objects may share one file: each
        answer reads it again under an exclusive lock, decides, and replaces the
        file atomically. The lock holds across the threads and objects of one
        process, and across processes where the system has :func:`fcntl.flock`
        (``path + ".lock"``; POSIX); elsewhere give each process its own file.
        A file that is not a state this class wrote raises ``DeviceStateError``:
        it is never reset, since answering its collections again would spend
        their budget again. A ``Device`` object never forgets the answers it
        has seen: it writes them back to a file deleted, or replaced by an older
        copy, while it runs (and raises ``DeviceStateError`` if the file holds
        another answer to one of them).
    max_epsilon : float or None, default=None
        The device's own cap on the total epsilon it spends over all the
        collections it answers; a spec that would exceed it is refused.

    Examples
    --------
    The server publishes a spec (here made by :func:`skldp.population.collection_spec`;
    a device reads it as JSON); the device answers it about its own data:

    >>> from skldp.device import Device
    >>> from skldp.mechanisms import LabelRandomizedResponse
    >>> from skldp.population import collection_spec
    >>> spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2])).to_json()
    >>> device = Device(user=17)
    >>> record = device.answer(spec, 2)
    >>> sorted(record), record["report"]["y"] in (0, 1, 2)
    (['answer', 'collection', 'report', 'user'], True)
    >>> device.answer(spec, 2) == record          # a resend: the same answer id and report
    True
    """

    def __init__(self, user, *, path=None, max_epsilon=None):
        user = plain_id(user)
        if isinstance(user, bool) or not isinstance(user, (str, int)):
            # the server refuses such a record as malformed, and charges no one for it
            raise TypeError(f"A user id is a string or an integer, got {user!r} (a "
                            f"{type(user).__name__}). An id read as a float from a table "
                            "with missing values (5.0) is int(5.0).")
        self.user = user
        # Resolved once: a relative path after a change of directory, or a link replaced
        # by the state file, would be another state (and the cap spent again)
        self.path = None if path is None else os.path.realpath(os.fspath(path))
        if max_epsilon is not None and (
                isinstance(max_epsilon, (bool, np.bool_)) or
                not isinstance(max_epsilon, (int, float, np.integer, np.floating))):
            # (float() reads text: " 2_0 " would be a cap of 20)
            raise TypeError(f"max_epsilon must be a number >= 0 or None, got {max_epsilon!r:.60} "
                            f"(a {type(max_epsilon).__name__}).")
        self.max_epsilon = None if max_epsilon is None else float(max_epsilon)
        if self.max_epsilon is not None and not self.max_epsilon >= 0:
            raise ValueError(f"max_epsilon must be a number >= 0 or None, got {max_epsilon!r}.")
        self._answers = {}
        self._inputs = {}   # collection id -> hash of the data answered about (memory only)
        self._warned = set()   # collections whose changed data this object warned about
        self._thread_lock = threading.Lock()
        if self.path is not None:
            try:
                with self._locked():
                    self._load()   # a corrupted state is an error now, not later
            except PermissionError:   # a read-only folder: its state read, left as it is
                self._answers = self._with_seen(self._read_state())

    def __getstate__(self):
        if self.path is None:
            # Two copies of an in-memory state would each answer, and each spend the cap.
            raise TypeError(
                f"A Device without a path (user {self.user!r}) keeps its answers in memory and "
                "cannot be pickled or copied: each copy would answer collections again and "
                "spend max_epsilon again. Give it a state file, Device(user, path=...), which "
                "every copy and process shares.")
        # (the hashes of the data stay in this object's memory)
        return {k: v for k, v in vars(self).items()
                if k not in ("_thread_lock", "_inputs", "_warned")}

    def __setstate__(self, state):
        vars(self).update(state)
        self._inputs = {}
        self._warned = set()
        self._thread_lock = threading.Lock()

    @property
    def spent(self):
        """The epsilon this device has spent over every collection it answered (read from
        its state file, which other ``Device`` objects on the same file may have added to)."""
        answers = self._answers if self.path is None else self._with_seen(self._read_state())
        return _spent(answers)

    # -- the state
    @contextlib.contextmanager
    def _locked(self):
        """Hold the device's state exclusively: this object's threads, and every process
        or object that locks the same state file."""
        with self._thread_lock if self.path is None else _path_lock(self.path):
            if self.path is None or fcntl is None:
                yield
                return
            fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)   # (releases the lock)

    def _load(self):
        """The answers, read under the lock: the state file's, with every answer this
        object has seen put back (a file deleted, or restored from an older copy, while the
        device runs forgets none of them), and without the input hashes that files of an
        older format hold. The file is written back when it differs."""
        on_file = self._read_state()
        for cid, a in on_file.items():   # (an old file's hash, kept in memory only)
            if "input" in a:
                self._inputs.setdefault(cid, a["input"])
        answers = self._with_seen(on_file)
        if answers != on_file:
            self._write_state(answers)
        self._answers = answers
        return answers

    def _with_seen(self, on_file):
        """The file's answers (without input hashes) and this object's: a collection this
        object answered stays answered, so its budget is not spent again."""
        answers = {cid: {k: v for k, v in a.items() if k != "input"}
                   for cid, a in on_file.items()}
        for cid, mine in self._answers.items():
            theirs = answers.setdefault(cid, mine)
            # (the texts compared only when the dicts differ: a NaN is not equal to itself)
            if theirs != mine and \
                    json.dumps(theirs, sort_keys=True) != json.dumps(mine, sort_keys=True):
                # both answers were sent (the file was replaced while this object ran)
                raise _state_error(self.path, f"it holds another answer to collection {cid} "
                                              "than the one this device sent")
        return answers

    def _read_state(self):
        if not os.path.exists(self.path):
            return {}   # a new device (or a lost file: see _load)
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (ValueError, RecursionError) as e:   # not JSON, not UTF-8, truncated
            raise _state_error(self.path, f"it is not JSON: {type(e).__name__}") from None
        _check_state(data, self.path, plain_id(self.user))
        return data

    def _write_state(self, answers):
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=os.path.basename(self.path) + ".",
                                   suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(answers, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)   # atomic: a reader sees the old state or the new
        except BaseException:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise
        _sync_folder(folder)   # the rename itself survives a crash

    def answer(self, spec, data, *, directory=None):
        """This user's report of ``spec`` about ``data`` (see :func:`encode`).

        Asked again, the device returns the same record (a resend: same answer id,
        same report), which costs nothing; about other data, it warns
        (:class:`AlreadyAnswered`, the first time this object is asked that
        collection about other data) and resends all the same.

        Returns
        -------
        record : dict
            ``{"collection": spec id, "user": user id, "answer": answer id,
            "report": {...}}``, the line the device sends. The answer id is 16
            hex digits drawn from the operating system's entropy when the device
            answered: it says nothing about the data, and tells the server that
            a record it receives again is a resend, not a new answer.

        Raises
        ------
        SpecError
            The spec is invalid, or would take the device past ``max_epsilon``.
        DeviceStateError
            The state file is corrupted, or holds another answer than this object
            sent (see :class:`Device`).
        """
        spec, p = _validated(spec)
        if p.protects == "features":
            data = _dense_row(data)
        digest = _input_digest(data, self.user, edges="edges" in spec.protects)
        changed = replaced = left_out = 0
        with self._locked():
            # read again under the lock: another Device on this file may have answered
            answers = self._answers if self.path is None else self._load()
            old = answers.get(spec.id)
            if old is not None:
                # the data seen first by this object (or an old state file's hash)
                other = self._inputs.setdefault(spec.id, digest) != digest
                # input this spec cannot take gets its own error, not "other data"
                if other and ("edges" not in spec.protects or directory is not None):
                    _encode(spec, data, seed=0, key=0, user=self.user, directory=directory)
                record = old["record"]
                # warned once per collection: a warning turned into an error still lets
                # the app resend when asked again
                changed = other and spec.id not in self._warned
                if changed:
                    self._warned.add(spec.id)
            else:
                spent = _spent(answers)
                if self.max_epsilon is not None and not spent + spec.epsilon <= \
                        self.max_epsilon * (1 + 1e-12):   # (written to refuse a NaN too)
                    total = significant(spent + spec.epsilon)
                    raise SpecError(f"answering {spec.describe()} would take this device to "
                                    f"epsilon={total}, above its cap of "
                                    f"{self.max_epsilon:.4g}.")
                report, replaced, left_out = _encode(
                    spec, data, seed=secrets.randbits(63), key=secrets.randbits(64),
                    user=self.user, directory=directory)
                record = {"collection": spec.id, "user": plain_id(self.user),
                          "answer": secrets.token_hex(8), "report": report}
                answers = dict(answers)
                answers[spec.id] = {"record": record, "epsilon": spec.epsilon}
                self._inputs[spec.id] = digest
                if self.path is not None:
                    self._write_state(answers)
            self._answers = answers
        # Warned after the answer is kept, on the device only (the server receives a report,
        # or a resend, like any other): a warning turned into an error still leaves the
        # record to resend when asked again
        if changed:
            warnings.warn(AlreadyAnswered(
                f"this device answered collection {spec.id} about other data; it resends "
                "that answer. Answering again would spend its budget again, and refusing "
                "would tell the server that the data changed. The server opens a new "
                "collection (a new spec id) to ask about the new data."), stacklevel=2)
        _warn_outside(replaced, left_out, stacklevel=3)
        return copy.deepcopy(record)


def _sync_folder(folder):
    """Flush a folder's entries (a file renamed into it) to disk, where the system opens
    folders (POSIX) and its file system syncs them; elsewhere nothing."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:   # a folder this process may write but not read (mode 0o300)
        return
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno != errno.EINVAL:   # (EINVAL: a file system that does not sync folders)
            raise
    finally:
        os.close(fd)


def _spent(answers):
    return float(sum(a["epsilon"] for a in answers.values()))


def _state_error(path, why):
    return DeviceStateError(
        f"the device state file {path!r} is not a state this device wrote ({why}). Do not "
        "delete it or start afresh: the answers it held were sent, and answering their "
        "collections again would spend their budget again. Restore the file from a copy "
        "taken after the device's last answer; without one, this device must not answer "
        "the collections it held again.")


def _check_state(data, path, user):
    """Refuse a state file that is not ``{collection id: {"record", "epsilon"}}`` as
    :class:`Device` writes it, for this user (entries of an older format also hold an
    ``"input"`` hash)."""
    if not isinstance(data, dict):
        raise _state_error(path, f"a JSON object is expected, got {type(data).__name__}")
    user = json.loads(json.dumps(user, default=str))   # as the records hold it
    for cid, entry in data.items():
        if not isinstance(entry, dict) or not {"record", "epsilon"} <= set(entry):
            raise _state_error(path, "an entry lacks its record or epsilon")
        rec, eps = entry["record"], entry["epsilon"]
        if not isinstance(entry.get("input", ""), str):
            raise _state_error(path, "an entry's input is not a string")
        try:
            bad = isinstance(eps, bool) or not isinstance(eps, (int, float)) or \
                math.isnan(eps) or eps < 0
        except OverflowError:   # an integer past float's range
            bad = True
        if bad:
            raise _state_error(path, "an entry's epsilon is not a number >= 0")
        if not isinstance(rec, dict) or not {"collection", "user", "report"} <= set(rec) \
                or not set(rec) <= {"collection", "user", "answer", "report"}:
            raise _state_error(path, "an entry's record does not have the fields of a record")
        if rec["collection"] != cid or not isinstance(rec["report"], dict):
            raise _state_error(path, "an entry's record is not of its collection")
        if "answer" in rec and not (isinstance(rec["answer"], str)
                                    and ANSWER_ID.fullmatch(rec["answer"])):
            raise _state_error(path, "an entry's answer id is not 16 hex digits")
        if rec["user"] != user:
            raise _state_error(path, "it holds another user's answers")


def plain_id(user):
    """``user``'s id as a plain Python value (numpy's 3 becomes 3): it hashes and compares
    as the plain id does, and JSON can write it."""
    return user.item() if isinstance(user, np.generic) else user
