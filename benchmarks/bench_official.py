"""skldp against the authors' official code, end to end, as a ratio measured in one run.

For one system (LPGNN, PrivGE or RGNN) and one dataset, the script runs, in
alternation, the authors' official code and the equivalent skldp pipeline, each
in a fresh subprocess with one thread (``OMP_NUM_THREADS=1``,
``torch.set_num_threads(1)``), the same data (``skldp.datasets.load_dataset``),
the same random 50/25/25 node split, the same privacy budgets and the same
hyper-parameters. For each run it records

* the wall time of the whole subprocess (interpreter start, imports, data
  loading, the privacy mechanisms, propagation, training and the test score),
* its CPU time (user + system, from the child's resource usage as
  :func:`os.wait4` returns it, the per-child form of ``RUSAGE_CHILDREN``;
  threads included),
* its peak resident memory,
* the test accuracy each side reports,

and prints the ratio official / skldp of the wall and CPU times (medians over
``--repeat``). The machine's load average is printed with every run. The two
sides alternate (official, skldp, skldp, official, ...), so that a change of the
machine's load hits both alike. Before the first run, the sources of both
sides (skldp's package, the official checkout) are byte-compiled, as an
installed package is: no run pays for compiling them (``compile_sources``).

The official code is **not** part of this repository: pass the path of a
checkout of the authors' public repository (or set ``SKLDP_OFFICIAL_<SYSTEM>``)
and the Python that has its dependencies (``--official-python`` or
``SKLDP_OFFICIAL_PYTHON``; torch_geometric, torch_scatter and torch_sparse, and
for PrivGE the ``precompute/push`` extension built with its Makefile):

* LPGNN: https://github.com/sisaman/LPGNN (Sajadmanesh & Gatica-Perez, CCS 2021);
* PrivGE: https://github.com/Zening-Li/PrivGE (Li et al., CIKM 2024);
* RGNN: https://github.com/karuna-bhaila/RGNN (Bhaila et al., SDM 2024).

The adapter imports the official modules from the checkout and replaces only
what is needed to feed them our files and split, and to run on a CPU with the
current library versions (each listed in ``ADAPTER_NOTES``): the dataset loader
(LPGNN ``main.load_dataset``; PrivGE ``datasets.load_dataset`` and
``get_labels_split_idx``; RGNN ``data.load_dataset``), the ``__main__`` block of
scripts whose command line cannot select the CPU (PrivGE, RGNN: replicated with
the device set to the CPU), aliases for two names that torch_geometric 2.x
renamed, an empty ``nni`` module (imported, never used, by PrivGE), and, for
RGNN, the METIS call of torch_geometric's ``ClusterData`` (pymetis instead of
the torch_sparse build with METIS; the same METIS k-way partitioner). Models,
mechanisms, propagation, training loops and early stopping are the authors'.

Usage::

    SKLDP_DATASETS_DIR=/path/to/datasets python benchmarks/bench_official.py \\
        --system lpgnn --dataset cora --official /path/to/LPGNN \\
        --official-python /path/to/venv/bin/python --repeat 2 --timeout 1800
"""

# ruff: noqa: I001  (the adapters patch modules before importing the official ones: order matters)
import argparse
import contextlib
import functools
import json
import math
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if REPO not in sys.path:   # the checkout's studies (and skldp if not installed)
    sys.path.append(REPO)

SYSTEMS = ("lpgnn", "privge", "rgnn")

