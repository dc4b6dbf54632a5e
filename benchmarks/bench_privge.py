"""Wall time and peak memory of the PrivGE steps: HDS -> PPR -> MLP head.

Datasets: ``facebook`` (22,470 nodes, 4,714 binary features, 170,823 edges)
and a synthetic graph the size of ogbn-arxiv (169,343 nodes, 128 dense
features, ~1.2M undirected edges drawn uniformly at random).

Each dataset runs in its own subprocess so that the peak resident memory
(``ru_maxrss``) of one does not hide the other. For every step the table
gives the wall time, the peak of memory traced by :mod:`tracemalloc`
(numpy/scipy buffers, allocated during the step), the process CPU time of the
step (less sensitive than the wall time to other jobs), and the process's peak RSS
after the step (monotone; it includes the data and earlier steps, and torch
buffers which tracemalloc does not see).

Usage::

    OMP_NUM_THREADS=1 SKLDP_DATASETS_DIR=/path/to/datasets \
        python benchmarks/bench_privge.py [--threads 1] [--datasets facebook synthetic]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))


def synthetic_graph(n=169_343, d=128, n_edges=1_200_000, n_classes=40, seed=0):
    """A uniform random graph with dense uniform features (``synthetic.uniform_graph``)."""
    from synthetic import uniform_graph  # same folder
    G, y = uniform_graph(n, d, n_edges, n_classes, seed)
    return G, y, (0.0, 1.0)


def load(name):
    if name == "synthetic":
        return synthetic_graph()
    from skldp.datasets import load_dataset
    b = load_dataset(name)
    return b.data, b.target, (0.0, 1.0)


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _measure(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    wall = time.perf_counter() - t0
    _measure.cpu = time.process_time() - c0
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return out, wall, peak


def worker(name, k, threads, epochs):
    import torch
    torch.set_num_threads(threads)
    from skldp.mechanisms import HDSMechanism
    from skldp.model_selection import random_node_split
    from skldp.propagation import PPRPropagation
    G, y, rng_ = load(name)
    n, d = G.shape
    rows = []
    hds = HDSMechanism(eps=1.0, k=k, feature_range=rng_, random_state=0)
    R, wall, peak = _measure(lambda: hds.fit(G).transform(G))
    rows.append(dict(dataset=name, n=n, d=d, edges=G.adjacency.nnz // 2,
                     step=f"HDS eps=1 k={hds.k_}", wall_s=wall, cpu_s=_measure.cpu,
                     traced_peak_mb=peak,
                     rss_mb=_rss_mb()))
    ppr = PPRPropagation()  # the defaults: alpha=0.1, r=0.5, tol=1e-3, float32
    Z, wall, peak = _measure(lambda: ppr.fit(R).transform(R))
    rows.append(dict(dataset=name, n=n, d=d, edges=G.adjacency.nnz // 2,
                     step=f"PPR alpha=0.1 r=0.5 ({ppr._run_info['solver']})", wall_s=wall,
                     cpu_s=_measure.cpu,
                     traced_peak_mb=peak,
                     rss_mb=_rss_mb()))
    try:
        from skldp.models import MLPHead
    except ImportError:
        print("skldp.models.MLPHead is not available: MLP step skipped", file=sys.stderr)
    else:
        tr, va, te = random_node_split(y, random_state=0)
        fit = tr | va
        clf = MLPHead(hidden_layer_sizes=(64,), epochs=epochs, batch_size=None,
                      validation_fraction=1 / 3, patience=10, device="cpu", random_state=0)
        _, wall, peak = _measure(lambda: clf.fit(Z[fit], y[fit]))
        acc = clf.score(Z[te], y[te])
        rows.append(dict(dataset=name, n=n, d=d, edges=G.adjacency.nnz // 2,
                         step=f"MLPHead (64,) {clf.n_iter_} epochs, test acc {acc:.3f}",
                         wall_s=wall, cpu_s=_measure.cpu, traced_peak_mb=peak,
                         rss_mb=_rss_mb()))
    print("RESULT " + json.dumps(rows))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["facebook", "synthetic"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--k", type=int, default=None,
                    help="HDS k (default: 50 on facebook as in the authors' script, else 5)")
    ap.add_argument("--worker", nargs=2, metavar=("DATASET", "K"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        k = None if a.worker[1] == "None" else int(a.worker[1])
        worker(a.worker[0], k, a.threads, a.epochs)
        return
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads),
               OPENBLAS_NUM_THREADS=str(a.threads))
    env.setdefault("SKLDP_DATASETS_DIR", os.path.join(HERE, "..", "..", "shared", "datasets"))
    rows = []
    for name in a.datasets:
        k = a.k if a.k is not None else (50 if name == "facebook" else None)
        cmd = [sys.executable, __file__, "--worker", name, str(k), "--threads", str(a.threads),
               "--epochs", str(a.epochs)]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
        sys.stderr.write(out.stderr[-2000:])
        line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")]
        if out.returncode or not line:
            print(f"{name}: worker failed (rc={out.returncode})")
            continue
        rows += json.loads(line[-1][len("RESULT "):])
    print(f"\nPrivGE steps, CPU, torch/OMP threads = {a.threads}; load average at the end "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall time grows with load, "
          "cpu time much less)\n")
    hdr = f"{'dataset':<10} {'nodes':>8} {'feat':>5} {'edges':>9}  {'step':<44} " \
          f"{'wall s':>7} {'cpu s':>7} {'traced MB':>9} {'peak RSS MB':>11}"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(f"{r['dataset']:<10} {r['n']:>8} {r['d']:>5} {r['edges']:>9}  {r['step']:<44} "
              f"{r['wall_s']:>7.1f} {r['cpu_s']:>7.1f} {r['traced_peak_mb']:>9.0f} "
              f"{r['rss_mb']:>11.0f}")


if __name__ == "__main__":
    main()
