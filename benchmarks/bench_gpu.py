"""Every torch path on CUDA against the CPU, in one run (issue 17, item 5).

Each case runs once per device in ``--devices`` (by default ``cpu`` and, when
torch sees one, ``cuda``), with the same data, split and seeds, and reports
the wall time (CUDA synchronised before the clock stops), the test metric on
each device and the ratio CPU time / CUDA time. The metrics should agree within
the run-to-run spread of the model: the devices draw different random numbers
for dropout and sampling, so they are not expected to be equal. On a machine
without CUDA the script runs the CPU side alone: a check that every case
still runs, not a measurement.

Cases:

* ``ppr``: ``PPRPropagation(backend="torch")`` on Facebook's eps = 1 HDS
  reports (k = 50, alpha 0.05, r 0.1, as PrivGE), and the CPU default
  (``backend="scipy"``): wall time and the largest relative column error
  against a scipy solve at tol 1e-8.
* ``privge``: Facebook PrivGE end to end (HDS -> PPR -> ``MLPHead``, eps = 1,
  as ``bench_performance.py --sections privge``), PPR and head on the device.
* ``models``: on Cora, multi-bit eps = 1 reports (the graph and the labels in
  the clear) fed to ``MLPHead`` (after PPR), ``GCNClassifier``,
  ``SAGEClassifier``, ``GATClassifier``, ``LPGNNClassifier`` (eps_y = 1),
  ``RGNNClassifier`` (eps_y = 1), ``SolitudeClassifier`` and the central
  ``DPGNNClassifier`` (raw features); and the link predictors
  ``VGAELinkPredictor`` and ``HadamardLinkPredictor`` on a 85/5/10 edge split
  of Cora (test ROC-AUC).
* ``--large``: the 1M-user / 10M-edge PrivGE pipeline of
  ``bench_performance.py --large`` (wall time, peak GPU memory).

Usage::

    SKLDP_DATASETS_DIR=/path/to/datasets python benchmarks/bench_gpu.py \\
        [--cases ppr privge models] [--large] [--devices cpu cuda] [--out table.md]
"""

import argparse
import os
import platform
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)   # bench_privge's synthetic graph
try:
    import skldp  # noqa: F401
except ImportError:   # run from a source checkout without installing it
    sys.path.insert(0, os.path.dirname(HERE))


def _sync(device):
    import torch
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def _timed(device, fn):
    """(seconds, value) of ``fn()``, with the device's queue drained on both ends."""
    _sync(device)
    t0 = time.perf_counter()
    value = fn()
    _sync(device)
    return time.perf_counter() - t0, value


def _warm_up(devices):
    """Load CUDA's context and its BLAS and sparse kernels before the first timed case,
    so that no case's CUDA time includes them."""
    import torch
    for d in devices:
        if str(d).startswith("cuda"):
            A = torch.eye(64, device=d).to_sparse_csr()
            h = torch.ones(64, 8, device=d)
            (torch.sparse.mm(A, h) @ h.t()).sum().item()
            _sync(d)


def _reset_peak(device):
    import torch
    if str(device).startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()


def _peak_gib(device):
    import torch
    if str(device).startswith("cuda"):
        return torch.cuda.max_memory_allocated() / 2**30
    return None


# ------------------------------------------------------------------------ data
def _facebook_reports():
    from skldp.datasets import load_dataset
    from skldp.mechanisms import HDSMechanism
    from skldp.model_selection import random_node_split
    b = load_dataset("facebook")
    G, y = b.data, np.asarray(b.target)
    tr, va, te = random_node_split(y, 0.5, 0.25, 0.25, random_state=0)
    hds = HDSMechanism(eps=1.0, k=50, feature_range=(0, 1), random_state=0)
    return G, y, tr | va, te, hds


def _cora():
    from skldp.datasets import load_cora
    from skldp.model_selection import random_node_split
    b = load_cora()
    G, y = b.data, np.asarray(b.target)
    tr, va, te = random_node_split(y, 0.5, 0.25, 0.25, random_state=0)
    return G, y, tr | va, te


