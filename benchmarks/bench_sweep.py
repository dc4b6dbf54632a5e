"""The PrivGE Facebook sweep (6 eps x 5 seeds) run serially, on 2 local processes and on a
2-worker Dask cluster: wall time, CPU time, peak memory, bytes shipped.

Every mode runs the same :mod:`skldp.experiments` study into its own fresh results
folder (nothing is resumed), with one thread per run. Reported per mode:

* **wall s**: the sweep's wall time (cluster start-up included for Dask);
* **CPU s**: CPU time of all runs (the records' ``cpu_s``, measured in the process
  that ran them) plus the driver's own (serially the runs are in the driver: its CPU
  time alone);
* **peak RSS MB**: the largest process high-water mark over the processes that ran
  runs (the records' ``peak_rss_mb``; serially, the driver);
* **bytes shipped**: pickled size of what travels per run (the task: the study with
  its factories by reference, one run spec; and its record back), summed; the graph
  itself never travels: each process loads it by name once (**graph loads**).

The records of every mode must agree (same accuracy per run): the table says so.

Usage::

    OMP_NUM_THREADS=1 SKLDP_DATASETS_DIR=... nice python benchmarks/bench_sweep.py
    OMP_NUM_THREADS=1 SKLDP_DATASETS_DIR=... nice python benchmarks/bench_sweep.py --quick

``--quick`` sweeps Cora (2 eps x 2 seeds, head <= 20 epochs) instead, to check the
command end to end in a few minutes. Results: ``docs/performance/sweep_benchmark.md``
(``--out``).
"""

import argparse
import dataclasses
import os
import pickle
import platform
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:   # the checkout's studies (and skldp if not installed)
    sys.path.append(ROOT)

import cloudpickle  # noqa: E402  (a dependency of dask and of joblib's loky)

from skldp.experiments import _runner, run_study  # noqa: E402
from studies.privge import (  # noqa: E402
    EPS,
    privge_pipeline,
    privge_study,  # noqa: E402
)


def one_thread_privge(ctx):
    """The study's pipeline with the propagation on one thread (``n_jobs=1``; its
    default uses every CPU), so that each run holds one core in every mode."""
    return privge_pipeline(ctx).set_params(ppr__n_jobs=1)


def sweep_study(quick):
    if quick:
        study = privge_study(["cora"], range(2))
        eps, configs = [1.0, 5.0], {"cora": {**study.configs["cora"], "epochs": 20}}
    else:
        study = privge_study(["facebook"], range(5))
        eps, configs = [e for e in EPS if e != float("inf")], study.configs
    hds = dataclasses.replace(study.methods["hds"], factory=one_thread_privge,
                              grid={"hds__eps": eps})
    return dataclasses.replace(study, name="sweep_bench", methods={"hds": hds},
                               configs=configs)


def _worker_loads(dask_worker=None):
    return dict(_runner._LOADS)


def run_mode(study, mode):
    with tempfile.TemporaryDirectory() as d:
        c0, t0 = time.process_time(), time.perf_counter()
        loads = None
        if mode == "serial":
            res = run_study(study, d, n_jobs=1, progress=False)
            loads = {"driver": dict(_runner._LOADS)}
        elif mode == "2 processes (loky)":
            res = run_study(study, d, n_jobs=2, progress=False)
        else:
            from distributed import Client, LocalCluster
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                              host="127.0.0.1", dashboard_address=None) as cluster, \
                    Client(cluster) as client:
                res = run_study(study, d, backend="dask", scheduler=cluster.scheduler_address,
                                progress=False)
                loads = client.run(_worker_loads)
        wall = time.perf_counter() - t0
        driver_cpu = time.process_time() - c0
    recs = res.records
    task_bytes = sum(len(cloudpickle.dumps((_runner._run_one, study, s, None)))
                     for s in study.runs())
    rec_bytes = sum(len(pickle.dumps(r)) for r in recs)
    pids = {r["pid"] for r in recs}
    n_loads = (sum(sum(v.values()) for v in loads.values()) if loads is not None
               else len(pids))  # loky: one load per worker process that ran runs
    return {
        "mode": mode, "runs": len(recs), "missing": len(res.missing) + len(res.failed),
        # serial: the runs are in the driver, whose CPU time already counts them
        "wall_s": wall, "cpu_s": driver_cpu + (0 if mode == "serial" else
                                                sum(r["cpu_s"] for r in recs)),
        # the processes that ran runs (the driver itself, serially); the driver's own
        # high-water mark is a lifetime one and would carry an earlier mode's peak
        "peak_rss_mb": max(r["peak_rss_mb"] for r in recs),
        "bytes": task_bytes + rec_bytes, "graph_loads": n_loads, "processes": len(pids),
        "acc": {r["key"]: r["metrics"]["accuracy"] for r in recs},
    }


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--modes", nargs="+", default=["serial", "2 processes (loky)",
                                                   "Dask LocalCluster (2 workers)"])
    p.add_argument("--out", default="docs/performance/sweep_benchmark.md")
    args = p.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    import warnings
    warnings.simplefilter("ignore", UserWarning)
    study = sweep_study(args.quick)
    rows = []
    for mode in args.modes:
        row = run_mode(study, mode)
        rows.append(row)
        print(f"{mode}: {row['runs']} runs, wall {row['wall_s']:.0f} s, CPU {row['cpu_s']:.0f} s, "
              f"peak RSS {row['peak_rss_mb']:.0f} MB, {row['bytes']} bytes shipped", flush=True)
    same = all(r["acc"] == rows[0]["acc"] for r in rows)
    ds = study.datasets[0]
    eps = study.methods["hds"].grid["hds__eps"]
    cmd = ("OMP_NUM_THREADS=1 SKLDP_DATASETS_DIR=<datasets> nice python benchmarks/bench_sweep.py"
           + (" --quick" if args.quick else ""))
    lines = [
        "# Sweep benchmark: serial, 2 local processes, 2-worker Dask cluster",
        "",
        f"PrivGE sweep ({'QUICK check: ' if args.quick else ''}{ds}, HDS → PPR → MLP head, "
        f"eps ∈ {{{', '.join(f'{e:g}' for e in eps)}}} × {len(study.seeds)} seeds = "
        f"{len(study.runs())} runs), one thread per run, each mode into a fresh results "
        "folder. See `benchmarks/bench_sweep.py` for what each column measures.",
        "",
        "```", cmd, "```", "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
        f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC"
        + f", load average {os.getloadavg()[0]:.1f} at the end"
        + (" (a quick check: 4 small runs, where starting the workers outweighs the work)."
           if args.quick else "."),
        "",
        "| mode | runs | wall s | CPU s | peak RSS MB | bytes shipped | graph loads "
        "| processes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['runs']} | {r['wall_s']:.0f} | {r['cpu_s']:.0f} | "
                     f"{r['peak_rss_mb']:,.0f} | {r['bytes']:,} | {r['graph_loads']} | "
                     f"{r['processes']} |")
    lines += ["", f"Same accuracy for every run in every mode: **{same}**. "
              "Bytes shipped are the pickled tasks and records; the graph is loaded by name "
              "once per process (graph loads) and never travels with a task.", ""]
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print(f"-> {args.out}; identical results: {same}")
    return 0 if same and not any(r["missing"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
