"""Reports from real devices: read them, validate them against their spec, build the graph."""

import dataclasses
import hashlib
import json
import os
import secrets
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..device._device import ANSWER_ID
from ..device._kinds import ReportError, directory_digest, plan
from ..device._random import ids_to_keys
from ..device._spec import read_spec
from ._population import BudgetExceededError, Population

__all__ = ["ReceivedReports", "read_reports", "write_reports", "received_graph"]

_COLUMNAR = (".parquet", ".arrow", ".feather")
_MAX_REFUSED_RECORDS = 100   # enough to trace a fault; a flood must not grow the result


class RefusedRecord(NamedTuple):
    """One refused record: where it was, whom it claimed to be from, and why.

    Attributes
    ----------
    index : int
        Its position in the source (0-based): the item of a list, the line of
        a JSON-lines file, the row of a Parquet or Arrow file.
    user, answer : object
        Its ``"user"`` and ``"answer"`` fields as sent (``None`` when absent
        or when the record is not an object).
    reason : str
        The reason it is counted under in ``ReceivedReports.refused``.
    message : str
        What is wrong with it.
    """

    index: int
    user: object
    answer: object
    reason: str
    message: str


@dataclass
class ReceivedReports:
    """The reports of one collection that passed validation, and what was refused.

    Attributes
    ----------
    spec : CollectionSpec
        The collection.
    users : list
        The users who sent a valid report, in the order they arrived (the first
        report of each user).
    reports : dict of ndarray
        The reports' fields stacked over ``users`` (a list of arrays for an edge
        collection, whose lists differ in length).
    refused : collections.Counter
        Refused reports by reason: ``"malformed"`` (not JSON, missing fields,
        wrong types or lengths), ``"out of domain"`` (a value outside its public
        domain), ``"other collection"``, ``"unknown user"`` and ``"duplicate"``
        (a user who answered twice keeps its first answer), and ``"sender
        mismatch"`` (its user is not its authenticated sender, ``senders=``).
    again : collections.Counter
        Users who sent further answers (refused as duplicates, but sent: each is
        an independent answer that costs the budget again): user id -> number of
        them. :func:`received_graph` charges them. A further valid record of a
        user is free only when it is a **resend**: it repeats the answer id
        (``"answer"``) and the report of an earlier record of that user exactly.
        Any other further valid record is a further answer, whatever its report
        holds (two independent answers may coincide), and so is every further
        record of a user when it carries no answer id (a device that does not
        send one cannot be told from a device that answered again).
    refused_records : list of RefusedRecord
        The first 100 refused records (in source order): their index, user,
        answer id, reason and message, to trace a refusal back to its sender.
    """

    spec: object
    users: list = field(default_factory=list)
    reports: dict = field(default_factory=dict)
    refused: Counter = field(default_factory=Counter)
    again: Counter = field(default_factory=Counter)
    refused_records: list = field(default_factory=list)

    def __post_init__(self):
        # user -> digests of its answers in arrival order (the kept one first, then each
        # further answer; None for one without an answer id): what a later batch is
        # compared with (read_reports fills it; not a field of the public record)
        self._answer_digests = {}

    def __len__(self):
        return len(self.users)

    @property
    def n_refused(self):
        return int(sum(self.refused.values()))

    def __repr__(self):
        why = ", ".join(f"{n} {r}" for r, n in sorted(self.refused.items())) or "none"
        return (f"<ReceivedReports {self.spec.id}: {len(self)} accepted from "
                f"{self.spec.describe()}; refused: {why}>")


