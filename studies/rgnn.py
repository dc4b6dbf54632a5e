"""The RGNN study (Bhaila et al., SIAM SDM 2024): Table II and the ablation of §V-B3.

Every run perturbs the features of all users with GRR-FS (``m = 10`` sampled
features, ``eps`` per feature) and the labels of the training and validation
users with randomized response at ``eps_y``, then fits the model on the 75 %
of the labelled nodes (the model early-stops on a third of them) and scores
the 25 % test nodes with their true labels. ``write_page`` renders
``docs/results/rgnn.md`` and its figure from the runs
(``studies/runs/rgnn_runs.jsonl``).
"""

from pathlib import Path

import numpy as np

from skldp.experiments import Grid, Method, Study, default_split

from .common import CollectionRun
from .lpgnn import AUTHORS_OPTIONS, PAPER_OPTIONS

__all__ = ["rgnn_study", "RGNNRun", "categorical_data", "authors_coding", "write_page",
           "EPS_X", "EPS_Y", "CONFIG", "AUTHORS_CODING"]

M = 10
EPOCHS = 100
EPS_X = [1.0, 0.1]
EPS_Y = [3.0, 2.0, 1.0, 0.5]
ABLATION_EPS = (1.0, 1.0)  # the paper's ablation budgets were lost in its text
# Propagation steps (K_x = K_y), METIS bags, LLP weight, and either the bag-of-words group
# size or the authors' coding of the tabular attributes (AUTHORS_CODING). The paper tunes K in
# {2, 4, 8, 16}, clusters in {4..256}, alpha in {0.01..20}; one setting per dataset here.
CONFIG = {
    "cora": dict(hops=8, n_clusters=64, alpha=1.0, group=25),
    "citeseer": dict(hops=8, n_clusters=64, alpha=1.0, group=70),
    "facebook": dict(hops=4, n_clusters=128, alpha=1.0, group=100),
    "german_rgnn": dict(hops=4, n_clusters=16, alpha=1.0, coding="german_rgnn"),
    "student_rgnn": dict(hops=4, n_clusters=16, alpha=1.0, coding="student_rgnn"),
}
KINDS = ("RGNN", "GraphSAGE", "LPGNN", "LPGNN-sound", "RGNN-K16", "graph-only", "RGNN-LLP",
         "RGNN(noisy y)", "RGNN(noisy x)", "LPGNN-AUTHORS", "raw-features")


# The RGNN authors' coding of the tabular attributes (karuna-bhaila/RGNN, RGNN/data.py,
# Student.process and German.process), which gives Table I's d = 60 and 46: "keep", 0/1
# attributes as they are; "at_least", 1 when the value is >= the threshold; "bins", one-hot
# of the bins (-inf, e_1], (e_1, e_2], ..., (e_k, inf); "one_hot", one-hot over the codes.
# Every other attribute is dropped. Fixed public rules, applied to each user's own row.
AUTHORS_CODING = {
    "student_rgnn": dict(
        keep=("school", "sex", "address", "famsize", "Pstatus", "schoolsup", "famsup", "paid",
              "activities", "nursery", "higher", "internet", "romantic"),
        at_least={"G1": 10, "G2": 10},   # a passing grade (out of 20)
        bins={"age": (15, 16, 17, 18)},   # 15, ..., 18, and 19 or older (the code: 20 -> 19)
        one_hot={"Medu": range(5), "Fedu": range(5), "Mjob": range(5), "Fjob": range(5),
                 "reason": range(4), "guardian": range(3), "traveltime": range(1, 5),
                 "failures": range(4), "goout": range(5)}),
    "german_rgnn": dict(
        keep=("Gender", "ForeignWorker", "Single", "HasTelephone",
              "CheckingAccountBalance_geq_0", "CheckingAccountBalance_geq_200",
              "SavingsAccountBalance_geq_100", "SavingsAccountBalance_geq_500",
              "MissedPayments", "NoCurrentLoan", "CriticalAccountOrLoansElsewhere",
              "OtherLoansAtBank", "HasCoapplicant", "HasGuarantor", "OwnsHouse", "RentsHouse",
              "Unemployed", "YearsAtCurrentJob_lt_1", "YearsAtCurrentJob_geq_4",
              "JobClassIsSkilled", "PurposeOfLoan_Business", "PurposeOfLoan_Education",
              "PurposeOfLoan_Electronics", "PurposeOfLoan_Furniture",
              "PurposeOfLoan_HomeAppliances", "PurposeOfLoan_NewCar", "PurposeOfLoan_Other",
              "PurposeOfLoan_Repairs", "PurposeOfLoan_Retraining", "PurposeOfLoan_UsedCar"),
        # counts: the code's "> 1" loans and "x - 1" of 1 or 2 liable people
        at_least={"LoanRateAsPercentOfIncome": 3, "YearsAtCurrentHome": 3,
                  "NumberOfOtherLoansAtBank": 2, "NumberOfLiableIndividuals": 2},
        bins={"Age": (30, 50), "LoanDuration": (10, 20, 30),
              "LoanAmount": (1000, 2000, 3000, 4000)},
        one_hot={}),
}


