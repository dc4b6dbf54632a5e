"""Reproduce RGNN's Table II and its ablation (§V-B3) (Bhaila et al., SDM 2024).

Usage::

    export SKLDP_DATASETS_DIR=<folder with the converted datasets> OMP_NUM_THREADS=1
    python scripts/reproduce_rgnn.py run      # appends to docs/results/rgnn_runs.jsonl
    python scripts/reproduce_rgnn.py report   # fills the tables of docs/results/rgnn.md

The sweep is the registered study ``rgnn`` of :mod:`skldp.experiments`
(``skldp/experiments/studies/_rgnn.py``; ``python -m skldp reproduce rgnn`` runs its
Table II methods on the five datasets): ``run`` hands it to ``run_study``, which appends
each finished run to ``docs/results/rgnn_runs.jsonl``, the study's one runs file, and
skips a run already recorded. ``run`` runs the K = 16 and ablation variants on Cora and
CiteSeer only, as the results page does. The records written by this script before the
runner (merged unchanged from four fragments by ``scripts/merge_runs_fragments.py rgnn``;
``runner_record`` gives their keys) keep their old fields (``model``, ``acc``,
``eps_x_sound``, ``eps_x_paper``); the report reads both kinds.

Protocol (the paper's §V-A): random 50/25/25 split per seed; GRR-FS with m = 10
on every feature (binary groups of 25 / 70 / 100 bag-of-words columns for Cora
/ CiteSeer / Facebook; German and Student columns with > 10 distinct values
cut at their quartiles, the others coded by value); labels of the train and
validation nodes randomised with GRR at eps_y; a 2-layer model with 16 hidden
units trained 100 epochs with Adam, keeping the epoch with the best
validation loss (the validation nodes are the held-out third of the fitted
train + validation rows, with their noisy/reconstructed labels). Accuracy on
the 25 % test nodes with their true labels.

Budgets: ``eps`` is GRR-FS's per-feature budget. A user's sound feature budget
is ``m * eps`` (``GRRFSMechanism.epsilon_``: 10 and 1 for eps = 1 and 0.1);
the paper's Theorem 1 value ``ln(1 + (m/d)(e^(m eps) - 1))``
(``paper_epsilon_``, e.g. 8.33 and 0.28 on CiteSeer) is not an LDP bound and
is recorded for comparison only. Each record written before the runner holds both
(``eps_x_sound``, ``eps_x_paper``). Model ``LPGNN`` gives the multi-bit mechanism the paper's
value (what the committed runs used: the paper gives LPGNN "the same eps_x");
model ``LPGNN-sound`` gives it the sound ``m * eps`` that GRR-FS spends.
"""

import argparse
import dataclasses
import os
import sys
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from skldp.exceptions import PrivacyLeakWarning  # noqa: E402
from skldp.experiments import RunSpec, load_runs, run_study  # noqa: E402
from studies.rgnn import (  # noqa: E402
    ABLATION_EPS,
    EPS_X,
    EPS_Y,
    KINDS,
    M,
    rgnn_study,
)

torch.set_num_threads(1)
warnings.filterwarnings("ignore", category=PrivacyLeakWarning)

# The page runs these on Cora and CiteSeer only (the others on every dataset).
CITATION_ONLY = ("RGNN-K16", "RGNN-LLP", "RGNN(noisy y)", "RGNN(noisy x)")