def _records(source, fmt):
    """Yield ``(index, record)`` for each record (a dict, or ``None`` for a line that is not
    JSON), ``index`` its position in ``source`` (item, line or row)."""
    if isinstance(source, (dict, bytes, bytearray)):
        # a dict would be read key by key, bytes byte by byte: every "record" malformed
        raise TypeError(f"reports come as a list of records (dicts or JSON lines), a path or a "
                        f"file object, got a {type(source).__name__}: wrap a single record in "
                        "a list, and split JSON text into lines.")
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if isinstance(path, str) and path.lstrip().startswith(("{", "[")) and \
                not os.path.exists(path):
            raise ValueError(f"source looks like JSON text, not a path ({path!r:.60}): pass "
                             "the parsed records (a list of dicts), a list of JSON lines, or "
                             "the path of a file.")
        fmt = fmt or ("columnar" if path.endswith(_COLUMNAR) else "jsonl")
        if fmt in ("parquet", "arrow", "feather", "columnar"):
            yield from enumerate(_read_columnar(path, fmt))
            return
        with open(path, "rb") as fh:   # a line that is not UTF-8 is one malformed report
            yield from _lines(fh)
        return
    if hasattr(source, "read") or hasattr(source, "__iter__"):
        for i, item in enumerate(source):
            if isinstance(item, dict):
                yield i, item
            elif isinstance(item, (str, bytes)):
                for _, rec in _lines([item]):
                    yield i, rec
            else:   # neither a record nor a line of JSON
                yield i, None
        return
    raise TypeError(f"reports come from a path, a file object or an iterable of records, got "
                    f"{type(source).__name__}.")


def _lines(lines):
    for i, line in enumerate(lines):
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        if not line.strip():
            continue
        try:
            yield i, json.loads(line)
        except (ValueError, RecursionError):   # not JSON, or nested past the parser's depth
            yield i, None


def _read_columnar(path, fmt):
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - the optional extra
        raise ImportError("Reading Parquet or Arrow reports needs pyarrow: pip install "
                          "'skldp[io]'.") from None
    if fmt == "parquet" or (fmt == "columnar" and path.endswith(".parquet")):
        table = pq.read_table(path)
    else:
        with pa.memory_map(path) as source:
            table = pa.ipc.open_file(source).read_all()
    for rec in table.to_pylist():
        # a column holds every record's field: where a record had none, it reads None
        yield _without_nulls(rec)


