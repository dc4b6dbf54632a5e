"""``python -m skldp reproduce <study>``: run a registered study and write its summary."""

import argparse
import importlib
import inspect
import logging
import os
import shlex
import sys
import tempfile
from pathlib import Path

from ..utils._command import run_command
from ._runner import BACKENDS

__all__ = ["reproduce_main"]


NO_STUDIES = ("the paper studies are not in the installed package: they live in the "
              "studies/ folder of skldp's source repository; run this command from the root "
              "of a clone")


def paper_studies():
    """The repository's ``studies`` package (the paper studies), or None.

    It is found on ``sys.path``, which ``python -m`` starts with the current
    folder, or else in the current folder (the ``skldp`` console script does
    not put it on ``sys.path``): run from the root of a clone of the repository.
    """
    try:
        module = importlib.import_module("studies")
    except ModuleNotFoundError as exc:
        if exc.name != "studies":
            raise
        cwd = Path.cwd()
        if not (cwd / "studies" / "__init__.py").is_file() or str(cwd) in sys.path:
            return None
        sys.path.insert(0, str(cwd))
        try:
            module = importlib.import_module("studies")
        except ModuleNotFoundError as exc:  # pragma: no cover - a broken folder
            sys.path.remove(str(cwd))
            if exc.name != "studies":
                raise
            return None
    # another package of that name is not ours
    return module if hasattr(module, "get_study") and hasattr(module, "RUNS_DIR") else None


def _prog():
    """``skldp reproduce`` under the console script, else ``python -m skldp reproduce``
    (as ``skldp.__main__`` names itself; importing it from here would be a cycle)."""
    return ("skldp" if Path(sys.argv[0]).name == "skldp" else "python -m skldp") + " reproduce"


def _parser(studies):
    p = argparse.ArgumentParser(
        prog=_prog(),
        description="Run a paper study (resumable: runs already in its runs file are "
                    "skipped), then write its results page and figure.",
        epilog="An error ends in one line; with SKLDP_TRACEBACK=1 in the environment it "
               "shows its traceback instead.")
    names = f"one of {studies.list_studies()}" if studies is not None else NO_STUDIES
    p.add_argument("study", help=f"study name, {names}")
    p.add_argument("--quick", action="store_true",
                   help="a small subset with its own datasets, seeds and eps (not with "
                        "--datasets, --seeds, --eps; its own runs file "
                        "<study>_quick_runs.jsonl)")
    p.add_argument("--datasets", nargs="+", default=None, help="restrict to these datasets")
    p.add_argument("--seeds", type=int, default=None, help="number of seeds (0..N-1)")
    p.add_argument("--eps", type=float, nargs="+", default=None,
                   help="restrict to these budgets (studies with an eps grid: label_scarce)")
    p.add_argument("--kinds", nargs="+", default=None,
                   help="restrict to these pipelines (studies with kinds: label_scarce)")
    p.add_argument("--n-jobs", type=int, default=1,
                   help="parallel runs (default: 1; -1: all CPUs; with --scheduler, every CPU "
                        "of the cluster, or N > 1 for Ray)")
    p.add_argument("--backend", choices=BACKENDS, default="loky",
                   help="joblib backend (dask/ray need the extras skldp[dask], skldp[ray])")
    p.add_argument("--scheduler", default=None,
                   help="address of an existing Dask scheduler (tcp://host:8786) or Ray "
                        "cluster, with --backend dask or ray; default: start a local one "
                        "with --n-jobs workers")
    p.add_argument("--runs-dir", default=None,
                   help="folder of the study's runs file (default: studies/runs)")
    p.add_argument("--pages-dir", default=None,
                   help="folder of the results page and figure (default: docs/results)")
    p.add_argument("--results-dir", default=None,
                   help="one folder for the runs file and the page (sets both of the above; not "
                        "with them)")
    p.add_argument("--cache", default=None,
                   help="GraphCache directory shared by the workers (as sensitive as the "
                        "reports; see the user guide); a relative path is taken from the "
                        "current folder, and with --scheduler must be the same path on "
                        "every worker's machine")
    p.add_argument("--retries", type=int, default=1,
                   help="times runs lost with a dead worker are dispatched again")
    p.add_argument("--max-runs", type=int, default=None, help="run at most this many")
    p.add_argument("--redo-changed", action="store_true",
                   help="run again the recorded runs made under another configuration than "
                        "the study's now (without it the sweep stops on them); their new "
                        "records replace the old ones")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--note", default=None,
                   help="how this sweep is scheduled (priority, what runs beside it), written "
                        "into each of its records (default: the command)")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="log every run (-v) and cache activity (-vv)")
    return p