# The paper's Table II (accuracy %, mean and std over 5 runs), columns eps_y = 3, 2, 1, 0.5.
PAPER = {
    ("citeseer", 1.0): {"GraphSAGE": [(24.4, 1.3), (24.3, 2.6), (20.5, 1.2), (19.4, 0.9)],
                        "LPGNN": [(45.6, 12.2), (51.7, 1.8), (46.4, 1.6), (26.9, 5.9)],
                        "RGNN": [(55.7, 1.4), (52.6, 2.7), (47.1, 2.8), (36.2, 4.7)]},
    ("citeseer", 0.1): {"GraphSAGE": [(25.2, 1.3), (24.6, 1.1), (19.4, 1.2), (19.4, 1.2)],
                        "LPGNN": [(53.1, 1.9), (51.3, 3.4), (47.3, 1.8), (31.1, 6.3)],
                        "RGNN": [(51.7, 2.1), (51.3, 2.3), (45.1, 3.2), (34.6, 3.0)]},
    ("cora", 1.0): {"GraphSAGE": [(31.5, 1.9), (28.0, 1.6), (25.9, 2.4), (20.4, 4.4)],
                    "LPGNN": [(55.5, 15.4), (39.5, 14.2), (34.1, 8.4), (37.8, 14.2)],
                    "RGNN": [(77.8, 2.0), (75.5, 1.6), (67.5, 3.8), (41.9, 3.0)]},
    ("cora", 0.1): {"GraphSAGE": [(32.2, 1.9), (28.5, 0.8), (24.8, 2.4), (21.0, 3.3)],
                    "LPGNN": [(68.5, 1.8), (63.8, 5.4), (60.6, 3.5), (44.8, 13.2)],
                    "RGNN": [(77.0, 1.5), (75.8, 2.0), (66.6, 5.0), (40.6, 2.3)]},
    ("facebook", 1.0): {"GraphSAGE": [(46.4, 1.3), (45.2, 1.3), (35.5, 1.1), (29.7, 1.4)],
                        "LPGNN": [(70.4, 2.1), (69.3, 1.7), (67.6, 1.9), (58.7, 10.8)],
                        "RGNN": [(76.3, 0.9), (75.9, 1.1), (72.6, 1.6), (64.5, 1.6)]},
    ("facebook", 0.1): {"GraphSAGE": [(42.0, 1.3), (41.4, 1.5), (33.5, 1.2), (29.6, 1.3)],
                        "LPGNN": [(76.3, 0.9), (75.8, 0.8), (73.1, 0.3), (67.4, 1.3)],
                        "RGNN": [(76.5, 0.8), (76.1, 1.2), (73.2, 1.2), (63.4, 1.1)]},
    ("german_rgnn", 1.0): {"GraphSAGE": [(76.8, 3.1), (73.1, 4.3), (70.9, 2.8), (70.1, 4.2)],
                           "LPGNN": [(69.6, 1.5)] * 4,
                           "RGNN": [(82.2, 3.5), (82.3, 3.5), (82.2, 6.2), (83.1, 7.9)]},
    ("german_rgnn", 0.1): {"GraphSAGE": [(74.1, 5.2), (72.3, 2.9), (70.8, 2.6), (69.3, 6.3)],
                           "LPGNN": [(74.7, 5.0), (73.1, 7.0), (71.3, 6.7), (72.8, 5.0)],
                           "RGNN": [(81.9, 4.4), (81.9, 4.2), (82.9, 6.9), (83.2, 7.1)]},
    ("student_rgnn", 1.0): {"GraphSAGE": [(73.6, 4.5), (68.9, 3.1), (63.8, 7.8), (56.2, 3.8)],
                            "LPGNN": [(90.3, 2.4), (89.9, 2.0), (85.1, 4.1), (76.7, 9.7)],
                            "RGNN": [(88.9, 1.6), (87.8, 1.2), (88.2, 0.9), (82.1, 3.6)]},
    ("student_rgnn", 0.1): {"GraphSAGE": [(73.2, 4.7), (68.8, 4.9), (62.2, 6.7), (56.9, 3.6)],
                            "LPGNN": [(88.1, 1.9), (89.7, 1.9), (87.4, 2.2), (78.1, 9.7)],
                            "RGNN": [(88.5, 1.7), (88.5, 1.1), (87.4, 1.5), (81.7, 4.2)]},
}
# §V-B3 on CiteSeer: RGNN, RGNN w/o LLP, RGNN on perturbed labels, RGNN on perturbed features.
PAPER_ABLATION = {"citeseer": {"RGNN": (40.2, 1.9), "RGNN-LLP": (34.0, 3.2),
                               "RGNN(noisy y)": (28.3, 6.6), "RGNN(noisy x)": (23.6, 1.5)}}


def _spec(dataset, eps, eps_y, model, seed):
    return RunSpec(dataset, model, "random-50/25/25", int(seed),
                   (("eps", eps), ("eps_y", eps_y)))


