"""Run a study: resumable, parallel through joblib (loky, Dask or Ray), one writer."""

import contextlib
import logging
import math
import numbers
import os
import pickle
import platform
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..utils._hashing import content_hash
from ..utils._threads import run_threads, share_cpus, size_thread_pools
from ._cache import GraphCache
from ._claims import RunClaims
from ._fingerprint import PARTS, changed_parts, run_fingerprint
from ._runs import RunsFile, RunsFileError
from ._study import RunContext, Study, fit_and_score

__all__ = ["run_study", "SweepResult", "parallel_backend", "BACKENDS", "StaleRunsError",
           "run_fingerprints", "fingerprint_legacy_runs"]

logger = logging.getLogger("skldp.experiments")

BACKENDS = ("loky", "threading", "sequential", "dask", "ray")

# Per-process state of a worker: datasets loaded once, method inputs built once.
_DATA = {}
_METHOD_DATA = {}
_LOADS = {}  # dataset -> times this process loaded it (a sweep should load it once)


@dataclass
class SweepResult:
    """What :func:`run_study` did.

    Attributes
    ----------
    runs_file : pathlib.Path
        The study's runs file.
    records : list of dict
        Every record of the study (earlier ones included).
    done : list of str
        Keys of the runs finished by this call.
    skipped : list of str
        Keys already recorded before this call (not run again).
    failed : dict of str -> str
        Keys of runs that raised, with the error (not recorded; run again
        next time).
    missing : list of str
        Keys of runs lost with a worker that died, after the retries (not
        recorded; run again next time).
    elsewhere : list of str
        Keys of runs that another sweep of the same study had claimed or
        recorded when this one came to them (not run here), or recorded while
        this one ran them (its result is not recorded).
    remaining : list of str
        Keys of runs left for a later call by ``max_runs`` (not started).
    redone : list of str
        Keys whose records were made under another configuration and were
        dropped to be run again (``redo_changed=True``).
    legacy : list of str
        Keys recorded without a configuration fingerprint (before skldp wrote
        one), taken as they are.
    fingerprints : dict of str -> dict or None
        The configuration fingerprint of each run of the sweep (None where its
        estimator could not be built).
    fingerprint_failures : dict of str -> str
        Why a run has no fingerprint, by key; such a run is recorded without
        one, with a ``RuntimeWarning``.
    wall_s : float
        Wall time of this call.
    """

    runs_file: Path
    records: list = field(default_factory=list)
    done: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    failed: dict = field(default_factory=dict)
    missing: list = field(default_factory=list)
    elsewhere: list = field(default_factory=list)
    remaining: list = field(default_factory=list)
    redone: list = field(default_factory=list)
    legacy: list = field(default_factory=list)
    fingerprints: dict = field(default_factory=dict)
    fingerprint_failures: dict = field(default_factory=dict)
    wall_s: float = 0.0


class StaleRunsError(RunsFileError):
    """Recorded runs made under another configuration than the study's now."""


def _load(dataset):
    if dataset not in _DATA:
        from ..datasets import load_dataset
        bunch = load_dataset(dataset)
        _DATA[dataset] = (bunch.data, np.asarray(bunch.target))
        _LOADS[dataset] = _LOADS.get(dataset, 0) + 1
    return _DATA[dataset]


def _method_input(study, spec):
    G, y = _load(spec.dataset)
    method = study.methods[spec.method]
    if method.data is None:
        return G, y
    config = dict(study.configs.get(spec.dataset, {}))
    # a study declared again under the same name (a notebook cell run twice) may bring
    # another data function or config: their content is part of the key (not the function
    # object: a worker receives a new copy of a script's function with each task)
    try:
        content = content_hash((method.data, config))
    except (pickle.PicklingError, TypeError):   # (a lock in a closure: by name, as before)
        content = None
    key = (study.name, spec.dataset, spec.method, content)
    if key not in _METHOD_DATA:
        out = method.data(G, y, config)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            # (unpacked, it failed as "too many values to unpack", naming no method)
            raise ValueError(f"Study {study.name!r}, method {spec.method!r}: its data "
                             f"function must return a pair (G, y), got "
                             f"{type(out).__name__}"
                             + (f" of length {len(out)}" if isinstance(out, (tuple, list))
                                else "")
                             + ".")
        _METHOD_DATA[key] = out
    return _METHOD_DATA[key]


