"""The link-prediction study: Table 2 of the PGC/LPGNN and of the PrivGE papers.

System ``"000"`` (Sajadmanesh & Gatica-Perez, "When Differential Privacy Meets Graph
Neural Networks", arXiv 2020, the PGC version of the CCS 2021 LPGNN paper): a VGAE with
a two-layer GCN encoder on features perturbed by LM, PM or PGC with ``eps`` per feature,
on the RAW features, or on random features (``GRAPH``, graph only). System ``"002"`` (Li
et al., "PrivGE", CIKM 2024): features perturbed by LP, PM, MB or HDS with ``eps`` per
user, personalised PageRank propagation, Hadamard edge features and a logistic head;
``inf`` propagates the raw features, ``GRAPH`` random ones.

Every run splits the edges 85/5/10 with
:func:`skldp.model_selection.random_edge_split` (``random_state=seed``, held-out
edges removed from the graph) and records the test AUC in percent. The runs
are those of ``docs/results/link_prediction_runs.jsonl``: the same keys (method,
split ``edge-85/5/10``, seed, ``paper`` (the system), ``eps`` and the ablation
values ``negative_ratio`` / ``loss``), so a recorded run is not run again.
"""

import functools
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator

from skldp.experiments import Grid, Method, Study

from .pages import command_block, fill_blocks, with_figure

__all__ = ["link_prediction_study", "LinkPredictionRun", "StructuralLinkRun", "edge_split",
           "as_recorded", "structural_scores", "write_page", "SYSTEMS", "SCORES"]

LPGNN, PRIVGE = "000", "002"  # values of the records' "paper" field (the system)
SYSTEMS = {"lpgnn": LPGNN, "privge": PRIVGE}
EPS = {LPGNN: [1.0, 5.0, 9.0], PRIVGE: [1.0, 2.0, 3.0, 5.0]}
DATASETS = {LPGNN: ("cora", "citeseer"), PRIVGE: ("cora", "facebook")}
MECHANISMS = {LPGNN: ("LM", "PM", "PGC"), PRIVGE: ("HDS", "MB", "PM", "LP")}
RAW = {LPGNN: "RAW", PRIVGE: "inf"}
# PrivGE's tuned values (authors' run script, see HDSMechanism / PPRPropagation docs);
# Facebook (22k nodes x 4714 features): a looser truncation of the PageRank series
# (relative error 1e-3 instead of 1e-6) to fit the CPU budget.
CONFIG = {"cora": dict(hds_k=20, ppr_alpha=0.1, ppr_tol=1e-6),
          "citeseer": dict(hds_k=20, ppr_alpha=0.1, ppr_tol=1e-6),
          "facebook": dict(hds_k=50, ppr_alpha=0.05, ppr_tol=1e-3)}
# Ablations that were run: VGAE with 10 fresh negatives per positive (eps = 1) on Cora
# seeds 1-2 and CiteSeer seed 0; the pairwise loss of the Hadamard head (eps = 1) on Cora
# seeds 0-4 and Facebook seeds 0-2 (no LP on Facebook).
NEGATIVE_RATIO = 10.0
ABLATION_SEEDS = {(LPGNN, "cora"): [1, 2], (LPGNN, "citeseer"): [0],
                  (PRIVGE, "cora"): [0, 1, 2, 3, 4], (PRIVGE, "facebook"): [0, 1, 2]}
N_RANDOM = None  # random features: as many columns as the dataset's


def edge_split(y, seed):
    """The split of a link-prediction run is made from its seed by the run itself.

    Parameters
    ----------
    y : ndarray
        Labels (unused).
    seed : int
        The run's seed.

    Returns
    -------
    seed : int
        Passed on as the run's "masks".
    """
    return seed


def as_recorded(eps):
    """``eps`` as the recorded runs passed it: an integer when it is a whole number.

    The mechanisms draw from a stream seeded by a hash of their parameters,
    so ``eps=1`` and ``eps=1.0`` give different (equally valid) draws; the
    recorded runs passed the whole budgets as integers.

    Parameters
    ----------
    eps : float or None

    Returns
    -------
    eps : int, float or None
    """
    if eps is None:
        return None
    eps = float(eps)
    return int(eps) if eps.is_integer() else eps


