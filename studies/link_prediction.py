"""The link-prediction study: Table 2 of the PGC/LPGNN and of the PrivGE papers.

System ``"000"`` (Sajadmanesh & Gatica-Perez, "Locally Private Graph Neural
Networks", CCS 2021; PGC/LPGNN): a VGAE with a two-layer GCN encoder on features
perturbed by LM, PM or PGC with ``eps`` per feature, on the RAW features, or on
random features (``GRAPH``, graph only). System ``"002"`` (Li et al., "PrivGE",
CIKM 2024): features perturbed by LP, PM, MB or HDS with ``eps`` per user,
personalised PageRank propagation, Hadamard edge features and a logistic head;
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

import numpy as np
from sklearn.base import BaseEstimator

from skldp.experiments import Grid, Method, Study

__all__ = ["link_prediction_study", "LinkPredictionRun", "edge_split", "as_recorded",
           "SYSTEMS"]

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
    return {"auc": estimator.run(G)}


def _make(kind, ctx):
    return LinkPredictionRun(kind=kind, random_state=ctx.seed, **ctx.config)


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


LABELS = {"RAW": "RAW features (VGAE)", "inf": "raw features (PPR + Hadamard)",
          "GRAPH": "graph-only (random features)"}


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
