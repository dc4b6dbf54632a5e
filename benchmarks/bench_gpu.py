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
  against a float64 solve at tol 1e-8.
* ``hds_columns``: HDS's device program for Facebook's users, its k-of-d column
  draw and its square-wave cells, in numpy (the devices' code) and in torch on
  each device (the metric: 1 when they are the same).
* ``privge``: Facebook PrivGE end to end (HDS -> PPR -> ``MLPHead``, eps = 1,
  as ``bench_performance.py --sections privge``), PPR and head on the device; and
  ``LPGNNClassifier`` on Facebook's multi-bit reports.
* ``models``: on Cora, multi-bit eps = 1 reports (the graph and the labels in
  the clear) fed to ``MLPHead`` (after PPR; also on the first 140 fit rows, where
  it cross-validates its weight decay), ``GCNClassifier``,
  ``SAGEClassifier``, ``GATClassifier``, ``LPGNNClassifier`` (eps_y = 1),
  ``RGNNClassifier`` (eps_y = 1), ``SolitudeClassifier`` and the central
  ``DPGNNClassifier`` (raw features); and the link predictors
  ``VGAELinkPredictor`` and ``HadamardLinkPredictor`` on a 85/5/10 edge split
  of Cora (test ROC-AUC). Each timed fit follows a short fit (at most 20 epochs)
  of the same model on the same device and a copy of the same data: CUDA loads a
  kernel at its first launch, and a cold process's first fit on either device
  pays for imports; the copy keeps the timed fit's own graph preparation (its
  normalisation, its copies to the device) in the time.
* ``large``: the 1M-user / 10M-edge PrivGE pipeline of
  ``bench_performance.py --large`` (wall time, peak GPU memory), on every device.
* ``huge``: the same at 10M users / 100M edges, on the last device only (CUDA
  when there is one): the graph built by ``synthetic.uniform_graph``, the HDS
  reports computed in this process with their column draw on the GPU when there
  is one, else on the CPU in row shards over processes (each user's report
  depends only on its row and key, so the shards give the reports of the whole
  graph), then PPR and MLPHead on the device; the row says where the time went.
* ``profile``: no rows; where the time of LPGNN on Facebook goes on each CUDA
  device (torch.profiler), written to ``--profile-dir``.

