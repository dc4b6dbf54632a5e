"""The LPGNN study (Sajadmanesh & Gatica-Perez, CCS 2021): Table 2 and the LPGNN pipeline.

Part ``table2``: a two-layer GCN (hidden 32, ReLU, dropout 0.5, Adam lr 0.01,
weight decay 5e-4, at most 500 epochs, early stopping on the validation loss with
patience 20) on the Planetoid public split of Cora and CiteSeer, with the features
perturbed by LM, PM or PGC (1-bit) at ``eps`` per feature in {1, 5, 9} (the
paper's §5), or RAW features. Part ``lpgnn``: multi-bit features (``eps_x``) ->
``LPGNNClassifier`` (SAGE, KProp of features and noisy labels, label RR at
``eps_y``, forward correction, early stopping on noisy validation labels) on a
random 50/25/25 split, with the papers' description (``LPGNN``) and the authors'
code (``LPGNN-AUTHORS``). Part ``bench``: Cora at the settings of the speed
benchmark against the authors' code (``BENCH``), each of the authors' two changes
alone, both, and both with the KProp output centred (``LPGNN-DEFAULTS``). Both main
parts also run two feature-free baselines: the same model on 64 i.i.d. Gaussian
features that carry no information (``GRAPH-ONLY``),
and label propagation with ``alpha`` chosen on the (randomized) validation labels
(``LABEL-PROPAGATION``).

The page ``docs/results/lpgnn.md`` is written from the runs by :func:`write_page`.
"""

import functools
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator

from skldp.experiments import Grid, Method, Study, default_split

from .common import run_on_split
from .link_prediction import as_recorded

__all__ = ["lpgnn_study", "LPGNNRun", "planetoid", "TABLE2_EPS", "LPGNN_EPS_X",
           "LPGNN_EPS_Y", "CONFIG", "BENCH", "OPTIONS", "PAPER_OPTIONS", "AUTHORS_OPTIONS",
           "label_propagation", "write_page", "figure"]

INF = float("inf")
TABLE2_EPS = [1, 5, 9]
TABLE2_METHODS = ("RAW", "GRAPH-ONLY", "LABEL-PROPAGATION", "LM", "PM", "PGC")
TABLE2_DATASETS = ("cora", "citeseer")
LPGNN_EPS_X = [0.1, 1.0, 2.0, INF]
LPGNN_EPS_Y = [1.0, 2.0, 3.0, INF]
# KProp steps, fixed per dataset (no tuning on clean labels): Kx large on the sparse
# citation graphs, small on the dense Facebook graph; Ky = 2 everywhere. Training is
# capped at 200 epochs (100 on Facebook, to fit the CPU budget).
CONFIG = {"cora": dict(x_steps=16, y_steps=2, epochs=200),
          "citeseer": dict(x_steps=16, y_steps=2, epochs=200),
          "facebook": dict(x_steps=4, y_steps=2, epochs=100)}
N_RANDOM_FEATURES = 64
SPLITS = {"table2": "planetoid", "lpgnn": "random-50/25/25", "bench": "random-50/25/25"}
# Part "bench": the settings of benchmarks/bench_official.py (the speed benchmark against
# the authors' code) on Cora: K_x = 2, K_y = 8, weight decay 1e-3, 500 epochs, the best
# validated epoch kept (no early stop).
BENCH = dict(x_steps=2, y_steps=8, epochs=500, weight_decay=1e-3, patience=501)


@functools.lru_cache(maxsize=8)
def _planetoid_masks(dataset):
    from skldp.datasets import load_dataset
    from skldp.model_selection import planetoid_split
    return planetoid_split(load_dataset(dataset))


def planetoid(y, seed, dataset):
    """The Planetoid public split of ``dataset`` (the same for every seed).

    Parameters
    ----------
    y : ndarray of shape (n_nodes,)
        Labels (unused).
    seed : int
        The run's seed (unused: the split is public and fixed).
    dataset : str
        Dataset name (Cora, CiteSeer or PubMed).

    Returns
    -------
    masks : tuple of three boolean ndarrays
        Train, validation and test masks.
    """
    return _planetoid_masks(dataset)


def random_features(G, seed):
    """64 i.i.d. standard normal features per node (no information).

    Parameters
    ----------
    G : GraphData
        The graph.
    seed : int
        Seed of the features.

    Returns
    -------
    G : GraphData
    """
    rng = np.random.default_rng(10_000 + seed)
    return G.with_features(rng.normal(size=(G.n_nodes, N_RANDOM_FEATURES)), source="public")


