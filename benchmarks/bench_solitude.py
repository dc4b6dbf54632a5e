"""Speed and memory of EdgeRR (edge LDP on adjacency lists) and of Solitude's sparse structure.

Cases (each in a fresh worker process so that its peak resident memory is its own):

- ``facebook`` (22,470 users, 170,823 edges) at eps_a = 8, reports kept directed and
  symmetrised with OR;
- a synthetic graph of 1,000,000 users and 10,000,000 undirected edges (built vectorised,
  uniform random pairs) at eps_a = 8, reports kept directed (OR would double the output);
  ``synthetic:N`` runs the same with N users and 10 N edges (for machines short of memory:
  at eps_a = 8 the 1M-user output alone holds ~3.5e8 entries, ~2.6 GiB);
- the number of weights SolitudeClassifier learns on Cora at eps_a = 7 (one per received
  entry) against the n^2 of a dense calibrated adjacency.

For every EdgeRR case: wall time of ``EdgeRR.fit_transform``, stored entries against the
expected ``n(n-1)q + 2m(1-2q)``, peak resident memory (``ru_maxrss``) before and after,
and the size a dense n x n matrix would need (1 byte per entry as bool, 4 as float32).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_solitude.py [--cases facebook synthetic cora]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

GIB = 2.0 ** 30


def _rss_gib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB  # Linux: KiB


def synthetic(n=1_000_000, n_edges=10_000_000, seed=0):
    """Uniform random simple undirected graph with about n_edges edges (vectorised)."""
    rng = np.random.default_rng(seed)
    m = int(n_edges * 1.001)
    u = rng.integers(0, n, m, dtype=np.int64)
    v = rng.integers(0, n, m, dtype=np.int64)
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    codes = np.unique(lo[lo != hi] * n + hi[lo != hi])[:n_edges]
    lo, hi = codes // n, codes % n
    rows = np.concatenate([lo, hi])
    cols = np.concatenate([hi, lo])
    order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    A = sp.csr_matrix((np.ones(len(cols), np.float32), cols.astype(np.int32),
                       indptr.astype(np.int32)), shape=(n, n))
    A.has_sorted_indices = True
    return A


def worker_edge_rr(case, symmetrize, eps):
    from skldp import GraphData
    from skldp.mechanisms import EdgeRR
    t0 = time.perf_counter()
    if case == "facebook":
        from skldp.datasets import load_dataset
        G = load_dataset("facebook").data
        G = GraphData(np.zeros((G.n_nodes, 1), np.float32), G.adjacency)
    else:
        n_nodes = int(case.split(":")[1]) if ":" in case else 1_000_000
        A = synthetic(n_nodes, 10 * n_nodes)
        G = GraphData(np.zeros((A.shape[0], 1), np.float32), A)
        del A
    build = time.perf_counter() - t0
    n, m = G.n_nodes, G.adjacency.nnz // 2
    rss_before = _rss_gib()
    mech = EdgeRR(eps, symmetrize=symmetrize, random_state=0)
    t0 = time.perf_counter()
    Gr = mech.fit_transform(G)
    secs = time.perf_counter() - t0
    R = Gr.adjacency
    return dict(case=case, symmetrize=symmetrize, eps=eps, n_nodes=n, n_edges=m,
                build_s=round(build, 2), seconds=round(secs, 2), nnz_out=int(R.nnz),
                nnz_expected=round(mech.expected_n_edges(n, m)),
                peak_rss_before_gib=round(rss_before, 2), peak_rss_gib=round(_rss_gib(), 2),
                output_gib=round((R.data.nbytes + R.indices.nbytes + R.indptr.nbytes) / GIB, 3),
                dense_bool_gib=round(n * n / GIB, 1), dense_float32_gib=round(4 * n * n / GIB, 1))


def worker_cora():
    import torch

    from skldp.datasets import load_cora
    from skldp.mechanisms import EdgeRR
    from skldp.models import SolitudeClassifier
    torch.set_num_threads(1)
    cora = load_cora()
    G = EdgeRR(7.0, symmetrize="directed", random_state=0).fit_transform(cora.data)
    t0 = time.perf_counter()
    clf = SolitudeClassifier("gcn", epochs=20, early_stopping=False, random_state=0)
    clf.fit(G[cora.train_mask], cora.target[cora.train_mask])
    secs = time.perf_counter() - t0
    n = G.n_nodes
    return dict(case="solitude_cora_structure", n_nodes=n, received_entries=int(G.adjacency.nnz),
                learned_weights=int(len(clf.edge_weights_)), dense_weights=n * n,
                seconds_per_epoch=round(secs / 20, 3), peak_rss_gib=round(_rss_gib(), 2))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--cases", nargs="+", default=["facebook", "synthetic", "cora"])
    p.add_argument("--eps", type=float, default=8.0)
    p.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker is not None:
        if args.worker[0] == "cora":
            out = worker_cora()
        else:
            out = worker_edge_rr(args.worker[0], args.worker[1], float(args.worker[2]))
        print("RESULT " + json.dumps(out), flush=True)
        return
    runs = []
    for case in args.cases:
        if case == "cora":
            runs.append(["cora"])
        elif case == "facebook":
            runs += [["facebook", "directed", str(args.eps)], ["facebook", "or", str(args.eps)]]
        else:
            runs.append([case, "directed", str(args.eps)])
    for w in runs:
        proc = subprocess.run([sys.executable, __file__, "--worker", *w], capture_output=True,
                              text=True)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        if proc.returncode or not lines:
            print(f"{w}: failed (rc={proc.returncode})\n{proc.stderr[-2000:]}", flush=True)
            continue
        print(json.dumps(json.loads(lines[-1][7:])), flush=True)


if __name__ == "__main__":
    main()