def build_estimator(study, spec, G=None):
    """The unfitted estimator of one run (factory, then the grid values).

    Parameters
    ----------
    study : Study
        The study.
    spec : RunSpec
        The run.
    G : GraphData or None, default=None
        The method's input graph (loaded when ``None``).

    Returns
    -------
    estimator : estimator
    """
    if G is None:
        G, _ = _method_input(study, spec)
    params = spec.param_dict
    ctx = RunContext(spec.dataset, dict(study.configs.get(spec.dataset, {})), spec.seed,
                     params, G.shape[0] if not hasattr(G, "n_nodes") else G.n_nodes,
                     G.shape[1])
    est = study.methods[spec.method].factory(ctx)
    if params:
        valid = est.get_params(deep=True)
        unknown = sorted(set(params) - set(valid))
        if unknown:
            raise ValueError(
                f"Study {study.name!r}, method {spec.method!r}: grid key(s) {unknown} are not "
                f"parameters of its estimator ({type(est).__name__}); valid names include "
                f"{sorted(k for k in valid if '__' in k)[:12]}.")
        est.set_params(**params)
    return est


def run_fingerprints(study, specs=None, *, failures=None):
    """The configuration fingerprint of each run: what its record must carry to count as
    one of the study's runs now.

    Each run's estimator is built (not fitted) on its method's input, which is
    loaded once per dataset; see the fingerprint module for what a fingerprint holds.

    Parameters
    ----------
    study : Study
        The study.
    specs : list of RunSpec or None, default=None
        The runs (all of the study's by default).
    failures : dict or None, default=None
        If given, filled with run key -> why that run has no fingerprint.

    Returns
    -------
    fingerprints : dict of str -> dict or None
        Run key -> fingerprint; None where the estimator cannot be built (the
        run then fails in its worker, as it would have).
    """
    specs = study.runs() if specs is None else specs
    memo, out = {}, {}
    for spec in specs:
        try:
            G, _ = _method_input(study, spec)
            out[spec.key] = run_fingerprint(study, spec, build_estimator(study, spec, G), memo)
        except Exception as exc:   # noqa: BLE001 - the run reports it where it runs
            logger.debug("run %s: no fingerprint (%r)", spec.key, exc)
            out[spec.key] = None
            if failures is not None:
                failures[spec.key] = f"{type(exc).__name__}: {exc}"
    return out


def _warn_unfingerprinted(key, reason):
    """A run recorded as legacy: no later change of its configuration would be found."""
    warnings.warn(f"run {key} is recorded without a configuration fingerprint (before the "
                  f"sweep its estimator could not be built: {reason}): a later change of "
                  f"its configuration will not be found. Fix the cause, then stamp it "
                  f"with fingerprint_legacy_runs.", RuntimeWarning, stacklevel=2)


def _with_fingerprint(record, fingerprint):
    """``record`` with its ``fingerprint`` after its ``params`` (None: as it is)."""
    if fingerprint is None:
        return record
    out = {}
    for name, value in record.items():
        if name != "fingerprint":
            out[name] = value
        if name == "params":
            out["fingerprint"] = fingerprint
    out.setdefault("fingerprint", fingerprint)
    return out


def _is_stale(record, fingerprints):
    """Whether ``record`` was made under another configuration than its run's now (a
    record without a fingerprint is legacy: taken as it is)."""
    now = fingerprints.get(record["key"])
    return "fingerprint" in record and now is not None and record["fingerprint"] != now


def _stale_message(study, stale, n_recorded, fingerprints):
    """The error of a sweep that finds stale records: how many, one of them and what
    changed, and the way out."""
    spec, rec = stale[0]
    parts = changed_parts(rec["fingerprint"], fingerprints[spec.key])
    what = "; ".join(PARTS[p] for p in parts) or "its fingerprint"
    now = []
    if "estimator" in parts:
        text = " ".join(repr(build_estimator(study, spec)).split())
        now.append(f"the estimator is now {text[:300]}{'...' if len(text) > 300 else ''}")
    if "config" in parts:
        now.append(f"configs[{spec.dataset!r}] is now {study.configs.get(spec.dataset, {})!r}")
    return (f"Study {study.name!r}: {len(stale)} of the {n_recorded} recorded runs of this "
            f"sweep were made under another configuration than the study's now, so their "
            f"results are not its results (e.g. run {spec.key!r}: changed: {what}"
            + (f"; {'; '.join(now)}" if now else "") + "). Nothing was run. To run them "
            "again, their new records replacing these, add --redo-changed (python -m skldp "
            "reproduce) or pass redo_changed=True to run_study; or restore the study's "
            "previous configuration.")


