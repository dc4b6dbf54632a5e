"""Reports from real devices: read them, validate them against their spec, build the graph."""

import copy
import hashlib
import itertools
import json
import math
import numbers
import operator
import os
import secrets
import warnings
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..device._device import ANSWER_ID, plain_id
from ..device._kinds import ReportError, _value_text, directory_digest, plan
from ..device._random import (
    _as_id_array,
    _exact_limit,
    _id_list,
    _id_sequence,
    _retyped,
    ids_to_keys,
)
from ..device._spec import read_spec
from ..utils._arrays import distinct, member
from ..utils._atomic import replace_file
from ._population import _TOL, BudgetExceededError, Population, further_answers_spec
from ._reports import LabelReports
from ._spec import check_hashing_maps

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
        Users who sent answers that are not used: user id -> number of them.
        Each was sent and costs the budget again; :func:`received_graph`
        charges them. They are every record of a user but its kept one (refused
        as a duplicate, or refused as ``"malformed"`` or ``"out of domain"``
        when the record names this collection and a user it may charge, and
        holds a report), whichever comes first; a user whose every record was
        refused so is charged for each, and is not in ``users``. A further
        record is free only when it is a **resend**: it repeats the answer id
        (``"answer"``) and the report of an earlier record of that user exactly.
        Any other is a further answer, whatever its report holds (two
        independent answers may coincide), and so is every record without an
        answer id (a device that does not send one cannot be told from a device
        that answered again). Records refused as ``"other collection"`` or
        ``"sender mismatch"``, or without a report, charge no one: they name no
        user of this collection who sent them. Those of a user not in
        ``users`` (``"unknown user"``) are kept aside: :func:`received_graph`
        gives them to its population, which charges them once that user is one
        of its users (a user of a graph it builds, or one charged before).
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
        # 64-bit digests of the answers, what a later batch is compared with (read_reports
        # fills them; not fields of the public record): the kept one of each user (aligned
        # with users), and each further answer with its user; None: unknown (built by hand)
        self._kept_digests = None
        self._further_users, self._further_digests = None, None
        # the answers of users not in users= (each once, with its digest): received_graph
        # hands them to the population, which charges them if the user joins it
        self._held_users, self._held_digests = [], np.zeros(0, np.uint64)
        # read with users=: the keys of the ids its directory lists with their other spelling
        # (3 and "3": two users; usually none), not the directory (a 1M-user one is 200 MB);
        # None: 3 and "3" may be two ids of one user. The ids it retyped to its other
        # spelling, as sent (rare):
        # position in users -> id, and position in the further answers -> id
        self._directory = None
        self._kept_sent, self._further_sent = {}, {}

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
            # the first line with content (read, not peeked: a pipe cannot seek back)
            lead = [fh.readline()]
            while lead[-1] and not lead[-1].strip():
                lead.append(fh.readline())
            _check_json_lines(lead[-1], path)
            yield from _lines(itertools.chain(lead, fh))
        return
    if hasattr(source, "read") or hasattr(source, "__iter__"):
        n_records, text = 0, None
        for i, item in enumerate(source):
            if isinstance(item, dict):
                n_records += 1
                yield i, item
            elif isinstance(item, os.PathLike) or hasattr(item, "read"):
                # (a text item is a device's line, never looked up on the server's disk)
                # each item would be one malformed record: a whole file read as nothing
                raise TypeError(f"item {i} of the reports is a file, not a record: "
                                "read each file with its own call (a path or a file object is "
                                "one source), or pass the records.")
            elif isinstance(item, (str, bytes)):
                # an item of several lines (a relay's chunk) is as many records: not
                # splitlines, which also splits inside a JSON string (U+2028, U+0085).
                # An item is whole lines: each chunk's byte-order mark is stripped (a file
                # object's items are its lines: only its first line's, as for a path)
                for _, rec in _lines(item.split("\n" if isinstance(item, str) else b"\n"),
                                     first=i == 0 or not hasattr(source, "read")):
                    n_records += isinstance(rec, (dict, _Repeated))
                    yield i, rec
                text = item if text is None else text
            else:   # neither a record nor a line of JSON
                yield i, None
        if n_records == 0 and text is not None:
            # not one record: the items are something else (paths of files, not their lines)
            raise ValueError(f"no item of the reports is a JSON record (the first: "
                             f"{text!r:.60}); if they are paths of files, read each file with "
                             "its own call.")
        return
    raise TypeError(f"reports come from a path, a file object or an iterable of records, got "
                    f"{type(source).__name__}.")


def _check_json_lines(first, path):
    """Refuse a file that is not JSON lines as a whole (every line would be one malformed
    report, silently): gzip, or one JSON array (what ``json.dump(records, f)`` writes);
    ``first`` is its first line."""
    if first[:2] == b"\x1f\x8b":
        raise ValueError(f"{path} is gzip-compressed: decompress it (gzip.open(path)) and "
                         "pass the file object or its lines.")
    first = first.removeprefix(b"\xef\xbb\xbf")   # a byte-order mark
    if first.lstrip().startswith(b"[") and _array_of_records(first):
        raise ValueError(f"{path} starts with a JSON array, not JSON lines (one record per "
                         "line): load it with json.load and pass the list of records.")


def _array_of_records(line):
    """Whether a first line opens a JSON array of records (a device's malformed line, e.g.
    ``[1, 2]``, is one malformed report, not a reason to refuse the file)."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):   # an array spread over lines: "[" alone
        return True
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


class _RepeatedName(ValueError):
    """A JSON object that names a field twice with two values."""


class _Repeated:
    """A line whose JSON names a field twice with two values (``{"user": "a", ...,
    "user": "b"}``): which one it means depends on the parser (Python's reads the last, a
    relay or an audit log may read the first), so it is refused as malformed."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"JSON naming {self.name!r} twice"


def _unique_names(pairs):
    out = dict(pairs)
    if len(out) != len(pairs):
        for name, value in pairs:   # (the same value twice is one value: read as usual)
            if json.dumps(value, sort_keys=True) != json.dumps(out[name], sort_keys=True):
                raise _RepeatedName(name)
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=_unique_names)


def _loads(text):
    """``json.loads`` of one line or cell, refusing a field named twice with two values
    (:class:`_RepeatedName`)."""
    return _DECODER.decode(text)


def _lines(lines, first=True):
    """``(line number, record)`` of each line with content (``None``: not JSON); ``first``:
    these are the first lines of the source or of one of its items (a relay's chunk), whose
    byte-order mark (a file saved as "UTF-8 with BOM") is no part of its first record."""
    for i, line in enumerate(lines):
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        if i == 0 and first:
            line = line.removeprefix("\ufeff")
        if not line.strip():
            continue
        try:
            yield i, _loads(line)
        except _RepeatedName as e:
            yield i, _Repeated(e.args[0])
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
        _check_column_names(pa, pq.read_schema(path), path)   # (read_table would raise)
        table = pq.read_table(path)
    else:
        with pa.memory_map(path) as source:
            reader = pa.ipc.open_file(source)
            _check_column_names(pa, reader.schema, path)
            table = reader.read_all()
    as_json = _json_columns(table.schema.metadata)
    for rec in table.to_pylist():
        # a JSON column holds each value as its JSON text (see write_reports)
        yield {k: (_from_json_text(v) if k in as_json else _without_nulls(v))
               for k, v in rec.items() if v is not None}