# LPGNNClassifier's configuration in the recorded runs of the studies (LPGNN's, RGNN's,
# Solitude's, the honest-utility comparison): the papers' description, mean KProp and the
# loss on the model's own outputs. The classifier's defaults follow the authors' code since
# November 2026; the studies keep this one, so that their recorded runs stay theirs.
PAPER_OPTIONS = {"normalization": "rw", "propagate_predictions": False}
# The authors' code (the classifier's defaults since then, but for the centring of the
# KProp output, which their code does not do): the LPGNN and RGNN studies' LPGNN-AUTHORS
# rows and the Solitude study's lpgnn_authors rows, run beside the others.
AUTHORS_OPTIONS = {"normalization": "sym", "propagate_predictions": True,
                   "center_features": False}
# Each LPGNN method's options: the papers' description, each of the authors' two changes
# alone (part "bench" only), both, and (part "bench" only) both with the KProp output
# centred: the classifier's defaults, which tell the authors' changes from the centring.
OPTIONS = {"LPGNN": {}, "LPGNN-SYM": {"normalization": "sym"},
           "LPGNN-PROPAGATED": {"propagate_predictions": True},
           "LPGNN-AUTHORS": AUTHORS_OPTIONS,
           "LPGNN-DEFAULTS": {**AUTHORS_OPTIONS, "center_features": True}}


def lpgnn_classifier(eps_y, n_classes, x_steps, y_steps, epochs, seed, **options):
    """The LPGNN classifier of the study's pipeline part (SAGE, 2 layers, hidden 16, SELU,
    dropout 0.5, Adam lr 0.01, weight decay 1e-4, early stopping with patience 20).

    ``options`` are further ``LPGNNClassifier`` parameters; they replace the study's
    ``PAPER_OPTIONS`` and settings (e.g. ``normalization="sym"``, ``weight_decay=1e-3``).
    """
    from skldp.models import LPGNNClassifier
    settings = dict(backbone="sage", hidden_size=16, activation="selu", dropout=0.5, lr=0.01,
                    weight_decay=1e-4, patience=20, device="cpu", **PAPER_OPTIONS)
    return LPGNNClassifier(eps_y=float(eps_y), classes=np.arange(n_classes), x_steps=x_steps,
                           y_steps=y_steps, epochs=epochs, random_state=seed,
                           **{**settings, **options})


def label_propagation(G, y, masks, eps_y, seed, sources="train"):
    """Label propagation (feature-free), ``alpha`` chosen on the validation labels.

    Its training labels are randomized at ``eps_y`` (``None`` or ``inf``: clean) and
    the validation users answer the same collection, so the choice reads no clean label.
    ``sources="fit"``: the chosen ``alpha`` then propagates the training and validation
    labels to the test nodes, the rows whose labels LPGNN propagates.

    Returns
    -------
    metrics : dict of str -> float
        ``accuracy`` (test), ``val_accuracy`` and the chosen ``alpha``.
    """
    from .private_features import candidates, fit_select
    cands = candidates("lp", eps_y=eps_y, classes=np.unique(y[y >= 0]), seed=seed,
                       lp_sources=sources)
    metrics, _ = fit_select(cands, G, y, masks)
    return {k: metrics[k] for k in ("accuracy", "val_accuracy", "alpha")}


