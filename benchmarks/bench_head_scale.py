"""The MLP head on millions of rows, before and after, side by side in one run.

What a large PrivGE pipeline's head does besides training (issue 33): encoding
the labels, the stratified validation split, moving and normalising the rows,
predicting and scoring. Each process draws ``--rows`` rows of 128 uniform
float32 features with 40 uniform labels (chance accuracy: the features carry
no signal), fits ``MLPHead(hidden_layer_sizes=(64,), epochs=--epochs,
validation_fraction=1/3)`` on a random half and scores it on the other half,
timing the fit and the score (wall and CPU seconds). Against ``--baseline`` (a
checkout of the version to compare with, e.g. ``git worktree add
/tmp/skldp-base <commit>``) the two source trees run in subprocesses taken
alternately; each figure is the best of ``--repeat`` rounds. Few epochs keep
the training itself, which the host-side changes do not touch, from hiding them.

Usage::

    python benchmarks/bench_head_scale.py [--baseline /tmp/skldp-base] [--rows 2000000] \\
        [--epochs 3] [--device cpu] [--repeat 2] [--out table.md]
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
STEPS = ("head fit", "score")


def worker(rows, epochs, device):
    warnings.simplefilter("ignore")
    import torch

    import skldp
    from skldp import GraphData
    from skldp.models import MLPHead
    rng = np.random.default_rng(0)
    # public data over read-only memory (bytes): held without a copy
    X = np.frombuffer(rng.random((rows, 128), dtype=np.float32).tobytes(),
                      dtype=np.float32).reshape(rows, 128)
    y = rng.integers(0, 40, rows)
    # the reports of a mechanism, say: public, so no step is recorded reading them
    G = GraphData(np.zeros((rows, 1))).with_features(X, source="public")
    fit = np.zeros(rows, bool)
    fit[rng.permutation(rows)[: rows // 2]] = True
    clf = MLPHead(hidden_layer_sizes=(64,), epochs=epochs, validation_fraction=1 / 3,
                  patience=10, device=device, random_state=0)
    out = {"source": os.path.dirname(os.path.dirname(skldp.__file__))}

    def timed(name, fn):
        t0, c0 = time.perf_counter(), time.process_time()
        value = fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        out[name] = (time.perf_counter() - t0, time.process_time() - c0)
        return value

    timed("head fit", lambda: clf.fit(G[fit], y[fit]))
    out["accuracy"] = float(timed("score", lambda: clf.score(G[~fit], y[~fit])))
    emit(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="source checkout of the version to compare with")
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=None)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return worker(a.rows, a.epochs, a.device)
    current = os.path.dirname(HERE)
    sources = ([os.path.abspath(a.baseline)] if a.baseline else []) + [current]
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--rows", str(a.rows),
           "--epochs", str(a.epochs), "--device", a.device]
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    best, _ = alternate(sources, lambda src: run_worker(cmd, src, dict(os.environ,
                                                                       PYTHONPATH=src)),
                        a.repeat, keys=STEPS)
    lines = [f"MLPHead, {a.rows} rows x 128 features, 40 classes, {a.epochs} epochs, on "
             f"{a.device}; {len(os.sched_getaffinity(0))} CPUs, {platform.machine()}, load "
             f"average {os.getloadavg()[0]:.1f} at the end; started {started} UTC; best of "
             f"{a.repeat} alternating rounds; wall / CPU seconds.", "",
             "Command: `python benchmarks/bench_head_scale.py "
             + " ".join(sys.argv[1:] if argv is None else argv) + "`", ""]
    publish(lines + before_after(best, STEPS), a.out)
    return best


if __name__ == "__main__":
    main()
