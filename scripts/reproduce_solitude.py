"""Reproduce Solitude's Table III (Lin et al., IEEE TIFS 2022) on Cora and CiteSeer.

eps_x = 1 (multi-bit features), eps_a in {7.0, 7.3, 7.5, 7.7, 7.9, 8.0} (EdgeRR on every
user's adjacency list, reports kept directed as in the paper's degree count), for

- Base:     GCN / GraphSAGE on the randomized features and graph;
- LPGNN:    feature KProp on the randomized graph + the backbone (labels not private,
            as in the paper's adaptation of LPGNN);
- Solitude: feature smoothing + learned graph-structure denoising (SolitudeClassifier);
- graph-only baseline: label propagation of the training labels over the randomized graph.

The sweep is the registered study ``solitude`` of :mod:`skldp.experiments`
(``skldp/experiments/studies/_solitude.py``; ``python -m skldp reproduce solitude`` runs
it whole): this script hands it to ``run_study``, which appends each finished run to
``docs/results/solitude_runs.jsonl``, the study's one runs file, and skips a run already
recorded. The records written by this script before the runner (merged unchanged from
two fragments by ``scripts/merge_runs_fragments.py solitude``; ``runner_record`` gives
their keys, the study's) keep their old fields (``eps_a``, ``backbone``, ``acc``); the
report reads both kinds. ``--report`` prints the tables of docs/results/solitude.md.

Usage::

    SKLDP_DATASETS_DIR=<datasets folder> OMP_NUM_THREADS=1 \
        python scripts/reproduce_solitude.py
    python scripts/reproduce_solitude.py --report
"""

import argparse
import dataclasses
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from skldp.experiments import RunSpec, load_runs, run_study  # noqa: E402
from studies.solitude import EPS_A, KINDS, solitude_study  # noqa: E402

torch.set_num_threads(1)

# The paper's Table III (eps_x = 1): dataset -> backbone -> method -> values for EPS_A
PAPER = {
    "cora": {
        "sage": {"base": [(50.9, 3.8), (54.9, 3.7), (57.2, 2.5), (61.4, 2.6), (63.7, 2.4),
                          (63.2, 3.2)],
                 "lpgnn": [(62.5, 1.6), (69.2, 1.6), (72.9, 2.3), (74.7, 0.9), (75.3, 1.2),
                           (76.4, 0.8)],
                 "solitude": [(66.4, 1.7), (72.4, 1.2), (75.8, 0.9), (76.7, 1.1), (77.9, 0.6),
                              (79.0, 0.6)]},
        "gcn": {"base": [(60.8, 2.0), (63.1, 3.4), (64.8, 3.7), (66.9, 4.0), (68.1, 4.0),
                         (68.6, 3.8)],
                "lpgnn": [(67.9, 1.2), (69.4, 1.4), (73.7, 1.8), (74.4, 0.5), (75.7, 1.0),
                          (76.3, 0.9)],
                "solitude": [(68.4, 2.3), (72.6, 1.4), (75.2, 1.2), (76.1, 0.5), (77.3, 0.9),
                             (77.8, 0.5)]},
    },
    "citeseer": {
        "sage": {"base": [(35.0, 1.8), (39.1, 1.3), (42.3, 1.5), (44.5, 1.2), (45.7, 1.8),
                          (44.5, 1.9)],
                 "lpgnn": [(46.8, 2.0), (49.7, 0.7), (50.7, 1.4), (51.2, 1.4), (53.3, 0.9),
                           (54.5, 1.2)],
                 "solitude": [(50.1, 1.3), (52.7, 1.0), (54.0, 1.0), (55.6, 0.8), (56.3, 1.0),
                              (57.0, 1.4)]},
        "gcn": {"base": [(39.7, 3.0), (45.3, 1.8), (48.3, 2.9), (49.6, 1.3), (52.5, 2.1),
                         (52.8, 2.5)],
                "lpgnn": [(47.8, 1.1), (50.1, 1.8), (52.3, 1.2), (53.7, 1.3), (55.6, 1.3),
                          (55.6, 1.5)],
                "solitude": [(49.8, 1.4), (53.4, 1.0), (55.1, 0.8), (56.4, 1.5), (58.2, 0.7),
                             (58.0, 2.5)]},
    },
}