def random_features(G, seed):
    """Features carrying no information: i.i.d. standard normal, same shape as ``G``'s.

    Centred like the unbiased LDP reports at small eps (uncentred noise, e.g.
    0/1 bits, adds a constant feature that only tells the encoder the degree).

    Parameters
    ----------
    G : GraphData
        The graph.
    seed : int
        Seed of the features.

    Returns
    -------
    G : GraphData
        The same graph with random features.
    """
    rng = np.random.default_rng(10_000 + seed)
    R = rng.standard_normal(G.features.shape).astype(np.float32)
    return G.with_features(R, source="public")


class LinkPredictionRun(BaseEstimator):
    """One link-prediction run: edge split, mechanism, model, test AUC.

    Parameters
    ----------
    kind : str, default="RAW"
        The method: a mechanism of the system (LM, PM, PGC / HDS, MB, PM, LP),
        the raw features (``RAW`` / ``inf``) or random features (``GRAPH``).
    paper : {"000", "002"}, default="000"
        The system: VGAE (PGC/LPGNN) or PPR + Hadamard head (PrivGE).
    eps : float or None, default=None
        The mechanism's budget (per feature for "000", per user for "002").
    negative_ratio : float, default=1.0
        VGAE's fresh negatives per positive edge and epoch ("000").
    loss : {"bce", "pairwise"}, default="bce"
        Loss of the Hadamard head ("002").
    hds_k, ppr_alpha, ppr_tol : float
        HDS's sampled dimensions, PageRank's restart probability and tolerance.
    random_state : int, default=0
        Seed of the split, the mechanism and the model.
    """

    def __init__(self, kind="RAW", paper=LPGNN, eps=None, negative_ratio=1.0, loss="bce",
                 hds_k=20, ppr_alpha=0.1, ppr_tol=1e-6, random_state=0):
        self.kind = kind
        self.paper = paper
        self.eps = eps
        self.negative_ratio = negative_ratio
        self.loss = loss
        self.hds_k = hds_k
        self.ppr_alpha = ppr_alpha
        self.ppr_tol = ppr_tol
        self.random_state = random_state

    def _mechanism(self, d):
        from skldp.mechanisms import (
            HDSMechanism,
            LaplaceMechanism,
            MultiBitMechanism,
            OneBitMechanism,
            PiecewiseMechanism,
        )
        rng, seed, kind = (0.0, 1.0), self.random_state, self.kind
        eps = as_recorded(self.eps)
        if self.paper == LPGNN:
            if kind == "LM":  # Lap(Delta/eps) on every feature: eps per feature
                return LaplaceMechanism(eps=d * eps, feature_range=rng, random_state=seed)
            if kind == "PM":  # PM with eps on every feature
                return PiecewiseMechanism(eps=d * eps, k=d, feature_range=rng,
                                          random_state=seed)
            if kind == "PGC":
                return OneBitMechanism(eps=eps, feature_range=rng, random_state=seed)
        else:
            if kind == "LP":
                return LaplaceMechanism(eps=eps, feature_range=rng, random_state=seed)
            if kind == "PM":
                return PiecewiseMechanism(eps=eps, feature_range=rng, random_state=seed)
            if kind == "MB":
                return MultiBitMechanism(eps=eps, feature_range=rng, random_state=seed)
            if kind == "HDS":
                return HDSMechanism(eps=eps, k=int(self.hds_k), feature_range=rng,
                                    random_state=seed)
        raise ValueError(f"no method {kind!r} in system {self.paper!r}.")

    def run(self, G):
        """Split the edges of ``G``, fit the pipeline and return the test AUC (%).

        Parameters
        ----------
        G : GraphData
            The whole graph.

        Returns
        -------
        auc : float
            Test AUC in percent.
        """
        from sklearn.pipeline import Pipeline

        from skldp.model_selection import random_edge_split
        from skldp.models import HadamardLinkPredictor, VGAELinkPredictor
        from skldp.propagation import PPRPropagation
        if self.paper not in (LPGNN, PRIVGE):
            raise ValueError(f"paper must be {LPGNN!r} or {PRIVGE!r}, got {self.paper!r}.")
        seed = self.random_state
        P_tr, P_va, P_te, y_tr, y_va, y_te = random_edge_split(G, random_state=seed)
        if self.kind == "GRAPH":
            G_null = random_features(P_tr.graph, seed)
            P_tr, P_va, P_te = (P._rebase(G_null) for P in (P_tr, P_va, P_te))
        steps = []
        if self.kind not in ("RAW", "inf", "GRAPH"):
            steps.append(("mech", self._mechanism(G.shape[1])))
        if self.paper == LPGNN:
            steps.append(("link", VGAELinkPredictor(negative_ratio=self.negative_ratio,
                                                    random_state=seed)))
        else:
            # conjugate gradients, as in the recorded runs (the default then)
            steps.append(("ppr", PPRPropagation(alpha=self.ppr_alpha, tol=self.ppr_tol,
                                                solver="cg")))
            steps.append(("link", HadamardLinkPredictor(loss=self.loss, random_state=seed)))
        pipe = Pipeline(steps)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # early stopping on the validation pairs, fitted with (not on) the training pairs
            pipe.set_params(link__validation=P_va.pairs)
            pipe.fit(P_tr.concat(P_va), np.r_[y_tr, y_va])
            auc = pipe.score(P_te, y_te)
        self.pipeline_ = pipe
        self.n_iter_ = int(pipe[-1].n_iter_)
        return 100 * float(auc)