def _without_nulls(value):
    """A record read from a column store, without the fields it did not have."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


def write_reports(records, path):
    """Write report records (dicts) as JSON lines, or as Parquet / Arrow (``.parquet``,
    ``.arrow``, ``.feather``; needs pyarrow: ``pip install 'skldp[io]'``).

    Parameters
    ----------
    records : iterable of dict
        ``{"collection": id, "user": id, "answer": answer id, "report": {...}}`` as
        a device sends them (a record without an answer id is written without it).
    path : str
    """
    path = os.fspath(path)
    records = list(records)
    if path.endswith(_COLUMNAR):
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:  # pragma: no cover - the optional extra
            raise ImportError("Writing Parquet or Arrow reports needs pyarrow: pip install "
                              "'skldp[io]'.") from None
        # a column per field of any record (from_pylist would take the first record's)
        names = list(dict.fromkeys(k for rec in records for k in rec))
        table = pa.table({k: [rec.get(k) for rec in records] for k in names})
        if path.endswith(".parquet"):
            pq.write_table(table, path)
        else:
            with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
                w.write_table(table)
        return
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec) + "\n")


def read_reports(source, spec, *, users=None, senders=None, format=None):
    """Read the reports of one collection and validate each against its spec.

    Every report is checked: its collection id, its user (one of ``users`` when
    given, and its authenticated sender when ``senders`` is given), its fields
    (shape and domain, per mechanism: the sampled indices increasing and in
    range, the cells, bits and codes in their public domains, an adjacency list
    of known positions). A user who answered twice keeps its first answer; its
    further answers (not its resends: the same answer id and report again) are
    counted in ``again`` and charged by :func:`received_graph`. Refused reports
    are counted by reason, never used.

    The ``"user"`` field is what the sender wrote: set it from the channel that
    authenticated the sender (or pass ``senders``), never trust it alone. A
    record claiming another user's id takes that user's place, and its further
    answers are charged to that user.

    Parameters
    ----------
    source : path, file object or iterable
        JSON lines (a ``.jsonl`` file, a stream of lines, or a list of records
        as dicts), or a Parquet / Arrow file (``.parquet``, ``.arrow``,
        ``.feather``; needs pyarrow). Each record is ``{"collection": id,
        "user": id, "answer": answer id, "report": {...}}``
        (:meth:`skldp.device.Device.answer`); the answer id (16 hex digits) may
        be absent (older devices), at a cost: see ``ReceivedReports.again``.
    spec : CollectionSpec, dict, JSON text or path
        The collection's spec.
    users : array-like or None, default=None
        The users allowed to answer (the directory of enrolled users); others
        are refused. ``None`` admits any id a record claims, each a node of the
        graph (a warning: anyone who can send records can add users). Required
        for an edge collection, where it is the collection's directory: every
        user its lists may name, the ``node_ids`` its spec was made from
        (checked against the spec's size and digest, as :func:`received_graph`
        checks ``node_ids``; a list naming its own sender is refused). To ignore
        some senders of an edge collection, read it with the whole directory and
        drop them afterwards.
    senders : sequence or None, default=None
        The authenticated sender of each item of ``source`` (a list or tuple of
        records, same length): a record whose ``"user"`` is not its sender is
        refused (``"sender mismatch"``). ``None``: the ``"user"`` field is
        trusted (set it from the authenticated channel before reading).
    format : {"jsonl", "parquet", "arrow", "feather"} or None
        Read from the file name when ``None``.

    Returns
    -------
    ReceivedReports

    Examples
    --------
    >>> from skldp.population import read_reports                   # doctest: +SKIP
    >>> received = read_reports("labels.jsonl", spec, users=ids)     # doctest: +SKIP
    >>> received.refused                                            # doctest: +SKIP
    Counter({'duplicate': 3, 'out of domain': 1})
    """
    if format not in (None, "jsonl", "parquet", "arrow", "feather"):
        raise ValueError(f"format must be 'jsonl', 'parquet', 'arrow', 'feather' or None, got "
                         f"{format!r}.")
    spec = read_spec(spec)
    p = plan(spec)
    if senders is not None:
        if not isinstance(source, Sequence) or isinstance(source, (str, bytes)):
            raise TypeError("senders= pairs each record with its sender: pass the records as "
                            "a list or tuple (read a file or stream into one first), or set "
                            "each record's user from its authenticated sender and pass "
                            "senders=None.")
        senders = [_id_key(u) for u in senders]
        if len(senders) != len(source):
            raise ValueError(f"senders has {len(senders)} entries for {len(source)} records: "
                             "pass one authenticated sender per record, in the same order.")
    allowed = None if users is None else set(_id_key(u) for u in users)
    own_position = None
    if users is None and "edges" in spec.protects:
        raise ValueError("an edge collection is read with users=: the directory its lists "
                         "name (node_ids), so that a list naming its own sender is refused.")
    if users is None:
        warnings.warn(f"read_reports of collection {spec.id} without users=: any id a record "
                      "claims becomes a user (a node of the graph), so anyone who can send "
                      "records can add users and outvote the others. Pass users= the "
                      "directory of enrolled users.", UserWarning, stacklevel=2)
    if users is not None and "edges" in spec.protects:   # a list must not name its sender
        users = list(users)
        ukeys = ids_to_keys(np.asarray(users))
        if len(ukeys) != spec.public_state["n_users"] or \
                directory_digest(ukeys) != spec.public_state["directory"]:
            raise ValueError(f"users is not the directory of edge collection {spec.id} (its "
                             "size or digest differs): an edge collection is read with "
                             "users= the node_ids its spec was made from, every user its lists "
                             "may name. Read it with the whole directory, then drop the "
                             "senders to ignore.")
        order = np.sort(ukeys)
        own_position = {u: int(np.searchsorted(order, k))
                        for u, k in zip((_id_key(u) for u in users), ukeys, strict=True)}
    out = ReceivedReports(spec)
    seen = {}     # user -> position of its first report
    sent = {}     # user -> the (answer id, report) of its records: a repeat is a resend
    specs = p.field_specs()
    fields = {name: [] for name in specs}
    for index, rec in _records(source, format):
        reason, message = None, None
        if not isinstance(rec, dict) or not {"collection", "user", "report"} <= set(rec) or \
                not set(rec) <= _RECORD_FIELDS:
            reason, message = "malformed", ("a record is a JSON object with the fields "
                                            "collection, user, report and (optional) answer.")
        elif "answer" in rec and not (isinstance(rec["answer"], str)
                                      and ANSWER_ID.fullmatch(rec["answer"])):
            reason, message = "malformed", "its answer id is not 16 lowercase hex digits."
        elif not isinstance(rec["collection"], str) or rec["collection"] != spec.id:
            reason, message = "other collection", f"it is not a report of {spec.id}."
        elif not isinstance(rec["user"], (int, str)) or isinstance(rec["user"], bool):
            reason, message = "malformed", "its user id is not a string or an integer."
        elif senders is not None and _id_key(rec["user"]) != senders[index]:
            reason, message = "sender mismatch", (f"it claims user {rec['user']!r:.40} but "
                                                  f"was sent by {senders[index]!r:.40}.")
        elif allowed is not None and _id_key(rec["user"]) not in allowed:
            reason, message = "unknown user", "its user is not in users."
        if reason is None:
            try:
                report = p.check(rec["report"])
                _check_shapes(report, specs)
            except ReportError as e:
                reason, message = e.reason, str(e)
        if reason is None and own_position is not None and \
                own_position[_id_key(rec["user"])] in set(report["l"].tolist()):
            reason, message = "out of domain", "its adjacency list names its own sender."
        if reason is not None:
            out.refused[reason] += 1
            if len(out.refused_records) < _MAX_REFUSED_RECORDS:
                got = rec if isinstance(rec, dict) else {}
                out.refused_records.append(RefusedRecord(index, got.get("user"),
                                                         got.get("answer"), reason, message))
            continue
        user, answer = rec["user"], rec.get("answer")
        uid = _id_key(user)
        this = None if answer is None else (answer, _canonical(report))
        if uid in seen:
            out.refused["duplicate"] += 1
            further = this is None or this not in sent[uid]
            if further:
                # a further answer, not a resend: refused, but sent all the same; the
                # reports are not compared (two independent answers may coincide)
                out.again[user] += 1
                out._answer_digests[uid].append(_digest(this))
                if this is not None:
                    sent[uid].add(this)
            if len(out.refused_records) < _MAX_REFUSED_RECORDS:   # to trace impersonation
                out.refused_records.append(RefusedRecord(
                    index, user, answer, "duplicate",
                    "a further answer of this user, charged again (its first is kept)"
                    if further else "a resend of an answer already received (free)"))
            continue
        sent[uid] = set() if this is None else {this}
        out._answer_digests[uid] = [_digest(this)]
        seen[uid] = len(out.users)
        out.users.append(user)
        for name, value in report.items():
            fields[name].append(value)
    for name, values in fields.items():
        if specs[name][0] == "list":
            out.reports[name] = values
        elif values:
            out.reports[name] = np.stack(values)
        else:
            typ, length = specs[name][:2]
            shape = (0,) if length is None else (0, length)
            out.reports[name] = np.zeros(shape, dtype=bool if typ == "bits" else np.int64)
    return out


def _check_shapes(report, specs):
    """Refuse a validated report whose fields do not have their spec's shapes, so that the
    batch stacks (a check that slipped would otherwise crash it, or change its width)."""
    for name, (typ, length, _, _) in specs.items():
        shape = np.shape(report.get(name))
        want = None if typ == "list" else (() if length is None else (length,))
        if name not in report or (len(shape) != 1 if want is None else shape != want):
            raise ReportError("malformed", f"field {name!r} has shape {shape}, not "
                                           f"{'a list' if want is None else want}.")


_RECORD_FIELDS = {"collection", "user", "answer", "report"}


def _canonical(report):
    """A validated report's fields as hashable data (equal iff the reports are)."""
    return tuple((name, np.asarray(v).dtype.str, np.asarray(v).tolist().__repr__())
                 for name, v in sorted(report.items()))


