"""Reproduce Table 2 (node classification) of the PGC/LPGNN paper (Sajadmanesh &
Gatica-Perez, CCS 2021) and the LPGNN label-LDP pipeline.

The sweep is the registered study ``lpgnn`` of :mod:`skldp.experiments`
(``skldp/experiments/studies/_lpgnn.py``). Usage (1 thread, resumable: a run already in
the runs file is skipped; the 410 committed runs are the study's whole grid)::

    export OMP_NUM_THREADS=1 SKLDP_DATASETS_DIR=<datasets folder>
    python -m skldp reproduce lpgnn                     # both parts, every dataset
    python scripts/reproduce_lpgnn.py --part table2     # a part through run_study
    python scripts/reproduce_lpgnn.py --part lpgnn --datasets cora citeseer
    python scripts/reproduce_lpgnn.py --report lpgnn_report.md

Both append to ``docs/results/lpgnn_runs.jsonl``, the study's one runs file (the
earlier fragments were merged into it unchanged by ``scripts/merge_runs_fragments.py
lpgnn``; the records written before the runner keep their fields, and their key is
the study's key of the same run, see ``runner_record``). ``--report`` writes the
generated part of the page (the page adds the figure, the API links and the
feature-free rows of ``scripts/feature_free_rows.py``): write it elsewhere and copy the
tables.

Part ``table2``: two-layer GCN (hidden 32, ReLU, dropout 0.5, Adam lr 0.01,
weight decay 5e-4, at most 500 epochs, early stopping on the validation loss
with patience 20) on the Planetoid public split of Cora and CiteSeer, with the
features perturbed by LM, PM or PGC (1-bit) at eps per feature in {1, 5, 9}
(the paper's §5), or RAW features. Part ``lpgnn``: multi-bit features
(eps_x) -> LPGNNClassifier (SAGE, KProp of features and noisy labels, label RR
at eps_y, forward correction, early stopping on noisy validation labels) with
a random 50/25/25 split. Both parts also run the graph-only baseline: the same
model on 64 i.i.d. Gaussian features that carry no information.
"""

# ruff: noqa: E501  (the report header holds verbatim command lines)

import argparse
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

torch.set_num_threads(1)

from skldp.experiments import RunSpec, load_runs, run_study  # noqa: E402
from studies.lpgnn import (  # noqa: E402
    CONFIG,
    LPGNN_EPS_X,
    LPGNN_EPS_Y,
    SPLITS,
    TABLE2_EPS,
    lpgnn_study,
)

INF = float("inf")

# ---------------------------------------------------------------- paper values
# Table 2 of the PGC/LPGNN paper, node classification micro-F1 (%), mean and std over 10 runs.
PAPER_TABLE2 = {
    ("citeseer", "LM"): [(37.0, 1.6), (57.6, 0.9), (68.5, 1.1)],
    ("citeseer", "PM"): [(36.8, 1.4), (67.5, 1.2), (71.0, 0.9)],
    ("citeseer", "PGC"): [(37.3, 1.3), (70.7, 0.6), (70.2, 0.7)],
    ("citeseer", "RAW"): [(69.6, 0.9)] * 3,
    ("cora", "LM"): [(54.4, 0.9), (73.9, 0.8), (78.8, 0.7)],
    ("cora", "PM"): [(56.6, 1.9), (77.8, 1.0), (80.9, 0.6)],
    ("cora", "PGC"): [(57.0, 1.9), (80.2, 0.6), (81.2, 0.4)],
    ("cora", "RAW"): [(81.4, 0.3)] * 3,
}