def _check_column_names(pa, fields, path, within=""):
    """Refuse a table with two columns (or two fields of a struct column) of one name, as
    Arrow allows: ``to_pylist`` keeps the last, another reader may take the first (as a
    JSON line naming a field twice). The whole table, before any record is read."""
    seen = set()
    for f in fields:
        if f.name in seen:
            what = "fields" if within else "columns"
            raise ValueError(f"{path} has two {what} named {within + f.name!r}: which one "
                             "a record means depends on the reader. Nothing was read; "
                             "write each field once.")
        seen.add(f.name)
        typ = f.type
        while pa.types.is_list(typ) or pa.types.is_large_list(typ) or \
                pa.types.is_fixed_size_list(typ):
            typ = typ.value_type
        if pa.types.is_struct(typ):
            _check_column_names(pa, list(typ), path, within + f.name + ".")


class _NotJSON:
    """A cell of a JSON column that is not JSON text: refused as its field's value would be
    (a report that is not an object, a user id that is neither a string nor an integer),
    while the record's other fields still name its user."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return f"not JSON text {self.text!r:.40}"


def _from_json_text(text):
    try:
        return _loads(text)
    except (TypeError, ValueError, RecursionError):
        return _NotJSON(text)


def _json_columns(metadata):
    """The columns a file written by :func:`write_reports` holds as JSON text."""
    try:
        names = json.loads((metadata or {}).get(_JSON_COLUMNS, b"[]"))
    except (TypeError, ValueError, RecursionError):
        return set()
    return {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()


def _without_nulls(value):
    """A record read from a column store, without the fields it did not have."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


_JSON_COLUMNS = b"skldp.json_columns"


def write_reports(records, path):
    """Write report records (dicts) as JSON lines, or as Parquet / Arrow (``.parquet``,
    ``.arrow``, ``.feather``; needs pyarrow: ``pip install 'skldp[io]'``).

    Every record reads back as written (:func:`read_reports`). A column store
    types each field once: a field whose values no single type holds exactly
    (ids that are integers for some users and text for others, a field set to
    ``null``) is stored as each value's JSON text. A record that cannot be
    written is an error that names it before anything is written, and the
    file appears whole or not at all (it is written aside, then renamed).

    Parameters
    ----------
    records : iterable of dict
        ``{"collection": id, "user": id, "answer": answer id, "report": {...}}`` as
        a device sends them (a record without an answer id is written without it).
        numpy scalars and arrays are written as the equal numbers and lists.
    path : str or path-like
    """
    path = os.fspath(path)
    records = list(records)
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise TypeError(f"record {i} is a {type(rec).__name__}, not a dict: each record "
                            "is {'collection': ..., 'user': ..., 'answer': ..., 'report': "
                            "{...}}. Nothing was written.")
    records = [_plain_record(rec, i) for i, rec in enumerate(records)]
    if path.endswith(_COLUMNAR):
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:  # pragma: no cover - the optional extra
            raise ImportError("Writing Parquet or Arrow reports needs pyarrow: pip install "
                              "'skldp[io]'.") from None
        table = _table(pa, records)   # whole before anything is written

        def write(tmp):
            if path.endswith(".parquet"):
                pq.write_table(table, tmp)
            else:
                with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
                    w.write_table(table)
    else:
        lines = [_json_text(rec, i, None) + "\n" for i, rec in enumerate(records)]

        def write(tmp):
            with open(tmp, "x", encoding="utf-8") as fh:
                fh.writelines(lines)
    replace_file(path, write)   # a reader sees the old file or the whole new one


def _table(pa, records):
    """An Arrow table of ``records``: a column per field of any record (from_pylist would
    take the first record's); JSON text where no Arrow type holds the values exactly."""
    names = list(dict.fromkeys(k for rec in records for k in rec))
    for name in names:
        if not isinstance(name, str):
            i = next(i for i, rec in enumerate(records) if name in rec)
            raise TypeError(f"record {i} has a field named {name!r} "
                            f"({type(name).__name__}): a column store names its columns with "
                            "text. Nothing was written.")
    columns, as_json = {}, []
    for name in names:
        values = [rec.get(name) for rec in records]
        column = None
        if not any(name in rec and rec[name] is None for rec in records):
            # (a field set to null would read back as absent)
            column = _exact_column(pa, values)
        if column is None:
            column = pa.array([_json_text(rec[name], i, name) if name in rec else None
                               for i, rec in enumerate(records)], type=pa.string())
            as_json.append(name)
        columns[name] = column
    return pa.table(columns).replace_schema_metadata(
        {_JSON_COLUMNS: json.dumps(as_json).encode()})


def _exact_column(pa, values):
    """An Arrow array of ``values`` that reads back exactly as they are, or ``None``."""
    try:
        column = pa.array(values)
        if not _has_children(pa, column.type):   # Parquet writes no struct without fields
            return None
        back = [_without_nulls(b) for b in column.to_pylist()]
        if _same(values, back):
            return column
    except (pa.ArrowException, TypeError, ValueError, OverflowError, RecursionError):
        pass   # mixed types, integers past 64 bits...
    return None


def _has_children(pa, typ):
    """Whether every struct within ``typ`` has a field (``{}`` types as a struct without one)."""
    if pa.types.is_struct(typ):
        return typ.num_fields > 0 and all(_has_children(pa, f.type) for f in typ)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return _has_children(pa, typ.value_type)
    return True


def _same(a, b):
    """Equal values of the same types: the same JSON text (1 is not 1.0 nor true, -0.0 is
    not 0.0)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _plain(value):
    """``value`` with numpy scalars and arrays as Python numbers and lists (tuples as
    lists), as JSON and Arrow write them (``value`` itself when it holds none)."""
    if isinstance(value, dict):
        other = [k for k in value if not isinstance(k, str)]
        if other:   # JSON would write it as text: it would not read back as written
            raise TypeError(f"a field name that is not text, {_value_text(other[0])}")
        out = {k: _plain(v) for k, v in value.items()}
        return value if all(out[k] is v for k, v in value.items()) else out
    if isinstance(value, (list, tuple)):
        if type(value) is list and set(map(type, value)) <= _PLAIN:
            return value
        out = [_plain(v) for v in value]
        return value if type(value) is list and all(map(operator.is_, out, value)) else out
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


_PLAIN = {str, int, float, bool, type(None)}


def _plain_record(rec, index):
    try:
        return _plain(rec)
    except RecursionError:
        raise TypeError(f"record {index} is nested too deep to be written. Nothing was "
                        "written.") from None
    except TypeError as e:   # it would not read back as written
        raise TypeError(f"record {index} holds {e}. Nothing was written.") from None


def _json_text(value, index, name):
    """``value`` as JSON text, or an error that names its record (and field)."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError, RecursionError) as e:
        where = f"record {index}" if name is None else f"field {name!r} of record {index}"
        raise TypeError(f"{where} cannot be written as JSON ({type(e).__name__}: {e}). "
                        "Nothing was written.") from None


