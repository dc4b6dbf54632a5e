"""Reproduce the central claim of DP-GNN (Daigavane et al., arXiv 2021) on facebook and twitch_ENGB.

DP-GNN vs DP-MLP vs non-private MLP vs non-private 1-layer GCN at
eps in {1, 4, 10, 30}, delta = 1/(10 N_train), 50/25/25 split, plus the
batch-size and degree ablations (Tables 2 and 3) on facebook.

Usage::

    export SKLDP_DATASETS_DIR=<datasets folder> OMP_NUM_THREADS=1
    python -m skldp reproduce dpgnn                   # every run (resumes)
    python scripts/reproduce_dpgnn.py --seeds 5        # the same, then the page's tables
    python scripts/reproduce_dpgnn.py --report-only    # the tables of docs/results/dpgnn.md

The sweep is the registered study ``dpgnn`` of :mod:`skldp.experiments`
(``skldp/experiments/studies/_dpgnn.py``): ``run_study`` appends every finished run to
``--runs`` (``docs/results/dpgnn_runs.jsonl``, the study's one runs file) and skips a
run already recorded (the 144 runs of the study's grid are all committed: nothing to
redo). ``--report-only`` rebuilds the Markdown tables between the ``TABLES`` markers of
``docs/results/dpgnn.md`` from the runs file. ``--methods`` and ``--tables`` restrict
what is (re)run, e.g. ``--tables main --methods DP-MLP``.

Runs carry a code ``version``: 1 for runs made before the privacy
audit, 2 for runs made after it (noise added on a grid with the inflated
sensitivity, separate local random streams, ``classes=`` given; DP-MLP
accounted by dp-accounting for sampling without replacement, replace-one).
Only version 2 runs; the tables use version-2 runs where a cell has them and mark
the version-1 cells with †.
"""

import argparse
import dataclasses
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from skldp.datasets import load_dataset  # noqa: E402
from skldp.experiments import RunSpec, load_runs, run_study  # noqa: E402
from skldp.model_selection import random_node_split  # noqa: E402
from studies.dpgnn import (  # noqa: E402
    ABLATION_BATCH,
    ABLATION_DATASET,
    ABLATION_EPS,
    ABLATION_K,
    BATCH_ABLATION_K,
    EPS,
    FEATURE_FREE,
    SETTINGS,
    VERSION,
    dpgnn_study,
)

EPS = [int(e) for e in EPS]  # as the tables show them
ABLATION_EPS = int(ABLATION_EPS)
ROOT = Path(__file__).resolve().parents[1]


def _spec(r):
    """An old record's identity: table, method, dataset, seed, budget, ablation values, version."""
    params = {"table": r["table"], "eps": r.get("eps"), "batch_size": r.get("batch_size"),
              "max_degree": r.get("max_degree"), "version": r.get("version", 1)}
    return RunSpec(r["dataset"], r["method"], "random-50/25/25", int(r["seed"]),
                   tuple(sorted(params.items())))


def runner_record(r):
    """A record of the script before the runner as a record of the ``dpgnn`` runs file.

    The old fields stay at the top level; the study, the unique key (the study's key of
    the same run), the split, the identifying values and the metrics are added
    (``scripts/merge_runs_fragments.py dpgnn`` made the runs file with it).
    """
    spec = _spec(r)
    return {"study": "dpgnn", "key": spec.key, **r, "split": spec.split,
            "params": spec.param_dict,
            "metrics": {"accuracy": r["test"], "val_accuracy": r["val"]}}


def _old_fields(r):
    """The fields the report reads, for records written by the runner."""
    if "test" in r:
        return r
    m = r["metrics"]
    return {**r, **r["params"], "test": m["accuracy"], "val": m["val_accuracy"],
            **{k: m[k] for k in ("epsilon", "delta", "z", "selected_steps", "alpha")
               if k in m}}


def run(args):
    """Run the chosen part of the registered study ``dpgnn``."""
    study = dpgnn_study(seeds=range(args.seeds))
    methods = {}
    for m, meth in study.methods.items():
        if args.methods and m not in args.methods:
            continue
        parts = [p for p in meth.grid if not args.tables or p.params["table"][0] in args.tables]
        if parts:
            methods[m] = dataclasses.replace(meth, grid=parts)
    if not methods:
        raise SystemExit("no run selected")
    res = run_study(dataclasses.replace(study, methods=methods), Path(args.runs).parent,
                    n_jobs=args.n_jobs)
    print(f"dpgnn: {len(res.done)} run(s) done, {len(res.skipped)} already recorded, "
          f"{len(res.failed)} failed")
    return 1 if res.failed or res.missing else 0