class LPGNNRun(BaseEstimator):
    """One run of the LPGNN study (``run(G, y, masks)`` gives the test accuracy).

    Parameters
    ----------
    kind : str, default="LPGNN"
        The method: ``RAW``, ``GRAPH-ONLY``, ``LABEL-PROPAGATION``, ``LM``, ``PM``,
        ``PGC`` or one of :data:`OPTIONS`. ``LPGNN`` is the papers' description
        (``PAPER_OPTIONS``), ``LPGNN-AUTHORS`` the authors' code (``LPGNNClassifier``'s
        defaults: symmetric KProp, propagated predictions in the loss), ``LPGNN-SYM``
        and ``LPGNN-PROPAGATED`` each change alone.
    part : {"table2", "lpgnn", "bench"}, default="lpgnn"
        ``table2``: the GCN of the paper's Table 2 (``eps`` per feature);
        ``lpgnn``: LPGNN with multi-bit features (``eps_x``) and label RR (``eps_y``);
        ``bench``: the same at the settings :data:`BENCH`.
    eps : float or None, default=None
        Table 2's budget per feature.
    eps_x : float or None, default=None
        Multi-bit budget per user (``inf``: raw features; ``None``: graph-only).
    eps_y : float or None, default=None
        Label budget (``inf``: clean labels).
    x_steps, y_steps : int, default=16, 2
        KProp steps of the features and of the labels.
    epochs : int, default=200
        Most epochs of LPGNN.
    random_state : int, default=0
        Seed of the collections and the model.
    """

    def __init__(self, kind="LPGNN", part="lpgnn", eps=None, eps_x=None, eps_y=None,
                 x_steps=16, y_steps=2, epochs=200, random_state=0):
        self.kind = kind
        self.part = part
        self.eps = eps
        self.eps_x = eps_x
        self.eps_y = eps_y
        self.x_steps = x_steps
        self.y_steps = y_steps
        self.epochs = epochs
        self.random_state = random_state

    def _table2(self, G, y, masks):
        from skldp.mechanisms import LaplaceMechanism, OneBitMechanism, PiecewiseMechanism
        from skldp.models import GCNClassifier
        tr, va, te = masks
        seed, d, kind = self.random_state, G.shape[1], self.kind
        eps = as_recorded(self.eps)
        if kind == "LABEL-PROPAGATION":
            return label_propagation(G, y, masks, None, seed)
        if kind == "RAW":
            Gi = G
        elif kind == "GRAPH-ONLY":
            Gi = random_features(G, seed)
        else:
            if kind == "LM":  # Lap(Delta/eps) on every feature: per-user total d * eps
                mech = LaplaceMechanism(eps * d, feature_range=(0, 1), random_state=seed)
            elif kind == "PM":  # PM with eps on every feature (k = d)
                mech = PiecewiseMechanism(eps * d, k=d, feature_range=(0, 1),
                                          random_state=seed)
            elif kind == "PGC":  # one bit per feature, full eps per feature (the paper's)
                mech = OneBitMechanism(eps, feature_range=(0, 1), random_state=seed)
            else:
                raise ValueError(f"table2 has the methods {TABLE2_METHODS}, not {kind!r}.")
            self.mechanism_ = mech.fit(G)
            Gi = mech.transform(G)
        clf = GCNClassifier(hidden_size=32, dropout=0.5, lr=0.01, weight_decay=5e-4,
                            epochs=500, patience=20, device="cpu", random_state=seed,
                            validation=va)
        clf.fit(Gi[tr | va], y[tr | va])
        self.model_, self.n_iter_ = clf, clf.n_iter_
        return {"accuracy": float(clf.score(Gi[te], y[te]))}

    def _lpgnn(self, G, y, masks):
        from sklearn.pipeline import Pipeline

        from skldp.mechanisms import MultiBitMechanism
        if self.kind == "LABEL-PROPAGATION":   # LPGNN propagates the validation labels too
            return label_propagation(G, y, masks, self.eps_y, self.random_state, "fit")
        if self.kind not in (*OPTIONS, "GRAPH-ONLY"):
            raise ValueError(f"part {self.part} has the methods {[*OPTIONS]}, GRAPH-ONLY and "
                             f"LABEL-PROPAGATION, not {self.kind!r}.")
        tr, va, te = masks
        seed = self.random_state
        steps = dict(x_steps=self.x_steps, y_steps=self.y_steps, epochs=self.epochs)
        options = dict(OPTIONS.get(self.kind, {}))
        if self.part == "bench":
            options.update(weight_decay=BENCH["weight_decay"], patience=BENCH["patience"])
            steps = {k: BENCH[k] for k in steps}
        clf = lpgnn_classifier(self.eps_y, int(y.max()) + 1, steps["x_steps"],
                               steps["y_steps"], steps["epochs"], seed, **options)
        if self.kind == "GRAPH-ONLY":
            Gi, model = random_features(G, seed), clf
        elif float(self.eps_x) == INF:
            Gi, model = G, clf
        else:
            Gi = G
            model = Pipeline([("mb", MultiBitMechanism(float(self.eps_x), feature_range=(0, 1),
                                                       random_state=seed)),
                              ("clf", clf)])
        clf.set_params(validation=va)  # early stopping on the validation nodes
        model.fit(Gi[tr | va], y[tr | va])
        acc = float(model.score(Gi[te], y[te]))
        last = model[-1] if isinstance(model, Pipeline) else model
        self.model_, self.n_iter_ = model, last.n_iter_
        return {"accuracy": acc, "label_agreement": float(last.label_agreement_)}

    def run(self, G, y, masks):
        """Fit on the training nodes (early stopping on the validation nodes), score the test nodes.

        ``G`` is the whole graph, ``masks`` its train, validation and test masks; the
        metrics are those of the test nodes unless named otherwise.
        """
        if self.part not in SPLITS:
            raise ValueError(f"part must be one of {sorted(SPLITS)}, got {self.part!r}.")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=UserWarning, message=".*clipped.*")
            # (the runner drops this run's memoised whole-graph reports afterwards)
            if self.part == "table2":
                return self._table2(G, y, masks)
            return self._lpgnn(G, y, masks)




