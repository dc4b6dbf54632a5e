"""The privacy boundary: the simulated devices of one population, and what they answered."""

import base64
import contextlib
import dataclasses
import hashlib
import json
import multiprocessing
import numbers
import os
import pickle
import secrets
import sys
import tempfile
import threading
import uuid
import warnings
import weakref

import numpy as np

from ..device._random import (
    _GOLDEN,
    _mix,
    _retyped,
    check_node_keys,
    has_integer_text,
    other_spellings,
)
from ..device._spec import significant
from ..exceptions import PrivacyBudgetError
from ..utils._arrays import distinct, member, sorted_lookup
from ..utils._hashing import content_hash
from ._digest import answer_tags, report_keys
from ._ledger import _FOLDERS, _LEDGERS, PLAIN_LEDGERS, Ledger, _JournalFolder
from ._spec import CollectionSpec

try:  # file locks for ledgers shared with worker processes (POSIX)
    import fcntl
except ImportError:  # pragma: no cover - Windows: one process at a time
    fcntl = None

__all__ = ["Population", "BudgetExceededError", "default_population", "array_population"]

_TOL = 1e-9   # budget comparisons: sums of floats


class _ChangedAnswer(ValueError):
    """A request refused because of the users' data: some answered the collection about
    other data, or come twice in it with two inputs (``Population._new_answers``)."""


class BudgetExceededError(PrivacyBudgetError):
    """A collection would take some user past the population's budget.

    Simulated devices send nothing then. Reports received from real devices
    (:func:`~skldp.population.received_graph`) were sent: they are charged, and
    no graph is built from them.

    Attributes
    ----------
    population : Population or None
        The population charged, when received reports were refused (raise its
        budget and call again with ``population=`` it); ``None`` otherwise.
    """

    population = None


#: How a central DP model's inference over the graph names itself as a reader of the true
#: edges (before its step kind): outside the training's guarantee, as documented (a
#: node's prediction is that node's), and not charged for a training's protection.
CENTRAL_INFERENCE = "inference of "


