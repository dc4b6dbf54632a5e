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

import numpy as np
from sklearn.base import BaseEstimator

from skldp.experiments import Grid, Method, Study

from .common import run_on_split
from .lpgnn import planetoid
from .private_features import (
    RGNN_CONFIG,
    binary_features,
    candidates,
    fit_select,
    private_input,
)

__all__ = ["label_scarce_study", "ScarceRun", "EPS", "DATASETS", "KINDS", "scarce_masks",
           "label_scarce_verdict", "label_scarce_report", "label_scarce_table",
           "verdict_rows", "paired_difference"]

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

        Parameters
        ----------
        G : GraphData
            The whole graph (the run's own users).
        y : ndarray of shape (n_nodes,)
            Labels.
        masks : tuple of three boolean ndarrays
            Train, validation and test masks.

        Returns
        -------
        metrics : dict of str -> float
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

    Parameters
    ----------
    records : list of dict
        The study's records.

    Returns
    -------
    text : str
        Markdown.
    """
    splits = [s for s in (SCARCE, "planetoid") if any(r.get("split") == s for r in records)]
    return "\n\n".join(f(records, s) for s in splits
                       for f in (label_scarce_verdict, label_scarce_table))


make_study = label_scarce_study   # the registry's name (studies.get_study)
