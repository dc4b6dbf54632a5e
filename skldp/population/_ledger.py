"""The ledger: what every user actually sent, per collection (the server's record)."""

import base64
import json
import os
import shutil
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from ..device._random import check_node_keys
from ..device._spec import CollectionSpec, significant
from ..utils._arrays import sorted_lookup

try:  # a shared lock on the journal while reading it (POSIX)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["Ledger", "LedgerEntry"]

_PARTS = ("features", "labels", "edges")   # what a collection protects


@dataclass(frozen=True)
class LedgerEntry:
    """One collection (or one central-DP training) as the ledger saw it.

    Attributes
    ----------
    spec : CollectionSpec
        The public spec of the collection (or of the training).
    n_users : int
        Users who answered at least once (all users of the data for a
        central training).
    n_answers : int
        Answers received (one per user: a collection is answered once).
    max_answers : int
        The most answers one user gave.
    first, last : int
        Sequence numbers of the first and the last answer (see
        :meth:`Ledger.mark`).
    """

    spec: object
    n_users: int
    n_answers: int
    max_answers: int
    first: int
    last: int

    @property
    def epsilon(self):
        """What the user who answered most often spent on this collection."""
        return self.spec.epsilon * self.max_answers


class _Answers:
    """Users' answer counts of one collection, appended in chunks and merged when read."""

    __slots__ = ("chunks", "keys", "counts", "first", "last")

    def __init__(self, seq):
        self.chunks, self.keys, self.counts = [], np.zeros(0, np.uint64), np.zeros(0, np.int64)
        self.first = self.last = seq

    def add(self, keys, seq):
        self.chunks.append(np.asarray(keys, dtype=np.uint64))
        self.last = seq

    def merged(self):
        if self.chunks:
            keys = np.concatenate([self.keys] + self.chunks)
            counts = np.concatenate([self.counts] + [np.ones(len(c), np.int64)
                                                     for c in self.chunks])
            self.keys, self.counts = _sum_by_key(keys, counts, exact=True)
            self.chunks = []
        return self.keys, self.counts


def _sum_by_key(keys, values, exact=False):
    """Sorted distinct ``keys`` and the sum of ``values`` for each (a sort, no hashing).

    ``exact``: integer ``values``, whose sums do not depend on the order they are added
    in; then numpy's fastest sort (1M hashed keys: 0.015 s, its stable one 0.086 s).
    Floats are added in the order given (stable), as they always were.
    """
    order = np.argsort(keys) if exact else np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    if len(keys) == 0:
        return keys, values
    start = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return keys[start], np.add.reduceat(values, start)


# The registry of plain-array ledgers (skldp.population._population, which imports this
# module, sets them): "to_save", the ledgers whose summaries a plain array's ledger is
# saved with, and "loaded", which counts a loaded one among this process's.
PLAIN_LEDGERS = {}