class Population:
    """The simulated devices of a set of users: the one place their raw data is read.

    Every report leaves through :meth:`collect`: a device answers a collection
    (a public :class:`~skldp.device.CollectionSpec`) about its own data once,
    and the ``ledger`` records the answer. The same request again gets the
    same answer, free; a request to the same user about changed data is
    refused (a second answer would tell which users changed: collect changed
    data with a new collection). A request that would take a user past
    ``budget`` raises :class:`BudgetExceededError` before any report is
    computed.

    A :class:`~skldp.GraphData` creates one population and shares it with every
    view and derived graph; you rarely build one yourself. Plain arrays and
    label keys given without a GraphData use :func:`default_population`.

    Parameters
    ----------
    budget : float or None, default=None
        Per-user cap on the total epsilon (local collections plus central
        trainings). ``None``: no cap.
    simulated : bool, default=True
        ``False`` for users whose devices are real: the server holds only the
        reports they sent (:meth:`receive`), and :meth:`collect` refuses to
        simulate new ones.

    Attributes
    ----------
    id : str
        Identifies the population (kept by pickling, so that worker processes
        of a search write to the same ledger).
    ledger : Ledger
        What its users sent.

    Notes
    -----
    A population sent to another process (a joblib/loky or Dask worker on the
    same machine) writes its answers to a journal file that every copy reads,
    so the ledger of the original knows every collection the workers made. The
    devices' secret and their memory of what they answered travel only through
    that journal's private folder, never in the pickle. Workers on other
    machines cannot reach the journal: they refuse to collect (make the
    collections before the search, or run it on one machine).
    """

    def __init__(self, budget=None, *, simulated=True):
        self.id = uuid.uuid4().hex
        self._budget_cap = _check_budget(budget)
        self.simulated = bool(simulated)
        self.ledger = Ledger()
        self.ledger._budget = self._budget_cap   # what a report says once the population is gone
        self._secret = secrets.randbits(63)
        self._answers = {}     # collection id -> _Answers: who answered, about what
        self._received = {}    # collection id -> _Kept: the reports the server kept (labels)
        self._answer_digests = {}   # collection id -> _Digests of the answers received
        # collection id -> (spec, _Digests): answers received from users that were not in
        # the directory then; charged once the user is one of this population's (_held)
        self._held = {}
        # the keys of the users of the graphs built on it (GraphData, received_graph), sorted:
        # a held answer of one of them is charged (see _join), and a new graph's ids are
        # checked against them (see _check_spellings)
        self._member_keys = np.zeros(0, np.uint64)
        self._pending = []   # graphs whose users are joined when it is first asked (_join_later)
        self._integer_texts = False   # whether one of them has an integer's text for id ("5")
        self._collected = {}   # collection id -> spec of reports received from real devices
        self._recordings = {}  # id -> _Recorder: this process's recordings (audits)
        self._foreign = {}     # id -> protects: other processes' recordings (the journal's)
        self._clear_reads = set()   # (step kind, part, graph token) already charged
        # (step kind, part, token) -> the users whose true graph or clean labels it read
        self._true_reads = {}
        self._journal_keys = {}   # digest -> users named in the journal (see _keys_record)
        self._lock = threading.RLock()
        self._journal = None   # path of the journal shared with other processes
        self._offset = 0       # bytes of the journal already read
        self._reachable = True
        self._fh = None        # the journal, open while this thread holds it
        self.ledger._device_side = weakref.ref(self)
        _LIVE.add(self)

    # ---------------------------------------------------------------- budget
    @property
    def budget(self):
        """The per-user cap on the total epsilon (``None``: no cap), as last set by this
        population or a copy of it (:meth:`set_budget`); the last one known when the
        journal is gone (the original ended)."""
        if self._journal is not None and os.path.exists(self._journal):
            self._sync()
        return self._budget_cap

    def set_budget(self, budget):
        """Cap each user's total epsilon (``None`` removes the cap); returns ``self``.

        Copies of the population in worker processes see the new cap.
        """
        budget = _check_budget(budget)
        with self._exclusive():
            self._sync_locked()
            spent = self.ledger.total_epsilon
            if budget is not None and spent > budget + _TOL:
                raise ValueError(f"budget={budget:.4g} is below what a user has already spent "
                                 f"(epsilon={significant(spent)}): a cap cannot undo reports "
                                 "that were sent.")
            self._budget_cap = self.ledger._budget = budget
            self._write({"budget": budget})
        return self

    def remaining(self, node_keys):
        """Budget left to each of the users ``node_keys`` (``inf`` without a cap)."""
        spent = self.ledger.spent(node_keys) + self.ledger.central_epsilon
        cap = self.budget
        if cap is None:   # no cap: nothing runs out, even after a read in the clear (inf)
            return np.full(np.shape(spent), np.inf)
        left = cap - spent
        # (the ledger admits sums of floats up to the cap + _TOL: 0.1 + 0.1 + 0.1 under a
        # cap of 0.3 leaves -5.6e-17, which is nothing left, not a debt)
        return np.where((left < 0) & (left >= -_TOL), 0.0, left)

    def _check_budget(self, spec, keys, n_answers=1):
        if self._budget_cap is None:
            return
        before = self.ledger.spent(keys) + self.ledger.central_epsilon
        after = before + spec.epsilon * n_answers
        over = after > self._budget_cap + _TOL
        if np.any(over):
            worst = float(after.max())
            if spec.model == "clear":   # no budget admits a read in the clear
                part = spec.protects[0]
                mechanism = {"features": "MultiBitMechanism", "labels":
                             "LabelRandomizedResponse", "edges": "EdgeRR"}.get(part, "")
                raise BudgetExceededError(
                    f"{spec.kind.rsplit('.', 1)[-1]} would read the {part} of "
                    f"{int(over.sum())} user(s) in the clear (epsilon=inf), which no budget "
                    f"admits (this population's is {self._budget_cap:.4g} per user). Nothing was "
                    f"read. Put a mechanism before it (e.g. {mechanism}), so that it reads "
                    "the users' reports.")
            raise BudgetExceededError(
                f"{spec.describe()} would take {int(over.sum())} user(s) to epsilon="
                f"{significant(worst)}, above this population's budget of "
                f"{self._budget_cap:.4g} per user "
                f"(they have spent up to {significant(before.max())}). Nothing was sent. Lower "
                "eps, fix the mechanisms' parameters (an integer random_state) so that a "
                "search reuses one collection, or raise the budget.")

    def nonce(self, seed):
        """A public nonce for the collection whose seed is ``seed``: a keyed hash with the
        devices' secret, so that it reveals nothing about the seed."""
        if self._secret is None:
            raise _unreachable(self)
        return hashlib.blake2b(int(seed).to_bytes(8, "little"), digest_size=8,
                               key=int(self._secret).to_bytes(8, "little"),
                               person=b"skldp-nonce").hexdigest()

    # ---------------------------------------------------------------- answers
    def collect(self, spec, node_keys, digests, encode, *, keep=False, unique=False):
        """Every listed device answers ``spec`` about the input whose digest is given.

        Parameters
        ----------
        spec : CollectionSpec
        node_keys : ndarray of uint64
            The users.
        digests : ndarray of uint64
            A digest of each user's input (``skldp.population._digest``).
        encode : callable
            ``encode(report_keys) -> reports``: the mechanism's device program
            on those users' inputs, drawing every random number from the given
            per-user keys (they mix the user and its input).
        keep : bool, default=False
            Keep the reports the server received (labels: small, and read by
            post-processing such as Correct and Smooth).
        unique : bool, default=False
            ``node_keys`` are known to hold each user once (a whole graph):
            spares a sort of the answers.

        Returns
        -------
        reports
            Whatever ``encode`` returns.
        """
        node_keys, rkeys, tags = self._request(spec, node_keys, digests)
        with self._changed_answers_read(spec, node_keys), self._exclusive():
            self._sync_locked()
            new_keys, new_tags, charge_reads = self._admit_answers(spec, node_keys, tags,
                                                                   unique)
            if len(new_keys):
                self._record(spec, new_keys, new_tags)
                self._write({"local": spec.to_dict(), "keys": _b64(new_keys),
                             "tags": _b64(new_tags)})
                charge_reads()
            foreign = sorted(rid for rid, protects in self._foreign.items()
                             if _records(protects, spec))
        reports = encode(rkeys)
        if keep:
            self._received.setdefault(spec.id, _Kept()).add(node_keys, reports)
        for recorder in list(self._recordings.values()):
            recorder.append((spec, node_keys, reports))
        if foreign:   # another process records what the server receives: send it there
            with self._exclusive():
                self._sync_locked()   # (the write moves the offset past what others wrote)
                self._write({"recorded": foreign, "spec": spec.to_dict(),
                             "keys": _b64(node_keys), "reports": _pickled(reports)})
        return reports

    def _has_sent(self):
        """Whether any user has sent something (the ledger holds an entry, read from the
        journal); ``None`` where this copy cannot read the journal any more (the original
        ended, or another machine): what was sent since it last read it is unknown. Never
        raises."""
        if self._journal is not None and not (self._reachable and
                                              os.path.exists(self._journal)):
            return None
        try:
            return len(self.ledger) > 0
        except RuntimeError:   # the journal was removed meanwhile (the original ended)
            return None

    def check_collect(self, spec, node_keys, digests, *, unique=False):
        """Raise what :meth:`collect` would raise before any device answers (real devices,
        an unreachable copy, a changed answer, a read it would make count, the budget);
        nothing is sent or recorded. A step that must do something between its checks and
        its collection (note the server's reads of the graph, which may be refused) calls
        it first, so that a refused collection leaves nothing behind."""
        node_keys, _, tags = self._request(spec, node_keys, digests)
        with self._changed_answers_read(spec, node_keys), self._exclusive():
            self._sync_locked()
            self._admit_answers(spec, node_keys, tags, unique)

    @contextlib.contextmanager
    def _changed_answers_read(self, spec, node_keys):
        """Charge a request of ``spec`` refused because some of ``node_keys`` answered it
        about other data, or come twice in it with two inputs (:meth:`_new_answers`), as a
        read of the data it collects (:meth:`note_refusal`), once the journal is released:
        refused or answered tells which users' data changed. Under a budget that refuses
        the read, a :class:`BudgetExceededError` without the count of those users."""
        try:
            yield
        except _ChangedAnswer as exc:
            error = exc
        else:
            return
        keys = distinct(node_keys)
        token = f"{spec.id}:{content_hash(keys)}"
        try:
            for part in spec.protects:
                self.note_refusal(f"{spec.kind} (its refusal of changed data)", part, keys,
                                  token)
        except PrivacyBudgetError:
            raise BudgetExceededError(
                f"{spec.describe()} is refused for these users' data (some answered it about "
                "other data, or come twice in this call with two inputs): refused or "
                "answered tells the server which data changed, a read of them in the clear "
                f"(epsilon=inf) that no budget admits (this population's is "
                f"{self._budget_cap:.4g} per user). Nothing was read or sent. Collect "
                "changed data with a new collection (fit the mechanism again with another "
                "random_state).") from None
        raise error

    def changed_answers(self, spec, node_keys, digests):
        """How many listed users answered ``spec`` about another input than the one whose
        digest ``digests()`` gives (read-only: nothing is sent, recorded or charged; the
        digests are computed only where this copy can tell).

        Returns
        -------
        int or None
            ``None`` where this copy cannot tell: it cannot reach the devices' secret
            (a copy cut off from them), or a listed user's answer is not in its memory.
        """
        if self._secret is None or not self._reachable or not self.simulated:
            return None
        node_keys, _, tags = self._request(spec, node_keys, digests())
        try:
            with self._exclusive():
                self._sync_locked()   # (answers given in worker processes)
                memory = self._answers.get(spec.id)
                K, T = (None, None) if memory is None else memory.merged()
        except RuntimeError:   # the original ended meanwhile and removed the journal
            return None
        if K is None:
            return None
        pos, known = sorted_lookup(K, node_keys)
        if not known.all():
            return None
        return int(np.count_nonzero(T[pos] != tags))

    def _request(self, spec, node_keys, digests):
        """``(node_keys, report keys, answer tags)`` of a request of :meth:`collect`."""
        if not self.simulated:
            raise ValueError(
                f"{spec.describe()} asks these users' devices for new reports, but their "
                "devices are real: the server holds only the reports they sent (collections "
                f"{sorted(self._collected)}). A mechanism step can read a collection it "
                "received (give it that collection's parameters, e.g. "
                "skldp.population.mechanism_from_spec(spec)); to ask the devices again, "
                "publish a new spec.")
        if self._secret is None:   # a copy that cannot reach the devices' secret
            raise _unreachable(self)
        node_keys = check_node_keys(node_keys, "node_keys")
        rkeys = report_keys(node_keys, digests)
        return node_keys, rkeys, answer_tags(self._secret, spec.id, rkeys)

    def _admit_answers(self, spec, node_keys, tags, unique):
        """The new answers of a request (:meth:`_new_answers`) once the reads they make count
        and the budget admit them (journal held), and the callable that charges those reads
        once they are recorded."""
        new_keys, new_tags = self._new_answers(spec, node_keys, tags, unique)
        charge_reads = None
        if len(new_keys):
            charge_reads = self._charge_true_reads(spec, new_keys)
            self._check_budget(spec, new_keys)
        return new_keys, new_tags, charge_reads

    def receive(self, spec, node_keys, reports=None, charge_only=False, check_budget=True):
        """Record the reports real devices sent for ``spec``: charged, not computed.

        Each user answers once (the caller keeps a user's first report); users
        who already answered ``spec`` are not charged again. The budget is
        checked before anything is recorded.

        Parameters
        ----------
        spec : CollectionSpec
        node_keys : ndarray of uint64
            The users who sent a report.
        reports : array-like or None, default=None
            Reports the server keeps for post-processing (labels: the received
            label positions, read back with :meth:`received`).
        charge_only : bool, default=False
            Charge ``spec`` without listing it among the collections received
            (:meth:`collected`): further answers to a collection, whose reports
            are not used.
        check_budget : bool, default=True
            Refuse reports that take a user above the budget, recording nothing.
            ``False`` records them all the same: reports that were sent, which
            the ledger must count whether or not they are used.

        Returns
        -------
        new_keys : ndarray of uint64
            The users charged now (those who had not answered ``spec`` before).
        """
        if self._secret is None:
            raise _unreachable(self)
        node_keys = check_node_keys(node_keys, "node_keys")
        tags = answer_tags(self._secret, spec.id, node_keys)   # one answer per user
        with self._exclusive():
            self._sync_locked()
            new_keys, new_tags = self._new_answers(spec, node_keys, tags, unique=False)
            if len(new_keys):
                charge_reads = self._charge_true_reads(spec, new_keys, check_budget)
                if check_budget:
                    self._check_budget(spec, new_keys)
                self._record(spec, new_keys, new_tags)
                self._write({"local": spec.to_dict(), "keys": _b64(new_keys),
                             "tags": _b64(new_tags), "received": not charge_only})
                charge_reads()
            if not charge_only:
                self._collected[spec.id] = spec
                self.ledger._received_ids.add(spec.id)
        if reports is not None:
            # the latest batch's: the graph built from it holds these (an earlier answer
            # that a later batch replaced was charged all the same)
            self._received.setdefault(spec.id, _Kept()).add(node_keys, reports)
        return new_keys

    def _unseen_answers(self, spec_id, node_keys, digests):
        """Which answers are new to the server: ``(node_keys[i], digests[i])`` is one answer
        of a user (its 64-bit digest, ``skldp.population._ingest``). Nothing is kept:
        :meth:`_remember_answers` does, once they are charged.

        Returns
        -------
        unseen : ndarray of bool
        """
        self._sync()   # what copies of this population received
        with self._lock:
            seen = self._answer_digests.get(spec_id)
            if seen is None:
                return np.ones(len(node_keys), dtype=bool)
            return ~seen.contains(node_keys, digests)

    def _with_answers(self, node_keys, digests, keep):
        """``keep(keys, digests)`` with the journal held and read up to date (nothing to do
        for no answer)."""
        node_keys = np.asarray(node_keys, np.uint64)
        digests = np.asarray(digests, np.uint64)
        if len(node_keys):
            with self._exclusive():
                self._sync_locked()
                keep(node_keys, digests)

    def _remember_answers(self, spec_id, node_keys, digests):
        """Keep the digests of the answers received (charged) for a later batch to compare."""
        def keep(node_keys, digests):
            self._add_digests(spec_id, node_keys, digests)
            self._write({"digests": spec_id, "keys": _b64(node_keys), "d": _b64(digests)})
        self._with_answers(node_keys, digests, keep)

    def _hold_answers(self, spec, node_keys, digests, also=None):
        """Keep answers of users that were not in the directory when they arrived (refused
        as unknown users): they were sent, and are charged if the user joins
        (:meth:`_charge_held`). ``also``, ``(rows, keys)``: the other user each of those
        answers may be of (the int 5 of a text "5"), charged only if its own user is not."""
        if also is not None and len(also[0]):
            rows = np.asarray(also[0], np.intp)
            node_keys = np.concatenate([np.asarray(node_keys, np.uint64),
                                        np.asarray(also[1], np.uint64)])
            digests = np.asarray(digests, np.uint64)
            digests = np.concatenate([digests, _other_digest(node_keys[rows], digests[rows])])

        def keep(node_keys, digests):
            if spec.id in self._held:   # a replay: only what is new goes to the journal
                fresh = ~self._held[spec.id][1].contains(node_keys, digests)
                node_keys, digests = node_keys[fresh], digests[fresh]
                if not len(node_keys):
                    return
            self._add_held(spec, node_keys, digests)
            self._write({"held": spec.to_dict(), "keys": _b64(node_keys), "d": _b64(digests)})
        self._with_answers(node_keys, digests, keep)

    def _join(self, node_keys, ids=None):
        """Remember ``node_keys`` as users of this population (the nodes of a graph built on
        it; ``ids``, their ids: ``None``, not known), whatever they spent: the answers it
        holds for them (:meth:`_hold_answers`) are charged by :meth:`_charge_held`, and a
        later graph's ids are checked against them (:meth:`_check_spellings`). Returns the
        keys it did not know."""
        node_keys = np.sort(np.asarray(node_keys, np.uint64))   # (sorted: looked up at once)
        texts = not self._integer_texts and (ids is None or has_integer_text(ids))
        if not texts and sorted_lookup(self._members, node_keys)[1].all():
            return node_keys[:0]   # (a graph of known users)
        if self._journal is not None and not self._reachable:
            # a saved copy cut off from its journal collects nothing: members in memory
            self._integer_texts |= texts
            return self._add_members(node_keys)
        with self._exclusive():
            self._sync_locked()
            new = self._add_members(node_keys)
            self._integer_texts |= texts
            if (len(new) or texts) and self._journal is not None:
                self._write({"members": _b64(new), "integer_texts": self._integer_texts})
        return new

    def _join_later(self, keys_and_ids):
        """:meth:`_join` the users of a graph once this population is first asked whom it
        knows: ``keys_and_ids()`` gives their keys and ids. For a new population's first
        graph, so that a graph no other graph joins never sorts its users' keys for it
        (about 1 s at 10M users)."""
        self._pending.append(keys_and_ids)

    @property
    def _members(self):
        """The sorted keys of the users of the graphs built on it (:meth:`_join`)."""
        while self._pending:
            keys, ids = self._pending.pop()()
            self._integer_texts |= ids is None or has_integer_text(ids)
            self._add_members(np.asarray(keys, np.uint64))
        return self._member_keys

    @_members.setter
    def _members(self, keys):
        self._member_keys = keys

    def _known(self, node_keys=None):
        """Which of ``node_keys`` are users of this population: users of a graph built on it
        (:meth:`_join`), or users charged before (``None``: whether it has any)."""
        self._sync()
        if node_keys is None:
            return bool(len(self._members)) or self.ledger.local_epsilon > 0
        node_keys = np.asarray(node_keys, np.uint64)
        return sorted_lookup(self._members, node_keys)[1] | (self.ledger.spent(node_keys) > 0)

    def _check_spellings(self, ids, node_keys, apart=()):
        """Refuse new users ``ids`` (keys ``node_keys``) of which one is unknown to this
        population while it knows the same id in the other type (the int 5 and the text
        "5" a CSV reads back): one person may be both, and each key would be charged
        apart. Names the user it knows, or a user of its own, only where the new ids list
        both spellings or ``apart`` (keys a directory lists beside their other spelling)
        has it: then they are two users. Checked before anything is sent or charged."""
        if not self._known():   # (it knows no one yet)
            return
        order = np.argsort(node_keys)   # (looked up in sorted order: in two sorted arrays)
        new = order[~self._known(node_keys[order])]
        if not len(new) or (ids.dtype.kind in "iu" and not self._may_know_integer_texts()):
            return   # (no new user; or integers, and no user it knows is an integer's text)
        at, other = other_spellings(ids[new])
        clash = self._known(other) & ~member(other, node_keys)
        if len(apart):
            clash &= ~member(other, np.fromiter(apart, np.uint64, len(apart)))
        if not clash.any():
            return
        user = ids[new[at[clash]].min()]   # (the first in the graph's order)
        user = user.item() if isinstance(user, np.generic) else user
        raise ValueError(
            f"{int(clash.sum())} of these ids are new to the population while it knows "
            f"the same id in the other type, e.g. {user!r} (it knows {_retyped(user)!r}): "
            "one person may be both, and would be charged as two users. Give the ids in "
            "the type the population knows them by (ids read back from a file as text: "
            "convert them to int, or the reverse). Nothing was charged.")

    def _may_know_integer_texts(self):
        """Whether a user it knows may have an integer's text for id ("5"): a user of its
        graphs (:meth:`_join`), or one charged outside them (whose id it was not given)."""
        if self._integer_texts:
            return True
        return not sorted_lookup(self._members, self.ledger.per_user()[0])[1].all()

    def _add_members(self, node_keys):
        """Add ``node_keys`` to the sorted ``_members``; returns those that were not there."""
        new = np.sort(node_keys[~sorted_lookup(self._members, node_keys)[1]] if
                      len(self._members) else node_keys)
        if len(new) > 1 and (new[1:] == new[:-1]).any():
            new = new[np.r_[True, new[1:] != new[:-1]]]
        # (sorted, and none in _members: inserted in one pass, without a sort of them all)
        self._members = np.insert(self._members, np.searchsorted(self._members, new), new) \
            if len(self._members) else new
        return new

    def _admit(self, node_keys, ids=None):
        """The users ``node_keys`` are the nodes of a graph built on this population (a
        :class:`~skldp.GraphData`): :meth:`_join`, and charge the answers held for them
        (they were sent), with a warning if that takes some above the budget."""
        new = self._join(node_keys, ids)   # (GraphData calls it for real devices only)
        if not len(new) or not any(member(d.merged()["key"], new).any()
                                   for _, d in self._held.values()):
            return   # (a saved copy with nothing held for them need not reach its ledger)
        charged = self._charge_held()
        cap = self.budget
        if cap is None or not charged:
            return
        keys = np.concatenate([k for _, k, _ in charged])
        over = self.ledger.spent(keys) + self.ledger.central_epsilon > cap + _TOL
        if over.any():
            warnings.warn(
                f"{len(distinct(keys[over]))} user(s) of this graph had sent answers while not "
                "in the directory (read_reports' users=), charged now that they are users "
                f"of this population, which took them above its budget of {cap:.4g} per "
                "user.", UserWarning, stacklevel=4)

    def _charge_held(self):
        """Charge the answers held for users that are now this population's (:meth:`_join`,
        or charged before: a user since removed from the directory) and not charged yet,
        above the budget too (they were sent): a user's first answer to a collection it had
        not answered as the answer a read with it in ``users=`` would have kept, the others
        as further answers; resends are free.

        Returns
        -------
        charged : list of (CollectionSpec, ndarray of uint64, ndarray of int)
            Per collection, the users charged now and how many answers each.
        """
        out = []
        with self._exclusive():
            self._sync_locked()
            for spec, d in list(self._held.values()):
                pairs = d.merged()
                hkeys, hd = pairs["key"], pairs["digest"]
                if not len(hkeys):
                    continue
                seen = self._answer_digests.get(spec.id)
                new = self._known(hkeys)
                if seen is not None:
                    new &= ~seen.contains(hkeys, hd)
                # an answer held for two users (its text "5" and the int 5): charged once,
                # to its own user first; either charge remembers its own user's pair
                link = _other_digest(hkeys, hd)
                own, alt = sorted_lookup(link, hd, sorter=np.argsort(link))
                own = own[alt]
                new[alt] &= ~new[own]
                if seen is not None:
                    new[alt] &= ~seen.contains(hkeys[own], hd[own])
                if not new.any():
                    continue
                ukeys, counts = np.unique(hkeys[new], return_counts=True)
                first = self.receive(spec, ukeys, charge_only=True, check_budget=False)
                further = counts - member(ukeys, first)
                for c in distinct(further[further > 0]).tolist():
                    self.receive(further_answers_spec(spec, c), ukeys[further == c],
                                 charge_only=True, check_budget=False)
                by = own[new[alt]]
                self._remember_answers(spec.id, np.concatenate([hkeys[new], hkeys[by]]),
                                       np.concatenate([hd[new], hd[by]]))
                out.append((spec, ukeys, counts))
        return out

    def _add_held(self, spec, node_keys, digests):
        if spec.id not in self._held:
            self._held[spec.id] = (spec, _Digests())
        self._held[spec.id][1].add(node_keys, digests)

    def _add_digests(self, spec_id, node_keys, digests):
        seen = self._answer_digests.get(spec_id)
        if seen is None:
            seen = self._answer_digests[spec_id] = _Digests()
        seen.add(node_keys, digests)

    def collected(self, like=None):
        """Specs of the collections received from real devices (:meth:`receive`).

        Parameters
        ----------
        like : CollectionSpec or None
            Only the one that is the same request (same kind, parameters and
            public state, whatever its id), or ``None`` if there is none.
        """
        specs = list(self._collected.values())
        if like is None:
            return specs
        body = like.body()
        same = [s for s in specs if s.body() == body and s.epsilon == like.epsilon]
        return same[-1] if same else None

    def note_clear_read(self, kind, part, node_keys, token=None):
        """Charge the users an infinite epsilon: a server-side step (``kind``) reads their
        ``part`` in the clear. Once per step kind and graph (``token``); with no token,
        the users not charged yet are found at each call (a view's rows)."""
        if token is not None and (kind, part, token) in self._clear_reads:
            return
        node_keys = check_node_keys(node_keys, "node_keys")
        if self._secret is None and self._charged_in_clear(part, node_keys):
            return   # a saved copy whose users were charged this read already (e.g. at fit)
        with self._exclusive():
            self._sync_locked()
            self._record_clear_read(kind, part, node_keys)
        if token is not None:
            self._clear_reads.add((kind, part, token))

    def _record_clear_read(self, kind, part, node_keys, check_budget=True):
        """:meth:`note_clear_read` with the journal held (unique ``node_keys``)."""
        spec = CollectionSpec(id="", kind=kind, protects=(part,), epsilon=float("inf"),
                              model="clear", params={"reads": part}).with_nonce("in the clear")
        tags = answer_tags(self._secret or 0, spec.id, node_keys)
        new_keys, new_tags = self._new_answers(spec, node_keys, tags, unique=True)
        if len(new_keys):
            if check_budget:
                self._check_budget(spec, new_keys)
            self._record(spec, new_keys, new_tags)
            self._write({"local": spec.to_dict(), "keys": _b64(new_keys),
                         "tags": _b64(new_tags)})

    def note_true_read(self, kind, part, node_keys, token):
        """A server step (``kind``) reads the users' true ``part`` ("edges": their true
        adjacency, graph ``token``; "labels": their clean labels) of the users ``node_keys``
        (distinct): taken as given, unless a mechanism collects these users' ``part``, or a
        central DP training protects it (:meth:`record_training`; DP-GNN: features, labels,
        edges), whose guarantee covers its own reads only.

        If one did (the ledger holds reports of it, or the training), those users are
        charged a read of
        their ``part`` in the clear now (epsilon inf; refused under a budget). Otherwise
        the read is remembered (in the journal too, for copies of the population), and a
        later collection of their ``part`` charges it (:meth:`collect`, :meth:`receive`).
        Once per step kind, part and ``token``.
        """
        key = (kind, part, token)
        if key in self._true_reads:
            return
        # a graph's keys (distinct users), kept without a copy: a sort of 10M keys is ~1 s
        node_keys = check_node_keys(node_keys, "node_keys")
        if self._secret is None or not self._reachable:
            # a copy that cannot collect: no collection can follow here
            hit = self._collected_among(part, node_keys, kind)
            if len(hit):
                self._refuse_true_read(kind, part, node_keys)
                self.note_clear_read(kind, part, hit)
            self._true_reads[key] = node_keys
            return
        with self._exclusive():
            self._sync_locked()
            if key in self._true_reads:   # a copy's, read from the journal
                return
            hit = self._collected_among(part, node_keys, kind)
            if len(hit):
                self._refuse_true_read(kind, part, node_keys)
                self._record_clear_read(kind, part, hit)
            self._true_reads[key] = node_keys
            self._write({"true_read": kind, "part": part, "token": token,
                         **self._keys_record(node_keys)})

    def note_refusal(self, kind, part, node_keys, token):
        """A step (``kind``) refuses because of the values of the users' ``part``
        ("features", "labels" or "edges"): refused or answered is a function of those
        values that leaves the devices, so the refusal is charged as that step's read of
        ``part`` in the clear would be (Design page, "Refusals are reads"): of the
        features now (:meth:`note_clear_read`, epsilon inf); of the true edges or clean
        labels once a mechanism collects them, or a central DP training protects them,
        before or after (:meth:`note_true_read`, once per ``token``). Under a budget it
        raises :class:`BudgetExceededError` when the read is due now. ``node_keys``: every
        user whose values the check read, not only those it refused (whom the ledger
        charges must not tell whose values were refused)."""
        if part == "features":
            self.note_clear_read(kind, part, node_keys)
        else:
            self.note_true_read(kind, part, node_keys, token)

    def check_true_read(self, kind, part, node_keys):
        """Raise the refusal :meth:`note_true_read` would raise now (under a budget, users
        whose ``part`` was collected); nothing is noted. For a step that spends something
        on the way to a read it will surely make."""
        node_keys = check_node_keys(node_keys, "node_keys")
        if self._secret is not None and self._reachable:
            self._sync()
        if len(self._collected_among(part, node_keys, kind)):
            self._refuse_true_read(kind, part, node_keys)

    def _keys_record(self, keys):
        """How a journal record names the users ``keys``: their keys the first time in this
        journal, then the digest of that record (the reads of one graph share its users:
        10 MB of keys per read at 1M users otherwise)."""
        return {} if self._journal is None else self._keys_record_for(keys)

    def _keys_record_for(self, keys):
        digest = hashlib.blake2b(keys.tobytes(), digest_size=16).hexdigest()
        if digest in self._journal_keys:
            return {"keys_of": digest}
        self._journal_keys[digest] = keys
        return {"keys": _b64(keys), "digest": digest}

    def _named_keys(self, rec):
        """The users a journal record names (:meth:`_keys_record`), or ``None``."""
        if "keys" not in rec and "keys_of" not in rec:
            return None
        keys = _unb64(rec["keys"]) if "keys" in rec else self._journal_keys[rec["keys_of"]]
        if "digest" in rec:
            self._journal_keys[rec["digest"]] = keys
        return keys

    def _collections_of(self, part, reader=None):
        """The collections of the users' ``part`` in the ledger (reports; reads in the
        clear excluded) and the central trainings that protect it (those that named their
        users): a list of ``(spec, users)``. The trainings are left out for a central DP
        model's inference (``reader`` starts with :data:`CENTRAL_INFERENCE`): DP-GNN's
        predictions over full neighbourhoods are outside its guarantee, as documented."""
        led = self.ledger
        inference = reader is not None and reader.startswith(CENTRAL_INFERENCE)
        with led._lock:
            return [(spec, ans.merged()[0]) for spec, ans in led._local.values()
                    if part in spec.protects and spec.model != "clear"] + \
                [(spec, led._central_keys[cid]) for cid, (spec, _, _) in led._central.items()
                 if part in spec.protects and cid in led._central_keys and not inference]

    def _collected_among(self, part, keys, reader=None):
        """Those of ``keys`` whose ``part`` a collection or a central training in the
        ledger protects (:meth:`_collections_of`)."""
        users = [k for _, k in self._collections_of(part, reader)]
        return keys[member(keys, np.concatenate(users))] if users else keys[:0]

    #: What a read of the true part is, what collects it, and what to give the step instead.
    _TRUE_PARTS = {
        "edges": ("the true graph", "an edge mechanism",
                  "Give it the collected graph (the edge mechanism's output)"),
        "labels": ("the clean labels", "a label mechanism",
                   "Fit it on the labels the users sent (the label mechanism's output, a "
                   "LabelReports: a copy, a pandas Series or a saved array loses that mark; "
                   "LabelReports(y, collection_id) marks reports again) or give it a "
                   "label_mechanism"),
    }

    def _refuse_true_read(self, kind, part, node_keys):
        """Under a budget, refuse a read of the true ``part`` of users whose ``part`` was
        collected."""
        if self._budget_cap is None:
            return
        what, mechanism, instead = self._TRUE_PARTS[part]
        hit = [spec for spec, k in self._collections_of(part, kind)
               if member(k, node_keys).any()]
        n_central = sum(s.model == "central" for s in hit)
        if n_central == 0:
            by = f"{mechanism} collected"
        elif n_central < len(hit):
            by = f"{mechanism} collected or a central DP training protects"
        else:   # no collected graph or labels to give it instead
            by = "a central DP training protects"
            instead = (f"Give {kind.rsplit('.', 1)[-1]} what {mechanism} collected from "
                       f"these users instead of {what}")
        raise BudgetExceededError(
            f"{kind.rsplit('.', 1)[-1]} would read {what} of "
            f"{len(self._collected_among(part, node_keys, kind))} user(s) whose {part} {by} "
            f"({'; '.join(s.describe() for s in hit)}): a read of their {part} in "
            "the clear (epsilon=inf), which no budget admits (this population's is "
            f"{self._budget_cap:.4g} per user). Nothing was read. {instead}, or run the "
            f"comparison on {what} on a separate simulation: G.new_simulation() of the raw "
            "graph (new simulated devices, an empty ledger).")

    def _true_reads_of(self, spec, keys):
        """The earlier reads of the users' true parts that a collection ``spec`` from the
        users ``keys`` makes count: ``[(step kind, part, users to charge)]``, empty unless
        ``spec`` collects (or, a central training, protects) a part that was read; a
        training leaves out central DP models' inference (:meth:`_collections_of`)."""
        if spec.model == "clear" or not self._true_reads:
            return []
        out = {}
        for (kind, part, _), read in self._true_reads.items():
            if part not in spec.protects or (spec.model == "central" and
                                             kind.startswith(CENTRAL_INFERENCE)):
                continue
            hit = keys[member(keys, read)]
            if len(hit):
                out[kind, part] = distinct(np.concatenate([out.get((kind, part), hit[:0]), hit]))
        return [(kind, part, hit) for (kind, part), hit in sorted(out.items())]

    def _charge_true_reads(self, spec, keys, check_budget=True):
        """Charge the earlier reads of these users' true parts (:meth:`_true_reads_of`) as
        reads of those parts in the clear; under a budget (``check_budget``) refuse the
        collection ``spec`` instead, before anything is recorded. Returns a callable
        that charges them (after the collection is recorded)."""
        reads = self._true_reads_of(spec, np.asarray(keys, np.uint64))
        if reads and check_budget and self._budget_cap is not None:
            kinds = ", ".join(sorted({k.rsplit(".", 1)[-1] for k, _, _ in reads}))
            parts = sorted({p for _, p, _ in reads})
            n = len(distinct(np.concatenate([k for _, _, k in reads])))
            what = " and ".join(self._TRUE_PARTS[p][0] for p in parts)
            parts = " and ".join(parts)
            verb, done = ("protect", "trained") if spec.model == "central" else \
                ("collect", "sent")
            whose = what.replace("the ", "")
            raise BudgetExceededError(
                f"{spec.describe()} would {verb} the {parts} of {n} user(s) whose {whose} "
                f"the server already read ({kinds}): {verb}ing their {parts} makes that read "
                f"count as a read of their {parts} in the clear (epsilon=inf), which no "
                f"budget admits (this population's is {self._budget_cap:.4g} per user). "
                f"Nothing was {done}. Run the comparison on {what} on a separate simulation: "
                "G.new_simulation() of the raw graph (new simulated devices, an empty "
                "ledger), and "
                + ("train on the other one." if spec.model == "central" else
                   f"collect the {parts} on the other one.")
                + (" To hold out edges for link prediction, split the collected graph "
                   "instead: random_edge_split(EdgeRR(...).fit_transform(G))." if
                   any(k.endswith(("random_edge_split", "sample_non_edges"))
                       for k, _, _ in reads) else ""))

        def charge():
            for kind, part, hit in reads:
                self._record_clear_read(kind, part, hit, check_budget=False)
        return charge

    def _charged_in_clear(self, part, node_keys):
        """Whether every one of ``node_keys`` already has an infinite epsilon for ``part``."""
        users, eps = self.ledger.per_user(part)
        charged = users[np.isinf(eps)]
        return bool(member(node_keys, charged).all())

    def record_training(self, spec, n_users, node_keys=None):
        """A central-DP training on the data of ``n_users`` users (checked against the budget).

        ``node_keys`` names those users (a GraphData's): the training then counts as a
        collection of the parts it protects for them, as a local collection does
        (:meth:`note_true_read`): a read of their true graph or clean labels by another
        step, before or after, is charged as a read in the clear.
        """
        if spec.id != spec.content_id():   # the caller's argument: refused free
            # (else a recorded id with other content, e.g. another epsilon, would be
            # taken for the recorded training and never counted)
            raise ValueError(
                f"record_training: the spec's id {spec.id!r} is not the digest of its "
                "content (it was changed after it was made, or built with an id of its "
                "own): build it with CollectionSpec.with_nonce, which gives the id.")
        charge_reads = None
        if node_keys is not None:
            node_keys = distinct(check_node_keys(node_keys, "node_keys"))
        with self._exclusive():
            self._sync_locked()
            if node_keys is not None:
                charge_reads = self._charge_true_reads(spec, node_keys)
            # a training recorded already (the same spec: its id is a digest of its content,
            # checked above) is counted once by the ledger: recording it again adds nothing
            if self._budget_cap is not None and spec.id not in self.ledger._central:
                total = self.ledger.total_epsilon + spec.epsilon
                if total > self._budget_cap + _TOL:
                    raise BudgetExceededError(
                        f"{spec.describe()} would take the users to epsilon={significant(total)}, "
                        f"above this population's budget of {self._budget_cap:.4g} per user. "
                        "Nothing was trained.")
            self.ledger._add_central(spec, n_users, node_keys)
            self._write({"central": spec.to_dict(), "n_users": int(n_users),
                         **({} if node_keys is None else self._keys_record(node_keys))})
            if charge_reads is not None:
                charge_reads()

    def received(self, spec_id, node_keys):
        """The reports the server kept for ``spec_id`` (``keep=True``) from the users
        ``node_keys``: ``(reports, found)``, ``found`` false (and the report meaningless)
        for a user who did not answer it."""
        node_keys = check_node_keys(node_keys, "node_keys")
        with self._lock:
            kept = self._received.get(spec_id)
            if kept is None:
                return np.zeros(len(node_keys), np.int64), np.zeros(len(node_keys), bool)
            keys, reports = kept.merged()
        pos, found = sorted_lookup(keys, node_keys)
        return reports[pos] if len(keys) else np.zeros(len(node_keys), np.int64), found

    def sent(self, spec_id, node_keys, reports):
        """Whether each user ``node_keys[i]`` sent the report ``reports[i]`` that the server
        kept for ``spec_id``: its latest (:meth:`received`) or one that it replaced (an
        earlier batch's)."""
        latest, found = self.received(spec_id, node_keys)
        reports = np.asarray(reports, np.int64)
        out = found & (latest == reports)
        with self._lock:
            kept = self._received.get(spec_id)
            if kept is not None and not out.all():
                out |= kept.replaced.contains(check_node_keys(node_keys, "node_keys"),
                                              reports)
        return out

    @contextlib.contextmanager
    def recording(self, protects=None):
        """Collect every report sent while the block runs (for audits): yields a list of
        ``(spec, node_keys, reports)``.

        Reports sent by copies of the population in worker processes (a search or
        an ensemble with ``n_jobs``) reach the list through the journal when the
        block ends. ``protects`` (e.g. ``("labels",)``) keeps the reports of those
        collections only.
        """
        rec, rid = [], uuid.uuid4().hex
        protects = None if protects is None else sorted(protects)
        with self._lock:
            self._recordings[rid] = _Recorder(rec, protects)
            if self._journal is not None and self._reachable:   # (a copy that cannot
                with self._exclusive():                          # collect records here)
                    self._sync_locked()
                    self._write({"recording": rid, "on": True, "protects": protects})
        try:
            yield rec
        finally:
            with self._lock:
                if self._journal is not None and self._reachable:
                    with self._exclusive():
                        self._sync_locked()   # what the workers sent, into rec
                        self._write({"recording": rid, "on": False})
                del self._recordings[rid]

    def _new_answers(self, spec, keys, tags, unique):
        """The users of a request who have not answered ``spec`` yet (and their tags).

        A user who answered before, or twice in this request, about another
        input is refused: one collection, one answer per user.
        """
        changed = 0
        if not unique and len(keys) > 1:
            order = np.argsort(keys, kind="stable")
            k, t = keys[order], tags[order]
            again = np.r_[False, k[1:] == k[:-1]]
            twice = len(np.unique(k[1:][again[1:] & (t[1:] != t[:-1])]))
            if twice:   # not an answer again: two answers in one request
                raise _ChangedAnswer(
                    f"{spec.describe()}: {twice} user(s) appear twice in this call with "
                    "different data (e.g. a node listed twice with two different labels). A "
                    "user answers a collection once, about one input: give a repeated user "
                    "the same data, or list it once. Nothing was sent.")
            keys, tags = k[~again], t[~again]
        memory = self._answers.get(spec.id)
        if memory is not None:
            K, T = memory.merged()
            pos, known = sorted_lookup(K, keys)
            changed += int(np.count_nonzero(T[pos[known]] != tags[known]))
            keys, tags = keys[~known], tags[~known]
        if changed:
            raise _ChangedAnswer(
                f"{spec.describe()}: {changed} user(s) would answer this collection again "
                "about other data (a changed feature row, label or adjacency list). A device "
                "answers a collection once: a second answer would tell which users changed. "
                "Collect changed data with a new collection: fit the mechanism again with "
                "random_state=None or another integer (every user is then charged again). "
                "Nothing was sent.")
        return keys, tags

    def _record(self, spec, keys, tags):
        memory = self._answers.get(spec.id)
        if memory is None:
            memory = self._answers[spec.id] = _Answers(spec)
        memory.add(keys, tags)
        self.ledger._add(spec, keys)

    # ---------------------------------------------------------------- journal
    @contextlib.contextmanager
    def _exclusive(self):
        with self._lock:
            if self._journal is None or self._fh is not None:   # no journal, or already held
                yield
                return
            if not self._reachable:
                raise _unreachable(self)
            try:
                fh = open(self._journal, "a+b")
            except FileNotFoundError:   # the original ended and removed the journal's folder
                raise _unreachable(self) from None
            with fh:
                if fcntl is not None:
                    fcntl.flock(fh, fcntl.LOCK_EX)
                try:
                    self._fh = fh
                    yield
                finally:
                    self._fh = None
                    if fcntl is not None:
                        fcntl.flock(fh, fcntl.LOCK_UN)

    def _write(self, record):
        if self._journal is None:
            return
        self._fh.seek(0, os.SEEK_END)
        self._fh.write((json.dumps(record) + "\n").encode())
        self._fh.flush()
        self._offset = self.ledger._offset = self._fh.tell()

    def _sync(self):
        """Read what other processes wrote to the journal since the last read."""
        if self._journal is None or not self._reachable:
            return
        with self._exclusive():
            self._sync_locked()

    def _sync_locked(self):
        if self._journal is None:
            return
        self._fh.seek(self._offset)
        data = self._fh.read()
        end = data.rfind(b"\n") + 1
        for line in data[:end].splitlines():
            self._apply(json.loads(line))
        # the ledger has read what the population has (it reads on if the population ends)
        self._offset = self.ledger._offset = self._offset + end

    def _apply(self, rec):
        """Apply one journal record: an answer batch, a central training, a budget, or a
        recording that starts or ends and the reports sent to it."""
        if "recording" in rec:
            if rec["on"] and rec["recording"] not in self._recordings:
                self._foreign[rec["recording"]] = rec.get("protects")
            else:
                self._foreign.pop(rec["recording"], None)
            return
        if "recorded" in rec:
            mine = [self._recordings[r] for r in rec["recorded"] if r in self._recordings]
            if mine:
                spec = CollectionSpec.from_dict(rec["spec"], check_kind=False)
                item = (spec, _unb64(rec["keys"]), _unpickled(rec["reports"]))
                for recorder in mine:
                    recorder.append(item)
            return
        if "budget" in rec:
            self._budget_cap = self.ledger._budget = rec["budget"]
            return
        if "digests" in rec:   # answers a copy received (resends are free in every copy)
            self._add_digests(rec["digests"], _unb64(rec["keys"]), _unb64(rec["d"]))
            return
        if "members" in rec:   # users of a graph a copy built (_join)
            self._add_members(_unb64(rec["members"]))
            self._integer_texts |= rec.get("integer_texts", True)   # (older: not told)
            return
        if "held" in rec:   # answers of users not in the directory then (_hold_answers)
            self._add_held(CollectionSpec.from_dict(rec["held"], check_kind=False),
                           _unb64(rec["keys"]), _unb64(rec["d"]))
            return
        if "true_read" in rec:   # a copy's read of a true part (see note_true_read)
            self._true_reads.setdefault((rec["true_read"], rec.get("part", "edges"),
                                         rec["token"]), self._named_keys(rec))
            return
        if "central" in rec:
            self.ledger._add_central(CollectionSpec.from_dict(rec["central"], check_kind=False),
                                     rec["n_users"], self._named_keys(rec))
            return
        spec = CollectionSpec.from_dict(rec["local"], check_kind=False)
        keys, tags = _unb64(rec["keys"]), _unb64(rec["tags"])
        if rec.get("received"):
            self._collected[spec.id] = spec
            self.ledger._received_ids.add(spec.id)
        memory = self._answers.get(spec.id)
        if memory is not None:      # written by this process too: apply what is new
            fresh = ~sorted_lookup(memory.merged()[0], keys)[1]
            keys, tags = keys[fresh], tags[fresh]
        if len(keys):
            self._record(spec, keys, tags)

    def _open_journal(self):
        """Start sharing with other processes: a private folder holding the devices' secret
        and a journal that begins with everything answered so far."""
        folder = tempfile.mkdtemp(prefix="skldp-ledger-")       # mode 0700
        secret = os.path.join(folder, "secret")
        fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(str(self._secret))
        path = os.path.join(folder, "journal.jsonl")
        with open(path, "wb") as fh:
            for memory in self._answers.values():
                keys, tags = memory.merged()
                fh.write((json.dumps({"local": memory.spec.to_dict(), "keys": _b64(keys),
                                      "tags": _b64(tags),
                                      "received": memory.spec.id in self._collected})
                          + "\n").encode())
            self._journal_keys = {}   # a new journal: each set of users written once again
            for cid, (spec, n_users, _) in self.ledger._central.items():
                keys = self.ledger._central_keys.get(cid)
                ref = {} if keys is None else self._keys_record_for(keys)
                fh.write((json.dumps({"central": spec.to_dict(), "n_users": n_users, **ref})
                          + "\n").encode())
            for cid, d in self._answer_digests.items():
                pairs = d.merged()
                fh.write((json.dumps({"digests": cid, "keys": _b64(pairs["key"].copy()),
                                      "d": _b64(pairs["digest"].copy())}) + "\n").encode())
            for spec, d in self._held.values():
                pairs = d.merged()
                fh.write((json.dumps({"held": spec.to_dict(), "keys": _b64(pairs["key"].copy()),
                                      "d": _b64(pairs["digest"].copy())}) + "\n").encode())
            if len(self._members) or self._integer_texts:
                fh.write((json.dumps({"members": _b64(self._members.copy()),
                                      "integer_texts": self._integer_texts}) + "\n").encode())
            fh.write((json.dumps({"budget": self._budget_cap}) + "\n").encode())
            for (kind, part, token), keys in self._true_reads.items():
                ref = self._keys_record_for(keys)
                fh.write((json.dumps({"true_read": kind, "part": part, "token": token, **ref})
                          + "\n").encode())
            for rid, recorder in self._recordings.items():
                fh.write((json.dumps({"recording": rid, "on": True,
                                      "protects": recorder.protects})
                          + "\n").encode())
            self._offset = self.ledger._offset = fh.tell()
        self._journal = path
        self.ledger._journal = path
        self._folder = _FOLDERS[folder] = _JournalFolder(folder)
        self._folder.ledgers.add(self.ledger)

    # ---------------------------------------------------------------- pickling
    def __getstate__(self):
        # The devices' secret and memory stay out of the pickle: a copy reads them from the
        # journal's private folder, or cannot collect at all.
        with self._lock:
            if self._journal is None:
                self._open_journal()
            return {"id": self.id, "_budget_cap": self._budget_cap, "simulated": self.simulated,
                    "ledger": self.ledger, "_journal": self._journal,
                    "_collected": dict(self._collected),
                    "_received": {cid: k.state() for cid, k in self._received.items()},
                    "_answer_digests": {cid: d.merged() for cid, d in
                                        self._answer_digests.items()},
                    "_held": {cid: (spec, d.merged()) for cid, (spec, d) in
                              self._held.items()}, "_members": self._members,
                    "_integer_texts": self._integer_texts}

    def __setstate__(self, state):
        state = dict(state)
        if "budget" in state:   # pickled before the cap became a property
            state["_budget_cap"] = state.pop("budget")
        state["_answer_digests"] = {cid: _Digests.from_state(d) for cid, d in
                                    state.get("_answer_digests", {}).items()}
        state["_held"] = {cid: (spec, _Digests.from_state(d)) for cid, (spec, d) in
                          state.get("_held", {}).items()}
        # (pickled before it existed: none)
        state["_member_keys"] = state.pop("_members", np.zeros(0, np.uint64))
        state["_pending"] = []
        state.setdefault("_integer_texts", True)   # (not told: maybe)
        state["_received"] = {cid: _Kept.from_state(k) for cid, k in
                              state.get("_received", {}).items()}
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self._answers, self._fh, self._offset = {}, None, 0
        self._recordings, self._foreign = {}, {}
        self._clear_reads = set()
        self._true_reads = {}   # read from the journal (a copy cut off from it collects nothing)
        self._journal_keys = {}
        secret = None if self._journal is None else \
            os.path.join(os.path.dirname(self._journal), "secret")
        self._reachable = secret is not None and os.path.exists(secret)
        self._secret = None
        # a copy in the original's process keeps the folder while it lives
        self._folder = None if secret is None else _FOLDERS.get(os.path.dirname(secret))
        if self._reachable:
            with open(secret) as fh:
                self._secret = int(fh.read())
            self.ledger = Ledger()                 # rebuilt from the journal, from its start
            self.ledger._journal = self._journal
            if self._folder is not None:   # read on before this process removes the journal
                self._folder.ledgers.add(self.ledger)
        self.ledger._device_side = weakref.ref(self)
        self.ledger._budget = self._budget_cap
        _LIVE.add(self)   # (a forked child renews its locks)
        if self._reachable:
            self._sync()

    def __repr__(self):
        cap = self._budget_cap
        cap = "no budget cap" if cap is None else f"budget {cap:g} per user"
        real = "" if self.simulated else ", real devices"
        return f"<Population {self.id[:8]}: {len(self.ledger)} collection(s), {cap}{real}>"