# Same settings on both sides. LPGNN: the authors' tuned values for eps_x = eps_y = 1
# (hparams/steps.csv and hparams/lwd.csv of the official repository, raw features,
# multi-bit mechanism, SAGE, 500 epochs without early stopping). PrivGE: the
# authors' node_class.sh line of the dataset is read from the checkout (eps = 1, HDS);
# skldp uses the settings of its PrivGE study (k = m, the same alpha; the head is
# skldp's MLPHead with early stopping). RGNN: the settings of skldp's RGNN study
# (eps = 1 per feature with m = 10, eps_y = 1, K_x = K_y, METIS bags, 100 epochs).
CONFIG = {
    "lpgnn": {
        "cora": dict(x_eps=1.0, y_eps=1.0, x_steps=2, y_steps=8, lr=0.01, weight_decay=1e-3,
                     dropout=0.5, epochs=500),
        "facebook": dict(x_eps=1.0, y_eps=1.0, x_steps=2, y_steps=4, lr=0.001,
                         weight_decay=1e-2, dropout=0.5, epochs=500),
    },
    "privge": {
        "cora": dict(eps=1.0, skldp_epochs=200),
        "facebook": dict(eps=1.0, skldp_epochs=100),
    },
    "rgnn": {
        "cora": dict(x_eps=1.0, y_eps=1.0, m=10, hops=8, n_clusters=64, alpha=1.0, group=25,
                     epochs=100),
        "facebook": dict(x_eps=1.0, y_eps=1.0, m=10, hops=4, n_clusters=128, alpha=1.0,
                         group=100, epochs=100),
    },
}

ADAPTER_NOTES = {
    "lpgnn": "main.load_dataset replaced (our graph, features and split; then the official "
             "ToSparseTensor and Normalize(0, 1)); torch_geometric 2.x aliases "
             "AddTrainValTestMask and utils.accuracy; run through the official main() with "
             "--device cpu.",
    "privge": "datasets.load_dataset and get_labels_split_idx replaced (our graph, features "
              "and split; then the official FeaturePerturbation); empty nni module; the "
              "__main__ block replicated with the CPU device and 1 torch thread (the script "
              "sets 2); the C++ push keeps its 32 hard-coded threads.",
    "rgnn": "data.load_dataset replaced (our graph, features and split; then the official "
            "preprocess_features); args.device set to the CPU (main.run sets it on a "
            "global copy only); ClusterData's METIS call through pymetis and its 1.x "
            "partptr attribute aliased.",
}


# ------------------------------------------------------------------ data (both sides)
def load_split(dataset, seed):
    """Graph, labels and the 50/25/25 split of skldp (boolean masks)."""
    import numpy as np

    from skldp.datasets import load_dataset
    from skldp.model_selection import random_node_split
    b = load_dataset(dataset)
    G, y = b.data, np.asarray(b.target)
    tr, va, te = random_node_split(y, 0.5, 0.25, 0.25, random_state=seed)
    return G, y, tr, va, te


def _torch_graph(dataset, seed):
    """The same graph as torch tensors for the official codes."""
    import numpy as np
    import scipy.sparse as sp
    import torch
    G, y, tr, va, te = load_split(dataset, seed)
    A = sp.coo_matrix(G.adjacency)
    X = G.features
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    return dict(A=sp.csr_matrix(G.adjacency, dtype=np.float32),
                edge_index=torch.from_numpy(np.vstack([A.row, A.col]).astype(np.int64)),
                x=torch.from_numpy(np.asarray(X, dtype=np.float32)),
                y=torch.from_numpy(y.astype(np.int64)),
                masks=[torch.from_numpy(m) for m in (tr, va, te)])


def _pyg_compat():
    """Names torch_geometric 2.x renamed or removed (used by code written for 1.7)."""
    import torch_geometric.transforms as T
    import torch_geometric.utils as U
    if not hasattr(T, "AddTrainValTestMask"):
        T.AddTrainValTestMask = T.RandomNodeSplit
    if not hasattr(U, "accuracy"):
        def accuracy(pred, target):   # torch_geometric 1.7's definition
            return int((pred == target).sum()) / target.numel()
        U.accuracy = accuracy