SCORES = ("common neighbours", "Adamic-Adar", "resource allocation")


def structural_scores(A, pairs):
    """Common neighbours, Adamic-Adar and resource allocation scores of node pairs.

    Parameters
    ----------
    A : sparse matrix of shape (n_nodes, n_nodes)
        The (training) graph; its weights are ignored.
    pairs : ndarray of shape (n_pairs, 2)
        Node pairs.

    Returns
    -------
    scores : dict of str -> ndarray of shape (n_pairs,)
        One array per name of ``SCORES``.
    """
    import scipy.sparse as sp
    A = sp.csr_matrix(A, dtype=np.float64)
    A.data[:] = 1.0
    deg = np.asarray(A.sum(axis=1)).ravel()
    u, v = pairs[:, 0], pairs[:, 1]
    weights = (np.ones_like(deg), 1.0 / np.log(np.maximum(deg, 2.0)), 1.0 / np.maximum(deg, 1.0))
    return {name: np.asarray((A @ sp.diags(w))[u].multiply(A[v]).sum(axis=1)).ravel()
            for name, w in zip(SCORES, weights, strict=True)}


class StructuralLinkRun(BaseEstimator):
    """The feature-free floor of link prediction: a structural score of each pair.

    ``run(G)`` splits the edges as :class:`LinkPredictionRun` does, scores the
    validation and test pairs over the training graph (held-out edges removed)
    by common neighbours, Adamic-Adar and resource allocation, and reports the
    test AUC of the score with the best validation AUC (no feature, no budget).

    Parameters
    ----------
    random_state : int, default=0
        Seed of the edge split.
    """

    def __init__(self, random_state=0):
        self.random_state = random_state

    def run(self, G):
        """Split the edges of ``G`` and return the test AUCs (%) of the scores.

        Parameters
        ----------
        G : GraphData
            The whole graph.

        Returns
        -------
        metrics : dict of str -> float
            ``auc`` (the score chosen on validation), ``chosen`` (its index in
            ``SCORES``) and each score's test AUC (``auc_0``, ``auc_1``, ``auc_2``).
        """
        from sklearn.metrics import roc_auc_score

        from skldp.model_selection import random_edge_split
        P_tr, P_va, P_te, _, y_va, y_te = random_edge_split(G, random_state=self.random_state)
        A = P_tr.graph.adjacency   # the training graph: held-out edges removed
        s_va, s_te = structural_scores(A, P_va.pairs), structural_scores(A, P_te.pairs)
        val = [roc_auc_score(y_va, s_va[name]) for name in SCORES]
        test = [100 * float(roc_auc_score(y_te, s_te[name])) for name in SCORES]
        chosen = int(np.argmax(val))   # the first of equals
        return {"auc": test[chosen], "chosen": float(chosen),
                **{f"auc_{i}": t for i, t in enumerate(test)}}


def evaluate(estimator, G, y, masks):
    """Run one link-prediction run; the edge split is made from the run's seed.

    Parameters
    ----------
    estimator : LinkPredictionRun
        The run.
    G : GraphData
        The whole graph.
    y : ndarray
        Node labels (unused).
    masks : int
        What :func:`edge_split` returned (the seed; the estimator holds it too).

    Returns
    -------
    metrics : dict
        ``{"auc": test AUC in percent}``.
    """
    out = estimator.run(G)
    return out if isinstance(out, dict) else {"auc": out}


def _make(kind, ctx):
    return LinkPredictionRun(kind=kind, random_state=ctx.seed, **ctx.config)


def _make_structural(ctx):
    return StructuralLinkRun(random_state=ctx.seed)