def further_answers_spec(spec, c):
    """The charge of ``c`` further answers of a user to ``spec``: one collection of ``c``
    times its epsilon, with a spec of its own (a random nonce), so that no earlier charge,
    here or in a copy of the population, is taken for this one."""
    again = dataclasses.replace(spec, epsilon=c * spec.epsilon,
                                further_answers={"collection": spec.id, "count": c})
    return again.with_nonce(f"{spec.nonce} ({c} further answer{'s' * (c > 1)}, "
                            f"{secrets.token_hex(8)})")


def _unreachable(population):
    if not population.simulated:
        return RuntimeError(
            "These are reports that real devices sent to another process (one that has "
            "ended, or another machine): its ledger is not saved, so what this copy receives "
            "would not be counted with it. Keep the records you receive (write_reports) and "
            "read them all again, the earlier batches with the new one, into one "
            "received_graph: the answer ids make every resend free, so the ledger is rebuilt "
            "as it was.")
    return RuntimeError(
        "This copy of the users' data was sent to a process that cannot reach the ledger "
        "of the original (another machine, or the original has ended), so what it collects "
        "would not be counted. A pipeline loaded from a file whose mechanisms kept their "
        "secret (seed_) asks the devices again: in the process that fitted it, call "
        "skldp.privacy.forget_secrets(pipe, G) before saving it, so that it serves the "
        "users' reports without a ledger, and save G with it. Workers of a search: make "
        "the collections before sending the data (fit the mechanisms first), run the "
        "search on one machine, or call GraphData.new_simulation() to start a separate "
        "simulation with its own ledger.")