def _digest(answer):
    """A 64-bit digest of an answer (answer id and report), ``None`` for one without an id."""
    if answer is None:
        return None
    text = repr(answer).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


def _id_key(user):
    """A hashable form of a user id that equates 3 and numpy's 3."""
    return user.item() if isinstance(user, np.generic) else user


def received_graph(*, features=None, labels=None, edges=None, node_ids=None, budget=None,
                   population=None, missing_features="error", missing_lists="warn"):
    """The server's graph from the reports real devices sent.

    The features are the feature collection's reports decoded by its mechanism
    (what that mechanism's ``transform`` returns in a simulation: unbiased
    estimates for one-bit, multi-bit, piecewise, Laplace and set-valued, HDS's
    reports, GRR-FS's codes); the adjacency is the edge collection's lists,
    symmetrized as its ``EdgeRR`` would (``"or"``, ``"and"`` or ``"directed"``);
    the labels are the received ones. The graph's population holds no device
    (``simulated=False``): its ledger charges every user for what it sent
    (:meth:`Population.receive`), so :func:`skldp.accounting.privacy_report`
    states the budget the users spent, and a mechanism step over these reports
    passes them on instead of perturbing them again.

    Parameters
    ----------
    features, labels, edges : ReceivedReports or None
        The collections received (:func:`read_reports`).
    node_ids : array-like or None, default=None
        The users of the graph, in order. Required with ``edges`` (the
        directory the lists name, checked against the spec's digest). ``None``:
        the users who sent a feature report (or a label report), in arrival
        order.
    budget : float or None, default=None
        Per-user cap of the graph's population; what was received is charged
        first (a collection above the cap raises).
    population : Population, GraphData or None, default=None
        The users' population (``simulated=False``), or a graph of it, when
        they already sent other collections: its ledger is charged, so the cap
        and :func:`skldp.accounting.privacy_report` count what they sent in
        every call. ``None``: a new population, whose ledger knows this call's
        reports only.
    missing_features : {"error", "zero"}, default="error"
        A user without a feature report: an error, or a row of the decoded
        "no report" value (0 for HDS, the range's centre for the others: the
        feature carries no information about that user).
    missing_lists : {"warn", "empty", "error"}, default="warn"
        A user of the edge collection's directory without an adjacency list: read
        as an empty list (it reports no edge; its edges are still read from the
        lists of their other endpoints), with a warning that counts them, or
        silently (``"empty"``: the lists are known to be partial), or an error.

    Returns
    -------
    G : GraphData
        Features (or an empty matrix), adjacency (or ``None``), node ids.
    y : ndarray or None
        Each user's received label, ``-1`` (``None`` for non-numeric classes)
        for users who sent none; ``None`` without ``labels``.
    """
    from .._graph_data import GraphData
    from ._deploy import mechanism_from_spec
    for argument, received in (("features", features), ("labels", labels), ("edges", edges)):
        _check_part(argument, received)
    if missing_lists not in ("warn", "empty", "error"):
        raise ValueError(f"missing_lists must be 'warn', 'empty' or 'error', got "
                         f"{missing_lists!r}.")
    if node_ids is None:
        source = features if features is not None else labels
        if source is None:
            raise ValueError("received_graph needs node_ids, or a feature or label collection "
                             "whose senders are the users.")
        node_ids = list(source.users)
    ids = np.asarray(node_ids)
    n = len(ids)
    if n == 0:
        raise ValueError("received_graph: no user.")
    keys = ids_to_keys(ids)
    if len(np.unique(keys)) != n:
        raise ValueError("node_ids must be unique.")
    position = {_id_key(u): i for i, u in enumerate(ids.tolist())}
    population = _receiving_population(population, budget)
    X, feature_origin = np.zeros((n, 0)), ("derived", "were not collected")
    if features is not None:
        X, rows = _decoded_features(features, position, n, missing_features,
                                    mechanism_from_spec)
        _receive(population, features.spec, keys[rows])
        _charge_again(population, features, position, keys)
        feature_origin = ("reports", features.spec)
    A, adjacency_origin = None, ("derived", "were not collected")
    if edges is not None:
        A, rows = _received_adjacency(edges, keys, position, missing_lists)
        _receive(population, edges.spec, keys[rows])
        _charge_again(population, edges, position, keys)
        adjacency_origin = ("reports", edges.spec)
    y = None
    if labels is not None:
        classes = np.asarray(labels.spec.public_state["classes"])
        rows = _rows_of(labels, position)
        numeric = np.issubdtype(classes.dtype, np.number)
        y = np.full(n, -1, dtype=classes.dtype) if numeric else np.full(n, None, dtype=object)
        pos = labels.reports["y"].astype(np.int64) if len(labels) else np.zeros(0, np.int64)
        y[rows] = classes[pos]
        _receive(population, labels.spec, keys[rows], reports=pos)
        _charge_again(population, labels, position, keys)
    G = GraphData(X, A, node_ids=ids, population=population)
    G._store.feature_origin = feature_origin
    G._store.adjacency_origin = adjacency_origin
    return G, y