With ``--profile-dir``, cases ``models`` and ``large`` also profile what they timed
on CUDA (VGAE on Cora; PPR's first call on a fresh 1M-user graph), after every case
of the run is timed: after the profiler, CUDA work in the process seemed to stay
slower.

A model or case that cannot run (an optional package missing, e.g. pymetis for
RGNN's METIS clusters) gives a row marked "skipped" with the error, and the
other cases go on.

Usage::

    SKLDP_DATASETS_DIR=/path/to/datasets python benchmarks/bench_gpu.py \\
        [--cases ppr privge models large huge] [--all] [--devices cpu cuda] \\
        [--large-nodes 1000000] [--huge-nodes 10000000] [--out table.md] [--json rows.json]

``--large`` is ``--cases ... large`` (kept for older commands); ``--all`` runs every case.
"""

import argparse
import os
import platform
import sys
import tempfile
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
    so that no case's CUDA time includes them: CUDA loads a kernel at its first launch
    (a float64 power, a scatter: ~10 ms each), as the bare products are timed warm. A
    ring of 64 users with sparse features goes through PPR and MLPHead on the device."""
    import scipy.sparse as sp
    import torch

    from skldp import GraphData
    from skldp.models import MLPHead
    from skldp.propagation import PPRPropagation
    n = 64
    ring = sp.csr_matrix((np.ones(2 * n, np.float32), (np.r_[np.arange(n), np.arange(n)],
                          np.r_[np.arange(1, n + 1) % n, np.arange(-1, n - 1) % n])))
    X = sp.random(n, 16, density=0.2, format="csr", dtype=np.float32, random_state=0)
    y = np.arange(n) % 2
    for d in devices:
        if str(d).startswith("cuda"):
            A = torch.eye(64, device=d).to_sparse_csr()
            h = torch.ones(64, 8, device=d)
            (torch.sparse.mm(A, h) @ h.t()).sum().item()
            Z = PPRPropagation(device=d).fit_transform(GraphData(X, ring))
            MLPHead(hidden_layer_sizes=(8,), epochs=3, device=d, random_state=0).fit(
                Z, y).score(Z, y)
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


def _tiny():
    """Stand-ins for Cora and Facebook (``--tiny``): a 3-block SBM with binary features."""
    import scipy.sparse as sp

    from skldp import GraphData
    from skldp.mechanisms import HDSMechanism
    rng = np.random.default_rng(0)
    n, d = 150, 12
    y = np.repeat([0, 1, 2], n // 3)
    P = np.where(y[:, None] == y[None, :], 0.2, 0.01)
    A = np.triu(rng.random((n, n)) < P, 1)
    X = rng.random((n, d)) < 0.2 + 0.5 * (np.arange(d)[None, :] % 3 == y[:, None])
    G = GraphData(X.astype(float), sp.csr_array((A | A.T).astype(float)))
    fit = np.arange(n) % 4 != 0
    hds = HDSMechanism(eps=1.0, k=3, feature_range=(0, 1), random_state=0)
    return G, y, fit, hds


def use_tiny_data():
    """Replace Cora and Facebook by :func:`_tiny` (a check that every case runs)."""
    global _cora, _facebook_reports
    G, y, fit, hds = _tiny()
    _cora = lambda: (G, y, fit, ~fit)  # noqa: E731
    _facebook_reports = lambda: (G, y, fit, ~fit, hds)  # noqa: E731


# ----------------------------------------------------------------------- cases
def case_ppr(devices):
    from skldp.propagation import PPRPropagation
    G, _, fit, _, hds = _facebook_reports()
    R = hds.fit_transform(G)
    # the reference: a float64 solve at tol 1e-8, on the card when there is one (seconds
    # less than on the host's CPUs)
    cuda = [d for d in devices if str(d).startswith("cuda")]
    ref = PPRPropagation(alpha=0.05, r=0.1, tol=1e-8, dtype="float64",
                         device=cuda[0] if cuda else "cpu").fit_transform(R)
    ref = np.asarray(ref.features)
    # the CPU row's operator (reverse Cuthill-McKee order, Chebyshev runner) made before
    # the clock, as the float32 reference made it when it ran on the CPU: the row times
    # the solve, as in the checks before
    PPRPropagation(alpha=0.05, r=0.1, max_iter=1, backend="scipy").fit_transform(R)
    rows = []
    # The CPU default (scipy, Chebyshev series) as the reference speed of the CPU path
    # (with the CPU's rows: gpu_check runs the CPU's and the card's rows in two processes).
    cases = [("scipy", "cpu")] * ("cpu" in devices) + [("torch", d) for d in devices]
    for backend, d in cases:
        ppr = PPRPropagation(alpha=0.05, r=0.1, backend=backend, device=d)
        _reset_peak(d)
        s, Z = _timed(d, lambda p=ppr: p.fit_transform(R))
        err = np.abs(np.asarray(Z.features, np.float64) - ref).max(axis=0) \
            / np.maximum(np.abs(ref).max(axis=0), 1e-30)
        # (said beside the metric, not in the case: the CPU row's ratio needs the same case)
        kept = "; output kept on the device" if Z._store._on_device is not None else ""
        rows.append(dict(case=f"PPRPropagation(backend={backend!r}), Facebook eps=1 HDS "
                         "reports", device=d, seconds=s, metric=float(err.max()),
                         metric_name=f"max column rel. error vs float64 (tol 1e-8){kept}",
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
    # LPGNN on Facebook's multi-bit reports (the goal: >= 5x faster on CUDA)
    data = _facebook_multibit()
    for d in devices:
        rows.append(_guarded("Facebook LPGNNClassifier(eps_y=1), multi-bit eps=1 reports", d,
                             "test accuracy", _lpgnn_facebook(d, data)))
    return rows


def _facebook_multibit():
    from skldp.mechanisms import MultiBitMechanism
    G, y, fit, te, _ = _facebook_reports()
    reports = MultiBitMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(G)
    return reports, y, fit, te


def _lpgnn_facebook(device, data=None):
    """``run()``: LPGNN fitted on Facebook's multi-bit reports and scored (its accuracy);
    ``data``: ``_facebook_multibit()``, made once for several devices."""
    from skldp.models import LPGNNClassifier
    reports, y, fit, te = _facebook_multibit() if data is None else data
    model = LPGNNClassifier(eps_y=1.0, classes=np.unique(y), device=device, random_state=0)

    def run():
        return model.fit(reports[fit], y[fit]).score(reports[te], y[te])
    return run


# --profile-dir: where the CUDA profiles go. Once the profiler has run, CUDA work seems
# to stay slower in the process (on an H200, Cora's models timed after it took 1.3-1.8x
# their time without): a case that profiles what it timed queues the profile in
# PROFILES, taken after every case of the process is timed (main).
PROFILE_DIR = None
PROFILES = []


def _queue_profile(device, name, write):
    """Queue ``write(path)``, a profile on CUDA ``device`` to ``--profile-dir``/``name``,
    for after every timed case (nothing without ``--profile-dir`` or on the CPU)."""
    if PROFILE_DIR is not None and str(device).startswith("cuda"):
        PROFILES.append((name, lambda: write(os.path.join(PROFILE_DIR, name))))


def _take_profiles():
    while PROFILES:
        name, take = PROFILES.pop(0)
        t0 = time.perf_counter()
        try:
            take()
        except Exception as exc:   # a profile is a help, not a result
            print(f"no profile {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(f"[profile {name}: {time.perf_counter() - t0:.0f} s]", file=sys.stderr,
              flush=True)


def case_profile(devices):
    """Where the time of LPGNN on Facebook goes on each CUDA device (``--profile-dir``);
    no rows. (Cases ``models`` and ``large`` profile VGAE on Cora and PPR's first call
    on 1M users after their timings.)"""
    for d in devices:
        if str(d).startswith("cuda"):
            run = _lpgnn_facebook(d)
            run()   # warm: the reports, the operators, the kernels' first launches
            _profile(run, d, os.path.join(PROFILE_DIR or ".", "lpgnn_facebook_profile.txt"))
    return []


def profile_ppr(device, n, path, R=None):
    """Write where PPR's first call on ``n`` users' HDS reports goes on ``device`` (as
    timed by the large cases: a fresh graph, so the operator is built and sent).
    ``R``: reports made already (a large case's), profiled over a copy of their graph;
    ``None``: made here."""
    from skldp import GraphData
    from skldp.propagation import PPRPropagation
    if R is None:
        R = _reports_at_scale(n).R
        _warm_up([device])
    else:   # a new adjacency is a new graph: nothing of the timed run is reused
        R = GraphData(R.features, R.adjacency.copy(), node_ids=R.node_ids, symmetric=True)
    ppr = PPRPropagation(device=device, backend="torch")   # (on CUDA, what "auto" picks)
    _profile(lambda: ppr.fit_transform(R), device, path)


def _profile(fn, device, path):
    """Write where ``fn``'s time goes on ``device`` (torch.profiler) to ``path``: its
    wall time beside the kernels' busy time, and the costliest operators."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU]
    if str(device).startswith("cuda"):
        acts.append(ProfilerActivity.CUDA)
    try:
        with profile(activities=acts) as prof:
            s, _ = _timed(device, fn)
    except Exception as exc:   # a profile is a help, not a result
        print(f"no profile: {type(exc).__name__}: {exc}", file=sys.stderr)
        return
    events = prof.key_averages()
    # the kernels' own rows (an operator's row counts its kernels' time again)
    busy = sum(e.self_device_time_total for e in events
               if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA) / 1e6
    launches = sum(e.count for e in events if e.key.startswith("cudaLaunchKernel"))
    with open(path, "w") as f:
        f.write(f"wall {s:.3f} s under the profiler; kernels busy {busy:.3f} s; "
                f"{launches} kernel launches; torch {torch.__version__}\n\n")
        f.write(events.table(sort_by="self_device_time_total", row_limit=25) + "\n")
        f.write(events.table(sort_by="self_cpu_time_total", row_limit=25) + "\n")


def case_hds_columns(devices):
    """HDS's k-of-d column draw for Facebook's users: the devices' numpy code against the
    same hashes in torch on each device (the metric: 1 when the columns are identical)."""
    from skldp._torch._counter_random import sample_k_of_d as on_device
    from skldp.device._random import sample_k_of_d as on_the_host
    G, _, _, _, hds = _facebook_reports()
    n, d, k = G.n_nodes, G.shape[1], hds.k
    keys = np.arange(n, dtype=np.uint64)
    s, ref = _timed("cpu", lambda: on_the_host(7, keys, d, k))
    # the numpy rows with the CPU's rows (the card's process computes them untimed, as
    # the reference its rows are compared with)
    host = "cpu" in devices
    rows = [dict(case=f"HDS columns, {n} users, {k} of {d} (numpy, the devices' code)",
                 device="cpu", seconds=s, metric=1.0, metric_name="same columns",
                 gpu_gib=None)] * host
    for dev in devices:
        _reset_peak(dev)
        s, cols = _timed(dev, lambda dev=dev: on_device(7, keys, d, k, device=dev))
        rows.append(dict(case=f"HDS columns, {n} users, {k} of {d} (torch)", device=dev,
                         seconds=s, metric=float(np.array_equal(cols, ref)),
                         metric_name="same columns", gpu_gib=_peak_gib(dev)))
    # then the square wave's cells of the same users, at eps = 1
    from skldp._torch._counter_random import square_wave_cells
    from skldp.device._kinds import hds_inputs, square_wave_grid
    from skldp.device._random import node_uniforms, node_uniforms_fine
    grid, _ = square_wave_grid(1.0 / k)
    t = hds_inputs(G.features, np.zeros(d), np.ones(d), ref)   # dense or sparse

    def on_the_host_cells():
        return grid.sample((t + 1.0) / 2.0, node_uniforms(7, keys, k, stream=3),
                           node_uniforms_fine(7, keys, k, stream=2),
                           node_uniforms(7, keys, k, stream=1))
    s, cells = _timed("cpu", on_the_host_cells)
    rows += [dict(case=f"HDS cells, {n} users x {k} (numpy, the devices' code)",
                  device="cpu", seconds=s, metric=1.0, metric_name="same cells",
                  gpu_gib=None)] * host
    for dev in devices:
        _reset_peak(dev)
        s, got = _timed(dev, lambda dev=dev: square_wave_cells(grid, t, 7, keys, device=dev))
        rows.append(dict(case=f"HDS cells, {n} users x {k} (torch)", device=dev, seconds=s,
                         metric=float(np.array_equal(got, cells)), metric_name="same cells",
                         gpu_gib=_peak_gib(dev)))
    return rows


#: The head fitted on the first 140 of the fit rows (Planetoid's number of training labels).
FEW_LABELS = "PPR -> MLPHead, 140 labels"


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
        # on few labels the head cross-validates its weight decay (45 fits, trained as one)
        FEW_LABELS: Pipeline([("ppr", PPRPropagation(device=d)),
                              ("clf", MLPHead(device=d, random_state=0))]),
        "GCNClassifier": GCNClassifier(device=d, random_state=0),
        "SAGEClassifier": SAGEClassifier(device=d, random_state=0),
        # 200 epochs, patience 50: the defaults of the recorded baseline
        "GATClassifier": GATClassifier(epochs=200, patience=50, device=d, random_state=0),
        "LPGNNClassifier(eps_y=1)": LPGNNClassifier(eps_y=1.0, classes=classes, device=d,
                                                    random_state=0),
        "RGNNClassifier(eps_y=1)": RGNNClassifier(eps_y=1.0, classes=classes, n_clusters=16,
                                                  device=d, random_state=0),
        # selection="loss": the recorded rows were timed with it (the default before 2026-11-30)
        "SolitudeClassifier": SolitudeClassifier(epochs=300, patience=50, feature_steps=4,
                                                 selection="loss",
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


def _fresh(G):
    """The same graph in new arrays: no operator or memo made for one is found by the other."""
    from skldp import GraphData
    X = G.features
    return GraphData(X.copy(), G.adjacency.copy(), node_ids=G.node_ids.copy())


def _warm(model, run):
    """``run(clone of model)`` shortened to at most 20 epochs (DP-GNN: steps), on a copy
    of the data: the timed fit then finds every kernel it launches loaded (CUDA loads
    one at its first launch, ~1-10 ms each) and the CPU's code warm, but no operator,
    copy or memo of its own graph made."""
    from sklearn.base import clone
    m = clone(model)
    params = m.get_params()
    last = {k: k.rsplit("__", 1)[-1] for k in params}
    m.set_params(**{k: min(v, 20) for k, v in params.items()
                    if last[k] in ("epochs", "n_steps") and isinstance(v, int)},
                 **{k: 0 for k in params if last[k] == "min_epochs"})
    run(m)


def case_models(devices):
    """Every torch model on Cora's eps = 1 multi-bit reports, one timed fit and score
    each, after a short warm-up fit of the same model on a copy of the same data."""
    from skldp.mechanisms import MultiBitMechanism
    from skldp.model_selection import random_edge_split
    G, y, fit, te = _cora()
    classes = np.unique(y)
    reports = MultiBitMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(G)
    copies = {"raw": _fresh(G), "reports": _fresh(reports)}
    few = fit & (np.cumsum(fit) <= 140)
    rows = []
    for d in devices:
        for name, model in _node_models(d, classes, int(fit.sum())).items():
            kind = "raw" if name.startswith("DPGNN") else "reports"
            data = G if kind == "raw" else reports
            on = few if name == FEW_LABELS else fit
            try:   # a model whose optional package is missing is skipped, not the case
                _warm(model, lambda m, x=copies[kind], on=on:
                      m.fit(x[on], y[on]).score(x[te], y[te]))
            except ImportError as exc:
                rows.append(_skipped(f"Cora {name}", d, exc))
                continue
            rows.append(_guarded(f"Cora {name}", d, "test accuracy", lambda m=model, x=data, on=on:
                                 m.fit(x[on], y[on]).score(x[te], y[te]), model))
    P_tr, P_va, P_te, y_tr, y_va, y_te = random_edge_split(reports, random_state=0)
    P_fit, y_fit = P_tr.concat(P_va), np.r_[y_tr, y_va]  # the validation pairs validate
    W_tr, W_va, W_te, *_ = random_edge_split(copies["reports"], random_state=0)
    W_fit = W_tr.concat(W_va)   # the same pairs over the copy's graph
    for d in devices:
        for name, model in _link_cases(d).items():
            key = "validation" if name.startswith("VGAE") else "link__validation"
            _warm(model.set_params(**{key: W_va.pairs}),
                  lambda m: m.fit(W_fit, y_fit).score(W_te, y_te))
            model.set_params(**{key: P_va.pairs})
            rows.append(_guarded(f"Cora links {name}", d, "test ROC-AUC", lambda m=model:
                                 m.fit(P_fit, y_fit).score(P_te, y_te), model))
            if name.startswith("VGAE"):   # the one model on Cora not yet faster on CUDA
                _queue_profile(d, "vgae_cora_profile.txt", lambda path, m=model, d=d:
                               _profile(lambda: m.fit(P_fit, y_fit), d, path))
    return rows


def final_step(model):
    """A pipeline's last step, or the model itself."""
    return model.steps[-1][1] if hasattr(model, "steps") else model


def _guarded(case, d, metric_name, fn, model=None):
    """One timed row, or a row marked skipped with the error (the run goes on). With
    ``model`` (fitted by ``fn``), the row says how many iterations (epochs; DP-GNN's
    steps) its fit ran: early stopping may stop the devices' fits at different ones."""
    _reset_peak(d)
    try:
        s, value = _timed(d, fn)
    except Exception as exc:   # e.g. ImportError: an optional package is missing
        return _skipped(case, d, exc)
    epochs = getattr(final_step(model), "n_iter_", None)
    return dict(case=case, device=d, seconds=s, metric=float(value), metric_name=metric_name,
                gpu_gib=_peak_gib(d), epochs=None if epochs is None else int(epochs))


def _skipped(case, d, exc):
    why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:160]
    print(f"skipped {case} on {d}: {why}", file=sys.stderr, flush=True)
    return dict(case=case, device=d, seconds=float("nan"), metric=float("nan"),
                metric_name="", gpu_gib=None, skipped=why)


def sharded_reports(mech, G, n_jobs=None):
    """``mech.transform(G)`` over the whole graph, computed in row shards in processes.

    Each user's report depends only on the user's row and key, so the shards,
    transformed on their own (``GraphData(X[rows], node_ids=ids[rows],
    population=G)``: the same users, keyed by the same ids), give the same
    reports as one transform of the whole graph; the adjacency is not needed
    (only the shards travel to the workers, as memory maps, with the population).
    Returns ``G`` with the reports as features. (The workers' ledgers are
    copies: a benchmark, not an accounting.)
    """
    import joblib
    import scipy.sparse as sp

    from skldp import GraphData
    n = G.n_nodes
    jobs = joblib.cpu_count() if n_jobs is None else n_jobs
    bounds = np.linspace(0, n, max(1, min(jobs * 2, n)) + 1).astype(int)
    X, ids = G.features, G.all_node_ids
    # The shards name their users' population, not the graph: a closure over G would
    # pickle all its features and its adjacency into every task (at 1M users, 32
    # copies of 0.8 GB: most of the time the sharding took).
    population = G.population

    def shard(Xs, ids_s):
        return mech.transform(GraphData(Xs, node_ids=ids_s, population=population)).features

    # shards travel as memory maps in a folder on disk (not /dev/shm, often small in containers)
    folder = os.environ.get("JOBLIB_TEMP_FOLDER") or tempfile.gettempdir()
    spans = zip(bounds[:-1], bounds[1:], strict=True)
    parts = joblib.Parallel(n_jobs=jobs, backend="loky", max_nbytes="1M", temp_folder=folder)(
        joblib.delayed(shard)(X[a:b], ids[a:b]) for a, b in spans)
    Z = sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.vstack(parts)
    return G.with_features(Z, feature_names=G.feature_names, source="public")  # the reports


def _reports_at_scale(n):
    """A uniform graph of ``n`` users and ``10 n`` edges, its labels, the half of its users
    the mechanism is fitted on, their eps = 1 HDS reports (``R``), and how and where
    the graph and the reports were made (``built``, ``t_hds``, ``where``)."""
    from types import SimpleNamespace

    import torch
    from synthetic import uniform_graph

    from skldp.mechanisms import HDSMechanism
    # drawn on the card when there is one (seconds, where the host takes half a minute at
    # 10M users): the graph and the reports are the input, not what is timed
    on = "cuda" if torch.cuda.is_available() else None
    t0 = time.perf_counter()
    G, y = uniform_graph(n, n_edges=10 * n, device=on)
    t_build = time.perf_counter() - t0
    built = f"graph built in {t_build:.1f} s" + (" on the GPU" if on else "")
    fit = np.zeros(len(y), bool)
    fit[np.random.default_rng(0).permutation(len(y))[: len(y) // 2]] = True
    t0 = time.perf_counter()
    hds = HDSMechanism(eps=1.0, feature_range=(0, 1), random_state=0).fit(G[fit])
    if on:
        # one process: its k-of-d column draw, the mechanism's costliest step, runs on the
        # GPU (143x numpy on Facebook), where sharded workers would each start CUDA
        R, where = hds.transform(G), "in one process, columns on the GPU"
    else:
        R, where = sharded_reports(hds, G), f"on {os.cpu_count()} CPUs"
    t_hds = time.perf_counter() - t0
    return SimpleNamespace(G=G, y=y, fit=fit, R=R, built=built, t_hds=t_hds, where=where)


def _privge_at_scale(devices, n, label, profile=None):
    """HDS (with a GPU: in this process; else sharded over the CPUs) -> PPR -> MLPHead on
    each device, ``n`` users, ``10 n`` edges; with ``profile`` (a file name), PPR's
    first call on the same reports over a fresh graph is profiled after the timings."""
    from skldp.models import MLPHead
    from skldp.propagation import PPRPropagation
    data = _reports_at_scale(n)
    R, y, fit = data.R, data.y, data.fit
    rows = []
    for d in devices:
        if profile:
            _queue_profile(d, profile, lambda path, d=d: profile_ppr(d, n, path, R))
        _reset_peak(d)
        try:
            ppr = PPRPropagation(device=d)
            s_ppr, Z = _timed(d, lambda p=ppr: p.fit_transform(R))
            clf = MLPHead(hidden_layer_sizes=(64,), epochs=100, validation_fraction=1 / 3,
                          patience=10, device=d, random_state=0)
            s_head, acc = _timed(d, lambda c=clf, Z=Z: c.fit(Z[fit], y[fit]).score(Z[~fit],
                                                                                y[~fit]))
        except Exception as exc:
            rows.append(_skipped(f"{label}: PPR + MLPHead", d, exc))
            continue
        kept = Z._store._on_device is not None
        del Z
        peak = _peak_gib(d)
        info = ppr._run_info   # products solved, in blocks of how many columns
        solve = f"{info['products']} products of {info['block_columns']} columns"
        solve += ", output kept on the device" if kept else ""
        if str(d).startswith("cuda"):   # (the CPU's solver is scipy's, not torch's product)
            bare = _bare_products(R.adjacency, info["products"], info["block_columns"], d)
            solve += f": {bare:.3f} s bare, {s_ppr / bare:.2f}× them"
        rows.append(dict(case=f"{label}: PPR + MLPHead", device=d, seconds=s_ppr + s_head,
                         metric=float(acc),
                         metric_name=f"accuracy; PPR {s_ppr:.3f} s ({solve}), head "
                                     f"{s_head:.2f} s; {data.built}, HDS {data.where} "
                                     f"{data.t_hds:.1f} s",
                         gpu_gib=peak))
    return rows


def _bare_products(A, products, width, device, repeats=3):
    """Seconds of ``products`` bare sparse products ``A @ H`` (``H``: n x ``width``
    float32) on ``device``: what PPR's solve cannot go below."""
    import torch

    from skldp._torch._sparse import to_torch_sparse
    M = to_torch_sparse(A, device)   # float32, int32 indices where they fit, as PPR's
    H = torch.rand(A.shape[0], width, device=device)

    def run(times):
        for _ in range(times):
            out = M @ H
        return out

    run(1)   # warm
    s, _ = _timed(device, lambda: run(repeats))
    return s / repeats * products


def case_large(devices, n=1_000_000):
    # and PPR's first call on a fresh graph profiled: its set-up beside its products
    return _privge_at_scale(devices, n, f"{n} users / {10 * n} edges",
                            "ppr_1m_profile.txt" if n == 1_000_000 else f"ppr_{n}_profile.txt")


def case_huge(devices, n=10_000_000):
    # on the last device only (CUDA when there is one): the CPU would take minutes
    return _privge_at_scale(devices[-1:], n, f"{n} users / {10 * n} edges")


CASES = {"ppr": case_ppr, "hds_columns": case_hds_columns, "privge": case_privge,
         "models": case_models, "large": case_large, "huge": case_huge,
         "profile": case_profile}
DEFAULT_CASES = ["ppr", "hds_columns", "privge", "models"]


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
        if r.get("skipped"):
            lines.append(f"| {r['case']} | {r['device']} | — | skipped: {r['skipped']} | — | — |")
            continue
        # no CPU row of the case (10M users run on CUDA only): no ratio
        # two decimals below 10: a ratio of 0.97 must not read (or plot) as 1.0
        ratio = "—"
        if r["case"] in cpu:
            x = cpu[r["case"]] / r["seconds"]
            ratio = f"{x:.2f}×" if x < 10 else f"{x:.1f}×"
        gib = "—" if r["gpu_gib"] is None else f"{r['gpu_gib']:.2f}"
        epochs = f"; {r['epochs']} iterations" if r.get("epochs") is not None else ""
        lines.append(f"| {r['case']} | {r['device']} | {r['seconds']:.2f} | "
                     f"{r['metric']:.4g} ({r['metric_name']}{epochs}) | {gib} | {ratio} |")
    return "\n".join(lines)


def main(argv=None):
    import json

    import torch
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=None, choices=list(CASES),
                    help=f"default: {' '.join(DEFAULT_CASES)}")
    ap.add_argument("--all", action="store_true", help="every case (large and huge too)")
    ap.add_argument("--large", action="store_true", help="also the 1M-user PrivGE pipeline")
    ap.add_argument("--large-nodes", type=int, default=1_000_000)
    ap.add_argument("--huge-nodes", type=int, default=10_000_000)
    ap.add_argument("--devices", nargs="*",
                    default=["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    ap.add_argument("--out", default=None, help="also write the Markdown table here")
    ap.add_argument("--json", default=None, help="also write the rows here (JSON)")
    ap.add_argument("--profile-dir", default=None,
                    help="where the CUDA profiles go (case 'profile': LPGNN on Facebook; "
                         "cases 'models' and 'large': VGAE on Cora, PPR on 1M users)")
    ap.add_argument("--tiny", action="store_true",
                    help="small stand-ins for Cora and Facebook (a check, not a measurement)")
    a = ap.parse_args(argv)
    global PROFILE_DIR
    PROFILE_DIR = a.profile_dir
    if a.tiny:
        use_tiny_data()
    warnings.simplefilter("ignore")
    cases = list(CASES) if a.all else list(a.cases or DEFAULT_CASES)
    if a.large and "large" not in cases:
        cases.append("large")
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    t0 = time.perf_counter()
    rows = []
    _warm_up(a.devices)
    for name in cases:
        t1 = time.perf_counter()
        try:
            if name == "large":
                rows += case_large(a.devices, a.large_nodes)
            elif name == "huge":
                rows += case_huge(a.devices, a.huge_nodes)
            else:
                rows += CASES[name](a.devices)
        except Exception as exc:   # a whole case (e.g. a dataset missing): say so, go on
            rows.append(_skipped(f"case {name}", ",".join(a.devices), exc))
        print(f"[{name}: {time.perf_counter() - t1:.0f} s]", file=sys.stderr, flush=True)
    table = _table(rows, sys.argv[1:] if argv is None else argv, started,
                   time.perf_counter() - t0)
    print(table)
    if a.out:
        with open(a.out, "w") as f:
            f.write(table + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    _take_profiles()   # after the rows are written: a profile is a help, not a result
    return rows


if __name__ == "__main__":
    main()
