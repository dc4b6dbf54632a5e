"""The Solitude study (Lin et al., IEEE TIFS 2022): Table III on Cora and CiteSeer.

Every user reports their features with the multi-bit mechanism (``eps_x = 1``)
and their adjacency list with edge randomized response at ``eps_a`` (reports
kept directed); a GCN or GraphSAGE backbone is then trained on the received
graph (base), after feature KProp (LPGNN-style), or with Solitude's learned
structure denoising; graph-only is label propagation of the training labels
over the received graph, and the feature-free floor is label propagation with its
alpha chosen on the validation nodes. ``write_page`` renders
``docs/results/solitude.md`` and its figure from the runs
(``studies/runs/solitude_runs.jsonl``).
"""

from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator

from skldp.experiments import Grid, Method, Study, default_split

from .common import CollectionRun, run_on_split
from .lpgnn import AUTHORS_OPTIONS, PAPER_OPTIONS

__all__ = ["solitude_study", "SolitudeRun", "LabelPropagationRun", "largest_component_data",
           "write_page", "EPS_A", "KINDS", "METHODS"]

EPS_X = 1.0
EPS_A = [7.0, 7.3, 7.5, 7.7, 7.9, 8.0]
BACKBONES = ["gcn", "sage"]
KINDS = ("graph_only", "base", "lpgnn", "solitude", "lpgnn_authors", "raw_features",
         "solitude_authors")
# the methods of the study: the kinds of SolitudeRun and label propagation with its alpha
# chosen on the validation nodes (LabelPropagationRun)
METHODS = KINDS + ("label_propagation",)
ALPHAS = (0.5, 0.8, 0.9, 0.99)
DATASETS = ("cora", "citeseer")
# Fixed hyper-parameters (the paper grid-searches them per setting). Epochs and weight decay:
# the best by mean validation accuracy (every trained kind, Cora GCN/8 and SAGE/7, seeds 0-1)
# of 300/5e-4 (70.5 %), 500/5e-4 (70.5 %) and the authors' 500/1e-3 (70.7 %).
COMMON = dict(hidden_size=16, activation="selu", dropout=0.5, lr=0.01, weight_decay=1e-3)
EPOCHS, PATIENCE = 500, 50
K_X = 4  # feature smoothing / KProp steps (paper grid {0, 2, 4, 8}; LPGNN's default)
# lambda_1 (Frobenius) and lambda_2 (L1): the best of three pairs of the paper's grid on the
# validation nodes of Cora / GCN / eps_a = 7 / seed 0 (no per-setting search).
SOLITUDE = dict(feature_steps=K_X, label_steps=0, lambda_fro=1e-4, lambda_l1=1e-2, lr_adj=0.01)
# What the authors' released code (WanyuGroup/TIFS2022-Solitude) runs for Cora: no structure
# learning; symmetric feature KProp (K_x = 4) and label KProp (K_y = 2), features not centred,
# all 500 epochs (no patience), the epoch of the best validation accuracy kept.
SOLITUDE_AUTHORS_DATASETS = ("cora",)


def largest_component_data(G, y, config):
    """Symmetric 0/1 adjacency without self loops; CiteSeer cut to its largest component.

    The largest connected component of the Planetoid graph has 2,120 nodes, of
    which 2,110 are labelled (the paper's Table IV count); the other 10 are
    padded test ids without label or feature, in no split.

    Parameters
    ----------
    G : GraphData
        The dataset's graph.
    y : ndarray of shape (n_nodes,)
        Labels.
    config : dict
        The dataset's settings (``{"largest_component": bool}``).

    Returns
    -------
    G : GraphData
        The graph (a new one when cut or re-symmetrised).
    y : ndarray
        Its labels.
    """
    import scipy.sparse as sp

    from skldp import GraphData
    A = sp.csr_matrix(G.adjacency)
    A = ((A + A.T) > 0).astype(np.float32)
    A.setdiag(0)
    A.eliminate_zeros()
    X, y = G.features, np.asarray(y)
    if config.get("largest_component"):
        _, comp = sp.csgraph.connected_components(A, directed=False)
        keep = np.flatnonzero(comp == np.bincount(comp).argmax())
        A, X, y = A[keep][:, keep], X[keep], y[keep]
    return GraphData(X, sp.csr_matrix(A)), y