def _check_budget(budget):
    if budget is None:
        return None
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, numbers.Real) or \
            not budget > 0:   # (a NaN is not > 0)
        raise ValueError(f"budget must be a number > 0 or None, got {budget!r}.")
    return float(budget)


class _Answers:
    """The devices' memory of one collection: which users answered, about which input.

    Kept as unsorted chunks of ``(keys, tags)`` and merged (sorted by key) when a
    later request must be compared with them: the first answer of a whole graph
    needs no sort.
    """

    __slots__ = ("spec", "keys", "tags", "chunks")

    def __init__(self, spec):
        self.spec = spec
        self.keys, self.tags, self.chunks = np.zeros(0, np.uint64), np.zeros(0, np.uint64), []

    def add(self, keys, tags):
        self.chunks.append((np.asarray(keys, np.uint64), np.asarray(tags, np.uint64)))

    def merged(self):
        if self.chunks:
            K = np.concatenate([self.keys] + [k for k, _ in self.chunks])
            T = np.concatenate([self.tags] + [t for _, t in self.chunks])
            order = np.argsort(K, kind="stable")
            self.keys, self.tags, self.chunks = K[order], T[order], []
        return self.keys, self.tags


class _Kept:
    """The reports the server kept for one collection, a user's latest one: sorted keys
    and their reports (chunks added are merged when read); and the other reports a user's
    latest replaced (``replaced``: an earlier batch's, (key, report) pairs). A dict of 1.5M
    users took 0.5 s to update and a Python loop as long to read."""

    __slots__ = ("keys", "reports", "chunks", "replaced")

    def __init__(self, keys=None, reports=None, replaced=None):
        self.keys = np.zeros(0, np.uint64) if keys is None else keys
        self.reports = np.zeros(0, np.int64) if reports is None else reports
        self.chunks = []
        self.replaced = _Digests(None if replaced is None else
                                 np.asarray(replaced, _Digests.PAIR))

    @classmethod
    def from_state(cls, state):
        """From a pickle: ``(keys, reports, replaced)``, ``(keys, reports)`` or a dict
        ``{key: report}`` (older formats)."""
        if isinstance(state, dict):
            out = cls()
            out.add(np.fromiter(state.keys(), np.uint64, len(state)), list(state.values()))
            return out
        return cls(*state)

    def state(self):
        return (*self.merged(), self.replaced.merged())

    def add(self, keys, reports):
        # copies: the caller's arrays stay the caller's (editing them edits no record)
        reports = np.array(reports)
        if len(keys) != len(reports):
            raise ValueError(f"{len(keys)} users but {len(reports)} reports.")
        self.chunks.append((np.array(keys, np.uint64), reports))

    def merged(self):
        n = len(self.chunks)   # (a chunk added meanwhile, by another thread, stays queued)
        if n:
            chunks = self.chunks[:n]
            K = np.concatenate([self.keys] + [k for k, _ in chunks])
            R = np.concatenate([self.reports] + [r for _, r in chunks]) if \
                len(self.reports) else np.concatenate([r for _, r in chunks])
            order = np.argsort(K, kind="stable")
            K, R = K[order], R[order]
            # a user's latest report: the last of its run (stable: in the order added)
            last = np.r_[K[1:] != K[:-1], True] if len(K) else np.zeros(0, bool)
            # the others it replaced (label positions: integers from 0), but not its own
            # repeats (a simulated device's report, kept at every request)
            other = ~last & (R != R[np.flatnonzero(last)[np.cumsum(last) - last]])
            self.replaced.add(K[other], R[other])
            self.keys, self.reports = K[last], R[last]
            del self.chunks[:n]
        return self.keys, self.reports