def fingerprint_legacy_runs(study, results_dir="results"):
    """Add its configuration fingerprint to each record of ``study`` that has none.

    For records written before skldp fingerprinted runs, by the study as it is
    now (its pages regenerate from them unchanged): they then count as its runs
    with the same certainty as new ones. Records of keys that are not among the
    study's runs are left as they are. The runs file is rewritten whole, under
    its lock (:meth:`RunsFile.rewrite`); a second call changes nothing.

    Parameters
    ----------
    study : Study
        The study, with the datasets, seeds and grid its records were made with.
    results_dir : str or path-like, default="results"
        Folder of the runs file.

    Returns
    -------
    counts : dict of str -> int
        ``"stamped"`` (fingerprints added now), ``"fingerprinted"`` (records
        that had one), ``"outside"`` (records of keys that are not the study's
        runs, left without one).
    """
    runs_file = RunsFile(Path(results_dir) / f"{study.name}_runs.jsonl", study.name)
    fingerprints = run_fingerprints(study)
    counts = {"stamped": 0, "fingerprinted": 0, "outside": 0}

    def stamp(rec):
        if "fingerprint" in rec:
            counts["fingerprinted"] += 1
            return rec
        if fingerprints.get(rec["key"]) is None:
            counts["outside"] += 1
            return rec
        counts["stamped"] += 1
        return _with_fingerprint(rec, fingerprints[rec["key"]])

    runs_file.rewrite(stamp)
    return counts


def _privacy(est, G=None):
    """What the run's users spent: their ledger when the run has users (a GraphData, new
    for each run), else what the fitted estimator's private steps lead to. The ledger also
    knows what no step holds: raw features read in the clear by a server step (inf)."""
    from .. import GraphData
    from ..accounting import privacy_report
    try:
        rep = privacy_report(G if isinstance(G, GraphData) else est)
    except Exception as exc:  # pragma: no cover - report must not lose a finished run
        return {"error": repr(exc)}, None
    central = rep.central
    out = {"local_epsilon": float(rep.local_epsilon)}
    if central:
        out["central_epsilon"] = float(sum(s.epsilon for s in central))
        out["central_delta"] = float(sum(s.delta for s in central))
    return out, float(rep.local_epsilon)


def _load_average():
    """The 1-minute load average of the machine (None where unknown)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):  # pragma: no cover - not on every platform
        return None


def _peak_rss_mb():
    """The process's resident-memory high-water mark in MiB (None where unknown)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # KiB on Linux


def _info(est):
    final = est[-1] if hasattr(est, "steps") else est
    n_iter = getattr(final, "n_iter_", None)
    return {} if n_iter is None else {"n_iter": int(np.max(n_iter))}


def _split(split, y, spec):
    """The masks of a run: ``split(y, seed)``, with ``dataset=`` if the split takes it."""
    import inspect
    try:
        takes_dataset = "dataset" in inspect.signature(split).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        takes_dataset = False
    if takes_dataset:
        return split(y, spec.seed, dataset=spec.dataset)
    return split(y, spec.seed)


def _forget_run(spec):
    """Drop the whole-graph results this run memoised on the process's loaded graph.

    Runs of a sweep differ in their collections, so one run's reports are never
    another's (the GraphCache is what shares steps across runs). Kept, they would
    hold up to the memo's byte cap per process, and loky restarts a worker whose
    memory grew by more than 300 MB after its first task, which loads the graph
    again (16 workers for 30 Facebook runs before this).
    """
    graphs = [_DATA[spec.dataset][0]] if spec.dataset in _DATA else []
    graphs += [G for (_, dataset, *_), (G, _) in _METHOD_DATA.items() if dataset == spec.dataset]
    for G in graphs:
        store = getattr(G, "_store", None)
        if store is not None:
            store._memo.clear()


