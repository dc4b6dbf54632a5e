"""Experiments: sweeps over datasets, pipelines, eps and seeds, and a cross-process graph cache.

A :class:`Study` declares datasets, named pipelines (:class:`Method`) with
their grids, seeds and splits; :func:`run_study` runs what its runs file does
not hold yet (through joblib: local processes, Dask or Ray; a record made
under another configuration of the study is never taken for one of its runs) and
:func:`write_summary` renders the mean ± std table and the figure.
:class:`GraphCache` (and :class:`CachedPipeline`) compute each
perturbation and propagation once per sweep, across processes.
"""

from ._cache import GraphCache, graph_content_key
from ._pipeline import CachedPipeline
from ._runner import (
    StaleRunsError,
    SweepResult,
    build_estimator,
    fingerprint_legacy_runs,
    parallel_backend,
    run_fingerprints,
    run_study,
    validate_study,
)
from ._runs import RunsFile, RunsFileError, load_runs
from ._study import Grid, Method, RunContext, RunSpec, Study, default_split, fit_and_score
from ._summary import plot_summary, summarize, summary_markdown, write_summary

__all__ = ["Study", "Method", "Grid", "RunSpec", "RunContext", "default_split", "fit_and_score",
           "run_study", "validate_study", "build_estimator", "SweepResult", "parallel_backend",
           "StaleRunsError", "run_fingerprints", "fingerprint_legacy_runs",
           "RunsFile", "RunsFileError", "load_runs", "summarize", "summary_markdown",
           "plot_summary", "write_summary", "GraphCache", "CachedPipeline",
           "graph_content_key"]
