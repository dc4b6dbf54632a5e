"""Which weight decay should ``MLPHead`` use? Its cells with few and many labels.

The PPR pipeline's head at the fixed weight decays 5e-5, 5e-4, 5e-3 and 5e-2,
at its default (``weight_decay="auto"``: a 5-fold cross-validation of the fit
rows when they are fewer than 500 and no validation node is given, else
5e-5) and, where the split has validation nodes, at the fixed decay they choose
(never a test node), on Cora and CiteSeer:

* ``public``: the Planetoid public split, fitted on its 140 / 120 training
  nodes alone (the train-only regime of the Planetoid page);
* ``20/30``: 20 training and 30 validation nodes per class (the label-scarce
  protocol; the head early-stops on the validation nodes);
* ``50/25/25``: fitted on the training and validation halves (the
  honest-utility protocol);

each with the raw features and with ``HDSMechanism(eps=1, k="auto")`` reports
(the PrivGE pipeline's private cell), PPR at alpha = 0.1. Test accuracy (%),
mean over the seeds (the split's and the head's; the public split is fixed).

Usage::

    SKLDP_DATASETS_DIR=/path/to/datasets OMP_NUM_THREADS=1 \\
        python benchmarks/bench_head_weight_decay.py [--seeds 3]
"""

import argparse
import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import skldp  # noqa: F401
except ImportError:   # run from a source checkout without installing it
    sys.path.insert(0, os.path.dirname(HERE))

DECAYS = (5e-5, 5e-4, 5e-3, 5e-2)


def _masks(bunch, y, split, seed):
    """Fit rows, validation mask handed to the head (or None), test rows."""
    from skldp.experiments import default_split
    from skldp.model_selection import per_class_node_split, planetoid_split
    if split == "public":
        tr, _, te = planetoid_split(bunch)
        return tr, None, te
    if split == "20/30":
        tr, va, te = per_class_node_split(y, random_state=seed)
        return tr | va, va, te
    tr, va, te = default_split(y, seed)
    return tr | va, None, te


def cell(bunch, split, features, seed):
    """Test accuracy at each fixed decay, at the default and at the chosen decay (or None).

    Returns the accuracies (the fixed decays, the default's, the validation
    nodes' choice or NaN without them), the default's decay and the chosen one.
    """
    from sklearn.pipeline import Pipeline

    from skldp.mechanisms import HDSMechanism
    from skldp.models import MLPHead
    from skldp.propagation import PPRPropagation

    G, y = bunch.data.new_simulation(), np.asarray(bunch.target)
    fit, val, te = _masks(bunch, y, split, seed)
    steps = [("ppr", PPRPropagation(alpha=0.1))]
    if features == "HDS, eps = 1":
        steps.insert(0, ("hds", HDSMechanism(1.0, k="auto", random_state=1000 + seed)))
    pre = Pipeline(steps).fit(G[fit])
    Zf, Zt = pre.transform(G[fit]), pre.transform(G[te])
    kw = {} if val is None else {"validation": val}
    default = MLPHead(random_state=seed, **kw).fit(Zf, y[fit])
    # the default at a fixed decay of the grid is that head (same seed): not fitted twice
    heads = [default if w == default.weight_decay_ else
             MLPHead(weight_decay=w, random_state=seed, **kw).fit(Zf, y[fit]) for w in DECAYS]
    accs = [h.score(Zt, y[te]) for h in heads] + [default.score(Zt, y[te])]
    if val is None:
        return accs + [float("nan")], default.weight_decay_, None
    # the choice on the validation nodes (the first of the grid on a tie)
    Zv = pre.transform(G[val])
    best = max(range(len(DECAYS)), key=lambda i: (heads[i].score(Zv, y[val]), -i))
    return accs + [accs[best]], default.weight_decay_, DECAYS[best]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["cora", "citeseer"])
    p.add_argument("--seeds", type=int, default=3)
    args = p.parse_args(argv)
    from skldp.datasets import load_dataset
    warnings.simplefilter("ignore")
    head = " | ".join(f"{w:g}" for w in DECAYS)
    print(f"| dataset | split | features | {head} | default (its decays) "
          "| chosen on validation (which) |")
    print("|---|---|---|" + "---|" * (len(DECAYS) + 2))
    for name in args.datasets:
        bunch = load_dataset(name)
        for split in ("public", "20/30", "50/25/25"):
            for features in ("raw", "HDS, eps = 1"):
                if split == "public" and features != "raw":
                    continue   # the public split is the non-private benchmark
                seeds = range(1 if split == "public" else args.seeds)
                runs = [cell(bunch, split, features, s) for s in seeds]
                acc = 100 * np.mean([r[0] for r in runs], axis=0)
                auto = ", ".join(f"{r[1]:.2g}" for r in runs)
                cols = " | ".join(f"{a:.1f}" for a in acc[:-2])
                chosen = ("—" if runs[0][2] is None else
                          f"{acc[-1]:.1f} ({', '.join(f'{r[2]:g}' for r in runs)})")
                print(f"| {name} | {split} | {features} | {cols} | {acc[-2]:.1f} ({auto}) "
                      f"| {chosen} |", flush=True)


if __name__ == "__main__":
    main()