def _receive(population, spec, keys, reports=None):
    """Charge what the users sent; a refusal says the reports came and are left unused."""
    try:
        population.receive(spec, keys, reports=reports)
    except BudgetExceededError as e:
        raise BudgetExceededError(
            f"{_refusal(e)}. The reports were received but not used: no graph was built. If the "
            "users agreed to spend more, raise the budget (population.set_budget).") from e


def _receiving_population(population, budget):
    """The population that ``received_graph`` charges: a new one, or the caller's."""
    from .._graph_data import GraphData
    if population is None:
        return Population(budget, simulated=False)
    population = population.population if isinstance(population, GraphData) else population
    if not isinstance(population, Population):
        raise TypeError("population must be a Population or a GraphData, got "
                        f"{type(population).__name__}.")
    if population.simulated:
        raise ValueError("received_graph charges a population of real devices "
                         "(Population(simulated=False), or the graph an earlier "
                         "received_graph returned); this one simulates its devices.")
    if budget is not None:
        if population.budget is not None and float(budget) != population.budget:
            raise ValueError(f"budget={budget!r}, but the population already has a budget of "
                             f"{population.budget:.4g} per user. Change it explicitly with "
                             "population.set_budget(...).")
        population.set_budget(budget)
    return population


def _check_part(argument, received):
    """Refuse reports passed as another part of the graph than their collection protects."""
    if received is None:
        return
    if not isinstance(received, ReceivedReports):
        raise TypeError(f"received_graph: {argument}= takes the reports read_reports returns, "
                        f"got {type(received).__name__}.")
    protects = tuple(received.spec.protects)
    if argument not in protects:
        raise ValueError(f"received_graph: {argument}= expects the reports of a collection that "
                         f"protects {argument}, got those of {received.spec.id}, "
                         f"{received.spec.describe()}: pass them as {protects[0]}=.")