def _parts(kind, systems, seeds):
    """The grid parts of a method: each system's main grid and its ablation."""
    parts = []
    for system in systems:
        if kind not in MECHANISMS[system] and kind not in (RAW[system], "GRAPH"):
            continue
        eps = EPS[system] if kind in MECHANISMS[system] else [None]
        parts.append(Grid({"paper": [system], "eps": eps}, datasets=DATASETS[system]))
        for (s, dataset), abl_seeds in ABLATION_SEEDS.items():
            if s != system or (kind == "LP" and dataset == "facebook"):
                continue
            extra = ({"negative_ratio": [NEGATIVE_RATIO]} if system == LPGNN
                     else {"loss": ["pairwise"]})
            seeds_here = [x for x in abl_seeds if x in seeds]
            if seeds_here:
                parts.append(Grid({"paper": [system], "eps": eps[:1], **extra},
                                  datasets=[dataset], seeds=seeds_here))
    return parts


STRUCTURAL = "structural"   # the feature-free floor (no system, no features)
LABELS = {"RAW": "RAW features (VGAE)", "inf": "raw features (PPR + Hadamard)",
          "GRAPH": "graph-only (random features)",
          STRUCTURAL: "structural score (CN / AA / RA, chosen on validation AUC)"}


def link_prediction_study(datasets=("cora", "citeseer", "facebook"), seeds=range(5),
                          systems=("lpgnn", "privge"), ablations=True):
    """The link-prediction sweep of both systems, with the recorded ablations.

    Parameters
    ----------
    datasets : sequence of str, default=("cora", "citeseer", "facebook")
        Datasets (the PGC/LPGNN system runs on Cora and CiteSeer, PrivGE on
        Cora and Facebook).
    seeds : sequence of int, default=range(5)
        Seeds of the edge split, the mechanism and the model.
    systems : sequence of {"lpgnn", "privge"}, default=both
        The systems to run.
    ablations : bool, default=True
        Also the ablations (``negative_ratio = 10``, ``loss = "pairwise"``).

    Returns
    -------
    study : Study
    """
    unknown = [d for d in datasets if d not in CONFIG]
    if unknown:
        raise ValueError(f"link_prediction has settings for {sorted(CONFIG)} only, "
                         f"not {unknown}.")
    bad = [s for s in systems if s not in SYSTEMS]
    if bad:
        raise ValueError(f"systems must be among {sorted(SYSTEMS)}, not {bad}.")
    codes = [SYSTEMS[s] for s in systems]
    seeds = [int(s) for s in seeds]
    methods = {}
    for kind in ("RAW", "inf", "GRAPH", "LM", "PM", "PGC", "HDS", "MB", "LP"):
        parts = _parts(kind, codes, seeds)
        if not ablations:
            parts = [p for p in parts if "negative_ratio" not in p.params
                     and "loss" not in p.params]
        parts = [p for p in parts if set(p.datasets) & set(datasets)]
        if not parts:
            continue
        role = "private" if kind not in ("RAW", "inf", "GRAPH") else (
            "feature-free" if kind == "GRAPH" else "raw-features")
        methods[kind] = Method(functools.partial(_make, kind), parts, role=role,
                               evaluate=evaluate, label=LABELS.get(kind, kind))
    structural = [d for d in ("cora", "citeseer", "facebook") if d in datasets]
    if structural:
        methods[STRUCTURAL] = Method(_make_structural, [Grid({}, datasets=structural)],
                                     role="feature-free", evaluate=evaluate,
                                     label=LABELS[STRUCTURAL])
    # --quick: one VGAE and one PrivGE run with a mechanism, and VGAE's graph-only, on Cora
    quick = {"PGC": (LPGNN, 1.0), "HDS": (PRIVGE, 1.0), "GRAPH": (LPGNN, None)}
    quick_grid = {m: [Grid({"paper": [quick[m][0]], "eps": [quick[m][1]]}, datasets=["cora"])
                      if m in quick else Grid({}, datasets=[])]  # no run
                  for m in methods}
    return Study(
        name="link_prediction", datasets=list(datasets), seeds=seeds, methods=methods,
        splits={"edge-85/5/10": edge_split},
        configs={d: CONFIG[d] for d in datasets}, metric="auc", scale=1.0,
        title="Link prediction under local DP (PGC/LPGNN and PrivGE, Table 2)",
        description="Test AUC (%) on an 85/5/10 edge split per seed; `paper` 000: VGAE on "
                    "LM/PM/PGC reports (eps per feature); `paper` 002: PPR + Hadamard head "
                    "on LP/PM/MB/HDS reports (eps per user).",
        quick={"datasets": ["cora"], "seeds": [0],
               "grid": quick_grid},
    )