def reproduce_main(argv):
    """Entry point of ``python -m skldp reproduce``.

    Parameters
    ----------
    argv : list of str
        Arguments after ``reproduce``.

    Returns
    -------
    status : int
        0 when no run failed or went missing: every run is recorded, but for
        those that ``--max-runs`` leaves for a later call (the summary line
        counts them) and those that another process is still running; 1 when
        some failed or are missing, or on a user error (an unknown study or
        dataset, an unavailable dataset, a damaged runs file, a folder that
        cannot be written; one line on stderr, or its traceback with
        ``SKLDP_TRACEBACK=1``); 2 on an error in the command line itself (an
        unknown option, a missing or out-of-range value: argparse's usage and
        message); 130 when interrupted (Ctrl-C; the recorded runs are kept).
    """
    return run_command(_reproduce, argv, "skldp reproduce",
                       interrupted="interrupted; the runs recorded so far are kept, the "
                                   "same command resumes")


def _check_writable(folder, what):
    """Fail before any run when ``folder`` cannot be created or written into (it was
    found only once every run was done, when the page was written)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise OSError(f"{folder}: cannot write the {what} there ({exc.strerror or exc}); "
                      "nothing was run. Choose another folder (--runs-dir, --pages-dir or "
                      "--results-dir).") from None


def _check_current(study, records, fingerprints):
    """Refuse to write a page from records made under another configuration than the
    study's now (another sweep may have recorded one since this one checked)."""
    from ._runner import StaleRunsError, _is_stale
    stale = [r["key"] for r in records if _is_stale(r, fingerprints)]
    if stale:
        raise StaleRunsError(
            f"Study {study.name!r}: {len(stale)} record(s) were made under another "
            f"configuration than the study's now (e.g. {stale[0]!r}), recorded by another "
            "sweep meanwhile; the page is not written. Run the command again with "
            "--redo-changed.")


def _takes(function, name):
    """Whether ``function`` takes the keyword ``name`` (None: its signature is unknown)."""
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    return any(p.kind == p.VAR_KEYWORD or (p.name == name and p.kind != p.POSITIONAL_ONLY)
               for p in params)


def _refused(studies, name, kwargs):
    """The options (``--eps``) of ``kwargs`` that study ``name`` takes no keyword for, by
    the signatures of ``get_study`` and of the study module's ``make_study``; empty when
    it takes them all or when that cannot be told."""
    module = sys.modules.get(f"{getattr(studies, '__name__', '')}.{name}")
    functions = [studies.get_study, getattr(module, "make_study", None)]
    return [f"--{k}" for k in kwargs
            if any(f is not None and _takes(f, k) is False for f in functions)]


