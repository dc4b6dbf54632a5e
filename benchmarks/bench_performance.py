"""Speed targets of issue 17, each measured as a ratio or an end-to-end figure in one run.

Sections (each heavy one in its own subprocess, so that its peak RSS is its own):

* ``propagation``: ``GCNAggregation``, ``KProp(steps=8)``, ``FeatureSmoothing(steps=2)``
  and ``PPRPropagation`` (alpha 0.05, r 0.1, on eps = 1 HDS reports) on Facebook
  (its first ``--columns`` feature columns, 1,024 by default, to keep the run short),
  against a bare loop of the same sparse x dense products (same operator,
  same dtype, same column-block width and number of products, by the kernel
  each step uses: scipy's, or torch's embedding bag for PPR in float32) in the same
  process, with 1 thread (``n_jobs=1``) and with every CPU (``n_jobs=None``);
  float32 (default) and float64 (``--dtypes``). Times are the best of ``--repeat``
  runs taken alternately (skldp, bare, skldp, ...), so a burst of load from other
  processes hits both sides; wall time, and CPU (process) time for the
  one-thread runs, which a shared machine disturbs less. The load average is
  recorded with each row.
* ``privge``: Facebook PrivGE end to end, ``HDS(eps=1, k=50) -> PPR(alpha=0.05,
  r=0.1) -> MLPHead(epochs=100)``, fitted on the 50 + 25 % split of seed 0
  (validation fraction 1/3) and scored on the 25 % test nodes, as in
  the ``privge`` study (``studies/privge.py``): wall time, peak RSS, test accuracy.
* ``lpgnn``: LPGNN on Cora (multi-bit eps_x = 1, eps_y = 1, Kx = 16, Ky = 2, SAGE
  with 16 hidden units, as in the LPGNN study), one torch thread:
  milliseconds per training epoch ((200-epoch fit - 1-epoch fit) / 199, no early
  stop) and the 200-epoch fit end to end.
* ``--large``: the 1M-user / 10M-edge synthetic graph (uniform random edges,
  128 uniform features, 40 classes; built by ``synthetic.py``): the PrivGE
  pipeline end to end (HDS eps = 1 -> PPR defaults -> MLPHead, fit on half the
  nodes, scored on the rest) and the peak RSS of ``EdgeRR(eps=8)`` on its graph.

Usage::

    SKLDP_DATASETS_DIR=/path/to/datasets python benchmarks/bench_performance.py \\
        [--sections propagation privge lpgnn] [--large] [--repeat 2] [--out table.md]

The Markdown table (with machine, thread counts and this command) goes to
stdout and to ``--out`` when given.
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if os.path.dirname(HERE) not in sys.path:   # the checkout's studies (and skldp if not installed)
    sys.path.append(os.path.dirname(HERE))


def _rss_gib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _best_alternating(fns, repeat, cpu=None):
    """Best wall time of each of ``fns`` over ``repeat`` alternating rounds.

    With a list ``cpu``, the best process (CPU) time of each is appended to it:
    for one-thread runs on a shared machine it is less affected by other jobs.
    """
    best = [np.inf] * len(fns)
    best_cpu = [np.inf] * len(fns)
    for _ in range(repeat):
        for i, f in enumerate(fns):
            t0, c0 = time.perf_counter(), time.process_time()
            f()
            best[i] = min(best[i], time.perf_counter() - t0)
            best_cpu[i] = min(best_cpu[i], time.process_time() - c0)
    if cpu is not None:
        cpu.extend(best_cpu)
    return best


# ----------------------------------------------------------------- propagation
def _ratio_rows(A, X, dtype, repeat):
    """GCNAggregation, KProp(8), FeatureSmoothing(2) vs bare loops of their products (in
    float32 on torch's embedding-bag kernel, by blocks of columns, as the steps)."""
    from skldp import GraphData
    from skldp.propagation import FeatureSmoothing, GCNAggregation, KProp
    from skldp.propagation._gcn_aggregation import propagation_matrix
    from skldp.utils._adjacency import normalized_adjacency
    dt = np.dtype(dtype)
    cases = [("GCNAggregation", GCNAggregation, {}, propagation_matrix(A, True, "sym", dt), 1),
             ("KProp(steps=8)", KProp, {"steps": 8}, propagation_matrix(A, True, "rw", dt), 8),
             ("FeatureSmoothing(steps=2)", FeatureSmoothing, {"steps": 2},
              normalized_adjacency(A, False, "rw", dtype=dt, isolated_keep_own=True), 2)]
    rows = []
    for name, cls, kw, P, steps in cases:
        if dt == np.float32:
            # the kernel and the block width the steps use in float32: torch's embedding
            # bag on blocks of _BAG_COLUMNS columns
            import torch

            from skldp._torch._sparse import sparse_matmul, to_torch_sparse
            from skldp.propagation._spmm import _BAG_COLUMNS
            Pt = to_torch_sparse(P)
            blocks = [torch.from_numpy(_aligned(X[:, s:s + _BAG_COLUMNS]))
                      for s in range(0, X.shape[1], _BAG_COLUMNS)]

            def bare(Pt=Pt, blocks=blocks, steps=steps):
                for Z in blocks:
                    for _ in range(steps):
                        Z = sparse_matmul(Pt, Z)
        else:
            def bare(P=P, steps=steps):
                Z = X
                for _ in range(steps):
                    Z = P @ Z
                return Z

        def skl(jobs, cls=cls, kw=kw):
            # a fresh graph each time: the result is memoised per graph
            return cls(dtype=dtype, n_jobs=jobs, **kw).fit_transform(GraphData(X, A))

        cpu = []
        t1, tb, t2 = _best_alternating([lambda: skl(1), bare, lambda: skl(None)], repeat, cpu)
        rows.append(dict(case=name, dtype=dtype, skldp_1=t1, bare=tb, skldp_all=t2,
                         cpu_skldp_1=cpu[0], cpu_bare=cpu[1],
                         products=steps, block=X.shape[1], load=os.getloadavg()[0]))
    return rows


def _fastest_product(M, B):
    """``M @ B`` by the kernel PPR's CPU path uses: torch's embedding bag in float32
    (``sparse_matmul``), scipy's CSR kernel in float64."""
    if B.dtype != np.float32:
        return lambda: M @ B
    import torch

    from skldp._torch._sparse import sparse_matmul, to_torch_sparse
    Mt, Bt = to_torch_sparse(M), torch.from_numpy(_aligned(B))
    return lambda: sparse_matmul(Mt, Bt)


def _aligned(B):
    """A copy of ``B`` starting on a cache line, as the steps' blocks do: the kernel
    reads a block of numpy's (16 bytes past one) about 10 % slower, which flattered the
    ratios, by chance of the address."""
    from skldp.utils._blocks import aligned_empty
    out = aligned_empty(B.shape, B.dtype)
    out[...] = B
    return out


def _ppr_row(A, R, dtype, repeat):
    """PPRPropagation (Facebook settings) vs the same number of products of its operator."""
    import scipy.sparse as sp

    from skldp import GraphData
    from skldp.propagation import PPRPropagation
    from skldp.propagation._ppr import _scaled, _with_loops
    dt = np.dtype(dtype)
    info = {}

    def ppr(jobs):
        p = PPRPropagation(alpha=0.05, r=0.1, dtype=dtype, n_jobs=jobs)
        p.fit_transform(GraphData(R, A))
        info.update(p._run_info)

    ppr(1)   # products, block width and row order of this run
    w, products, perm = info["block_columns"], info["products"], info["order"]
    Aw, deg = _with_loops(A, False)
    M = _scaled(Aw, deg ** -0.5, deg ** -0.5, dt)
    Mp = sp.csr_matrix(M[perm][:, perm] * -0.95, dtype=dt)
    Mp.sort_indices()
    B = np.random.default_rng(0).random((A.shape[0], w)).astype(dt)
    product = _fastest_product(Mp, B)

    def bare():
        for _ in range(products):
            product()

    cpu = []
    t1, tb, t2 = _best_alternating([lambda: ppr(1), bare, lambda: ppr(None)], repeat, cpu)
    return dict(case="PPRPropagation(alpha=0.05, r=0.1, tol=1e-3)", dtype=dtype, skldp_1=t1,
                bare=tb, skldp_all=t2, cpu_skldp_1=cpu[0], cpu_bare=cpu[1],
                products=products, block=w, load=os.getloadavg()[0])


def section_propagation(repeat, columns=1024, dtypes=("float32", "float64")):
    import torch

    from skldp import GraphData
    from skldp.datasets import load_dataset
    from skldp.mechanisms import HDSMechanism
    torch.set_num_threads(1)
    G0 = load_dataset("facebook").data
    A = G0.adjacency
    R = HDSMechanism(eps=1.0, k=50, feature_range=(0, 1),
                     random_state=0).fit_transform(GraphData(G0.features, A)).features
    R = R[:, :columns]
    rows = []
    for dtype in dtypes:
        X = np.asarray(G0.features[:, :columns].toarray(), dtype=dtype)
        rows += _ratio_rows(A, X, dtype, repeat)
        del X
        rows.append(_ppr_row(A, R, dtype, max(1, repeat - 1)))
    return rows


# ---------------------------------------------------------------------- privge
def section_privge():
    import torch
    from sklearn.pipeline import Pipeline

    from skldp.datasets import load_dataset
    from skldp.mechanisms import HDSMechanism
    from skldp.model_selection import random_node_split
    from skldp.models import MLPHead
    from skldp.propagation import PPRPropagation
    t_all = time.perf_counter()
    b = load_dataset("facebook")
    G, y = b.data, np.asarray(b.target)
    tr, va, te = random_node_split(y, 0.5, 0.25, 0.25, random_state=0)
    fit = tr | va
    t_load = time.perf_counter() - t_all
    pipe = Pipeline([("hds", HDSMechanism(eps=1.0, k=50, feature_range=(0, 1), random_state=0)),
                     ("ppr", PPRPropagation(alpha=0.05, r=0.1)),
                     ("clf", MLPHead(epochs=100, validation_fraction=1 / 3, random_state=0))])
    t0 = time.perf_counter()
    R = pipe[0].fit_transform(G[fit])
    t_hds = time.perf_counter() - t0
    t0 = time.perf_counter()
    Z = pipe[1].fit_transform(R)
    t_ppr = time.perf_counter() - t0
    t0 = time.perf_counter()
    pipe[2].fit(Z, y[fit])
    t_head = time.perf_counter() - t0
    t0 = time.perf_counter()
    acc = float(pipe.score(G[te], y[te]))
    t_score = time.perf_counter() - t0
    total = t_hds + t_ppr + t_head + t_score
    return [dict(case="Facebook PrivGE eps=1 end to end", total=total, load=t_load, hds=t_hds,
                 ppr=t_ppr, head=t_head, score=t_score, epochs=int(pipe[2].n_iter_), acc=acc,
                 rss_gib=_rss_gib(), threads=torch.get_num_threads())]


# ----------------------------------------------------------------------- lpgnn
def section_lpgnn(epochs=200):
    import torch
    from sklearn.pipeline import Pipeline

    from skldp.datasets import load_dataset
    from skldp.mechanisms import MultiBitMechanism
    from skldp.model_selection import random_node_split
    from skldp.models import LPGNNClassifier
    from studies.lpgnn import PAPER_OPTIONS
    torch.set_num_threads(1)   # as the measurement (one thread each)
    b = load_dataset("cora")
    G, y = b.data, np.asarray(b.target)
    tr, va, te = random_node_split(y, 0.5, 0.25, 0.25, random_state=0)
    rows = []
    for ep in (1, epochs):   # the 1-epoch fit gives the fixed cost (mechanism, KProp, setup)
        pipe = Pipeline([("mb", MultiBitMechanism(1.0, feature_range=(0, 1), random_state=0)),
                         ("clf", LPGNNClassifier(eps_y=1.0, classes=np.arange(y.max() + 1),
                                                 x_steps=16, y_steps=2, backbone="sage",
                                                 hidden_size=16, activation="selu",
                                                 dropout=0.5, lr=0.01, weight_decay=1e-4,
                                                 epochs=ep, patience=ep + 1, device="cpu",
                                                 random_state=0, validation=va,
                                                 # the configuration of the recorded timings
                                                 **PAPER_OPTIONS))])
        t0 = time.perf_counter()
        pipe.fit(G[tr | va], y[tr | va])
        rows.append(time.perf_counter() - t0)
        acc = float(pipe.score(G[te], y[te]))
    per_epoch = (rows[1] - rows[0]) / (epochs - 1)
    return [dict(case=f"LPGNN Cora ({epochs} epochs)", fit_s=rows[1], fixed_s=rows[0],
                 ms_per_epoch=1e3 * per_epoch, acc=acc, threads=torch.get_num_threads())]


# ----------------------------------------------------------------------- large
def synthetic_graph(n=1_000_000, d=128, n_edges=10_000_000, n_classes=40, seed=0):
    """Uniform random graph, dense uniform features (``synthetic.uniform_graph``)."""
    sys.path.insert(0, HERE)
    from synthetic import uniform_graph  # same folder
    return uniform_graph(n, d, n_edges, n_classes, seed)


def section_large_privge(n=1_000_000):
    import torch

    from skldp.mechanisms import HDSMechanism
    from skldp.models import MLPHead
    from skldp.propagation import PPRPropagation
    G, y = synthetic_graph(n, n_edges=10 * n)
    fit = np.zeros(len(y), bool)
    fit[np.random.default_rng(0).permutation(len(y))[: len(y) // 2]] = True
    t0 = time.perf_counter()
    hds = HDSMechanism(eps=1.0, feature_range=(0, 1), random_state=0)   # k: its default
    R = hds.fit(G[fit]).transform(G)
    t_hds = time.perf_counter() - t0
    t0 = time.perf_counter()
    Z = PPRPropagation().fit_transform(R)
    t_ppr = time.perf_counter() - t0
    t0 = time.perf_counter()
    clf = MLPHead(hidden_layer_sizes=(64,), epochs=100, validation_fraction=1 / 3, patience=10,
                  device="cpu", random_state=0).fit(Z[fit], y[fit])   # as bench_privge.py
    t_head = time.perf_counter() - t0
    t0 = time.perf_counter()
    clf.predict(Z[~fit])
    t_pred = time.perf_counter() - t0
    return [dict(case=f"{n} users / {10 * n} edges PrivGE end to end",
                 total=t_hds + t_ppr + t_head + t_pred, hds=t_hds, ppr=t_ppr, head=t_head,
                 score=t_pred, epochs=int(clf.n_iter_), rss_gib=_rss_gib(),
                 threads=torch.get_num_threads())]


def section_large_edgerr(n=1_000_000):
    from skldp import GraphData
    from skldp.mechanisms import EdgeRR
    G, _ = synthetic_graph(n, n_edges=10 * n)
    G = GraphData(np.zeros((G.shape[0], 1), np.float32), G.adjacency)
    base = _rss_gib()
    t0 = time.perf_counter()
    out = EdgeRR(8.0, random_state=0).fit_transform(G)
    wall = time.perf_counter() - t0
    A = out.adjacency
    return [dict(case=f"EdgeRR(eps=8) on {n} users / {10 * n} edges", wall=wall,
                 rss_gib=_rss_gib(), rss_before_gib=base, edges_out=int(A.nnz // 2),
                 output_gib=(A.data.nbytes + A.indices.nbytes + A.indptr.nbytes) / 2**30)]


SECTIONS = {"propagation": section_propagation, "privge": section_privge,
            "lpgnn": section_lpgnn, "large_privge": section_large_privge,
            "large_edgerr": section_large_edgerr}


# ------------------------------------------------------------------- reporting
def _pct(x):
    return "—" if x is None else f"{100 * x:.1f}"


def args_columns(args):
    return args[args.index("--columns") + 1] if "--columns" in args else 1024


def _table(results, args, started, elapsed):
    import scipy
    import torch
    lines = ["# Performance (issue 17)", "",
             f"Machine: {platform.processor() or platform.machine()}, "
             f"{len(os.sched_getaffinity(0))} CPUs available, Python "
             f"{platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
             f"torch {torch.__version__} (CPU threads: see each row), load average "
             f"{os.getloadavg()[0]:.1f} at the end; run started {started} UTC, took "
             f"{elapsed / 60:.1f} min.", "",
             "Command: `" + " ".join(["python", "benchmarks/bench_performance.py"] + args) + "`",
             ""]
    prop = results.get("propagation")
    if prop:
        lines += ["## Propagation vs a bare loop of the same sparse x dense products "
                  f"(Facebook, first {args_columns(args)} feature columns)",
                  "",
                  "Bare loop: `P @ X` repeated, same operator, dtype, block width and number "
                  "of products, one thread (PPR in float32: torch's embedding-bag product, "
                  "the kernel of its solve; otherwise scipy's). Ratio = skldp time / bare "
                  "time (1.0 = the bare rate; below 1 with both cores). Best of the "
                  "alternating repeats, wall time and, for the one-thread runs, CPU "
                  "(process) time; load = 1-minute load average after the row.", "",
                  "| step | dtype | products x columns | bare s | skldp 1 thread s | ratio | "
                  "CPU: bare s | CPU: skldp 1 thread s | CPU ratio | skldp all CPUs s | "
                  "ratio | load |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in prop:
            cb, c1 = r.get("cpu_bare", float("nan")), r.get("cpu_skldp_1", float("nan"))
            lines.append(f"| {r['case']} | {r['dtype']} | {r['products']} x {r['block']} | "
                         f"{r['bare']:.2f} | {r['skldp_1']:.2f} | {r['skldp_1'] / r['bare']:.2f}"
                         f" | {cb:.2f} | {c1:.2f} | {c1 / cb:.2f}"
                         f" | {r['skldp_all']:.2f} | {r['skldp_all'] / r['bare']:.2f} | "
                         f"{r.get('load', float('nan')):.1f} |")
        lines.append("")
    for key, title in [("privge", "Facebook PrivGE end to end (HDS -> PPR -> MLPHead, eps = 1)"),
                       ("large_privge", None)]:
        for r in results.get(key, []):
            lines += [f"## {title or r['case']}", "",
                      "| total s | HDS s | PPR s | head s (epochs) | predict s | peak RSS GiB | "
                      "accuracy | torch threads |", "|---|---|---|---|---|---|---|---|",
                      f"| {r['total']:.1f} | {r['hds']:.1f} | {r['ppr']:.1f} | {r['head']:.1f} "
                      f"({r['epochs']}) | {r['score']:.1f} | {r['rss_gib']:.2f} | "
                      f"{_pct(r.get('acc'))} | {r['threads']} |", ""]
    for r in results.get("lpgnn", []):
        lines += ["## LPGNN Cora per epoch", "",
                  "| fit s | fixed cost s (1-epoch fit) | ms / epoch | test accuracy | "
                  "torch threads |", "|---|---|---|---|---|",
                  f"| {r['fit_s']:.2f} | {r['fixed_s']:.2f} | {r['ms_per_epoch']:.2f} | "
                  f"{r['acc'] * 100:.1f} | {r['threads']} |", ""]
    for r in results.get("large_edgerr", []):
        lines += [f"## {r['case']}: peak memory", "",
                  "| wall s | peak RSS GiB (process) | RSS before EdgeRR GiB | output edges | "
                  "output CSR GiB |", "|---|---|---|---|---|",
                  f"| {r['wall']:.1f} | {r['rss_gib']:.2f} | {r['rss_before_gib']:.2f} | "
                  f"{r['edges_out']} | {r.get('output_gib', float('nan')):.2f} |", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", nargs="*", default=["propagation", "privge", "lpgnn"],
                    choices=["propagation", "privge", "lpgnn"])
    ap.add_argument("--large", action="store_true",
                    help="also the 1M-user graph (PrivGE end to end, EdgeRR peak memory)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--columns", type=int, default=1024,
                    help="feature columns of the propagation section (Facebook has 4,714)")
    ap.add_argument("--dtypes", nargs="*", default=["float32", "float64"],
                    choices=["float32", "float64"], help="dtypes of the propagation section")
    ap.add_argument("--out", default=None, help="also write the Markdown table here")
    ap.add_argument("--large-nodes", type=int, default=1_000_000,
                    help="users of the --large graph (10 edges each); smaller for a smoke test")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        warnings.simplefilter("ignore")
        fn = SECTIONS[a.worker]
        if a.worker == "propagation":
            rows = fn(a.repeat, a.columns, tuple(a.dtypes))
        elif a.worker.startswith("large"):
            rows = fn(a.large_nodes)
        else:
            rows = fn()
        print("RESULT " + json.dumps(rows))
        return
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    t0 = time.perf_counter()
    sections = list(a.sections) + (["large_privge", "large_edgerr"] if a.large else [])
    results = {}
    for s in sections:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", s, "--repeat",
               str(a.repeat), "--columns", str(a.columns), "--large-nodes", str(a.large_nodes),
               "--dtypes", *a.dtypes]
        t1 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True)
        line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")]
        if out.returncode or not line:
            sys.stderr.write(out.stderr[-3000:])
            print(f"section {s} failed (rc={out.returncode})", file=sys.stderr)
            continue
        results[s] = json.loads(line[-1][len("RESULT "):])
        print(f"[{s}: {time.perf_counter() - t1:.0f} s]", file=sys.stderr, flush=True)
    table = _table(results, sys.argv[1:], started, time.perf_counter() - t0)
    print(table)
    if a.out:
        with open(a.out, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