def runner_record(r):
    """A run as a record of the ``rgnn`` runs file (skldp.experiments format).

    The old fields stay at the top level (the report and the figure read them); the
    study, the unique key, the split, the grid values and the metric are added.
    """
    spec = _spec(r["dataset"], r["eps"], r["eps_y"], r["model"], r["seed"])
    return {"study": "rgnn", "key": spec.key, **r, "method": r["model"], "split": spec.split,
            "params": spec.param_dict, "metrics": {"accuracy": r["acc"]}}

def run(args):
    """Run the registered study ``rgnn`` (skldp.experiments) for the chosen subset."""
    models = args.models or list(KINDS)
    seeds = range(args.first_seed, args.seeds)
    groups = [([m for m in models if m not in CITATION_ONLY], args.datasets),
              ([m for m in models if m in CITATION_ONLY],
               [d for d in args.datasets if d in ("cora", "citeseer")])]
    failed = 0
    for methods, datasets in groups:
        if not methods or not datasets:
            continue
        study = rgnn_study(datasets, seeds, methods)
        if args.eps is not None:  # a subset of the per-feature budgets
            grids = {m: {**meth.grid, "eps": [e for e in meth.grid["eps"]
                                              if e is None or e in args.eps]}
                     for m, meth in study.methods.items()}
            study = dataclasses.replace(study, methods={
                m: dataclasses.replace(meth, grid=grids[m])
                for m, meth in study.methods.items() if grids[m]["eps"]})
        res = run_study(study, args.results_dir, n_jobs=args.n_jobs)
        failed += len(res.failed) + len(res.missing)
        print(f"rgnn ({', '.join(methods)} on {', '.join(datasets)}): {len(res.done)} run(s) "
              f"done, {len(res.skipped)} already recorded, {len(res.failed)} failed")
    return 1 if failed else 0


def _old_fields(r):
    """The fields the report reads, for records written by the runner."""
    if "model" in r:
        return r
    return {**r, "model": r["method"], "acc": r["metrics"]["accuracy"], **r["params"]}


def _fmt(vals):
    if not vals:
        return "not run"
    v = 100 * np.asarray(vals)
    return f"{v.mean():.1f} ± {v.std():.1f} (n={len(v)})"


