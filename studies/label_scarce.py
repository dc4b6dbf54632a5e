"""The label-scarce study: do private features pay where few labels are known?

20 training and 30 validation labels per class (:func:`per_class_node_split`;
every other labelled node is a test node), and on Cora and CiteSeer also the
public Planetoid split; feature budgets ``eps`` in {0.5, 1, 2, 4, 8} per user;
10 seeds (the split's, the collections' and the models'). Labels are in the
clear: only the features are private here (the total-budget study makes the
labels private too).

Rows (kinds of :func:`~._private_features.candidates`): raw features through
the same propagation and head (the ceiling), the feature-free models (label
propagation, structural features -> head, C&S around it), each seed system's
model (PrivGE's HDS -> PPR -> head, LPGNN's multi-bit -> LPGNN, RGNN's grouped
GRR-FS -> reconstruction -> RGNN), the set-valued pipeline, C&S around each
mechanism's pipeline and the union of structural features with a private
branch. Every setting (PPR's alpha, label propagation's alpha, LPGNN's feature
steps) and every early stop is chosen on the validation nodes.
"""

import functools
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator

from skldp.experiments import Grid, Method, Study

from .common import run_on_split
from .lpgnn import planetoid
from .pages import command_block, fill_blocks
from .private_features import (
    RGNN_CONFIG,
    binary_features,
    candidates,
    fit_select,
    private_input,
)

__all__ = ["label_scarce_study", "ScarceRun", "EPS", "DATASETS", "KINDS", "scarce_masks",
           "label_scarce_verdict", "label_scarce_report", "label_scarce_table",
           "verdict_rows", "paired_difference", "write_page"]

EPS = [0.5, 1.0, 2.0, 4.0, 8.0]
DATASETS = ("cora", "citeseer", "facebook", "twitch_ENGB", "wiki_chameleon",
            "lastfm_asia_nofeatures", "german")
PUBLIC_SPLIT = ("cora", "citeseer")
STRUCTURE_ONLY = ("lastfm_asia_nofeatures",)
SCARCE = "20/30 per class"
N_TRAIN, N_VAL = 20, 30
# German credit's columns are amounts and counts of unrelated scales: its heads
# standardise every column (the Planetoid page measured it).
NORMALIZATION = {"german": "standardize"}

# kind -> (role, label); the order is the tables' order
KINDS = {
    "raw": ("raw-features", "raw features → PPR → MLP (ceiling)"),
    "raw-cs": ("raw-features", "raw features: C&S(PPR → MLP)"),
    "lp": ("feature-free", "label propagation"),
    "structural": ("feature-free", "structural features → MLP"),
    "structural-cs": ("feature-free", "C&S(structural → MLP)"),
    "hds": ("private", "PrivGE: HDS → PPR → MLP"),
    "multibit": ("private", "multi-bit → PPR → MLP"),
    "setvalued": ("private", "set-valued → PPR → MLP"),
    "hds-cs": ("private", "C&S(HDS → PPR → MLP)"),
    "multibit-cs": ("private", "C&S(multi-bit → PPR → MLP)"),
    "setvalued-cs": ("private", "C&S(set-valued → PPR → MLP)"),
    "union": ("private", "[structural, multi-bit → PPR] → MLP"),
    "lpgnn": ("private", "LPGNN: multi-bit → LPGNN"),
    "rgnn": ("private", "RGNN: GRR-FS → reconstruction → RGNN"),
}
BINARY_ONLY = ("setvalued", "setvalued-cs", "rgnn")


def scarce_masks(y, seed):
    """20 training and 30 validation nodes per class, the other labelled nodes test.

    A class too small for 20 + 30 + 1 nodes (LastFM Asia has one of 16) gives a
    third of its nodes to training, a third to validation.
    """
    from skldp.model_selection import per_class_node_split
    return per_class_node_split(y, N_TRAIN, N_VAL, small_classes="shrink", random_state=seed)