def _charge_again(population, received, position, keys):
    """Charge the further answers users sent of ``received``'s collection: those of this
    batch (``again``) and, from users who answered it in an earlier batch of ``population``,
    every answer that batch did not hold. The users who sent ``c`` of them are charged one
    collection of ``c`` times its epsilon, which the ledger adds to what they spent; what
    is charged is remembered at once, so that a retry after a refusal charges it no more."""
    users = list(received.users)
    rows = np.asarray([position[_id_key(u)] for u in users], dtype=np.int64)
    digests = [_answers_of(received, u) for u in users]
    counts = population._unseen_answers(received.spec.id, keys[rows], digests)
    done = np.flatnonzero(counts == 0)
    population._remember_answers(received.spec.id, keys[rows[done]], [digests[i] for i in done])
    for c in np.unique(counts[counts > 0]).tolist():
        these = np.flatnonzero(counts == c)
        # a spec of its own (a random nonce): no earlier charge, here or in a copy of the
        # population, is taken for this one
        spec = dataclasses.replace(received.spec, epsilon=c * received.spec.epsilon)
        spec = spec.with_nonce(f"{received.spec.nonce} ({c} further answers, "
                               f"{secrets.token_hex(8)})")
        try:
            population.receive(spec, keys[rows[these]], charge_only=True)
        except BudgetExceededError as e:
            # name who sent them: a flood of forged records charges its victim, not its sender
            named = ", ".join(f"{users[i]!r:.40}" for i in these[:5]) + \
                (", ..." if len(these) > 5 else "")
            raise BudgetExceededError(
                f"{len(these)} user(s) ({named}) sent {c} further answer(s) each of collection "
                f"{received.spec.id} ({int(counts.sum())} further answers in all, with those "
                "of earlier batches this population received); each is charged its epsilon "
                f"again, and {_refusal(e)}. No graph was built. Further answers come from "
                "devices that answered again, or from replays and impersonation (a record's "
                "user is what its sender wrote): check ReceivedReports.again, and read the "
                "reports with senders= (or set each record's user from its authenticated "
                "sender).") from e
        population._remember_answers(received.spec.id, keys[rows[these]],
                                     [digests[i] for i in these])