def report(args):
    rows, seen = [], set()
    for out in args.out.split(","):
        for r in map(_old_fields, load_runs(out)):
            key = _spec(r["dataset"], r["eps"], r["eps_y"], r["model"], r["seed"]).key
            if key not in seen:  # a run in two files: keep the first
                seen.add(key)
                rows.append(r)

    def accs(**kw):
        return [r["acc"] for r in rows if all(r[k] == v for k, v in kw.items())]

    def budget(name, eps, field):
        # "eps_x_total" is the field name of records written before the sound budget
        # was computed; it held the paper's Theorem 1 value.
        vals = [r.get(field, r.get("eps_x_total")) for r in rows
                if r["dataset"] == name and r["eps"] == eps]
        vals = [v for v in vals if v is not None]
        return vals[0] if vals else None

    sound_lpgnn = any(r["model"] == "LPGNN-sound" for r in rows)
    head = ["dataset", "eps (per feature)", "eps_x = m·eps (sound)",
            "paper's eps_x (Thm 1, not LDP)", "eps_y", "paper RGNN", "ours RGNN", "gap",
            "ours RGNN K=16", "paper GraphSAGE", "ours GraphSAGE", "paper LPGNN",
            "ours LPGNN (multi-bit at paper's eps_x)"]
    head += ["ours LPGNN (multi-bit at m·eps)"] if sound_lpgnn else []
    authors_lpgnn = any(r["model"] == "LPGNN-AUTHORS" for r in rows)
    head += ["ours LPGNN, authors' code (multi-bit at m·eps)"] if authors_lpgnn else []
    head += ["graph-only (label prop.)"]
    raw = any(r["model"] == "raw-features" for r in rows)
    head += ["raw features (RGNN at eps = inf)"] if raw else []
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in ["cora", "citeseer", "facebook", "german_rgnn", "student_rgnn"]:
        for eps in EPS_X:
            paper = PAPER[(name, eps)]
            sound = budget(name, eps, "eps_x_sound")
            sound = M * eps if sound is None else sound
            pe = budget(name, eps, "eps_x_paper")
            pe = "?" if pe is None else f"{pe:.3g}"
            for i, eps_y in enumerate(EPS_Y):
                ours = {k: accs(dataset=name, eps=eps, eps_y=eps_y, model=k)
                        for k in ("RGNN", "GraphSAGE", "LPGNN", "LPGNN-sound", "LPGNN-AUTHORS",
                                  "RGNN-K16")}
                g = accs(dataset=name, eps_y=eps_y, model="graph-only")
                clean = accs(dataset=name, eps_y=eps_y, model="raw-features")
                pr, ps = paper["RGNN"][i]
                gap = f"{100 * np.mean(ours['RGNN']) - pr:+.1f}" if ours["RGNN"] else ""
                k16 = _fmt(ours["RGNN-K16"]) if name in ("cora", "citeseer") else "-"
                cells = [name, f"{eps:g}", f"{sound:g}", pe, f"{eps_y:g}", f"{pr} ± {ps}",
                         _fmt(ours["RGNN"]), gap, k16,
                         f"{paper['GraphSAGE'][i][0]} ± {paper['GraphSAGE'][i][1]}",
                         _fmt(ours["GraphSAGE"]),
                         f"{paper['LPGNN'][i][0]} ± {paper['LPGNN'][i][1]}",
                         _fmt(ours["LPGNN"])]
                cells += [_fmt(ours["LPGNN-sound"])] if sound_lpgnn else []
                cells += [_fmt(ours["LPGNN-AUTHORS"])] if authors_lpgnn else []
                cells += [_fmt(g)]
                cells += [_fmt(clean)] if raw else []
                lines.append("| " + " | ".join(cells) + " |")
    abl = [f"| dataset | variant | paper (CiteSeer, budgets lost) | ours (eps={ABLATION_EPS[0]:g}, "
           f"i.e. eps_x = m·eps = {M * ABLATION_EPS[0]:g}; eps_y={ABLATION_EPS[1]:g}) |",
           "|---|---|---|---|"]
    for name in ("citeseer", "cora"):
        for kind in ("RGNN", "RGNN-LLP", "RGNN(noisy y)", "RGNN(noisy x)"):
            a = accs(dataset=name, eps=ABLATION_EPS[0], eps_y=ABLATION_EPS[1], model=kind)
            p = PAPER_ABLATION.get(name, {}).get(kind)
            abl.append(f"| {name} | {kind} | {'%s ± %s' % p if p else '-'} | {_fmt(a)} |")
    table, ablation = "\n".join(lines), "\n".join(abl)
    md = Path(args.md)
    text = md.read_text() if md.exists() else "<!-- table -->\n<!-- /table -->\n" \
        "<!-- ablation -->\n<!-- /ablation -->\n"
    for tag, body in (("table", table), ("ablation", ablation)):
        a, b = f"<!-- {tag} -->", f"<!-- /{tag} -->"
        text = text[:text.index(a) + len(a)] + "\n" + body + "\n" + text[text.index(b):]
    md.write_text(text)
    print(table)
    print(ablation)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["run", "report"])
    ap.add_argument("--out", default="docs/results/rgnn_runs.jsonl",
                    help="report: the runs file(s), comma-separated")
    ap.add_argument("--results-dir", default="docs/results",
                    help="run: the folder of the study's runs file rgnn_runs.jsonl")
    ap.add_argument("--n-jobs", type=int, default=1, help="run: parallel runs")
    ap.add_argument("--datasets", nargs="+",
                    default=["student_rgnn", "german_rgnn", "cora", "citeseer", "facebook"])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--models", nargs="+", default=None, choices=KINDS,
                    help="default: all (K = 16 and the ablations on Cora and CiteSeer only)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--eps", type=float, nargs="+", default=None,
                    help="per-feature eps values to run (default: all of EPS_X)")
    ap.add_argument("--md", default="docs/results/rgnn.md")
    args = ap.parse_args(argv)
    return run(args) if args.cmd == "run" else report(args)


if __name__ == "__main__":
    sys.exit(main())
