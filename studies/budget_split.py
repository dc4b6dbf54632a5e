"""The total-budget study: with labels private too, how should a user's budget be split?

Each user has one total budget ``B`` in {1, 2, 4, 8} for everything it sends.
A split gives ``eps_x = share * B`` to its features and ``eps_y = B - eps_x``
to its label (users with a label: the training and validation nodes; the other
users send their features only). Shares 1/4, 1/2 and 3/4 go through LPGNN's
pipeline (multi-bit -> LPGNN with randomized labels, Sajadmanesh & Gatica-Perez,
CCS 2021) and through Correct and Smooth around multi-bit -> PPR -> MLP on
randomized labels; share 0 (all of ``B`` on the label, features unused) through
label propagation and C&S(structural features -> MLP) on labels randomized at
``B``, both with the backward noise correction, and through LPGNN's own label
model (its label propagation and corrected loss) on structural features instead
of private ones, which tells what LPGNN's gain owes to its label model rather
than to the features. The raw features with clean labels are the ceiling. Both
regimes: random 50/25/25 splits and 20 training plus 30 validation labels per
class. Every setting and every early stop is chosen on the validation nodes,
against the labels the validation users sent, except the early stop of C&S's
base head (fitted on the training nodes alone, see ``private_features``).

Each run checks the ledger of its users: every user who sent a label spent
``B`` in all, and no user spent more.
"""

import functools
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator

from skldp.experiments import Grid, Method, Study, default_split
from skldp.experiments._summary import save_figure

from .common import run_on_split
from .label_scarce import NORMALIZATION, paired_difference, scarce_masks
from .pages import command_block, page_then_figure
from .private_features import candidates, fit_select, private_input

__all__ = ["budget_split_study", "BudgetRun", "BUDGETS", "SHARES", "KINDS", "DATASETS",
           "RANDOM", "SCARCE", "split_rows", "budget_split_table", "budget_split_figure",
           "check_ledger", "cells_table", "public_quantities", "DATASET_SHAPES",
           "recommender_check", "write_page"]

BUDGETS = [1.0, 2.0, 4.0, 8.0]
SHARES = [0.25, 0.5, 0.75]         # the features' share of B (share 0: the feature-free kinds)
DATASETS = ("cora", "citeseer", "facebook")
RANDOM = "50/25/25"
SCARCE = "20/30 per class"

# kind -> (role, label); the order is the tables' order
KINDS = {
    "raw": ("raw-features", "raw features → PPR → MLP, clean labels (ceiling)"),
    "lp": ("feature-free", "label propagation, labels at ε = B"),
    "structural-cs": ("feature-free", "C&S(structural → MLP), labels at ε = B"),
    "lpgnn-labels": ("feature-free", "structural → LPGNN, labels at ε = B"),
    "lpgnn": ("private", "multi-bit → LPGNN"),
    "multibit-cs": ("private", "C&S(multi-bit → PPR → MLP)"),
}


def check_ledger(G, budget, rtol=1e-9):
    """Check that every user who sent a label spent ``budget`` in all, and none more.

    Parameters
    ----------
    G : GraphData
        The run's users (their ledger).
    budget : float
        The total budget per user.
    rtol : float, default=1e-9
        Relative tolerance of the comparison.

    Returns
    -------
    spent : dict
        ``max_user_epsilon`` (the most one user spent), ``label_senders``
        and ``label_sender_epsilon_min`` (the least a label sender spent).

    Raises
    ------
    AssertionError
        When a user spent more than ``budget`` or a label sender less.
    """
    users, total = G.ledger.per_user()
    senders, _ = G.ledger.per_user("labels")
    tol = rtol * budget
    most = float(total.max(initial=0.0))
    if most > budget + tol:   # raised, not asserted: python -O must not skip the check
        raise AssertionError(f"a user spent {most} > B = {budget}")
    if len(senders) == 0:
        raise AssertionError("no user sent a label")
    least = float(total[np.isin(users, senders)].min())
    if abs(least - budget) > tol or abs(most - budget) > tol:
        raise AssertionError(f"the label senders spent {least} to {most}, not B = {budget}")
    return {"max_user_epsilon": most, "label_senders": float(len(senders)),
            "label_sender_epsilon_min": least}


