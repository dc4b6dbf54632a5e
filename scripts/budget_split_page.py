"""Write the total-budget page, ``docs/results/budget_split.md``, and its figure.

Reads ``docs/results/budget_split_runs.jsonl`` (written by
``python -m skldp reproduce budget_split``).

Usage::

    python scripts/budget_split_page.py
"""

import json
from pathlib import Path

import numpy as np

from studies.budget_split import (
    BUDGETS,
    DATASETS,
    KINDS,
    RANDOM,
    SCARCE,
    SHARES,
    budget_split_figure,
    budget_split_table,
    cells_table,
    recommender_check,
    split_rows,
)

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
SEEDS_ASKED = 10

QUESTION = """\
**Question.** When the labels are private too, each user has one budget B for
everything it sends. Should part of B go to a report of its features, read by a model
that uses features (LPGNN, or Correct and Smooth around a private-feature pipeline)? Or
should all of B go to the label, read by a feature-free model (label propagation, C&S
around structural features, or LPGNN on structural features)?"""

SETTING = """\
## Setting

* **Budget.** Each user has one total budget B ∈ {1, 2, 4, 8}. A split gives
  ε_x = share · B to the feature report and ε_y = B − ε_x to the label report, with
  share ∈ {1/4, 1/2, 3/4}. Share 0 means all of B on the label and no feature
  collected. Only the training and validation users send a label; the test users send
  their features (ε_x) and nothing else.
* **Ledger.** Every run reads its own users' ledger and stops with an error unless
  every user who sent a label spent exactly B, and no user spent more. The records
  hold the outcome: `eps_spent` (from the runner's `privacy_report`),
  `max_user_epsilon` and `label_sender_epsilon_min`.
* **Models.** With features: multi-bit (ε_x) → LPGNN with `eps_y` (Sajadmanesh &
  Gatica-Perez, CCS 2021), and C&S around multi-bit → PPR → MLP with labels
  randomized at ε_y. All on
  the label: label propagation, C&S(structural features → MLP) and structural
  features → LPGNN, with labels randomized at B. `LabelRandomizedResponse` does the
  randomizing; the models apply the backward noise correction (LPGNN its corrected
  loss). The last model separates what LPGNN's label model adds from what its
  features add.
* **Ceiling.** Raw features → PPR → MLP with clean labels.
* **Regimes.** Random 50/25/25 splits of the labelled nodes
  (`random_node_split`), and 20 training plus 30 validation labels per class, with
  every other node a test node (`per_class_node_split`).
* **Choices.** Every setting (PPR's and label propagation's alpha, LPGNN's feature
  steps) and every early stop is chosen on the validation nodes, using the labels the
  validation users sent (randomized at ε_y). Within each share, the model is the one
  with the best mean validation accuracy over the seeds. All models at one share
  read labels randomized at the same budget, so their validation accuracies compare.
  No choice reads a test label. The share itself is not chosen on validation: it
  decides what the users send, so it is fixed before any data is collected. The
  table compares every share with share 0 on the test nodes, paired by seed.
  "winner" is a split whose paired difference exceeds twice its standard error,
  "labels" when every split is that far below, and "tie" otherwise."""


def _answer(rows):
    done = [r for r in rows if r["winner"] is not None]
    wins = {w: sum(r["winner"] == w for r in done) for w in ("labels", "tie")}
    split_wins = [r for r in done if r["winner"].startswith("share")]
    verdict = ("All of B on the label" if not split_wins else
               "All of B on the label, except where a split wins below")
    out = [f"**Answer.** {verdict}. In {wins['labels']} of {len(done)} cells "
           "(dataset × regime × B), every split is below the label-only model by more than "
           f"two standard errors. In {wins['tie']} cells the best split is within noise of "
           f"it, and in {len(split_wins)} a split wins"]
    if split_wins:
        out[-1] += " (" + ", ".join(f"{r['dataset']}, {r['split']}, B = {r['budget']:g}: "
                                   f"{r['winner']}" for r in split_wins) + ")"
    out[-1] += (". The paired difference in test accuracy of the split that came closest, "
                "minus the label-only model's, in points (its share in brackets):")
    out.append("")
    panels = list(dict.fromkeys((r["dataset"], r["split"]) for r in done))
    for ds, sp in panels:
        parts = []
        for r in (r for r in done if (r["dataset"], r["split"]) == (ds, sp)):
            sh, (cell, (m, se, n)) = max(r["shares"].items(), key=lambda t: t[1][1][0])
            parts.append(f"B = {r['budget']:g}: {100 * m:+.1f} ± {100 * se:.1f} "
                         f"(share {sh:g}; {r['winner']})")
        out.append(f"* {ds}, {sp}: " + "; ".join(parts) + ".")
    chosen = [r["labels"][0] for r in done if r["labels"]]
    by = {k: chosen.count(k) for k in dict.fromkeys(chosen)}
    split_kinds = [c[0] for r in done for c, _ in r["shares"].values() if c]
    with_features = {k: split_kinds.count(k) for k in dict.fromkeys(split_kinds)}
    out += ["", "The label-only model chosen on validation was "
            + ", ".join(f"{KINDS[k][1].split(',')[0]} in {n}" for k, n in by.items())
            + f" of the {len(chosen)} cells. With features, the model chosen was "
            + ", ".join(f"{KINDS[k][1]} in {n}" for k, n in with_features.items())
            + f" of the {sum(with_features.values())} (cell, share) pairs. LPGNN on structural "
            "features, with all of B on the label, "
            "measures what LPGNN's label model (label propagation of the noisy "
            "labels and its corrected loss) gives without any feature report."]
    return "\n".join(out)