def _other_digest(keys, digests):
    """The digest under which an answer ``digests`` held for the user ``keys`` is held for
    the other user it may be of (:meth:`Population._hold_answers`): tied to both."""
    with np.errstate(over="ignore"):
        return _mix(_mix(np.asarray(keys, np.uint64) * _GOLDEN) ^ np.asarray(digests, np.uint64))


class _Digests:
    """The digests of the answers received for one collection: ``(user key, digest)`` pairs,
    16 bytes each, kept sorted and once (chunks added are merged when read)."""

    __slots__ = ("pairs", "chunks")
    PAIR = np.dtype([("key", "<u8"), ("digest", "<u8")])   # sorts by key, then digest

    def __init__(self, pairs=None):
        self.pairs = np.zeros(0, self.PAIR) if pairs is None else pairs
        self.chunks = []

    @classmethod
    def from_state(cls, state):
        """From a pickle: the pairs, or a dict ``{key: set of digests}`` (the older format)."""
        if isinstance(state, dict):
            out = cls()
            pairs = [(k, d) for k, ds in state.items() for d in ds if d is not None]
            out.add(*np.array(pairs, dtype=np.uint64).reshape(-1, 2).T)
            return out
        return cls(np.asarray(state, cls.PAIR))

    @classmethod
    def _pairs(cls, keys, digests):
        keys, digests = np.asarray(keys, np.uint64), np.asarray(digests, np.uint64)
        out = np.empty(len(keys), cls.PAIR)
        out["key"], out["digest"] = keys, digests
        return out

    def add(self, keys, digests):
        if len(keys):
            self.chunks.append(self._pairs(keys, digests))

    def merged(self):
        """The pairs, sorted, each once."""
        n = len(self.chunks)   # (a chunk added meanwhile, by another thread, stays queued)
        if n:
            self.pairs = distinct(np.concatenate([self.pairs] + self.chunks[:n]))
            del self.chunks[:n]
        return self.pairs

    def contains(self, keys, digests):
        """Whether each ``(keys[i], digests[i])`` was added."""
        return sorted_lookup(self.merged(), self._pairs(keys, digests))[1]


