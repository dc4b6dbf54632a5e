"""Which weight decay should ``MLPHead`` default to? Its cells with few and many labels.

The PPR pipeline's head at weight decays 5e-5 (the default), 5e-4, 5e-3 and
5e-2, and at the one chosen among them (on the validation nodes where the split
has them, else by a 3-fold cross-validation on the fit rows with scikit-learn's
``GridSearchCV``; never on a test node), on Cora and CiteSeer:

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
    """Test accuracy at each fixed weight decay and at the cross-validated one."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
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
    heads = [MLPHead(weight_decay=w, random_state=seed, **kw).fit(Zf, y[fit]) for w in DECAYS]
    accs = [h.score(Zt, y[te]) for h in heads]
    if val is not None:
        # the choice on the validation nodes (the first of the grid on a tie)
        Zv = pre.transform(G[val])
        best = max(range(len(DECAYS)), key=lambda i: (heads[i].score(Zv, y[val]), -i))
        return accs + [accs[best]], DECAYS[best]
    # no validation node: the choice a head could make by itself, k-fold on its fit rows
    search = GridSearchCV(MLPHead(random_state=seed), {"weight_decay": list(DECAYS)},
                          cv=StratifiedKFold(3, shuffle=True, random_state=seed))
    search.fit(Zf.features[Zf.rows], y[fit])
    return accs + [search.score(Zt.features[Zt.rows], y[te])], search.best_params_["weight_decay"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["cora", "citeseer"])
    p.add_argument("--seeds", type=int, default=3)
    args = p.parse_args(argv)
    from skldp.datasets import load_dataset
    warnings.simplefilter("ignore")
    head = " | ".join(f"{w:g}" for w in DECAYS)
    print(f"| dataset | split | features | {head} | chosen (which) |")
    print("|---|---|---|" + "---|" * (len(DECAYS) + 1))
    for name in args.datasets:
        bunch = load_dataset(name)
        for split in ("public", "20/30", "50/25/25"):
            for features in ("raw", "HDS, eps = 1"):
                if split == "public" and features != "raw":
                    continue   # the public split is the non-private benchmark
                seeds = range(1 if split == "public" else args.seeds)
                runs = [cell(bunch, split, features, s) for s in seeds]
                acc = 100 * np.mean([r[0] for r in runs], axis=0)
                chosen = ", ".join(f"{r[1]:g}" for r in runs)
                cols = " | ".join(f"{a:.1f}" for a in acc[:-1])
                print(f"| {name} | {split} | {features} | {cols} | {acc[-1]:.1f} ({chosen}) |",
                      flush=True)


if __name__ == "__main__":
    main()
