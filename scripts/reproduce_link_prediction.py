"""Reproduce the link prediction tables (Table 2) of the PGC/LPGNN and PrivGE papers.

``--system lpgnn`` (Sajadmanesh & Gatica-Perez, CCS 2021): VGAE with a two-layer GCN
encoder (32/16, batch norm) on features perturbed by LM, PM or PGC (``eps`` per
feature, as in the paper), RAW features, and a graph-only baseline (i.i.d. random
features carrying no information, same encoder). ``--system privge`` (Li et al.,
CIKM 2024): features perturbed by LP, PM, MB or HDS (``eps`` per user), personalised
PageRank propagation, Hadamard edge features and a logistic-regression head;
``inf`` = raw features propagated, graph-only = random features propagated.

Runs are recorded in ``docs/results/link_prediction_runs.jsonl``, the study's one runs
file in the :mod:`skldp.experiments` format (the earlier fragments, main runs and
ablations, were merged into it unchanged by ``scripts/merge_runs_fragments.py
link_prediction``; the report from it is identical). The records keep the field
``paper`` with the value the runs were recorded under (``"000"`` for lpgnn, ``"002"``
for privge; see ``SYSTEM_CODE``), so the keys of the recorded runs stay valid. The
runs themselves are not yet a registered ``skldp.experiments`` study.

Every run uses the 85/5/10 edge split of :func:`skldp.model_selection.random_edge_split`
(held-out edges removed from the graph) with ``random_state=seed`` for the
split, the mechanism and the model. Results are appended to ``--out`` (runs already
there are skipped, so the script resumes); ``--report`` writes the markdown tables.

Usage::

    export SKLDP_DATASETS_DIR=<datasets folder> OMP_NUM_THREADS=1
    python scripts/reproduce_link_prediction.py --system lpgnn --datasets cora citeseer
    python scripts/reproduce_link_prediction.py --system privge --datasets cora
    python scripts/reproduce_link_prediction.py --system privge --datasets facebook \
        --methods HDS inf --eps 1 --seeds 0
    python scripts/reproduce_link_prediction.py --report
"""

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.pipeline import Pipeline

from skldp.datasets import load_dataset
from skldp.experiments import RunsFile, RunSpec
from skldp.mechanisms import (
    HDSMechanism,
    LaplaceMechanism,
    MultiBitMechanism,
    OneBitMechanism,
    PiecewiseMechanism,
)
from skldp.model_selection import random_edge_split
from skldp.models import HadamardLinkPredictor, VGAELinkPredictor
from skldp.propagation import PPRPropagation

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
SYSTEM_CODE = {"lpgnn": "000", "privge": "002"}
SYSTEM_NAME = {"000": "PGC/LPGNN", "002": "PrivGE"}
# PrivGE's tuned values (authors' run script, see HDSMechanism / PPRPropagation docs).
HDS_K = {"cora": 20, "facebook": 50}
PPR_ALPHA = {"cora": 0.1, "facebook": 0.05}
# Facebook (22k nodes x 4714 features) only: a looser truncation of the PageRank
# series (relative error 1e-3 instead of 1e-6) to fit the CPU budget.
PPR_TOL = {"cora": 1e-6, "facebook": 1e-3}


def random_features(G, seed):
    """Features carrying no information: i.i.d. standard normal, same shape as G's.

    Centred like the unbiased LDP reports at small eps (uncentred noise, e.g.
    0/1 bits, adds a constant feature that only tells the encoder the degree).
    """
    rng = np.random.default_rng(10_000 + seed)
    R = rng.standard_normal(G.features.shape).astype(np.float32)
    return G.with_features(R)


def mechanism_lpgnn(method, eps, d, seed):
    rng = (0.0, 1.0)
    if method == "LM":  # Lap(Delta/eps) on every feature: eps per feature (paper App. A.1)
        return LaplaceMechanism(eps=d * eps, feature_range=rng, random_state=seed)
    if method == "PM":  # PM with eps on every feature (paper App. A.3)
        return PiecewiseMechanism(eps=d * eps, k=d, feature_range=rng, random_state=seed)
    if method == "PGC":
        return OneBitMechanism(eps=eps, feature_range=rng, random_state=seed)
    raise ValueError(method)


def mechanism_privge(method, eps, dataset, seed):
    rng = (0.0, 1.0)
    if method == "LP":
        return LaplaceMechanism(eps=eps, feature_range=rng, random_state=seed)
    if method == "PM":
        return PiecewiseMechanism(eps=eps, feature_range=rng, random_state=seed)
    if method == "MB":
        return MultiBitMechanism(eps=eps, feature_range=rng, random_state=seed)
    if method == "HDS":
        return HDSMechanism(eps=eps, k=HDS_K[dataset], feature_range=rng, random_state=seed)
    raise ValueError(method)


def configs(paper, dataset, methods, eps_filter=None):
    if paper == "000":
        out = [("RAW", None), ("GRAPH", None)]
        for eps in EPS_LPGNN:
            out += [(m, eps) for m in ("LM", "PM", "PGC") if not methods or m in methods]
    else:
        out = [("inf", None), ("GRAPH", None)]
        for eps in EPS_PRIVGE:
            out += [(m, eps) for m in ("HDS", "MB", "PM", "LP") if not methods or m in methods]
    out = [c for c in out if not methods or c[0] in methods]
    return [c for c in out if not eps_filter or c[1] is None or c[1] in eps_filter]


