"""The DP-GNN study (Daigavane et al., arXiv 2021): node-level private 1-layer GNNs.

DP-GNN against DP-MLP, the non-private MLP and 1-layer GCNs and a feature-free
label propagation at eps in {1, 4, 10, 30} (delta = 1/(10 N_train)) on a random
50/25/25 split of Facebook and twitch_ENGB, plus the batch-size and degree
ablations (the paper's Tables 2 and 3) on Facebook with two seeds, and the
noise multiplier that each accountant needs for DP-MLP at the main table's
settings (no training). The runs are those of ``studies/runs/dpgnn_runs.jsonl``:
the same keys (method, split ``random-50/25/25``, seed, ``table``, ``eps``,
``batch_size``, ``max_degree`` and the code ``version``: 3, the only one that runs
now; the version-1 records are the tables' † cells). ``write_page`` renders
``docs/results/dpgnn.md`` and ``fig_dpgnn.png`` from them.
"""

import functools
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator

from skldp.experiments import Grid, Method, Study, default_split

from .common import run_on_split
from .link_prediction import as_recorded
from .pages import command_block, fill_blocks, with_figure

__all__ = ["dpgnn_study", "write_page", "DPGNNRun", "AccountantRun", "SETTINGS", "EPS",
           "KINDS", "VERSION", "ACCOUNTANTS"]

EPS = [1.0, 4.0, 10.0, 30.0]
# Hyperparameters chosen on the validation split of facebook, seed 0 (a small grid over
# K in {1, 3, 7}, batch in {1000, 2500, 5000}, C in {0.3, 1}, then K in {1, 3, 5, 10} from
# the degree ablation, whose best validation accuracy is at K = 1). That choice read
# private validation labels: the page's epsilon is the final training's only (as the paper's).
SETTINGS = {
    "facebook": dict(batch_size=5000, max_degree=1, n_steps=100, lr=0.02, hidden_size=32),
    "twitch_ENGB": dict(batch_size=1500, max_degree=1, n_steps=100, lr=0.02, hidden_size=32),
}
NONPRIVATE_GNN = {"facebook": dict(batch_size=1000, max_degree=10, n_steps=200, lr=0.01),
                  "twitch_ENGB": dict(batch_size=500, max_degree=10, n_steps=200, lr=0.01)}
NONPRIVATE_STEPS = [25, 50, 100, 200]
ABLATION_DATASET = "facebook"
ABLATION_BATCH = [1000, 2500, 5000, 10000]
ABLATION_K = [1, 3, 5, 10]
BATCH_ABLATION_K = 3  # the batch-size ablation was run with K = 3
ABLATION_EPS = 30.0
ABLATION_SEEDS = [0, 1]
VERSION = 3  # the code after the privacy audit (2) and the accountants' order search (3)
FEATURE_FREE = "label propagation (feature-free)"
LP_ALPHAS = (0.5, 0.8, 0.9, 0.99)
KINDS = ("MLP", "GCNClassifier(n_layers=1)", "GCN (1-layer, MLP enc/dec)", FEATURE_FREE,
         "DP-GNN", "DP-MLP")