class ScarceRun(BaseEstimator):
    """One run of the label-scarce study (``run(G, y, masks)`` gives the test accuracy).

    Parameters
    ----------
    kind : str, default="multibit"
        A key of ``KINDS``.
    eps : float or None, default=None
        Feature budget per user (private kinds).
    dataset : str, default="cora"
        The dataset (its public bounds, head normalisation, RGNN settings).
    random_state : int, default=0
        Seed of the collections and the models.
    """

    def __init__(self, kind="multibit", eps=None, dataset="cora", random_state=0):
        self.kind = kind
        self.eps = eps
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
        if role == "private" and self.eps is None:
            raise ValueError(f"kind {self.kind!r} needs eps.")
        Gin, fr = (G, (0, 1)) if role != "private" else private_input(G, self.dataset)
        cands = candidates(self.kind, eps=self.eps, seed=self.random_state, val=masks[1],
                           feature_range=fr,
                           normalization=NORMALIZATION.get(self.dataset, "l2"),
                           rgnn=RGNN_CONFIG.get(self.dataset))
        metrics, self.model_ = fit_select(cands, Gin, np.asarray(y), masks)
        return metrics


def _make(kind, ctx):
    return ScarceRun(kind=kind, dataset=ctx.dataset, random_state=ctx.seed)


def _grid(kind, datasets, eps):
    role = KINDS[kind][0]
    featured = [d for d in datasets if d not in STRUCTURE_ONLY
                and (kind not in BINARY_ONLY or binary_features(d))]
    on = datasets if role == "feature-free" else featured
    params = {"eps": list(eps)} if role == "private" else {}
    parts = []
    if on:
        parts.append(Grid(params, datasets=on, splits=[SCARCE]))
    public = [d for d in on if d in PUBLIC_SPLIT]
    if public:
        parts.append(Grid(params, datasets=public, splits=["planetoid"]))
    return parts


def label_scarce_study(datasets=DATASETS, seeds=range(10), eps=EPS, kinds=None):
    """The label-scarce sweep.

    Parameters
    ----------
    datasets : sequence of str, default=DATASETS
        Datasets (Facebook, Twitch-EN and chameleon need ``SKLDP_DATASETS_DIR``).
    seeds : sequence of int, default=range(10)
        Seeds of the split, the collections and the models.
    eps : sequence of float, default=EPS
        Feature budgets of the private kinds.
    kinds : sequence of str or None, default=None
        Restrict to these kinds of ``KINDS`` (the same run keys: a partial
        sweep is part of the whole).

    Returns
    -------
    study : Study
    """
    kinds = list(KINDS) if kinds is None else list(kinds)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown kinds {unknown}; one of {list(KINDS)}.")
    datasets = list(datasets)
    methods = {}
    for kind in kinds:
        parts = _grid(kind, datasets, eps)
        if parts:
            methods[kind] = Method(functools.partial(_make, kind), parts, role=KINDS[kind][0],
                                   evaluate=run_on_split, label=KINDS[kind][1])
    return Study(
        name="label_scarce", datasets=datasets, seeds=seeds, methods=methods,
        splits={SCARCE: scarce_masks, "planetoid": planetoid},
        title="Label-scarce — do private features pay where labels are few?",
        description="Test accuracy with 20 training and 30 validation labels per class (and "
                    "the public Planetoid split on Cora and CiteSeer); labels in the clear, "
                    "features private at eps per user; every choice on the validation nodes.",
        quick={"datasets": ["cora", "german"], "seeds": [0, 1],
               "grid": {k: {"eps": [1.0, 2.0]} for k in methods
                        if KINDS[k][0] == "private"}},
        report=label_scarce_report,
    )


def _by_cell(records, split):
    """``{(dataset, kind, eps): {seed: (val_accuracy, accuracy)}}`` of one split."""
    out = {}
    for r in records:
        m = r.get("metrics", {})
        if r.get("split") != split or "accuracy" not in m or "val_accuracy" not in m:
            continue
        eps = r["params"].get("eps")
        out.setdefault((r["dataset"], r["method"], eps), {})[r["seed"]] = (
            m["val_accuracy"], m["accuracy"])
    return out


