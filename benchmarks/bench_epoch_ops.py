"""Operations per training epoch of the torch models on Cora, counted on the CPU.

On a GPU, a small full-batch epoch costs what the host takes to launch its kernels:
each torch operation that is not a view launches one or a few. This script counts,
with a torch dispatch mode, the operations of every model of ``bench_gpu.py``'s case
``models`` (the same data and settings), as one fit of ``E2`` epochs minus one of
``E1``, divided by ``E2 - E1`` (so set-up and prediction cancel). Validation
checks run as in a real fit (patience set out of reach, so that every epoch runs).

With ``--card-path`` (the default) the models take the GPU's code paths where they
differ: the trainer reads the stop flag every 16 checks, and a fixed dense input is
aggregated or propagated once (``_DENSE_PROPAGATION_ON``). The counts then stand for
the card's launches up to torch's own decompositions (an operation may launch more
than one kernel on CUDA). No GPU needed: a measure of launches that a session
without a card can take before and after a change.

With ``--host-time`` a second column gives the other half of a small epoch's cost
on a GPU: the host's time per epoch (Python, torch's dispatch, the host-side work
of each step) measured on ``bench_gpu.py``'s 150-node stand-in graph, where the
arithmetic is negligible, on one thread, by the same difference of two fits (best
of ``--repeat``, alternated).

Usage::

    SKLDP_DATASETS_DIR=/path/to/datasets python benchmarks/bench_epoch_ops.py \\
        [--models VGAELinkPredictor GCNClassifier] [--epochs 4 12] [--cpu-path] \\
        [--host-time] [--repeat 5]
"""

import argparse
import collections
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def card_path(set_attribute=setattr):
    """Point the models at the GPU's code paths while running on the CPU (with
    ``set_attribute``, e.g. a test's ``monkeypatch.setattr``)."""
    import skldp.models  # noqa: F401  (every model module loaded)
    import skldp.models._gnn as gnn
    import skldp.models._link as link
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "") or ""
        # (vars: a module's own names, without the deprecation warnings of a __getattr__)
        if name.startswith("skldp.") and "default_sync_every" in vars(module):
            set_attribute(module, "default_sync_every", lambda device: 16)
    for module in (gnn, link):
        set_attribute(module, "_DENSE_PROPAGATION_ON", ("cuda", "cpu"))