class DPGNNRun(BaseEstimator):
    """One run of the DP-GNN study: the model of ``kind`` on a random split.

    ``run(G, y, masks)`` fits on the training nodes (the non-private baselines
    and label propagation select their number of steps / alpha on the
    validation nodes) and returns the validation and test accuracies.

    Parameters
    ----------
    kind : str, default="DP-GNN"
        One of ``KINDS``.
    table : {"main", "batch", "degree"}, default="main"
        The table of the run (the ablations override ``batch_size`` / ``max_degree``).
    eps : float or None, default=None
        Target epsilon of the DP models (``None`` for the non-private ones).
    batch_size : int or None, default=None
        Batch size (``None``: the dataset's setting).
    max_degree : int or None, default=None
        Degree bound K (``None``: the dataset's setting).
    version : int, default=3
        Code version of the run; only 3 (after the accountants' search over real
        Rényi orders) runs.
    dataset : str, default="facebook"
        The dataset (its settings: ``SETTINGS``, ``NONPRIVATE_GNN``).
    random_state : int, default=0
        Seed of the model.
    """

    def __init__(self, kind="DP-GNN", table="main", eps=None, batch_size=None,
                 max_degree=None, version=VERSION, dataset="facebook", random_state=0):
        self.kind = kind
        self.table = table
        self.eps = eps
        self.batch_size = batch_size
        self.max_degree = max_degree
        self.version = version
        self.dataset = dataset
        self.random_state = random_state

    def run(self, G, y, masks):
        """Fit the model of ``kind`` and score it on the validation and test nodes.

        ``G`` is the whole graph, ``masks`` its train, validation and test masks; the
        metrics are those of the test nodes unless named otherwise.
        """
        from skldp.baselines import LabelPropagationClassifier
        from skldp.central import DPGNNClassifier, DPMLPClassifier
        from skldp.models import GCNClassifier
        if int(self.version) != VERSION:
            raise ValueError(f"only code version {VERSION} runs (version 1 runs were made "
                             f"before the privacy audit, version 2 before the "
                             f"accountants' order search), got {self.version!r}.")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}.")
        tr, va, te = masks
        seed, name = self.random_state, self.dataset
        s = dict(SETTINGS[name])
        over = {k: int(v) for k, v in (("batch_size", self.batch_size),
                                       ("max_degree", self.max_degree)) if v is not None}
        s.update(over)
        # The label domain is public dataset metadata, not read from the training labels.
        classes = np.unique(y)
        extra = {}
        eps = as_recorded(self.eps)  # an integer when whole, as the recorded runs passed it
        if self.kind == "DP-GNN":
            clf = DPGNNClassifier(target_epsilon=eps, random_state=seed, classes=classes, **s)
        elif self.kind == "DP-MLP":
            s.pop("max_degree")
            # accountant="combined" (the default): per-order minimum of dp-accounting's
            # Thm. 27 curve (replace-one, batches without replacement) and Theorem 1, K = 0
            clf = DPMLPClassifier(target_epsilon=eps, random_state=seed, classes=classes, **s)
        elif self.kind in ("GCN (1-layer, MLP enc/dec)", "MLP"):
            # Non-private baselines: the DP-GNN / DP-MLP architectures trained with plain
            # Adam; the number of steps is selected on the validation split.
            p = dict(NONPRIVATE_GNN[name], hidden_size=s["hidden_size"])
            if "max_degree" in over:
                p["max_degree"] = over["max_degree"]
            best = None
            for T in NONPRIVATE_STEPS:
                p["n_steps"] = T
                if self.kind == "MLP":
                    q = dict(p)
                    q.pop("max_degree")
                    c = DPMLPClassifier(noise_multiplier=0, max_grad_norm=None,
                                        random_state=seed, classes=classes, **q)
                else:
                    c = DPGNNClassifier(noise_multiplier=0, max_grad_norm=None,
                                        random_state=seed, classes=classes, **p)
                c.fit(G[tr], y[tr])
                v = c.score(G[va], y[va])
                if best is None or v > best[0]:
                    best = (v, T, c)
            clf = best[2]
            extra["selected_steps"] = float(best[1])
        elif self.kind == "GCNClassifier(n_layers=1)":
            clf = GCNClassifier(n_layers=1, random_state=seed)
        else:  # the feature-free floor: graph and training labels, alpha chosen on validation
            fits = [LabelPropagationClassifier(alpha=a).fit(G[tr], y[tr]) for a in LP_ALPHAS]
            clf = max(fits, key=lambda c: c.score(G[va], y[va]))
            extra["alpha"] = float(clf.alpha)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not hasattr(clf, "classes_"):
                clf.fit(G[tr], y[tr])
            out = {"accuracy": float(clf.score(G[te], y[te])),
                   "val_accuracy": float(clf.score(G[va], y[va]))}
        if hasattr(clf, "epsilon_"):
            out.update(epsilon=float(clf.epsilon_), delta=float(clf.delta_),
                       z=float(clf.noise_multiplier_))
        self.model_ = clf
        return {**out, **extra}




ACCOUNTANTS = {   # metric name -> the accountant, as the page names it
    "z_wor": "wor (dp-accounting, Thm. 27)",
    "z_theorem1": "hypergeometric (Theorem 1, K = 0)",
    "z_combined": "combined (per-order minimum)",
}
ACCOUNTANT_METHOD = "DP-MLP accountants"


