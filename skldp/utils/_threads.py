"""Thread pools sized from the CPUs this process may use, shared with its neighbours.

torch and the BLAS libraries each start one thread per CPU they see. Two
processes on the same CPUs then run twice as many busy threads as there are
cores, and spinning OpenMP threads make each run up to ten times slower (the
LPGNN study on Cora on 2 cores: 0.51 s per run alone, 5.1 s beside a second
identical process). The share of a process is

* ``SKLDP_NUM_THREADS`` when it is set (the user's word);
* else the CPUs it may use (its affinity mask, and the CPU quota of its
  container, ``cpu.max`` of cgroup v2) divided among the skldp processes that
  declared work on those CPUs (:func:`share_cpus`, which a study run does),
  at most ``OMP_NUM_THREADS`` when that is set (joblib's loky workers, Dask and
  Ray workers set it to their share of the machine).

:func:`size_thread_pools` applies it to torch (``torch.set_num_threads``) and,
through threadpoolctl, to the BLAS and OpenMP pools of numpy and scipy.

Sizing covers skldp's own processes; load from anything else (other programs,
other users) still meets OpenMP threads that spin while they wait for work.
:func:`passive_waiting` makes them sleep instead (``OMP_WAIT_POLICY=PASSIVE``),
which ``python -m skldp reproduce`` does for itself and its workers (measured
figures: the user guide's Scaling page).
"""

import contextlib
import itertools
import json
import os
import tempfile
from numbers import Integral

__all__ = ["available_cpus", "thread_share", "size_thread_pools", "share_cpus",
           "passive_waiting", "ENV_NUM_THREADS"]

ENV_NUM_THREADS = "SKLDP_NUM_THREADS"


def _check_count(value, name, none=False):
    """``value`` as an int >= 1 (a bool, a float or a string is refused, not truncated)."""
    if isinstance(value, Integral) and not isinstance(value, bool) and value >= 1:
        return int(value)
    raise ValueError(f"{name} must be an int >= 1{' or None' if none else ''}, got {value!r}.")