# LPGNN as a baseline in the RGNN paper's Table II (SAGE backbone, multi-bit features,
# RR labels, KProp) -- on feature-grouped datasets (d = 53 / 58 / 48), eps is
# GRR-FS's per-feature budget and eps_y in {3, 2, 1, 0.5}: NOT the same setting.
PAPER001_LPGNN = {
    ("citeseer", 1.0): {3: (45.6, 12.2), 2: (51.7, 1.8), 1: (46.4, 1.6)},
    ("citeseer", 0.1): {3: (53.1, 1.9), 2: (51.3, 3.4), 1: (47.3, 1.8)},
    ("cora", 1.0): {3: (55.5, 15.4), 2: (39.5, 14.2), 1: (34.1, 8.4)},
    ("cora", 0.1): {3: (68.5, 1.8), 2: (63.8, 5.4), 1: (60.6, 3.5)},
    ("facebook", 1.0): {3: (70.4, 2.1), 2: (69.3, 1.7), 1: (67.6, 1.9)},
    ("facebook", 0.1): {3: (76.3, 0.9), 2: (75.8, 0.8), 1: (73.1, 0.3)},
}
# The Solitude paper's Table III: LPGNN (SAGE and GCN backbones) at eps_x = 1 (multi-bit, per user)
# with CLEAN labels but an edge-LDP (randomized response) graph at eps_a; the
# largest eps_a (8.0) is the closest to our eps_x = 1, eps_y = inf cell.
PAPER003_LPGNN = {"cora": {"SAGE": (76.4, 0.8), "GCN": (76.3, 0.9)},
                  "citeseer": {"SAGE": (54.5, 1.2), "GCN": (55.6, 1.5)}}
# The RGNN paper's Table I, non-private accuracy on the original features (SAGE).
PAPER001_NONPRIVATE = {"citeseer": (74.7, 1.2), "cora": (87.5, 0.9), "facebook": (94.2, 0.3)}

LPGNN_STEPS = {name: (c["x_steps"], c["y_steps"]) for name, c in CONFIG.items()}


def _spec(r):
    """The study's run of a record written before the runner (its ``part`` and budgets)."""
    if r["part"] == "table2":
        params = {"part": "table2", "eps": r["eps"]}
    else:
        params = {"part": "lpgnn", "eps_x": r["eps_x"], "eps_y": r["eps_y"]}
    return RunSpec(r["dataset"], r["method"], SPLITS[r["part"]], int(r["seed"]),
                   tuple(sorted(params.items())))


def runner_record(r):
    """A run of the script before the runner as a record of the ``lpgnn`` runs file.

    The run's fields stay at the top level, where the report and the figure read them;
    the study, the study's key of the run (the script's own key is kept as
    ``legacy_key``), the split, the grid values and the metric are added.
    """
    spec = _spec(r)
    legacy = {"legacy_key": r["key"]} if "key" in r and r["key"] != spec.key else {}
    r = {k: v for k, v in r.items() if k not in ("study", "key", "split", "params")}
    return {"study": "lpgnn", "key": spec.key, **legacy, **r, "split": spec.split,
            "params": spec.param_dict, "metrics": {"accuracy": r["acc"]}}


def _old_fields(r):
    """The fields the report reads, for records written by the runner."""
    if "acc" in r:
        return r
    return {**r, **r["params"], "acc": r["metrics"]["accuracy"],
            "label_agreement": r["metrics"].get("label_agreement")}


def run(args):
    """Run a part of the registered study ``lpgnn`` through ``run_study``."""
    datasets = args.datasets or (["cora", "citeseer"] if args.part == "table2"
                                 else ["cora", "citeseer", "facebook"])
    study = lpgnn_study(datasets, range(args.seeds), [args.part])
    res = run_study(study, Path(args.log[0]).parent, n_jobs=args.n_jobs)
    print(f"lpgnn ({args.part} on {', '.join(datasets)}): {len(res.done)} run(s) done, "
          f"{len(res.skipped)} already recorded, {len(res.failed)} failed")
    return 1 if res.failed or res.missing else 0


# ------------------------------------------------------------------- report
def _fmt(vals):
    if not vals:
        return "—"
    a = 100 * np.asarray(vals)
    return f"{a.mean():.1f} ± {a.std():.1f} (n={len(a)})"