# ------------------------------------------------------------------ official workers
def official_lpgnn(path, dataset, cfg, seed, work):
    import pandas as pd
    _pyg_compat()
    import main as off_main   # the official entry point (LPGNN/main.py)
    from torch_geometric.data import Data
    from torch_geometric.transforms import ToSparseTensor
    from transforms import Normalize
    original = off_main.load_dataset

    @functools.wraps(original)
    def load_dataset(dataset="cora", data_dir=None, data_range=(0, 1), val_ratio=.25,
                     test_ratio=.25):
        g = _torch_graph(dataset, seed)
        data = Data(x=g["x"], edge_index=g["edge_index"], y=g["y"], num_nodes=len(g["y"]))
        data.train_mask, data.val_mask, data.test_mask = g["masks"]
        data = ToSparseTensor()(data)
        data.name = dataset
        data.num_classes = int(data.y.max().item()) + 1
        if data_range is not None:
            low, high = data_range
            data = Normalize(low, high)(data)
        return data

    off_main.load_dataset = load_dataset
    out = os.path.join(work, "output")
    sys.argv = ["main.py", "-d", dataset, "-m", "mbm", "-ex", str(cfg["x_eps"]),
                "-ey", str(cfg["y_eps"]), "-kx", str(cfg["x_steps"]), "-ky", str(cfg["y_steps"]),
                "--model", "sage", "--hidden-dim", "16", "--dropout", str(cfg["dropout"]),
                "--learning-rate", str(cfg["lr"]), "--weight-decay", str(cfg["weight_decay"]),
                "--max-epochs", str(cfg["epochs"]), "--patience", "0", "--device", "cpu",
                "-s", str(seed + 1), "-r", "1", "-o", out]
    off_main.main()
    csv = [f for f in os.listdir(out) if f.endswith(".csv")]
    acc = float(pd.read_csv(os.path.join(out, csv[0]))["test/acc"].iloc[0]) / 100
    return dict(accuracy=acc, command=" ".join(sys.argv[1:-2]))


def _node_class_line(path, dataset):
    """The authors' flags for ``dataset`` from PrivGE's node_class.sh."""
    for line in open(os.path.join(path, "node_class.sh")):
        if f"--dataset_str {dataset} " in line + " ":
            toks = line.split("classification.py", 1)[1].split()
            return dict(zip([t.lstrip("-") for t in toks[0::2]], toks[1::2], strict=True))
    raise ValueError(f"no line for {dataset} in node_class.sh")


def official_privge(path, dataset, cfg, seed, work):
    import random
    import types

    import numpy as np
    import torch
    sys.modules.setdefault("nni", types.ModuleType("nni"))   # imported, never used
    import datasets as off_ds   # PrivGE/datasets.py
    from perturbation import FeaturePerturbation

    def load_dataset(opt, task):
        g = _torch_graph(opt["dataset_str"], seed)
        graph = off_ds.Graph(adj=g["A"], attr=g["x"])
        graph.attr = FeaturePerturbation(opt["mechanism"], opt["eps"], opt["m"])(graph.attr)
        return graph

    def get_labels_split_idx(dataset_str):
        g = _torch_graph(dataset_str, seed)
        split = {k: torch.nonzero(m).view(-1)
                 for k, m in zip(("train", "valid", "test"), g["masks"], strict=True)}
        return g["y"], split

    off_ds.load_dataset = load_dataset
    off_ds.get_labels_split_idx = get_labels_split_idx
    import classification   # picks the two functions above up by name

    flags = _node_class_line(path, dataset)
    # classification.py's argparse defaults, then the authors' line for the dataset
    opt = dict(seed=20159, dataset_str=dataset, lr=0.01, epochs=1000, batch_size=64,
               num_layers=2, hidden_channels=128, mechanism="hds", eps=float("inf"),
               patience=50, log_steps=1, repeats=1, save=True, propagation="push", niter=10,
               alpha=0.1, rmax=5e-5, rrz=0.5, drop_prob=0.5, reg_lambda=5e-4, m=5)
    for k, v in flags.items():
        opt[k] = type(opt[k])(v) if k in opt and not isinstance(opt[k], str) else v
    opt["eps"] = float(cfg["eps"])
    opt["device"] = torch.device("cpu")
    random.seed(opt["seed"])
    np.random.seed(opt["seed"])
    torch.manual_seed(opt["seed"])
    log = os.path.join(work, "official_stdout.txt")
    with open(log, "w") as f, contextlib.redirect_stdout(f):
        classification.Instructor(opt).run()
    text = open(log).read()
    acc = float(re.findall(r"test eval avg: ([0-9.]+)", text)[-1]) / 100
    return dict(accuracy=acc, command=" ".join(f"--{k} {v}" for k, v in flags.items()),
                k=int(opt["m"]), alpha=float(opt["alpha"]), rmax=float(opt["rmax"]),
                epochs_max=int(opt["epochs"]))