class Ledger:
    """What the users of one population sent: every collection they answered, and how often.

    The population (the simulated devices, :class:`~skldp.population.Population`)
    writes it; :func:`skldp.accounting.privacy_report` and the budget checks read
    it. It holds no raw data and no secret, only the public specs and, per
    collection, which users answered and how many times: it can be saved with a
    fitted pipeline. A user who answers two collections, or the same collection
    charged for each; the same answer asked again is free.

    Local collections compose sequentially per user (Dwork & Roth 2014, Thm.
    3.16): a user's local epsilon is the sum, over the collections it answered,
    of the collection's epsilon times its number of answers. Central-DP trainings
    (node-level guarantees of a released model) apply to every user and compose
    by basic composition (sums of epsilon and of delta).

    Read more in the :ref:`User Guide <privacy>`.
    """

    # True for the users of plain arrays (array_population, default_population): saved with
    # a summary of every other such ledger of its process (LedgerSummary), which the loading
    # process counts with its own
    # (a report adds them all up: the same people may be in each)
    _plain = False

    def __init__(self):
        self._local = {}       # collection id -> (spec, _Answers)
        self._central = {}     # training id -> (spec, n_users, seq)
        # training id -> the users whose data it read (sorted), when the training named them:
        # a central training that protects a part counts as a collection of it for them
        self._central_keys = {}
        self._seq = 0
        self._lock = threading.RLock()
        self._device_side = None   # a weak reference to the population, to read its journal
        _LEDGERS.add(self)
        self._journal = None       # the population's journal, once it is shared
        self._offset = 0           # bytes of it read (a ledger on its own: see _sync)
        self._budget = None        # the users' cap when saved (a ledger on its own)
        self._received_ids = set()   # collections received from real devices
        # protects -> (_seq, per_user's keys, epsilon): a report reads it four times (0.12 s
        # at 3M users); any new answer (_add, the journal's too) moves _seq on
        self._per_user = {}

    # ------------------------------------------------------------------ writing
    def _add(self, spec, keys):
        with self._lock:
            self._seq += 1
            if spec.id not in self._local:
                self._local[spec.id] = (spec, _Answers(self._seq))
            self._local[spec.id][1].add(keys, self._seq)

    def _add_central(self, spec, n_users, keys=None):
        with self._lock:
            if spec.id in self._central:
                return
            self._seq += 1
            self._central[spec.id] = (spec, int(n_users), self._seq)
            if keys is not None:
                self._central_keys[spec.id] = keys

    def _sync(self):
        pop = self._device_side() if self._device_side is not None else None
        if pop is not None:
            pop._sync()
        elif self._journal is not None and os.path.exists(self._journal):
            self._replay()

    def _replay(self):
        """A ledger saved with an estimator (e.g. one returned by a worker) reads the
        journal of its population while that is reachable: it stays current, not a
        snapshot of the moment it was saved. A population's own ledger reads on from
        where the population stopped when the population ends (``_JournalFolder``)."""
        with self._lock, open(self._journal, "rb") as fh:
            if fcntl is not None:
                fcntl.flock(fh, fcntl.LOCK_SH)
            try:
                fh.seek(self._offset)
                data = fh.read()
            finally:
                if fcntl is not None:
                    fcntl.flock(fh, fcntl.LOCK_UN)
            end = data.rfind(b"\n") + 1
            self._offset += end
            for line in data[:end].splitlines():
                rec = json.loads(line)
                if "local" in rec:
                    spec = CollectionSpec.from_dict(rec["local"], check_kind=False)
                    keys = np.frombuffer(base64.b64decode(rec["keys"]), dtype="<u8")
                    keys = keys.astype(np.uint64)
                    if spec.id in self._local:   # one answer per user: what is new
                        keys = keys[~sorted_lookup(self._local[spec.id][1].merged()[0],
                                                   keys)[1]]
                    if len(keys):
                        self._add(spec, keys)
                    if rec.get("received"):
                        self._received_ids.add(spec.id)
                elif "central" in rec:   # (its users matter to a population only)
                    self._add_central(CollectionSpec.from_dict(rec["central"],
                                                               check_kind=False),
                                      rec["n_users"])
                elif "budget" in rec:
                    self._budget = rec["budget"]

    # ------------------------------------------------------------------ reading
    def _cap(self):
        """The users' budget cap: their population's, or the last one known (a ledger
        saved with an estimator, whose population is gone or elsewhere)."""
        pop = self._device_side() if self._device_side is not None else None
        return pop.budget if pop is not None else self._budget

    def mark(self):
        """A sequence number: :meth:`entries` ``(since=mark)`` lists what was answered after it."""
        self._sync()
        return self._seq

    def entries(self, since=None):
        """Every collection and central training, in the order they were first answered.

        Parameters
        ----------
        since : int or None
            Only those answered after :meth:`mark` returned ``since``.

        Returns
        -------
        list of LedgerEntry
        """
        self._sync()
        out = []
        with self._lock:
            for spec, ans in self._local.values():
                if since is not None and ans.last <= since:
                    continue
                keys, counts = ans.merged()
                out.append(LedgerEntry(spec, len(keys), int(counts.sum()),
                                       int(counts.max(initial=0)), ans.first, ans.last))
            for spec, n_users, seq in self._central.values():
                if since is None or seq > since:
                    out.append(LedgerEntry(spec, n_users, n_users, 1, seq, seq))
        return sorted(out, key=lambda e: e.first)

    def per_user(self, protects=None):
        """Each user's local epsilon: the sum over what it sent.

        Parameters
        ----------
        protects : str or None
            Only the collections that protect this (``"features"``,
            ``"labels"``, ``"edges"``).

        Returns
        -------
        keys : ndarray of uint64
            The users' node keys (those who answered something).
        epsilon : ndarray of float

        Both are read-only, shared by every caller until a new answer arrives: copy
        them to change them.
        """
        self._sync()
        self._check_part(protects, "protects")
        with self._lock:
            seq = self._seq
            cached = self._per_user.get(protects)
            if cached is not None and cached[0] == seq:
                return cached[1:]
            parts = [(ans.merged(), spec.epsilon) for spec, ans in self._local.values()
                     if protects is None or protects in spec.protects]
        if not parts:
            keys, cost = np.zeros(0, np.uint64), np.zeros(0)
        elif len(parts) == 1:   # one collection's keys: already sorted and distinct
            (keys, counts), eps = parts[0]
            cost = counts * eps
        else:
            keys, cost = _sum_by_key(np.concatenate([k for (k, _), _ in parts]),
                                     np.concatenate([c * eps for (_, c), eps in parts]))
        # shared by every caller: read-only views (merged()'s own arrays stay writeable)
        keys, cost = keys.view(), cost.view()
        keys.flags.writeable = cost.flags.writeable = False
        with self._lock:
            self._per_user[protects] = (seq, keys, cost)
        return keys, cost

    def _check_part(self, what, name):
        """Refuse a part that is none of the three and that no collection of this ledger
        protects (a misspelt ``"feature"`` matched nothing: 0 spent)."""
        if what is None or (isinstance(what, str) and what in _PARTS):
            return
        if isinstance(what, str):
            with self._lock:
                specs = [spec for spec, _ in self._local.values()] + \
                    [spec for spec, _, _ in self._central.values()]
            if any(what in spec.protects for spec in specs):
                return
        raise ValueError(f"{name} must be 'features', 'labels' or 'edges' (or None), got "
                         f"{what!r}: no collection of this ledger protects it.")

    def spent(self, keys):
        """Local epsilon already spent by each of ``keys`` (0 for users who sent nothing)."""
        users, eps = self.per_user()
        keys = check_node_keys(keys)
        out = np.zeros(len(keys))
        pos, hit = sorted_lookup(users, keys)
        out[hit] = eps[pos[hit]]
        return out

    @property
    def local_epsilon(self):
        """The largest local epsilon any user spent (0 if nobody sent anything)."""
        return float(self.per_user()[1].max(initial=0.0))

    def epsilon_for(self, what):
        """The largest local epsilon any user spent on reports that protect ``what``
        (``"features"``, ``"labels"`` or ``"edges"``; another part is a ``ValueError``
        unless a collection protects it)."""
        self._sync()
        self._check_part(what, "what")
        return float(self.per_user(what)[1].max(initial=0.0))

    @property
    def central_epsilon(self):
        """Central-DP trainings composed: the sum of their epsilons (basic composition)."""
        self._sync()
        return float(sum(spec.epsilon for spec, _, _ in self._central.values()))

    @property
    def central_delta(self):
        self._sync()
        return float(sum(spec.delta for spec, _, _ in self._central.values()))

    @property
    def total_epsilon(self):
        """The largest epsilon of one user over everything: local plus central (sequential)."""
        return self.local_epsilon + self.central_epsilon

    def __len__(self):
        self._sync()
        return len(self._local) + len(self._central)

    def __str__(self):
        entries = self.entries()
        if not entries:
            return "Ledger: nothing sent."
        lines = [f"Ledger: {len(entries)} collection(s)"]
        for e in entries:
            again = f", up to {e.max_answers} answers per user" if e.max_answers > 1 else ""
            model = "read in the clear" if e.spec.model == "clear" else f"{e.spec.model} DP"
            lines.append(f"  {e.spec.id}  {e.spec.describe()}  [{model}, "
                         f"{e.n_users} users{again}]")
        lines.append(f"  largest local epsilon of one user: {significant(self.local_epsilon)}")
        if self._central:
            lines.append(f"  central trainings: epsilon={significant(self.central_epsilon)}, "
                         f"delta={significant(self.central_delta, 3)} (basic composition)")
        return "\n".join(lines)

    def __repr__(self):
        return (f"<Ledger: {len(self)} collection(s), local epsilon "
                f"{significant(self.local_epsilon)}>")

    # -------------------------------------------------------------- pickling
    def _shared(self):
        """The population, its journal opened if it was not: a saved copy (or summary) names
        it, to read on from it and to be told from other copies of this ledger."""
        pop = self._device_side() if self._device_side is not None else None
        if pop is not None and pop._journal is None and pop._secret is not None:
            with pop._lock:
                pop._open_journal()
        return pop

    def __getstate__(self):
        # Saved with a pipeline: the answers so far and the journal's path (no secret, no
        # link to the devices); a copy that can read the journal rebuilds from it.
        pop = self._shared()
        self._sync()
        with self._lock:
            for _, ans in self._local.values():
                ans.merged()
            state = dict(self.__dict__)
        state.pop("_lock")
        state.pop("_per_user", None)
        state["_device_side"] = None
        state["_budget"] = pop.budget if pop is not None else self._budget
        if self._plain:   # the others without their keys (each registers itself on loading)
            state["_plain_ledgers"] = [LedgerSummary.of(led) for led in PLAIN_LEDGERS["to_save"]()
                                       if led is not self]
        return state

    def __setstate__(self, state):
        # The answers saved are those of the journal's first _offset bytes (the population
        # keeps the two equal): read on lazily from there (_sync), and keep them if the
        # journal is gone.
        state = dict(state)
        state.pop("_plain_ledgers", None)   # (each of them registers itself, as below)
        self.__dict__.update({"_journal": None, "_offset": 0, "_budget": None,
                              "_received_ids": set(), "_central_keys": {}, **state,
                              "_per_user": {}})
        self._lock = threading.RLock()
        _LEDGERS.add(self)
        if self._journal is not None:
            folder = _FOLDERS.get(os.path.dirname(self._journal))
            if folder is not None:   # this process removes it: read on before it does
                folder.ledgers.add(self)
        if self._plain:
            PLAIN_LEDGERS["loaded"](self)