def accountant_table():
    """Markdown: DP-MLP noise multiplier z calibrated by each accountant (no training)."""
    from skldp.accounting import calibrate_dpsgd_noise_multiplier, calibrate_noise_multiplier
    lines = ["| dataset | N_train | batch | q = m/N | accountant | "
             + " | ".join(f"z at eps = {e}" for e in EPS) + " |",
             "|---|---|---|---|---|" + "---|" * len(EPS)]
    for name, s in SETTINGS.items():
        y = load_dataset(name).target
        N = int(np.count_nonzero(random_node_split(y, random_state=0)[0]))
        m, T = s["batch_size"], s["n_steps"]
        delta = 1.0 / (10 * N)
        args = (delta, N, m)
        rows = {
            "wor (dp-accounting, Thm. 27)": lambda e, a=args, T=T: calibrate_dpsgd_noise_multiplier(
                e, *a, T, bound="wor"),
            "hypergeometric (Theorem 1, K = 0)": lambda e, a=args, T=T: calibrate_noise_multiplier(
                e, *a, 0, T),
            "combined (per-order minimum)": lambda e, a=args, T=T: calibrate_dpsgd_noise_multiplier(
                e, *a, T)}
        for label, f in rows.items():
            lines.append(f"| {name} | {N} | {m} | {m / N:.3f} | {label} | "
                         + " | ".join(f"{f(e):.3g}" for e in EPS) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--runs", default=str(ROOT / "docs/results/dpgnn_runs.jsonl"),
                    help="the study's runs file (its folder is run_study's results folder)")
    ap.add_argument("--out", default=str(ROOT / "docs/results/dpgnn.md"))
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--accountant-table", action="store_true",
                    help="print the DP-MLP noise multiplier of each accountant and exit")
    ap.add_argument("--methods", nargs="+", default=None, help="only these methods")
    ap.add_argument("--tables", nargs="+", default=None, help="only these tables "
                    "(main, batch, degree)")
    ap.add_argument("--n-jobs", type=int, default=1, help="parallel runs")
    args = ap.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    if args.accountant_table:
        print(accountant_table())
        return 0
    if Path(args.runs).name != "dpgnn_runs.jsonl":
        ap.error("--runs must be a file named dpgnn_runs.jsonl (the study's runs file)")
    status = 0 if args.report_only else run(args)
    write_report(Path(args.runs), Path(args.out))
    return status


def _ms(vals):
    vals = np.asarray(vals) * 100
    if len(vals) == 0:
        return "-"
    return f"{vals.mean():.1f} ± {vals.std(ddof=1) if len(vals) > 1 else 0.0:.1f} (n={len(vals)})"


def _version(r):
    return r.get("version", 1)