def official_rgnn(path, dataset, cfg, seed, work):
    import numpy as np
    import torch
    import torch_geometric.loader.cluster as cluster

    def _metis(self, edge_index, num_nodes):   # METIS k-way through pymetis
        import pymetis
        import scipy.sparse as sp
        ei = edge_index.cpu().numpy()
        S = sp.csr_matrix((np.ones(ei.shape[1]), (ei[0], ei[1])), shape=(num_nodes, num_nodes))
        S = ((S + S.T) > 0).astype(np.float64).tocsr()
        S.setdiag(0)
        S.eliminate_zeros()
        S.sort_indices()
        _, parts = pymetis.part_graph(int(self.num_parts), xadj=S.indptr, adjncy=S.indices)
        return torch.as_tensor(np.asarray(parts), dtype=torch.long)

    cluster.ClusterData._metis = _metis
    if not hasattr(cluster.ClusterData, "partptr"):   # torch_geometric 1.x attribute
        cluster.ClusterData.partptr = property(lambda self: self.partition.partptr)
    import data as off_data   # RGNN/data.py
    from torch_geometric.data import Data

    def load_dataset(dataset, val_ratio=.25, test_ratio=.25, cols_to_group=0):
        g = _torch_graph(dataset, seed)
        d = Data(x=g["x"], edge_index=g["edge_index"], y=g["y"], num_nodes=len(g["y"]))
        d.train_mask, d.val_mask, d.test_mask = g["masks"]
        d.name = dataset
        d.num_classes = int(d.y.max().item()) + 1
        d.y = torch.nn.functional.one_hot(d.y, num_classes=d.num_classes).float()
        return off_data.preprocess_features(d, cols_to_group)

    import main as off_main   # RGNN/main.py
    off_main.load_dataset = load_dataset
    os.makedirs(os.path.join(work, "results"), exist_ok=True)
    sys.argv = ["main.py", "--seed", str(seed + 123), "--num_runs", "1", "--dataset", dataset,
                "--cols_to_group", str(cfg["group"]), "--model", "sage",
                "--x_eps", str(cfg["x_eps"]), "--m", str(cfg["m"]), "--y_eps", str(cfg["y_eps"]),
                "--xhops", str(cfg["hops"]), "--yhops", str(cfg["hops"]),
                "--num_clusters", str(cfg["n_clusters"]), "--alpha", str(cfg["alpha"]),
                "--epochs", str(cfg["epochs"]), "--out_file", "out.txt"]
    args = off_main.get_arguments()
    args.device = torch.device("cpu")
    off_main.args = args
    log = os.path.join(work, "official_stdout.txt")
    with open(log, "w") as f, contextlib.redirect_stdout(f):
        res = off_main.run_multiple(args)
    acc = float(np.mean(res["test_at_best_val"])) / 100
    return dict(accuracy=acc, command=" ".join(sys.argv[1:-2]))


# ------------------------------------------------------------------ skldp workers
def skldp_lpgnn(dataset, cfg, seed):
    import numpy as np
    from sklearn.pipeline import Pipeline

    from skldp.mechanisms import MultiBitMechanism
    from skldp.models import LPGNNClassifier
    G, y, tr, va, te = load_split(dataset, seed)
    pipe = Pipeline([
        ("mb", MultiBitMechanism(cfg["x_eps"], feature_range=(0, 1), random_state=seed)),
        ("clf", LPGNNClassifier(eps_y=cfg["y_eps"], classes=np.arange(y.max() + 1),
                                x_steps=cfg["x_steps"], y_steps=cfg["y_steps"],
                                # the official NodeClassifier: symmetric KProp, and the
                                # predictions propagated like the labels in the loss,
                                # the KProp output not centred
                                normalization="sym", propagate_predictions=True,
                                center_features=False,
                                backbone="sage", hidden_size=16, activation="selu",
                                dropout=cfg["dropout"], lr=cfg["lr"],
                                weight_decay=cfg["weight_decay"], epochs=cfg["epochs"],
                                patience=cfg["epochs"] + 1, device="cpu",
                                random_state=seed, validation=va))])
    pipe.fit(G[tr | va], y[tr | va])
    return dict(accuracy=float(pipe.score(G[te], y[te])),
                epochs=int(pipe[-1].n_iter_))


