"""Propagation set-up, before and after (issue 33), side by side in one run.

The same measurement runs against two source trees of skldp: ``--baseline``
(a checkout of the version to compare with, e.g. made with
``git worktree add /tmp/skldp-base <commit>``) and this checkout, in
subprocesses taken alternately (baseline, current, baseline, ...) so that load
from other processes hits both; each figure is the best of ``--repeat`` rounds.

On one synthetic graph (``synthetic.uniform_graph``: ``--nodes`` users, 10
edges each, undirected, built as a plain ``GraphData(X, A)``) and HDS-like
sparse reports (5 non-zeros per user; 8 columns, so that the one product of a
set-up measurement costs little, 128 for ``--full``), each process times
(after importing torch, which the first PPR call would otherwise include):

* ``is_symmetric``: the first symmetry check of the graph;
* ``PPR set-up``: ``PPRPropagation(max_iter=1)`` (one product, so the time is
  the set-up: normalisation, ordering, conversion to torch), first call on the
  graph, then ``PPR set-up, graph seen``: the same on another set of reports over
  the same graph (what a pipeline, a search or a second mechanism meets);
* ``GCNAggregation``: first call, then on other features of the same graph;
* with ``--full``: ``PPRPropagation()`` (the default tolerance) on new reports.

``--backends scipy torch`` (torch on the CPU: the same host-side set-up as on
CUDA). Usage::

    python benchmarks/bench_setup.py --baseline /tmp/skldp-base [--nodes 1000000] \\
        [--backends scipy torch] [--repeat 2] [--full] [--out table.md]
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


def _reports(n, d=8, k=5, seed=1):
    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    cols = rng.integers(0, d, (n, k)).ravel()
    rows = np.repeat(np.arange(n), k)
    vals = rng.random(n * k).astype(np.float32)
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, d))


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def worker(n, backends, full):
    warnings.simplefilter("ignore")
    sys.path.insert(0, HERE)
    from synthetic import uniform_graph

    import skldp
    import skldp.models  # noqa: F401  (torch, imported by PPR's device check)
    from skldp import GraphData
    from skldp.propagation import GCNAggregation, PPRPropagation
    H, _ = uniform_graph(n, d=1, n_edges=10 * n, hints=False)
    A = H.adjacency
    del H
    G = GraphData(_reports(n, seed=1), A)   # the library's defaults: no hints
    out = {"source": os.path.dirname(os.path.dirname(skldp.__file__))}
    out["is_symmetric"], _ = _timed(G.is_symmetric)
    seed = 2
    for b in backends:
        def ppr(max_iter, seed, b=b):
            R = G.with_features(_reports(n, 8 if max_iter == 1 else 128, seed=seed),
                                source="public")
            return _timed(lambda: PPRPropagation(max_iter=max_iter, backend=b,
                                                 device="cpu").fit_transform(R))[0]
        out[f"PPR set-up ({b})"] = ppr(1, seed)
        out[f"PPR set-up, graph seen ({b})"] = ppr(1, seed + 1)
        if full:
            out[f"PPR tol 1e-3, graph seen ({b})"] = ppr(1000, seed + 2)
        seed += 3
    X = np.random.default_rng(0).random((n, 16), dtype=np.float32)
    out["GCNAggregation"], _ = _timed(lambda: GCNAggregation().fit_transform(
        G.with_features(X, source="public")))
    out["GCNAggregation, graph seen"], _ = _timed(lambda: GCNAggregation().fit_transform(
        G.with_features(X + 1, source="public")))
    emit(out)


def _run(src, a):
    env = dict(os.environ, PYTHONPATH=src)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--nodes", str(a.nodes),
           "--backends", *a.backends] + (["--full"] if a.full else [])
    return run_worker(cmd, src, env)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="source checkout of the version to compare with")
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--backends", nargs="+", default=["scipy", "torch"],
                    choices=["scipy", "torch"])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--full", action="store_true", help="also PPR to its default tolerance")
    ap.add_argument("--out", default=None)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return worker(a.nodes, a.backends, a.full)
    current = os.path.dirname(HERE)
    sources = ([os.path.abspath(a.baseline)] if a.baseline else []) + [current]
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    best, _ = alternate(sources, lambda src: _run(src, a), a.repeat)
    names = list(best[-1])
    lines = [f"Propagation set-up, {a.nodes} users / {10 * a.nodes} edges; "
             f"{len(os.sched_getaffinity(0))} CPUs, {platform.machine()}, load average "
             f"{os.getloadavg()[0]:.1f} at the end; started {started} UTC; best of "
             f"{a.repeat} alternating rounds.", "",
             "Command: `python benchmarks/bench_setup.py "
             + " ".join(sys.argv[1:] if argv is None else argv) + "`", ""]
    lines += before_after(best, names, fmt=lambda v: f"{v:.3f}", digits=1)
    publish(lines, a.out)
    return best


if __name__ == "__main__":
    main()
