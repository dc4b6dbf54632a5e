"""The runs file of a study: one JSON record per line, appended by one writer."""

import json
import logging
import os
from pathlib import Path

__all__ = ["RunsFile", "RunsFileError", "load_runs"]

logger = logging.getLogger("skldp.experiments")


class RunsFileError(ValueError):
    """A runs file that cannot be used as it is (another study, a damaged line)."""


def _parse(path, text, study):
    records, seen = [], {}
    for lineno, line in enumerate(text.splitlines(), start=1):
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
        A line that is not a JSON record, or a record of another study; the
        message names the file and line.
    """
    path = Path(path)
    if not path.exists():
        return []
    return _parse(path, path.read_text(encoding="utf-8"), study)


class RunsFile:
    """Append-only JSON-lines store of a study's finished runs.

    Only the process that drives the sweep writes (workers return their
    records), each record in one ``write`` of a whole line followed by a
    flush and ``fsync``, so a killed sweep loses at most the line being
    written and never records a run twice (a key already present is skipped).

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
        self.records = load_runs(self.path, study)
        self._keys = {r["key"] for r in self.records}
        text = self.path.read_bytes() if self.path.exists() else b""
        self._needs_newline = bool(text) and not text.endswith(b"\n")

    def __contains__(self, key):
        return key in self._keys

    def __len__(self):
        return len(self.records)

    def append(self, record):
        """Append one record unless its key is already recorded.

        Parameters
        ----------
        record : dict
            A record with at least ``key``; ``study`` is set to this file's.

        Returns
        -------
        written : bool
            False when the key was already recorded (nothing written).
        """
        key = record["key"]
        if key in self._keys:
            return False
        record = {"study": self.study, **record}
        if record["study"] != self.study:
            raise RunsFileError(f"record of study {record['study']!r} written to the runs of "
                                f"{self.study!r}.")
        line = json.dumps(record, sort_keys=False) + "\n"
        if self._needs_newline:
            line = "\n" + line
            self._needs_newline = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        self._keys.add(key)
        self.records.append(record)
        return True
