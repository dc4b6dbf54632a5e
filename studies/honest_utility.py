"""The honest-utility study: what the private features buy over the best feature-free model.

For each dataset, eps and seed (random 50/25/25 split of the labelled nodes) a
run fits one pipeline of ``PIPELINES`` on the training nodes, choosing the
hyper-parameters of those with a grid with ``GridSearchCV`` (3 folds) over the
training nodes only (the others run at their defaults), and scores it on the
test nodes. The feature-free rows (label propagation, structural features) and
the raw-feature row do not depend on eps. Mechanisms
keep their parameters fixed inside a search (an integer ``random_state``), so a
search spends one budget; the epsilon recorded is ``privacy_report``'s total,
searches included. Nothing is selected on test labels.

It also measures where the signal goes (``SIGNALS``, seed 0): the Fisher ratio
(between-class over within-class variance, on the training nodes) of the
propagated features, for the raw features and for the propagated private
reports at each eps.

The method names are the pipelines' names, the split is ``"50/25/25"`` and the
grid value is ``eps`` (none for the rows without a budget).
"""

import functools
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from skldp.experiments import Grid, Method, Study, default_split
from skldp.experiments._summary import save_figure

from .common import run_on_split
from .label_scarce import paired_difference
from .lpgnn import PAPER_OPTIONS
from .pages import command_block, page_then_figure
from .private_features import RGNN_CONFIG, binary_features, private_input

__all__ = ["honest_utility_study", "HonestRun", "PIPELINES", "SIGNALS", "DATASETS", "EPS",
           "SPLIT", "fisher_ratio", "verdict_table", "write_page"]

DATASETS = ("cora", "citeseer", "facebook", "german", "lastfm_asia_nofeatures", "twitch_ENGB",
            "wiki_chameleon")
EPS = [0.5, 1.0, 2.0, 4.0, 8.0]
SPLIT = "50/25/25"
STRUCTURE_ONLY = ("lastfm_asia_nofeatures",)


def _mechanism(kind, eps, seed, fr=(0, 1)):
    from skldp.mechanisms import HDSMechanism, MultiBitMechanism, SetValuedMechanism
    rs = 1000 + seed        # one collection per seed, fixed inside the search
    if kind == "hds":
        return HDSMechanism(eps, k="auto", feature_range=fr, random_state=rs)
    if kind == "set":
        return SetValuedMechanism(eps, ell=1, random_state=rs)
    return MultiBitMechanism(eps, feature_range=fr, random_state=rs)


def _ppr():
    from skldp.propagation import PPRPropagation
    # conjugate gradients, as in the recorded runs (the Chebyshev default gives the same
    # output within tol)
    return PPRPropagation(solver="cg")


def _head(seed):
    from skldp.models import MLPHead
    return MLPHead(random_state=seed)


def _raw(eps, s, fr, name):
    return Pipeline([("ppr", _ppr()), ("clf", _head(s))]), {"ppr__alpha": [0.1, 0.2]}


def _label_propagation(eps, s, fr, name):
    from skldp.baselines import LabelPropagationClassifier
    return LabelPropagationClassifier(), {"alpha": [0.5, 0.8, 0.9, 0.99]}


def _structural(eps, s, fr, name):
    from skldp.baselines import StructuralFeatures
    return Pipeline([("st", StructuralFeatures(random_state=s)), ("clf", _head(s))]), {}


def _mechanism_ppr(kind, eps, s, fr, name):
    step = {"hds": "hds", "mb": "mb", "set": "set"}[kind]
    return (Pipeline([(step, _mechanism(kind, eps, s, fr)), ("ppr", _ppr()),
                      ("clf", _head(s))]), {"ppr__alpha": [0.1, 0.2]})


def _union(eps, s, fr, name):
    from skldp.baselines import GraphFeatureUnion, StructuralFeatures
    return Pipeline([("union", GraphFeatureUnion([
        ("structure", StructuralFeatures(random_state=s)),
        ("private", Pipeline([("hds", _mechanism("hds", eps, s, fr)), ("ppr", _ppr())]))])),
        ("clf", _head(s))]), {}