def paired_difference(a, b):
    """Mean and standard error of ``a - b`` over the seeds both hold.

    Parameters
    ----------
    a, b : dict of int -> float
        Accuracy per seed.

    Returns
    -------
    mean, se : float
        ``se`` is the sample std (ddof 1) of the differences over sqrt(n);
        NaN with fewer than two seeds.
    n : int
        Seeds both hold.
    """
    seeds = sorted(set(a) & set(b))
    if not seeds:
        return np.nan, np.nan, 0
    d = np.array([a[s] - b[s] for s in seeds])
    se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else np.nan
    return float(d.mean()), float(se), len(d)


def verdict_rows(records, split=SCARCE, max_eps=2.0):
    """Per dataset: the best feature-free model, the best private cell at eps <= ``max_eps``,
    the raw ceiling and the paired difference of the first two.

    "Best" is the highest mean *validation* accuracy over the seeds (the test
    accuracy never chooses); the cells compared are then scored on the test
    nodes, paired by seed (same split, same seed).

    Parameters
    ----------
    records : list of dict
        The study's records.
    split : str, default=SCARCE
        The split.
    max_eps : float, default=2.0
        Largest budget of the private cells considered.

    Returns
    -------
    rows : list of dict
        ``dataset``; ``free``, ``private``, ``raw``: ``(kind, eps, {seed:
        test accuracy})`` or None; ``diff``: ``(mean, se, n)`` of private minus
        free when both exist.
    """
    cells = _by_cell(records, split)
    rows = []
    for ds in dict.fromkeys(k[0] for k in cells):
        def best(role, ok=lambda e: True, ds=ds):
            got = [(np.mean([va for va, _ in v.values()]), kind, e, v)
                   for (d, kind, e), v in cells.items()
                   if d == ds and KINDS.get(kind, ("",))[0] == role and ok(e)]
            if not got:
                return None
            _, kind, e, v = max(got, key=lambda g: g[0])
            return kind, e, {s: acc for s, (_, acc) in v.items()}
        free = best("feature-free")
        private = best("private", lambda e: e is not None and e <= max_eps)
        raw = best("raw-features")
        row = {"dataset": ds, "free": free, "private": private, "raw": raw}
        if free and private:
            row["diff"] = paired_difference(private[2], free[2])
        rows.append(row)
    return rows


def _fmt(cell):
    if cell is None:
        return "—"
    kind, e, v = cell
    vals = 100 * np.array(list(v.values()))
    at = "" if e is None else f" at ε = {e:g}"
    return f"{KINDS[kind][1]}{at}: {vals.mean():.1f} ± {vals.std():.1f} (n = {len(vals)})"


def label_scarce_verdict(records, split=SCARCE):
    """The verdict table: best eps <= 2 private pipeline against the best feature-free model.

    Both are chosen by their mean validation accuracy; the difference of
    their test accuracies is paired over the seeds both hold.

    Parameters
    ----------
    records : list of dict
        The study's records.
    split : str, default=SCARCE
        The split.

    Returns
    -------
    text : str
        Markdown.
    """
    lines = [f"Split {split}: test accuracy (%), mean ± std over seeds; each cell the best of its "
             "group on the validation nodes.", "",
             "| dataset | best feature-free | best private, ε ≤ 2 | difference (paired) | "
             "> 2 SE? | raw-feature ceiling |", "|---|---|---|---|---|---|"]
    wins = []
    for row in verdict_rows(records, split):
        diff = row.get("diff")
        if diff is None:
            d, beats = "—", "—"
        else:
            m, se, n = diff
            beats = "yes" if n > 1 and m > 2 * se else "no"
            if beats == "yes":
                wins.append(row["dataset"])
            d = f"{100 * m:+.1f} ± {'—' if n < 2 else f'{100 * se:.1f}'} (n = {n})"
        lines.append(f"| {row['dataset']} | {_fmt(row['free'])} | {_fmt(row['private'])} | {d} "
                     f"| {beats} | {_fmt(row['raw'])} |")
    lines += ["", f"The best ε ≤ 2 pipeline beats the best feature-free model by more than 2 "
                  f"standard errors of the paired difference on {len(wins)} dataset(s)"
                  + (f": {', '.join(wins)}." if wins else ".")]
    return "\n".join(lines)