def _answers_of(received, user):
    """The digests of a user's answers in ``received`` (the kept one first), as many as it
    sent: unknown (``None``) where the reports carry none (built by hand, or read before
    they were kept), so that each further answer counted in ``again`` is charged."""
    digests = getattr(received, "_answer_digests", {}).get(_id_key(user))
    n = 1 + received.again.get(user, 0)
    digests = list(digests) if digests else [None]
    return digests + [None] * (n - len(digests))


def _refusal(error):
    """The numbers of a budget refusal, without its advice (which is for new collections)."""
    return str(error).split(" Nothing was sent.")[0].rstrip(".")


def _rows_of(received, position):
    rows = []
    for u in received.users:
        r = position.get(_id_key(u))
        if r is None:
            raise ValueError(f"user {u!r} sent a report of collection {received.spec.id} but "
                             "is not in node_ids; read the reports with users=node_ids.")
        rows.append(r)
    return np.asarray(rows, dtype=np.int64)


def _decoded_features(received, position, n, missing, mechanism_from_spec):
    mech = mechanism_from_spec(received.spec)
    rows = _rows_of(received, position)
    if missing not in ("error", "zero"):
        raise ValueError(f"missing_features must be 'error' or 'zero', got {missing!r}.")
    absent = n - len(rows)
    if absent and missing == "error":
        raise ValueError(f"{absent} of the {n} users sent no report of feature collection "
                         f"{received.spec.id}; drop them from node_ids, or pass "
                         "missing_features='zero'.")
    Z = mech._decode(received.reports) if len(rows) else None
    d = mech.n_features_in_
    sparse = Z is not None and sp.issparse(Z)
    if absent == 0:
        order = np.empty(n, dtype=np.int64)
        order[rows] = np.arange(n)
        return (Z[order] if not sparse else sp.csr_matrix(Z)[order]), rows
    # users without a report: the decoded value that says nothing (0, or the centre)
    empty = 0.0 if received.spec.kind.endswith("HDSMechanism") else \
        (mech.feature_min_ + mech.feature_max_) / 2.0
    if received.spec.kind.endswith(("SetValuedMechanism", "GRRFSMechanism")):
        raise ValueError(f"{received.spec.kind} reports have no neutral value: drop the "
                         "users without a report from node_ids.")
    out = np.empty((n, d))
    out[...] = empty
    if Z is not None:
        out[rows] = Z.toarray() if sparse else Z
    return out, rows


def _received_adjacency(received, keys, position, missing):
    spec = received.spec
    n = len(keys)
    if spec.public_state["n_users"] != n or spec.public_state["directory"] != \
            directory_digest(keys):
        raise ValueError(f"node_ids are not the directory of edge collection {spec.id} (its "
                         "size or digest differs): the lists name other users.")
    rows = _rows_of(received, position)
    absent = n - len(rows)
    if absent and missing != "empty":
        message = (f"{absent} of the {n} users of edge collection {spec.id} sent no adjacency "
                   "list: each is read as an empty list (its edges are read only from the "
                   "lists of their other endpoints)")
        if missing == "error":
            raise ValueError(message + "; pass missing_lists='empty' to read them so.")
        warnings.warn(message + ". Pass missing_lists='empty' when that is expected.",
                      UserWarning, stacklevel=3)
    by_key = np.argsort(keys, kind="stable")
    lists = received.reports["l"]
    counts = np.array([len(a) for a in lists], dtype=np.int64)
    r = np.repeat(rows, counts)
    c = by_key[np.concatenate(lists)] if len(lists) else np.zeros(0, np.int64)
    self_loops = r == c
    if self_loops.any():
        raise ValueError(f"{int(self_loops.sum())} received lists name their own user; "
                         "validate them with read_reports.")
    from ..mechanisms._edge_rr import _ones_csr, _symmetrize
    R = sp.csr_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(n, n))
    R.sort_indices()
    indptr, cols = R.indptr.astype(np.int64), R.indices
    mode = spec.params.get("symmetrize", "or")
    if mode != "directed":
        indptr, cols = _symmetrize(indptr, cols, mode)
    return _ones_csr(indptr, cols, n), rows
