"""The LPGNN study (Sajadmanesh & Gatica-Perez, CCS 2021): Table 2 and the LPGNN pipeline.

Part ``table2``: a two-layer GCN (hidden 32, ReLU, dropout 0.5, Adam lr 0.01,
weight decay 5e-4, at most 500 epochs, early stopping on the validation loss with
patience 20) on the Planetoid public split of Cora and CiteSeer, with the features
perturbed by LM, PM or PGC (1-bit) at ``eps`` per feature in {1, 5, 9} (the
paper's §5), or RAW features. Part ``lpgnn``: multi-bit features (``eps_x``) ->
``LPGNNClassifier`` (SAGE, KProp of features and noisy labels, label RR at
``eps_y``, forward correction, early stopping on noisy validation labels) on a
random 50/25/25 split. Both parts also run the graph-only baseline: the same
model on 64 i.i.d. Gaussian features that carry no information.

The runs are those of ``docs/results/lpgnn_runs.jsonl``: the same keys (method,
split ``planetoid`` or ``random-50/25/25``, seed, ``part`` and the budgets), so a
recorded run is not run again.
"""

import functools
import warnings

import numpy as np
from sklearn.base import BaseEstimator

from skldp.experiments import Grid, Method, Study, default_split

from .common import run_on_split
from .link_prediction import as_recorded

__all__ = ["lpgnn_study", "LPGNNRun", "planetoid", "TABLE2_EPS", "LPGNN_EPS_X",
           "LPGNN_EPS_Y", "CONFIG"]

INF = float("inf")
TABLE2_EPS = [1, 5, 9]
TABLE2_METHODS = ("RAW", "GRAPH-ONLY", "LM", "PM", "PGC")
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
SPLITS = {"table2": "planetoid", "lpgnn": "random-50/25/25"}


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
# The authors' code (the classifier's defaults since then): the LPGNN and RGNN studies'
# LPGNN-AUTHORS rows and the Solitude study's lpgnn_authors rows, run beside the others.
AUTHORS_OPTIONS = {"normalization": "sym", "propagate_predictions": True}


def lpgnn_classifier(eps_y, n_classes, x_steps, y_steps, epochs, seed, **options):
    """The LPGNN classifier of the study's pipeline part (SAGE, 2 layers, hidden 16, SELU,
    dropout 0.5, Adam lr 0.01, weight decay 1e-4, early stopping with patience 20).

    ``options`` are further ``LPGNNClassifier`` parameters; they replace the study's
    ``PAPER_OPTIONS`` (e.g. ``normalization="sym"``).
    """
    from skldp.models import LPGNNClassifier
    return LPGNNClassifier(eps_y=float(eps_y), classes=np.arange(n_classes), x_steps=x_steps,
                           y_steps=y_steps, backbone="sage", hidden_size=16, activation="selu",
                           dropout=0.5, lr=0.01, weight_decay=1e-4, epochs=epochs, patience=20,
                           device="cpu", random_state=seed, **{**PAPER_OPTIONS, **options})


class LPGNNRun(BaseEstimator):
    """One run of the LPGNN study (``run(G, y, masks)`` gives the test accuracy).

    Parameters
    ----------
    kind : {"RAW", "GRAPH-ONLY", "LM", "PM", "PGC", "LPGNN", "LPGNN-AUTHORS"}, default="LPGNN"
        The method. ``LPGNN`` is the papers' description (``PAPER_OPTIONS``),
        ``LPGNN-AUTHORS`` the authors' code (``LPGNNClassifier``'s defaults:
        symmetric KProp, propagated predictions in the loss).
    part : {"table2", "lpgnn"}, default="lpgnn"
        ``table2``: the GCN of the paper's Table 2 (``eps`` per feature);
        ``lpgnn``: LPGNN with multi-bit features (``eps_x``) and label RR (``eps_y``).
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
        if self.kind not in ("LPGNN", "LPGNN-AUTHORS", "GRAPH-ONLY"):
            raise ValueError(f"part lpgnn has the methods LPGNN, LPGNN-AUTHORS and GRAPH-ONLY, "
                             f"not {self.kind!r}.")
        tr, va, te = masks
        seed = self.random_state
        clf = lpgnn_classifier(self.eps_y, int(y.max()) + 1, self.x_steps, self.y_steps,
                               self.epochs, seed,
                               **(AUTHORS_OPTIONS if self.kind == "LPGNN-AUTHORS" else {}))
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

        Parameters
        ----------
        G : GraphData
            The whole graph.
        y : ndarray of shape (n_nodes,)
            Labels.
        masks : tuple of three boolean ndarrays
            Train, validation and test masks.

        Returns
        -------
        metrics : dict of str -> float
            ``accuracy`` (test) and, for part ``lpgnn``, ``label_agreement``.
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
          "LM": "GCN on LM reports", "PM": "GCN on PM reports", "PGC": "GCN on PGC reports",
          "LPGNN": "LPGNN (multi-bit, label RR)",
          "LPGNN-AUTHORS": "LPGNN, the authors' code (multi-bit, label RR)"}
ROLES = {"RAW": "raw-features", "GRAPH-ONLY": "feature-free"}


def lpgnn_study(datasets=("cora", "citeseer", "facebook"), seeds=range(5),
                parts=("table2", "lpgnn")):
    """The LPGNN sweep: Table 2 on the Planetoid split, LPGNN on a random split.

    Parameters
    ----------
    datasets : sequence of str, default=("cora", "citeseer", "facebook")
        Datasets (Table 2 runs on Cora and CiteSeer only).
    seeds : sequence of int, default=range(5)
        Seeds of the collections, the models and the random split.
    parts : sequence of {"table2", "lpgnn"}, default=both
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
            grids.setdefault(kind, []).append(
                Grid({"part": ["table2"], "eps": eps}, datasets=TABLE2_DATASETS,
                     splits=[SPLITS["table2"]]))
    if "lpgnn" in parts:
        grids.setdefault("GRAPH-ONLY", []).append(
            Grid({"part": ["lpgnn"], "eps_x": [None], "eps_y": LPGNN_EPS_Y},
                 splits=[SPLITS["lpgnn"]]))
        for kind in ("LPGNN", "LPGNN-AUTHORS"):
            grids[kind] = [Grid({"part": ["lpgnn"], "eps_x": LPGNN_EPS_X,
                                 "eps_y": LPGNN_EPS_Y}, splits=[SPLITS["lpgnn"]])]
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