def _make(kind, ctx):
    return LPGNNRun(kind=kind, random_state=ctx.seed, **ctx.config)


LABELS = {"RAW": "GCN, raw features", "GRAPH-ONLY": "graph-only (random features)",
          "LABEL-PROPAGATION": "label propagation (feature-free)",
          "LM": "GCN on LM reports", "PM": "GCN on PM reports", "PGC": "GCN on PGC reports",
          "LPGNN": "LPGNN (multi-bit, label RR)",
          "LPGNN-SYM": "LPGNN, symmetric KProp only",
          "LPGNN-PROPAGATED": "LPGNN, propagated predictions only",
          "LPGNN-AUTHORS": "LPGNN, the authors' code (multi-bit, label RR)",
          "LPGNN-DEFAULTS": "LPGNN, the authors' code with centred KProp output (defaults)"}
ROLES = {"RAW": "raw-features", "GRAPH-ONLY": "feature-free",
         "LABEL-PROPAGATION": "feature-free"}


def lpgnn_study(datasets=("cora", "citeseer", "facebook"), seeds=range(5),
                parts=("table2", "lpgnn", "bench")):
    """The LPGNN sweep: Table 2 on the Planetoid split, LPGNN on a random split.

    Parameters
    ----------
    datasets : sequence of str, default=("cora", "citeseer", "facebook")
        Datasets (Table 2 runs on Cora and CiteSeer only, part ``bench`` on Cora).
    seeds : sequence of int, default=range(5)
        Seeds of the collections, the models and the random split.
    parts : sequence of {"table2", "lpgnn", "bench"}, default=all
        The parts to run.

    Returns
    -------
    study : Study
    """
    unknown = [d for d in datasets if d not in CONFIG]
    if unknown:
        raise ValueError(f"lpgnn has settings for {sorted(CONFIG)} only, not {unknown}.")
    bad = [p for p in parts if p not in SPLITS]
    if bad:
        raise ValueError(f"parts must be among {sorted(SPLITS)}, not {bad}.")
    grids = {}
    if "table2" in parts:
        for kind in TABLE2_METHODS:
            eps = TABLE2_EPS if kind in ("LM", "PM", "PGC") else [None]
            seeds_ = [0] if kind == "LABEL-PROPAGATION" else None  # deterministic
            grids.setdefault(kind, []).append(
                Grid({"part": ["table2"], "eps": eps}, datasets=TABLE2_DATASETS,
                     splits=[SPLITS["table2"]], seeds=seeds_))
    if "lpgnn" in parts:
        for kind in ("GRAPH-ONLY", "LABEL-PROPAGATION"):
            grids.setdefault(kind, []).append(
                Grid({"part": ["lpgnn"], "eps_x": [None], "eps_y": LPGNN_EPS_Y},
                     splits=[SPLITS["lpgnn"]]))
        for kind in ("LPGNN", "LPGNN-AUTHORS"):
            grids.setdefault(kind, []).append(
                Grid({"part": ["lpgnn"], "eps_x": LPGNN_EPS_X, "eps_y": LPGNN_EPS_Y},
                     splits=[SPLITS["lpgnn"]]))
    if "bench" in parts:
        for kind in OPTIONS:
            eps_x = [1.0, INF] if kind in ("LPGNN", "LPGNN-AUTHORS", "LPGNN-DEFAULTS") \
                else [1.0]
            grids.setdefault(kind, []).append(
                Grid({"part": ["bench"], "eps_x": eps_x, "eps_y": [1.0]}, datasets=["cora"],
                     splits=[SPLITS["bench"]]))
    grids = {k: g for k, g in grids.items()
             if any(p.datasets is None or set(p.datasets) & set(datasets) for p in g)}
    methods = {kind: Method(functools.partial(_make, kind), g, role=ROLES.get(kind, "private"),
                            evaluate=run_on_split, label=LABELS[kind]) for kind, g in grids.items()}
    splits = {SPLITS[p]: (planetoid if p == "table2" else default_split) for p in parts}
    # --quick: Cora, seed 0: PGC at eps = 1 (Table 2) and LPGNN at eps_x = eps_y = 1
    quick = {"PGC": [Grid({"part": ["table2"], "eps": [1]}, datasets=["cora"],
                          splits=[SPLITS["table2"]])],
             "LPGNN": [Grid({"part": ["lpgnn"], "eps_x": [1.0], "eps_y": [1.0]},
                            splits=[SPLITS["lpgnn"]])]}
    quick = {m: quick.get(m, [Grid({}, datasets=[])]) for m in methods}  # others: no run
    return Study(
        name="lpgnn", datasets=list(datasets), seeds=seeds, methods=methods, splits=splits,
        configs={d: CONFIG[d] for d in datasets},
        title="LPGNN — Table 2 (GCN on LM/PM/PGC reports) and the LPGNN pipeline",
        description="Table 2: test accuracy on the Planetoid split, eps per feature. LPGNN: "
                    "test accuracy on a random 50/25/25 split, multi-bit features at eps_x, "
                    "label RR at eps_y.",
        quick={"datasets": ["cora"], "seeds": [0], "grid": quick},
    )