class BudgetRun(BaseEstimator):
    """One run of the total-budget study (``run(G, y, masks)`` gives the test accuracy).

    Parameters
    ----------
    kind : str, default="lpgnn"
        A key of ``KINDS``.
    budget : float or None, default=None
        Total budget per user ``B`` (all kinds but ``"raw"``).
    share : float, default=0.0
        The features' share of ``B`` (0 for the feature-free kinds).
    dataset : str, default="cora"
        The dataset (German credit: its columns with public bounds, standardised).
    random_state : int, default=0
        Seed of the collections and the models.
    """

    def __init__(self, kind="lpgnn", budget=None, share=0.0, dataset="cora", random_state=0):
        self.kind = kind
        self.budget = budget
        self.share = share
        self.dataset = dataset
        self.random_state = random_state

    def run(self, G, y, masks):
        """Fit every candidate, choose on the validation nodes, score the test nodes.

        ``G`` is the whole graph, ``masks`` its train, validation and test masks; the
        metrics are those of the test nodes unless named otherwise.
        """
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {list(KINDS)}, got {self.kind!r}.")
        role = KINDS[self.kind][0]
        y = np.asarray(y)
        if role == "raw-features":
            cands = candidates("raw", seed=self.random_state, val=masks[1],
                               normalization=NORMALIZATION.get(self.dataset, "l2"))
            metrics, self.model_ = fit_select(cands, G, y, masks)
            return metrics
        B, share = float(self.budget), float(self.share)
        if role == "feature-free" and share != 0:
            raise ValueError(f"kind {self.kind!r} uses no feature: share must be 0.")
        if role == "private" and not 0 < share < 1:
            raise ValueError(f"share must be in (0, 1) for kind {self.kind!r}, got {share}.")
        eps_x = share * B
        eps_y = B - eps_x
        classes = np.unique(y[y >= 0])   # the public label domain
        Gin = G
        if self.kind == "lpgnn-labels":
            cands = _lpgnn_on_structure(eps_y, classes, self.random_state, masks[1])
        else:
            Gin, fr = private_input(G, self.dataset) if role == "private" else (G, (0, 1))
            cands = candidates(self.kind, eps=eps_x if role == "private" else None,
                               eps_y=eps_y, classes=classes, seed=self.random_state,
                               val=masks[1], feature_range=fr,
                               normalization=NORMALIZATION.get(self.dataset, "l2"),
                               lp_sources="fit")   # the labels LPGNN propagates
        metrics, self.model_ = fit_select(cands, Gin, y, masks)
        # the test users answer the feature collection when they are scored
        metrics.update(check_ledger(Gin, B))
        return metrics


def _lpgnn_on_structure(eps_y, classes, seed, val):
    """LPGNN on public structural features: its label model with all of B on the labels."""
    from sklearn.pipeline import Pipeline

    from skldp.baselines import StructuralFeatures
    from skldp.models import LPGNNClassifier

    from .private_features import LPGNN_X_STEPS
    return [({"x_steps": k}, Pipeline([
        ("structure", StructuralFeatures(random_state=seed)),
        ("clf", LPGNNClassifier(eps_y=eps_y, classes=classes, x_steps=k, validation=val,
                                random_state=seed))]), "fit") for k in LPGNN_X_STEPS]


def _make(kind, ctx):
    return BudgetRun(kind=kind, dataset=ctx.dataset, random_state=ctx.seed)


def _masks_random(y, seed):
    return default_split(y, seed)


