"""The runs file of a study: one JSON record per line, appended by one writer at a time
(or rewritten whole, atomically)."""

import contextlib
import errno
import json
import logging
import os
import threading
from pathlib import Path

__all__ = ["RunsFile", "RunsFileError", "load_runs"]

logger = logging.getLogger("skldp.experiments")


class RunsFileError(ValueError):
    """A runs file that cannot be used as it is (another study, a damaged line)."""


def _identity_problem(rec):
    """What is wrong with the ``study`` and ``key`` of ``rec`` (a message), or None."""
    if not isinstance(rec, dict) or "key" not in rec or "study" not in rec:
        return "a record needs 'study' and 'key' fields."
    for name in ("study", "key"):
        if not isinstance(rec[name], str) or not rec[name]:
            return f"the record's {name!r} is {rec[name]!r}, not a non-empty string."
    # optional, but what summaries group by: of the type they read
    for name in ("dataset", "method", "split"):
        if name in rec and (not isinstance(rec[name], str) or not rec[name]):
            return (f"record {rec['key']!r}: its {name!r} is {rec[name]!r}, not a non-empty "
                    "string.")
    if "params" in rec and not isinstance(rec["params"], dict):
        return f"record {rec['key']!r}: its 'params' is {rec['params']!r}, not a dict."
    return None


def _metrics_problem(rec):
    """What is wrong with the ``metrics`` of ``rec`` (a message), or None.

    A record needs at least one metric, each a number and not NaN: a run without
    its scores would count as recorded (never run again) and yet drop out of
    every table. An infinite metric is a number (written ``Infinity``).
    """
    key, metrics = rec["key"], rec.get("metrics")
    if not isinstance(metrics, dict):
        return f"record {key!r} has no 'metrics' dict."
    if not metrics:
        return f"record {key!r} has no metric (its 'metrics' dict is empty)."
    for name, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"record {key!r}: metric {name!r} is {value!r}, not a number."
        if value != value:
            return f"record {key!r}: metric {name!r} is NaN, not a number."
    return None


_FIX = " Fix or delete this line (its run is then done again)."


def _parse(path, data, study, first_line=1):
    """The records of ``data`` (bytes: whole lines of a runs file), each key once."""
    records, seen = [], {}
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()   # after the last newline
    for lineno, raw in enumerate(lines, start=first_line):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RunsFileError(
                f"{path}:{lineno}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                f"{exc.start + 1}).{_FIX}") from None
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RunsFileError(
                f"{path}:{lineno}: not a JSON record ({exc.msg}). The other lines are "
                "untouched; fix or delete this line (a line cut short by a killed writer "
                "can be deleted: its run is then done again).") from None
        problem = _identity_problem(rec)
        if problem is not None:
            raise RunsFileError(f"{path}:{lineno}: {problem}{_FIX}")
        if study is not None and rec["study"] != study:
            raise RunsFileError(
                f"{path}:{lineno}: record of study {rec['study']!r}, but this file is read "
                f"as the runs of study {study!r}. Use another results folder or name.")
        problem = _metrics_problem(rec)
        if problem is not None:
            raise RunsFileError(f"{path}:{lineno}: {problem}{_FIX}")
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
        A line that is not UTF-8 text or not a JSON record, a record without
        ``study`` or ``key`` strings or without a ``metrics`` dict of at least
        one number (NaN is refused), a ``dataset``, ``method`` or ``split``
        that is not a string or ``params`` that is not a dict, or a record of
        another study; the message names the file
        and line.

    Notes
    -----
    A line that another process is still appending is left out (it holds the
    file's lock); a last line cut short when no process holds the lock (a
    killed writer) is reported. A file rewritten meanwhile
    (:meth:`RunsFile.rewrite` replaces it whole) is read as it was before or
    after, never a mix.
    """
    import fcntl
    path = Path(path)
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return []
    with f:
        try:
            # (not waiting for it: this process may hold the lock itself, in locked())
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            busy = False
        except BlockingIOError:
            busy = True
        data = f.read()
    if busy:   # a writer holds the file: its last line may be half written, left out
        data = data[:data.rfind(b"\n") + 1]
    return _parse(path, data, study)


def _ident(st):
    """The (device, inode) of an ``os.stat_result``: which file a path or descriptor is."""
    return st.st_dev, st.st_ino


def _read_all(fd):
    """The whole content of the file open as ``fd``."""
    chunks, offset = [], 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _write_all(fd, data):
    """Write all of ``data``: a write may take only part of it (a disk nearly full, a
    file-size limit); the next write then raises, or writes the rest."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n == 0:   # (no progress and no error: never loop forever)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[n:]