class SolitudeRun(CollectionRun):
    """One run of the Solitude study: the collections of all users, then one model.

    ``fit(G[rows], y[rows])`` perturbs the features (multi-bit, ``eps_x = 1``;
    none for raw_features and graph_only) and the adjacency lists (edge RR at
    ``eps_a``) of every node and fits the model of ``kind`` on the fitted rows.

    Parameters
    ----------
    kind : str, default="base"
        One of ``KINDS``: graph_only, base, lpgnn, solitude, lpgnn_authors
        (``lpgnn`` with the classifier's current defaults, the authors' code:
        the symmetric KProp aggregator; ``lpgnn`` keeps the papers' mean),
        raw_features (``base`` on the clean features: no feature mechanism,
        the same received graph), solitude_authors (what the Solitude
        authors' code runs for Cora: ``lpgnn_authors`` with label KProp,
        ``y_steps=2``, and no patience).
    backbone : {"gcn", "sage"}, default="gcn"
        The GNN.
    eps_a : float, default=8.0
        Edge budget of each user's adjacency list.
    validation : array-like or None, default=None
        Validation nodes among the fitted rows: the model keeps the epoch of
        the best accuracy on them (``selection="accuracy"``); graph_only does
        not read their labels.
    random_state : int, default=0
        Seed of the collections (edges: ``1000 + random_state``) and the model.
    """

    graph_only_kind = "graph_only"

    def __init__(self, kind="base", backbone="gcn", eps_a=8.0, validation=None, random_state=0):
        self.kind = kind
        self.backbone = backbone
        self.eps_a = eps_a
        self.validation = validation
        self.random_state = random_state

    def _model(self):
        from skldp.models import GCNClassifier, LPGNNClassifier, SAGEClassifier, SolitudeClassifier
        # every model keeps the epoch of its best accuracy on the validation nodes
        kw = dict(epochs=EPOCHS, patience=PATIENCE, validation=self.validation,
                  selection="accuracy", random_state=self.random_state, **COMMON)
        if self.kind in ("base", "raw_features"):
            cls = {"gcn": GCNClassifier, "sage": SAGEClassifier}[self.backbone]
            return cls(**kw)
        if self.kind in ("lpgnn", "lpgnn_authors"):  # labels not private, as in the paper
            options = AUTHORS_OPTIONS if self.kind == "lpgnn_authors" else PAPER_OPTIONS
            return LPGNNClassifier(eps_y=np.inf, x_steps=K_X, y_steps=0, backbone=self.backbone,
                                   **options, **kw)
        if self.kind == "solitude_authors":
            return LPGNNClassifier(eps_y=np.inf, x_steps=K_X, y_steps=2, backbone=self.backbone,
                                   **AUTHORS_OPTIONS, **{**kw, "patience": None})
        return SolitudeClassifier(self.backbone, **SOLITUDE, **kw)

    def fit(self, G, y):
        """Collect the reports of all nodes and fit the model on the rows of ``G``.

        Parameters
        ----------
        G : GraphData
            A view of the graph selecting the fitted nodes.
        y : array-like of shape (len(G),)
            Their labels.

        Returns
        -------
        self : SolitudeRun
        """
        from skldp.mechanisms import EdgeRR, MultiBitMechanism
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}.")
        y = np.asarray(y)
        whole = G.full()
        self.classes_ = np.unique(y)
        if self.kind in ("raw_features", "graph_only"):
            # raw_features: the clean features; graph_only uses none, so collects none;
            # the graph is still collected at eps_a
            Gx = whole
        else:
            self.feature_mechanism_ = MultiBitMechanism(EPS_X, feature_range=(0, 1),
                                                        random_state=self.random_state).fit(whole)
            Gx = self.feature_mechanism_.transform(whole)
        self.edge_mechanism_ = EdgeRR(self.eps_a, symmetrize="directed",
                                      random_state=1000 + self.random_state).fit(Gx)
        self.graph_in_ = self.edge_mechanism_.transform(Gx)
        if self.kind == "graph_only":
            from skldp.propagation import smooth_labels
            Y0 = np.zeros((whole.n_nodes, int(y.max()) + 1))
            keep = np.ones(len(y), dtype=bool)
            if self.validation is not None:   # the training labels only
                keep[np.isin(G.rows, _positions(self.validation, whole.n_nodes))] = False
            Y0[G.rows[keep], y[keep]] = 1
            self.propagated_ = smooth_labels(Y0, self.graph_in_.adjacency, 8).argmax(1)
            return self
        self.model_ = self._model().fit(self.graph_in_[G.rows], y)
        return self

    def _predict_graph_only(self, G):
        return self.propagated_[G.rows]