def budget_split_study(datasets=DATASETS, seeds=range(10), budgets=BUDGETS, shares=SHARES,
                       regimes=(RANDOM, SCARCE), kinds=None):
    """The total-budget sweep.

    Parameters
    ----------
    datasets : sequence of str, default=DATASETS
        Datasets (Facebook needs ``SKLDP_DATASETS_DIR``).
    seeds : sequence of int, default=range(10)
        Seeds of the split, the collections and the models.
    budgets : sequence of float, default=BUDGETS
        Total budgets per user.
    shares : sequence of float, default=SHARES
        The features' shares of the budget (private kinds).
    regimes : sequence of str, default=(RANDOM, SCARCE)
        Splits: ``RANDOM`` (50/25/25) and ``SCARCE`` (20/30 per class).
    kinds : sequence of str or None, default=None
        Restrict to these kinds of ``KINDS`` (the same run keys).

    Returns
    -------
    study : Study
    """
    kinds = list(KINDS) if kinds is None else list(kinds)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown kinds {unknown}; one of {list(KINDS)}.")
    splits = {RANDOM: _masks_random, SCARCE: scarce_masks}
    bad = [r for r in regimes if r not in splits]
    if bad:
        raise ValueError(f"unknown regimes {bad}; one of {list(splits)}.")
    if any(not 0 < float(s) < 1 for s in shares):
        raise ValueError(f"shares must lie in (0, 1), got {list(shares)}.")
    if any(not float(b) > 0 for b in budgets):
        raise ValueError(f"budgets must be positive, got {list(budgets)}.")
    methods = {}
    for kind in kinds:
        role = KINDS[kind][0]
        params = ({} if role == "raw-features" else
                  {"budget": list(budgets)} if role == "feature-free" else
                  {"budget": list(budgets), "share": list(shares)})
        methods[kind] = Method(functools.partial(_make, kind), [Grid(params)], role=role,
                               evaluate=run_on_split, label=KINDS[kind][1])
    return Study(
        name="budget_split", datasets=list(datasets), seeds=seeds, methods=methods,
        splits={r: splits[r] for r in regimes},
        title="Total budget — how should a user split one budget between features and label?",
        description="Test accuracy when each user has one total budget B for its features and "
                    "its label; share = the features' part of B; every choice on the "
                    "validation nodes (their randomized labels).",
        quick={"datasets": ["cora"], "seeds": [0],
               "grid": {k: ({"budget": [2.0], "share": [0.5]}
                            if KINDS[k][0] == "private" else {"budget": [2.0]})
                        for k in methods if KINDS[k][0] != "raw-features"}},
        report=budget_split_table,
    )


def _cells(records, metric="accuracy"):
    """``{(dataset, split, kind, budget, share): {seed: metric}}``."""
    out = {}
    for r in records:
        if metric not in r.get("metrics", {}):
            continue
        p = r.get("params", {})
        key = (r["dataset"], r["split"], r["method"], p.get("budget"), p.get("share", 0.0))
        out.setdefault(key, {})[r["seed"]] = r["metrics"][metric]
    return out


def _chosen(cells, ds, sp, b, share, kinds):
    """The cell of ``kinds`` at this share with the best mean validation accuracy.

    Within one share every model reads labels randomized at the same budget,
    so their validation accuracies compare; no choice reads a test label.
    Returns ``(kind, {seed: test accuracy})`` or ``None``.
    """
    got = [(np.mean(list(val.values())), key[2], test) for key, (test, val) in cells.items()
           if key[:2] == (ds, sp) and key[3] == b and key[4] == share and key[2] in kinds]
    return max(got, key=lambda g: g[0])[1:] if got else None


def split_rows(records):
    """Per dataset, regime and budget: each split against all of it on the label.

    For every share of ``B`` on the features (0: all on the label), the model
    is the one with the best mean validation accuracy over the seeds (the
    validation users' randomized labels; the same label budget within a
    share). Each split's test accuracy is compared with all-on-the-label's,
    paired by seed.

    Parameters
    ----------
    records : list of dict
        The study's records.

    Returns
    -------
    rows : list of dict
        ``dataset``, ``split``, ``budget``; ``labels``: the chosen share-0
        cell ``(kind, {seed: accuracy})``; ``shares``: ``{share: (cell,
        (mean, se, n))}``, the paired difference split minus label only;
        ``raw``: the ceiling's cell; ``winner``: ``"labels"`` (every split
        below by more than 2 standard errors), ``"share s"`` (the split with
        the largest difference, above by more than 2 standard errors) or
        ``"tie"``.
    """
    test, val = _cells(records), _cells(records, "val_accuracy")
    cells = {k: (v, val.get(k, {})) for k, v in test.items()}
    private = [k for k in KINDS if KINDS[k][0] == "private"]
    free = [k for k in KINDS if KINDS[k][0] == "feature-free"]
    rows = []
    keys = sorted({(d, s, b) for (d, s, k, b, _) in cells if b is not None})
    for ds, sp, b in keys:
        labels = _chosen(cells, ds, sp, b, 0.0, free)
        raw = [("raw", v) for (d, s, k, _, _), v in test.items()
               if d == ds and s == sp and k == "raw"]
        row = {"dataset": ds, "split": sp, "budget": b, "labels": labels, "shares": {},
               "raw": raw[0] if raw else None, "winner": None}
        for share in sorted({k[4] for k in cells if k[:2] == (ds, sp) and k[3] == b
                             and k[4] > 0}):
            cell = _chosen(cells, ds, sp, b, share, private)
            diff = paired_difference(cell[1], labels[1]) if cell and labels else None
            row["shares"][share] = (cell, diff)
        diffs = {sh: d for sh, (_, d) in row["shares"].items() if d is not None and d[2] > 1}
        if diffs:
            top = max(diffs, key=lambda sh: diffs[sh][0])
            m, se, _ = diffs[top]
            if m > 2 * se:
                row["winner"] = f"share {top:g}"
            elif all(d[0] < -2 * d[1] for d in diffs.values()):
                row["winner"] = "labels"
            else:
                row["winner"] = "tie"
        rows.append(row)
    return rows