make_study = lpgnn_study   # the registry's name (studies.get_study)


# ------------------------------------------------------------------------------ the page
PAGE = "lpgnn.md"
FIGURE = "fig_lpgnn.png"
DATASETS = ("cora", "citeseer", "facebook")
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
# LPGNN as a baseline in Table II of the RGNN paper (Bhaila et al., SDM 2024): SAGE backbone,
# features grouped (d = 53 / 58 / 48) with GRR-FS's budget eps per feature, label RR at eps_y
# in {3, 2, 1}: NOT this page's setting.
PAPER_RGNN_LPGNN = {
    ("citeseer", 1.0): {3: (45.6, 12.2), 2: (51.7, 1.8), 1: (46.4, 1.6)},
    ("citeseer", 0.1): {3: (53.1, 1.9), 2: (51.3, 3.4), 1: (47.3, 1.8)},
    ("cora", 1.0): {3: (55.5, 15.4), 2: (39.5, 14.2), 1: (34.1, 8.4)},
    ("cora", 0.1): {3: (68.5, 1.8), 2: (63.8, 5.4), 1: (60.6, 3.5)},
    ("facebook", 1.0): {3: (70.4, 2.1), 2: (69.3, 1.7), 1: (67.6, 1.9)},
    ("facebook", 0.1): {3: (76.3, 0.9), 2: (75.8, 0.8), 1: (73.1, 0.3)},
}
# Table III of the Solitude paper (Lin et al., IEEE TIFS 2022): LPGNN (SAGE and GCN backbones)
# at eps_x = 1 with clean labels on a graph perturbed by edge RR; its largest eps_a (8.0).
PAPER_SOLITUDE_LPGNN = {"cora": {"SAGE": (76.4, 0.8), "GCN": (76.3, 0.9)},
                        "citeseer": {"SAGE": (54.5, 1.2), "GCN": (55.6, 1.5)}}
# Table I of the RGNN paper: non-private SAGE on the original features.
PAPER_RGNN_NONPRIVATE = {"citeseer": (74.7, 1.2), "cora": (87.5, 0.9), "facebook": (94.2, 0.3)}
BENCH_ROWS = (("LPGNN", "the papers' description (`\"rw\"`, no propagated predictions)"),
              ("LPGNN-SYM", "`normalization=\"sym\"` only"),
              ("LPGNN-PROPAGATED", "`propagate_predictions=True` only"),
              ("LPGNN-AUTHORS", "both: the authors' code (the defaults but for "
                                "`center_features=False`)"),
              ("LPGNN-DEFAULTS", "both, the KProp output centred: the classifier's defaults"))


def _same(a, b):
    return a == b or (a is not None and b is not None and float(a) == float(b))


def _accs(records, dataset, method, part, **params):
    """Test accuracies (%) of the runs of ``method`` on ``dataset`` in ``part`` with ``params``."""
    return [100 * r["metrics"]["accuracy"] for r in records
            if r["dataset"] == dataset and r["method"] == method
            and r["params"]["part"] == part
            and all(_same(r["params"].get(k), v) for k, v in params.items())]


def _fmt(vals, n=True):
    if not vals:
        return "—"
    a = np.asarray(vals)
    return f"{a.mean():.1f} ± {a.std():.1f}" + (f" (n={len(a)})" if n else "")


def _mean(vals):
    return float(np.mean(vals)) if vals else float("nan")


def _eps(e):
    return "∞" if e is None or float(e) == INF else f"{float(e):g}"