def label_scarce_table(records, split=SCARCE):
    """Test accuracy of every pipeline and budget, one column per dataset.

    Parameters
    ----------
    records : list of dict
        The study's records.
    split : str, default=SCARCE
        The split.

    Returns
    -------
    text : str
        Markdown: mean ± std over seeds (%), ``(n)`` the seeds where fewer
        than the most of the table.
    """
    cells = _by_cell(records, split)
    datasets = list(dict.fromkeys(d for d, _, _ in cells))
    n_max = max((len(v) for v in cells.values()), default=0)
    lines = [f"Split {split}: test accuracy (%), mean ± std over seeds.", "",
             "| pipeline | ε | " + " | ".join(datasets) + " |",
             "|---|---|" + "---|" * len(datasets)]
    rows = sorted({(k, e) for _, k, e in cells if k in KINDS},
                  key=lambda ke: (list(KINDS).index(ke[0]), -1 if ke[1] is None else ke[1]))
    for kind, e in rows:
        out = []
        for ds in datasets:
            v = cells.get((ds, kind, e))
            if v is None:
                out.append("—")
                continue
            acc = 100 * np.array([a for _, a in v.values()])
            n = "" if len(acc) == n_max else f" ({len(acc)})"
            out.append(f"{acc.mean():.1f} ± {acc.std():.1f}{n}")
        eps = "∞ (clear)" if KINDS[kind][0] == "raw-features" else "—" if e is None else f"{e:g}"
        lines.append(f"| {KINDS[kind][1]} | {eps} | " + " | ".join(out) + " |")
    return "\n".join(lines)


def label_scarce_report(records):
    """The verdict and the full table of each split (the public split's where it was run).
    """
    splits = [s for s in (SCARCE, "planetoid") if any(r.get("split") == s for r in records)]
    return "\n\n".join(f(records, s) for s in splits
                       for f in (label_scarce_verdict, label_scarce_table))


def _answer(records):
    """The verdict in words: how many datasets, and every paired difference."""
    splits = [s for s in (SCARCE, "planetoid") if any(r.get("split") == s for r in records)]
    out = []
    for split in splits:
        rows = [r for r in verdict_rows(records, split) if "diff" in r]
        wins = [r["dataset"] for r in rows
                if r["diff"][2] > 1 and r["diff"][0] > 2 * r["diff"][1]]
        diffs = "; ".join(f"{r['dataset']} {100 * r['diff'][0]:+.1f} ± "
                          f"{100 * r['diff'][1]:.1f} (n = {r['diff'][2]})" for r in rows)
        if split == SCARCE:
            head = (f"**Answer: on {len(wins)} of the {len(rows)} datasets run"
                    + (f" ({', '.join(wins)})" if wins else "")
                    + f"; the goal of three is {'met' if len(wins) >= 3 else 'not met'}.**")
            out.append(f"{head} On the {split} splits, the best ε ≤ 2 pipeline minus the best "
                       f"feature-free model, in points, paired by seed (± its standard error; "
                       f"n seeds): {diffs}.")
        else:
            out.append(f"On the public Planetoid split: {diffs}; more than twice the standard "
                       f"error on {', '.join(wins) if wins else 'none'}.")
    gaps = []
    for r in verdict_rows(records, SCARCE):
        if r["free"] and r["raw"]:
            raw = np.mean(list(r["raw"][2].values()))
            free = np.mean(list(r["free"][2].values()))
            gaps.append(f"{r['dataset']} {100 * (raw - free):+.1f}")
    if gaps:
        out.append("The raw-feature ceiling minus the best feature-free model, 20/30 splits, "
                   "in points: " + "; ".join(gaps) + ".")
    return "\n\n".join(out)


def _seeds(seeds):
    seeds = sorted(seeds)
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"{seeds[0]}"
    return ", ".join(map(str, seeds))