def _correct_and_smooth(kind, eps, s, fr, name):
    from skldp.baselines import CorrectAndSmooth
    return CorrectAndSmooth(Pipeline([(kind, _mechanism(kind, eps, s, fr)), ("ppr", _ppr()),
                                      ("clf", _head(s))])), {}


def _lpgnn(options, eps, s, fr, name):
    # the training labels in the clear like every other row (eps_y = inf); one fit per run
    from skldp.models import LPGNNClassifier
    return Pipeline([("mb", _mechanism("mb", eps, s, fr)),
                     ("clf", LPGNNClassifier(eps_y=float("inf"), random_state=s,
                                             **options))]), {}


def _rgnn(eps, s, fr, name):
    """Grouping (public, per user) -> GRR-FS with m = 1 -> frequency reconstruction -> RGNN.

    m = 1: for binary columns the variance of a coordinate's estimate under a total budget
    eps, (d / m) e^(eps/m) / (e^(eps/m) - 1)^2, grows with m, so one feature per user is best.
    """
    from skldp.mechanisms import FeatureGrouper, GRRFSMechanism
    from skldp.models import RGNNClassifier
    from skldp.reconstruction import FrequencyReconstructor
    group, hops, clusters = RGNN_CONFIG[name]
    return Pipeline([
        ("group", FeatureGrouper(group)),
        ("grr", GRRFSMechanism(eps, m=1, domain_sizes=2, random_state=1000 + s)),
        ("rec", FrequencyReconstructor(eps, m=1, domain_sizes=2, hops=hops)),
        ("clf", RGNNClassifier(eps_y=float("inf"), hops_y=hops, n_clusters=clusters,
                               random_state=s))]), {}


def _solitude(eps, s, fr, name):
    # Solitude's model with the settings of its study; the graph and the labels in the clear
    from skldp.models import SolitudeClassifier
    return Pipeline([("mb", _mechanism("mb", eps, s, fr)),
                     ("clf", SolitudeClassifier("gcn", epochs=300, patience=50, feature_steps=4,
                                                label_steps=0, lambda_fro=1e-4, lambda_l1=1e-2,
                                                lr_adj=0.01, hidden_size=16, activation="selu",
                                                dropout=0.5, lr=0.01, weight_decay=5e-4,
                                                random_state=s))]), {}


RAW = "raw features (PPR -> MLP)"   # the raw-feature ceiling
# name -> (eps-dependent?, factory(eps, seed, feature_range, dataset) -> (estimator, grid));
# the order is the tables' order
PIPELINES = {
    RAW: (False, _raw),
    "feature-free: label propagation": (False, _label_propagation),
    "feature-free: structural -> MLP": (False, _structural),
    "PrivGE: HDS(k=auto) -> PPR -> MLP": (True, functools.partial(_mechanism_ppr, "hds")),
    "multi-bit -> PPR -> MLP": (True, functools.partial(_mechanism_ppr, "mb")),
    "hybrid: [structural, HDS -> PPR] -> MLP": (True, _union),
    "hybrid: C&S around PrivGE": (True, functools.partial(_correct_and_smooth, "hds")),
    # LPGNN's own model in the configuration of the papers (mean KProp)
    "LPGNN: multi-bit -> KProp GNN": (True, functools.partial(_lpgnn, PAPER_OPTIONS)),
    # the same at the classifier's defaults (the authors' code: symmetric KProp, the loss on
    # propagated predictions), without the centring their code does not do
    "LPGNN, authors' code (defaults): multi-bit -> KProp GNN": (
        True, functools.partial(_lpgnn, {"center_features": False})),
    "RGNN: grouped GRR-FS(m=1) -> reconstruction -> RGNN": (True, _rgnn),
    "Solitude: multi-bit -> Solitude GCN": (True, _solitude),
    "set-valued(ell=1) -> PPR -> MLP": (True, functools.partial(_mechanism_ppr, "set")),
    "hybrid: C&S around set-valued": (True, functools.partial(_correct_and_smooth, "set")),
}
BINARY_ONLY = ("RGNN: grouped GRR-FS(m=1) -> reconstruction -> RGNN",
               "set-valued(ell=1) -> PPR -> MLP", "hybrid: C&S around set-valued")