def authors_coding(X, feature_names, coding):
    """The RGNN authors' binary coding of Student's or German's attributes.

    The binary and thresholded attributes come first, in the order of
    ``feature_names``, then the one-hot columns of the binned and nominal
    ones (``AUTHORS_CODING``): 60 columns for Student, 46 for German.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_nodes, n_attributes)
        The raw attributes.
    feature_names : sequence of str
        Their names.
    coding : {"student_rgnn", "german_rgnn"}
        The dataset's coding.

    Returns
    -------
    codes : ndarray of shape (n_nodes, n_columns)
        0/1 columns.
    names : list of str
        Their names.

    Raises
    ------
    ValueError
        If an attribute is missing, holds NaN, or a kept or one-hot attribute
        holds a value outside its codes.
    """
    if coding not in AUTHORS_CODING:
        raise ValueError(f"coding must be one of {sorted(AUTHORS_CODING)}, got {coding!r}.")
    rules = AUTHORS_CODING[coding]
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=np.float64)
    index = {str(name): j for j, name in enumerate(feature_names)}
    wanted = [*rules["keep"], *rules["at_least"], *rules["bins"], *rules["one_hot"]]
    missing = [a for a in wanted if a not in index]
    if missing:
        raise ValueError(f"{coding} coding needs the attributes {missing}, which X lacks.")
    single, blocks = [], []   # (name, column) pairs
    for name in sorted(wanted, key=index.get):
        x = X[:, index[name]]
        if np.isnan(x).any():
            raise ValueError(f"attribute {name!r} holds NaN, which has no code.")
        if name in rules["at_least"]:
            t = rules["at_least"][name]
            single.append((f"{name}>={t:g}", (x >= t).astype(np.int64)))
            continue
        if name in rules["bins"]:
            edges = np.asarray(rules["bins"][name], dtype=np.float64)
            codes = np.searchsorted(edges, x, side="left")   # x <= e_1 is bin 0
            # bin k holds (e_k-1, e_k]: named by its upper edge
            labels = [f"<={e:g}" for e in edges] + [f">{edges[-1]:g}"]
        else:
            values = np.asarray((0, 1) if name in rules["keep"] else rules["one_hot"][name])
            bad = ~np.isin(x, values)
            if bad.any():
                raise ValueError(f"attribute {name!r} holds {x[bad][0]:g}, outside its codes "
                                 f"{values.tolist()}.")
            if name in rules["keep"]:
                single.append((name, x.astype(np.int64)))
                continue
            codes = np.searchsorted(values, x)
            labels = [f"={v:g}" for v in values]
        onehot = np.eye(len(labels), dtype=np.int64)[codes]
        blocks += [(f"{name}{label}", onehot[:, k]) for k, label in enumerate(labels)]
    names = [n for n, _ in single + blocks]
    return np.column_stack([c for _, c in single + blocks]), names