def _command(records):
    """One command per group of datasets that ran the same pipelines, budgets and seeds."""
    ran = {}
    for r in records:
        k, e, s = ran.setdefault(r["dataset"], (set(), set(), set()))
        k.add(r["method"])
        s.add(r["seed"])
        if r["params"].get("eps") is not None:
            e.add(r["params"]["eps"])
    groups = {}
    for ds in sorted(ran, key=lambda d: (DATASETS + (d,)).index(d)):
        k, e, s = ran[ds]
        # every row that applies to the dataset: no --kinds
        k = None if k == set(label_scarce_study([ds]).methods) else frozenset(k)
        groups.setdefault((k, frozenset(e), max(s) + 1), []).append(ds)
    lines = ["export OMP_NUM_THREADS=1 SKLDP_DATASETS_DIR=<datasets folder>"]
    for (kinds, eps, n), datasets in groups.items():
        cmd = (f"python -m skldp reproduce label_scarce --datasets {' '.join(datasets)} "
               f"--seeds {n}")
        if eps:
            cmd += " --eps " + " ".join(f"{e:g}" for e in sorted(eps))
        if kinds is not None:
            cmd += " --kinds " + " ".join(k for k in KINDS if k in kinds)
        lines.append(cmd)
    return "\n".join(lines)


def _coverage(records):
    """What of the study's grid (its defaults) the runs hold, per dataset."""
    recorded = {r["key"] for r in records}
    lines = [f"**What was run.** {len(records)} runs of the study's grid (its defaults: "
             f"{len(DATASETS)} datasets, seeds 0-9, ε in "
             f"{{{', '.join(f'{e:g}' for e in EPS)}}}):", ""]
    for ds in DATASETS:
        specs = label_scarce_study([ds]).runs()
        mine = [s for s in specs if s.key in recorded]
        if not mine:
            lines.append(f"* {ds}: not run ({len(specs)} runs).")
            continue
        seeds = _seeds({s.seed for s in mine})
        kinds = [k for k in KINDS if any(s.method == k for s in mine)]
        missing = [k for k in KINDS if k not in kinds and any(s.method == k for s in specs)]
        eps = sorted({dict(s.params)["eps"] for s in mine if "eps" in dict(s.params)})
        splits = sorted({s.split for s in mine})
        text = (f"* {ds}: {len(mine)} of {len(specs)} runs; split{'s' * (len(splits) > 1)} "
                f"{', '.join(splits)}; seeds {seeds}; {len(kinds)} rows")
        if eps:
            text += f", ε in {{{', '.join(f'{e:g}' for e in eps)}}}"
        if missing:
            text += "; rows not run: " + ", ".join(KINDS[k][1] for k in missing)
        lines.append(text + ".")
    return "\n".join(lines)


def _figure(records, pages_dir):
    from skldp.experiments import plot_summary, summarize
    study = label_scarce_study()
    return plot_summary(summarize(records), Path(pages_dir) / "label_scarce.png",
                        roles={m: meth.role for m, meth in study.methods.items()},
                        labels={m: meth.label or m for m, meth in study.methods.items()})


def write_page(records, pages_dir, runs_file=None, partial=None):
    """This study's page and figure from its runs (``studies.write_page``)."""
    splits = [s for s in (SCARCE, "planetoid") if any(r.get("split") == s for r in records)]
    page = fill_blocks(Path(pages_dir) / "label_scarce.md", {
        "answer": _answer(records),
        "verdict": "\n\n".join(label_scarce_verdict(records, s) for s in splits),
        "figure": "![Test accuracy against eps per dataset and split](label_scarce.png)",
        "command": command_block("label_scarce", len(records), _command(records),
                                 runs_file=runs_file,
                                 partial=partial),
        "coverage": _coverage(records),
        "tables": "\n\n".join(label_scarce_table(records, s) for s in splits)})
    out = {"page": page}
    figure = _figure(records, pages_dir) if records else None
    if figure is not None:
        out["figure"] = figure
    return out


make_study = label_scarce_study   # the registry's name (studies.get_study)