class RunsFile:
    """Append-only JSON-lines store of a study's finished runs.

    Each record is appended as a whole line, under an exclusive ``flock`` of
    the file and followed by ``fsync``, so a killed writer loses at most the
    line being written and processes that sweep the
    same study (each with its own ``RunsFile``) never interleave their lines. A
    key already recorded, by this process or another (:meth:`refresh` reads
    their new lines), is not written again. The file is opened under a shared
    ``flock``, so a line that another process is still writing is not taken
    for a damaged one; :meth:`locked` holds the exclusive lock while a page is
    written from the records. :meth:`rewrite` replaces the file whole under
    its lock (records run again under a new configuration, fingerprints added
    to old records); every ``RunsFile`` then reads the new file.

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
        self._ident = None               # (device, inode) of the file read: a rewrite changes it
        self._lock = threading.RLock()   # a sweep may read it from joblib's dispatch thread
        self._held = False               # within locked(): its exclusive flock is held
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
            Also read a last line without its newline, under the file's shared
            ``flock`` (at opening: a line cut short by a killed writer is then
            reported, never one that another process is still writing);
            otherwise such a line is left for later.

        Returns
        -------
        new : list of dict
            Records of keys not seen before.
        """
        with self._lock:
            return self._refresh(partial)

    def _refresh(self, partial):
        import fcntl
        if not self.path.exists():
            return []
        with open(self.path, "rb") as f:
            if partial and not self._held:
                # writers hold the exclusive lock until their line is whole: a last line
                # without its newline is then one that a killed writer cut short
                fcntl.flock(f, fcntl.LOCK_SH)
            ident = _ident(os.fstat(f.fileno()))
            # another file than the one read so far: rewritten whole (rewrite) by another
            # RunsFile; read again from its start
            rewritten = self._ident is not None and ident != self._ident
            offset, lines = (0, 0) if rewritten else (self._offset, self._lines)
            f.seek(offset)
            data = f.read()
        # (closing the file releases the lock)
        end = len(data) if partial else data.rfind(b"\n") + 1
        records = _parse(self.path, data[:end], self.study, lines + 1) if end else []
        known = self._keys
        if rewritten:
            self.records, self._keys = [], set()
        self._ident = ident
        self._offset, self._lines = offset + end, lines + data.count(b"\n", 0, end)
        new = []
        for r in records:
            if r["key"] not in self._keys:
                self._keys.add(r["key"])
                self.records.append(r)
                if not rewritten or r["key"] not in known:
                    new.append(r)
        return new

    def append(self, record):
        """Append one record unless its key is already recorded.

        Parameters
        ----------
        record : dict
            A record with at least a ``key`` string and a ``metrics`` dict of
            at least one number, none NaN; ``study`` is set to this file's.

        Returns
        -------
        written : bool
            False when the key was already recorded (nothing written).

        Raises
        ------
        RunsFileError
            A record that the file could not be read back with (see
            :func:`load_runs`); nothing is written.
        OSError
            The line could not be written whole (a full disk, a file-size
            limit); the file is cut back to what it held before.
        """
        with self._lock:
            return self._append(record)

    def _append(self, record):
        import fcntl
        if self._held:
            raise RuntimeError(f"{self.path}: append within locked() would wait for its own "
                               "lock; append before or after it.")
        record = {"study": self.study, **record}
        problem = _identity_problem(record)
        if problem is not None:
            raise RunsFileError(f"{problem[:-1]}; not written.")
        key = record["key"]
        if key in self._keys:
            return False
        problem = _metrics_problem(record)
        if problem is not None:
            raise RunsFileError(f"{problem[:-1]}; not written.")
        if record["study"] != self.study:
            raise RunsFileError(f"record of study {record['study']!r} written to the runs of "
                                f"{self.study!r}.")
        line = (json.dumps(record, sort_keys=False) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # one writer at a time, across processes
        fd = self._lock_current(os.O_RDWR | os.O_APPEND | os.O_CREAT, fcntl.LOCK_EX)
        try:
            self.refresh()
            if key in self._keys:              # recorded by another process meanwhile
                return False
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line               # after a line cut short by a killed writer
            try:
                _write_all(fd, line)
            except BaseException:
                # not recorded: no line cut short left for the next reader
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                raise
            os.fsync(fd)
            self._offset = size + len(line)
            self._lines += line.count(b"\n")
        finally:
            os.close(fd)                       # releases the lock
        self._keys.add(key)
        self.records.append(record)
        return True

    @contextlib.contextmanager
    def locked(self):
        """Hold the file's exclusive lock, with every record read.

        No process appends while it is held, so a page written within it from
        the records reflects the whole file; when several processes write the
        page of one runs file, the last one written is then up to date.

        Yields
        ------
        records : list of dict
            The records of the file (its lines appended by any process).

        Raises
        ------
        RuntimeError
            :meth:`append` within it (another ``RunsFile`` of the file, opened
            or appended to within it, would wait for it).
        """
        with self._lock:
            fd = self._open_to_lock()
            if fd is None:                 # nothing recorded yet
                yield list(self.records)
                return
            try:
                self._refresh(partial=False)
                self._held = True
                yield list(self.records)
            finally:
                self._held = False
                os.close(fd)               # releases the lock

    def _open_to_lock(self):
        """A descriptor of the file under its exclusive ``flock`` (None: no file yet)."""
        import fcntl
        try:
            return self._lock_current(os.O_RDWR, fcntl.LOCK_EX)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            # a file that no one can append to (writers open it for writing): a shared
            # lock keeps out a writer with other rights all the same
            return self._lock_current(os.O_RDONLY, fcntl.LOCK_SH)

    def _lock_current(self, flags, lock):
        """A descriptor of the file that the path names once ``lock`` is held on it
        (None: no file, without ``O_CREAT``).

        A rewrite replaces the file under its lock: a process that opened the file
        before and waited for the lock then holds the replaced one, which no one reads
        any more; it opens the path again.
        """
        import fcntl
        while True:
            try:
                fd = os.open(self.path, flags, 0o644)
            except FileNotFoundError:
                return None
            try:
                fcntl.flock(fd, lock)
                try:
                    now = _ident(os.stat(self.path))
                except FileNotFoundError:
                    now = None
                if now == _ident(os.fstat(fd)):
                    return fd
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)

    def rewrite(self, edit):
        """Rewrite the file whole, with ``edit`` applied to each record.

        The new file is written beside it, synced and renamed over it while the
        file's exclusive lock is held: a process killed at any moment leaves the
        old file or the new one, every line whole; readers see one or the other
        (a :class:`RunsFile` of another process reads the new one from its start,
        an appender waiting for the lock appends to the new one).

        Parameters
        ----------
        edit : callable
            ``edit(record)``: the record itself to keep its line byte for byte, a
            new dict to write in its place, or None to drop the line.

        Returns
        -------
        changed : int
            Lines replaced or dropped (0: the file is left as it is).

        Raises
        ------
        RunsFileError
            A damaged line (see :func:`load_runs`); nothing is rewritten.
        OSError
            The file cannot be replaced (another user's, in a folder this
            process cannot write); it is left as it is.
        """
        import fcntl
        with self._lock:
            if self._held:
                raise RuntimeError(f"{self.path}: rewrite within locked() would wait for its "
                                   "own lock; rewrite before or after it.")
            fd = self._lock_current(os.O_RDWR, fcntl.LOCK_EX)
            if fd is None:
                return 0
            try:
                changed = self._rewrite(fd, edit)
            finally:
                os.close(fd)                   # releases the lock (of the file replaced)
            self._refresh(partial=False)       # (a new file: read from its start)
            return changed

    def _rewrite(self, fd, edit):
        from ..utils._atomic import replace_file
        data = _read_all(fd)
        _parse(self.path, data, self.study)    # a damaged line: reported, nothing rewritten
        lines = data.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()
        out, changed = [], 0
        for raw in lines:
            rec = json.loads(raw) if raw.strip() else None
            new = raw if rec is None else edit(rec)
            if new is rec or new is raw:
                out.append(raw)
                continue
            changed += 1
            if new is not None:
                record = {"study": self.study, **new}
                problem = _identity_problem(record) or _metrics_problem(record)
                if problem is not None:
                    raise RunsFileError(f"{problem[:-1]}; nothing rewritten.")
                out.append(json.dumps(record, sort_keys=False).encode("utf-8"))
        if not changed:
            return 0
        text = b"".join(line + b"\n" for line in out)

        def write(tmp):
            tmp_fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                _write_all(tmp_fd, text)
                os.fsync(tmp_fd)               # the lines before the rename
            finally:
                os.close(tmp_fd)

        target = os.path.realpath(self.path)
        if not replace_file(target, write, like=os.fstat(fd)):
            raise OSError(errno.EPERM, f"{self.path}: another user's file, which this process "
                                       "cannot replace; it is left as it is")
        with contextlib.suppress(OSError):     # the rename itself on disk
            dir_fd = os.open(os.path.dirname(target), os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        return changed
