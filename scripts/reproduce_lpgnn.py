"""Reproduce Table 2 (node classification) of the PGC/LPGNN paper (Sajadmanesh &
Gatica-Perez, CCS 2021) and the LPGNN label-LDP pipeline.

Usage (1 thread, resumable: a run already in the runs file is skipped); the exact
commands behind ``docs/results/lpgnn.md`` are listed at the top of that file::

    export OMP_NUM_THREADS=1 SKLDP_DATASETS_DIR=<datasets folder>
    python scripts/reproduce_lpgnn.py --part table2
    python scripts/reproduce_lpgnn.py --part lpgnn --datasets cora citeseer
    python scripts/reproduce_lpgnn.py --report lpgnn_report.md

Both parts append to ``docs/results/lpgnn_runs.jsonl`` (``--log``), the study's one
runs file in the :mod:`skldp.experiments` format (each record: the study, its unique
``key``, the run's fields, the metric); the earlier fragments were merged into it
unchanged by ``scripts/merge_runs_fragments.py lpgnn``. The runs are not a registered
``skldp.experiments`` study. ``--report`` writes the generated part of the page (the
page adds the figure, the API links and the feature-free rows of
``scripts/feature_free_rows.py``): write it elsewhere and copy the tables.

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
import time
import warnings
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

torch.set_num_threads(1)

from sklearn.pipeline import Pipeline  # noqa: E402

from skldp.datasets import load_dataset  # noqa: E402
from skldp.experiments import RunsFile, load_runs  # noqa: E402
from skldp.mechanisms import (  # noqa: E402
    LaplaceMechanism,
    MultiBitMechanism,
    OneBitMechanism,
    PiecewiseMechanism,
)
from skldp.model_selection import planetoid_split, random_node_split  # noqa: E402
from skldp.models import GCNClassifier, LPGNNClassifier  # noqa: E402

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
TABLE2_EPS = [1, 5, 9]

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

LPGNN_EPS_X = [0.1, 1.0, 2.0, INF]
LPGNN_EPS_Y = [1.0, 2.0, 3.0, INF]
# KProp steps, fixed per dataset (no tuning on clean labels): Kx large on the
# sparse citation graphs, small on the dense Facebook graph (RGNN's §V-B5 reports
# 4 as optimal there); Ky = 2 everywhere.
LPGNN_STEPS = {"cora": (16, 2), "citeseer": (16, 2), "facebook": (4, 2)}
N_RANDOM_FEATURES = 64


def _log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _random_features(G, seed):
    rng = np.random.default_rng(10_000 + seed)
    return G.with_features(rng.normal(size=(G.n_nodes, N_RANDOM_FEATURES)))


def _load(name):
    b = load_dataset(name)
    return b, b.data, np.asarray(b.target)


def runner_record(r):
    """A run as a record of the ``lpgnn`` runs file (skldp.experiments format).

    The run's fields (with its unique ``key``) stay at the top level, where the report
    and the figure read them; the study and the metric are added.
    """
    return {"study": "lpgnn", **r, "metrics": {"accuracy": r["acc"]}}


# ------------------------------------------------------------------ table 2
def _table2_mechanism(method, eps, d, seed):
    if method == "LM":  # Lap(Delta/eps) on every feature: per-user total d * eps
        return LaplaceMechanism(eps * d, feature_range=(0, 1), random_state=seed)
    if method == "PM":  # PM with eps on every feature (k = d)
        return PiecewiseMechanism(eps * d, k=d, feature_range=(0, 1), random_state=seed)
    if method == "PGC":  # one bit per feature, full eps per feature (as in the paper)
        return OneBitMechanism(eps, feature_range=(0, 1), random_state=seed)
    raise ValueError(method)


def _gcn(seed):
    return GCNClassifier(hidden_size=32, dropout=0.5, lr=0.01, weight_decay=5e-4, epochs=500,
                         patience=20, device="cpu", random_state=seed)


def run_table2(datasets, seeds, log):
    done = RunsFile(log, "lpgnn")  # one writer, a key never recorded twice
    for name in datasets:
        b, G, y = _load(name)
        tr, va, te = planetoid_split(b)
        d = G.shape[1]
        configs = [("RAW", None), ("GRAPH-ONLY", None)]
        configs += [(m, e) for e in TABLE2_EPS for m in ("LM", "PM", "PGC")]
        for method, eps in configs:
            for seed in seeds:
                key = f"table2|{name}|{method}|{eps}|{seed}"
                if key in done:
                    continue
                t0 = time.time()
                if method == "RAW":
                    Gi = G
                elif method == "GRAPH-ONLY":
                    Gi = _random_features(G, seed)
                else:
                    mech = _table2_mechanism(method, eps, d, seed).fit(G)
                    Gi = mech.transform(G)
                clf = _gcn(seed).fit(Gi[tr], y[tr], validation_data=(Gi[va], y[va]))
                acc = float(clf.score(Gi[te], y[te]))
                rec = dict(key=key, part="table2", dataset=name, method=method, eps=eps,
                           seed=seed, acc=acc, epochs=clf.n_iter_, seconds=time.time() - t0)
                done.append(runner_record(rec))
                _log(f"{key} acc={acc:.4f} epochs={clf.n_iter_} ({rec['seconds']:.1f}s)")


# -------------------------------------------------------------------- lpgnn
def _lpgnn_clf(name, eps_y, n_classes, seed, epochs):
    kx, ky = LPGNN_STEPS[name]
    return LPGNNClassifier(eps_y=eps_y, classes=np.arange(n_classes), x_steps=kx, y_steps=ky,
                           backbone="sage", hidden_size=16, activation="selu", dropout=0.5,
                           lr=0.01, weight_decay=1e-4, epochs=epochs, patience=20,
                           device="cpu", random_state=seed)


def run_lpgnn(datasets, seeds, log, eps_x_grid, eps_y_grid, epochs):
    done = RunsFile(log, "lpgnn")  # one writer, a key never recorded twice
    for name in datasets:
        b, G, y = _load(name)
        n_classes = int(y.max()) + 1
        for seed in seeds:
            tr, va, te = random_node_split(y, 0.5, 0.25, 0.25, random_state=seed)
            configs = [("GRAPH-ONLY", None, ey) for ey in eps_y_grid]
            configs += [("LPGNN", ex, ey) for ex in eps_x_grid for ey in eps_y_grid]
            for method, ex, ey in configs:
                key = f"lpgnn|{name}|{method}|{ex}|{ey}|{seed}"
                if key in done:
                    continue
                t0 = time.time()
                clf = _lpgnn_clf(name, ey, n_classes, seed, epochs)
                if method == "GRAPH-ONLY":
                    Gi = _random_features(G, seed)
                    model = clf
                elif ex == INF:
                    Gi, model = G, clf
                else:
                    Gi = G
                    model = Pipeline([("mb", MultiBitMechanism(ex, feature_range=(0, 1),
                                                               random_state=seed)),
                                      ("clf", clf)])
                fit_params = ({"clf__validation_data": (Gi[va], y[va])}
                              if isinstance(model, Pipeline)
                              else {"validation_data": (Gi[va], y[va])})
                model.fit(Gi[tr], y[tr], **fit_params)
                acc = float(model.score(Gi[te], y[te]))
                last = model[-1] if isinstance(model, Pipeline) else model
                rec = dict(key=key, part="lpgnn", dataset=name, method=method, eps_x=ex,
                           eps_y=ey, seed=seed, acc=acc, epochs=last.n_iter_,
                           label_agreement=last.label_agreement_,
                           seconds=time.time() - t0)
                done.append(runner_record(rec))
                _log(f"{key} acc={acc:.4f} epochs={last.n_iter_} ({rec['seconds']:.1f}s)")
            G._store._memo.clear()  # drop this seed's cached reports (memory)


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

Produced by `scripts/reproduce_lpgnn.py` (CPU, 1 thread per process, torch {torch}):

```
export OMP_NUM_THREADS=1 SKLDP_DATASETS_DIR=<datasets folder>
python scripts/reproduce_lpgnn.py --part table2 --datasets cora citeseer --seeds 5
python scripts/reproduce_lpgnn.py --part lpgnn --datasets cora citeseer --seeds 5
python scripts/reproduce_lpgnn.py --part lpgnn --datasets facebook --seeds 5 --epochs 100
python scripts/reproduce_lpgnn.py --report lpgnn_report.md   # the tables of this page
```

The mean absolute error of the graph-convolution estimate (the PGC/LPGNN paper Figures 2 and 3) is in
[lpgnn_mae.md](lpgnn_mae.md).

**Setup, Table 2.** Two-layer `GCNClassifier` (hidden 32, ReLU, dropout 0.5, Adam lr 0.01,
weight decay 5e-4, at most 500 epochs, early stopping on the loss of the 500 Planetoid
validation nodes with patience 20, `validation_data=`), Planetoid public split (140/500/1000
on Cora, 120/500/1000 on CiteSeer). Features are binary, i.e. already in [0, 1]. As in the paper
each mechanism spends ε on *every* feature: LM = `LaplaceMechanism(eps * d)`, PM =
`PiecewiseMechanism(eps * d, k=d)`, PGC = `OneBitMechanism(eps)`; the honest per-user total,
reported by `epsilon_`, is therefore d·ε (1433·ε on Cora). The GCN's first layer applied to the
reports is the PGC/LPGNN paper's estimator. Hyperparameters were fixed (Kipf & Welling's), not tuned on the
RAW validation set as in the paper.

**Setup, LPGNN.** `Pipeline([MultiBitMechanism(eps_x, feature_range=(0, 1)),
LPGNNClassifier(eps_y, classes=range(c), x_steps=Kx, y_steps=Ky)])`: multi-bit reports (m =
max(1, ⌊ε_x/2.18⌋) sampled features), KProp of the features (mean over neighbours, no self
loop, Kx steps, applied exactly after the first linear map), SAGE (2 layers, hidden 16, SELU,
dropout 0.5, Adam lr 0.01, weight decay 1e-4), label RR at ε_y, "Drop": KProp over the noisy
one-hot labels of the fit nodes (Ky steps) and training on the propagated label, forward
correction with the RR transition matrix, early stopping (patience 20, at most 200 epochs; 100
on Facebook) on the error against the denoised **noisy** validation labels. Random 50/25/25
split per seed; validation nodes passed as `validation_data` (their labels are randomized
too). Kx, Ky fixed per dataset, not tuned (no clean validation label may be used to tune
them). ε_y = ∞ means clean labels (no RR, no correction, Drop still on); ε_x = ∞ means the raw
features.

**Graph-only baseline.** The same model on 64 i.i.d. N(0, 1) features per node (they carry no
information; the model can only use the graph and, for LPGNN, the propagated labels), no
feature privacy.

**Seeds.** 5 seeds (0–4) everywhere. On Facebook training is capped at 100 epochs (200 on
Cora and CiteSeer) to fit the CPU budget; `n` in each cell is the number of finished runs. The
raw per-run records are committed as `lpgnn_runs.jsonl` beside this page (one runs file: the
three fragments the runs were first written to, merged unchanged).
"""