def _affinity():
    try:
        return set(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return set(range(os.cpu_count() or 1))


def _cgroup_quota(root="/sys/fs/cgroup"):
    """CPUs allowed by the cgroup v2 quota (``cpu.max``: ``quota period``), or None."""
    try:
        with open(os.path.join(root, "cpu.max")) as f:
            quota, period = f.read().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    try:
        return max(1, int(int(quota) // int(period)))
    except (ValueError, ZeroDivisionError):
        return None


def available_cpus(cgroup_root="/sys/fs/cgroup"):
    """CPUs this process may use: its affinity mask, capped by its container's quota.

    Parameters
    ----------
    cgroup_root : str, default="/sys/fs/cgroup"
        Where the process's cgroup v2 files are (its ``cpu.max`` holds the quota).

    Returns
    -------
    int
        At least 1.
    """
    n = len(_affinity())
    quota = _cgroup_quota(cgroup_root)
    return max(1, min(n, quota) if quota else n)


# ------------------------------------------------------------- the registry
def _registry():
    path = os.path.join(tempfile.gettempdir(), f"skldp-cpus-{os.getuid()}")
    os.makedirs(path, exist_ok=True)
    return path


def _stat(pid):
    """The fields of ``/proc/<pid>/stat`` after the command name (the state first)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def _start_time(pid):
    """The start time of process ``pid`` (clock ticks since boot), or None if unknown."""
    try:
        return _stat(pid)[19]
    except (OSError, IndexError):
        return None


def _alive(pid, start):
    """Whether process ``pid`` runs, and is the one that started at ``start`` (if known).

    On Linux, ``/proc`` tells: a zombie (killed, not yet reaped by its parent;
    state Z or X) is dead, though ``kill(pid, 0)`` still finds it, and a reused
    pid with another start time is another process. Where its ``/proc`` entry
    cannot be read (no ``/proc``, or one mounted with ``hidepid`` that hides
    other users' processes) only ``kill(pid, 0)`` tells.
    """
    if pid <= 0:
        return False   # (kill(-1, 0) would ask about every process)
    try:
        fields = _stat(pid)
        return fields[0] not in ("Z", "X") and (start is None or fields[19] == start)
    except (OSError, IndexError):
        pass   # absent or hidden (hidepid: another user's live process): ask the kernel
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - another user's pid: alive
        return True
    return True


def _registered():
    """Live entries ``(pid, weight, cpus)`` of the registry; stale ones are removed."""
    out = []
    folder = _registry()
    for name in os.listdir(folder):
        if not name.endswith(".json"):
            continue
        path = os.path.join(folder, name)
        try:
            with open(path) as f:
                rec = json.load(f)
            pid = int(rec["pid"])
            weight, cpus = rec.get("weight", 1), set(rec.get("cpus", []))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue   # being written, or not ours
        if isinstance(weight, bool) or not isinstance(weight, int) or weight < 1:
            continue   # not written by share_cpus (a whole number >= 1): not ours
        if _alive(pid, rec.get("start")):
            out.append((pid, weight, cpus))
        else:
            with contextlib.suppress(OSError):
                os.remove(path)
    return out


_CALLS = itertools.count()   # (next() on it is atomic: calls from threads get their own)


@contextlib.contextmanager
def share_cpus(weight=1):
    """Declare that this process runs ``weight`` jobs at once on its CPUs.

    While the block runs, other skldp processes on the same CPUs count it when
    they size their thread pools (:func:`thread_share`), and so does this one;
    blocks open at once in one process (two sweeps in two threads) add up.
    A process killed inside the block leaves a file that the others recognise
    as stale (its process is gone) and remove.

    Parameters
    ----------
    weight : int, default=1
        Jobs run at once by this process (e.g. ``n_jobs`` workers of a sweep).
    """
    weight = _check_count(weight, "weight")
    pid = os.getpid()
    # a file per call: two calls of one process (two sweeps in two threads) each count
    path = os.path.join(_registry(), f"{pid}-{next(_CALLS)}.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"pid": pid, "start": _start_time(pid), "weight": weight,
                   "cpus": sorted(_affinity())}, f)
    os.replace(tmp, path)   # whole or absent, never half written
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.remove(path)


def thread_share():
    """Threads this process should give torch and BLAS now.

    Returns
    -------
    int
        ``SKLDP_NUM_THREADS`` if set; else :func:`available_cpus` divided among
        the jobs declared with :func:`share_cpus` on overlapping CPUs (this
        process counted once unless it, or the process that started it,
        declared its own), at most ``OMP_NUM_THREADS`` if set; at least 1.
    """
    env = os.environ.get(ENV_NUM_THREADS, "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"{ENV_NUM_THREADS} must be a positive integer, got {env!r}.")
        return n
    cpus = available_cpus()
    mine = _affinity()
    entries = _registered()
    jobs = sum(w for _, w, c in entries if not c or c & mine)
    pids = {p for p, _, _ in entries}
    if os.getpid() not in pids and os.getppid() not in pids:
        jobs += 1
    n = max(1, cpus // max(1, jobs))
    cap = os.environ.get("OMP_NUM_THREADS", "").strip()
    if cap.isdigit() and int(cap) >= 1:
        n = min(n, int(cap))
    return n



#: A study run on a graph of fewer nodes runs on one thread (:func:`run_threads`).
SMALL_GRAPH_NODES = 5000


def run_threads(n_nodes):
    """Threads for one study run on a graph of ``n_nodes`` nodes.

    :func:`thread_share`, but one thread on a graph of fewer than
    :data:`SMALL_GRAPH_NODES` nodes: its operations are too small for a second
    thread to gain what waking it costs (measured on the user guide's Scaling
    page). ``SKLDP_NUM_THREADS``, when set, is kept whatever the graph.

    Parameters
    ----------
    n_nodes : int
        Nodes of the run's graph.

    Returns
    -------
    int
    """
    share = thread_share()
    if os.environ.get(ENV_NUM_THREADS, "").strip():
        return share
    return 1 if n_nodes < SMALL_GRAPH_NODES else share


def size_thread_pools(n=None):
    """Set torch's and the BLAS/OpenMP pools' threads to ``n`` (default :func:`thread_share`).

    Cheap when nothing changes (a study calls it before every run).

    Parameters
    ----------
    n : int or None, default=None
        Threads; ``None`` takes :func:`thread_share`.

    Returns
    -------
    int
        The number of threads set.
    """
    n = thread_share() if n is None else _check_count(n, "n", none=True)
    import torch
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    if _APPLIED.get("blas") != n:   # (inspecting the loaded libraries costs ~20 ms)
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover - a dependency of scikit-learn
            return n
        threadpool_limits(limits=n)
        _APPLIED["blas"] = n
    return n


_APPLIED = {}


@contextlib.contextmanager
def torch_threads(n):
    """torch's intra-op threads set to ``n`` inside the block, restored after it.

    torch keeps the count per thread: it is set in the calling thread, and
    threads started inside the block (a pool of column blocks) take it; each
    thread that enters the block restores its own count.

    Parameters
    ----------
    n : int
        Threads (>= 1).
    """
    import torch
    before = torch.get_num_threads()
    if before != n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if before != n:
            torch.set_num_threads(before)


def passive_waiting():
    """Make OpenMP threads sleep while they wait (``OMP_WAIT_POLICY=PASSIVE``), if unset.

    Must run before torch (or any OpenMP library) is imported to take effect in
    this process; processes started afterwards (joblib's workers) inherit it.
    A value the user set is kept.

    Returns
    -------
    bool
        Whether this process's OpenMP threads will wait passively.
    """
    import sys
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    passive = os.environ["OMP_WAIT_POLICY"].upper() == "PASSIVE"
    return passive and "torch" not in sys.modules
