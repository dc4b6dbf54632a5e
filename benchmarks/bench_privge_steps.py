"""Facebook PrivGE end to end, step by step, before and after, side by side in one run.

The ``privge`` case of ``bench_gpu.py`` (HDS eps = 1, k = 50 -> PPR alpha 0.05,
r 0.1 -> ``MLPHead(epochs=100, validation_fraction=1/3)``, fitted on the 50 +
25 % split of seed 0, scored on the other 25 %) on the CPU, timed step by step
(wall and CPU seconds): the HDS reports of every user (fit and transform), the
propagation, the head's fit and the score. Against ``--baseline`` (a checkout of
the version to compare with, e.g. ``git worktree add /tmp/skldp-base <commit>``)
the two source trees run in subprocesses taken alternately, so that load from
other processes hits both; each figure is the best of ``--repeat`` rounds.
``--threads`` sets the threads of every pool (torch, BLAS, PPR's ``n_jobs``);
``--cpus 0,1`` pins the workers to those CPUs (``os.sched_setaffinity``).

Usage::

    SKLDP_DATASETS_DIR=/path/to/datasets python benchmarks/bench_privge_steps.py \\
        [--baseline /tmp/skldp-base] [--threads 2] [--cpus 0,1] [--repeat 2] [--out table.md]
"""

import argparse
import os
import platform
import sys
import time
import warnings

import numpy as np
from _worker import alternate, before_after, emit, publish, run_worker  # this folder

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = ("HDS", "PPR", "head fit", "score", "total")


def worker(threads):
    warnings.simplefilter("ignore")
    import torch

    import skldp
    from skldp.datasets import load_dataset
    from skldp.mechanisms import HDSMechanism
    from skldp.model_selection import random_node_split
    from skldp.models import MLPHead
    from skldp.propagation import PPRPropagation
    if threads:
        torch.set_num_threads(threads)
    b = load_dataset("facebook")
    G, y = b.data, np.asarray(b.target)
    tr, va, te = random_node_split(y, 0.5, 0.25, 0.25, random_state=0)
    fit = tr | va
    out = {"source": os.path.dirname(os.path.dirname(skldp.__file__))}

    def timed(name, fn):
        t0, c0 = time.perf_counter(), time.process_time()
        value = fn()
        out[name] = (time.perf_counter() - t0, time.process_time() - c0)
        return value

    hds = HDSMechanism(eps=1.0, k=50, feature_range=(0, 1), random_state=0)
    R = timed("HDS", lambda: hds.fit(G[fit]).transform(G))
    Z = timed("PPR", lambda: PPRPropagation(alpha=0.05, r=0.1, device="cpu",
                                            n_jobs=threads or None).fit_transform(R))
    clf = MLPHead(epochs=100, validation_fraction=1 / 3, device="cpu", random_state=0)
    timed("head fit", lambda: clf.fit(Z[fit], y[fit]))
    acc = timed("score", lambda: clf.score(Z[te], y[te]))
    out["total"] = tuple(sum(out[k][i] for k in STEPS[:-1]) for i in range(2))
    out["accuracy"], out["epochs"] = float(acc), int(clf.n_iter_)
    emit(out)


def _run(src, a):
    env = dict(os.environ, PYTHONPATH=src)
    if a.threads:
        for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                  "SKLDP_NUM_THREADS"):
            env[k] = str(a.threads)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker",
           "--threads", str(a.threads or 0)]
    pin = None
    if a.cpus:
        cpus = {int(c) for c in a.cpus.split(",")}
        pin = lambda: os.sched_setaffinity(0, cpus)  # noqa: E731
    return run_worker(cmd, src, env, preexec_fn=pin)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="source checkout of the version to compare with")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--cpus", default=None, help="pin the workers to these CPUs, e.g. 0,1")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=None)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return worker(a.threads)
    current = os.path.dirname(HERE)
    sources = ([os.path.abspath(a.baseline)] if a.baseline else []) + [current]
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    best, meta = alternate(sources, lambda src: _run(src, a), a.repeat, keys=STEPS)
    cpus = a.cpus or f"{len(os.sched_getaffinity(0))} CPUs"
    lines = [f"Facebook PrivGE eps = 1 on the CPU, step by step; {cpus}, "
             f"{a.threads or 'default'} threads, {platform.machine()}, load average "
             f"{os.getloadavg()[0]:.1f} at the end; started {started} UTC; best of "
             f"{a.repeat} alternating rounds; wall / CPU seconds.", "",
             "Command: `python benchmarks/bench_privge_steps.py "
             + " ".join(sys.argv[1:] if argv is None else argv) + "`", ""]
    lines += before_after(best, STEPS)
    lines += ["", "Test accuracy and head epochs: " + "; ".join(
        f"{'before' if i < len(sources) - 1 else 'after'} {m['accuracy']:.4f}, "
        f"{m['epochs']} epochs" for i, m in enumerate(meta))]
    publish(lines, a.out)
    return best


if __name__ == "__main__":
    main()