class _Counter:
    """Operations dispatched while active, views apart."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        counts = self.counts = collections.Counter()

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                view = getattr(func, "is_view", False)
                counts["views" if view else "ops"] += 1
                if not view:
                    counts[func.overloadpacket.__name__] += 1
                return func(*args, **(kwargs or {}))

        self.mode = Mode()


def _with_epochs(est, epochs):
    """``est`` (or a pipeline's last step) set to run exactly ``epochs`` epochs with its
    validation checks."""
    from bench_gpu import final_step
    from sklearn.base import clone
    est = clone(est)
    last = final_step(est)
    params = last.get_params()
    # DP-GNN counts steps (its epochs=None defers to n_steps)
    new = {"n_steps": epochs} if "n_steps" in params else {"epochs": epochs}
    if "patience" in params:
        new["patience"] = 10 ** 6
    if "min_epochs" in params:
        new["min_epochs"] = 0
    last.set_params(**new)
    return est


def count_per_epoch(est, fit, epochs=(4, 12)):
    """Operations (and the commonest ones) per epoch of ``est``: ``fit(est)`` fits it."""
    fit(_with_epochs(est, epochs[0]))   # what a graph keeps (its tensors) made before both
    totals = []
    for e in epochs:
        counter = _Counter()
        model = _with_epochs(est, e)
        with counter.mode:
            fit(model)
        totals.append(counter.counts)
    per_epoch = {k: (totals[1][k] - totals[0][k]) / (epochs[1] - epochs[0])
                 for k in totals[1]}
    return per_epoch


def host_ms_per_epoch(est, fit, epochs=(20, 120), repeat=5):
    """Host milliseconds per epoch of ``est`` (``fit(est)`` fits it): fits of the two
    epoch counts alternated, best of ``repeat`` each, their difference per epoch."""
    models = [_with_epochs(est, e) for e in epochs]
    best = [float("inf")] * 2
    for _ in range(repeat):
        for i, model in enumerate(models):
            start = time.perf_counter()
            fit(model)
            best[i] = min(best[i], time.perf_counter() - start)
    return (best[1] - best[0]) / (epochs[1] - epochs[0]) * 1e3


def _cases(G, y, fit, few_rows=False):
    """``bench_gpu.py``'s case ``models`` on the graph ``G`` (labels ``y``, rows ``fit``):
    name -> (estimator, function fitting it on eps = 1 multi-bit reports).

    ``few_rows``: MLPHead's weight decay fixed at the value its ``"auto"`` takes on
    Cora's many rows, where on few it would cross-validate (45 more fits).
    """
    import bench_gpu

    from skldp.mechanisms import MultiBitMechanism
    from skldp.model_selection import random_edge_split
    from skldp.models._mlp import _DECAY
    R = MultiBitMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(G)
    models = bench_gpu._node_models("cpu", np.unique(y), int(fit.sum()))
    if few_rows:
        models["PPR -> MLPHead"].set_params(clf__weight_decay=_DECAY)
    cases = {name: (est, lambda m: m.fit(R[fit], y[fit])) for name, est in models.items()}
    P_tr, P_va, _, y_tr, y_va, _ = random_edge_split(R, random_state=0)
    P_fit, y_fit = P_tr.concat(P_va), np.r_[y_tr, y_va]
    for name, est in bench_gpu._link_cases("cpu").items():
        cases[name] = (est, lambda m: m.fit(P_fit, y_fit))
    return cases


def main(argv=None):
    import bench_gpu

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=None)
    parser.add_argument("--epochs", nargs=2, type=int, default=[4, 12])
    parser.add_argument("--cpu-path", action="store_true",
                        help="count the CPU's code paths instead of the card's")
    parser.add_argument("--host-time", action="store_true",
                        help="also time each epoch on the host, on a 150-node graph")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    if not args.cpu_path:
        card_path()
    G, y, fit, _ = bench_gpu._cora()
    cases = _cases(G, y, fit)
    tiny = {}
    if args.host_time:
        import torch
        torch.set_num_threads(1)
        G_small, y_small, fit_small, _ = bench_gpu._tiny()
        tiny = _cases(G_small, y_small, fit_small, few_rows=True)
    print(f"Operations per epoch on Cora ({'CPU' if args.cpu_path else 'the card'}'s "
          f"code paths; fits of {args.epochs[0]} and {args.epochs[1]} epochs)\n")
    host = " host ms per epoch (150 nodes) |" if tiny else ""
    print(f"| model | operations per epoch | views per epoch |{host} commonest |")
    print("|---|---|---|---|" + ("---|" if tiny else ""))
    for name, (est, fit_one) in cases.items():
        if args.models and name not in args.models:
            continue
        try:
            c = count_per_epoch(est, fit_one, args.epochs)
            ms = f" {host_ms_per_epoch(*tiny[name], repeat=args.repeat):.2f} |" if tiny else ""
        except Exception as exc:   # an optional package missing (pymetis)
            print(f"| {name} | skipped: {type(exc).__name__}: {exc} | | |" + (" |" if tiny else ""))
            continue
        top = sorted(((v, k) for k, v in c.items() if k not in ("ops", "views") and v > 0),
                     reverse=True)[:5]
        print(f"| {name} | {c.get('ops', 0):.1f} | {c.get('views', 0):.1f} |{ms} "
              + ", ".join(f"{k} {v:g}" for v, k in top) + " |", flush=True)


if __name__ == "__main__":
    main()
