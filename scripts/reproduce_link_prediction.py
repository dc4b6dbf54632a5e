"""Reproduce the link prediction tables (Table 2) of the PGC/LPGNN and PrivGE papers.

The sweep is the registered study ``link_prediction`` of :mod:`skldp.experiments`
(``skldp/experiments/studies/_link_prediction.py``): ``python -m skldp reproduce
link_prediction`` runs it all (both systems, five seeds and the recorded ablations) and
``run`` below hands a subset of it to ``run_study``. Either appends each finished run to
``docs/results/link_prediction_runs.jsonl``, the study's one runs file, and skips a run
already recorded (the 350 committed runs are all in the study's grid: nothing to redo).
``--report`` renders the tables of ``docs/results/link_prediction.md`` from that file.

``--system lpgnn`` (Sajadmanesh & Gatica-Perez, CCS 2021): VGAE with a two-layer GCN
encoder (32/16, batch norm) on features perturbed by LM, PM or PGC (``eps`` per
feature, as in the paper), RAW features, and a graph-only baseline (i.i.d. random
features carrying no information, same encoder). ``--system privge`` (Li et al.,
CIKM 2024): features perturbed by LP, PM, MB or HDS (``eps`` per user), personalised
PageRank propagation, Hadamard edge features and a logistic-regression head;
``inf`` = raw features propagated, graph-only = random features propagated. The
records keep the field ``paper`` (``"000"`` for lpgnn, ``"002"`` for privge; see
``SYSTEM_CODE``), a grid value of the study, so the keys of the recorded runs stay valid.

Every run uses the 85/5/10 edge split of :func:`skldp.model_selection.random_edge_split`
(held-out edges removed from the graph) with ``random_state=seed`` for the
split, the mechanism and the model.

Usage::

    export SKLDP_DATASETS_DIR=<datasets folder> OMP_NUM_THREADS=1
    python -m skldp reproduce link_prediction          # everything (resumes)
    python scripts/reproduce_link_prediction.py --system lpgnn --datasets cora citeseer
    python scripts/reproduce_link_prediction.py --system privge --datasets facebook \
        --methods HDS inf --eps 1 --seeds 0
    python scripts/reproduce_link_prediction.py --report
"""

import argparse
import dataclasses
import os
import sys
from pathlib import Path

import numpy as np

from skldp.experiments import load_runs, run_study
from studies.link_prediction import SYSTEMS, link_prediction_study

# Paper values (AUC %, mean and std) for the table.
TABLE_LPGNN = {  # Table 2, link prediction
    "citeseer": {"LM": [(77.2, .8), (81.6, .7), (84.3, .9)],
                 "PM": [(78.8, 1.1), (84.2, 1.0), (88.1, .6)],
                 "PGC": [(79.0, 1.1), (87.2, .5), (90.0, .5)],
                 "RAW": [(89.6, .8)] * 3},
    "cora": {"LM": [(84.9, .5), (87.9, .8), (89.3, .8)],
             "PM": [(85.1, .9), (88.6, 1.0), (91.0, .6)],
             "PGC": [(85.4, .9), (90.6, .6), (92.1, .5)],
             "RAW": [(91.9, .6)] * 3},
}
EPS_LPGNN = [1, 5, 9]
TABLE_PRIVGE = {  # Table 2 (Cora MB row partly lost in the text extraction: None)
    "cora": {"LP": [(75.2, 3.1), (76.0, 3.5), (75.0, 3.7), (75.2, 3.6)],
             "PM": [(73.2, 3.2), (78.2, 1.1), (77.0, 1.7), (75.2, 2.1)],
             "MB": [None, (78.3, 1.4), (78.3, 1.1), None],
             "HDS": [(82.4, 1.5), (82.7, .8), (82.5, .9), (82.3, .8)],
             "inf": [(93.1, .3)] * 4},
    "facebook": {"LP": [(81.9, 3.2), (84.7, 2.7), (85.6, 1.1), (86.0, 1.2)],
                 "PM": [(92.1, .5), (93.2, .5), (93.3, .3), (89.9, .3)],
                 "MB": [(92.6, 3.8), (92.8, 2.3), (93.1, 2.2), (87.7, .9)],
                 "HDS": [(96.7, .1), (96.7, .1), (96.6, .1), (96.6, .1)],
                 "inf": [(95.6, .1)] * 4},
}
EPS_PRIVGE = [1, 2, 3, 5]
# The value of the records' "paper" field for each system (kept from the first runs so
# that recorded keys stay valid).
SYSTEM_CODE = SYSTEMS
SYSTEM_NAME = {"000": "PGC/LPGNN", "002": "PrivGE"}


ABLATION_KEYS = ("negative_ratio", "loss")


def _setting(r):
    return ", ".join(f"{k} = {r[k]:g}" if isinstance(r[k], float) else f"{k} = {r[k]}"
                     for k in ABLATION_KEYS if k in r)