def _mean(vals):
    return 100 * float(np.mean(vals)) if vals else np.nan


def _eps_str(e):
    return "∞" if e is None or e == INF else f"{e:g}"


HEADER = """# LPGNN: the PGC/LPGNN paper Table 2 and the LPGNN label-LDP pipeline

Produced by the registered study `lpgnn` of `skldp.experiments` (CPU, 1 thread per process,
torch {torch}; Facebook's LPGNN capped at 100 epochs by the study's settings):

```
export OMP_NUM_THREADS=1 SKLDP_DATASETS_DIR=<datasets folder>
python -m skldp reproduce lpgnn        # both parts, 5 seeds; skips the runs already recorded
python scripts/reproduce_lpgnn.py --part table2   # or one part through the same study
python scripts/reproduce_lpgnn.py --report lpgnn_report.md   # the tables of this page
```

The mean absolute error of the graph-convolution estimate (the PGC/LPGNN paper Figures 2 and 3) is in
[lpgnn_mae.md](lpgnn_mae.md).

**Setup, Table 2.** Two-layer `GCNClassifier` (hidden 32, ReLU, dropout 0.5, Adam lr 0.01,
weight decay 5e-4, at most 500 epochs, early stopping on the loss of the 500 Planetoid
validation nodes with patience 20, `validation_data=`, now `validation=`), Planetoid public split (140/500/1000
on Cora, 120/500/1000 on CiteSeer). Features are binary, i.e. already in [0, 1]. As in the paper
each mechanism spends ε on *every* feature: LM = `LaplaceMechanism(eps * d)`, PM =
`PiecewiseMechanism(eps * d, k=d)`, PGC = `OneBitMechanism(eps)`; the honest per-user total,
reported by `epsilon_`, is therefore d·ε (1433·ε on Cora). The GCN's first layer applied to the
reports is the PGC/LPGNN paper's estimator. Hyperparameters were fixed (Kipf & Welling's), not tuned on the
RAW validation set as in the paper.

**Setup, LPGNN.** `Pipeline([MultiBitMechanism(eps_x, feature_range=(0, 1)),
LPGNNClassifier(eps_y, classes=range(c), x_steps=Kx, y_steps=Ky, normalization="rw",
propagate_predictions=False)])` (the classifier's defaults when the runs were made; its
defaults now follow the authors' code, see "The authors' code" below): multi-bit reports (m =
max(1, ⌊ε_x/2.18⌋) sampled features), KProp of the features (mean over neighbours, no self
loop, Kx steps, applied exactly after the first linear map), SAGE (2 layers, hidden 16, SELU,
dropout 0.5, Adam lr 0.01, weight decay 1e-4), label RR at ε_y, "Drop": KProp over the noisy
one-hot labels of the fit nodes (Ky steps) and training on the propagated label, forward
correction with the RR transition matrix, early stopping (patience 20, at most 200 epochs; 100
on Facebook) on the error against the denoised **noisy** validation labels. Random 50/25/25
split per seed; validation nodes passed as `validation_data` (now `validation=`; their labels are randomized
too). Kx, Ky fixed per dataset, not tuned (no clean validation label may be used to tune
them). ε_y = ∞ means clean labels (no RR, no correction, Drop still on); ε_x = ∞ means the raw
features.

**Graph-only baseline.** The same model on 64 i.i.d. N(0, 1) features per node (they carry no
information; the model can only use the graph and, for LPGNN, the propagated labels), no
feature privacy.

**Seeds.** 5 seeds (0–4) everywhere. On Facebook training is capped at 100 epochs (200 on
Cora and CiteSeer) to fit the CPU budget; `n` in each cell is the number of finished runs. The
raw per-run records are committed as `lpgnn_runs.jsonl` beside this page (one runs file: the
three fragments the runs were first written to, merged unchanged; each record's key is the
study's key of the run, the key the script first wrote is kept as `legacy_key`).
"""


