"""One user's device: answers each collection once, with its own secret randomness."""

import hashlib
import json
import os
import secrets

import numpy as np

from ._kinds import directory_digest, plan
from ._random import ids_to_keys
from ._spec import CollectionSpec, read_spec
from ._steps import device_steps

__all__ = ["Device", "Directory", "encode", "AlreadyAnswered"]


class AlreadyAnswered(RuntimeError):
    """The device answered this collection about other data; a second answer would spend
    the budget again, so it is refused (the server must open a new collection)."""


class Directory:
    """The public directory of users an edge collection's lists name: their ids, read once.

    Parameters
    ----------
    ids : sequence
        Every user's id (integers or strings), in any order.

    Attributes
    ----------
    keys : ndarray of uint64
        The users' keys, sorted: a report names a user by its position here.
    digest : str
        What an edge spec states (``public_state["directory"]``).
    """

    def __init__(self, ids):
        self.keys = np.sort(ids_to_keys(np.asarray(list(ids))))
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


_PLANS = {}   # id(spec) -> (spec, plan): a spec object read once is not validated again


def _validated(spec):
    """(spec, plan) of a spec given as an object, a dict, JSON text or a path."""
    hit = _PLANS.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit
    parsed = read_spec(spec)
    entry = (parsed, plan(parsed))
    if isinstance(spec, CollectionSpec):
        if len(_PLANS) > 64:
            _PLANS.clear()
        _PLANS[id(spec)] = (spec, entry[1])
    return entry


def encode(spec, data, *, seed, key, user=None, directory=None):
    """One user's report for ``spec`` from its raw ``data``, drawn from ``(seed, key)``.

    A pure function: the same spec, data, seed and key give the same report (the test
    vectors fix them). A device draws ``seed`` and ``key`` from its operating
    system's entropy (:class:`Device`); the server's simulation draws them from the
    collection's seed and the user's report key.

    Parameters
    ----------
    spec : CollectionSpec, dict or JSON text
    data : array-like, label or list of ids
        A feature row (the raw row: the spec's on-device steps and bounds are
        applied here), a label, or the ids of the user's neighbours.
    seed : int
        63-bit secret seed.
    key : int
        64-bit key.
    user : object, default=None
        The user's own id (edge collections).
    directory : sequence or Directory, default=None
        Every user's id (edge collections; checked against the spec's digest).

    Returns
    -------
    report : dict
        The report as JSON data (its fields are those of the kind's wire format).
    """
    spec, p = _validated(spec)
    keys = np.array([int(key) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64)
    if p.protects == "edges":
        dkeys = _directory_keys(spec, directory)
        own = int(ids_to_keys(np.asarray([user]))[0])
        nbr = ids_to_keys(np.asarray(list(data))) if len(data) else np.zeros(0, np.uint64)
        known = np.isin(np.append(nbr, np.uint64(own)), dkeys)
        if not known.all():
            raise ValueError("The user or some neighbour is not in the directory.")
        if own in set(nbr.tolist()):
            raise ValueError("An adjacency list holds other users only (no self loop).")
        batch = p.encode_one(own, nbr, dkeys, seed, keys[0])
    elif p.protects == "labels":
        batch = p.encode(p.prepare([data]), seed, keys)
    else:
        rows = np.asarray(data, dtype=np.float64)
        if rows.ndim > 1 and rows.shape[0] != 1:
            raise ValueError(f"A device answers about one row (its user's), got an array of "
                             f"shape {rows.shape}.")
        rows = rows.reshape(1, -1)
        batch = p.encode(p.prepare(device_steps(spec, rows)), seed, keys)
    return p.row(batch, 0)


def _input_digest(data, user, edges=False):
    """A hash of what the device answered about (to refuse answering about other data).

    ``edges``: ``data`` is a list of neighbours, whose order and repeats do not change
    the report (the same set, the same answer)."""
    h = hashlib.sha256(repr(user).encode())
    if edges:
        data = sorted({json.dumps(_json_id(v), default=str) for v in data})
    try:
        h.update(np.ascontiguousarray(np.asarray(data, dtype=np.float64)).tobytes())
    except (TypeError, ValueError):   # labels that are strings, lists of string ids
        h.update(json.dumps(np.asarray(data, dtype=object).tolist(), default=str).encode())
    return h.hexdigest()


class Device:
    """A user's device: it answers each collection once and remembers its answer.

    The report of a collection is drawn with a seed and a key taken from the
    operating system's entropy (:mod:`secrets`), used once and never stored: the
    device keeps only its answers (and a hash of what it answered about), so that
    asking again returns the same report and costs nothing, while asking about
    changed data is refused (a second answer would spend the budget again).

    Parameters
    ----------
    user : object
        The user's id, sent with every report (the server learns who answered).
    path : str or None, default=None
        A JSON file where the answers are kept across restarts. ``None`` keeps
        them in memory only.
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
    >>> record = Device(user=17).answer(spec, 2)
    >>> sorted(record), record["report"]["y"] in (0, 1, 2)
    (['collection', 'report', 'user'], True)
    """

    def __init__(self, user, *, path=None, max_epsilon=None):
        self.user = user
        self.path = path
        self.max_epsilon = None if max_epsilon is None else float(max_epsilon)
        if self.max_epsilon is not None and not self.max_epsilon >= 0:
            raise ValueError(f"max_epsilon must be a number >= 0 or None, got {max_epsilon!r}.")
        self._answers = {}
        if path is not None and os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                self._answers = json.load(fh)

    @property
    def spent(self):
        """The epsilon this device has spent over every collection it answered."""
        return float(sum(a["epsilon"] for a in self._answers.values()))

    def answer(self, spec, data, *, directory=None):
        """This user's report of ``spec`` about ``data`` (see :func:`encode`).

        Returns
        -------
        record : dict
            ``{"collection": spec id, "user": user id, "report": {...}}``, the
            line the device sends.

        Raises
        ------
        AlreadyAnswered
            The device answered this collection about other data.
        SpecError
            The spec is invalid, or would take the device past ``max_epsilon``.
        """
        spec, _ = _validated(spec)
        digest = _input_digest(data, self.user, edges="edges" in spec.protects)
        old = self._answers.get(spec.id)
        if old is not None:
            if old["input"] != digest:
                # input this spec cannot take gets its own error, not "other data"
                if "edges" not in spec.protects or directory is not None:
                    encode(spec, data, seed=0, key=0, user=self.user, directory=directory)
                raise AlreadyAnswered(
                    f"this device answered collection {spec.id} about other data; answering "
                    "again would spend its budget again. The server must open a new "
                    "collection (a new spec id) to ask about the new data.")
            return old["record"]
        if self.max_epsilon is not None and not self.spent + spec.epsilon <= self.max_epsilon * (
                1 + 1e-12):   # (written to refuse a NaN too)
            from ._spec import SpecError
            raise SpecError(f"answering {spec.describe()} would take this device to epsilon="
                            f"{self.spent + spec.epsilon:.4g}, above its cap of "
                            f"{self.max_epsilon:.4g}.")
        report = encode(spec, data, seed=secrets.randbits(63), key=secrets.randbits(64),
                        user=self.user, directory=directory)
        record = {"collection": spec.id, "user": _json_id(self.user), "report": report}
        self._answers[spec.id] = {"input": digest, "record": record, "epsilon": spec.epsilon}
        if self.path is not None:
            tmp = self.path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(self._answers, fh)
            os.replace(tmp, self.path)
        return record


def _json_id(user):
    if isinstance(user, np.generic):
        return user.item()
    return user