def skldp_privge(dataset, cfg, seed, official_path):
    from sklearn.pipeline import Pipeline

    from skldp.mechanisms import HDSMechanism
    from skldp.models import MLPHead
    from skldp.propagation import PPRPropagation
    flags = _node_class_line(official_path, dataset)
    k, alpha = int(flags["m"]), float(flags["alpha"])
    G, y, tr, va, te = load_split(dataset, seed)
    fit = tr | va
    pipe = Pipeline([("hds", HDSMechanism(eps=cfg["eps"], k=k, feature_range=(0, 1),
                                          random_state=seed)),
                     ("ppr", PPRPropagation(alpha=alpha, r=0.1)),
                     ("clf", MLPHead(epochs=cfg["skldp_epochs"], validation_fraction=1 / 3,
                                     random_state=seed))])
    pipe.fit(G[fit], y[fit])
    return dict(accuracy=float(pipe.score(G[te], y[te])), k=k, alpha=alpha,
                epochs=int(pipe[-1].n_iter_))


def skldp_rgnn(dataset, cfg, seed):
    import numpy as np

    from studies.rgnn import RGNNRun, categorical_data
    G, y, tr, va, te = load_split(dataset, seed)
    Gc, yc = categorical_data(G, y, dict(group=cfg["group"]))
    fit = tr | va
    run = RGNNRun(kind="RGNN", eps=cfg["x_eps"], eps_y=cfg["y_eps"], hops=cfg["hops"],
                  n_clusters=cfg["n_clusters"], alpha=cfg["alpha"], random_state=seed)
    run.fit(Gc[fit], yc[fit])
    return dict(accuracy=float(np.mean(run.predict(Gc[te]) == yc[te])))


def worker(side, system, dataset, seed, official_path, out_json):
    import torch
    torch.set_num_threads(1)
    cfg = CONFIG[system][dataset]
    t0 = time.perf_counter()
    if side == "floor":
        # What any torch library with the scikit-learn API must import before its
        # first step; the worker has already imported torch (and numpy).
        import scipy.sparse  # noqa: F401
        import sklearn.base  # noqa: F401
        res = dict(accuracy=float("nan"))
    elif side == "official":
        path = os.path.abspath(official_path)
        sys.path.insert(0, path)
        work = tempfile.mkdtemp(prefix=f"official_{system}_")
        os.chdir(work)    # the official scripts write logs and checkpoints to the cwd
        fn = {"lpgnn": official_lpgnn, "privge": official_privge, "rgnn": official_rgnn}[system]
        res = fn(path, dataset, cfg, seed, work)
    else:
        if system == "privge":
            res = skldp_privge(dataset, cfg, seed, official_path)
        else:
            res = {"lpgnn": skldp_lpgnn, "rgnn": skldp_rgnn}[system](dataset, cfg, seed)
    res["inner_s"] = time.perf_counter() - t0
    res["torch_threads"] = torch.get_num_threads()
    with open(out_json, "w") as f:
        json.dump(res, f)


# ------------------------------------------------------------------ harness
def _load():
    return os.getloadavg()