def categorical_data(G, y, config):
    """The graph with integer-coded features and ``-1`` for unlabelled nodes.

    Bag-of-words columns are grouped into binary groups of ``config["group"]``
    columns; tabular attributes get the authors' coding
    ``config["coding"]`` (:func:`authors_coding`).

    Parameters
    ----------
    G : GraphData
        The dataset's graph.
    y : ndarray of shape (n_nodes,)
        Labels.
    config : dict
        The dataset's settings (``CONFIG``).

    Returns
    -------
    G : GraphData
        The same graph with the codes as features.
    y : ndarray of shape (n_nodes,)
        Labels, ``-1`` where the node is unlabelled.
    """
    from skldp.mechanisms import group_features
    y = np.asarray(y)
    if config.get("group"):
        X, names = group_features(G.features, config["group"]), None
    elif config.get("coding"):
        X, names = authors_coding(G.features, G.feature_names, config["coding"])
    else:
        raise ValueError("config needs a bag-of-words 'group' size or a tabular 'coding'.")
    return G.with_features(X, names, source="users"), np.where(y >= 0, y, -1)


def domain_sizes(X):
    """Public domain size of each integer-coded column (at least 2)."""
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    return np.maximum(X.max(axis=0).astype(np.int64) + 1, 2)


class RGNNRun(CollectionRun):
    """One run of the RGNN study: the collections of all users, then one model.

    ``fit(G[rows], y[rows])`` perturbs the features of every node of the
    graph (GRR-FS, or multi-bit for the LPGNN kinds) and the labels of the
    fitted rows, and fits the model of ``kind`` on the fitted rows; the
    score is the accuracy on the rows given to ``predict``.

    Parameters
    ----------
    kind : str, default="RGNN"
        One of ``KINDS``: RGNN (reconstructed features and labels, LLP),
        GraphSAGE (raw reports), LPGNN (multi-bit features at the paper's
        Theorem 1 budget), LPGNN-sound (at ``m * eps``), LPGNN-AUTHORS (at
        ``m * eps``, with the authors' code's configuration, the classifier's
        defaults; the other two use the papers' description), RGNN-K16 (16 hops),
        graph-only (label propagation of the noisy labels), raw-features
        (RGNN at ``eps = inf``: the clean features through the same
        ``hops``-hop reconstruction, whose frequency inversion is then the
        identity, and RGNN's model; no feature mechanism, the labels still at
        ``eps_y``), and the
        ablations RGNN-LLP, RGNN(noisy y), RGNN(noisy x).
    eps : float or None, default=1.0
        GRR-FS's per-feature budget (``None`` for graph-only).
    eps_y : float, default=1.0
        Label budget.
    hops : int, default=8
        Propagation steps ``K_x = K_y``.
    n_clusters : int, default=64
        METIS bags of the LLP loss.
    alpha : float, default=1.0
        Weight of the LLP loss.
    random_state : int, default=0
        Seed of the collections and the model.
    """

    graph_only_kind = "graph-only"

    def __init__(self, kind="RGNN", eps=1.0, eps_y=1.0, hops=8, n_clusters=64, alpha=1.0,
                 random_state=0):
        self.kind = kind
        self.eps = eps
        self.eps_y = eps_y
        self.hops = hops
        self.n_clusters = n_clusters
        self.alpha = alpha
        self.random_state = random_state

    def fit(self, G, y):
        """Collect the reports of all nodes and fit the model on the rows of ``G``.

        Parameters
        ----------
        G : GraphData
            A view of the graph (integer-coded features) selecting the fitted nodes.
        y : array-like of shape (len(G),)
            Their labels.

        Returns
        -------
        self : RGNNRun
        """
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}.")
        y = np.asarray(y)
        whole = G.full()
        self.classes_ = np.unique(y)
        if self.kind == "graph-only":
            return self._fit_graph_only(whole, G.rows, y)
        from skldp.mechanisms import GRRFSMechanism, MultiBitMechanism
        from skldp.models import LPGNNClassifier, RGNNClassifier
        from skldp.reconstruction import FrequencyReconstructor
        sizes = domain_sizes(whole.features)
        hops, kind = self.hops, self.kind
        if kind == "RGNN-K16":
            hops, kind = 16, "RGNN"
        seed = self.random_state
        common = dict(eps_y=self.eps_y, classes=self.classes_, hops_y=hops,
                      n_clusters=self.n_clusters, epochs=EPOCHS, validation_fraction=1 / 3,
                      patience=EPOCHS, random_state=seed)
        if kind == "raw-features":  # RGNN at eps = inf: the clean features, propagated
            # every feature (m = d): with m < d the inversion would undo a sampling that
            # never happened, and sharpen every propagated mean towards 0 or 1
            rec = FrequencyReconstructor(np.inf, whole.shape[1], domain_sizes=sizes,
                                         hops=hops).fit(whole)
            self.graph_in_ = rec.transform(whole)
            self.model_ = RGNNClassifier(alpha=self.alpha, **common)
            self.model_.fit(self.graph_in_[G.rows], y)
            return self
        eps = float(self.eps)
        mech = GRRFSMechanism(eps, m=M, domain_sizes=sizes, random_state=seed).fit(whole)
        self.eps_x_sound_, self.eps_x_paper_ = mech.epsilon_, mech.paper_epsilon_
        # The collection that is made (privacy_report reads feature_mechanism_).
        self.feature_mechanism_ = mech
        if kind in ("LPGNN", "LPGNN-sound", "LPGNN-AUTHORS"):
            eps_mb = self.eps_x_paper_ if kind == "LPGNN" else self.eps_x_sound_
            options = AUTHORS_OPTIONS if kind == "LPGNN-AUTHORS" else PAPER_OPTIONS
            mb = MultiBitMechanism(eps_mb, m=M, feature_range=(np.zeros(len(sizes)), sizes - 1),
                                   random_state=seed).fit(whole)
            self.feature_mechanism_ = mb
            self.graph_in_ = mb.transform(whole)
            self.model_ = LPGNNClassifier(self.eps_y, classes=self.classes_, x_steps=hops,
                                          y_steps=hops, epochs=EPOCHS, validation_fraction=1 / 3,
                                          patience=EPOCHS, random_state=seed, **options)
        else:
            R = mech.transform(whole)
            if kind in ("GraphSAGE", "RGNN(noisy x)"):
                self.graph_in_ = R
            else:
                rec = FrequencyReconstructor(eps, M, domain_sizes=sizes, hops=hops).fit(R)
                self.graph_in_ = rec.transform(R)
            alpha = 0.0 if kind in ("GraphSAGE", "RGNN-LLP") else self.alpha
            clean = kind in ("GraphSAGE", "RGNN(noisy y)")
            self.model_ = RGNNClassifier(alpha=alpha, **({"reconstruct_labels": False}
                                                         if clean else {}), **common)
        self.model_.fit(self.graph_in_[G.rows], y)
        return self

    def _fit_graph_only(self, whole, rows, y):
        # Label propagation of the noisy labels (the paper's Algorithm 2 at the test nodes:
        # masked propagation, T^-1, argmax); no feature.
        from skldp.mechanisms import LabelRandomizedResponse
        from skldp.reconstruction import mean_propagation_matrix
        from skldp.utils import draw_seed
        mech = LabelRandomizedResponse(self.eps_y, classes=self.classes_,
                                       random_state=draw_seed(self.random_state) % (2**32)).fit()
        # through the run's users (G's population): their ledger is charged, and two runs
        # in one process are two collections, not one asked twice
        noisy = mech.randomize_encoded(mech.encode(y), whole[rows])
        c = len(mech.classes_)
        Y = np.zeros((whole.n_nodes, c + 1))
        Y[rows, noisy] = 1.0
        Y[rows, c] = 1.0
        P = mean_propagation_matrix(whole.adjacency)
        for _ in range(self.hops):
            Y = P @ Y
        self.label_mechanism_, self.propagated_ = mech, Y
        return self

    def _predict_graph_only(self, G):
        mech, c = self.label_mechanism_, len(self.label_mechanism_.classes_)
        est = np.linalg.solve(mech.transition_matrix_.T, self.propagated_[G.rows, :c].T).T
        return mech.classes_[np.argmax(est, axis=1)]