def _run_one(study, spec, cache):
    """Run one setting in this process and return its record (or an error record)."""
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        G, y = _method_input(study, spec)
        # this process's share of the CPUs, now (other sweeps may have started or
        # ended), or one thread on a small graph
        # (a method's input may be a sparse matrix, whose len() raises)
        threads = size_thread_pools(run_threads(
            G.n_nodes if hasattr(G, "n_nodes") else G.shape[0] if hasattr(G, "shape")
            else len(G)))
        # Each run is its own deployment: new simulated users, an empty ledger, so that
        # eps_spent is what this run's users sent. (A method's plain-array input has no users.)
        if hasattr(G, "new_simulation"):
            G = G.new_simulation()
        masks = _split(study.splits[spec.split], y, spec)
        est = build_estimator(study, spec, G)
        evaluate = study.methods[spec.method].evaluate or fit_and_score
        with GraphCache(cache) if cache is not None else contextlib.nullcontext():
            metrics = evaluate(est, G, y, masks)
        # a record without a number would be a damaged line of the runs file: the run fails
        metrics = {k: float(v) for k, v in metrics.items()}
        if not metrics:
            raise ValueError(f"the evaluation of run {spec.key!r} returned no metric.")
        for k, v in metrics.items():
            if math.isnan(v):
                raise ValueError(f"the evaluation of run {spec.key!r} returned NaN for "
                                 f"metric {k!r}, not a number.")
        privacy, eps_spent = _privacy(est, G)
        info = _info(est)
    except Exception:
        return {"key": spec.key, "error": traceback.format_exc()}
    finally:
        _forget_run(spec)
    return {
        "key": spec.key, "dataset": spec.dataset, "method": spec.method,
        "split": spec.split, "seed": spec.seed, "params": spec.param_dict,
        "metrics": metrics,
        "eps_spent": eps_spent, "privacy": privacy, "info": info,
        "wall_s": round(time.perf_counter() - t0, 3),
        "cpu_s": round(time.process_time() - c0, 3),
        "peak_rss_mb": _peak_rss_mb(),  # of the process, after the run
        "load_1m": _load_average(),  # the machine's load when the run ended
        "host": platform.node(), "pid": os.getpid(), "threads": threads,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


@contextlib.contextmanager
def parallel_backend(backend="loky", n_jobs=1, scheduler=None):
    """Configure joblib for a sweep: local processes, a Dask cluster or Ray.

    Parameters
    ----------
    backend : {"loky", "threading", "sequential", "dask", "ray"}, default="loky"
        joblib backend. ``"dask"`` connects to ``scheduler`` or starts a
        local cluster of ``n_jobs`` single-threaded worker processes on
        127.0.0.1; ``"ray"`` connects to ``scheduler`` (a Ray address) or
        starts a local Ray with ``n_jobs`` CPUs.
    n_jobs : int, default=1
        Parallel runs (``-1``: all cores).
    scheduler : str or None, default=None
        Address of an existing Dask scheduler (``tcp://host:8786``) or Ray
        cluster (``ray://host:10001`` or ``auto``).

    Yields
    ------
    client : distributed.Client, the ray module or None
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}.")
    import joblib
    if backend == "dask":
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ImportError("backend='dask' needs distributed: pip install "
                              "'skldp[dask]'") from None
        if scheduler:
            with Client(scheduler) as client, joblib.parallel_config(backend="dask"):
                yield client
            return
        workers = os.cpu_count() if n_jobs in (None, -1) else max(1, int(n_jobs))
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          host="127.0.0.1", dashboard_address=None) as cluster, \
                Client(cluster) as client, joblib.parallel_config(backend="dask"):
            yield client
        return
    if backend == "ray":
        try:
            import ray
            from ray.util.joblib import register_ray
        except ImportError:
            raise ImportError("backend='ray' needs ray: pip install 'skldp[ray]'") from None
        started = not ray.is_initialized()
        if started:
            if scheduler:
                ray.init(address=scheduler)
            else:
                ray.init(num_cpus=None if n_jobs in (None, -1) else int(n_jobs),
                         include_dashboard=False)
        register_ray()
        try:
            with joblib.parallel_config(backend="ray"):
                yield ray
        finally:
            if started:
                ray.shutdown()
        return
    with joblib.parallel_config(backend=backend):
        yield None


class _Progress:
    """tqdm progress bar (with time left) when tqdm is installed; silent otherwise."""

    def __init__(self, total, desc, enabled):
        self.bar = None
        if enabled and total:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, desc=desc, unit="run", dynamic_ncols=True)

    def update(self, text=None):
        if self.bar is not None:
            if text:
                self.bar.set_postfix_str(text, refresh=False)
            self.bar.update(1)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def validate_study(study):
    """Check a study before it runs: dataset names, methods, grid keys.

    Each method's estimator is built for the first dataset, seed and grid
    value, so a grid key that no step has fails here, not in a worker.

    Parameters
    ----------
    study : Study
        The study.

    Raises
    ------
    ValueError
        An unknown dataset name or a grid key that is not a parameter.
    """
    from ..datasets import list_datasets
    known = set(list_datasets())
    unknown = [d for d in study.datasets if d not in known]
    if unknown:
        raise ValueError(f"Study {study.name!r}: unknown dataset(s) {unknown}; "
                         f"skldp.datasets.list_datasets() gives {sorted(known)}.")
    runs = study.runs()
    seen = set()
    for spec in runs:
        if spec.method in seen:
            continue
        seen.add(spec.method)
        build_estimator(study, spec)
    # every grid value, not only the first: a bad value (eps=-1) fails here, not in each
    # run; one estimator per method and grid value (on the first dataset that has it)
    checked = set()
    for spec in runs:
        sig = (spec.method, repr(sorted(spec.param_dict.items())))
        if sig not in checked:
            checked.add(sig)
            _validate_params(build_estimator(study, spec))


def _validate_params(est):
    """Check the parameters of ``est`` and of every estimator it holds (pipeline steps,
    nested estimators: ``get_params(deep=True)`` names them all) against their declared
    constraints (scikit-learn's ``_parameter_constraints``), as ``fit`` would, before any
    run is dispatched."""
    held = [v for v in est.get_params(deep=True).values() if hasattr(v, "get_params")]
    for e in [est, *held]:
        if hasattr(e, "_parameter_constraints"):
            e._validate_params()


def run_study(study, results_dir="results", *, n_jobs=1, backend="loky", scheduler=None,
              cache=None, retries=1, progress=True, max_runs=None, note=None,
              redo_changed=False):
    """Run every run of ``study`` that its runs file does not hold yet.

    Runs are dispatched through joblib (``backend``); workers return records
    and this process alone appends them to ``<results_dir>/<name>_runs.jsonl``
    as they arrive, so an interrupted sweep keeps every finished run and the
    next call runs only the rest (a key is never recorded twice). A run that
    raises is reported in ``failed`` (not recorded); runs lost with a worker
    that dies are dispatched again, one run per call, up to ``retries`` times
    each, then reported in ``missing``.

    Several processes may sweep the same study at once (on one machine, or on
    hosts sharing the results folder): each run is claimed before it is
    dispatched (a claim file per run in ``<results_dir>/<name>_claims/``), so
    that each run is done by one process; the runs another process holds are
    reported in ``elsewhere``. The claims of a killed process are taken over.
    Each run sizes torch's and the BLAS thread pools to this process's share of the CPUs
    (:func:`skldp.utils.thread_share`; one thread on a graph of fewer than 5,000 nodes;
    ``SKLDP_NUM_THREADS`` overrides both), and
    the sweep declares its ``n_jobs`` parallel runs to the other skldp processes
    on the same CPUs (:func:`skldp.utils.share_cpus`).

    Each record carries the run's configuration fingerprint (``fingerprint``:
    digests of its estimator's class and parameters, the study's
    ``configs[dataset]``, the method's data and evaluate functions and the
    split function; :func:`run_fingerprints`). A recorded run whose fingerprint
    differs from the study's now is stale: the sweep stops before running
    anything (:class:`StaleRunsError`), unless ``redo_changed``. A record
    without a fingerprint (written before skldp wrote one) is taken as it is.

    Parameters
    ----------
    study : Study
        The study.
    results_dir : str or path-like, default="results"
        Folder of the runs file.
    n_jobs : int, default=1
        Parallel runs, >= 1 or -1 for all CPUs (joblib's ``n_jobs``; Dask/Ray:
        local workers started). With a ``scheduler``, Dask runs on every CPU of
        the cluster, and so does Ray unless ``n_jobs`` > 1.
    backend : {"loky", "threading", "sequential", "dask", "ray"}, default="loky"
        See :func:`parallel_backend`.
    scheduler : str or None, default=None
        Address of an existing Dask scheduler or Ray cluster (``backend``
        ``"dask"`` or ``"ray"`` only).
    cache : str, path-like or None, default=None
        Directory of a :class:`GraphCache` used by every run (workers on
        one file system share it): each perturbation and propagation is
        computed once per sweep. A relative path is taken from this process's
        working directory; with a remote ``scheduler`` the (absolute) path
        must name the same directory on every worker's machine. ``None``: no
        disk cache.
    retries : int, default=1
        How many times runs lost with a dead worker are dispatched again.
    progress : bool, default=True
        Show a tqdm progress bar with the time left (if tqdm is installed).
    max_runs : int or None, default=None
        Run at most this many of the remaining runs (for a partial sweep); the
        others are reported in ``remaining``.
    note : str or None, default=None
        How this sweep was scheduled (its command, priority, what ran beside
        it): written into each of its records as ``sweep``, so that the runs
        file, not the results page, tells which runs came when and how.
    redo_changed : bool, default=False
        Run the stale runs again: their records are dropped first (the runs
        file is rewritten whole, under its lock), and their new records take
        their place.

    Returns
    -------
    result : SweepResult

    Raises
    ------
    StaleRunsError
        Recorded runs of the sweep whose fingerprint differs from the study's
        now, without ``redo_changed``; nothing is run.
    ValueError
        An unknown ``backend``, a bad ``n_jobs``, ``max_runs`` or ``retries``,
        or a ``scheduler`` with a local backend; nothing is read or run.
    """

    if not isinstance(study, Study):
        raise TypeError(f"run_study needs a Study, got {type(study).__name__}.")
    if max_runs is not None and (isinstance(max_runs, bool) or int(max_runs) != max_runs
                                 or max_runs < 0):
        raise ValueError(f"max_runs must be an int >= 0 or None, got {max_runs!r}.")
    if isinstance(retries, bool) or int(retries) != retries or retries < 0:
        raise ValueError(f"retries must be an int >= 0, got {retries!r}.")
    # before anything (datasets loaded, fingerprints, stale records dropped by
    # redo_changed): a typo was found only when the runs were dispatched
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}.")
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral)
                               or not (n_jobs >= 1 or n_jobs == -1)):
        raise ValueError(f"n_jobs must be an int >= 1 or -1 (all CPUs), got {n_jobs!r}.")
    if scheduler and backend not in ("dask", "ray"):
        raise ValueError(f"scheduler={scheduler!r} needs backend='dask' or 'ray' (a {backend} "
                         "sweep runs on this machine).")
    # Declared before anything else (the checks below load datasets): a sweep started
    # beside this one then sizes even its first run with this one counted.
    local = backend in ("loky", "threading", "sequential") or scheduler is None
    weight = 1 if backend == "sequential" else (os.cpu_count() or 1) if n_jobs in (None, -1) \
        else max(1, int(n_jobs))
    if backend == "ray" and scheduler and n_jobs in (None, 1):
        # an existing cluster: all of its CPUs, as with Dask (joblib would run every run
        # in this process, one at a time, with n_jobs=1)
        n_jobs = -1
    with share_cpus(weight if local else 1):   # this machine's CPUs, shared
        return _run_study(study, results_dir, n_jobs, backend, scheduler, cache, retries,
                          progress, max_runs, note, redo_changed)


def _run_study(study, results_dir, n_jobs, backend, scheduler, cache, retries, progress,
               max_runs, note=None, redo_changed=False):
    t0 = time.perf_counter()
    runs_file = RunsFile(Path(results_dir) / f"{study.name}_runs.jsonl", study.name)
    validate_study(study)
    specs = study.runs()
    result = SweepResult(runs_file.path)
    result.fingerprints = fingerprints = run_fingerprints(
        study, specs, failures=result.fingerprint_failures)
    recorded = {r["key"]: r for r in runs_file.records}
    mine = [(s, recorded[s.key]) for s in specs if s.key in recorded]
    stale = [(s, r) for s, r in mine if _is_stale(r, fingerprints)]
    if stale and not redo_changed:
        raise StaleRunsError(_stale_message(study, stale, len(mine), fingerprints))
    if stale:
        logger.warning("study %s: %d run(s) recorded under another configuration are run "
                       "again", study.name, len(stale))
        # (by key and fingerprint: a record of the key that another sweep has just made
        # under the study's configuration now is kept)
        runs_file.rewrite(lambda r: None if _is_stale(r, fingerprints) else r)
        result.redone = [s.key for s, _ in stale]
    result.legacy = [s.key for s, r in mine if "fingerprint" not in r]
    result.skipped = [s.key for s in specs if s.key in runs_file]
    todo = [s for s in specs if s.key not in runs_file]
    if max_runs is not None:
        result.remaining = [s.key for s in todo[max_runs:]]
        todo = todo[:max_runs]
    logger.info("study %s: %d runs, %d recorded, %d to run (backend %s, n_jobs %s)",
                study.name, len(specs), len(result.skipped), len(todo), backend, n_jobs)
    bar = _Progress(len(todo), study.name, progress)
    # made absolute here: a worker resolved a relative path from its own working
    # directory (a reused loky worker started before a chdir, a remote Dask/Ray worker)
    cache = None if cache is None else os.path.abspath(cache)
    claims = _Claims(RunClaims(runs_file.path), runs_file, result, bar, note)
    try:
        with parallel_backend(backend, n_jobs, scheduler):
            _dispatch(study, todo, cache, n_jobs, retries, runs_file, result, bar, claims)
            # a run another process held when this one came to it, and that is still not
            # recorded now that its claim is gone (that process was killed, or the run
            # failed there): run it here (its stale claim is taken over), not counted done
            while True:
                runs_file.refresh()
                orphans = [s for s in todo if s.key in result.elsewhere
                           and s.key not in runs_file and claims.claims.owner(s.key) is None]
                if not orphans:
                    break
                logger.warning("study %s: %d run(s) claimed by another process are not "
                               "recorded and their claims are gone; running them here",
                               study.name, len(orphans))
                for s in orphans:
                    result.elsewhere.remove(s.key)
                _dispatch(study, orphans, cache, n_jobs, retries, runs_file, result, bar,
                          claims)
    finally:
        bar.close()
        claims.release_all()
    runs_file.refresh()   # with the runs that other processes recorded meanwhile
    result.records = list(runs_file.records)
    result.wall_s = time.perf_counter() - t0
    logger.info("study %s: %d done, %d failed, %d missing in %.0f s", study.name,
                len(result.done), len(result.failed), len(result.missing), result.wall_s)
    return result


class _Claims:
    """This sweep's side of the run claims: take a run before dispatching it, release
    it once recorded (or failed, or missing)."""

    def __init__(self, claims, runs_file, result, bar, note=None):
        import threading
        self.claims, self.runs_file, self.result, self.bar = claims, runs_file, result, bar
        self.note = note   # how the sweep was scheduled, into each of its records
        self.held = set()
        self.lock = threading.Lock()   # joblib may consume the task generator in a thread
        self.closed = False   # set by release_all: the sweep is over

    def take(self, spec):
        """Whether this process runs ``spec`` (claimed now, not recorded elsewhere)."""
        with self.lock:
            if self.closed:
                # joblib's dispatch thread may still ask after the sweep stopped (an
                # error): a claim taken now would be held for as long as the process lives
                return False
            key = spec.key
            if key not in self.held:
                self.runs_file.refresh()
                taken = key in self.runs_file or not self.claims.acquire(key)
                if not taken:
                    # Another sweep may have recorded it and released its claim between
                    # the refresh and the claim: it appends before it releases.
                    self.runs_file.refresh()
                    if key in self.runs_file:
                        self.claims.release(key)
                        taken = True
                if taken:
                    self.result.elsewhere.append(key)
                    self.bar.update("elsewhere")
                    return False
                self.held.add(key)
            return True

    def release(self, key):
        with self.lock:
            if key in self.held:
                self.claims.release(key)
                self.held.discard(key)

    def release_all(self):
        """Release every claim held, and take none from now on."""
        with self.lock:   # a take in progress finishes first, and its claim goes too
            self.closed = True
            for key in list(self.held):
                self.claims.release(key)
            self.held.clear()


def _dispatch(study, todo, cache, n_jobs, retries, runs_file, result, bar, claims):
    """Run ``todo``; after a worker dies, what is not recorded runs one run per call.

    A dead worker takes every run in flight with it; run alone, a run that
    kills its worker again loses only itself, up to ``retries`` times, and is
    then reported missing.
    """
    import joblib

    tries = {}
    backend = joblib.parallel.get_active_backend()[0]
    # Backends without result generators (Ray's) get chunks, so records still arrive early.
    streams = getattr(backend, "supports_return_generator", False)
    # (two runs per worker: of every CPU of a Ray cluster with n_jobs=-1, not 2 in all)
    chunk = len(todo) if streams else 2 * _parallel_runs(backend, n_jobs)
    batches = [todo[i:i + chunk] for i in range(0, len(todo), chunk)] if todo else []
    while batches:
        batch = batches.pop(0)
        try:
            # (n_jobs as given even for one run: n_jobs=1 would run it in this process)
            # each run is claimed when joblib takes it (a few ahead of the workers)
            out = joblib.Parallel(n_jobs=n_jobs,
                                  return_as="generator_unordered" if streams else "list")(
                joblib.delayed(_run_one)(study, spec, cache) for spec in batch
                if claims.take(spec))
            for rec in out:
                if "error" not in rec:
                    fingerprint = result.fingerprints.get(rec["key"])
                    if fingerprint is None:
                        _warn_unfingerprinted(rec["key"], result.fingerprint_failures.get(
                            rec["key"], "unknown reason"))
                    rec = _with_fingerprint(rec, fingerprint)
                    if claims.note is not None:
                        rec["sweep"] = claims.note
                _collect(rec, runs_file, result, bar)
                claims.release(rec["key"])
        except Exception as exc:  # a worker died: the runs not recorded are retried
            if not _lost_worker(exc):
                raise
            finished = set(result.done) | set(result.failed) | set(result.elsewhere)
            lost = [s for s in batch if s.key not in finished]
            retry = []
            for spec in lost:
                # in a batch of several, a run may only have shared the dead worker's fate
                tries[spec.key] = tries.get(spec.key, 0) + (len(batch) == 1)
                if tries[spec.key] > retries:
                    result.missing.append(spec.key)
                    claims.release(spec.key)
                    bar.update("missing")
                else:
                    retry.append(spec)
            logger.warning("study %s: %s (%s); %d run(s) not recorded, %d retried one by one",
                           study.name, type(exc).__name__, exc, len(lost), len(retry))
            batches = [[s] for s in retry] + batches


def _parallel_runs(backend, n_jobs):
    """How many runs the active joblib ``backend`` runs at once with ``n_jobs`` (-1: all of
    its CPUs, a cluster's for Ray)."""
    try:
        return max(1, int(backend.effective_n_jobs(1 if n_jobs is None else n_jobs)))
    except Exception:  # noqa: BLE001 - (a backend that cannot tell: the number asked for)
        return max(1, n_jobs or 1)


_LOST_WORKER = {"TerminatedWorkerError", "BrokenProcessPool", "BrokenExecutor", "KilledWorker",
                "CommClosedError", "WorkerCrashedError", "RayActorError", "NodeDiedError",
                "RaySystemError", "ObjectLostError"}


def _lost_worker(exc):
    """Whether ``exc`` says a worker process died (loky, concurrent.futures, Dask, Ray)."""
    return any(c.__name__ in _LOST_WORKER for c in type(exc).__mro__)


def _collect(rec, runs_file, result, bar):
    if "error" in rec:
        result.failed[rec["key"]] = rec["error"]
        logger.error("run %s failed:\n%s", rec["key"], rec["error"])
        bar.update("failed")
        return
    if not runs_file.append(rec):
        # another sweep recorded it meanwhile (its record counts; this one is dropped)
        result.elsewhere.append(rec["key"])
        logger.warning("run %s: already recorded by another sweep; this result is not "
                       "recorded", rec["key"])
        bar.update("elsewhere")
        return
    result.done.append(rec["key"])
    metric = ", ".join(f"{k} {v:.4f}" for k, v in rec["metrics"].items())
    logger.info("run %s: %s (%.1f s)", rec["key"], metric, rec["wall_s"])
    bar.update(metric)