def read_reports(source, spec, *, users=None, senders=None, format=None):
    """Read the reports of one collection and validate each against its spec.

    Every report is checked: its collection id, its user (one of ``users`` when
    given, and its authenticated sender when ``senders`` is given), its fields
    (shape and domain, per mechanism: the sampled indices increasing and in
    range, the cells, bits and codes in their public domains, an adjacency list
    of known positions). A user who answered twice keeps its first valid answer.
    Every other record it sent is counted in ``again`` and charged by
    :func:`received_graph`, unless it is a resend (the same answer id and report
    again): a further valid answer, and a report refused as malformed or out of
    domain, before or after the kept one (it was sent all the same). Refused
    reports are counted by reason, never used.

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
        be absent (older devices), at a cost: see ``ReceivedReports.again``. A
        user id is a string or an integer (numpy's integers read as the equal
        ``int``; bools and floats are malformed; without ``senders``, the text
        ``"5"`` names the integer 5 of ``users``, and the reverse, when ``users``
        does not hold it in the record's type); it names the user of ``users``
        of its key (the record of 2**64 - 1 is the user -1's). numpy scalars and arrays
        read as the numbers and lists :func:`write_reports` writes for them,
        then are validated as any record.
    spec : CollectionSpec, dict, JSON text or path
        The collection's spec. A FeatureHashing step must ship the map its
        ``random_state`` draws, the server's, and the parameters must be its
        mechanism's (a ``SpecError`` otherwise).
    users : array-like or None, default=None
        The users allowed to answer (the directory of enrolled users), each
        listed once (a repeated id, or two ids of one key, is a ``ValueError``); others
        are refused, and their answers charged if they join later (see
        ``ReceivedReports.again``). ``None`` admits any id a record claims, each a node of the
        graph (a warning: anyone who can send records can add users); each id is kept
        as sent (``5`` and ``"5"`` are two ids: :func:`received_graph` tells whether they
        name one user, or refuses them). Required
        for an edge collection, where it is the collection's directory: every
        user its lists may name, the ``node_ids`` its spec was made from
        (checked against the spec's size and digest, as :func:`received_graph`
        checks ``node_ids``; a list naming its own sender is refused). To ignore
        some senders of an edge collection, read it with the whole directory and
        drop them afterwards.
    senders : sequence or None, default=None
        The authenticated sender of each item of ``source`` (a list or tuple of
        records, same length): a record whose ``"user"`` is not its sender is
        refused (``"sender mismatch"``); a sender ``"5"`` (read from a header)
        that is no user of ``users`` sends the records of its user 5.
        ``None``: the ``"user"`` field is
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
    from ._deploy import check_spec_params
    spec = read_spec(spec)
    p = plan(spec)
    check_hashing_maps(spec)   # the devices hashed with the shipped map: the server's own
    check_spec_params(spec)    # (the server decodes with the mechanism of its parameters)
    if senders is not None:
        if not isinstance(source, Sequence) or isinstance(source, (str, bytes)):
            raise TypeError("senders= pairs each record with its sender: pass the records as "
                            "a list or tuple (read a file or stream into one first), or set "
                            "each record's user from its authenticated sender and pass "
                            "senders=None.")
        senders = [plain_id(u) for u in _as_id_array(list(_id_list(senders, "senders")),
                                                     "senders").tolist()]
        if len(senders) != len(source):
            raise ValueError(f"senders has {len(senders)} entries for {len(source)} records: "
                             "pass one authenticated sender per record, in the same order.")
    directory = None if users is None else _id_list(users, "users")   # (as GraphData's)
    users = None if users is None else list(directory)   # (read twice for an edge collection)
    # users by key, as the ledger and GraphData know them (not by ==: True == 1)
    allowed = None if users is None else _Users(_as_id_array(directory, "users"))
    if allowed is not None and len(allowed._row) != len(allowed.ids):
        raise ValueError(_repeated_users_message(allowed))
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
        ukeys = ids_to_keys(_as_id_array(directory))   # as GraphData and received_graph do
        if len(ukeys) != spec.public_state["n_users"] or \
                directory_digest(ukeys) != spec.public_state["directory"]:
            raise ValueError(f"users is not the directory of edge collection {spec.id} (its "
                             "size or digest differs): an edge collection is read with "
                             "users= the node_ids its spec was made from, every user its lists "
                             "may name. Read it with the whole directory, then drop the "
                             "senders to ignore.")
        order = np.sort(ukeys)
        own_position = {u: int(np.searchsorted(order, k))
                        for u, k in zip((plain_id(u) for u in users), ukeys, strict=True)}
    out = ReceivedReports(spec)
    seen = {}     # user -> position of its kept report
    kept = array("Q")        # the digest of each kept answer
    extra = {}    # user -> digests of its other answers: a repeat is a resend
    further_users, further = [], array("Q")
    nonce = secrets.token_bytes(8)   # answers without an id: new at every read
    specs = p.field_specs()
    fields = {name: [] for name in specs}
    held_users, held, held_seen = [], array("Q"), set()
    kept_sent, further_sent = {}, {}   # (position: id as sent) of the ids retyped ("3" for 3)
    for index, rec in _records(source, format):
        reason, message = None, None
        sent = None   # the id as written, when the directory's other spelling replaced it
        rec = _plain_or_same(rec)   # numpy values read as write_reports writes them
        user = _user_of(rec)
        if isinstance(rec, _Repeated):
            reason, message = "malformed", (f"its JSON names the field {rec.name!r} twice, "
                                            "with two values: which one it means depends "
                                            "on the parser.")
        elif not isinstance(rec, dict) or not {"collection", "user", "report"} <= set(rec) \
                or not set(rec) <= _RECORD_FIELDS:
            reason, message = "malformed", ("a record is a JSON object with the fields "
                                            "collection, user, report and (optional) answer.")
        elif "answer" in rec and not _is_answer_id(rec["answer"]):
            reason, message = "malformed", "its answer id is not 16 lowercase hex digits."
        elif not isinstance(rec["collection"], str) or rec["collection"] != spec.id:
            reason, message = "other collection", f"it is not a report of {spec.id}."
        elif user is None:
            reason, message = "malformed", "its user id is not a string or an integer."
        elif senders is not None and not _sent_by(user, senders[index], allowed):
            reason, message = "sender mismatch", (f"it claims user {user!r:.40} but "
                                                  f"was sent by {senders[index]!r:.40}.")
        elif allowed is not None:
            # a relay that writes ids as text ("5" for 5) names the same user; with senders=,
            # the channel authenticated the id as written, unless the sender is written so
            # too (a header read as text: "5" for user 5, as _sent_by)
            found = allowed.find(user, retype=senders is None or (
                allowed.get(senders[index], retype=False) is None and
                allowed.get(user) == allowed.get(senders[index])))
            if found is None:
                reason, message = "unknown user", "its user is not in users."
            else:
                sent, user = user, found[1]   # (the directory's id: -1 for 2**64 - 1, one key)
        held_reason = None   # what a user not in users= would have been refused for
        if reason is None or reason == "unknown user":
            try:
                report = p.check(rec["report"])
                _check_shapes(report, specs)
            except ReportError as e:
                if reason is None:
                    reason, message = e.reason, str(e)
                else:
                    held_reason = e.reason
        if reason is None and own_position is not None and \
                own_position[user] in set(report["l"].tolist()):
            reason, message = "out of domain", "its adjacency list names its own sender."
        answer = rec.get("answer") if isinstance(rec, dict) and \
            _is_answer_id(rec.get("answer")) else None
        if reason == "malformed" and user is None and senders is None:
            # an id read as a float (5.0, a table with gaps) keys as user 5: refused, and
            # charged to that user (with senders, to its authenticated sender, below)
            user = _integral_float_id(rec)
            if user is not None and allowed is not None:   # ("5" for 5.0: as any id)
                sent, user = user, allowed.name(user)
        if reason is not None:
            # a report of this collection that names a user it may charge was sent, valid or
            # not: an answer of that user, wherever it comes among the user's records
            names = reason in ("malformed", "out of domain", "unknown user") and \
                user is not None and "report" in rec and \
                isinstance(rec.get("collection"), str) and rec["collection"] == spec.id and \
                (senders is None or _sent_by(user, senders[index], allowed))
            charge = names and (allowed is None or allowed.get(user, retype=False) is not None)
            hold = names and not charge
            if senders is not None and (reason == "sender mismatch" or (
                    reason == "malformed" and user is None)) and \
                    (not isinstance(rec, dict) or (
                        "report" in rec and isinstance(rec.get("collection"), str) and
                        rec["collection"] == spec.id)):
                # an authenticated sender's record that names no user (a line cut short in
                # transit, its user id lost) or another user (a second install of its app):
                # sent all the same, over that sender's channel, and charged to it
                sent, user = None, senders[index]
                if allowed is not None:   # (by key: -1 is 2**64 - 1; "5" for 5)
                    sent, user = user, allowed.name(user)
                charge = allowed is None or allowed.get(user, retype=False) is not None
                hold = not charge
                message += " Its user is its authenticated sender."
            if charge:
                d = _digest(("refused", answer, _raw_text(rec["report"]))) \
                    if answer is not None else _new_digest(nonce, index)
                charge = _further(d, user, seen, kept, extra)
                if charge:
                    out.again[user] += 1
                    _note_retyped(further_sent, len(further_users), sent, user)
                    further_users.append(user)
                    further.append(d)
                message += " Charged to its user: a report was sent." if charge else \
                    " A resend of a record already received (free)."
            elif hold:
                # a user not in users= sent it: the population keeps it, and charges it if
                # that user joins (a later directory) or is one of its users already
                d = _digest((answer, _canonical(report))) if answer is not None and \
                    reason == "unknown user" and held_reason is None else \
                    _digest(("refused", answer, _raw_text(rec["report"]))) \
                    if answer is not None else _new_digest(nonce, index)
                if (user, d) not in held_seen:
                    held_seen.add((user, d))
                    held_users.append(user)
                    held.append(d)
                message += (" Kept for its user: charged if that user is a user of the "
                            "population this is received into, or joins it later.")
            out.refused[reason] += 1
            if len(out.refused_records) < _MAX_REFUSED_RECORDS:
                got = rec if isinstance(rec, dict) else {}
                out.refused_records.append(RefusedRecord(index, got.get("user"),
                                                         got.get("answer"), reason, message))
            continue
        d = _digest((answer, _canonical(report))) if answer is not None else \
            _new_digest(nonce, index)
        if user in seen:
            out.refused["duplicate"] += 1
            again = _further(d, user, seen, kept, extra)
            if again:
                # a further answer, not a resend: refused, but sent all the same; the
                # reports are not compared (two independent answers may coincide)
                out.again[user] += 1
                _note_retyped(further_sent, len(further_users), sent, user)
                further_users.append(user)
                further.append(d)
            if len(out.refused_records) < _MAX_REFUSED_RECORDS:   # to trace impersonation
                out.refused_records.append(RefusedRecord(
                    index, user, answer, "duplicate",
                    "a further answer of this user, charged again (its first is kept)"
                    if again else "a resend of an answer already received (free)"))
            continue
        seen[user] = len(out.users)
        _note_retyped(kept_sent, len(out.users), sent, user)
        kept.append(d)
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
    out._kept_digests = np.frombuffer(kept, dtype=np.uint64).copy()
    out._further_users = further_users
    out._further_digests = np.frombuffer(further, dtype=np.uint64).copy()
    out._held_users = held_users
    out._held_digests = np.frombuffer(held, dtype=np.uint64).copy()
    out._directory = None if allowed is None else _apart_keys(allowed)
    out._kept_sent, out._further_sent = kept_sent, further_sent
    return out


def _note_retyped(retyped, position, sent, user):
    """Remember the id as sent (3) of the entry at ``position`` when read_reports replaced
    it by the directory's other spelling ("3"): received_graph names by it a user its
    population knows or the call names (never the node of its other spelling)."""
    if sent is not None and type(sent) is not type(user):
        retyped[position] = sent


def _plain_or_same(rec):
    """A record with numpy scalars and arrays as the Python numbers and lists that
    :func:`write_reports` writes for them (then validated as any record); as it is when
    it cannot be converted (it is refused as it stands)."""
    if not isinstance(rec, dict):
        return rec
    try:
        return rec if _is_plain(rec) else _plain(rec)   # (most are plain: not rebuilt)
    except (TypeError, RecursionError):
        return rec


def _is_plain(value):
    """Whether ``value`` holds only Python text, numbers, None, lists and dicts with text
    keys (what :func:`_plain` returns unchanged); a quick check, not deep for cycles."""
    t = type(value)
    if t is dict:
        if value and set(map(type, value)) != {str}:
            return False
        for v in value.values():
            if type(v) not in _PLAIN and not _is_plain(v):
                return False
        return True
    if t is list:
        return set(map(type, value)) <= _PLAIN or all(map(_is_plain, value))
    return t in _PLAIN


def _further(digest, user, seen, kept, extra):
    """Whether an answer of ``user`` is one the batch has not held yet (else a resend), and
    remember it."""
    if user in seen and kept[seen[user]] == digest:
        return False
    others = extra.setdefault(user, set())
    if digest in others:
        return False
    others.add(digest)
    return True


def _integral_float_id(rec):
    """The int a record's float user id equals (``5.0``), else ``None`` (also for a float
    of magnitude 2**53 or more, or a float32's 2**24, which names no integer exactly:
    2**53 + 1 reads 2**53)."""
    user = rec.get("user") if isinstance(rec, dict) else None
    if isinstance(user, (float, np.floating)) and math.isfinite(user) and \
            abs(user) < _exact_limit(np.asarray(user).dtype) and user == int(user):
        return int(user)
    return None


def _one_user(user):
    """What names one user (the same key, or an integer and its text: "5" is 5), as a
    value to look up: an integer id within 64 bits as its key, text as itself."""
    if type(user) is str:
        other = _retyped(user)
        if other is None:
            return user
        user = other
    if type(user) is int:   # (past 64 bits an integer is keyed as its text)
        return user % (1 << 64) if -(1 << 63) <= user < (1 << 64) else str(user)
    return _key(user)


def _key(user):
    """The node key of the single id ``user`` (as ids_to_keys reads it in any list)."""
    one = np.empty(1, dtype=object)
    one[0] = user
    return int(ids_to_keys(one)[0])


def _repeated_users_message(allowed):
    """The error for a ``users=`` that lists a user (a key) more than once, naming every
    repeated user (at most 10) with its positions."""
    keys = allowed.keys
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
    counts = np.diff(np.r_[starts, len(sk)])
    groups = sorted((order[s:s + c] for s, c in zip(starts, counts, strict=True) if c > 1),
                    key=lambda g: g[0])
    named = []
    for g in groups[:10]:
        ids = [allowed.ids[i] for i in g.tolist()]
        same = all(v == ids[0] and type(v) is type(ids[0]) for v in ids)
        where = ", ".join(map(str, g.tolist()))
        named.append(f"{ids[0]!r} (at positions {where})" if same else
                     f"{' and '.join(map(repr, ids))} (at positions {where}; one key)")
    more = f"; and {len(groups) - 10} more" if len(groups) > 10 else ""
    n = len(groups)
    return (f"users lists {n} user{'s' if n > 1 else ''} more than once: "
            f"{'; '.join(named)}{more}. A directory lists each enrolled user once (two ids "
            "of one key, such as -1 and 2**64 - 1, are one user: two answers under them "
            "would be kept as two users' reports). Drop the repeats.")


class _Users:
    """Which user an id names: the one place read_reports and received_graph decide it.

    ``ids`` are the users listed (read_reports' ``users=``, received_graph's nodes), ``own``
    the keys of users of their own that are not listed (received_graph's: users its
    population knows, ids a directory of the call lists beside their other spelling). An id
    names the user of its key, listed or own; else, with ``retype``, the user of its other
    spelling's key (the text "5" a relay writes for the int 5, and the reverse); else no
    one. By key, as the ledger and GraphData know users (-1 is 2**64 - 1, ``np.int64(5)``
    is 5), not by ``==`` (``True == 1``). ``keyed``: the keys of int and str ids keyed
    already, in bulk (keying ids one by one is slow).
    """

    def __init__(self, ids, own=frozenset(), keyed=None):
        self.ids = [plain_id(u) for u in ids.tolist()]
        self.keys = ids_to_keys(ids)
        self._row = {k: i for i, k in enumerate(self.keys.tolist())}
        # (a quicker way to most: an int or str equal to an int or str id is of its key)
        self._plain = {u: i for i, u in enumerate(self.ids) if type(u) in (int, str)}
        self.own = own.difference(self._row) if own else frozenset()
        self.keyed = keyed or {}

    def find(self, user, retype=True):
        """``(position, id)`` of the user ``user`` names (position ``None``: an own user),
        else ``None``."""
        if not (self._row or self.own):   # (no one to name)
            return None
        r = self._plain.get(user) if type(user) in (int, str) else None
        if r is None and retype and type(user) is str and not self.own:
            # (text "5" for the int user 5, without keying: text that no text id equals
            # is of another key only by a hash collision; not for ints: -1 is 2**64 - 1)
            r = self._plain.get(_retyped(user))
        if r is not None:
            return r, self.ids[r]
        found = self._of_key(user)
        if found is None and retype and (other := _retyped(user)) is not None:
            found = self._of_key(other)
        return found

    def _of_key(self, user):
        """``(position, id)`` of the user of ``user``'s key, listed or own, else ``None``."""
        k = self.keyed.get(user) if type(user) in (int, str) else None
        k = _key(user) if k is None else k
        if k in self._row:
            return self._row[k], self.ids[self._row[k]]
        return (None, user) if k in self.own else None

    def get(self, user, retype=True):
        """The position of the listed user that ``user`` names, else ``None``."""
        found = self.find(user, retype)
        return None if found is None else found[0]

    def name(self, user, retype=True):
        """The id of the user that ``user`` names (listed or own), else ``user``."""
        found = self.find(user, retype)
        return user if found is None else found[1]