# the Fisher-ratio measurements (seed 0): HDS reports, and set-valued reports
SIGNALS = ("signal", "signal_set")


def fisher_ratio(Z, y):
    """Between-class over within-class variance (traces) of the rows ``Z`` with labels ``y``.

    Parameters
    ----------
    Z : ndarray or sparse matrix of shape (n_rows, n_features)
    y : ndarray of shape (n_rows,)

    Returns
    -------
    ratio : float
    """
    Z = Z.toarray() if hasattr(Z, "toarray") else np.asarray(Z)
    mu = Z.mean(axis=0)
    between = within = 0.0
    for c in np.unique(y):
        Zc = Z[y == c]
        between += len(Zc) * np.sum((Zc.mean(axis=0) - mu) ** 2)
        within += np.sum((Zc - Zc.mean(axis=0)) ** 2)
    return float(between / within)


def _propagated_ratio(mechanism, G, y, tr, step="hds"):
    steps = [("ppr", _ppr())] if mechanism is None else [(step, mechanism), ("ppr", _ppr())]
    Z = Pipeline(steps).fit(G[tr]).transform(G[tr])
    return fisher_ratio(Z.features[Z.rows], y[tr])


def _signal(eps, G, y, tr):
    """HDS reports as used (k = "auto"), and the same k-of-d sampling without noise (eps =
    inf, same k): the loss of reporting k of d coordinates apart from the noise's."""
    from skldp.mechanisms import HDSMechanism, hds_optimal_k
    if eps is None:
        return {"fisher": _propagated_ratio(None, G, y, tr)}
    k = hds_optimal_k(eps, G.shape[1])
    sampling = HDSMechanism(float("inf"), k=k, feature_range=(0, 1), random_state=1000)
    return {"fisher": _propagated_ratio(_mechanism("hds", eps, 0), G, y, tr),
            "fisher_sampling_only": _propagated_ratio(sampling, G, y, tr), "k": float(k)}


def _signal_set(eps, G, y, tr):
    """Set-valued reports, and one item per user without noise (eps = None: inf)."""
    from skldp.mechanisms import SetValuedMechanism
    mech = SetValuedMechanism(float("inf") if eps is None else eps, ell=1, random_state=1000)
    ratio = _propagated_ratio(mech, G, y, tr, step="set")
    return {"fisher": ratio, "oracle_grr": float(mech.oracle_ == "grr")}


