"""The RGNN study (Bhaila et al., SDM 2024): Table II and the ablation of §V-B3.

Every run perturbs the features of all users with GRR-FS (``m = 10`` sampled
features, ``eps`` per feature) and the labels of the training and validation
users with randomized response at ``eps_y``, then fits the model on the 75 %
of the labelled nodes (the model early-stops on a third of them) and scores
the 25 % test nodes with their true labels. The runs are those of
``docs/results/rgnn_runs.jsonl``: the same keys (method, split
``random-50/25/25``, seed, ``eps`` and ``eps_y``), so a recorded run is not
run again.
"""

import warnings

import numpy as np

from skldp.experiments import Method, Study, default_split

from .common import CollectionRun
from .lpgnn import AUTHORS_OPTIONS, PAPER_OPTIONS

__all__ = ["rgnn_study", "RGNNRun", "categorical_data", "EPS_X", "EPS_Y", "CONFIG"]

M = 10
EPOCHS = 100
EPS_X = [1.0, 0.1]
EPS_Y = [3.0, 2.0, 1.0, 0.5]
ABLATION_EPS = (1.0, 1.0)  # the paper's ablation budgets were lost in its text
# Propagation steps (K_x = K_y), METIS bags, LLP weight, and the bag-of-words group size
# (None: tabular columns, > 10 distinct values cut at their quartiles). The paper tunes K in
# {2, 4, 8, 16}, clusters in {4..256}, alpha in {0.01..20}; one setting per dataset here.
CONFIG = {
    "cora": dict(hops=8, n_clusters=64, alpha=1.0, group=25),
    "citeseer": dict(hops=8, n_clusters=64, alpha=1.0, group=70),
    "facebook": dict(hops=4, n_clusters=128, alpha=1.0, group=100),
    "german_rgnn": dict(hops=4, n_clusters=16, alpha=1.0, group=None),
    "student_rgnn": dict(hops=4, n_clusters=16, alpha=1.0, group=None),
}
KINDS = ("RGNN", "GraphSAGE", "LPGNN", "LPGNN-sound", "RGNN-K16", "graph-only", "RGNN-LLP",
         "RGNN(noisy y)", "RGNN(noisy x)", "LPGNN-AUTHORS", "raw-features")


def categorical_data(G, y, config):
    """The graph with integer-coded features and ``-1`` for unlabelled nodes.

    Bag-of-words columns are grouped into binary groups of ``config["group"]``
    columns; tabular columns with more than 10 distinct values are cut at
    their quartiles, the others coded by value.

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
    from skldp.exceptions import PrivacyLeakWarning
    from skldp.mechanisms import discretize, group_features, quantile_bin_edges
    y = np.asarray(y)
    if config.get("group"):
        X = group_features(G.features, config["group"])
    else:
        X = G.features.toarray() if hasattr(G.features, "toarray") else np.asarray(G.features)
        distinct = [np.unique(X[:, j]) for j in range(X.shape[1])]
        many = [j for j, u in enumerate(distinct) if len(u) > 10]
        with warnings.catch_warnings():
            # The paper's protocol: quartiles of the data, read before any collection
            # (the results page states it); a deployment would pass public edges.
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            X = discretize(X, quantile_bin_edges(X, 4, many))
        for j in range(X.shape[1]):
            X[:, j] = np.searchsorted(np.unique(X[:, j]), X[:, j])
    return G.with_features(X, source="users"), np.where(y >= 0, y, -1)


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
        whole = G._replace(np.arange(G.n_nodes))
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
        common = dict(eps_y=self.eps_y, hops_y=hops, n_clusters=self.n_clusters, epochs=EPOCHS,
                      validation_fraction=1 / 3, patience=EPOCHS, random_state=seed)
        if kind == "raw-features":  # RGNN at eps = inf: the clean features, propagated
            rec = FrequencyReconstructor(np.inf, M, domain_sizes=sizes, hops=hops).fit(whole)
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
        noisy = mech.randomize_encoded(mech.encode(y), whole.node_keys[rows])
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


def rgnn_study(datasets=DATASETS, seeds=range(5), methods=TABLE_METHODS):
    """The RGNN sweep: Table II (eps x eps_y), K = 16 and the ablation at eps = eps_y = 1.

    Parameters
    ----------
    datasets : sequence of str, default=DATASETS
        Datasets with settings in ``CONFIG`` (the five of Table II).
    seeds : sequence of int, default=range(5)
        Seeds of the split, the collections and the model.
    methods : sequence of str, default=TABLE_METHODS
        Methods of ``KINDS`` to run: Table II's by default; the results page
        also runs ``RGNN-K16`` and the ablations (``RGNN-LLP``,
        ``RGNN(noisy y)``, ``RGNN(noisy x)``) on Cora and CiteSeer.

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
    data = categorical_data
    every = {
        "RGNN": Method(_rgnn, table, data=data, label="RGNN"),
        "GraphSAGE": Method(_graphsage, table, data=data, label="GraphSAGE on the reports"),
        "LPGNN": Method(_lpgnn, table, data=data, label="LPGNN (multi-bit, paper's eps_x)"),
        "LPGNN-sound": Method(_lpgnn_sound, table, data=data, label="LPGNN (multi-bit, m·eps)"),
        "LPGNN-AUTHORS": Method(_lpgnn_authors, table, data=data,
                                label="LPGNN, the authors' code (multi-bit, m·eps)"),
        "RGNN-K16": Method(_rgnn_k16, table, data=data, label="RGNN, K = 16"),
        "graph-only": Method(_graph_only, {"eps": [None], "eps_y": EPS_Y}, role="feature-free",
                             data=data, label="graph-only (label propagation)"),
        "raw-features": Method(_raw_features, {"eps": [None], "eps_y": EPS_Y},
                               role="raw-features", data=data,
                               label="RGNN on the clean features (eps = inf, labels at eps_y)"),
        "RGNN-LLP": Method(_rgnn_llp, ablation, data=data, label="RGNN without LLP"),
        "RGNN(noisy y)": Method(_rgnn_noisy_y, ablation, data=data,
                                label="RGNN on the noisy labels"),
        "RGNN(noisy x)": Method(_rgnn_noisy_x, ablation, data=data,
                                label="RGNN on the raw reports"),
    }
    methods = {m: every[m] for m in methods}
    return Study(
        name="rgnn", datasets=list(datasets), seeds=seeds, methods=methods,
        splits={"random-50/25/25": default_split},
        configs={d: CONFIG[d] for d in datasets},
        title="RGNN — node classification under feature and label LDP",
        description="Test accuracy on a random 50/25/25 split; GRR-FS features (m = 10, eps "
                    "per feature), labels by randomized response at eps_y; graph-only: "
                    "label propagation of the noisy labels.",
        quick={"datasets": ["student_rgnn"], "seeds": [0],
               "grid": {m: ({"eps": [None], "eps_y": [1.0]} if m in ("graph-only", "raw-features")
                            else {"eps": [1.0], "eps_y": [1.0]}) for m in methods}},
    )


make_study = rgnn_study   # the registry's name (studies.get_study)