class AccountantRun(BaseEstimator):
    """The noise multiplier DP-MLP needs under each accountant (no training).

    ``run(G, y, masks)`` calibrates, for the main table's settings of ``dataset``
    (batch, steps) and the split's training-set size N (delta = 1/(10 N)), the
    noise multiplier z that reaches ``eps`` with dp-accounting's bound for
    batches drawn without replacement (Wang, Balle & Kasiviswanathan, AISTATS
    2019, Thm. 27), with Theorem 1 of the DP-GNN paper at K = 0, and with their
    per-order minimum (``DPMLPClassifier``'s ``accountant="combined"``).

    Parameters
    ----------
    eps : float, default=1.0
        Target epsilon.
    dataset : str, default="facebook"
        The dataset (its settings: ``SETTINGS``).
    """

    def __init__(self, eps=1.0, dataset="facebook"):
        self.eps = eps
        self.dataset = dataset

    def run(self, G, y, masks):
        """Calibrate z under each accountant.

        ``G`` is the whole graph, ``masks`` its train, validation and test masks; the
        metrics are those of the test nodes unless named otherwise.
        """
        from skldp.accounting import (
            calibrate_dpsgd_noise_multiplier,
            calibrate_noise_multiplier,
        )
        s = SETTINGS[self.dataset]
        N, m, T = int(np.count_nonzero(masks[0])), s["batch_size"], s["n_steps"]
        eps, delta = float(self.eps), 1.0 / (10 * N)
        return {"n_train": float(N), "batch_size": float(m), "n_steps": float(T),
                "z_wor": calibrate_dpsgd_noise_multiplier(eps, delta, N, m, T, bound="wor"),
                "z_theorem1": calibrate_noise_multiplier(eps, delta, N, m, 0, T),
                "z_combined": calibrate_dpsgd_noise_multiplier(eps, delta, N, m, T)}


def _make(kind, ctx):
    return DPGNNRun(kind=kind, dataset=ctx.dataset, random_state=ctx.seed)


def _make_accountants(ctx):
    return AccountantRun(dataset=ctx.dataset)


def _main(eps):
    return {"table": ["main"], "eps": eps, "batch_size": [None], "max_degree": [None],
            "version": [VERSION]}


LABELS = {"MLP": "MLP (non-private)", "GCNClassifier(n_layers=1)": "1-layer GCN (non-private)",
          "GCN (1-layer, MLP enc/dec)": "GCN, MLP enc/dec (non-private)"}
ROLES = {"MLP": "raw-features", "GCNClassifier(n_layers=1)": "raw-features",
         "GCN (1-layer, MLP enc/dec)": "raw-features", FEATURE_FREE: "feature-free"}


def dpgnn_study(datasets=("facebook", "twitch_ENGB"), seeds=range(5), ablations=True):
    """The DP-GNN sweep: the main table and, on Facebook, the two ablations.

    Parameters
    ----------
    datasets : sequence of str, default=("facebook", "twitch_ENGB")
        Datasets with settings in ``SETTINGS``.
    seeds : sequence of int, default=range(5)
        Seeds of the split and the model (the ablations use seeds 0 and 1).
    ablations : bool, default=True
        Also the batch-size and degree ablations on Facebook.

    Returns
    -------
    study : Study
    """
    unknown = [d for d in datasets if d not in SETTINGS]
    if unknown:
        raise ValueError(f"dpgnn has settings for {sorted(SETTINGS)} only, not {unknown}.")
    abl = dict(datasets=[ABLATION_DATASET], seeds=ABLATION_SEEDS)
    grids = {kind: [Grid(_main(EPS if kind in ("DP-GNN", "DP-MLP") else [None]))]
             for kind in KINDS}
    if ablations:
        grids["DP-GNN"] += [
            Grid({"table": ["batch"], "eps": [ABLATION_EPS], "batch_size": ABLATION_BATCH,
                  "max_degree": [BATCH_ABLATION_K], "version": [VERSION]}, **abl),
            Grid({"table": ["degree"], "eps": [ABLATION_EPS], "batch_size": [None],
                  "max_degree": ABLATION_K, "version": [VERSION]}, **abl)]
        grids["GCN (1-layer, MLP enc/dec)"] += [
            Grid({"table": ["degree"], "eps": [None], "batch_size": [None],
                  "max_degree": ABLATION_K, "version": [VERSION]}, **abl)]
    methods = {kind: Method(functools.partial(_make, kind), grids[kind],
                            role=ROLES.get(kind, "private"), evaluate=run_on_split,
                            label=LABELS.get(kind, kind)) for kind in KINDS}
    # no training: one seed (N_train is the same for every seed's split)
    methods[ACCOUNTANT_METHOD] = Method(_make_accountants, [Grid({"eps": EPS}, seeds=[0])],
                                        role="baseline", evaluate=run_on_split)
    # --quick: twitch_ENGB, seed 0, the main table at eps = 1 (no ablation, no accountant)
    quick = {kind: [Grid(_main([1.0] if kind in ("DP-GNN", "DP-MLP") else [None]))]
             for kind in KINDS}
    quick[ACCOUNTANT_METHOD] = [Grid({"eps": [1.0]}, datasets=[])]
    return Study(
        name="dpgnn", datasets=list(datasets), seeds=seeds, methods=methods,
        splits={"random-50/25/25": default_split},
        title="DP-GNN — node-level private 1-layer GNNs",
        description="Test accuracy on a random 50/25/25 split; DP-GNN and DP-MLP at target "
                    "eps (delta = 1/(10 N_train)); the ablations (table batch / degree) on "
                    "Facebook with two seeds.",
        quick={"datasets": ["twitch_ENGB"], "seeds": [0], "grid": quick},
    )