def write_report(logs, out):
    recs = [_old_fields(r) for path in logs for r in load_runs(path)]
    t2 = [r for r in recs if r["part"] == "table2"]
    lp = [r for r in recs if r["part"] == "lpgnn"]
    lines = [HEADER.replace("{torch}", torch.__version__)]

    def accs(rows, **kw):
        return [r["acc"] for r in rows if all(r.get(k) == v for k, v in kw.items())]

    def grid_table(rows, method):
        """The eps_x x eps_y table of ``method``'s runs in ``rows``."""
        out = ["| ε_x \\ ε_y | " + " | ".join(_eps_str(e) for e in LPGNN_EPS_Y) + " |",
               "|---|" + "---|" * len(LPGNN_EPS_Y)]
        for ex in LPGNN_EPS_X:
            cells = [_fmt(accs(rows, method=method, eps_x=ex, eps_y=ey)) for ey in LPGNN_EPS_Y]
            out.append(f"| {_eps_str(ex)} | " + " | ".join(cells) + " |")
        return out

    lines.append("## Table 2 of the PGC/LPGNN paper: node classification (GCN, micro-F1 = accuracy, %)\n")
    lines.append("Planetoid public split; ours = mean ± std over seeds (n = number of runs); "
                 "paper = mean ± std over 10 runs. Graph-only: the same GCN on 64 i.i.d. "
                 "Gaussian features (no information), no privacy. Δ = ours − paper.\n")
    lines.append("| dataset | method | ε | paper | ours | Δ | graph-only |")
    lines.append("|---|---|---|---|---|---|---|")
    gaps = []
    for name in ("cora", "citeseer"):
        go = accs(t2, dataset=name, method="GRAPH-ONLY")
        for method in ("LM", "PM", "PGC", "RAW"):
            for i, eps in enumerate(TABLE2_EPS):
                if method == "RAW" and i > 0:
                    continue
                pv = PAPER_TABLE2[(name, method)][i]
                ours = accs(t2, dataset=name, method=method,
                            **({} if method == "RAW" else {"eps": eps}))
                delta = _mean(ours) - pv[0]
                if ours and abs(delta) > 3:
                    gaps.append((name, method, eps, delta))
                lines.append(f"| {name} | {method} | {'any' if method == 'RAW' else eps} | "
                             f"{pv[0]:.1f} ± {pv[1]:.1f} | {_fmt(ours)} | "
                             f"{'—' if not ours else f'{delta:+.1f}'} | {_fmt(go)} |")
    lines.append("")
    lines.append("Gaps over 3 points: " + (", ".join(
        f"{n}/{m}/ε={e} ({d:+.1f})" for n, m, e, d in gaps) if gaps else "none") + ".\n")

    lines.append("## LPGNN pipeline: multi-bit features → KProp → SAGE with label RR + Drop "
                 "(accuracy, %)\n")
    lines.append("Random 50/25/25 split per seed; ours = mean ± std over seeds (n = runs). "
                 "Rows: ε_x (multi-bit, per user); columns: ε_y (label RR, per user). "
                 "Graph-only row: random features, same classifier and label RR.\n")
    authors = []  # the same tables for the authors' configuration, after these
    for name in ("cora", "citeseer", "facebook"):
        rows = [r for r in lp if r["dataset"] == name]
        if not rows:
            continue
        kx, ky = LPGNN_STEPS[name]
        title = f"{name} (K_x = {kx}, K_y = {ky})"
        lines.append(f"### {title}\n")
        lines += grid_table(rows, "LPGNN")
        cells = [_fmt(accs(rows, method="GRAPH-ONLY", eps_y=ey)) for ey in LPGNN_EPS_Y]
        lines.append("| graph-only | " + " | ".join(cells) + " |")
        lines.append("")
        agree = [r["label_agreement"] for r in rows if r["method"] == "LPGNN"
                 and r["eps_y"] != INF]
        if agree:
            lines.append(f"Share of training targets where the propagated label equals the "
                         f"node's own noisy label (finite ε_y): {100 * np.mean(agree):.1f} %.\n")
        if any(r["method"] == "LPGNN-AUTHORS" for r in rows):
            authors += [f"#### {title}\n"] + grid_table(rows, "LPGNN-AUTHORS") + [""]
    if authors:
        lines.append("### The same pipeline with the authors' code (the classifier's defaults)\n")
        lines.append("`normalization=\"sym\", propagate_predictions=True` (study method "
                     "`LPGNN-AUTHORS`), everything else as above; the same splits, seeds and "
                     "reports. Rows: ε_x; columns: ε_y.\n")
        lines += authors
    lines.append("### Values the papers report for LPGNN (other settings)\n")
    lines.append("None of the reproduced papers reports the later LPGNN in exactly this setting "
                 "(true graph, raw features, ε_x ∈ {0.1, 1, 2, ∞} × ε_y ∈ {1, 2, 3, ∞}). "
                 "The closest numbers:\n")
    lines.append("| dataset | source | their setting | their value | ours, nearest cell |")
    lines.append("|---|---|---|---|---|")
    for name in ("cora", "citeseer"):
        rows = [r for r in lp if r["dataset"] == name and r["method"] == "LPGNN"]
        o = _fmt(accs(rows, eps_x=1.0, eps_y=INF))
        for bb, (m, sd) in PAPER003_LPGNN[name].items():
            lines.append(f"| {name} | Solitude, Table III | {bb}, ε_x = 1, clean labels, graph "
                         f"perturbed by edge RR at ε_a = 8.0 | {m:.1f} ± {sd:.1f} | "
                         f"ε_x = 1, ε_y = ∞: {o} |")
    for name in ("cora", "citeseer", "facebook"):
        rows = [r for r in lp if r["dataset"] == name and r["method"] == "LPGNN"]
        for (dn, e), vals in PAPER001_LPGNN.items():
            if dn != name:
                continue
            cells = ", ".join(f"ε_y={k}: {v[0]:.1f} ± {v[1]:.1f}" for k, v in vals.items())
            ours = ", ".join(f"ε_y={ey:g}: {_fmt(accs(rows, eps_x=1.0, eps_y=ey))}"
                             for ey in (3.0, 2.0, 1.0))
            lines.append(f"| {name} | RGNN, Table II | SAGE, features grouped to d ≈ 50 and "
                         f"GRR-style ε = {e:g} per feature, KProp steps tuned | {cells} | "
                         f"ε_x = 1: {ours} |")
        if name in PAPER001_NONPRIVATE:
            m, sd = PAPER001_NONPRIVATE[name]
            o = _fmt(accs(rows, eps_x=INF, eps_y=INF))
            lines.append(f"| {name} | RGNN, Table I | SAGE, original features, no privacy | "
                         f"{m:.1f} ± {sd:.1f} | ε_x = ε_y = ∞: {o} |")
    lines.append("")
    lines.append(DISCUSSION)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text("\n".join(lines) + "\n")
    return "\n".join(lines)