make_study = link_prediction_study   # the registry's name (studies.get_study)


# The papers' Table 2 (test AUC %, mean and std), one value per eps of EPS[system]; the
# Cora MB cells at eps 1 and 5 of the PrivGE paper were lost in the text extraction (None).
PAPER = {
    LPGNN: {
        "cora": {"LM": [(84.9, .5), (87.9, .8), (89.3, .8)],
                 "PM": [(85.1, .9), (88.6, 1.0), (91.0, .6)],
                 "PGC": [(85.4, .9), (90.6, .6), (92.1, .5)],
                 "RAW": [(91.9, .6)] * 3},
        "citeseer": {"LM": [(77.2, .8), (81.6, .7), (84.3, .9)],
                     "PM": [(78.8, 1.1), (84.2, 1.0), (88.1, .6)],
                     "PGC": [(79.0, 1.1), (87.2, .5), (90.0, .5)],
                     "RAW": [(89.6, .8)] * 3},
    },
    PRIVGE: {
        "cora": {"LP": [(75.2, 3.1), (76.0, 3.5), (75.0, 3.7), (75.2, 3.6)],
                 "PM": [(73.2, 3.2), (78.2, 1.1), (77.0, 1.7), (75.2, 2.1)],
                 "MB": [None, (78.3, 1.4), (78.3, 1.1), None],
                 "HDS": [(82.4, 1.5), (82.7, .8), (82.5, .9), (82.3, .8)],
                 "inf": [(93.1, .3)] * 4},
        "facebook": {"LP": [(81.9, 3.2), (84.7, 2.7), (85.6, 1.1), (86.0, 1.2)],
                     "PM": [(92.1, .5), (93.2, .5), (93.3, .3), (89.9, .3)],
                     "MB": [(92.6, 3.8), (92.8, 2.3), (93.1, 2.2), (87.7, .9)],
                     "HDS": [(96.7, .1), (96.7, .1), (96.6, .1), (96.6, .1)],
                     "inf": [(95.6, .1)] * 4},
    },
}
SYSTEM_NAME = {LPGNN: "PGC/LPGNN", PRIVGE: "PrivGE"}
ABLATION_KEYS = ("negative_ratio", "loss")
FIGURE = "fig_link_prediction.png"


def _ablation(params):
    return ", ".join(f"{k} = {params[k]:g}" if isinstance(params[k], float)
                     else f"{k} = {params[k]}" for k in ABLATION_KEYS if k in params)


def _fmt(values):
    if not values:
        return "–"
    v = np.asarray(values)
    return f"{v.mean():.1f} ± {v.std():.1f} (n={len(v)})"


def _paper(value):
    return "–" if value is None else f"{value[0]:.1f} ± {value[1]:.1f}"


def _eps_label(e):
    return f"{int(e)}" if float(e).is_integer() else f"{e:g}"