class HonestRun(BaseEstimator):
    """One run of the honest-utility study (``run(G, y, masks)`` gives its metrics).

    Parameters
    ----------
    pipeline : str, default="feature-free: label propagation"
        A key of ``PIPELINES`` or one of ``SIGNALS``.
    eps : float or None, default=None
        Feature budget per user (the pipelines that depend on it; for ``SIGNALS``
        ``None`` measures the reports without noise).
    dataset : str, default="cora"
        The dataset (German credit's public bounds, RGNN's settings).
    random_state : int, default=0
        Seed of the collections and the models.
    """

    def __init__(self, pipeline="feature-free: label propagation", eps=None, dataset="cora",
                 random_state=0):
        self.pipeline = pipeline
        self.eps = eps
        self.dataset = dataset
        self.random_state = random_state

    def run(self, G, y, masks):
        """Search on the training nodes (3 folds), score the test and validation nodes.

        ``G`` is the whole graph, ``masks`` its train, validation and test masks; the
        metrics are those of the test nodes unless named otherwise (``val_accuracy``:
        the validation nodes').
        """
        tr, va, te = masks
        y = np.asarray(y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if self.pipeline in SIGNALS:
                measure = _signal if self.pipeline == "signal" else _signal_set
                return measure(self.eps, G, y, tr)
            if self.pipeline not in PIPELINES:
                raise ValueError(f"pipeline must be one of {list(PIPELINES) + list(SIGNALS)}, "
                                 f"got {self.pipeline!r}.")
            by_eps, make = PIPELINES[self.pipeline]
            if by_eps and self.eps is None:
                raise ValueError(f"pipeline {self.pipeline!r} needs eps.")
            clear = self.pipeline.startswith(("raw", "feature-free"))
            base, fr = (G, (0, 1)) if clear else private_input(G, self.dataset)
            est, grid = make(self.eps, self.random_state, fr, self.dataset)
            model = GridSearchCV(est, grid, cv=3) if grid else est
            model.fit(base[tr], y[tr])
            out = {"accuracy": float(model.score(base[te], y[te]))}
            # the validation nodes are used for nothing else: the verdict picks its
            # cells on them, never on the test nodes
            out["val_accuracy"] = float(model.score(base[va], y[va]))
        self.model_ = model
        out.update({f"best_{k}": float(v)
                    for k, v in getattr(model, "best_params_", {}).items()})
        return out


def _make(pipeline, ctx):
    return HonestRun(pipeline, dataset=ctx.dataset, random_state=ctx.seed)


def _role(name):
    return ("raw-features" if name.startswith("raw") else
            "feature-free" if name.startswith("feature-free") else "private")


def honest_utility_study(datasets=DATASETS, seeds=range(5), eps=EPS):
    """The honest-utility sweep, and its Fisher-ratio measurements (seed 0).

    Parameters
    ----------
    datasets : sequence of str, default=DATASETS
        Datasets (Facebook, Twitch-EN and chameleon need ``SKLDP_DATASETS_DIR``).
    seeds : sequence of int, default=range(5)
        Seeds of the split, the collections and the models.
    eps : sequence of float, default=EPS
        Feature budgets of the private pipelines.

    Returns
    -------
    study : Study
    """
    datasets = list(datasets)
    featured = [d for d in datasets if d not in STRUCTURE_ONLY]
    methods = {}
    for name, (by_eps, _) in PIPELINES.items():
        role = _role(name)
        on = (datasets if role == "feature-free" else
              [d for d in featured if name not in BINARY_ONLY or binary_features(d)])
        if on:
            methods[name] = Method(functools.partial(_make, name),
                                   [Grid({"eps": list(eps)} if by_eps else {}, datasets=on)],
                                   role=role, evaluate=run_on_split, label=name)
    measured = [d for d in featured if d != "german"]   # German's columns are not 0/1
    if measured:
        for name in SIGNALS:
            methods[name] = Method(functools.partial(_make, name),
                                   [Grid({}, datasets=measured, seeds=[0]),
                                    Grid({"eps": list(eps)}, datasets=measured, seeds=[0])],
                                   role="baseline", evaluate=run_on_split)
    return Study(
        name="honest_utility", datasets=datasets, seeds=seeds, methods=methods,
        splits={SPLIT: default_split},
        title="Honest utility — private pipelines against the best feature-free model",
        description="Test accuracy on random 50/25/25 splits; the hyper-parameters of the "
                    "pipelines with a grid searched with 3-fold GridSearchCV on the training "
                    "nodes only, the others at their defaults.",
        quick={"datasets": ["cora"], "seeds": [0],
               "grid": {n: [Grid({"eps": [1.0]})] for n in methods
                        if n in SIGNALS or PIPELINES[n][0]}},
        report=verdict_table,
    )


def _accuracy(records):
    """``{(dataset, pipeline, eps): [accuracy, ...]}`` of the accuracy runs."""
    out = {}
    for r in records:
        if "accuracy" in r.get("metrics", {}):
            key = (r["dataset"], r["method"], r["params"].get("eps"))
            out.setdefault(key, []).append(r["metrics"]["accuracy"])
    return out


def _datasets(records):
    return sorted({r["dataset"] for r in records if "accuracy" in r.get("metrics", {})})


def _eps(records):
    return sorted({r["params"]["eps"] for r in records
                   if r["method"] in PIPELINES and r["params"].get("eps") is not None})


def _cells(acc, name, eps_all):
    """Accuracies of a pipeline at each eps (the rows without a budget: the same at each)."""
    by_eps = PIPELINES[name][0]
    return {e: acc.get((name, e if by_eps else None), []) for e in eps_all}


def _by_seed(records, ds):
    """``{(pipeline, eps): {seed: (val_accuracy, accuracy)}}`` of one dataset's runs that
    hold both scores."""
    out = {}
    for r in records:
        m = r.get("metrics", {})
        if r["dataset"] == ds and "accuracy" in m and "val_accuracy" in m:
            out.setdefault((r["method"], r["params"].get("eps")), {})[r["seed"]] = (
                m["val_accuracy"], m["accuracy"])
    return out


def _pick(cells, candidates):
    """The candidate with the best mean validation accuracy (the first of ties), as
    ``(pipeline, eps, {seed: test accuracy})``; ``None`` if none was run."""
    got = [c for c in candidates if cells.get(c)]
    if not got:
        return None
    best = max(got, key=lambda c: np.mean([va for va, _ in cells[c].values()]))
    return (*best, {s: acc for s, (_, acc) in cells[best].items()})


def verdict_table(records):
    """Per dataset: the best feature-free row against the best private cell at eps <= 2.

    Both cells are picked on their mean validation accuracy and compared on their test
    accuracy: SE is that of the difference of two independent means (each variance with
    the sample correction); the paired SE that of the differences by seed (the same
    split). Runs without a validation score are not candidates.
    """
    eps_all = _eps(records)
    lines = ["| dataset | best feature-free | best private, eps <= 2 | difference | SE | "
             "paired SE | raw-feature ceiling |", "|---|---|---|---|---|---|---|"]
    acc = _accuracy(records)
    for ds in _datasets(records):
        cells = _by_seed(records, ds)
        raw = acc.get((ds, RAW, None))
        ceiling = f"{100 * np.mean(raw):.1f} (n={len(raw)})" if raw else "–"
        free = _pick(cells, [(n, None) for n in PIPELINES if n.startswith("feature-free")])
        private = _pick(cells, [(n, e) for n in PIPELINES if PIPELINES[n][0]
                                for e in eps_all if e <= 2])
        if free and private:
            fa, pa = list(free[2].values()), list(private[2].values())
            m, se = np.mean(pa) - np.mean(fa), np.sqrt(np.var(pa, ddof=1) / len(pa) +
                                                       np.var(fa, ddof=1) / len(fa))
            _, paired_se, _ = paired_difference(private[2], free[2])
            lines.append(f"| {ds} | {free[0]}: {100 * np.mean(fa):.1f} (n={len(fa)}) | "
                         f"{private[0]} at eps = {private[1]:g}: {100 * np.mean(pa):.1f} "
                         f"(n={len(pa)}) | {100 * m:+.1f} | {100 * se:.1f} | "
                         f"{100 * paired_se:.1f} | {ceiling} |")
    lines += ["", "(Both cells are picked on their mean accuracy on the validation nodes, "
              "which no run trains or searches on: the best feature-free row over the "
              "feature-free pipelines, the best private cell over pipelines and eps <= 2; "
              "the table gives their test accuracy. The feature-free rows have no eps. SE: "
              "of the difference of two independent means; paired SE: of the differences "
              "by seed (the same splits); both with the sample correction. The ceiling: "
              f"{RAW}, the same splits, no privacy. Test accuracy, %, mean over the seeds "
              "given as n.)"]
    return "\n".join(lines)


def _fmt(v, spec=".3g"):
    return "–" if v is None else format(v, spec)


def _tables(records):
    """Every pipeline at every eps, and the Fisher ratios, one section per dataset."""
    eps_all = _eps(records)
    acc = _accuracy(records)
    lines = []
    for ds in _datasets(records):
        lines += [f"### {ds}", "",
                  "| pipeline | " + " | ".join(f"eps = {e:g}" for e in eps_all) + " |",
                  "|---|" + "---|" * len(eps_all)]
        for name in PIPELINES:
            cells = _cells({(m, e): v for (d, m, e), v in acc.items() if d == ds}, name,
                           eps_all)
            if any(cells.values()):
                lines.append(f"| {name} | " + " | ".join(
                    f"{100 * np.mean(a):.1f} ± {100 * np.std(a):.1f} (n={len(a)})" if a else "–"
                    for a in cells.values()) + " |")
        lines.append("")
        sig = {r["params"].get("eps"): r["metrics"] for r in records
               if r["method"] == "signal" and r["dataset"] == ds}
        sset = {r["params"].get("eps"): r["metrics"] for r in records
                if r["method"] == "signal_set" and r["dataset"] == ds}
        if sig:
            raw = sig[None]["fisher"] if None in sig else float("nan")
            one = sset[None]["fisher"] if None in sset else float("nan")
            lines += ["Where the signal goes (Fisher ratio, between / within class variance "
                      "of the propagated features on the training nodes, seed 0; raw features "
                      f"{raw:.3g}; one item per user without noise {one:.3g}):", "",
                      "| eps | k (auto) | HDS reports | same k-of-d sampling, no noise | "
                      "set-valued reports (oracle) |", "|---|---|---|---|---|"]
            for e in eps_all:
                if e not in sig:
                    continue
                k = sig[e].get("k")
                s = sset.get(e)
                oracle = (f"{s['fisher']:.3g} ({'grr' if s['oracle_grr'] else 'oue'})"
                          if s else "–")
                lines.append(f"| {e:g} | {'–' if k is None else f'{k:g}'} | "
                             f"{sig[e]['fisher']:.3g} | "
                             f"{sig[e].get('fisher_sampling_only', float('nan')):.3g} | "
                             f"{oracle} |")
            lines.append("")
    return "\n".join(lines)


def _figure(records, path, then=None):
    """The accuracy figure, replaced whole; ``then()`` before the rename (``save_figure``)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    eps_all = _eps(records)
    datasets = _datasets(records)
    acc = _accuracy(records)
    fig, axes = plt.subplots(1, len(datasets), figsize=(4 * len(datasets), 3.4), squeeze=False)
    for ax, ds in zip(axes[0], datasets, strict=True):
        for name, (by_eps, _) in PIPELINES.items():
            if by_eps:
                ax.plot(eps_all, [np.mean(acc.get((ds, name, e)) or [np.nan]) for e in eps_all],
                        marker="o", label=name)
            elif acc.get((ds, name, None)):
                ax.axhline(np.mean(acc[(ds, name, None)]),
                           ls="--" if "feature-free" in name else ":",
                           color="k" if "label propagation" in name else "grey", label=name)
        ax.set_xscale("log")
        ax.minorticks_off()
        ax.set_xticks(eps_all, [f"{e:g}" for e in eps_all])
        ax.set_title(ds)
        ax.set_xlabel("eps per user")
    axes[0][0].set_ylabel("test accuracy")
    axes[0][-1].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    return save_figure(fig, path, then, bbox_inches=None)


def write_page(records, pages_dir, runs_file=None, partial=None):
    """This study's page and figure from its runs (``studies.write_page``)."""
    pages_dir = Path(pages_dir)
    seeds = max((r["seed"] for r in records), default=-1) + 1
    command = ("export OMP_NUM_THREADS=1 SKLDP_DATASETS_DIR=<datasets folder>\n"
               f"python -m skldp reproduce honest_utility --seeds {seeds}")
    blocks = {
        "verdict": verdict_table(records),
        "figure": "![Test accuracy against eps per dataset](honest_utility.png)",
        "command": command_block("honest_utility", len(records), command,
                                 runs_file=runs_file,
                                 partial=partial),
        "tables": _tables(records)}
    draw = (None if not records else
            lambda then: _figure(records, pages_dir / "honest_utility.png", then))
    return page_then_figure(pages_dir / "honest_utility.md", blocks, draw)


make_study = honest_utility_study   # the registry's name (studies.get_study)