def _sent_by(user, sender, users):
    """Whether a record's ``user`` is its authenticated ``sender``: the same key, or (a
    header read as text for integer ``users``) the user of ``users`` that the sender names
    in the other type."""
    if (type(user) is type(sender) and type(user) in (int, str) and user == sender) or \
            _key(user) == _key(sender):
        return True
    return users is not None and users.get(sender, retype=False) is None and \
        users.get(user, retype=False) is not None and \
        users.get(user, retype=False) == users.get(sender, retype=True)


def _user_of(rec):
    """A record's user id as a plain ``str`` or ``int`` (numpy's integers read as the equal
    int), or ``None`` when it is neither (a bool, a float, an array...)."""
    user = rec.get("user") if isinstance(rec, dict) else None
    if isinstance(user, (bool, np.bool_)):
        return None
    if isinstance(user, str):
        return str(user)
    if isinstance(user, numbers.Integral):
        user = int(user)
        if user.bit_length() > 64:   # (hashed as text: one too long for text is no id)
            try:
                str(user)
            except ValueError:
                return None
        return user
    return None


def _is_answer_id(value):
    return isinstance(value, str) and ANSWER_ID.fullmatch(value) is not None


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
    """A 64-bit digest of an answer: its answer id and report (the same as before refused
    answers were charged, so that a population pickled then knows its answers)."""
    text = repr(answer).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