def write_report(runs, out):
    recs = [_old_fields(r) for r in load_runs(runs)]
    lines = []

    def select(table, method, name, eps=None, version=None, **kw):
        """Matching runs; version None: the newest version that has any (and that version)."""
        sel = [r for r in recs if r["table"] == table and r["method"] == method
               and r["dataset"] == name and r.get("eps") == eps
               and all(r.get(k) == v for k, v in kw.items())]
        if version is None:
            version = max((_version(r) for r in sel), default=VERSION)
        return [r for r in sel if _version(r) == version], version

    def cell(table, method, name, eps=None, version=None, **kw):
        sel, v = select(table, method, name, eps, version, **kw)
        mark = "" if v == VERSION or not sel else " †"
        return _ms([r["test"] for r in sel]) + mark

    def stat_cell(key, fmt, table, method, name, eps, version=None, agg=max):
        sel, _ = select(table, method, name, eps, version)
        return fmt.format(agg([r[key] for r in sel])) if sel else "-"

    lines.append("### Test accuracy (%), mean ± std over seeds (n = number of seeds)\n")
    lines.append("† = cell made with the code before the privacy audit (version 1: float noise, "
                 "no grid, seeds not split into streams); all other cells: current code.\n")
    for name in SETTINGS:
        s = SETTINGS[name]
        lines.append(f"**{name}** (DP runs: batch {s['batch_size']}, K = {s['max_degree']}, "
                     f"T = {s['n_steps']} steps, hidden {s['hidden_size']}, DP-Adam lr "
                     f"{s['lr']}, C = 1 per layer group)\n")
        lines.append("| method | " + " | ".join(f"eps = {e}" for e in EPS) + " |")
        lines.append("|---|" + "---|" * len(EPS))
        rows = [("DP-GNN (Theorem 1 accountant)", "DP-GNN", None),
                ("DP-GNN (K=3)", "DP-GNN (K=3)", None),
                ("DP-MLP (combined accountant)", "DP-MLP", VERSION),
                ("DP-MLP (Theorem 1 with K = 0, before the audit)", "DP-MLP", 1)]
        for label, m, v in rows:
            lines.append(f"| {label} | "
                         + " | ".join(cell("main", m, name, e, v) for e in EPS) + " |")
        for m in ("MLP", "GCN (1-layer, MLP enc/dec)", "GCNClassifier(n_layers=1)",
                  FEATURE_FREE):
            v = cell("main", m, name)
            lines.append(f"| {m} (non-private) | " + " | ".join([v] * len(EPS)) + " |")
        gaps = []
        for e in EPS:
            a = [r["test"] for r in select("main", "DP-GNN", name, e)[0]]
            g = [r["test"] for r in select("main", "GCN (1-layer, MLP enc/dec)", name)[0]]
            gaps.append(f"{100 * (np.mean(g) - np.mean(a)):.1f}" if a and g else "-")
        lines.append("| gap GCN - DP-GNN | " + " | ".join(gaps) + " |")
        lines.append("| achieved eps, DP-GNN (max over seeds) | "
                     + " | ".join(stat_cell("epsilon", "{:.3g}", "main", "DP-GNN", name, e)
                                  for e in EPS) + " |")
        lines.append("| achieved eps, DP-MLP (max over seeds) | "
                     + " | ".join(stat_cell("epsilon", "{:.3g}", "main", "DP-MLP", name, e,
                                            VERSION) for e in EPS) + " |")
        for label, m, v in (("DP-GNN", "DP-GNN", None),
                            ("DP-MLP, combined", "DP-MLP", VERSION),
                            ("DP-MLP, Theorem 1 (before the audit)", "DP-MLP", 1)):
            lines.append(f"| noise multiplier z, {label} | "
                         + " | ".join(stat_cell("z", "{:.3g}", "main", m, name, e, v)
                                      for e in EPS) + " |")
        lines.append("")

    lines.append(f"### Batch-size ablation (Table 2 analogue), {ABLATION_DATASET}, "
                 f"eps = {ABLATION_EPS}, K = {BATCH_ABLATION_K}\n")
    lines.append("| batch size | DP-GNN test acc (%) |")
    lines.append("|---|---|")
    for m in ABLATION_BATCH:
        acc = cell("batch", "DP-GNN", ABLATION_DATASET, ABLATION_EPS, batch_size=m)
        lines.append(f"| {m} | {acc} |")
    lines.append(f"\n### Degree ablation (Table 3 analogue), {ABLATION_DATASET}, "
                 f"eps = {ABLATION_EPS}, batch {SETTINGS[ABLATION_DATASET]['batch_size']}\n")
    lines.append("| K | GCN (non-private, same K) | DP-GNN | gap |")
    lines.append("|---|---|---|---|")
    for K in ABLATION_K:
        a = [r["test"] for r in select("degree", "DP-GNN", ABLATION_DATASET, ABLATION_EPS,
                                       max_degree=K)[0]]
        g = [r["test"] for r in select("degree", "GCN (1-layer, MLP enc/dec)",
                                       ABLATION_DATASET, max_degree=K)[0]]
        gap = f"{100 * (np.mean(g) - np.mean(a)):.1f}" if a and g else "-"
        gcn = cell("degree", "GCN (1-layer, MLP enc/dec)", ABLATION_DATASET, max_degree=K)
        dp = cell("degree", "DP-GNN", ABLATION_DATASET, ABLATION_EPS, max_degree=K)
        lines.append(f"| {K} | {gcn} | {dp} | {gap} |")
    text = "\n".join(lines) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    marker = "<!-- TABLES -->"
    if out.exists() and marker in out.read_text():
        head, _, tail = out.read_text().partition(marker)
        tail = tail.partition("<!-- /TABLES -->")[2]
        out.write_text(head + marker + "\n" + text + "<!-- /TABLES -->" + tail)
    else:
        out.write_text(f"# DP-GNN results\n\n{marker}\n{text}<!-- /TABLES -->\n")


if __name__ == "__main__":
    sys.exit(main())