make_study = dpgnn_study   # the registry's name (studies.get_study)


FIGURE = "fig_dpgnn.png"


def _fields(r):
    """A record's cell values at the top level (``test``, ``val``, the grid values, the
    privacy metrics), for records of the runner and of the script before it alike."""
    if "test" in r:
        return r
    m = r["metrics"]
    return {**r, **r["params"], "test": m.get("accuracy"), "val": m.get("val_accuracy"),
            **{k: m[k] for k in ("epsilon", "delta", "z", "selected_steps", "alpha")
               if k in m}}


def _ms(vals):
    vals = np.asarray(vals) * 100
    if len(vals) == 0:
        return "-"
    return f"{vals.mean():.1f} ± {vals.std():.1f} (n={len(vals)})"


def _version(r):
    return r.get("version", 1)


def tables(records):
    """The page's tables (markdown): the main table per dataset and the two ablations.
    """
    recs = [_fields(r) for r in records if r["method"] != ACCOUNTANT_METHOD]
    eps_list = [int(e) for e in EPS]   # as the tables show them
    abl_eps = int(ABLATION_EPS)

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

    def stat_cell(key, fmt, table, method, name, eps, version=None):
        sel, _ = select(table, method, name, eps, version)
        return fmt.format(max(r[key] for r in sel)) if sel else "-"

    lines = ["### Test accuracy (%), mean ± std over seeds (n = number of seeds)", "",
             "† = made with code version 1 (float noise, no grid, seeds not split into "
             "streams; `version` in the runs file), which no longer runs; all other cells: "
             "the current code, version 3.", ""]
    for name, s in SETTINGS.items():
        lines += [f"**{name}** (DP runs: batch {s['batch_size']}, K = {s['max_degree']}, "
                  f"T = {s['n_steps']} steps, hidden {s['hidden_size']}, DP-Adam lr "
                  f"{s['lr']}, C = 1 per layer group)", "",
                  "| method | " + " | ".join(f"eps = {e}" for e in eps_list) + " |",
                  "|---|" + "---|" * len(eps_list)]
        rows = [("DP-GNN (Theorem 1 accountant)", "DP-GNN", None),
                ("DP-GNN (K=3)", "DP-GNN (K=3)", None),
                ("DP-MLP (combined accountant)", "DP-MLP", VERSION),
                ("DP-MLP (Theorem 1 accountant with K = 0)", "DP-MLP", 1)]
        for label, m, v in rows:
            lines.append(f"| {label} | "
                         + " | ".join(cell("main", m, name, e, v) for e in eps_list) + " |")
        for m in ("MLP", "GCN (1-layer, MLP enc/dec)", "GCNClassifier(n_layers=1)",
                  FEATURE_FREE):
            v = cell("main", m, name)
            lines.append(f"| {m} (non-private) | " + " | ".join([v] * len(eps_list)) + " |")
        gaps = []
        for e in eps_list:
            a = [r["test"] for r in select("main", "DP-GNN", name, e)[0]]
            g = [r["test"] for r in select("main", "GCN (1-layer, MLP enc/dec)", name)[0]]
            gaps.append(f"{100 * (np.mean(g) - np.mean(a)):.1f}" if a and g else "-")
        lines.append("| gap GCN - DP-GNN | " + " | ".join(gaps) + " |")
        for label, m, v in (("DP-GNN", "DP-GNN", None), ("DP-MLP", "DP-MLP", VERSION)):
            lines.append(f"| achieved eps, {label} (max over seeds) | "
                         + " | ".join(stat_cell("epsilon", "{:.3g}", "main", m, name, e, v)
                                      for e in eps_list) + " |")
        for label, m, v in (("DP-GNN", "DP-GNN", None),
                            ("DP-MLP, combined", "DP-MLP", VERSION),
                            ("DP-MLP, Theorem 1 with K = 0 †", "DP-MLP", 1)):
            lines.append(f"| noise multiplier z, {label} | "
                         + " | ".join(stat_cell("z", "{:.3g}", "main", m, name, e, v)
                                      for e in eps_list) + " |")
        lines.append("")
    lines += [f"### Batch-size ablation (Table 2 analogue), {ABLATION_DATASET}, "
              f"eps = {abl_eps}, K = {BATCH_ABLATION_K}", "",
              "| batch size | DP-GNN test acc (%) |", "|---|---|"]
    for m in ABLATION_BATCH:
        acc = cell("batch", "DP-GNN", ABLATION_DATASET, abl_eps, batch_size=m)
        lines.append(f"| {m} | {acc} |")
    lines += ["", f"### Degree ablation (Table 3 analogue), {ABLATION_DATASET}, "
              f"eps = {abl_eps}, batch {SETTINGS[ABLATION_DATASET]['batch_size']}", "",
              "| K | GCN (non-private, same K) | DP-GNN | gap |", "|---|---|---|---|"]
    for K in ABLATION_K:
        a = [r["test"] for r in select("degree", "DP-GNN", ABLATION_DATASET, abl_eps,
                                       max_degree=K)[0]]
        g = [r["test"] for r in select("degree", "GCN (1-layer, MLP enc/dec)",
                                       ABLATION_DATASET, max_degree=K)[0]]
        gap = f"{100 * (np.mean(g) - np.mean(a)):.1f}" if a and g else "-"
        gcn = cell("degree", "GCN (1-layer, MLP enc/dec)", ABLATION_DATASET, max_degree=K)
        dp = cell("degree", "DP-GNN", ABLATION_DATASET, abl_eps, max_degree=K)
        lines.append(f"| {K} | {gcn} | {dp} | {gap} |")
    return "\n".join(lines)