def run_side(side, args, python, tmp, cpus):
    out_json = os.path.join(tmp, f"{side}_{time.monotonic_ns()}.json")
    log = out_json.replace(".json", ".log")
    cmd = [python, os.path.abspath(__file__), "--worker", side, "--system", args.system,
           "--dataset", args.dataset, "--seed", str(args.seed), "--official", args.official,
           "--out-json", out_json]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([REPO] + [p for p in [os.environ.get("PYTHONPATH")]
                                                    if p]))
    load0 = _load()
    t0 = time.perf_counter()
    with open(log, "w") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True,
                             preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    timed_out, status, ru = False, None, None
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - t0 > args.timeout:
            os.killpg(p.pid, signal.SIGKILL)
            _, status, ru = os.wait4(p.pid, 0)
            timed_out = True
            break
        time.sleep(0.1)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    row = dict(side=side, wall_s=wall, cpu_s=ru.ru_utime + ru.ru_stime,
               peak_rss_mib=ru.ru_maxrss / 1024, load_before=load0, load_after=_load(),
               timed_out=timed_out, returncode=p.returncode, log=log)
    if not timed_out and p.returncode == 0:
        row.update(json.load(open(out_json)))
    elif not timed_out:
        tail = open(log).read()[-3000:]
        row["error"] = tail
    return row


def _fmt_row(r):
    s = f"{r['side']:>8}: "
    if r["timed_out"]:
        return s + (f"> {r['wall_s']:.0f} s (timeout), cpu {r['cpu_s']:.1f} s, "
                    f"load {r['load_before'][0]:.1f}")
    if r["returncode"]:
        return s + f"FAILED rc={r['returncode']}\n{r.get('error', '')}"
    acc = "  --  " if math.isnan(r["accuracy"]) else f"{100 * r['accuracy']:5.1f}"
    return (s + f"wall {r['wall_s']:7.1f} s  cpu {r['cpu_s']:7.1f} s  "
            f"peak {r['peak_rss_mib']:6.0f} MiB"
            f"  acc {acc} %  load {r['load_before'][0]:.1f}->"
            f"{r['load_after'][0]:.1f}  (inner {r['inner_s']:.1f} s)")