def table2_block(records):
    """Table 2 of the paper beside skldp's runs, with the two feature-free rows.
    """
    lines = ["Test accuracy (%, the paper's micro-F1) on the Planetoid public split; skldp = "
             "mean ± std over seeds (n = runs), paper = mean ± std over 10 runs; Δ = skldp − "
             "paper. ε per feature (the per-user total is d·ε). Feature-free rows: the same GCN "
             "on 64 random features (no information), and label propagation (no feature; "
             "deterministic, one run).", "",
             "| dataset | method | ε | paper | skldp | Δ |", "|---|---|---|---|---|---|"]
    gaps = []
    for name in TABLE2_DATASETS:
        for method in ("LM", "PM", "PGC", "RAW"):
            for i, eps in enumerate(TABLE2_EPS):
                if method == "RAW" and i > 0:
                    continue
                pv = PAPER_TABLE2[(name, method)][i]
                ours = _accs(records, name, method, "table2",
                             **({"eps": None} if method == "RAW" else {"eps": eps}))
                delta = _mean(ours) - pv[0]
                if ours and abs(delta) > 3:
                    gaps.append(f"{name}/{method}/ε={eps} ({delta:+.1f})")
                lines.append(f"| {name} | {method} | {'∞' if method == 'RAW' else eps} | "
                             f"{pv[0]:.1f} ± {pv[1]:.1f} | {_fmt(ours)} | "
                             f"{'—' if not ours else f'{delta:+.1f}'} |")
        for method, label in (("GRAPH-ONLY", "graph-only GCN (random features)"),
                              ("LABEL-PROPAGATION", "label propagation (no feature)")):
            ours = _accs(records, name, method, "table2")
            lines.append(f"| {name} | {label} | — | — | {_fmt(ours)} | — |")
    lines += ["", "Gaps over 3 points: " + (", ".join(gaps) if gaps else "none") + "."]
    return "\n".join(lines)


def _grid(records, dataset, method, part="lpgnn"):
    out = ["| ε_x \\ ε_y | " + " | ".join(_eps(e) for e in LPGNN_EPS_Y) + " |",
           "|---|" + "---|" * len(LPGNN_EPS_Y)]
    for ex in LPGNN_EPS_X:
        cells = [_fmt(_accs(records, dataset, method, part, eps_x=ex, eps_y=ey))
                 for ey in LPGNN_EPS_Y]
        out.append(f"| {_eps(ex)} | " + " | ".join(cells) + " |")
    return out


def _floor_row(records, dataset, method, label):
    cells = [_fmt(_accs(records, dataset, method, "lpgnn", eps_y=ey)) for ey in LPGNN_EPS_Y]
    return f"| {label} | " + " | ".join(cells) + " |"


def _datasets(records, part="lpgnn"):
    return [d for d in DATASETS
            if any(r["dataset"] == d and r["params"]["part"] == part for r in records)]


def lpgnn_block(records):
    """The ε_x × ε_y tables of LPGNN (the papers' description), with the feature-free rows.
    """
    lines = []
    for name in _datasets(records):
        cfg = CONFIG[name]
        lines += [f"### {name} (K_x = {cfg['x_steps']}, K_y = {cfg['y_steps']})", ""]
        lines += _grid(records, name, "LPGNN")
        lines.append(_floor_row(records, name, "GRAPH-ONLY", "graph-only (random features)"))
        lines.append(_floor_row(records, name, "LABEL-PROPAGATION",
                                "feature-free: label propagation"))
        agree = [r["metrics"]["label_agreement"] for r in records
                 if r["dataset"] == name and r["method"] == "LPGNN"
                 and r["params"]["part"] == "lpgnn" and float(r["params"]["eps_y"]) != INF]
        lines.append("")
        if agree:
            lines += ["Share of training targets where the propagated label equals the "
                      f"node's own noisy label (finite ε_y): {100 * np.mean(agree):.1f} %.", ""]
    return "\n".join(lines)


def _count(records, better, worse, datasets, eps_x):
    """Cells (dataset, ε_x, ε_y) where the mean of ``better`` >= that of ``worse``, of all."""
    wins = total = 0
    for name in datasets:
        for ex in eps_x:
            for ey in LPGNN_EPS_Y:
                a = [_mean(_accs(records, name, m, "lpgnn", eps_y=ey,
                                 **({} if m == "LABEL-PROPAGATION" else {"eps_x": ex})))
                     for m in (better, worse)]
                if not any(np.isnan(a)):
                    total += 1
                    wins += a[0] >= a[1]
    return wins, total


