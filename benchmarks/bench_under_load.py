"""Two skldp processes sharing the CPUs, against one alone (issue 33), in one run.

The workload is the issue's: the LPGNN study on Cora (its ``LPGNN`` method,
one run at a time: ``run_study(..., n_jobs=1, backend="sequential")``, after
what ``python -m skldp reproduce`` does first), each process in its own results
folder so that both do every run. For each source
tree (``--baseline``: a checkout of the version before the thread sizing, and
this checkout) and each setting, the script times

* ``alone``: one process;
* ``pair``: two identical processes started together;

and reports the median wall time per run (from the runs' records) and the
ratio pair / alone (the goal: at most 1.3). Rounds alternate between the
trees and settings, so load from other jobs hits all of them; each figure is
the median over ``--rounds`` rounds. Settings: the default, and
``OMP_NUM_THREADS=1`` (the issue's workaround) and ``OMP_WAIT_POLICY=ACTIVE``
(OpenMP's spinning threads, which ``reproduce`` turns off) for reference.

Usage::

    SKLDP_DATASETS_DIR=/path/to/datasets python benchmarks/bench_under_load.py \\
        [--baseline /path/to/old/checkout] [--runs 12] [--rounds 2] [--out table.md]
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if os.path.dirname(HERE) not in sys.path:   # the checkout's studies (and skldp if not installed)
    sys.path.append(os.path.dirname(HERE))

WORKER = r'''
import dataclasses, json, sys, time
import skldp
print("SOURCE " + skldp.__file__, file=sys.stderr)
try:   # what `python -m skldp reproduce` does first (absent from older code)
    from skldp.utils._threads import passive_waiting
    passive_waiting()
except ImportError:
    pass
from skldp.experiments import run_study
from studies import get_study
out, runs = sys.argv[1], int(sys.argv[2])
study = get_study("lpgnn", datasets=["cora"])
study = dataclasses.replace(study, name="lpgnn_load",
                            methods={"LPGNN": study.methods["LPGNN"]})
open(out + "/ready", "w").close()
import os
while not os.path.exists(out + "/../go"):
    time.sleep(0.005)
res = run_study(study, out, n_jobs=1, backend="sequential", progress=False, max_runs=runs)
print("RESULT " + json.dumps([[r["wall_s"], r.get("threads")] for r in res.records]))
'''


def _once(src, n_procs, runs, env_extra):
    """Median seconds per run of each of ``n_procs`` processes started together, and the
    thread counts each process's runs used (recorded by the runner; none before it did)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONPATH=src, **env_extra)
        procs = []
        for i in range(n_procs):
            out = os.path.join(tmp, f"p{i}")
            os.makedirs(out)
            # cwd: the temporary folder, so that `python -c` imports skldp from `src`
            procs.append((out, subprocess.Popen([sys.executable, "-c", WORKER, out, str(runs)],
                                                env=env, cwd=tmp, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE, text=True)))
        while not all(os.path.exists(os.path.join(o, "ready")) for o, _ in procs):
            if any(p.poll() is not None for _, p in procs):
                break
            time.sleep(0.01)
        open(os.path.join(tmp, "go"), "w").close()   # start together
        medians, threads = [], []
        for _, p in procs:
            stdout, stderr = p.communicate()
            line = [x for x in stdout.splitlines() if x.startswith("RESULT ")]
            if p.returncode or not line:
                sys.stderr.write(stderr[-3000:])
                raise SystemExit(f"worker failed (rc={p.returncode})")
            runs = json.loads(line[-1][7:])
            medians.append(float(np.median([w for w, _ in runs])))
            threads.append(sorted({t for _, t in runs if t is not None}))
        return medians, threads


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="source checkout of the version to compare with")
    ap.add_argument("--runs", type=int, default=12, help="runs per process")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--settings", nargs="+", default=["default", "omp1"],
                    choices=["default", "omp1", "active", "spin"])
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    trees = ([("before", os.path.abspath(a.baseline))] if a.baseline else []) \
        + [("after", os.path.dirname(HERE))]
    # active: OpenMP threads spin while they wait (OpenMP's default; reproduce sets PASSIVE)
    envs = {"default": {}, "omp1": {"OMP_NUM_THREADS": "1"},
            "active": {"OMP_WAIT_POLICY": "ACTIVE"},
            "spin": {"OMP_WAIT_POLICY": "", "GOMP_SPINCOUNT": "10000"}}
    names = {"default": "default", "omp1": "OMP_NUM_THREADS=1",
             "active": "OMP_WAIT_POLICY=ACTIVE", "spin": "GOMP_SPINCOUNT=10000"}
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    got = {}
    for _ in range(a.rounds):
        for tree, src in trees:
            for setting in a.settings:
                for n in (1, 2):
                    m, th = _once(src, n, a.runs, envs[setting])
                    got.setdefault((tree, setting, n), []).extend(m)
                    print(f"[{tree} {setting} {'alone' if n == 1 else 'pair'}: "
                          f"{', '.join(f'{x:.2f}' for x in m)} s/run; threads {th}; load "
                          f"{os.getloadavg()[0]:.1f}]", file=sys.stderr, flush=True)
    lines = [f"Under load: LPGNN study on Cora, one run at a time, {a.runs} runs per process; "
             f"{len(os.sched_getaffinity(0))} CPUs ({platform.machine()}), load average "
             f"{os.getloadavg()[0]:.1f} at the end; started {started} UTC; medians over "
             f"{a.rounds} rounds.", "",
             "Command: `python benchmarks/bench_under_load.py "
             + " ".join(sys.argv[1:] if argv is None else argv) + "`", "",
             "| code | setting | alone s/run | each of a pair s/run | pair / alone |",
             "|---|---|---|---|---|"]
    for tree, _ in trees:
        for setting in a.settings:
            alone = float(np.median(got[(tree, setting, 1)]))
            pair = float(np.median(got[(tree, setting, 2)]))
            lines.append(f"| {tree} | {names[setting]} | {alone:.2f} | {pair:.2f} | "
                         f"{pair / alone:.2f} |")
    table = "\n".join(lines)
    print(table)
    if a.out:
        with open(a.out, "w") as f:
            f.write(table + "\n")
    return got


if __name__ == "__main__":
    main()