def compile_sources(python, path):
    """Byte-compile the Python sources under ``path`` with ``python`` (``__pycache__``).

    Both sides then start from bytecode, as an installed package does (pip
    compiles at install) and as any second run of a checkout does. Without it,
    an environment with ``PYTHONDONTWRITEBYTECODE`` set would make every run
    compile its sources again: 0.15-0.2 s for skldp's, against an official
    code's few modules.
    """
    subprocess.run([python, "-m", "compileall", "-q", path], check=True,
                   stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--system", choices=SYSTEMS, required=True)
    ap.add_argument("--dataset", choices=["cora", "facebook"], default="cora")
    ap.add_argument("--official", default=None,
                    help="checkout of the official repository (default: $SKLDP_OFFICIAL_<SYSTEM>)")
    ap.add_argument("--official-python", default=os.environ.get("SKLDP_OFFICIAL_PYTHON",
                                                                sys.executable))
    ap.add_argument("--repeat", type=int, default=1, help="runs of each side (alternated)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cpus", type=int, default=None,
                    help="pin both sides to the first N CPUs (default: not pinned)")
    ap.add_argument("--official-commit", default=None,
                    help="commit of the checkout, where it is not a git work tree")
    ap.add_argument("--json", default=None, help="append the rows to this JSON-lines file")
    ap.add_argument("--floor", action="store_true",
                    help="also time, in each repeat, a process that only imports torch and "
                         "scikit-learn: official / floor bounds the ratio any such library "
                         "can reach")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out-json", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.official is None:
        args.official = os.environ.get(f"SKLDP_OFFICIAL_{args.system.upper()}")
    if not args.official or not os.path.isdir(args.official):
        ap.error(f"give the official checkout with --official or SKLDP_OFFICIAL_"
                 f"{args.system.upper()} (got {args.official!r})")
    if args.worker:
        worker(args.worker, args.system, args.dataset, args.seed, args.official, args.out_json)
        return
    cpus = None
    if args.cpus:
        cpus = sorted(os.sched_getaffinity(0))[:args.cpus]
    commit = args.official_commit or subprocess.run(
        ["git", "-C", args.official, "rev-parse", "HEAD"], capture_output=True,
        text=True).stdout.strip() or "unknown"
    print(f"{args.system} on {args.dataset}, seed {args.seed}; official checkout commit {commit}")
    print(f"machine {platform.machine()}, {len(os.sched_getaffinity(0))} CPUs available, "
          f"pinned to {cpus or 'none'}; python {platform.python_version()}; "
          f"OMP_NUM_THREADS=1, torch threads 1; timeout {args.timeout:.0f} s")
    print(f"settings: {CONFIG[args.system][args.dataset]}")
    print(f"adapter: {ADAPTER_NOTES[args.system]}", flush=True)
    compile_sources(sys.executable, os.path.join(REPO, "skldp"))
    compile_sources(args.official_python, args.official)
    print("sources of both sides byte-compiled before the first run", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_official_") as tmp:
        for i in range(args.repeat):
            order = ("official", "skldp") if i % 2 == 0 else ("skldp", "official")
            for side in order + (("floor",) if args.floor else ()):
                python = args.official_python if side == "official" else sys.executable
                r = run_side(side, args, python, tmp, cpus)
                r.update(system=args.system, dataset=args.dataset, repeat=i, commit=commit)
                rows.append(r)
                print(_fmt_row(r), flush=True)
                if args.json:
                    with open(args.json, "a") as f:
                        f.write(json.dumps({k: v for k, v in r.items() if k != "log"}) + "\n")
    for line in ratio_summary(rows):
        print(line)


def ratio_summary(rows):
    """The summary lines of a run: official / skldp, and with the floor's runs, the
    bound official / floor and the ratio of the time each side spends above the floor
    (its work beyond the imports), all from the medians of the finished runs."""
    ok = {s: [r for r in rows if r["side"] == s and (r["timed_out"] or not r["returncode"])]
          for s in ("official", "skldp", "floor")}
    if any(r["timed_out"] for r in ok["skldp"]):
        return ["no ratio: skldp did not finish within the timeout"]
    if not (ok["skldp"] and ok["official"]):
        return []

    def median(side, key):
        return statistics.median(r[key] for r in ok[side])

    sk_w, sk_c = median("skldp", "wall_s"), median("skldp", "cpu_s")
    of_w, of_c = median("official", "wall_s"), median("official", "cpu_s")
    gt = ">" if any(r["timed_out"] for r in ok["official"]) else ""
    lines = [f"ratio official / skldp (medians): wall {gt}{of_w / sk_w:.1f}x, "
             f"cpu {gt}{of_c / sk_c:.1f}x"]
    # The two sides of one repeat ran back to back, under about the same machine
    # state: the spread of their ratios shows how much the machine moves the median's.
    walls = {(r["side"], r["repeat"]): r["wall_s"] for s in ("official", "skldp") for r in ok[s]
             if not r["timed_out"]}
    paired = [walls["official", i] / walls["skldp", i] for i in sorted({i for _, i in walls})
              if ("official", i) in walls and ("skldp", i) in walls]
    if len(paired) > 1:
        lines.append(f"per repeat, official / skldp (wall): "
                     f"{', '.join(f'{x:.1f}x' for x in paired)} "
                     f"(range {min(paired):.1f}-{max(paired):.1f}x)")
    if ok["floor"]:
        fl_w, fl_c = median("floor", "wall_s"), median("floor", "cpu_s")
        line = (f"floor (python + torch + scikit-learn imports, medians): wall {fl_w:.1f} s, "
                f"cpu {fl_c:.1f} s; official / floor: wall {gt}{of_w / fl_w:.1f}x, "
                f"cpu {gt}{of_c / fl_c:.1f}x (the most any such library can reach); "
                f"skldp above the floor: wall {sk_w - fl_w:.1f} s")
        if sk_w > fl_w:
            # The work beyond the imports: what a library controls
            line += (f"; above the floor, official / skldp: wall "
                     f"{gt}{(of_w - fl_w) / (sk_w - fl_w):.1f}x")
        lines.append(line)
    return lines


if __name__ == "__main__":
    main()