def run_one(paper, dataset, method, eps, seed, G, negative_ratio=1.0, loss="bce"):
    P_tr, P_va, P_te, y_tr, y_va, y_te = random_edge_split(G, random_state=seed)
    if method == "GRAPH":
        G_null = random_features(P_tr.graph, seed)
        P_tr, P_te = P_tr._rebase(G_null), P_te._rebase(G_null)
    steps = []
    if paper == "000":
        if method not in ("RAW", "GRAPH"):
            steps.append(("mech", mechanism_lpgnn(method, eps, G.shape[1], seed)))
        steps.append(("link", VGAELinkPredictor(negative_ratio=negative_ratio,
                                                random_state=seed)))
    else:
        if method not in ("inf", "GRAPH"):
            steps.append(("mech", mechanism_privge(method, eps, dataset, seed)))
        steps.append(("ppr", PPRPropagation(alpha=PPR_ALPHA[dataset], tol=PPR_TOL[dataset])))
        steps.append(("link", HadamardLinkPredictor(loss=loss, random_state=seed)))
    pipe = Pipeline(steps)
    t0 = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(P_tr, y_tr, link__validation_data=(P_va, y_va))
        auc = pipe.score(P_te, y_te)
    out = {"paper": paper, "dataset": dataset, "method": method, "eps": eps, "seed": seed,
           "auc": 100 * auc, "epochs": int(pipe[-1].n_iter_), "seconds": time.time() - t0}
    out.update(ablation_settings(negative_ratio, loss))
    return out


def ablation_settings(negative_ratio, loss):
    """The non-default settings of a run: such runs are ablations, reported apart."""
    out = {}
    if negative_ratio != 1.0:
        out["negative_ratio"] = negative_ratio
    if loss != "bce":
        out["loss"] = loss
    return out


ABLATION_KEYS = ("negative_ratio", "loss")


def _setting(r):
    return ", ".join(f"{k} = {r[k]:g}" if isinstance(r[k], float) else f"{k} = {r[k]}"
                     for k in ABLATION_KEYS if k in r)


def _key(r):
    return (r["paper"], r["dataset"], r["method"], r["eps"], r["seed"], _setting(r))


def load_runs(path):
    if not Path(path).exists():
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def runner_record(r):
    """A run as a record of the ``link_prediction`` runs file (skldp.experiments format).

    The old fields stay at the top level (the report reads them); the study, the
    unique key, the split, the grid values and the metric are added.
    """
    params = {"paper": r["paper"], "eps": r["eps"],
              **{k: r[k] for k in ABLATION_KEYS if k in r}}
    spec = RunSpec(r["dataset"], r["method"], "edge-85/5/10", int(r["seed"]),
                   tuple(sorted(params.items())))
    return {"study": "link_prediction", "key": spec.key, **r, "split": spec.split,
            "params": spec.param_dict, "metrics": {"auc": r["auc"]}}


def run(args):
    torch.set_num_threads(1)
    args.out = args.out[0]
    runs = RunsFile(args.out, "link_prediction")  # one writer, a key never recorded twice
    done = {_key(r) for r in runs.records}
    setting = _setting(ablation_settings(args.negative_ratio, args.loss))
    for dataset in args.datasets:
        G = load_dataset(dataset).data
        for seed in args.seeds:  # all configurations of a seed before the next seed
            for method, eps in configs(args.paper, dataset, args.methods, args.eps):
                if (args.paper, dataset, method, eps, seed, setting) in done:
                    continue
                r = run_one(args.paper, dataset, method, eps, seed, G, args.negative_ratio,
                            args.loss)
                print(json.dumps(r), flush=True)
                runs.append(runner_record(r))


def _fmt(vals):
    if not vals:
        return "–"
    v = np.asarray(vals)
    return f"{v.mean():.1f} ± {v.std():.1f} (n={len(v)})"


def _paper(p):
    return "–" if p is None else f"{p[0]:.1f} ± {p[1]:.1f}"


def report(args):
    runs = [r for path in args.out for r in load_runs(path)]
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--system", choices=sorted(SYSTEM_CODE),
                    help="lpgnn: VGAE on LM/PM/PGC reports; privge: PPR + Hadamard head")
    ap.add_argument("--datasets", nargs="+", default=["cora"])
    ap.add_argument("--methods", nargs="*", default=None,
                    help="subset of methods (e.g. HDS inf GRAPH); default all")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--eps", nargs="*", type=float, default=None,
                    help="subset of eps values; default the paper's grid")
    ap.add_argument("--out", nargs="+", default=["docs/results/link_prediction_runs.jsonl"],
                    help="JSON-lines file(s) of runs (one to append to; several for --report)")
    ap.add_argument("--negative-ratio", type=float, default=1.0,
                    help="lpgnn only: VGAE fresh negatives per positive and epoch "
                         "(ablation; runs are recorded separately)")
    ap.add_argument("--loss", choices=["bce", "pairwise"], default="bce",
                    help="privge only: loss of the Hadamard head (ablation; "
                         "runs are recorded separately)")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--table", default=None, help="with --report: also write the tables here")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.report:
        report(args)
    else:
        if args.system is None:
            ap.error("--system is required unless --report")
        args.paper = SYSTEM_CODE[args.system]
        run(args)


if __name__ == "__main__":
    main()