def _make(kind, ctx):
    cfg = ctx.config
    return RGNNRun(kind=kind, hops=cfg["hops"], n_clusters=cfg["n_clusters"],
                   alpha=cfg["alpha"], random_state=ctx.seed)


def _rgnn(ctx):
    return _make("RGNN", ctx)


def _graphsage(ctx):
    return _make("GraphSAGE", ctx)


def _lpgnn(ctx):
    return _make("LPGNN", ctx)


def _lpgnn_sound(ctx):
    return _make("LPGNN-sound", ctx)


def _lpgnn_authors(ctx):
    return _make("LPGNN-AUTHORS", ctx)


def _raw_features(ctx):
    return _make("raw-features", ctx)


def _rgnn_k16(ctx):
    return _make("RGNN-K16", ctx)


def _graph_only(ctx):
    return _make("graph-only", ctx)


def _rgnn_llp(ctx):
    return _make("RGNN-LLP", ctx)


def _rgnn_noisy_y(ctx):
    return _make("RGNN(noisy y)", ctx)


def _rgnn_noisy_x(ctx):
    return _make("RGNN(noisy x)", ctx)


TABLE_METHODS = ("RGNN", "GraphSAGE", "LPGNN", "LPGNN-sound", "LPGNN-AUTHORS", "graph-only",
                 "raw-features")