# ----------------------------------------------------------------------- cases
def case_ppr(devices):
    from skldp.propagation import PPRPropagation
    G, _, fit, _, hds = _facebook_reports()
    R = hds.fit_transform(G)
    ref = PPRPropagation(alpha=0.05, r=0.1, backend="scipy", tol=1e-8).fit_transform(R)
    ref = np.asarray(ref.features)
    rows = []
    # The CPU default (scipy, Chebyshev series) as the reference speed of the CPU path.
    cases = [("scipy", "cpu")] + [("torch", d) for d in devices]
    for backend, d in cases:
        ppr = PPRPropagation(alpha=0.05, r=0.1, backend=backend, device=d)
        _reset_peak(d)
        s, Z = _timed(d, lambda p=ppr: p.fit_transform(R))
        err = np.abs(np.asarray(Z.features, np.float64) - ref).max(axis=0) \
            / np.maximum(np.abs(ref).max(axis=0), 1e-30)
        rows.append(dict(case=f"PPRPropagation(backend={backend!r}), Facebook eps=1 HDS "
                         "reports", device=d, seconds=s, metric=float(err.max()),
                         metric_name="max column rel. error vs scipy (tol 1e-8)",
                         gpu_gib=_peak_gib(d)))
    return rows


def case_privge(devices):
    from sklearn.pipeline import Pipeline

    from skldp.models import MLPHead
    from skldp.propagation import PPRPropagation
    G, y, fit, te, hds = _facebook_reports()
    rows = []
    for d in devices:
        pipe = Pipeline([("hds", hds),
                         ("ppr", PPRPropagation(alpha=0.05, r=0.1, device=d)),
                         ("clf", MLPHead(epochs=100, validation_fraction=1 / 3, device=d,
                                         random_state=0))])
        _reset_peak(d)
        s, acc = _timed(d, lambda p=pipe: p.fit(G[fit], y[fit]).score(G[te], y[te]))
        rows.append(dict(case="Facebook PrivGE eps=1 end to end", device=d, seconds=s,
                         metric=float(acc), metric_name="test accuracy",
                         gpu_gib=_peak_gib(d)))
    return rows


def _node_models(d, classes, n_train):
    from sklearn.pipeline import Pipeline

    from skldp.central import DPGNNClassifier
    from skldp.models import (
        GATClassifier,
        GCNClassifier,
        LPGNNClassifier,
        MLPHead,
        RGNNClassifier,
        SAGEClassifier,
        SolitudeClassifier,
    )
    from skldp.propagation import PPRPropagation
    return {
        "PPR -> MLPHead": Pipeline([("ppr", PPRPropagation(device=d)),
                                    ("clf", MLPHead(device=d, random_state=0))]),
        "GCNClassifier": GCNClassifier(device=d, random_state=0),
        "SAGEClassifier": SAGEClassifier(device=d, random_state=0),
        "GATClassifier": GATClassifier(device=d, random_state=0),
        "LPGNNClassifier(eps_y=1)": LPGNNClassifier(eps_y=1.0, classes=classes, device=d,
                                                    random_state=0),
        "RGNNClassifier(eps_y=1)": RGNNClassifier(eps_y=1.0, classes=classes, n_clusters=16,
                                                  device=d, random_state=0),
        "SolitudeClassifier": SolitudeClassifier(epochs=300, patience=50, feature_steps=4,
                                                 device=d, random_state=0),
        "DPGNNClassifier (central, raw features)": DPGNNClassifier(
            classes=classes, n_steps=100, batch_size=min(1000, n_train), device=d,
            random_state=0),
    }


def _link_cases(d):
    from sklearn.pipeline import Pipeline

    from skldp.models import HadamardLinkPredictor, VGAELinkPredictor
    from skldp.propagation import PPRPropagation
    return {
        "VGAELinkPredictor": VGAELinkPredictor(epochs=200, device=d, random_state=0),
        "PPR -> HadamardLinkPredictor": Pipeline([
            ("ppr", PPRPropagation(alpha=0.1, device=d)),
            ("link", HadamardLinkPredictor(device=d, random_state=0))]),
    }


