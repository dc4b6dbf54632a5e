"""MLPHead's ``weight_decay="auto"`` search: batched against the sequential GridSearchCV.

For each case (Cora and CiteSeer, Planetoid public split, PPR features at
alpha = 0.1; ``binary_sbm`` graphs of the test suite, their raw features; each
with ``hidden_layer_sizes`` () and (16,), ``normalization`` "l2" and
"standardize", several ``random_state``) it fits the default head twice: with
the batched search and with the sequential one (``batched_decay_scores``
switched off), and prints the chosen ``weight_decay_`` and the test accuracy of
each. ``--control`` adds the sequential search's own choice under a change of
rounding alone (Adam's single-tensor path instead of its fused kernel): how
much of a disagreement rounding explains. ``--time`` adds the CPU and
wall-clock time per fit (each the best of ``--repeat``, the two alternated) on
``--threads`` threads; ``--ops`` the number of torch operations a fit
dispatches (views apart; ``bench_epoch_ops.py``'s count), what a GPU pays in
kernel launches.

Usage::

    SKLDP_DATASETS_DIR=/path/to/datasets OMP_NUM_THREADS=1 \\
        python benchmarks/bench_head_decay_search.py [--agree] [--control] [--time] \\
        [--ops] [--threads 1] [--repeat 3] [--seeds 0 1 2]
"""

import argparse
import functools
import os
import sys
import time
import warnings
from contextlib import contextmanager

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import skldp  # noqa: F401
except ImportError:   # run from a source checkout without installing it
    sys.path.insert(0, os.path.dirname(HERE))


@contextmanager
def sequential():
    """The sequential GridSearchCV: the batched search switched off."""
    from skldp.models import _mlp
    saved = _mlp.batched_decay_scores
    _mlp.batched_decay_scores = lambda *a, **k: None
    try:
        yield
    finally:
        _mlp.batched_decay_scores = saved


@contextmanager
def unfused():
    """Adam's single-tensor path in every fit (the same update up to rounding)."""
    from skldp._torch import Adam
    from skldp.models import _base
    _base.Adam = functools.partial(Adam, fused=False)
    try:
        yield
    finally:
        _base.Adam = Adam


def planetoid(name):
    """PPR features (alpha = 0.1) of the public split's training and test nodes."""
    from skldp.datasets import load_dataset
    from skldp.model_selection import planetoid_split
    from skldp.propagation import PPRPropagation
    bunch = load_dataset(name)
    G, y = bunch.data.new_simulation(), np.asarray(bunch.target)
    tr, _, te = planetoid_split(bunch)
    pre = PPRPropagation(alpha=0.1).fit(G[tr])
    return pre.transform(G[tr]), y[tr], pre.transform(G[te]), y[te]


SBM = {   # name: _binary_sbm's parameters (tests/conftest.py), rows fitted
    "sbm-easy": (dict(n=150, d=12), 60),
    "sbm-60": (dict(n=600, d=60, lift=0.15), 100),
    "sbm-200": (dict(n=600, d=200, base=0.1, lift=0.1), 150),
}


def sbm(name, seed):
    """A ``binary_sbm`` graph's raw features, ``SBM[name]``'s rows (random) to fit."""
    sys.path.insert(0, os.path.dirname(HERE))
    from tests.conftest import _binary_sbm
    kw, n_fit = SBM[name]
    G, y = _binary_sbm(seed=seed, **kw)
    X = np.asarray(G.features)
    order = np.random.default_rng(seed).permutation(len(y))
    return X[order[:n_fit]], y[order[:n_fit]], X[order[n_fit:]], y[order[n_fit:]]


def datasets(names, seeds):
    """``(label, (X_fit, y_fit, X_test, y_test))`` of each data set (an SBM per seed)."""
    for name in names:
        if name in SBM:
            for s in seeds:
                yield f"{name}#{s}", sbm(name, s)
        else:
            yield name, planetoid(name)


def fit(data, seed, hidden, norm):
    from skldp.models import MLPHead
    return MLPHead(hidden_layer_sizes=hidden, normalization=norm,
                   random_state=seed).fit(data[0], data[1])


def cpu_time(fn):
    """CPU and wall-clock time of a call of ``fn``."""
    t, w = time.process_time(), time.perf_counter()
    fn()
    return np.array([time.process_time() - t, time.perf_counter() - w])


def op_count(fn):
    """Torch operations (views apart) that ``fn`` dispatches."""
    from bench_epoch_ops import _Counter
    counter = _Counter()
    with counter.mode:
        fn()
    return counter.counts["ops"]


CONFIGS = [((), "l2"), ((16,), "l2"), ((), "standardize"), ((16,), "standardize")]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["cora", "citeseer", *SBM])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--agree", action="store_true", help="chosen decay and test accuracy")
    p.add_argument("--control", action="store_true",
                   help="the sequential choice with Adam's unfused path")
    p.add_argument("--time", action="store_true", help="CPU time per fit")
    p.add_argument("--ops", action="store_true", help="torch operations per fit")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    import torch
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    same = total = 0
    for label, data in datasets(args.datasets, args.seeds):
        for hidden, norm in CONFIGS:
            for seed in (args.seeds if args.agree or args.control else args.seeds[:1]):
                row = f"{label:12s} {str(hidden):6s} {norm:11s} seed {seed}"
                run = functools.partial(fit, data, seed, hidden, norm)
                if args.agree:
                    new = run()
                    with sequential():
                        old = run()
                    a_new, a_old = new.score(data[2], data[3]), old.score(data[2], data[3])
                    same += new.weight_decay_ == old.weight_decay_
                    total += 1
                    row += (f" | decay {old.weight_decay_:.2g} -> {new.weight_decay_:.2g}"
                            f" | acc {a_old:.4f} -> {a_new:.4f}")
                if args.control:
                    with sequential(), unfused():
                        ctl = run()
                    row += (f" | unfused sequential {ctl.weight_decay_:.2g}, "
                            f"acc {ctl.score(data[2], data[3]):.4f}")
                if args.time:
                    t_new = t_old = np.inf
                    for _ in range(args.repeat):   # alternated: the same load on both
                        t_new = np.minimum(t_new, cpu_time(run))
                        with sequential():
                            t_old = np.minimum(t_old, cpu_time(run))
                    row += (f" | cpu {t_old[0]:.3f} -> {t_new[0]:.3f} s "
                            f"({t_old[0] / t_new[0]:.1f}x) | wall {t_old[1]:.3f} -> "
                            f"{t_new[1]:.3f} s ({t_old[1] / t_new[1]:.1f}x)")
                if args.ops:
                    o_new = op_count(run)
                    with sequential():
                        o_old = op_count(run)
                    row += f" | ops {o_old} -> {o_new} ({o_old / o_new:.0f}x)"
                print(row, flush=True)
    if args.agree:
        print(f"same decay in {same} of {total} fits")


if __name__ == "__main__":
    main()