DATASETS = ("student_rgnn", "german_rgnn", "cora", "citeseer", "facebook")
# K = 16 and the ablations run on the two citation graphs; the LPGNN baselines on Facebook
# with three seeds (CPU time).
CITATION = ("cora", "citeseer")
CITATION_ONLY = ("RGNN-K16", "RGNN-LLP", "RGNN(noisy y)", "RGNN(noisy x)")
LPGNN_KINDS = ("LPGNN", "LPGNN-sound", "LPGNN-AUTHORS")
FACEBOOK_SEEDS = (0, 1, 2)


def _grid(method, params):
    """The grid parts of ``method``: where it runs (datasets, seeds) and its values."""
    if method in CITATION_ONLY:
        return [Grid(params, datasets=CITATION)]
    if method in LPGNN_KINDS:
        others = [d for d in DATASETS if d != "facebook"]
        return [Grid(params, datasets=others),
                Grid(params, datasets=["facebook"], seeds=FACEBOOK_SEEDS)]
    return params


def rgnn_study(datasets=DATASETS, seeds=range(5), methods=KINDS):
    """The RGNN sweep: Table II (eps x eps_y), K = 16 and the ablation at eps = eps_y = 1.

    Parameters
    ----------
    datasets : sequence of str, default=DATASETS
        Datasets with settings in ``CONFIG`` (the five of Table II).
    seeds : sequence of int, default=range(5)
        Seeds of the split, the collections and the model.
    methods : sequence of str, default=KINDS
        Methods of ``KINDS`` to run. ``RGNN-K16`` and the ablations
        (``RGNN-LLP``, ``RGNN(noisy y)``, ``RGNN(noisy x)``) run on Cora and
        CiteSeer only, the LPGNN baselines on Facebook with seeds 0-2 only.

    Returns
    -------
    study : Study
    """
    unknown = [d for d in datasets if d not in CONFIG]
    if unknown:
        raise ValueError(f"rgnn has settings for {sorted(CONFIG)} only, not {unknown}.")
    bad = [m for m in methods if m not in KINDS]
    if bad:
        raise ValueError(f"rgnn has the methods {list(KINDS)}, not {bad}.")
    table = {"eps": EPS_X, "eps_y": EPS_Y}
    ablation = {"eps": [ABLATION_EPS[0]], "eps_y": [ABLATION_EPS[1]]}
    no_feature = {"eps": [None], "eps_y": EPS_Y}
    every = {   # (factory, values, role, label)
        "RGNN": (_rgnn, table, "private", "RGNN"),
        "GraphSAGE": (_graphsage, table, "private", "GraphSAGE on the reports"),
        "LPGNN": (_lpgnn, table, "private", "LPGNN (multi-bit, paper's eps_x)"),
        "LPGNN-sound": (_lpgnn_sound, table, "private", "LPGNN (multi-bit, m·eps)"),
        "LPGNN-AUTHORS": (_lpgnn_authors, table, "private",
                          "LPGNN, the authors' code (multi-bit, m·eps)"),
        "RGNN-K16": (_rgnn_k16, table, "private", "RGNN, K = 16"),
        "graph-only": (_graph_only, no_feature, "feature-free", "graph-only (label propagation)"),
        "raw-features": (_raw_features, no_feature, "raw-features",
                         "RGNN on the clean features (eps = inf, labels at eps_y)"),
        "RGNN-LLP": (_rgnn_llp, ablation, "private", "RGNN without LLP"),
        "RGNN(noisy y)": (_rgnn_noisy_y, ablation, "private", "RGNN on the noisy labels"),
        "RGNN(noisy x)": (_rgnn_noisy_x, ablation, "private", "RGNN on the raw reports"),
    }
    chosen = {}
    for m in methods:
        factory, params, role, label = every[m]
        chosen[m] = Method(factory, _grid(m, params), role=role, data=categorical_data,
                           label=label)
    quick = {m: ({"eps": [None], "eps_y": [1.0]} if m in ("graph-only", "raw-features")
                 else {"eps": [1.0], "eps_y": [1.0]})
             for m in methods if m not in CITATION_ONLY}
    return Study(
        name="rgnn", datasets=list(datasets), seeds=seeds, methods=chosen,
        splits={"random-50/25/25": default_split},
        configs={d: CONFIG[d] for d in datasets},
        title="RGNN — node classification under feature and label LDP",
        description="Test accuracy on a random 50/25/25 split; GRR-FS features (m = 10, eps "
                    "per feature), labels by randomized response at eps_y; graph-only: "
                    "label propagation of the noisy labels.",
        quick={"datasets": ["student_rgnn"], "seeds": [0], "grid": quick},
    )