def case_models(devices):
    from skldp.mechanisms import MultiBitMechanism
    from skldp.model_selection import random_edge_split
    G, y, fit, te = _cora()
    classes = np.unique(y)
    reports = MultiBitMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(G)
    rows = []
    for d in devices:
        for name, model in _node_models(d, classes, int(fit.sum())).items():
            data = G if name.startswith("DPGNN") else reports
            _reset_peak(d)
            s, acc = _timed(d, lambda m=model, x=data: m.fit(x[fit], y[fit]).score(x[te], y[te]))
            rows.append(dict(case=f"Cora {name}", device=d, seconds=s, metric=float(acc),
                             metric_name="test accuracy", gpu_gib=_peak_gib(d)))
    P_tr, P_va, P_te, y_tr, y_va, y_te = random_edge_split(reports, random_state=0)
    P_fit, y_fit = P_tr.concat(P_va), np.r_[y_tr, y_va]  # the validation pairs validate
    for d in devices:
        for name, model in _link_cases(d).items():
            key = "validation" if name.startswith("VGAE") else "link__validation"
            model.set_params(**{key: P_va.pairs})
            _reset_peak(d)
            s, auc = _timed(d, lambda m=model: m.fit(P_fit, y_fit).score(P_te, y_te))
            rows.append(dict(case=f"Cora links {name}", device=d, seconds=s, metric=float(auc),
                             metric_name="test ROC-AUC", gpu_gib=_peak_gib(d)))
    return rows


def case_large(devices, n=1_000_000):
    from bench_performance import synthetic_graph

    from skldp.mechanisms import HDSMechanism
    from skldp.models import MLPHead
    from skldp.propagation import PPRPropagation
    G, y = synthetic_graph(n, n_edges=10 * n)
    fit = np.zeros(len(y), bool)
    fit[np.random.default_rng(0).permutation(len(y))[: len(y) // 2]] = True
    R = HDSMechanism(eps=1.0, feature_range=(0, 1), random_state=0).fit(G[fit]).transform(G)
    rows = []
    for d in devices:
        _reset_peak(d)
        s_ppr, Z = _timed(d, lambda d=d: PPRPropagation(device=d).fit_transform(R))
        clf = MLPHead(hidden_layer_sizes=(64,), epochs=100, validation_fraction=1 / 3,
                      patience=10, device=d, random_state=0)
        s_head, acc = _timed(d, lambda c=clf, Z=Z: c.fit(Z[fit], y[fit]).score(Z[~fit], y[~fit]))
        rows.append(dict(case=f"{n} users / {10 * n} edges: PPR + MLPHead (HDS on the CPU)",
                         device=d, seconds=s_ppr + s_head, metric=float(acc),
                         metric_name=f"accuracy (PPR {s_ppr:.1f} s, head {s_head:.1f} s)",
                         gpu_gib=_peak_gib(d)))
    return rows


CASES = {"ppr": case_ppr, "privge": case_privge, "models": case_models}


# ------------------------------------------------------------------- reporting
def _table(rows, argv, started, elapsed):
    import torch
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    lines = [f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, GPU: {gpu}; "
             f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads; "
             f"started {started} UTC, {elapsed:.0f} s.",
             f"Command: `python benchmarks/bench_gpu.py {' '.join(argv)}`", "",
             "| case | device | seconds | metric | GPU peak GiB | CPU / this device |",
             "|---|---|---|---|---|---|"]
    cpu = {r["case"]: r["seconds"] for r in rows if r["device"] == "cpu"}
    for r in rows:
        ratio = cpu.get(r["case"], np.nan) / r["seconds"]
        gib = "—" if r["gpu_gib"] is None else f"{r['gpu_gib']:.2f}"
        lines.append(f"| {r['case']} | {r['device']} | {r['seconds']:.2f} | "
                     f"{r['metric']:.4g} ({r['metric_name']}) | {gib} | {ratio:.1f}× |")
    return "\n".join(lines)


def main(argv=None):
    import torch
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    ap.add_argument("--large", action="store_true", help="also the 1M-user PrivGE pipeline")
    ap.add_argument("--large-nodes", type=int, default=1_000_000)
    ap.add_argument("--devices", nargs="*",
                    default=["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    ap.add_argument("--out", default=None, help="also write the Markdown table here")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    t0 = time.perf_counter()
    rows = []
    _warm_up(a.devices)
    for name in a.cases:
        t1 = time.perf_counter()
        rows += CASES[name](a.devices)
        print(f"[{name}: {time.perf_counter() - t1:.0f} s]", file=sys.stderr, flush=True)
    if a.large:
        rows += case_large(a.devices, a.large_nodes)
    table = _table(rows, sys.argv[1:] if argv is None else argv, started,
                   time.perf_counter() - t0)
    print(table)
    if a.out:
        with open(a.out, "w") as f:
            f.write(table + "\n")
    return rows


if __name__ == "__main__":
    main()