def _new_digest(nonce, index):
    """The digest of an answer without an answer id: new at every read (never a resend)."""
    text = nonce + int(index).to_bytes(8, "little")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8, person=b"skldp-no-id").digest(),
                          "little")


def _raw_text(report):
    """A refused report as text: equal for a record sent again as it was."""
    def plain(v):
        if isinstance(v, _NotJSON):   # its whole text: two broken cells differ
            return ["not JSON text", v.text]
        if isinstance(v, np.ndarray):
            return v.tolist()
        return v.item() if isinstance(v, np.generic) else repr(v)
    try:
        return json.dumps(report, sort_keys=True, default=plain)
    except (TypeError, ValueError, RecursionError):   # keys of mixed types, deep nesting
        try:
            return repr(report)
        except (ValueError, RecursionError):   # (an int too long for text)
            return secrets.token_hex(8)   # cannot be compared: never a resend


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
        order, each by the id ``population`` knows it by (``5`` for a ``"5"`` it
        knows by the other type's id only: a relay that writes ids as text).
        Two ids of one user in the call's collections (``5`` and ``"5"``, or
        two ids of one key) are refused, nothing charged, unless ``population``
        knows each as its own user, or a directory (``users=``) lists both
        (by key: ``-1`` for ``2**64 - 1``): read the reports with ``users=``,
        or pass ``node_ids``. An id that
        read_reports read as its directory's other spelling is, where
        ``population`` knows it or the call names it (``node_ids``, or a
        directory that lists both), that user (refused if ``node_ids`` omit it).
        A node new to ``population`` whose other spelling it knows (``5``
        where it knows ``"5"``) is refused, nothing charged, unless a
        directory of the call lists both.
    budget : float or None, default=None
        Per-user cap of the graph's population. Reports that take a user above
        it raise :class:`BudgetExceededError` and build no graph, but they are
        charged all the same, with every other collection of the call: they were
        sent (the error states what the users spent in all; its ``population``
        is the population charged, to raise its budget and call again). Answers
        held for users who are not nodes of this graph (see ``population``) that
        take them above it are charged with a warning, and the graph is built.
    population : Population, GraphData or None, default=None
        The users' population (``simulated=False``), or a graph of it, when
        they already sent other collections: its ledger is charged, so the cap
        and :func:`skldp.accounting.privacy_report` count what they sent in
        every call. ``None``: a new population, whose ledger knows this call's
        reports only. Answers of users not in ``users=`` (refused as unknown
        users, in this call or earlier ones) are charged once their user is one of
        its users: a node of a graph built on it, or a user charged before.
    missing_features : {"error", "zero"}, default="error"
        A user without a feature report: an error, or a row of the decoded
        "no report" value (0 for HDS, the range's centre for the other numeric
        kinds: the feature carries no information about that user). Set-valued and
        GRR-FS reports have no such value: ``"zero"`` raises a ``ValueError`` for
        them, before anything is charged.
    missing_lists : {"warn", "empty", "error"}, default="warn"
        A user of the edge collection's directory without an adjacency list: read
        as an empty list (it reports no edge; its edges are still read from the
        lists of their other endpoints), with a warning that counts them, or
        silently (``"empty"``: the lists are known to be partial), or an error.

    Returns
    -------
    G : GraphData
        Features (or an empty matrix), adjacency (or ``None``), node ids.
    y : LabelReports or None
        Each user's received label, ``-1`` (``None`` for non-numeric classes)
        for users who sent none; ``None`` without ``labels``. Marked with the
        label collection (:class:`LabelReports`): a fit on ``y[sent]`` reads
        what they sent, not clean labels.
    """
    from .._graph_data import GraphData
    from ._deploy import mechanism_from_spec
    for argument, received in (("features", features), ("labels", labels), ("edges", edges)):
        _check_part(argument, received)
    if missing_lists not in ("warn", "empty", "error"):
        raise ValueError(f"missing_lists must be 'warn', 'empty' or 'error', got "
                         f"{missing_lists!r}.")
    # (its budget is set once every part is checked: a refusal leaves it as it was)
    population = _receiving_population(population, budget)
    # ids of several types (7 and "a") keep their types (np.asarray would make text of 7)
    ids = None if node_ids is None else _as_id_array(_id_sequence(node_ids))
    parts = [(name, r) for name, r in (("features", features), ("edges", edges),
                                        ("labels", labels)) if r is not None]
    # whom each id names (_Users): the user of its key (a node, a user the population knows
    # or one a directory of the call lists apart), else that of its other spelling's key
    position = _call_users([r for _, r in parts], population, ids)
    parts = [(name, _as_sent(r, position)) for name, r in parts]
    features, edges, labels = (dict(parts).get(k) for k in ("features", "edges", "labels"))
    if ids is None:
        source = features if features is not None else labels
        if source is None:
            raise ValueError("received_graph needs node_ids, or a feature or label collection "
                             "whose senders are the users.")
        ids = _as_id_array(_one_per_user(source, [r for _, r in parts], position))
        position = _Users(ids, position.own, position.keyed)
    keys = position.keys
    n = len(ids)
    if n == 0:
        raise ValueError("received_graph: no user.")
    if len(distinct(keys)) != n:
        from .._graph_data import duplicate_ids_message
        raise ValueError(duplicate_ids_message(ids.tolist(), keys))
    # a node new to the population that knows its other spelling (node_ids=[5], "5" known)
    # may be that person: refused, as GraphData refuses it, before anything is charged
    population._check_spellings(ids, keys, _listed_apart([r for _, r in parts]))
    # every part is checked before any is charged: a refusal charges nothing
    X, feature_origin = np.zeros((n, 0)), ("derived", "were not collected")
    if features is not None:
        X, feature_rows = _decoded_features(features, position, n, missing_features,
                                            mechanism_from_spec)
        feature_origin = ("reports", features.spec)
    A, adjacency_origin = None, ("derived", "were not collected")
    if edges is not None:
        A, edge_rows = _received_adjacency(edges, keys, position, missing_lists)
        adjacency_origin = ("reports", edges.spec)
    y = None
    if labels is not None:
        classes = np.asarray(labels.spec.public_state["classes"])
        label_rows = _rows_of(labels, position)
        numeric = np.issubdtype(classes.dtype, np.number)
        y = np.full(n, -1, dtype=classes.dtype) if numeric else np.full(n, None, dtype=object)
        pos = labels.reports["y"].astype(np.int64) if len(labels) else np.zeros(0, np.int64)
        y[label_rows] = classes[pos]
    if budget is not None and population.budget is None:
        population.set_budget(budget)
    refusals = []   # budget refusals: the reports are charged all the same (they were sent)
    if features is not None:
        charged = _receive(population, features.spec, keys[feature_rows], refusals)
        _charge_again(population, features, position, charged, refusals)
    if edges is not None:
        charged = _receive(population, edges.spec, keys[edge_rows], refusals)
        _charge_again(population, edges, position, charged, refusals)
    if labels is not None:
        charged = _receive(population, labels.spec, keys[label_rows], refusals, reports=pos)
        _charge_again(population, labels, position, charged, refusals)
    for _, received in parts:
        _hold(population, received, position)
    population._join(keys, ids)   # (GraphData would: before the held answers are charged)
    held = _charge_held(population, keys, ids, parts, refusals)
    _refuse(refusals, population, keys, [r.spec for _, r in parts] + held)
    G = GraphData(X, A, node_ids=ids, population=population)
    G._store.feature_origin = feature_origin
    G._store.adjacency_origin = adjacency_origin
    return G, (None if y is None else LabelReports(y, labels.spec.id))


def _receive(population, spec, keys, refusals, reports=None, charge_only=False):
    """Charge what the users sent (returns the users charged now). Reports that exceed the
    budget were sent all the same: they are charged, and the refusal is added to
    ``refusals`` (no graph is built), with the users it charged (``.keys``)."""
    try:
        return population.receive(spec, keys, reports=reports, charge_only=charge_only)
    except BudgetExceededError as e:
        new = population.receive(spec, keys, reports=reports, charge_only=charge_only,
                                 check_budget=False)
        cap = population.budget
        over = population.ledger.spent(keys) + population.ledger.central_epsilon > cap + _TOL
        # what it took them to: the call's other collections may add to it (see _refuse)
        error = BudgetExceededError(f"{spec.describe()} took {int(over.sum())} user(s) above "
                                    f"this population's budget of {cap:.4g} per user")
        error.__cause__, error.keys = e, np.asarray(keys, np.uint64)
        refusals.append(error)
        return new


def _refuse(refusals, population, keys, specs=()):
    """Raise the first budget refusal of a ``received_graph`` call, if any, with what the
    users it names spent once the whole call (``specs``: the collections it charged) was
    charged, or if users of the graph (``keys``) spent more than the budget before (reports
    refused earlier): the error holds the ``population`` charged (``error.population``), to
    raise its budget and retry."""
    cap = population.budget
    if not refusals and cap is not None:
        spent = population.ledger.spent(keys) + population.ledger.central_epsilon
        over = spent > cap + _TOL
        if over.any():
            error = BudgetExceededError(
                f"{int(over.sum())} user(s) of this graph have spent up to epsilon="
                f"{float(spent.max()):.4g}, above this population's budget of {cap:.4g} per "
                "user, in reports received earlier (charged, and refused then). No graph "
                "was built. If the users agreed to spend more, raise the budget "
                "(error.population.set_budget) and call again with "
                "population=error.population.")
            error.population = population
            raise error
    if refusals:
        # every answer of the call was charged (they were sent): state the totals, not the
        # first refusal's step alone
        named = distinct(np.concatenate([getattr(e, "keys", np.zeros(0, np.uint64))
                                          for e in refusals]))
        spent = population.ledger.spent(named) + population.ledger.central_epsilon
        over = spent > cap + _TOL
        charged = ", ".join({spec.id: spec.describe() for spec in specs}.values())
        error = BudgetExceededError(
            f"{_refusal(refusals[0])}. With every answer this call received charged "
            f"({charged}, further answers included), {int(over.sum())} user(s) have spent "
            f"up to epsilon={float(spent.max(initial=0.0)):.4g} in all, above this "
            f"population's budget of {cap:.4g} per user. The reports were received, so the "
            "ledger charges them (they were sent), but they are not used: no graph was "
            "built. If the users "
            "agreed to spend more, raise the budget (error.population.set_budget) and call "
            "again with population=error.population (what is charged now is not charged "
            "twice).")
        error.population = population
        raise error from refusals[0].__cause__ or refusals[0]


def _receiving_population(population, budget):
    """The population that ``received_graph`` charges: a new one, or the caller's (whose
    ``budget`` received_graph sets once it has checked every part)."""
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
    if budget is not None and population.budget is not None:
        if float(budget) != population.budget:
            raise ValueError(f"budget={budget!r}, but the population already has a budget of "
                             f"{population.budget:.4g} per user. Change it explicitly with "
                             "population.set_budget(...).")
    return population


def _check_part(argument, received):
    """Refuse reports passed as another part of the graph than their collection protects."""
    if received is None:
        return
    if not isinstance(received, ReceivedReports):
        raise TypeError(f"received_graph: {argument}= takes the reports read_reports returns, "
                        f"got {type(received).__name__}.")
    bad = [u for u in received.again if _user_of({"user": u}) is None]
    if bad:   # (read_reports keeps a string or an integer: one built by hand may not)
        raise ValueError(f"received_graph: {argument}= counts further answers (again) of "
                         f"{bad[0]!r:.40}, which is no user id (a string or an integer). "
                         "Nothing was charged.")
    protects = tuple(received.spec.protects)
    if argument not in protects:
        raise ValueError(f"received_graph: {argument}= expects the reports of a collection that "
                         f"protects {argument}, got those of {received.spec.id}, "
                         f"{received.spec.describe()}: pass them as {protects[0]}=.")


def _charge_again(population, received, position, charged, refusals):
    """Charge the answers of ``received``'s collection that are not used: those of this batch
    (``again``) and, from users who answered it in an earlier batch of ``population``, every
    answer that batch did not hold. ``charged`` are the users whose kept answer
    :meth:`Population.receive` charged now. The users who sent ``c`` of them are charged one
    collection of ``c`` times its epsilon, which the ledger adds to what they spent (above
    the budget too: the refusal is added to ``refusals``); what is charged is remembered at
    once, so that a retry after a refusal charges it no more."""
    users, owner, digests, known, is_kept = _answer_entries(received)
    # a node's, else (a user not in the graph whose records were all refused, still
    # charged) that of the user its id names: its own, or the one the population knows by
    # its other spelling (5 for "5"), as nodes and held answers are named (the same person,
    # else an over-charge: the safe side)
    ukeys = np.array([position.keys[r] if (r := position.get(plain_id(u))) is not None
                      else _key(position.name(plain_id(u))) for u in users], dtype=np.uint64)
    # users named two ways ("5" and 5, read without users=) are one user: one entry
    ukeys, first, inverse = np.unique(ukeys, return_index=True, return_inverse=True)
    users, owner = [users[i] for i in first.tolist()], inverse.ravel()[owner]
    ekeys = ukeys[owner]
    spec_id = received.spec.id
    now = is_kept & member(ekeys, charged)   # charged by receive: remembered with it
    population._remember_answers(spec_id, ekeys[now & known], digests[now & known])
    new = ~now & (~known | population._unseen_answers(spec_id, ekeys, digests))
    # one answer resent under both names of its user (5 and "5", now one entry): once
    _, once = np.unique(np.stack([ekeys, digests], axis=1), axis=0, return_index=True)
    repeat = np.ones(len(ekeys), bool)
    repeat[once] = False
    new &= ~(known & repeat)
    counts = np.bincount(owner[new], minlength=len(users))

    def why(n, named, c, cause):
        return (f"{n} user(s) ({named}) sent {c} further answer(s) each of collection "
                f"{spec_id} ({int(counts.sum())} further answers in all, with those of "
                "earlier batches this population received); each is charged its epsilon "
                f"again, and {cause}. Further answers come from devices that answered again, "
                "or from replays and impersonation (a record's user is what its sender "
                "wrote): check ReceivedReports.again, and read the reports with senders= (or "
                "set each record's user from its authenticated sender)")

    def remember(these):
        mine = new & known & member(owner, these)
        population._remember_answers(spec_id, ekeys[mine], digests[mine])

    _charge_further(population, received.spec, users, ukeys, counts, refusals, why, remember)


def _charge_further(population, spec, users, ukeys, counts, refusals, why, remember):
    """Charge user ``i`` (``users[i]``, key ``ukeys[i]``) ``counts[i]`` further answers of
    ``spec``: those who sent ``c`` of them one collection of ``c`` times its epsilon, which
    the ledger adds to what they spent (above the budget too: a refusal, its message
    ``why(n_users, named, c, cause)``, is added to ``refusals``); ``remember(these)`` keeps
    those answers once charged, so that a retry after a refusal charges them no more."""
    for c in distinct(counts[counts > 0]).tolist():
        these = np.flatnonzero(counts == c)
        refused = []
        _receive(population, further_answers_spec(spec, c), ukeys[these], refused,
                 charge_only=True)
        if refused:
            # name who sent them: a flood of forged records charges its victim, not its sender
            named = ", ".join(f"{users[i]!r:.40}" for i in these[:5]) + \
                (", ..." if len(these) > 5 else "")
            error = BudgetExceededError(why(len(these), named, c, _refusal(refused[0])))
            error.__cause__, error.keys = refused[0].__cause__, refused[0].keys
            refusals.append(error)
        remember(these)


def _hold(population, received, position):
    """Give ``population`` the answers of ``received`` from users not in its ``users=``;
    one a node of this graph (``position``) names in the other type ("5" for the node 5)
    is that node's, as read_reports with it in ``users=`` would have read it."""
    users = getattr(received, "_held_users", None)
    if users:
        rows = [position.get(u) for u in users]
        users = [u if r is None else position.ids[r] for u, r in zip(users, rows, strict=True)]
        # one no node names: held for its other type too (charged once, if it joins)
        rows = [i for i, r in enumerate(rows) if r is None and _retyped(users[i]) is not None]
        other = ids_to_keys(_as_id_array([_retyped(users[i]) for i in rows]))
        population._hold_answers(received.spec, ids_to_keys(_as_id_array(list(users))),
                                 received._held_digests, also=(rows, other))