def _motivating_pair(records):
    """The motivating comparison: label propagation at eps 2 against multi-bit(1) -> LPGNN(1)."""
    def cell(ds, kind, params):
        v = [100 * r["metrics"]["accuracy"] for r in records if r["dataset"] == ds
             and r["split"] == RANDOM and r["method"] == kind and r["params"] == params]
        return f"{np.mean(v):.1f} ± {np.std(v):.1f}" if v else "—"
    parts = [f"{ds} {cell(ds, 'lp', {'budget': 2.0})} against "
             f"{cell(ds, 'lpgnn', {'budget': 2.0, 'share': 0.5})}"
             for ds in dict.fromkeys(r["dataset"] for r in records)]
    return ("At B = 2 on 50/25/25 splits, label propagation on labels randomized at 2 against "
            "multi-bit(ε = 1) → LPGNN(eps_y = 1), the comparison that motivated this study: "
            + "; ".join(parts) + ".")


def _not_run(records):
    seeds = sorted({r["seed"] for r in records})
    panels = {(r["dataset"], r["split"]) for r in records}
    missing = [f"{ds} ({sp})" for ds in DATASETS for sp in (RANDOM, SCARCE)
               if (ds, sp) not in panels]
    lines = ["## Cells of the planned grid that were not run", ""]
    if missing:
        lines.append(f"* Datasets and regimes: {', '.join(missing)}.")
    if len(seeds) < SEEDS_ASKED:
        lines.append(f"* Seeds: {len(seeds)} of the {SEEDS_ASKED} planned "
                     f"(seeds {seeds[0]}–{seeds[-1]} ran). The standard errors are those "
                     f"of {len(seeds)} paired seeds.")
    lines.append(f"* Every budget ({', '.join(f'{b:g}' for b in BUDGETS)}) and every share "
                 f"({', '.join(f'{s:g}' for s in SHARES)}, and 0) ran in each panel above. "
                 "Only multi-bit feature reports were tried. PrivGE's HDS mechanism, the "
                 "set-valued and the grouped GRR-FS pipelines of the label-scarce study were "
                 "not run.")
    return "\n".join(lines)


def main():
    path = RESULTS / "budget_split_runs.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = split_rows(records)
    fig = budget_split_figure(records, RESULTS / "fig_budget_split.png")
    seeds = sorted({r["seed"] for r in records})
    spent = [r["eps_spent"] for r in records if r["method"] != "raw"]
    budgets = [r["params"]["budget"] for r in records if r["method"] != "raw"]
    least = [r["metrics"]["label_sender_epsilon_min"] for r in records if r["method"] != "raw"]
    ledger_ok = all(abs(s - b) < 1e-9 and abs(m - b) < 1e-9
                    for s, m, b in zip(spent, least, budgets, strict=True))
    panels = list(dict.fromkeys((r["dataset"], r["split"]) for r in rows))
    lines = ["# Total budget: features or label?", "", QUESTION, "", _answer(rows), "",
             f"Test accuracy (%), mean ± std over {len(seeds)} seeds (the split, the "
             "collections and the models); the difference is paired by seed (± its standard "
             "error). Every model is chosen on the validation nodes.", "",
             budget_split_table(records), "", _motivating_pair(records), "",
             f"![Test accuracy against the total budget B]({fig.name})", "",
             "*Test accuracy against the total budget; black squares: all of B on the label; "
             "circles: a share of B on the features; each with its model chosen on validation; "
             "dotted: raw features with clean labels.*", "",
             "Produced by (CPU, one thread per process; "
             "`docs/results/budget_split_runs.jsonl` holds each run's record):", "", "```",
             "export OMP_NUM_THREADS=1 SKLDP_DATASETS_DIR=<datasets folder>",
             f"python -m skldp reproduce budget_split --datasets cora citeseer "
             f"--seeds {len(seeds)}",
             "python scripts/budget_split_page.py     # this page and its figure", "```", "",
             f"Ledger: in {'all' if ledger_ok else 'NOT all'} of the {len(spent)} runs with a "
             "budget, every user who sent a label spent exactly B and no user spent more "
             "(the runner's `eps_spent` and each run's own check).",
             "", "## The recommender", "",
             "`skldp.accounting.recommend_budget_split` recommends a split from public "
             "quantities (the user guide's *Choosing a mechanism* page gives the rule). Its "
             "recommendation for each panel is shown beside the study's verdict:", "",
             recommender_check(records), "", SETTING, ""]
    for ds, sp in panels:
        lines += [f"## All cells: {ds}, {sp}", "", cells_table(records, ds, sp), ""]
    lines += [_not_run(records), ""]
    labels = "; ".join(f"`{k}`: {v[1]}" for k, v in KINDS.items())
    lines += [f"Models (record `method`): {labels}.", ""]
    (RESULTS / "budget_split.md").write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {RESULTS / 'budget_split.md'} and {fig}; "
          f"mean ε spent {np.mean(spent):.3g} over {len(spent)} runs")


if __name__ == "__main__":
    main()