class LedgerSummary:
    """What :func:`~skldp.accounting.privacy_report` reads of a plain array's ledger, without
    the users' keys: how the other plain-array ledgers of a process are saved beside a
    plain array's (with their keys, every such pickle held all of them).

    It answers what a report asks of a ledger (:meth:`Ledger.entries`, the epsilons, the
    cap) as the ledger did. While its journal is reachable (the saving process is alive)
    it reads on, as a saved :class:`Ledger` does, from the journal's start: it has no
    keys to tell a new answer from one it holds.
    """

    def __init__(self, ledger):
        self._journal, self._full = ledger._journal, None
        self._read(ledger, ledger.entries())

    @classmethod
    def of(cls, ledger):
        """The summary of ``ledger`` as it is now: one object while it does not change, so
        that one pickle holds one copy however many ledgers it saves it beside."""
        if isinstance(ledger, cls):
            ledger._sync()
            return ledger
        ledger._shared()
        ledger._sync()
        # (no lock held: a ledger's is taken after its population's, never before)
        stamp = (ledger._seq, ledger._offset, ledger._cap(), len(ledger._received_ids))
        cached = _SUMMARIES.get(ledger)
        if cached is None or cached[0] != stamp:
            cached = _SUMMARIES[ledger] = (stamp, cls(ledger))
        return cached[1]

    def _read(self, ledger, entries):
        self._entries, self._offset, self._budget = entries, ledger._offset, ledger._cap()
        self._received_ids = set(ledger._received_ids)
        self._epsilons = {what: ledger.epsilon_for(what) for what in ("features", "labels",
                                                                      "edges")}
        self._epsilons[None] = ledger.local_epsilon
        self._central = (ledger.central_epsilon, ledger.central_delta)

    def _sync(self):
        if self._journal is None or not os.path.exists(self._journal):
            return
        if self._full is None:
            self._full = Ledger()
            self._full._journal = self._journal
        saved = {e.spec.id: i for i, e in enumerate(self._entries)}
        # the saved order, then what is new (stable sort): as a saved Ledger reading on
        entries = sorted(self._full.entries(), key=lambda e: saved.get(e.spec.id, len(saved)))
        self._read(self._full, entries)

    def _cap(self):
        return self._budget

    def entries(self):
        """Every collection and central training, in the order they were first answered."""
        self._sync()
        return list(self._entries)

    @property
    def local_epsilon(self):
        self._sync()
        return self._epsilons[None]

    def epsilon_for(self, what):
        self._sync()
        if what is not None and (not isinstance(what, str) or what not in self._epsilons):
            raise ValueError(f"what must be 'features', 'labels' or 'edges' (or None), got "
                             f"{what!r}.")
        return self._epsilons[what]

    @property
    def central_epsilon(self):
        self._sync()
        return self._central[0]

    @property
    def central_delta(self):
        self._sync()
        return self._central[1]

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_full"}

    def __setstate__(self, state):
        self.__dict__.update(state, _full=None)
        PLAIN_LEDGERS["loaded"](self)


_SUMMARIES = weakref.WeakKeyDictionary()   # ledger -> (its state's stamp, its summary)


class _JournalFolder:
    """The journal's private folder, removed when the last population of this process
    that holds it (the original, or a copy made here by pickle or deepcopy) is collected.
    Copies in other processes do not hold it: they need the original alive.

    The ledgers of this process that read the journal (the populations', and copies
    saved with estimators) read what is left in it before it is removed: what worker
    processes answered stays in them once the journal is gone. A process forked from
    this one inherits the object but never removes the folder: the original's process
    owns it.
    """

    def __init__(self, path):
        self.path = path
        self.ledgers = weakref.WeakSet()
        weakref.finalize(self, _remove_folder, path, self.ledgers, os.getpid())


def _remove_folder(path, ledgers, owner):
    if os.getpid() != owner:   # a forked child: the journal is its parent's
        return
    for ledger in list(ledgers):
        try:
            ledger._replay()
        except Exception:  # noqa: BLE001 - a finalizer must not raise: it keeps what it read
            pass
    shutil.rmtree(path, True)


_FOLDERS = weakref.WeakValueDictionary()   # folder path -> _JournalFolder
_LEDGERS = weakref.WeakSet()   # every ledger of the process: their locks renewed at a fork