def _charge_held(population, keys, ids, parts, refusals):
    """Charge the answers the population holds for users that were not in the directory
    (read_reports' ``users=``) once each is one of its users (:meth:`Population._join`:
    this graph's, ``keys`` with ids ``ids``, or an earlier graph's; or a user charged
    before). Users of this graph taken above the budget are a refusal (added to
    ``refusals``); others (not in this call's graph) are charged all the same, with a
    warning, and do not stop the graph of the others. Returns the specs charged."""
    charged = population._charge_held()
    if not charged:
        return []
    cap = population.budget
    name = {int(k): u for k, u in zip(keys.tolist(), ids.tolist(), strict=True)}
    for _, received in parts:   # the ids this call's held records named
        held = getattr(received, "_held_users", None) or ()
        if held:
            hkeys = ids_to_keys(_as_id_array(list(held))).tolist()
            name.update({k: u for k, u in zip(hkeys, held, strict=True) if k not in name})
    for spec, ukeys, counts in charged:
        if cap is None:
            continue
        over = population.ledger.spent(ukeys) + population.ledger.central_epsilon > cap + _TOL
        mine = member(ukeys, keys)
        for these, in_graph in ((over & mine, True), (over & ~mine, False)):
            if not these.any():
                continue
            named = ", ".join(f"{name.get(int(k), f'key {int(k):#018x}')!r:.40}"
                              for k in ukeys[these][:5].tolist()) + \
                (", ..." if these.sum() > 5 else "")
            why = (f"{int(these.sum())} user(s) ({named}) sent {int(counts[these].sum())} "
                   f"answer(s) of collection {spec.id} ({spec.describe()}) while not in the "
                   "directory (read_reports' users=), charged now that they are users of "
                   "this population, which took them above its budget of "
                   f"{cap:.4g} per user")
            if in_graph:
                error = BudgetExceededError(why)
                error.keys = ukeys[these]
                refusals.append(error)
            else:   # sent all the same; the graph of the others does not depend on them
                warnings.warn(f"{why}. They are not users of this graph, which is built. Answers "
                              "under the id of a user who is not in the directory may be "
                              "forged (a record's user is what its sender wrote).",
                              UserWarning, stacklevel=3)
    return [spec for spec, _, _ in charged]