class LabelPropagationRun(BaseEstimator):
    """The feature-free floor of the study: label propagation over the received graph.

    The users' adjacency lists are collected as for :class:`SolitudeRun`
    (edge RR at ``eps_a``, the same seed); the directed reports are
    symmetrised (an edge if either endpoint reported it: post-processing)
    and :class:`~skldp.baselines.LabelPropagationClassifier` spreads the
    training labels, its ``alpha`` (``ALPHAS``) chosen on the validation
    nodes. No feature is collected.

    Parameters
    ----------
    eps_a : float, default=8.0
        Edge budget of each user's adjacency list.
    random_state : int, default=0
        Seed of the collection (``1000 + random_state``, as for ``SolitudeRun``).
    """

    def __init__(self, eps_a=8.0, random_state=0):
        self.eps_a = eps_a
        self.random_state = random_state

    def run(self, G, y, masks):
        """Collect the graph, choose alpha on the validation nodes, score the test nodes.

        ``G`` is the whole graph, ``masks`` its train, validation and test masks; the
        metrics are those of the test nodes unless named otherwise.
        """
        import scipy.sparse as sp

        from skldp.baselines import LabelPropagationClassifier
        from skldp.mechanisms import EdgeRR
        train, val, test = masks
        self.edge_mechanism_ = EdgeRR(self.eps_a, symmetrize="directed",
                                      random_state=1000 + self.random_state).fit(G)
        A = sp.csr_matrix(self.edge_mechanism_.transform(G).adjacency)
        # post-processing of the reports, not the users' true lists (which a model reading
        # them would be charged for, these users' edges being collected)
        U = G.with_adjacency(A.maximum(A.T), source="public")
        fits = [LabelPropagationClassifier(alpha).fit(U[train], y[train]) for alpha in ALPHAS]
        self.model_ = max(fits, key=lambda lp: lp.score(U[val], y[val]))   # first of ties
        return {"accuracy": float(self.model_.score(U[test], y[test])),
                "alpha": float(self.model_.alpha)}


def _positions(nodes, n):
    """Node positions from positions or a boolean mask over the ``n`` nodes."""
    nodes = np.asarray(nodes)
    return np.flatnonzero(nodes) if nodes.dtype == bool and len(nodes) == n else nodes


def fit_on_train(estimator, G, y, masks):
    """The paper's protocol: train on the training nodes, choose the epoch on the
    validation nodes, accuracy on the test nodes.

    Parameters
    ----------
    estimator : SolitudeRun
        The unfitted estimator of one run.
    G : GraphData
        The whole graph.
    y : ndarray of shape (n_nodes,)
        Labels of all nodes.
    masks : tuple of three boolean ndarrays
        Train, validation and test masks.

    Returns
    -------
    metrics : dict of str -> float
    """
    train, val, test = masks
    estimator.set_params(validation=val)
    estimator.fit(G[train | val], y[train | val])
    return {"accuracy": float(np.mean(estimator.predict(G[test]) == y[test]))}


def _make(kind, ctx):
    return SolitudeRun(kind=kind, random_state=ctx.seed)


def _graph_only(ctx):
    return _make("graph_only", ctx)


def _base(ctx):
    return _make("base", ctx)


def _lpgnn(ctx):
    return _make("lpgnn", ctx)


def _solitude(ctx):
    return _make("solitude", ctx)


def _lpgnn_authors(ctx):
    return _make("lpgnn_authors", ctx)


def _raw_features(ctx):
    return _make("raw_features", ctx)


def _solitude_authors(ctx):
    return _make("solitude_authors", ctx)


def _label_propagation(ctx):
    return LabelPropagationRun(random_state=ctx.seed)