def _old_fields(r):
    """The fields the report reads, for records written by the runner."""
    if "auc" in r:
        return r
    return {**r, **r["params"], "auc": r["metrics"]["auc"]}


def run(args):
    """Run the chosen part of the registered study ``link_prediction``."""
    systems = [args.system] if args.system else sorted(SYSTEMS)
    study = link_prediction_study(args.datasets, args.seeds, systems,
                                  ablations=not args.no_ablations)
    methods = {}
    for m, meth in study.methods.items():
        if args.methods and m not in args.methods:
            continue
        parts = [dataclasses.replace(p, params={**p.params, "eps": [
            e for e in p.params["eps"] if e is None or e in args.eps]}) if args.eps else p
            for p in meth.grid]
        parts = [p for p in parts if p.params["eps"]]
        if parts:
            methods[m] = dataclasses.replace(meth, grid=parts)
    if not methods:
        raise SystemExit("no run selected")
    study = dataclasses.replace(study, methods=methods)
    res = run_study(study, args.results_dir, n_jobs=args.n_jobs)
    print(f"link_prediction: {len(res.done)} run(s) done, {len(res.skipped)} already "
          f"recorded, {len(res.failed)} failed")
    return 1 if res.failed or res.missing else 0


def _fmt(vals):
    if not vals:
        return "–"
    v = np.asarray(vals)
    return f"{v.mean():.1f} ± {v.std():.1f} (n={len(v)})"


def _paper(p):
    return "–" if p is None else f"{p[0]:.1f} ± {p[1]:.1f}"


def report(args):
    runs = [_old_fields(r) for path in args.out for r in load_runs(path)]
    ablation = [r for r in runs if _setting(r)]
    runs = [r for r in runs if not _setting(r)]
    by = {}
    for r in runs:
        by.setdefault((r["paper"], r["dataset"], r["method"], r["eps"]), []).append(r["auc"])
    lines = []
    for paper, table, eps_list, none_methods in (("000", TABLE_LPGNN, EPS_LPGNN, ("RAW",)),
                                                 ("002", TABLE_PRIVGE, EPS_PRIVGE, ("inf",))):
        lines.append(f"### {SYSTEM_NAME[paper]} paper\n")
        head = "| dataset | method | " + " | ".join(f"ε = {e}: paper | ours" for e in eps_list)
        lines.append(head + " |")
        lines.append("|" + "---|" * (2 + 2 * len(eps_list)))
        for dataset, rows in table.items():
            if not any(k[:2] == (paper, dataset) for k in by):
                continue
            for method, pvals in rows.items():
                cells = []
                for e, pv in zip(eps_list, pvals, strict=True):
                    ours = by.get((paper, dataset, method, None if method in none_methods
                                   else e), [])
                    cells += [_paper(pv), _fmt(ours)]
                lines.append(f"| {dataset} | {method} | " + " | ".join(cells) + " |")
            g = by.get((paper, dataset, "GRAPH", None), [])
            lines.append(f"| {dataset} | graph-only | " + " | ".join(
                ["–", _fmt(g)] * len(eps_list)) + " |")
        lines.append("")
    if ablation:
        lines.append("### Ablations\n")
        lines.append("| paper | dataset | method | eps | setting | ours |")
        lines.append("|---|---|---|---|---|---|")
        abl = {}
        for r in ablation:
            abl.setdefault((r["paper"], r["dataset"], r["method"], r["eps"], _setting(r)),
                           []).append(r["auc"])
        for (p, ds, m, e, k), v in sorted(abl.items(), key=str):
            e = "–" if e is None else f"{e:g}"
            lines.append(f"| {SYSTEM_NAME[p]} | {ds} | {m} | {e} | {k} | {_fmt(v)} |")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.table:
        Path(args.table).write_text(text + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--system", choices=sorted(SYSTEM_CODE),
                    help="lpgnn: VGAE on LM/PM/PGC reports; privge: PPR + Hadamard head "
                         "(default: both)")
    ap.add_argument("--datasets", nargs="+", default=["cora", "citeseer", "facebook"])
    ap.add_argument("--methods", nargs="*", default=None,
                    help="subset of methods (e.g. HDS inf GRAPH); default all")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--eps", nargs="*", type=float, default=None,
                    help="subset of eps values; default the paper's grid")
    ap.add_argument("--no-ablations", action="store_true",
                    help="skip the recorded ablations (negative_ratio = 10, pairwise loss)")
    ap.add_argument("--results-dir", default="docs/results",
                    help="folder of the study's runs file link_prediction_runs.jsonl")
    ap.add_argument("--n-jobs", type=int, default=1, help="parallel runs")
    ap.add_argument("--out", nargs="+", default=["docs/results/link_prediction_runs.jsonl"],
                    help="--report: the runs file(s) to read")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--table", default=None, help="with --report: also write the tables here")
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.report:
        report(args)
        return 0
    import torch
    torch.set_num_threads(1)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