def authors_block(records):
    """The same tables for the authors' configuration, and how the two compare.
    """
    names = [d for d in _datasets(records)
             if any(r["dataset"] == d and r["method"] == "LPGNN-AUTHORS" for r in records)]
    lines = []
    for name in names:
        cfg = CONFIG[name]
        lines += [f"#### {name} (K_x = {cfg['x_steps']}, K_y = {cfg['y_steps']})", ""]
        lines += _grid(records, name, "LPGNN-AUTHORS")
        lines += [_floor_row(records, name, "LABEL-PROPAGATION",
                             "feature-free: label propagation"), ""]
    wins, total = _count(records, "LPGNN-AUTHORS", "LPGNN", names, LPGNN_EPS_X)
    private = [e for e in LPGNN_EPS_X if e != INF]
    lp_a, n_a = _count(records, "LABEL-PROPAGATION", "LPGNN-AUTHORS", names, private)
    lp_p, n_p = _count(records, "LABEL-PROPAGATION", "LPGNN", names, private)
    lines += [f"- The authors' configuration is at least as accurate as the papers' "
              f"description in {wins} of the {total} cells (means over the seeds).",
              f"- Label propagation, which reads no feature, is at least as accurate as the "
              f"private pipeline (finite ε_x) in {lp_a} of the {n_a} cells with the authors' "
              f"configuration and in {lp_p} of the {n_p} with the papers' description."]
    return "\n".join(lines)


def papers_block(records):
    """The values the papers report for LPGNN in other settings, beside the nearest cell.
    """
    lines = ["| dataset | source | their setting | their value | skldp, nearest cell |",
             "|---|---|---|---|---|"]
    names = _datasets(records)
    for name in names:
        if name not in PAPER_SOLITUDE_LPGNN:
            continue
        ours = _fmt(_accs(records, name, "LPGNN", "lpgnn", eps_x=1.0, eps_y=INF))
        for backbone, (m, sd) in PAPER_SOLITUDE_LPGNN[name].items():
            lines.append(f"| {name} | Solitude, Table III | {backbone}, ε_x = 1, clean labels, "
                         f"graph perturbed by edge RR at ε_a = 8.0 | {m:.1f} ± {sd:.1f} | "
                         f"ε_x = 1, ε_y = ∞: {ours} |")
    for name in names:
        for (dn, e), vals in PAPER_RGNN_LPGNN.items():
            if dn != name:
                continue
            theirs = ", ".join(f"ε_y={k}: {v[0]:.1f} ± {v[1]:.1f}" for k, v in vals.items())
            ours = ", ".join(
                f"ε_y={ey:g}: {_fmt(_accs(records, name, 'LPGNN', 'lpgnn', eps_x=1.0, eps_y=ey))}"
                for ey in (3.0, 2.0, 1.0))
            lines.append(f"| {name} | RGNN, Table II | SAGE, features grouped to d ≈ 50 and "
                         f"GRR-style ε = {e:g} per feature, KProp steps tuned | {theirs} | "
                         f"ε_x = 1: {ours} |")
        m, sd = PAPER_RGNN_NONPRIVATE[name]
        ours = _fmt(_accs(records, name, "LPGNN", "lpgnn", eps_x=INF, eps_y=INF))
        lines.append(f"| {name} | RGNN, Table I | SAGE, original features, no privacy | "
                     f"{m:.1f} ± {sd:.1f} | ε_x = ε_y = ∞: {ours} |")
    return "\n".join(lines)