def _spec(dataset, eps_a, backbone, seed, method):
    return RunSpec(dataset, method, "random-50/25/25", int(seed),
                   (("backbone", backbone), ("eps_a", eps_a)))


def runner_record(r):
    """A run as a record of the ``solitude`` runs file (skldp.experiments format).

    The old fields stay at the top level (the report and the figure read them); the
    study, the unique key, the split, the grid values and the metric are added.
    """
    spec = _spec(r["dataset"], r["eps_a"], r["backbone"], r["seed"], r["method"])
    return {"study": "solitude", "key": spec.key, **r, "split": spec.split,
            "params": spec.param_dict, "metrics": {"accuracy": r["acc"]}}

def main_run(args):
    """Run the registered study ``solitude`` (skldp.experiments) for the chosen subset."""
    study = solitude_study(args.datasets, range(args.seeds), args.methods)
    study = dataclasses.replace(study, methods={
        m: dataclasses.replace(meth, grid={**meth.grid, "backbone": list(args.backbones)})
        for m, meth in study.methods.items()})
    res = run_study(study, args.results_dir, n_jobs=args.n_jobs)
    print(f"solitude: {len(res.done)} run(s) done, {len(res.skipped)} already recorded, "
          f"{len(res.failed)} failed")
    return 1 if res.failed or res.missing else 0


def _old_fields(r):
    """The fields the report reads, for records written by the runner."""
    if "eps_a" in r:
        return r
    return {**r, **r["params"], "acc": r["metrics"]["accuracy"]}


def main_report(args):
    rows = [_old_fields(r) for f in [args.out] + (args.inputs or []) for r in load_runs(f)]
    from collections import defaultdict
    acc = defaultdict(list)
    for r in rows:
        acc[(r["dataset"], r["backbone"], r["method"], r["eps_a"])].append(100 * r["acc"])
    lines = []
    for name in ("cora", "citeseer"):
        for backbone in ("sage", "gcn"):
            lines.append(f"\n### {name} — {'GraphSAGE' if backbone == 'sage' else 'GCN'}\n")
            lines.append("| method | " + " | ".join(f"eps_a={e}" for e in EPS_A) + " |")
            lines.append("|---" * (len(EPS_A) + 1) + "|")
            for method in ("base", "lpgnn", "lpgnn_authors", "solitude", "graph_only",
                           "raw_features"):
                paper = PAPER[name][backbone].get(method)
                if paper:
                    lines.append(f"| {method} (paper) | " + " | ".join(
                        f"{m:.1f} ± {s:.1f}" for m, s in paper) + " |")
                cells = []
                for e in EPS_A:
                    v = acc.get((name, backbone, method, e))
                    if not v:
                        cells.append("—")
                    elif len(v) == 1:
                        cells.append(f"{v[0]:.1f} (n=1)")
                    else:
                        cells.append(f"{np.mean(v):.1f} ± {np.std(v):.1f} (n={len(v)})")
                label = {"raw_features": "raw features, clean"}.get(method, method)
                lines.append(f"| {label} (ours) | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    if args.md:
        Path(args.md).write_text(text + "\n")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default="docs/results/solitude_runs.jsonl",
                   help="--report: the runs file")
    p.add_argument("--results-dir", default="docs/results",
                   help="the folder of the study's runs file solitude_runs.jsonl")
    p.add_argument("--datasets", nargs="+", default=["cora", "citeseer"])
    p.add_argument("--backbones", nargs="+", default=["gcn", "sage"])
    p.add_argument("--methods", nargs="+", default=list(KINDS), choices=KINDS)
    p.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1")
    p.add_argument("--n-jobs", type=int, default=1, help="parallel runs")
    p.add_argument("--report", action="store_true")
    p.add_argument("--inputs", nargs="*", help="more result files for --report")
    p.add_argument("--md", default=None, help="write the tables to this file (with --report)")
    args = p.parse_args()
    sys.exit(main_report(args) if args.report else main_run(args))