def accountant_table(records):
    """Markdown: the noise multiplier z DP-MLP needs under each accountant (its runs).
    """
    eps_list = [int(e) for e in EPS]
    runs = {(r["dataset"], float(r["params"]["eps"])): r["metrics"] for r in records
            if r["method"] == ACCOUNTANT_METHOD}
    lines = ["| dataset | N_train | batch | q = m/N | accountant | "
             + " | ".join(f"z at eps = {e}" for e in eps_list) + " |",
             "|---|---|---|---|---|" + "---|" * len(eps_list)]
    for name in SETTINGS:
        mine = [runs.get((name, float(e))) for e in eps_list]
        known = next((m for m in mine if m is not None), None)
        if known is None:
            continue
        N, m = int(known["n_train"]), int(known["batch_size"])
        for key, label in ACCOUNTANTS.items():
            lines.append(f"| {name} | {N} | {m} | {m / N:.3f} | {label} | "
                         + " | ".join("-" if z is None else f"{z[key]:.3g}" for z in mine)
                         + " |")
    return "\n".join(lines)


def figure(records, pages_dir):
    """Draw ``fig_dpgnn.png``: test accuracy against node-level eps, one panel per dataset.
    """
    import matplotlib.pyplot as plt

    from .figures import curve, finish, group, hline, mean_by
    rows = [_fields(r) for r in records if r["method"] != ACCOUNTANT_METHOD]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, ds in zip(axes, SETTINGS, strict=True):
        g = mean_by(group(rows, "method", "eps",
                          where=lambda r, ds=ds: r["dataset"] == ds and r.get("table") == "main"
                          and _version(r) == VERSION),
                    "test", 100)
        for m, c in [("DP-GNN", "C0"), ("DP-MLP", "C1")]:
            curve(ax, {e: v for (mm, e), v in g.items() if mm == m}, color=c, label=m)
        for m, c in [("GCN (1-layer, MLP enc/dec)", "C0"), ("MLP", "C1")]:
            if (m, None) in g:
                ax.axhline(g[m, None], ls="--", color=c, lw=1.2, label=f"{m}, non-private")
        hline(ax, g.get((FEATURE_FREE, None)), "graph", "label propagation (graph only)")
        ax.set_title(ds)
    return finish(fig, axes, Path(pages_dir) / FIGURE, "test accuracy (%)",
                  xlabel="node-level ε")


def write_page(records, pages_dir, runs_file=None, partial=None):
    """This study's page and figure from its runs (``studies.write_page``)."""
    pages_dir = Path(pages_dir)
    page = fill_blocks(pages_dir / "dpgnn.md", {
        "table": tables(records),
        "accountants": accountant_table(records),
        "figure": "![Test accuracy against node-level ε (mean over seeds); dashed: "
                  f"non-private models, dotted: label propagation]({FIGURE})",
        "command": command_block("dpgnn", len(records), runs_file=runs_file,
                                 partial=partial),
    })
    return with_figure(page, lambda: figure(records, pages_dir))