def _answer_entries(received):
    """Every answer of ``received``, one entry each: ``(users, owner, digests, known,
    kept)``, the users (those with a kept report first, then those whose every record was
    refused), each answer's user (an index into ``users``), its digest, whether that is
    known (reports built by hand hold none: each such answer is new), and whether it is
    its user's kept answer."""
    users = list(received.users)
    index = {plain_id(u): i for i, u in enumerate(users)}
    for u in received.again:
        if plain_id(u) not in index:
            index[plain_id(u)] = len(users)
            users.append(u)
    n_kept = len(received.users)
    kept_d, f_users, f_d = _digests_of(received)
    if f_users is None:   # unknown: as many unknown answers as again counts
        f_users = [u for u, c in received.again.items() for _ in range(c)]
    owner = np.concatenate([np.arange(n_kept, dtype=np.int64),
                            np.asarray([index[plain_id(u)] for u in f_users], dtype=np.int64)])
    digests = np.concatenate([np.zeros(n_kept, np.uint64) if kept_d is None else kept_d,
                              np.zeros(len(f_users), np.uint64) if f_d is None else f_d])
    known = np.concatenate([np.full(n_kept, kept_d is not None),
                            np.full(len(f_users), f_d is not None)])
    is_kept = np.arange(len(owner)) < n_kept
    return users, owner, digests, known, is_kept