def solitude_study(datasets=DATASETS, seeds=range(5), methods=METHODS):
    """The Solitude sweep: six methods x two backbones x six edge budgets.

    Parameters
    ----------
    datasets : sequence of str, default=DATASETS
        ``"cora"`` and/or ``"citeseer"``.
    seeds : sequence of int, default=range(5)
        Seeds of the split, the collections and the model.
    methods : sequence of str, default=METHODS
        Methods to run (``label_propagation`` sweeps ``eps_a`` only: it has no
        backbone).

    Returns
    -------
    study : Study
    """
    unknown = [d for d in datasets if d not in DATASETS]
    if unknown:
        raise ValueError(f"solitude has settings for {list(DATASETS)} only, not {unknown}.")
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise ValueError(f"solitude has the methods {list(METHODS)}, not {bad}.")
    grid = {"backbone": BACKBONES, "eps_a": EPS_A}
    data, evaluate = largest_component_data, fit_on_train
    every = {
        "graph_only": Method(_graph_only, grid, role="feature-free", data=data,
                             evaluate=evaluate, label="graph only (label propagation)"),
        "base": Method(_base, grid, data=data, evaluate=evaluate,
                       label="GNN on the received graph"),
        "lpgnn": Method(_lpgnn, grid, data=data, evaluate=evaluate, label="LPGNN-style"),
        "solitude": Method(_solitude, grid, data=data, evaluate=evaluate, label="Solitude"),
        "lpgnn_authors": Method(_lpgnn_authors, grid, data=data, evaluate=evaluate,
                                label="LPGNN-style, the authors' aggregator"),
        "raw_features": Method(_raw_features, grid, role="raw-features", data=data,
                               evaluate=evaluate,
                               label="GNN on the clean features and the received graph"),
        "solitude_authors": Method(
            _solitude_authors, [Grid(grid, datasets=list(SOLITUDE_AUTHORS_DATASETS))],
            data=data, evaluate=evaluate, label="Solitude, the authors' Cora code"),
        "label_propagation": Method(_label_propagation, {"eps_a": EPS_A}, role="feature-free",
                                    data=data, evaluate=run_on_split,
                                    label="label propagation, alpha on validation"),
    }
    return Study(
        name="solitude", datasets=list(datasets), seeds=seeds,
        methods={m: every[m] for m in methods},
        splits={"random-50/25/25": default_split},
        configs={d: {"largest_component": d == "citeseer"} for d in datasets},
        title="Solitude — node classification on an edge-LDP graph",
        description="Test accuracy on a random 50/25/25 split (trained on the 50 %); features "
                    "by the multi-bit mechanism at eps_x = 1, adjacency lists by edge RR at "
                    "eps_a (directed reports).",
        quick={"datasets": ["cora"], "seeds": [0],
               "grid": {m: {"eps_a": [8.0]} if m == "label_propagation"
                        else {"backbone": ["gcn"], "eps_a": [8.0]} for m in methods}},
    )


make_study = solitude_study   # the registry's name (studies.get_study)


# ------------------------------------------------------------------------------ the page

PAGE, FIGURE = "solitude.md", "fig_solitude.png"
# The paper's Table III (eps_x = 1): dataset -> backbone -> method -> values for EPS_A
PAPER = {
    "cora": {
        "sage": {"base": [(50.9, 3.8), (54.9, 3.7), (57.2, 2.5), (61.4, 2.6), (63.7, 2.4),
                          (63.2, 3.2)],
                 "lpgnn": [(62.5, 1.6), (69.2, 1.6), (72.9, 2.3), (74.7, 0.9), (75.3, 1.2),
                           (76.4, 0.8)],
                 "solitude": [(66.4, 1.7), (72.4, 1.2), (75.8, 0.9), (76.7, 1.1), (77.9, 0.6),
                              (79.0, 0.6)]},
        "gcn": {"base": [(60.8, 2.0), (63.1, 3.4), (64.8, 3.7), (66.9, 4.0), (68.1, 4.0),
                         (68.6, 3.8)],
                "lpgnn": [(67.9, 1.2), (69.4, 1.4), (73.7, 1.8), (74.4, 0.5), (75.7, 1.0),
                          (76.3, 0.9)],
                "solitude": [(68.4, 2.3), (72.6, 1.4), (75.2, 1.2), (76.1, 0.5), (77.3, 0.9),
                             (77.8, 0.5)]},
    },
    "citeseer": {
        "sage": {"base": [(35.0, 1.8), (39.1, 1.3), (42.3, 1.5), (44.5, 1.2), (45.7, 1.8),
                          (44.5, 1.9)],
                 "lpgnn": [(46.8, 2.0), (49.7, 0.7), (50.7, 1.4), (51.2, 1.4), (53.3, 0.9),
                           (54.5, 1.2)],
                 "solitude": [(50.1, 1.3), (52.7, 1.0), (54.0, 1.0), (55.6, 0.8), (56.3, 1.0),
                              (57.0, 1.4)]},
        "gcn": {"base": [(39.7, 3.0), (45.3, 1.8), (48.3, 2.9), (49.6, 1.3), (52.5, 2.1),
                         (52.8, 2.5)],
                "lpgnn": [(47.8, 1.1), (50.1, 1.8), (52.3, 1.2), (53.7, 1.3), (55.6, 1.3),
                          (55.6, 1.5)],
                "solitude": [(49.8, 1.4), (53.4, 1.0), (55.1, 0.8), (56.4, 1.5), (58.2, 0.7),
                             (58.0, 2.5)]},
    },
}
ROWS = {"base": "base", "lpgnn": "lpgnn", "lpgnn_authors": "lpgnn_authors",
        "solitude": "solitude", "solitude_authors": "solitude_authors",
        "graph_only": "graph_only",
        "label_propagation": "label propagation, alpha on validation",
        "raw_features": "raw features, clean"}