make_study = rgnn_study   # the registry's name (studies.get_study)


# ------------------------------------------------------------------------------ the page

PAGE, FIGURE = "rgnn.md", "fig_rgnn.png"
# The paper's Table II (accuracy %, mean and std over 5 runs), columns eps_y = 3, 2, 1, 0.5.
PAPER = {
    ("citeseer", 1.0): {"GraphSAGE": [(24.4, 1.3), (24.3, 2.6), (20.5, 1.2), (19.4, 0.9)],
                        "LPGNN": [(45.6, 12.2), (51.7, 1.8), (46.4, 1.6), (26.9, 5.9)],
                        "RGNN": [(55.7, 1.4), (52.6, 2.7), (47.1, 2.8), (36.2, 4.7)]},
    ("citeseer", 0.1): {"GraphSAGE": [(25.2, 1.3), (24.6, 1.1), (19.4, 1.2), (19.4, 1.2)],
                        "LPGNN": [(53.1, 1.9), (51.3, 3.4), (47.3, 1.8), (31.1, 6.3)],
                        "RGNN": [(51.7, 2.1), (51.3, 2.3), (45.1, 3.2), (34.6, 3.0)]},
    ("cora", 1.0): {"GraphSAGE": [(31.5, 1.9), (28.0, 1.6), (25.9, 2.4), (20.4, 4.4)],
                    "LPGNN": [(55.5, 15.4), (39.5, 14.2), (34.1, 8.4), (37.8, 14.2)],
                    "RGNN": [(77.8, 2.0), (75.5, 1.6), (67.5, 3.8), (41.9, 3.0)]},
    ("cora", 0.1): {"GraphSAGE": [(32.2, 1.9), (28.5, 0.8), (24.8, 2.4), (21.0, 3.3)],
                    "LPGNN": [(68.5, 1.8), (63.8, 5.4), (60.6, 3.5), (44.8, 13.2)],
                    "RGNN": [(77.0, 1.5), (75.8, 2.0), (66.6, 5.0), (40.6, 2.3)]},
    ("facebook", 1.0): {"GraphSAGE": [(46.4, 1.3), (45.2, 1.3), (35.5, 1.1), (29.7, 1.4)],
                        "LPGNN": [(70.4, 2.1), (69.3, 1.7), (67.6, 1.9), (58.7, 10.8)],
                        "RGNN": [(76.3, 0.9), (75.9, 1.1), (72.6, 1.6), (64.5, 1.6)]},
    ("facebook", 0.1): {"GraphSAGE": [(42.0, 1.3), (41.4, 1.5), (33.5, 1.2), (29.6, 1.3)],
                        "LPGNN": [(76.3, 0.9), (75.8, 0.8), (73.1, 0.3), (67.4, 1.3)],
                        "RGNN": [(76.5, 0.8), (76.1, 1.2), (73.2, 1.2), (63.4, 1.1)]},
    ("german_rgnn", 1.0): {"GraphSAGE": [(76.8, 3.1), (73.1, 4.3), (70.9, 2.8), (70.1, 4.2)],
                           "LPGNN": [(69.6, 1.5)] * 4,
                           "RGNN": [(82.2, 3.5), (82.3, 3.5), (82.2, 6.2), (83.1, 7.9)]},
    ("german_rgnn", 0.1): {"GraphSAGE": [(74.1, 5.2), (72.3, 2.9), (70.8, 2.6), (69.3, 6.3)],
                           "LPGNN": [(74.7, 5.0), (73.1, 7.0), (71.3, 6.7), (72.8, 5.0)],
                           "RGNN": [(81.9, 4.4), (81.9, 4.2), (82.9, 6.9), (83.2, 7.1)]},
    ("student_rgnn", 1.0): {"GraphSAGE": [(73.6, 4.5), (68.9, 3.1), (63.8, 7.8), (56.2, 3.8)],
                            "LPGNN": [(90.3, 2.4), (89.9, 2.0), (85.1, 4.1), (76.7, 9.7)],
                            "RGNN": [(88.9, 1.6), (87.8, 1.2), (88.2, 0.9), (82.1, 3.6)]},
    ("student_rgnn", 0.1): {"GraphSAGE": [(73.2, 4.7), (68.8, 4.9), (62.2, 6.7), (56.9, 3.6)],
                            "LPGNN": [(88.1, 1.9), (89.7, 1.9), (87.4, 2.2), (78.1, 9.7)],
                            "RGNN": [(88.5, 1.7), (88.5, 1.1), (87.4, 1.5), (81.7, 4.2)]},
}
# §V-B3 on CiteSeer: RGNN, RGNN w/o LLP, RGNN on perturbed labels, RGNN on perturbed features.
PAPER_ABLATION = {"citeseer": {"RGNN": (40.2, 1.9), "RGNN-LLP": (34.0, 3.2),
                               "RGNN(noisy y)": (28.3, 6.6), "RGNN(noisy x)": (23.6, 1.5)}}