class _Recorder:
    """A recording of this process: its list, and the collections it keeps."""

    def __init__(self, rec, protects):
        self.rec, self.protects = rec, protects

    def append(self, item):
        if _records(self.protects, item[0]):
            self.rec.append(item)


def _records(protects, spec):
    """Whether a recording that keeps ``protects`` (None: every collection) keeps ``spec``."""
    return protects is None or any(p in protects for p in spec.protects)


def _pickled(reports):
    # the journal is in a private folder, read by this population's own processes only
    return base64.b64encode(pickle.dumps(reports, protocol=pickle.HIGHEST_PROTOCOL)).decode()


def _unpickled(text):
    return pickle.loads(base64.b64decode(text))


def _b64(a):
    return base64.b64encode(np.ascontiguousarray(a, dtype="<u8").tobytes()).decode()


def _unb64(s):
    return np.frombuffer(base64.b64decode(s), dtype="<u8").astype(np.uint64)


_DEFAULT = None
_ARRAYS = {}                       # content hash of a plain array -> its population
# journal path -> a ledger of users of plain arrays that another process saved (with an
# estimator) and this one loaded: the latest copy of each population, counted once
_LOADED = {}
_REGISTRY_LOCK = threading.Lock()

#: The populations of this process (made here, or copies): shared before a fork.
_LIVE = weakref.WeakSet()
_FORKED = False   # this process is a fork of one that ran skldp (os.fork included)
_FORK_LOCK = threading.Lock()   # one fork at a time holds the locks below
_HELD = []        # the locks the forking thread holds across the fork


