"""Speed and memory of EdgeRR (edge LDP on adjacency lists) and of Solitude's sparse structure.

Cases (each in a fresh worker process so that its peak resident memory is its own):

- ``facebook`` (22,470 users, 170,823 edges) at eps_a = 8, reports kept directed and
  symmetrised with OR;
- a synthetic graph of 1,000,000 users and 10,000,000 undirected edges (built vectorised,
  uniform random pairs) at eps_a = 8, reports kept directed (OR would double the output);
  ``synthetic:N`` runs the same with N users and 10 N edges (for machines short of memory:
  at eps_a = 8 the 1M-user output alone holds ~3.5e8 entries, ~2.6 GiB);
- the number of weights SolitudeClassifier learns on Cora at eps_a = 7 (one per received
  entry) against the n^2 of a dense calibrated adjacency;
- ``gradient`` (not in the default cases): one structure step's product and backward on
  Facebook's received graph (eps_a, OR), torch's sparse-product backward (a dense n x n
  intermediate) against SolitudeClassifier's entries-only backward, as a ratio in one run.

For every EdgeRR case: wall time of ``EdgeRR.fit_transform``, stored entries against the
expected ``n(n-1)q + 2m(1-2q)``, peak resident memory (``ru_maxrss``) before and after,
and the size a dense n x n matrix would need (1 byte per entry as bool, 4 as float32).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_solitude.py [--cases facebook synthetic cora gradient]
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


def worker_structure_gradient(eps, repeat=5):
    """One structure step's product and backward on Facebook's received graph, two ways.

    ``torch``: a COO tensor built from the learned values and ``torch.sparse.mm``, whose
    backward forms the dense ``n x n`` matrix ``grad @ h^T`` (SolitudeClassifier's
    code before this benchmark was added). ``skldp``: ``_WeightedSpMM``, whose backward
    works on the stored entries only. Best of ``repeat`` alternating rounds, one
    thread, hidden width 16; the peak RSS increase of the first round of each.
    """
    import torch

    from skldp.datasets import load_dataset
    from skldp.mechanisms import EdgeRR
    from skldp.models._solitude import _EdgeStructure, _WeightedOperand
    torch.set_num_threads(1)
    G = load_dataset("facebook").data
    A = G.adjacency if np.isinf(eps) else \
        EdgeRR(eps, symmetrize="or", random_state=0).fit_transform(G).adjacency
    struct = _EdgeStructure(A, "gcn", torch.device("cpu"))
    n = A.shape[0]
    gen = torch.Generator().manual_seed(0)
    w = torch.rand(len(struct.target), generator=gen).requires_grad_()
    h = torch.randn(n, 16, generator=gen).requires_grad_()
    R = torch.randn(n, 16, generator=gen)
    row, col = struct.t_row, struct.t_col   # the stored entries and the GCN's self loops

    def torch_step():
        vals = torch.cat([w[struct.t_param], torch.ones(n)])
        a = torch.sparse_coo_tensor(torch.stack([row, col]), vals, (n, n)).coalesce()
        (torch.sparse.mm(a, h) * R).sum().backward()

    def skldp_step():
        vals = torch.cat([w[struct.t_param], torch.ones(n)])
        op = _WeightedOperand(struct.pattern, struct.pattern.values(vals))
        (op.matmul(h) * R).sum().backward()

    best = {"torch": np.inf, "skldp": np.inf}
    rss, grads = {}, {}
    for i in range(repeat):
        for name, step in (("skldp", skldp_step), ("torch", torch_step)):
            before = _rss_gib()
            t0 = time.perf_counter()
            step()
            best[name] = min(best[name], time.perf_counter() - t0)
            if i == 0:
                rss[name] = round(_rss_gib() - before, 3)
            grads[name] = (w.grad, h.grad)
            w.grad, h.grad = None, None
    err = max(float((a - b).abs().max() / b.abs().max())
              for a, b in zip(grads["skldp"], grads["torch"], strict=True))
    return dict(case="solitude_structure_gradient", eps=eps, n_nodes=n,
                received_entries=int(A.nnz), torch_s=round(best["torch"], 4),
                skldp_s=round(best["skldp"], 4), ratio=round(best["torch"] / best["skldp"], 1),
                peak_rss_increase_gib=rss, max_rel_grad_difference=err)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--cases", nargs="+", default=["facebook", "synthetic", "cora"])
    p.add_argument("--eps", type=float, default=8.0)
    p.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker is not None:
        if args.worker[0] == "cora":
            out = worker_cora()
        elif args.worker[0] == "gradient":
            out = worker_structure_gradient(float(args.worker[1]))
        else:
            out = worker_edge_rr(args.worker[0], args.worker[1], float(args.worker[2]))
        print("RESULT " + json.dumps(out), flush=True)
        return
    runs = []
    for case in args.cases:
        if case == "cora":
            runs.append(["cora"])
        elif case == "gradient":
            runs.append(["gradient", str(args.eps)])
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