def _reproduce(argv):
    from ._runner import run_study
    from ._runs import RunsFile

    studies = paper_studies()
    p = _parser(studies)
    args = p.parse_args(argv)
    if studies is None:
        p.error(NO_STUDIES + ".")
    if args.n_jobs == 0 or args.n_jobs < -1:
        p.error("--n-jobs must be >= 1 or -1")
    if args.seeds is not None and args.seeds < 1:
        p.error("--seeds must be >= 1")
    if args.quick and (args.datasets or args.seeds is not None or args.eps):
        p.error("--quick fixes its own datasets, seeds and eps; drop --quick to choose them "
                "(--datasets, --seeds, --eps)")
    if args.max_runs is not None and args.max_runs < 0:
        p.error("--max-runs must be >= 0")
    if args.retries < 0:
        p.error("--retries must be >= 0")
    if args.results_dir is not None and (args.runs_dir is not None
                                         or args.pages_dir is not None):
        # (one of the two folders was silently not the --results-dir given)
        p.error("--results-dir sets both --runs-dir and --pages-dir: give it alone, or "
                "those two")
    if args.scheduler and args.backend not in ("dask", "ray"):
        p.error(f"--scheduler needs --backend dask or ray (a {args.backend} sweep runs on "
                "this machine)")
    if args.eps is not None and not all(e > 0 for e in args.eps):
        p.error("--eps values must be > 0 (inf: no noise)")
    # -v / -vv raise skldp's loggers only (not those of Dask or Ray)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("skldp").setLevel(
        [logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)])
    kwargs = {}
    if args.datasets:
        kwargs["datasets"] = args.datasets
    if args.seeds:
        kwargs["seeds"] = range(args.seeds)
    if args.eps:
        kwargs["eps"] = args.eps
    if args.kinds:
        kwargs["kinds"] = args.kinds
    try:
        study = studies.get_study(args.study, **kwargs)
    # an unknown study, dataset or kind (a ValueError) ends as a user error: one line,
    # status 1 (run_command)
    except TypeError:
        # only options that the study's signature refuses: a TypeError raised inside it
        # (a bug) was reported as "takes no --eps"
        extra = _refused(studies, args.study, kwargs)
        if not extra:
            raise
        p.error(f"study {args.study!r} takes no {' or '.join(extra)}.")
    if args.quick:
        study = study.quick_variant()
    runs_dir = Path(args.runs_dir or args.results_dir or studies.RUNS_DIR)
    pages_dir = Path(args.pages_dir or args.results_dir or studies.PAGES_DIR)
    page = pages_dir / f"{args.study}.md"
    if not args.quick and not page.is_file():   # before the runs, not after them
        p.error(f"{page}: no such page. A study's page is written by hand around its "
                "generated blocks: copy it from docs/results/ into the pages folder first "
                "(or use --quick, which writes a summary of its own).")
    # before the runs: an unwritable folder was found only once every run was done
    _check_writable(runs_dir, "runs file")
    _check_writable(pages_dir, "results page")
    if not args.quick:
        try:
            # rewritten after the runs (replaced whole): a page made read-only stays so
            with open(page, "r+b"):
                pass
        except OSError as exc:
            raise OSError(f"{page}: cannot rewrite the page ({exc.strerror or exc}); nothing "
                          "was run.") from None
        # a link's target is replaced, through a new file in the target's folder
        target = Path(os.path.realpath(page))
        if target.parent != pages_dir.resolve():
            _check_writable(target.parent, f"target of the results page {page}")
    command = _prog() + " " + " ".join(shlex.quote(a) for a in argv)
    res = run_study(study, runs_dir, n_jobs=args.n_jobs, backend=args.backend,
                    scheduler=args.scheduler, cache=args.cache, retries=args.retries,
                    progress=not args.no_progress, max_runs=args.max_runs,
                    note=args.note or command, redo_changed=args.redo_changed)
    print(f"{study.name}: {len(res.done)} run(s) done, {len(res.skipped)} already recorded, "
          f"{len(res.elsewhere)} taken by another process, {len(res.failed)} failed, "
          f"{len(res.missing)} missing"
          + (f", {len(res.remaining)} left for later (--max-runs)"
             if args.max_runs is not None else "") + f" ({res.wall_s:.0f} s)")
    print(f"runs: {res.runs_file}")
    if res.redone:
        print(f"{len(res.redone)} run(s) recorded under another configuration were run again "
              "(--redo-changed)")
    if res.legacy:
        print(f"{len(res.legacy)} recorded run(s) have no configuration fingerprint (recorded "
              "before skldp wrote one): taken as they are")
    # before the page: a page that cannot be written must not hide why the runs failed
    for key, err in res.failed.items():
        print(f"failed: {key}: {err.strip().splitlines()[-1]}", file=sys.stderr)
    for key in res.missing:
        print(f"missing (worker lost): {key}", file=sys.stderr)
    # The page is written under the runs file's lock, from every record it holds then:
    # sweeps of the same study each write it when done, and the last one written must not
    # be that of a sweep that read the file before another appended its last runs.
    with RunsFile(res.runs_file, study.name).locked() as records:
        _check_current(study, records, res.fingerprints)
        keys = {r["key"] for r in records}
        n_recorded = sum(key in keys for key in res.fingerprints)
        partial = (n_recorded, len(res.fingerprints)) \
            if n_recorded < len(res.fingerprints) else None
        if partial and records:   # (no record: no page is written, see below)
            print(f"{partial[0]} of the {partial[1]} runs recorded: the page says it is "
                  "partial")
        if not records:   # nothing to summarise: the page (and its figure) are left as they are
            print(f"no run recorded: {'summary' if args.quick else page} not written")
        elif args.quick:   # a few runs: the generic summary, <name>_quick_summary.md
            from ._summary import write_summary
            paths = write_summary(study, records, pages_dir, command=command)
        else:   # the study's page, from every run its runs file holds
            # the page names the runs file it was written from (the repository's by default)
            elsewhere = runs_dir.resolve() != Path(studies.RUNS_DIR).resolve()
            paths = studies.write_page(args.study, records, pages_dir,
                                       runs_file=res.runs_file if elsewhere else None,
                                       partial=partial)
    if records:
        for kind, path in paths.items():
            print(f"{kind}: {path}")
        table = getattr(study, "report", None)
        if table is not None:   # a study's own table (e.g. beside the references)
            print(table(records))
    return 0 if not (res.failed or res.missing) else 1