def _before_fork():
    """Share every population's journal before ``os.fork`` (multiprocessing's "fork",
    a ``ProcessPoolExecutor``): a forked child holds a copy made without pickling, which
    would otherwise collect into its own memory, outside this process's ledger and cap.
    Every population's and ledger's lock is held across the fork (populations first, as
    everywhere), so that no thread of this process is half-way through recording an
    answer, or holds a lock on the journal, when the child's copy is made."""
    _FORK_LOCK.acquire()
    for population in sorted(_LIVE, key=id):
        population._lock.acquire()
        _HELD.append(population._lock)
        try:
            if population._journal is None and population._secret is not None:
                population._open_journal()
        except Exception:  # noqa: BLE001 - the fork goes on; the child refuses (below)
            pass
    for ledger in sorted(_LEDGERS, key=id):
        ledger._lock.acquire()
        _HELD.append(ledger._lock)


def _after_fork_in_parent():
    while _HELD:
        _HELD.pop().release()
    _FORK_LOCK.release()


def _after_fork_in_child():
    """In a forked child: new locks, the journal reopened at the next use, the parent's
    recordings served through the journal, a population whose journal could not be
    opened unable to collect, and no new users of plain arrays (known to this process
    only, as in a multiprocessing worker)."""
    global _REGISTRY_LOCK, _FORKED, _FORK_LOCK
    _REGISTRY_LOCK, _FORK_LOCK = threading.Lock(), threading.Lock()
    _FORKED = True
    _HELD.clear()
    for ledger in list(_LEDGERS):
        ledger._lock = threading.RLock()
    for population in list(_LIVE):
        population._lock = threading.RLock()
        population._fh = None
        for rid, recorder in population._recordings.items():   # the parent's: forwarded
            population._foreign[rid] = recorder.protects
        population._recordings = {}
        if population._journal is None:
            population._secret = None   # collect and receive raise: nothing to share through