BACKBONE_NAMES = {"sage": "GraphSAGE", "gcn": "GCN"}


def _accuracies(records):
    """``{(dataset, backbone, method, eps_a): [accuracy %, ...]}``; label propagation
    (no backbone) under both backbones."""
    out = {}
    for r in records:
        if "metrics" not in r:
            continue
        p = r["params"]
        for backbone in [p["backbone"]] if "backbone" in p else BACKBONES:
            key = (r["dataset"], backbone, r["method"], p["eps_a"])
            out.setdefault(key, []).append(100 * r["metrics"]["accuracy"])
    return out


def _cell(values):
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.1f} (n=1)"
    return f"{np.mean(values):.1f} ± {np.std(values):.1f} (n={len(values)})"


def tables_block(records):
    """Table III beside the paper's: one table per dataset and backbone (markdown)."""
    acc = _accuracies(records)
    lines = []
    for name in DATASETS:
        for backbone in ("sage", "gcn"):
            lines += [f"### {name} — {BACKBONE_NAMES[backbone]}", "",
                      "| method | " + " | ".join(f"eps_a={e}" for e in EPS_A) + " |",
                      "|---" * (len(EPS_A) + 1) + "|"]
            for method, label in ROWS.items():
                if method == "solitude_authors" and name not in SOLITUDE_AUTHORS_DATASETS:
                    continue
                paper = PAPER[name][backbone].get(method)
                if paper:
                    lines.append(f"| {method} (paper) | " + " | ".join(
                        f"{m:.1f} ± {s:.1f}" for m, s in paper) + " |")
                lines.append(f"| {label} (ours) | " + " | ".join(
                    _cell(acc.get((name, backbone, method, e))) for e in EPS_A) + " |")
            lines.append("")
    return "\n".join(lines)


def figure(records, pages_dir):
    """Draw ``fig_solitude.png``: accuracy against eps_a per dataset and backbone.
    """
    import matplotlib.pyplot as plt

    from .figures import curve, finish, flat_records, group, mean_by
    rows = flat_records(records)
    panels = [(ds, bb) for ds in DATASETS for bb in BACKBONES]
    fig, axes = plt.subplots(1, len(panels), figsize=(14, 3.6))
    for ax, (ds, bb) in zip(axes, panels, strict=True):
        g = mean_by(group(rows, "method", "eps_a", where=lambda r, ds=ds, bb=bb: (
            r["dataset"] == ds and r.get("backbone", bb) == bb)), "acc")
        for m, c in [("base", "C0"), ("lpgnn", "C1"), ("solitude", "C2")]:
            curve(ax, {e: v for (mm, e), v in g.items() if mm == m}, color=c,
                  label={"base": "GNN on the received graph", "lpgnn": "LPGNN-style",
                         "solitude": "Solitude"}[m])
        curve(ax, {e: v for (mm, e), v in g.items() if mm == "graph_only"}, color="gray",
              ls=":", label="graph only (no feature)")
        ax.set_title(f"{ds}, {BACKBONE_NAMES[bb]}")
    return finish(fig, axes, Path(pages_dir) / FIGURE, "test accuracy", xlabel="ε_a (edges)")


def write_page(records, pages_dir, runs_file=None, partial=None):
    """This study's page and figure from its runs (``studies.write_page``)."""
    from .pages import command_block, fill_blocks, with_figure
    pages_dir = Path(pages_dir)
    page = fill_blocks(pages_dir / PAGE, {
        "tables": tables_block(records),
        "figure": f"![Accuracy against the edge budget ε_a (mean over seeds)]({FIGURE})\n\n"
                  "*Accuracy against the edge budget ε_a, mean over seeds; dotted: label "
                  "propagation of the training labels over the received graph (no "
                  "feature).*",
        "command": command_block("solitude", len(records), runs_file=runs_file,
                                 partial=partial),
    })
    return with_figure(page, lambda: figure(records, pages_dir))