def bench_block(records):
    """Part ``bench``: each of the authors' changes alone and both, on Cora.
    """
    seeds = sorted({r["seed"] for r in records if r["params"]["part"] == "bench"})
    lines = [f"Cora, ε_y = 1, the random 50/25/25 splits of seeds {seeds[0]}-{seeds[-1]}; test "
             "accuracy in %, mean ± std over the seeds. The feature-free row is the label "
             "propagation row of the tables above (the same splits, labels randomized at "
             "ε_y = 1)." if seeds else "No run of part `bench` is recorded.", "",
             "| configuration | ε_x = 1, ε_y = 1 | raw features (no feature mechanism), ε_y = 1 |",
             "|---|---|---|"]
    for method, label in BENCH_ROWS:
        cells = [_fmt(_accs(records, "cora", method, "bench", eps_x=ex, eps_y=1.0))
                 for ex in (1.0, INF)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lp = _accs(records, "cora", "LABEL-PROPAGATION", "lpgnn", eps_y=1.0)
    lines.append(f"| feature-free: label propagation on labels randomized at ε_y = 1 | "
                 f"{_fmt(lp)} | |")
    return "\n".join(lines)


def settings_block(records):
    """The papers' description against the authors' code at the study's settings, ε_x = 1.
    """
    lines = ["| dataset, ε_y | the papers' description | the authors' code | "
             "raw features (ε_x = ∞), the authors' code | feature-free: label propagation |",
             "|---|---|---|---|---|"]
    for name in _datasets(records):
        for ey in (1.0, 3.0):
            papers, authors, raw, lp = (
                _accs(records, name, "LPGNN", "lpgnn", eps_x=1.0, eps_y=ey),
                _accs(records, name, "LPGNN-AUTHORS", "lpgnn", eps_x=1.0, eps_y=ey),
                _accs(records, name, "LPGNN-AUTHORS", "lpgnn", eps_x=INF, eps_y=ey),
                _accs(records, name, "LABEL-PROPAGATION", "lpgnn", eps_y=ey))
            a, f = _fmt(authors, n=False), _fmt(lp, n=False)
            if authors and lp:   # bold: the better of the private model and the feature-free
                if _mean(authors) > _mean(lp):
                    a = f"**{a}**"
                else:
                    f = f"**{f}**"
            lines.append(f"| {name}, {ey:g} | {_fmt(papers, n=False)} | {a} | "
                         f"{_fmt(raw, n=False)} | {f} |")
    return "\n".join(lines)


def figure(records, pages_dir):
    """``fig_lpgnn.png``: accuracy against ε, Table 2 and the LPGNN pipeline.
    """
    import matplotlib.pyplot as plt

    from .figures import curve, finish, flat_records, group, hline, mean_by
    runs = flat_records(records)
    rows = [r for r in runs if r["part"] == "table2"]
    lpg = [r for r in runs if r["part"] == "lpgnn"]
    fig, axes = plt.subplots(1, 5, figsize=(16, 3.6), sharey=False)
    for ax, ds in zip(axes[:2], TABLE2_DATASETS, strict=True):
        g = mean_by(group(rows, "method", "eps", where=lambda r, ds=ds: r["dataset"] == ds),
                    "acc")
        for m, c in [("LM", "C0"), ("PM", "C1"), ("PGC", "C2")]:
            curve(ax, {e: v for (mm, e), v in g.items() if mm == m}, color=c,
                  label=f"GCN on {m} reports")
        hline(ax, g.get(("RAW", None)), "raw", "raw features")
        hline(ax, g.get(("GRAPH-ONLY", None)), "graph", "graph only")
        lp = g.get(("LABEL-PROPAGATION", None))
        if lp is not None:
            ax.axhline(lp, ls="-.", color="gray", lw=1.2, label="label propagation (no feature)")
        ax.set_title(f"Table 2, {ds}")
    for ax, ds in zip(axes[2:], DATASETS, strict=True):
        g = mean_by(group(lpg, "method", "eps_x", "eps_y",
                          where=lambda r, ds=ds: r["dataset"] == ds), "acc")
        for i, ey in enumerate([1.0, 2.0, 3.0]):
            curve(ax, {ex: v for (m, ex, eyy), v in g.items() if m == "LPGNN" and eyy == ey},
                  color=f"C{i + 3}", label=f"LPGNN, ε_y = {ey:g}")
            curve(ax, {ex: v for (m, ex, eyy), v in g.items()
                       if m == "LPGNN-AUTHORS" and eyy == ey},
                  color=f"C{i + 3}", ls="-.", marker="s",
                  label=f"LPGNN, authors' code, ε_y = {ey:g}")
            lp = g.get(("LABEL-PROPAGATION", None, ey))
            if lp is not None:
                ax.axhline(lp, ls=":", color=f"C{i + 3}", lw=1.2,
                           label=f"label propagation (no feature), ε_y = {ey:g}")
        ax.set_title(f"LPGNN, {ds}")
    return finish(fig, axes, Path(pages_dir) / FIGURE, "test accuracy",
                  xlabel="ε (Table 2), ε_x (LPGNN)")


def write_page(records, pages_dir, runs_file=None, partial=None):
    """This study's page and figure from its runs (``studies.write_page``)."""
    from .pages import command_block, fill_blocks, with_figure
    pages_dir = Path(pages_dir)
    page = fill_blocks(pages_dir / PAGE, {
        "table": table2_block(records),
        "figure": f"![Accuracy against ε (mean over seeds)]({FIGURE})\n\n"
                  "*Accuracy against ε, mean over seeds. Table 2 panels: dashed, raw "
                  "features; dotted, the GCN on random features; dash-dot, label propagation. "
                  "LPGNN panels: solid, the papers' description; dash-dot with squares, the "
                  "authors' code; dotted, label propagation at the same ε_y (no feature).*",
        "command": command_block("lpgnn", len(records), runs_file=runs_file,
                                 partial=partial),
        "lpgnn": lpgnn_block(records),
        "authors": authors_block(records),
        "papers": papers_block(records),
        "bench": bench_block(records),
        "settings": settings_block(records),
    })
    return with_figure(page, lambda: figure(records, pages_dir))
