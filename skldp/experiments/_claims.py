"""Claims on runs, so that processes sweeping the same study share the work.

Before a run is dispatched, the process that drives the sweep claims it (its
workers never see the claims): a small file per run key in
``<results_dir>/<study>_claims/``, holding the driver's host, pid and start
time, and a token of the sweep (two sweeps of one process, in two threads, are
two claimants). A run is dispatched only by the sweep that got its claim; it
removes the claim once the run is recorded in the runs file (or has failed, or
is reported missing). Every claim operation holds an exclusive ``flock`` on the
folder's lock file, which the kernel releases when a process dies, so a
``SIGKILL`` never leaves the folder locked. A claim whose process is gone (same
host: its pid no longer runs, is a zombie, or runs another program) is stale and is taken
over; a claim from another host is taken over once it is ``STALE_AFTER``
seconds old, since its process cannot be checked from here. Its age is read on
one clock, the file server's: the claim file's time against that of the lock
file, touched under the lock, so that hosts whose clocks disagree still agree
on it (and it only grows). A claim is released only by its claimant (its token).
"""

import contextlib
import hashlib
import json
import os
import secrets
import socket
import time
from pathlib import Path

from ..utils._threads import _alive, _start_time

__all__ = ["RunClaims", "STALE_AFTER"]

#: Age in seconds (on the file server's clock) after which a claim made on another host
#: is taken over.
STALE_AFTER = 6 * 3600


class RunClaims:
    """The claim folder of one study's runs file, as one claimant (picklable).

    Each instance claims with its own token: another instance, even in this
    process, cannot take its claims while this process runs.

    Parameters
    ----------
    runs_path : str or path-like
        The study's runs file; the claims live beside it.
    """

    def __init__(self, runs_path):
        runs_path = Path(runs_path)
        stem = runs_path.name[:-len("_runs.jsonl")] if runs_path.name.endswith(
            "_runs.jsonl") else runs_path.stem
        self.folder = runs_path.parent / f"{stem}_claims"
        self.runs_path = runs_path
        self.token = secrets.token_hex(8)

    @contextlib.contextmanager
    def _locked(self):
        """Hold the folder's lock; yields the time now on the folder's file server."""
        import fcntl
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / ".lock", "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                # touched: the server dates it, as it dates the claim files (this host's
                # clock may be hours off theirs)
                os.utime(f.fileno())
                yield os.fstat(f.fileno()).st_mtime
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _path(self, key):
        return self.folder / (hashlib.sha1(key.encode()).hexdigest()[:20] + ".claim")

    def _read(self, key):
        try:
            return json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None

    def owner(self, key):
        """The live claim on ``key`` (a dict), or ``None``."""
        with self._locked() as now:
            return self._owner(key, now)

    def _owner(self, key, now):
        rec = self._read(key)
        if not isinstance(rec, dict):
            return None
        if rec.get("host") == socket.gethostname():
            return rec if _alive(int(rec.get("pid", -1)), rec.get("start")) else None
        try:
            age = now - self._path(key).stat().st_mtime
        except OSError:
            return None
        return rec if age < STALE_AFTER else None

    def acquire(self, key):
        """Claim ``key`` for this claimant; ``False`` when another live claimant holds it."""
        pid = os.getpid()
        rec = {"key": key, "host": socket.gethostname(), "pid": pid, "start": _start_time(pid),
               "token": self.token,
               "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        path = self._path(key)
        with self._locked() as now:
            held = self._owner(key, now)
            # the process alone is not the claimant: another sweep of it may hold the run
            if held is not None and not (held.get("host") == rec["host"]
                                         and held.get("pid") == pid
                                         and held.get("token") == self.token):
                return False
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(rec))
            os.replace(tmp, path)   # taken over if stale; whole or absent
        return True

    def release(self, key):
        """Remove this claimant's claim on ``key`` (after its run is recorded or has failed).

        A claim of another claimant (which took this one's over) is left as it is.
        """
        with self._locked():
            rec = self._read(key)
            if isinstance(rec, dict) and rec.get("token") == self.token:
                with contextlib.suppress(OSError):
                    self._path(key).unlink()