ABLATIONS = ("RGNN", "RGNN-LLP", "RGNN(noisy y)", "RGNN(noisy x)")


def _accuracies(records):
    """``{(dataset, method, eps, eps_y): [accuracy, ...]}`` over the seeds."""
    out = {}
    for r in records:
        if "metrics" not in r:
            continue
        p = r["params"]
        key = (r["dataset"], r["method"], p.get("eps"), p.get("eps_y"))
        out.setdefault(key, []).append(r["metrics"]["accuracy"])
    return out


def _cell(values):
    if not values:
        return "not run"
    v = 100 * np.asarray(values)
    return f"{v.mean():.1f} ± {v.std():.1f} (n={len(v)})"


def _paper(value):
    return f"{value[0]} ± {value[1]}"


def table_block(records):
    """Table II beside the paper's, one row per dataset, eps and eps_y (markdown)."""
    acc = _accuracies(records)
    head = ["dataset", "eps (per feature)", "eps_x = m·eps (sound)", "eps_y", "paper RGNN",
            "ours RGNN", "gap", "ours RGNN K=16", "paper GraphSAGE", "ours GraphSAGE",
            "paper LPGNN", "ours LPGNN (multi-bit at paper's eps_x)",
            "ours LPGNN (multi-bit at m·eps)", "ours LPGNN, authors' code (multi-bit at m·eps)",
            "graph-only (label prop.)", "raw features (RGNN at eps = inf)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in ("cora", "citeseer", "facebook", "german_rgnn", "student_rgnn"):
        for eps in EPS_X:
            paper = PAPER[name, eps]
            for i, eps_y in enumerate(EPS_Y):
                ours = {m: acc.get((name, m, eps, eps_y), [])
                        for m in ("RGNN", "GraphSAGE", "LPGNN", "LPGNN-sound", "LPGNN-AUTHORS",
                                  "RGNN-K16")}
                rgnn = ours["RGNN"]
                gap = f"{100 * np.mean(rgnn) - paper['RGNN'][i][0]:+.1f}" if rgnn else ""
                cells = [name, f"{eps:g}", f"{M * eps:g}", f"{eps_y:g}",
                         _paper(paper["RGNN"][i]), _cell(rgnn), gap,
                         _cell(ours["RGNN-K16"]) if name in CITATION else "-",
                         _paper(paper["GraphSAGE"][i]), _cell(ours["GraphSAGE"]),
                         _paper(paper["LPGNN"][i]), _cell(ours["LPGNN"]),
                         _cell(ours["LPGNN-sound"]), _cell(ours["LPGNN-AUTHORS"]),
                         _cell(acc.get((name, "graph-only", None, eps_y))),
                         _cell(acc.get((name, "raw-features", None, eps_y)))]
                lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def ablation_block(records):
    """The ablation of §V-B3 on Cora and CiteSeer beside the paper's (markdown)."""
    acc = _accuracies(records)
    eps, eps_y = ABLATION_EPS
    lines = [f"| dataset | variant | paper (CiteSeer, budgets lost) | ours (eps = {eps:g}, "
             f"i.e. eps_x = m·eps = {M * eps:g}; eps_y = {eps_y:g}) |", "|---|---|---|---|"]
    for name in ("citeseer", "cora"):
        for kind in ABLATIONS:
            paper = PAPER_ABLATION.get(name, {}).get(kind)
            lines.append(f"| {name} | {kind} | {_paper(paper) if paper else '-'} | "
                         f"{_cell(acc.get((name, kind, eps, eps_y)))} |")
    return "\n".join(lines) + "\n"


def figure(records, pages_dir):
    """Draw ``fig_rgnn.png``: accuracy against eps_y per dataset, from the runs.
    """
    import matplotlib.pyplot as plt

    from .figures import curve, finish, flat_records, group, mean_by
    rows = flat_records(records)
    datasets = ["cora", "citeseer", "facebook", "german_rgnn", "student_rgnn"]
    fig, axes = plt.subplots(1, len(datasets), figsize=(16, 3.6))
    for ax, ds in zip(axes, datasets, strict=True):
        g = mean_by(group(rows, "method", "eps", "eps_y",
                          where=lambda r, ds=ds: r["dataset"] == ds), "acc")
        for model, ls in [("RGNN", "-"), ("GraphSAGE", "--")]:
            for eps, c in [(1.0, "C0"), (0.1, "C1")]:
                curve(ax, {ey: v for (m, e, ey), v in g.items() if m == model and e == eps},
                      color=c, ls=ls, label=f"{model}, ε = {eps:g} per feature")
        curve(ax, {ey: v for (m, e, ey), v in g.items() if m == "graph-only"},
              color="gray", ls=":", label="graph only (noisy labels, no feature)")
        ax.set_title(ds)
    return finish(fig, axes, Path(pages_dir) / FIGURE, "test accuracy", xlabel="ε_y (labels)")


def write_page(records, pages_dir, runs_file=None, partial=None):
    """This study's page and figure from its runs (``studies.write_page``)."""
    from .pages import command_block, fill_blocks, with_figure
    pages_dir = Path(pages_dir)
    page = fill_blocks(pages_dir / PAGE, {
        "table": table_block(records),
        "figure": f"![Accuracy against the label budget ε_y (mean over seeds)]({FIGURE})\n\n"
                  "*Accuracy against the label budget ε_y, mean over seeds: RGNN (solid) and "
                  "GraphSAGE on the reports (dashed) at the two per-feature ε; dotted, "
                  "label propagation of the noisy labels (no feature).*",
        "command": command_block("rgnn", len(records), runs_file=runs_file,
                                 partial=partial),
        "ablation": ablation_block(records),
    })
    return with_figure(page, lambda: figure(records, pages_dir))