def _digests_of(received):
    """``(kept digests, further users, further digests)`` of ``received``, each ``None``
    where unknown (built by hand, changed since it was read, or pickled before the digests
    were kept): every such answer is then charged as new."""
    kept = getattr(received, "_kept_digests", None)
    f_users = getattr(received, "_further_users", None)
    f_d = getattr(received, "_further_digests", None)
    if kept is not None and len(kept) != len(received.users):
        kept = None
    if f_users is None or Counter(plain_id(u) for u in f_users) != \
            Counter({plain_id(u): c for u, c in received.again.items() if c > 0}):
        f_users, f_d = None, None
    return kept, f_users, f_d


def _refusal(error):
    """The numbers of a budget refusal, without its advice (which is for new collections)."""
    return str(error).split(" Nothing was sent.")[0].rstrip(".")


def _apart_keys(directory):
    """The keys of the ids ``directory`` (a :class:`_Users`) lists together with their other
    spelling (3 and "3": two users, each as the directory names it), usually none."""
    if not {int, str} <= set(map(type, directory.ids)):   # (else none: the quick way)
        return frozenset()
    pairs = [(u, o) for u in directory.ids if type(u) is str and (o := _retyped(u)) is not None]
    if not pairs:
        return frozenset()
    # keyed in two calls, not one per id (a 1M-user directory: 7.5 s -> under 1 s)
    others = ids_to_keys(_as_id_array([o for _, o in pairs]))
    listed = member(others, np.fromiter(directory._row, np.uint64, len(directory._row)))
    texts = ids_to_keys(_as_id_array([u for u, _ in pairs]))
    return frozenset(texts[listed].tolist() + others[listed].tolist())


def _listed_apart(parts):
    """The keys of the ids that a directory of ``parts`` (the collections of a call) lists
    beside their other spelling (3 and "3": two users)."""
    listed = set()
    for received in parts:
        keys = getattr(received, "_directory", None)
        if isinstance(keys, _Users):   # (pickled by an earlier version: the whole directory)
            keys = _apart_keys(keys)
        listed.update(keys if isinstance(keys, frozenset) else ())   # (older: a bool)
    return listed


def _call_users(parts, population, ids):
    """The :class:`_Users` of a received_graph call: ``ids`` listed (its nodes; ``None``:
    none yet), and as users of their own the ids that ``parts`` (its collections) name, as
    read, as sent or in the other spelling, that ``population`` knows or a directory of
    the call lists beside their other spelling (3 and "3": two users)."""
    listed = _listed_apart(parts)
    ids = np.zeros(0, np.int64) if ids is None else ids
    if not (listed or population._known()):   # (a new population knows no one)
        return _Users(ids)
    named = [plain_id(u) for r in parts for u in itertools.chain(
        r.users, r.again, getattr(r, "_held_users", None) or ())]
    sent = [u for r in parts for d in (getattr(r, "_kept_sent", None),
                                       getattr(r, "_further_sent", None))
            for u in (d or {}).values()]
    own, keyed = set(listed), {}

    def look_up(ids):   # (keyed at once, not one by one)
        keys = ids_to_keys(_as_id_array(ids))
        mine = population._known(keys) | member(keys, np.fromiter(listed, np.uint64))
        own.update(keys[mine].tolist())
        keyed.update((u, k) for u, k in zip(ids, keys.tolist(), strict=True)
                     if type(u) in (int, str))
        return mine.tolist()

    look_up(sent)
    # the other spelling is looked up where the id is no user of its own
    look_up([o for u, mine in zip(named, look_up(named), strict=True)
             if not mine and (o := _retyped(u)) is not None])
    return _Users(ids, own, keyed)


def _as_sent(received, users):
    """``received`` with each id that read_reports retyped to its directory's other spelling
    (a record of 3 read with users=["3"]) back as sent where that id, as sent, names one of
    ``users`` (a node, or a user of its own): a user of its own, named as read without
    users= (its node, or refused where no node names it), never the node of its other
    spelling."""
    kept = getattr(received, "_kept_sent", None) or {}
    further = getattr(received, "_further_sent", None) or {}
    kept = {i: u for i, u in kept.items() if users.find(u, retype=False) is not None}
    further = {j: u for j, u in further.items() if users.find(u, retype=False) is not None}
    if not (kept or further):
        return received
    out = copy.copy(received)   # (its arrays shared: only the ids change)
    out.users = [kept.get(i, u) for i, u in enumerate(received.users)]
    if further and received._further_users is not None:
        out.again = Counter(received.again)
        out._further_users = list(received._further_users)
        for j, u in further.items():
            out.again[out._further_users[j]] -= 1
            out.again[u] += 1
            out._further_users[j] = u
        out.again = +out.again   # (a user left with no further answer is none)
    return out


def _one_per_user(source, parts, users):
    """received_graph's users when no ``node_ids`` are given: those who sent ``source``, each
    by the id of its user (``users``, none listed: the user of its own it names, else
    itself). Refuses first, before anything is charged, two ids of one user (an int and its
    text, two ids of one key) across ``parts`` (the collections of the call) that are not
    each a user of its own, and two kept answers of one user in one part."""
    ids = list(dict.fromkeys(plain_id(u) for r in parts
                             for u in itertools.chain(r.users, r.again)))
    found = [users.find(u) for u in ids]
    named = [u if f is None else f[1] for u, f in zip(ids, found, strict=True)]
    own = np.array([f is not None for f in found], bool)
    name = dict(zip(ids, named, strict=True))
    if len({type(u) for u in ids}) > 1 or \
            len(distinct(ids_to_keys(_as_id_array(ids)))) < len(ids):
        # (else ids of one type and distinct keys: no id is another's spelling)
        key = dict(zip(ids, ids_to_keys(_as_id_array(named)).tolist(), strict=True))
        groups = {}
        for i, u in enumerate(named):
            groups.setdefault(_one_user(u), []).append(i)
        for m in groups.values():
            if len({key[ids[i]] for i in m}) > 1 and not own[m].all():
                _two_ids_of_one_user(ids[m[0]], ids[m[1]], parts)
        for received in parts:   # (one user's two kept answers)
            first = {}
            for u in map(plain_id, received.users):
                if key[u] in first:
                    _two_ids_of_one_user(first[key[u]], u, [received])
                first[key[u]] = u
    return [name[plain_id(u)] for u in source.users]


def _two_ids_of_one_user(a, b, parts):
    where = " and ".join(dict.fromkeys(
        f"collection {r.spec.id}" for r in parts
        if {a, b} & {plain_id(u) for u in itertools.chain(r.users, r.again)}))
    raise ValueError(
        f"users {a!r} and {b!r} of {where} are two ids of one user (an integer and its "
        "text, or two ids of one key) that the population does not know as two users: "
        "their answers may be one person's. Read the reports with users= (the directory: it "
        "names each user, and charges a user's further answers), or pass node_ids. Nothing "
        "was charged.")


def _rows_of(received, position):
    rows, by_row = [], {}
    for u in received.users:
        r = position.get(plain_id(u))
        if r is None:
            raise ValueError(f"user {u!r} sent a report of collection {received.spec.id} but "
                             "is not in node_ids; read the reports with users=node_ids. "
                             "Nothing was charged.")
        if r in by_row:   # (two ids of one user, each kept: ReceivedReports built by hand)
            raise ValueError(f"users {by_row[r]!r} and {u!r} of collection "
                             f"{received.spec.id} are one user of node_ids (an id and its "
                             "text, or two ids of one key): read the reports with "
                             "users=node_ids, which keeps one answer of that user and "
                             "charges the other. Nothing was charged.")
        by_row[r] = u
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
    if received.spec.kind.endswith(("SetValuedMechanism", "GRRFSMechanism")):
        # (before the centre is read: GRR-FS has no feature range)
        raise ValueError(f"{received.spec.kind} reports have no neutral value: drop the "
                         "users without a report from node_ids.")
    empty = 0.0 if received.spec.kind.endswith("HDSMechanism") else \
        (mech.feature_min_ + mech.feature_max_) / 2.0
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