def tables(records):
    """The page's tables (markdown): each paper's Table 2 beside ours, and the ablations.
    """
    main, ablation, structural = {}, {}, {}
    by_seed = {}   # the main runs by seed: an ablation is compared on its own seeds
    for r in records:
        p, auc = r["params"], r["metrics"]["auc"]
        if r["method"] == STRUCTURAL:
            structural.setdefault(r["dataset"], []).append(auc)
            continue
        eps = None if p["eps"] is None else float(p["eps"])
        if _ablation(p):
            key = (p["paper"], r["dataset"], r["method"], eps, _ablation(p))
            ablation.setdefault(key, {})[r["seed"]] = auc
        else:
            main.setdefault((p["paper"], r["dataset"], r["method"], eps), []).append(auc)
            by_seed.setdefault((p["paper"], r["dataset"], r["method"], eps), {})[
                r["seed"]] = auc
    lines = []
    for system in (LPGNN, PRIVGE):
        eps_list = EPS[system]
        lines += [f"### {SYSTEM_NAME[system]} paper", "",
                  "| dataset | method | " + " | ".join(f"ε = {_eps_label(e)}: paper | ours"
                                                      for e in eps_list) + " |",
                  "|" + "---|" * (2 + 2 * len(eps_list))]
        for dataset, rows in PAPER[system].items():
            if not any(k[:2] == (system, dataset) for k in main):
                continue
            for method, paper in rows.items():
                cells = []
                for e, pv in zip(eps_list, paper, strict=True):
                    ours = main.get((system, dataset, method,
                                     None if method == RAW[system] else e), [])
                    cells += [_paper(pv), _fmt(ours)]
                lines.append(f"| {dataset} | {method} | " + " | ".join(cells) + " |")
            for label, values in (("graph-only", main.get((system, dataset, "GRAPH", None))),
                                  ("feature-free: CN / AA / RA", structural.get(dataset))):
                lines.append(f"| {dataset} | {label} | "
                             + " | ".join(["–", _fmt(values or [])] * len(eps_list)) + " |")
        lines.append("")
    if ablation:
        lines += ["### Ablations", "",
                  "| paper | dataset | method | ε | setting | ours | default, same seeds |",
                  "|---|---|---|---|---|---|---|"]
        for (p, ds, m, e, k), v in sorted(ablation.items(), key=str):
            base = by_seed.get((p, ds, m, e), {})
            same = [base[s] for s in sorted(v) if s in base]
            e = "–" if e is None else f"{e:g}"
            lines.append(f"| {SYSTEM_NAME[p]} | {ds} | {m} | {e} | {k} | "
                         f"{_fmt(list(v.values()))} | {_fmt(same)} |")
        lines.append("")
    lines.append("\"paper\" is the paper's Table 2; \"ours\" is mean ± std over seeds "
                 "(n = seeds). Methods without noise repeat their value in every ε column. "
                 "An ablation's last column is the same method's main-table runs (default "
                 "loss and negatives) on the ablation's seeds. "
                 "The Cora MB cells at ε = 1 and 5 of the PrivGE paper were lost in the text "
                 "extraction.")
    return "\n".join(lines)


def figure(records, pages_dir):
    """Draw ``fig_link_prediction.png``: test AUC against ε, one panel per paper and dataset.
    """
    import matplotlib.pyplot as plt

    from .figures import curve, finish, group, hline, mean_by
    # the main runs only: the ablations (non-default loss or negative ratio) are apart
    rows = [{**r["params"], "dataset": r["dataset"], "method": r["method"],
             "auc": r["metrics"]["auc"]} for r in records
            if "loss" not in r["params"] and "negative_ratio" not in r["params"]]
    structural = mean_by(group(rows, "dataset", where=lambda r: r["method"] == STRUCTURAL),
                         "auc")
    panels = [(LPGNN, "cora"), (LPGNN, "citeseer"), (PRIVGE, "cora"), (PRIVGE, "facebook")]
    colors = {m: f"C{i}" for i, m in enumerate(["LM", "PM", "PGC", "LP", "MB", "HDS"])}
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.6))
    for ax, (paper, ds) in zip(axes, panels, strict=True):
        g = mean_by(group(rows, "method", "eps",
                          where=lambda r, p=paper, ds=ds: r.get("paper") == p
                          and r["dataset"] == ds), "auc")
        g = {(m, None if e is None else float(e)): v for (m, e), v in g.items()}
        for m in sorted({m for m, e in g if e is not None}):
            curve(ax, {e: v for (mm, e), v in g.items() if mm == m}, color=colors[m],
                  label=f"{m} reports")
        hline(ax, g.get((RAW[paper], None)), "raw", "raw features")
        hline(ax, g.get(("GRAPH", None)), "graph", "graph only (random features)")
        value = structural.get((ds,))
        if value is not None:
            ax.axhline(value, ls="-.", color="C7", lw=1.2,
                       label="structural score (CN / AA / RA)")
        ax.set_title(f"{'PGC/LPGNN (VGAE)' if paper == LPGNN else 'PrivGE (Hadamard)'}, {ds}")
    return finish(fig, axes, Path(pages_dir) / FIGURE, "test ROC-AUC (%)")


def write_page(records, pages_dir, runs_file=None, partial=None):
    """This study's page and figure from its runs (``studies.write_page``)."""
    pages_dir = Path(pages_dir)
    page = fill_blocks(pages_dir / "link_prediction.md", {
        "table": tables(records),
        "figure": f"![Test ROC-AUC against ε (mean over seeds); dashed: raw features, "
                  f"dotted: graph only, dash-dotted: structural score]({FIGURE})",
        "command": command_block("link_prediction", len(records), runs_file=runs_file,
                                 partial=partial),
    })
    return with_figure(page, lambda: figure(records, pages_dir))