if hasattr(os, "register_at_fork"):   # POSIX
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)


def _in_worker_process():
    """Whether this process is a worker of another: started by multiprocessing (joblib/loky,
    Dask's nannies), forked, a Ray worker or a Dask worker without a nanny (neither has a
    parent process)."""
    return multiprocessing.parent_process() is not None or _FORKED or _in_ray_worker() or \
        _in_dask_worker_process()


def _in_ray_worker():
    ray = sys.modules.get("ray")   # (never imported here: a Ray worker has imported it)
    if ray is None or not getattr(ray, "is_initialized", lambda: False)():
        return False
    # the driver runs in SCRIPT_MODE (Ray's local mode: LOCAL_MODE), tasks and actors in
    # WORKER_MODE; a Ray client's context has no worker: it is the driver
    worker = getattr(ray.get_runtime_context(), "worker", None)
    return getattr(worker, "mode", None) == getattr(ray, "WORKER_MODE", object())


def _in_dask_worker_process():
    distributed = sys.modules.get("distributed")   # (never imported here)
    try:
        worker = distributed.get_worker()   # raises outside a Dask task
    except (AttributeError, ValueError):
        return False
    # a worker in this very process (LocalCluster(processes=False)) talks "inproc://"
    return not str(getattr(worker, "address", "") or "").startswith("inproc://")


def _refuse_in_worker_process(users):
    """Refuse users known to this process only when it is a worker of another process.

    A GraphData's population travels to worker processes with its journal, so what
    its users send there reaches the ledger the caller reads. The users of a plain
    array (or of bare keys) are known by a registry of this process: in a worker
    (joblib/loky, multiprocessing, Dask, Ray) they would be new devices with a new
    secret, and their spends would never reach the caller's report or cap.
    """
    if _in_worker_process():
        raise RuntimeError(
            f"A private step on {users} ran in a worker process. Such users are known to "
            "one process only: their reports here would come from new devices, and what "
            "they spent would reach neither privacy_report nor the budget of the process "
            "that started the work. Wrap the data in a GraphData (its ledger is shared "
            "with worker processes), or run the search or cross-validation with n_jobs=1.")


def default_population():
    """The population of users named only by their node keys (labels randomized with bare
    keys instead of a GraphData view).

    Raises ``RuntimeError`` in a worker process (see :func:`array_population`)."""
    global _DEFAULT
    _refuse_in_worker_process("users named by bare keys")
    with _REGISTRY_LOCK:
        if _DEFAULT is None:
            _DEFAULT = _plain_population()
        return _DEFAULT


def plain_array_ledgers():
    """The ledgers of this process that users of plain arrays are charged on: each plain
    array's (:func:`array_population`), and the process-wide one (:func:`default_population`),
    which holds the central trainings on plain arrays.

    Plain arrays carry no user ids: a search's folds, a slice or a copy of an array are
    other arrays, which may hold the same people. :func:`~skldp.accounting.privacy_report`
    adds all of these ledgers up once it reaches one of them. A saved estimator that
    holds one of them carries all the others, without their users' keys: the process
    that loads it adds them to its own (once each, however many estimators of that
    process it loads). The loaded copies of this process's own ledgers (saved and loaded
    here, or by a worker) are left out: ours read the journal to its end.

    Returns
    -------
    ledgers : list of Ledger or LedgerSummary
    """
    with _REGISTRY_LOCK:
        pops = list(_ARRAYS.values()) + ([_DEFAULT] if _DEFAULT is not None else [])
        own = [pop.ledger for pop in pops]
        journals = {led._journal for led in own} - {None}
        return own + [led for led in _LOADED.values() if led._journal not in journals]


def _plain_population():
    """A new population of users of plain arrays (under ``_REGISTRY_LOCK``)."""
    pop = Population()
    pop.ledger._plain = True
    return pop


def register_loaded_plain_ledger(ledger):
    """Count ``ledger`` (or its summary), a plain array's that was saved with an estimator
    and just loaded, among this process's (:func:`plain_array_ledgers`): once per
    population (its journal), the copy saved last (it has read the most of that journal)."""
    key = ledger._journal if ledger._journal is not None else id(ledger)
    with _REGISTRY_LOCK:
        known = _LOADED.get(key)
        if known is None or ledger._offset > known._offset:
            _LOADED[key] = ledger


PLAIN_LEDGERS.update(to_save=plain_array_ledgers, loaded=register_loaded_plain_ledger)


def array_population(fingerprint):
    """The population of the users of a plain array, known by its content hash.

    Plain arrays carry no user ids: row ``i`` of an array is a user of that array
    only. The same content met again (in this process) is the same users, so
    what they sent before is still on their ledger.

    Parameters
    ----------
    fingerprint : str
        The array's content hash (:func:`skldp.utils.array_fingerprint`).

    Returns
    -------
    population : Population

    Raises
    ------
    RuntimeError
        In a worker process (joblib/loky, multiprocessing, Dask, Ray):
        its registry is not the caller's, so the spends would not be counted.
        A :class:`~skldp.GraphData`'s population is shared with workers instead.
    """
    _refuse_in_worker_process("a plain array")
    with _REGISTRY_LOCK:
        pop = _ARRAYS.get(fingerprint)
        if pop is None:
            pop = _ARRAYS[fingerprint] = _plain_population()
        return pop