def _fmt(cell, share=None):
    if cell is None:
        return "—"
    kind, v = cell
    vals = 100 * np.array(list(v.values()))
    label = KINDS[kind][1].split(",")[0].replace(" (ceiling)", "")
    return f"{label}: {vals.mean():.1f} ± {vals.std():.1f}"


def _fmt_diff(diff):
    if diff is None:
        return "—"
    m, se, n = diff
    return f"{100 * m:+.1f} ± {100 * se:.1f} (n = {n})"


def budget_split_table(records):
    """The verdict table: each split of ``B`` against all of it on the label.
    """
    rows = split_rows(records)
    shares = sorted({sh for r in rows for sh in r["shares"]})
    # one cell per share (none in a sweep without private runs, e.g. --quick --max-runs 1)
    header = ["dataset", "regime", "B", "all on the label",
              *(f"share {sh:g} on features: model; minus label only" for sh in shares),
              "winner", "raw features, clean labels"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        parts = []
        for sh in shares:
            cell, diff = r["shares"].get(sh, (None, None))
            parts.append("—" if cell is None else f"{_fmt(cell)}; {_fmt_diff(diff)}")
        cells = [r["dataset"], r["split"], f"{r['budget']:g}", _fmt(r["labels"]), *parts,
                 r["winner"] or "—", _fmt(r["raw"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def budget_split_figure(records, path, then=None):
    """Accuracy against the total budget, one panel per dataset and regime.

    Curves: all of ``B`` on the label, and each share of ``B`` on the
    features, each with its model chosen on validation (as in
    :func:`split_rows`); the raw features with clean labels as a line.

    Parameters
    ----------
    records : list of dict
        The study's records.
    path : str or path-like
        Where the PNG is written.
    then : callable or None, default=None
        Called once the new figure is whole, before it replaces the old one
        (a failure in it leaves the old figure); not called without matplotlib.

    Returns
    -------
    path : pathlib.Path or None
        ``None`` when matplotlib is not installed. The figure is replaced whole.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    rows = split_rows(records)
    panels = sorted(dict.fromkeys((r["dataset"], r["split"]) for r in rows),
                    key=lambda p: (p[0], p[1] != RANDOM))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.4), squeeze=False)
    for ax, (ds, sp) in zip(axes[0], panels, strict=True):
        mine = [r for r in rows if (r["dataset"], r["split"]) == (ds, sp)]
        curves = {0.0: [(r["budget"], r["labels"]) for r in mine]}
        for sh in sorted({sh for r in mine for sh in r["shares"]}):
            curves[sh] = [(r["budget"], r["shares"][sh][0]) for r in mine if sh in r["shares"]]
        for sh, pts in curves.items():
            pts = [(bud, 100 * np.array(list(c[1].values()))) for bud, c in pts if c]
            label = "all on the label" if sh == 0 else f"share {sh:g} on features"
            ax.errorbar([p[0] for p in pts], [p[1].mean() for p in pts],
                        yerr=[p[1].std() for p in pts], marker="s" if sh == 0 else "o",
                        capsize=3, label=label, lw=2.2 if sh == 0 else 1.2,
                        color="k" if sh == 0 else None)
        if mine[0]["raw"]:
            ax.axhline(100 * np.mean(list(mine[0]["raw"][1].values())), color="gray", ls=":",
                       label="raw features, clean labels")
        ax.set_xscale("log", base=2)
        budgets = sorted({r["budget"] for r in mine})
        ax.set_xticks(budgets, [f"{b:g}" for b in budgets])
        ax.set_title(f"{ds}, {sp}", fontsize=9)
        ax.set_xlabel("total budget B per user")
        ax.set_ylabel("test accuracy (%)")
        ax.legend(fontsize=6)
    fig.tight_layout()
    return save_figure(fig, path, then, bbox_inches=None)


def cells_table(records, dataset, split):
    """Mean ± std of every cell of one dataset and regime: a row per model and share, a
    column per total budget.

    Parameters
    ----------
    records : list of dict
        The study's records.
    dataset, split : str
        The panel.

    Returns
    -------
    text : str
        Markdown.
    """
    cells = {k: v for k, v in _cells(records).items() if k[0] == dataset and k[1] == split}
    budgets = sorted({k[3] for k in cells if k[3] is not None})
    lines = ["| model | share of B on features | " + " | ".join(f"B = {b:g}" for b in budgets)
             + " | seeds |", "|---|---|" + "---|" * len(budgets) + "---|"]
    order = list(KINDS)
    for kind, share in sorted({(k[2], k[4]) for k in cells},
                              key=lambda t: (order.index(t[0]), t[1])):
        row, seeds = [], 0
        for b in budgets if kind != "raw" else [None]:
            v = cells.get((dataset, split, kind, b, share))
            if v is None:
                row.append("—")
                continue
            vals = 100 * np.array(list(v.values()))
            seeds = max(seeds, len(vals))
            row.append(f"{vals.mean():.1f} ± {vals.std():.1f}")
        if kind == "raw":    # no budget: the same value under every B
            row = row * len(budgets)
        label = KINDS[kind][1].split(",")[0].replace(" (ceiling)", "")
        what = "— (clean labels, raw features)" if kind == "raw" else f"{share:g}"
        lines.append(f"| {label} | {what} | " + " | ".join(row) + f" | {seeds} |")
    return "\n".join(lines)


# What the recommender reads of each dataset, public and fixed: nodes, features, classes,
# labelled nodes, stored adjacency entries (both directions). Written here so that a page
# is rewritten without loading (or downloading) a graph; a test checks them.
DATASET_SHAPES = {
    "cora": (2708, 1433, 7, 2708, 10556),
    "citeseer": (3327, 3703, 6, 3312, 9104),
    "facebook": (22470, 4714, 4, 22470, 341646),
}


def public_quantities(dataset, split):
    """The public quantities of :func:`~skldp.accounting.recommend_budget_split` for a panel.

    Parameters
    ----------
    dataset : str
        A dataset of ``DATASET_SHAPES``.
    split : str
        ``RANDOM`` (3/4 of the labelled nodes send a label: training and
        validation) or ``SCARCE`` (50 per class).

    Returns
    -------
    quantities : dict
        ``n_nodes``, ``n_features``, ``n_classes``, ``labelled_fraction``,
        ``mean_degree``.
    """
    if dataset not in DATASET_SHAPES:
        raise ValueError(f"no recorded shape for dataset {dataset!r}; "
                         f"one of {sorted(DATASET_SHAPES)}.")
    n, d, n_classes, n_labelled, nnz = DATASET_SHAPES[dataset]
    senders = 0.75 * n_labelled if split == RANDOM else 50 * n_classes
    return {"n_nodes": n, "n_features": d, "n_classes": n_classes,
            "labelled_fraction": float(senders / n), "mean_degree": float(nnz / n)}


def recommender_check(records):
    """The recommended split of each panel and budget beside the study's verdict.

    All on the label agrees unless a split beats it by more than two standard
    errors of the paired difference; a split agrees unless all on the label
    beats every split so.
    """
    from skldp.accounting import recommend_budget_split
    lines = ["| dataset | regime | B | recommended ε features / label | study's winner | "
             "agrees |", "|---|---|---|---|---|---|"]
    quantities, agree, total = {}, 0, 0
    for r in split_rows(records):
        if r["winner"] is None:
            continue
        key = (r["dataset"], r["split"])
        if key not in quantities:
            quantities[key] = public_quantities(*key)
        rec = recommend_budget_split(r["budget"], **quantities[key])
        # all on the label agrees unless a split wins; a split agrees unless the label wins
        ok = r["winner"] == "tie" or (r["winner"] == "labels") == (rec.eps_features == 0)
        agree += ok
        total += 1
        lines.append(f"| {r['dataset']} | {r['split']} | {r['budget']:g} | "
                     f"{rec.eps_features:.2f} / {rec.eps_labels:.2f} | {r['winner']} | "
                     f"{'yes' if ok else 'no'} |")
    lines += ["", f"The recommendation agrees with the study in {agree} of {total} cells."]
    return "\n".join(lines)


def _answer(rows):
    """The verdict in words, from :func:`split_rows`."""
    done = [r for r in rows if r["winner"] is not None]
    wins = {w: sum(r["winner"] == w for r in done) for w in ("labels", "tie")}
    split_wins = [r for r in done if r["winner"].startswith("share")]
    verdict = ("All of B on the label" if not split_wins else
               "All of B on the label, except where a split wins below")
    out = [f"**Answer.** {verdict}. In {wins['labels']} of {len(done)} cells "
           "(dataset × regime × B), every split is below the label-only model by more than "
           f"two standard errors. In {wins['tie']} cells the best split is within noise of "
           f"it, and in {len(split_wins) or 'none'} a split wins"]
    if split_wins:
        out[-1] += " (" + ", ".join(f"{r['dataset']}, {r['split']}, B = {r['budget']:g}: "
                                   f"{r['winner']}" for r in split_wins) + ")"
    out[-1] += (". The paired difference in test accuracy of the best split, minus the "
                "label-only model's, in points (its share and the cell's verdict in brackets):")
    out.append("")
    for ds, sp in dict.fromkeys((r["dataset"], r["split"]) for r in done):
        parts = []
        for r in (r for r in done if (r["dataset"], r["split"]) == (ds, sp)):
            sh, (cell, (m, se, n)) = max(r["shares"].items(), key=lambda t: t[1][1][0])
            verdict = "the split wins" if r["winner"].startswith("share") else r["winner"]
            parts.append(f"B = {r['budget']:g}: {100 * m:+.1f} ± {100 * se:.1f} "
                         f"(share {sh:g}; {verdict})")
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
            "features, with all of B on the label, measures what LPGNN's label model (label "
            "propagation of the noisy labels and its corrected loss) gives without any "
            "feature report."]
    return "\n".join(out)


def _motivating_pair(records):
    """The motivating comparison: label propagation at eps 2 against multi-bit(1) -> LPGNN(1)."""
    def cell(ds, kind, params):
        v = [100 * r["metrics"]["accuracy"] for r in records if r["dataset"] == ds
             and r["split"] == RANDOM and r["method"] == kind and r["params"] == params]
        return f"{np.mean(v):.1f} ± {np.std(v):.1f}" if v else "—"
    parts = [f"{ds} {cell(ds, 'lp', {'budget': 2.0})} against "
             f"{cell(ds, 'lpgnn', {'budget': 2.0, 'share': 0.5})}"
             for ds in dict.fromkeys(r["dataset"] for r in records if r["split"] == RANDOM)]
    if not parts:
        return ""
    return ("At B = 2 on 50/25/25 splits, label propagation on labels randomized at 2 against "
            "multi-bit(ε = 1) → LPGNN(eps_y = 1), the comparison that motivated this study: "
            + "; ".join(parts) + ".")


def _seed_count(records):
    n = sorted({len(v) for v in _cells(records).values()})
    return "no" if not n else str(n[0]) if n[0] == n[-1] else f"{n[0]}-{n[-1]}"


def _table(records):
    pair = _motivating_pair(records)
    return (f"Test accuracy (%), mean ± std over {_seed_count(records)} seeds (the split, the "
            "collections and the models); the difference is paired by seed (± its standard "
            "error). Every model is chosen on the validation nodes.\n\n"
            + budget_split_table(records) + (f"\n\n{pair}" if pair else ""))


def _command(records):
    datasets = [d for d in DATASETS if any(r["dataset"] == d for r in records)]
    datasets += sorted({r["dataset"] for r in records} - set(datasets))
    seeds = max((r["seed"] for r in records), default=-1) + 1
    return ("export OMP_NUM_THREADS=1 SKLDP_DATASETS_DIR=<datasets folder>\n"
            f"python -m skldp reproduce budget_split --datasets {' '.join(datasets)} "
            f"--seeds {seeds}")


def _ledger(records):
    budgeted = [r for r in records if r["method"] != "raw"]
    ok = all(abs(r["eps_spent"] - r["params"]["budget"]) < 1e-9
             and abs(r["metrics"]["label_sender_epsilon_min"] - r["params"]["budget"]) < 1e-9
             for r in budgeted)
    return (f"Ledger: in {'all' if ok else 'NOT all'} of the {len(budgeted)} runs with a "
            "budget, every user who sent a label spent exactly B and no user spent more "
            "(the runner's `eps_spent` and each run's own check).")


def _cells_and_gaps(records):
    """Every cell of each panel, then what of the study's grid (its defaults) was not run."""
    out = []
    panels = list(dict.fromkeys((r["dataset"], r["split"]) for r in split_rows(records)))
    for ds, sp in panels:
        out += [f"## All cells: {ds}, {sp}", "", cells_table(records, ds, sp), ""]
    planned = budget_split_study()
    recorded = {r["key"] for r in records}
    seeds = sorted({r["seed"] for r in records})
    lines = ["## Cells of the planned grid that were not run", ""]
    missing = [f"{ds} ({sp})" for ds in planned.datasets for sp in planned.splits
               if (ds, sp) not in {(r["dataset"], r["split"]) for r in records}]
    if missing:
        lines.append(f"* Datasets and regimes: {', '.join(missing)}.")
    if len(seeds) < len(planned.seeds):
        lines.append(f"* Seeds: {len(seeds)} of the {len(planned.seeds)} planned (seeds "
                     f"{', '.join(map(str, seeds))} ran). The standard errors are those of "
                     f"{len(seeds)} paired seeds.")
    gaps = [s.key for s in planned.runs() if (s.dataset, s.split) in set(panels)
            and s.seed in seeds and s.key not in recorded]
    if gaps:
        lines.append(f"* In the panels above, {len(gaps)} runs of the seeds that ran are "
                     "missing.")
    else:
        lines.append(f"* Every budget ({', '.join(f'{b:g}' for b in BUDGETS)}) and every "
                     f"share ({', '.join(f'{s:g}' for s in SHARES)}, and 0) ran in each panel "
                     "above, with every seed that ran.")
    lines.append("* Only multi-bit feature reports were tried. PrivGE's HDS mechanism, the "
                 "set-valued and the grouped GRR-FS pipelines of the label-scarce study were "
                 "not run.")
    labels = "; ".join(f"`{k}`: {v[1]}" for k, v in KINDS.items())
    return "\n".join(out + lines + ["", f"Models (record `method`): {labels}."])


def write_page(records, pages_dir, runs_file=None, partial=None):
    """This study's page and figure from its runs (``studies.write_page``)."""
    pages_dir = Path(pages_dir)
    blocks = {
        "answer": _answer(split_rows(records)),
        "table": _table(records),
        "command": command_block("budget_split", len(records), _command(records),
                                 runs_file=runs_file,
                                 partial=partial),
        "figure": "![Test accuracy against the total budget B](fig_budget_split.png)\n\n"
                  "*Test accuracy against the total budget; black squares: all of B on the "
                  "label; circles: a share of B on the features; each with its model chosen "
                  "on validation; dotted: raw features with clean labels.*",
        "ledger": _ledger(records),
        "recommender": recommender_check(records),
        "cells": _cells_and_gaps(records)}
    draw = (None if not records else
            lambda then: budget_split_figure(records, pages_dir / "fig_budget_split.png", then))
    return page_then_figure(pages_dir / "budget_split.md", blocks, draw)


make_study = budget_split_study   # the registry's name (studies.get_study)