DISCUSSION = """## Discussion

**Table 2.** RAW is within 1.5 points of the paper on both datasets and the ordering of the
mechanisms is the paper's: PGC ≥ PM ≥ LM at every ε, and PGC/PM reach RAW at ε = 9 on Cora. The
gaps over 3 points are all on the noisy side, largest for LM and PM on CiteSeer (d = 3703) at
ε = 5 and 9. Likely causes, not isolated for lack of time: (i) the paper tuned learning rate,
weight decay and dropout for RAW on the validation set; we used fixed Kipf & Welling values;
(ii) with very noisy inputs our validation loss reaches its minimum after a handful of epochs
(noisy runs stop at 22–31 epochs on CiteSeer, 28–40 on Cora, against 33–57 for RAW), so the
restored model is underfitted: one diagnostic run (CiteSeer, PGC, ε = 5, seed 0, same reports)
trained for a fixed 200 epochs without early stopping reaches 65.8 % against 63.7 % with it,
and with early stopping but weight decay 5e-3 instead of 5e-4 it reaches 69.0 % (paper 70.7 %):
the gap is mostly regularisation, i.e. the hyperparameters the paper tuned and we did not;
(iii) 10 runs in the paper
against our 5, which cannot explain gaps of 4–13 points given our standard deviations of at
most 2.4. The paper's CiteSeer PGC at ε = 5 (70.7) even exceeds its RAW
(69.6), which suggests tuned or lucky runs there. The graph-only GCN is weak on the Planetoid split
(28 % Cora, 19 % CiteSeer: with 20 labels per class, random features give no useful embedding);
every private variant beats it.

**LPGNN.** The trends are those described in the RGNN and Solitude papers: accuracy rises with ε_x and with ε_y,
label noise costs more than feature noise at these budgets (Cora, ε_x = 1: 64 % at ε_y = 1 against
82 % with clean labels), and KProp makes ε_x = 1–2 almost as good as raw features. Drop relabels
about a quarter of the training targets (the propagated label differs from the node's own noisy
label for 18–29 % of them). The graph-only baseline is strong on the citation graphs (Cora 63–80 %,
CiteSeer 40–56 %): 16 KProp hops turn random features into a structural embedding and Drop
propagates the labels, so most of the accuracy at small ε_x comes from the graph and the labels.
The private features add 0–2 points on Cora and 0–8 on CiteSeer at ε_x ≥ 1, and **hurt** at
ε_x = 0.1: each node then reports one feature rectified to about ±d·(e^ε+1)/(2(e^ε−1)) ≈ 14,000
(Cora), whose variance dominates the unnormalised SAGE input even after 16 averaging hops. On
Facebook (mean degree 15, K_x = 4) the features matter much more (graph-only ≈ 70 %, private
features 79–92 %). Some ε_y = ∞ cells are below ε_y = 3 (Cora at ε_x = 0.1, CiteSeer at ε_x = 1, the
graph-only rows of CiteSeer and Facebook): without label noise, Drop still replaces the labels
of nodes whose neighbours disagree, which removes correct labels, and there is no forward
correction to soften the loss.

**Against the papers' LPGNN numbers.** None is in our setting, so the 3-point rule cannot be
applied literally. The Solitude paper runs LPGNN with clean labels on a graph perturbed by edge RR; our
ε_x = 1, ε_y = ∞ cell on the true graph is above its best (largest ε_a) value on Cora, as
expected when the graph is not perturbed. The RGNN paper runs it on feature-grouped data (d ≈ 50)
with its own ε scale and reports standard deviations up to 15 points; our values at ε_x = 1
are higher. Non-private SAGE (ε_x = ε_y = ∞) is 2.6 points below Table I of the RGNN paper on Cora, 2.4 on
CiteSeer and 1.8 on Facebook: the RGNN paper tuned its hyperparameters, while our ∞/∞ cell
keeps KProp (16 hops on the citation graphs) and Drop on, both of which smooth away part of
the (clean) signal.
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["table2", "lpgnn"])
    ap.add_argument("--datasets", nargs="+")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--n-jobs", type=int, default=1, help="parallel runs")
    ap.add_argument("--log", nargs="+", default=["docs/results/lpgnn_runs.jsonl"],
                    help="runs file (the first is the study's, in the folder given to "
                         "run_study; --report reads all)")
    ap.add_argument("--report")
    args = ap.parse_args(argv)
    status = 0
    if args.part:
        if Path(args.log[0]).name != "lpgnn_runs.jsonl":
            ap.error("the first --log must be a file named lpgnn_runs.jsonl")
        status = run(args)
    if args.report:
        print(write_report(args.log, args.report))
    return status


if __name__ == "__main__":
    sys.exit(main())
