"""The runs file of a study: one JSON record per line, appended by one writer."""

import json
import logging
import os
import threading
from pathlib import Path

__all__ = ["RunsFile", "RunsFileError", "load_runs"]

logger = logging.getLogger("skldp.experiments")


class RunsFileError(ValueError):
    """A runs file that cannot be used as it is (another study, a damaged line)."""


def _parse(path, text, study, first_line=1):
    records, seen = [], {}
    for lineno, line in enumerate(text.splitlines(), start=first_line):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RunsFileError(
                f"{path}:{lineno}: not a JSON record ({exc.msg}). The other lines are "
                "untouched; fix or delete this line (a line cut short by a killed writer "
                "can be deleted: its run is then done again).") from None
        if not isinstance(rec, dict) or "key" not in rec or "study" not in rec:
            raise RunsFileError(f"{path}:{lineno}: a record needs 'study' and 'key' fields.")
        if study is not None and rec["study"] != study:
            raise RunsFileError(
                f"{path}:{lineno}: record of study {rec['study']!r}, but this file is read "
                f"as the runs of study {study!r}. Use another results folder or name.")
        if not isinstance(rec.get("metrics"), dict):
            # a run without its scores would count as recorded (never run again) and yet
            # drop out of every table
            raise RunsFileError(
                f"{path}:{lineno}: record {rec['key']!r} has no 'metrics' dict. Fix or delete "
                "this line (its run is then done again).")
        key = rec["key"]
        if key in seen:
            # Never counted twice: keep the first record of a key.
            logger.warning("%s:%d: run %s already recorded on line %d; ignored", path,
                           lineno, key, seen[key])
            continue
        seen[key] = lineno
        records.append(rec)
    return records


def load_runs(path, study=None):
    """Read the records of a runs file (JSON lines), each key once.

    Parameters
    ----------
    path : str or path-like
        The ``<study>_runs.jsonl`` file.
    study : str or None, default=None
        When given, every record must belong to this study.

    Returns
    -------
    records : list of dict
        One record per run key (a repeated key keeps its first record, with
        a warning).

    Raises
    ------
    RunsFileError
        A line that is not a JSON record, a record without ``study``, ``key``
        or a ``metrics`` dict, or a record of another study; the message names
        the file and line.
    """
    path = Path(path)
    if not path.exists():
        return []
    return _parse(path, path.read_text(encoding="utf-8"), study)


class RunsFile:
    """Append-only JSON-lines store of a study's finished runs.

    Each record is appended in one ``write`` of a whole line, under an
    exclusive ``flock`` of the file and followed by ``fsync``, so a killed
    writer loses at most the line being written and processes that sweep the
    same study (each with its own ``RunsFile``) never interleave their lines. A
    key already recorded, by this process or another (:meth:`refresh` reads
    their new lines), is not written again.

    Parameters
    ----------
    path : str or path-like
        The runs file (created on the first record).
    study : str
        The study's name: every record of the file must carry it.

    Attributes
    ----------
    records : list of dict
        The records read at opening and appended since.
    """

    def __init__(self, path, study):
        self.path = Path(path)
        self.study = study
        self.records = []
        self._keys = set()
        self._offset = self._lines = 0
        self._lock = threading.RLock()   # a sweep may read it from joblib's dispatch thread
        self.refresh(partial=True)

    def __contains__(self, key):
        return key in self._keys

    def __len__(self):
        return len(self.records)

    def refresh(self, partial=False):
        """Read the lines appended since the last read (by any process).

        Parameters
        ----------
        partial : bool, default=False
            Also read a last line without its newline (at opening: a line cut
            short by a killed writer is then reported); otherwise such a line is
            left for later (another process may be writing it).

        Returns
        -------
        new : list of dict
            Records of keys not seen before.
        """
        with self._lock:
            return self._refresh(partial)

    def _refresh(self, partial):
        if not self.path.exists():
            return []
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        end = len(data) if partial else data.rfind(b"\n") + 1
        if end == 0:
            return []
        text = data[:end].decode("utf-8")
        new = [r for r in _parse(self.path, text, self.study, self._lines + 1)
               if r["key"] not in self._keys]
        self._offset += end
        self._lines += text.count("\n")
        for r in new:
            self._keys.add(r["key"])
            self.records.append(r)
        return new

    def append(self, record):
        """Append one record unless its key is already recorded.

        Parameters
        ----------
        record : dict
            A record with at least ``key`` and a ``metrics`` dict; ``study`` is
            set to this file's.

        Returns
        -------
        written : bool
            False when the key was already recorded (nothing written).
        """
        with self._lock:
            return self._append(record)

    def _append(self, record):
        import fcntl
        key = record["key"]
        if key in self._keys:
            return False
        if not isinstance(record.get("metrics"), dict):
            raise RunsFileError(f"record {key!r} has no 'metrics' dict; not written.")
        record = {"study": self.study, **record}
        if record["study"] != self.study:
            raise RunsFileError(f"record of study {record['study']!r} written to the runs of "
                                f"{self.study!r}.")
        line = (json.dumps(record, sort_keys=False) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)     # one writer at a time, across processes
            self.refresh()
            if key in self._keys:              # recorded by another process meanwhile
                return False
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line               # after a line cut short by a killed writer
            os.write(fd, line)
            os.fsync(fd)
            self._offset = size + len(line)
            self._lines += line.count(b"\n")
        finally:
            os.close(fd)                       # releases the lock
        self._keys.add(key)
        self.records.append(record)
        return True