def write_report(logs, out):
    recs = [r for path in logs for r in load_runs(path)]
    t2 = [r for r in recs if r["part"] == "table2"]
    lp = [r for r in recs if r["part"] == "lpgnn"]
    lines = [HEADER.replace("{torch}", torch.__version__)]

    def accs(rows, **kw):
        return [r["acc"] for r in rows if all(r.get(k) == v for k, v in kw.items())]

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
    for name in ("cora", "citeseer", "facebook"):
        rows = [r for r in lp if r["dataset"] == name]
        if not rows:
            continue
        kx, ky = LPGNN_STEPS[name]
        lines.append(f"### {name} (K_x = {kx}, K_y = {ky})\n")
        lines.append("| ε_x \\ ε_y | " + " | ".join(_eps_str(e) for e in LPGNN_EPS_Y) + " |")
        lines.append("|---|" + "---|" * len(LPGNN_EPS_Y))
        for ex in LPGNN_EPS_X:
            cells = [_fmt(accs(rows, method="LPGNN", eps_x=ex, eps_y=ey)) for ey in LPGNN_EPS_Y]
            lines.append(f"| {_eps_str(ex)} | " + " | ".join(cells) + " |")
        cells = [_fmt(accs(rows, method="GRAPH-ONLY", eps_y=ey)) for ey in LPGNN_EPS_Y]
        lines.append("| graph-only | " + " | ".join(cells) + " |")
        lines.append("")
        agree = [r["label_agreement"] for r in rows if r["method"] == "LPGNN"
                 and r["eps_y"] != INF]
        if agree:
            lines.append(f"Share of training targets where the propagated label equals the "
                         f"node's own noisy label (finite ε_y): {100 * np.mean(agree):.1f} %.\n")
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
    ap.add_argument("--eps-x", type=float, nargs="+", default=LPGNN_EPS_X)
    ap.add_argument("--eps-y", type=float, nargs="+", default=LPGNN_EPS_Y)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--log", nargs="+", default=["docs/results/lpgnn_runs.jsonl"],
                    help="runs file (the first is appended to; --report reads all)")
    ap.add_argument("--report")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", category=UserWarning, message=".*clipped.*")
    seeds = list(range(args.seeds))
    if args.part == "table2":
        run_table2(args.datasets or ["cora", "citeseer"], seeds, args.log[0])
    elif args.part == "lpgnn":
        run_lpgnn(args.datasets or ["cora", "citeseer", "facebook"], seeds, args.log[0],
                  args.eps_x, args.eps_y, args.epochs)
    if args.report:
        print(write_report(args.log, args.report))


if __name__ == "__main__":
    sys.exit(main())
