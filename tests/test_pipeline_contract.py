"""The data contract of DESIGN.md §1-2 holds in scikit-learn pipelines and searches."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skldp import GraphData, NodeWise
from skldp.accounting import privacy_report
from skldp.datasets import load_cora
from skldp.mechanisms import HDSMechanism
from skldp.model_selection import LabelledKFold, random_node_split
from skldp.models import MLPHead
from skldp.propagation import PPRPropagation

torch.set_num_threads(1)


@pytest.fixture
def graph(small_graph):
    """60-node SBM with string user ids; 6 nodes unlabelled (-1); a held-out test set."""
    A, X, y = small_graph
    y = y.copy()
    y[::10] = -1
    ids = np.array([f"user{i:03d}" for i in range(len(y))])
    G = GraphData(X, A, node_ids=ids, feature_names=[f"f{j}" for j in range(X.shape[1])])
    train, val, test = random_node_split(y, 0.5, 0.25, 0.25, random_state=0)
    return G, y, train | val, test


def _pipe(eps=2.0, alpha=0.2, seed=0, epochs=15):
    return Pipeline([
        ("hds", HDSMechanism(eps=eps, k=2, feature_range=(-1, 2), random_state=seed)),
        ("ppr", PPRPropagation(alpha=alpha)),
        ("clf", MLPHead(hidden_layer_sizes=(8,), epochs=epochs, random_state=seed)),
    ])


class SpyClassifier(ClassifierMixin, BaseEstimator):
    """Majority-class classifier that records what every fit saw (class-level log)."""

    log = []

    def fit(self, X, y):
        self.log.append({"ids": np.asarray(X.node_ids).copy(), "y": np.asarray(y).copy(),
                         "n_nodes": X.n_nodes})
        self.classes_, counts = np.unique(y, return_counts=True)
        self.majority_ = self.classes_[np.argmax(counts)]
        return self

    def predict(self, X):
        return np.full(X.shape[0], self.majority_)


# ------------------------------------------------------------ model selection
@pytest.mark.long
def test_cross_val_score_on_labelled_view(graph):
    G, y, fit, test = graph
    lab = np.flatnonzero(fit)
    scores = cross_val_score(_pipe(), G[lab], y[lab], cv=3)
    assert scores.shape == (3,)
    assert np.all((scores >= 0) & (scores <= 1))
    # LabelledKFold on the whole graph: unlabelled nodes are never in a fold
    scores2 = cross_val_score(_pipe(), G, y, cv=LabelledKFold(3, random_state=0))
    assert scores2.shape == (3,)


@pytest.mark.slow  # joblib workers import torch: ~10 s on an idle 2-core machine
def test_grid_search_refit_parallel(graph):
    G, y, fit, test = graph
    lab = np.flatnonzero(fit)
    search = GridSearchCV(_pipe(), {"hds__eps": [0.5, 4.0], "ppr__alpha": [0.1, 0.5]},
                          cv=3, refit=True, n_jobs=2)
    search.fit(G[lab], y[lab])
    assert len(search.cv_results_["params"]) == 4
    assert set(search.best_params_) == {"hds__eps", "ppr__alpha"}
    best = search.best_estimator_
    assert best.named_steps["hds"].eps == search.best_params_["hds__eps"]
    assert 0 <= search.score(G[test], y[test]) <= 1
    assert search.predict(G[test]).shape == (int(test.sum()),)
    # the ledger in this process knows what the workers collected: eps 0.5 and 4
    rep = privacy_report(search)
    assert rep.local_epsilon == pytest.approx(4.5)
    assert [s.epsilon for s in rep.spends if s.step] == [search.best_params_["hds__eps"]]


@pytest.mark.long
def test_grid_search_sequential_matches_manual_refit(graph):
    G, y, fit, test = graph
    lab = np.flatnonzero(fit)
    search = GridSearchCV(_pipe(), {"hds__eps": [1.0, 3.0]}, cv=2).fit(G[lab], y[lab])
    manual = _pipe(eps=search.best_params_["hds__eps"]).fit(G[lab], y[lab])
    np.testing.assert_allclose(search.predict_proba(G[test]), manual.predict_proba(G[test]))


def test_no_test_label_reaches_fit(graph):
    G, y, fit, test = graph
    SpyClassifier.log.clear()
    lab = np.flatnonzero(fit)
    pipe = Pipeline([("hds", HDSMechanism(eps=1.0, k=2, feature_range=(-1, 2),
                                          random_state=0)),
                     ("ppr", PPRPropagation(alpha=0.2)), ("clf", SpyClassifier())])
    search = GridSearchCV(pipe, {"ppr__alpha": [0.2, 0.4]},
                          cv=KFold(3, shuffle=True, random_state=0))
    search.fit(G[lab], y[lab])
    search.score(G[test], y[test])
    cross_val_score(pipe, G, y, cv=LabelledKFold(3, random_state=0))
    test_ids = set(G.all_node_ids[test])
    unlabelled_ids = set(G.all_node_ids[y == -1])
    assert len(SpyClassifier.log) == 2 * 3 + 1 + 3
    for rec in SpyClassifier.log:
        if len(rec["ids"]) != len(set(rec["ids"])):
            pytest.fail("a node was fitted twice")
        assert rec["n_nodes"] == G.n_nodes  # propagation saw the whole graph
        assert not np.any(rec["y"] == -1)
        assert not unlabelled_ids & set(rec["ids"])
    for rec in SpyClassifier.log[:7]:  # the search never sees a test node
        assert not test_ids & set(rec["ids"]), "a test node reached fit"
        np.testing.assert_array_equal(rec["y"], y[np.searchsorted(G.all_node_ids,
                                                                  rec["ids"])])
    # the refit saw exactly the labelled training view
    assert set(SpyClassifier.log[6]["ids"]) == set(G.all_node_ids[lab])


# ----------------------------------------------------- per-user determinism
def test_report_identical_at_fit_and_predict_time(graph):
    G, y, fit, test = graph
    pipe = _pipe().fit(G[fit], y[fit])
    hds = pipe.named_steps["hds"]
    full = hds.transform(G.full()).features
    full = full.toarray() if sp.issparse(full) else np.asarray(full)
    for rows in (np.flatnonzero(test), np.flatnonzero(fit)[::-1], np.array([3, 3, 0])):
        R = np.asarray(hds.transform(G[rows]))
        np.testing.assert_array_equal(R, full[rows])
    # a new GraphData holding the same users in another order: same reports by id
    perm = np.random.default_rng(1).permutation(G.n_nodes)
    A = G.adjacency[perm][:, perm]
    G2 = GraphData(G.features[perm], A, node_ids=G.all_node_ids[perm], population=G)
    np.testing.assert_array_equal(np.asarray(hds.transform(G2)), full[perm])


@pytest.mark.long
def test_report_identical_across_pickle_and_clone(graph):
    G, y, fit, test = graph
    pipe = _pipe(seed=7).fit(G[fit], y[fit])
    rep = np.asarray(pipe[:-1].transform(G[test]))
    pipe2 = pickle.loads(pickle.dumps(pipe))
    np.testing.assert_array_equal(np.asarray(pipe2[:-1].transform(G[test])), rep)
    np.testing.assert_array_equal(pipe2.predict_proba(G[test]), pipe.predict_proba(G[test]))
    # unpickled data (empty memo) gives the same reports
    G3 = pickle.loads(pickle.dumps(G))
    np.testing.assert_array_equal(np.asarray(pipe2[:-1].transform(G3[test])), rep)
    # clone + refit with the same integer random_state: the same collection
    pipe3 = clone(pipe).fit(G[fit], y[fit])
    assert pipe3.named_steps["hds"].seed_ == pipe.named_steps["hds"].seed_
    np.testing.assert_array_equal(np.asarray(pipe3[:-1].transform(G[test])), rep)
    # random_state=None: every fit is a new collection (documented)
    a = _pipe(seed=None).fit(G[fit], y[fit]).named_steps["hds"].seed_
    b = _pipe(seed=None).fit(G[fit], y[fit]).named_steps["hds"].seed_
    assert a != b


# ------------------------------------------------------ scikit-learn config
def test_pandas_output_config_does_not_break(graph):
    G, y, fit, test = graph
    ref = _pipe().fit(G[fit], y[fit]).predict_proba(G[test])
    with config_context(transform_output="pandas"):
        pipe = _pipe().fit(G[fit], y[fit])
        out = pipe[:-1].transform(G[test])
        assert isinstance(out, GraphData)
        np.testing.assert_allclose(pipe.predict_proba(G[test]), ref)
        scaled = Pipeline([("scale", NodeWise(StandardScaler())),
                           ("ppr", PPRPropagation())]).fit(G[fit]).transform(G[test])
        assert isinstance(scaled, GraphData)


def test_feature_names_through_a_fitted_pipeline(graph):
    pytest.importorskip("pandas")  # set_output(transform="pandas")
    G, y, fit, test = graph
    names = [f"f{j}" for j in range(G.shape[1])]
    pipe = _pipe(epochs=2).set_output(transform="pandas").fit(G[fit], y[fit])
    np.testing.assert_array_equal(pipe[:-1].get_feature_names_out(), names)
    Z = pipe[:-1].transform(G[test])
    assert isinstance(Z, GraphData) and list(Z.to_pandas().columns) == names
    again = pickle.loads(pickle.dumps(pipe))
    np.testing.assert_array_equal(again[:-1].get_feature_names_out(), names)
    np.testing.assert_allclose(again.predict_proba(G[test]), pipe.predict_proba(G[test]))
    assert clone(pipe).named_steps["ppr"]._sklearn_output_config == {"transform": "pandas"}


@pytest.mark.long
def test_nodewise_scaler_before_graph_step(graph):
    G, y, fit, test = graph
    pipe = Pipeline([("scale", NodeWise(StandardScaler())), ("ppr", PPRPropagation(alpha=0.3)),
                     ("clf", MLPHead(hidden_layer_sizes=(8,), epochs=30, random_state=0))])
    pipe.fit(G[fit], y[fit])
    sc = pipe.named_steps["scale"].estimator_
    np.testing.assert_allclose(sc.mean_, np.asarray(G[fit]).mean(axis=0))
    Z = pipe[:-1].transform(G[test])
    assert Z.n_nodes == G.n_nodes and Z.shape == (int(test.sum()), G.shape[1])
    assert pipe.score(G[test], y[test]) > 0.6


# ------------------------------------------------------------ the container
def test_graph_data_indexing_forms(graph):
    G = graph[0]
    idx = np.array([5, 1, 7])
    np.testing.assert_array_equal(G[idx, ...].rows, idx)  # sklearn's _safe_indexing form
    np.testing.assert_array_equal(G[idx].rows, idx)
    np.testing.assert_array_equal(G[list(idx)].rows, idx)
    mask = np.zeros(G.n_nodes, bool)
    mask[[2, 4]] = True
    np.testing.assert_array_equal(G[mask].rows, [2, 4])
    np.testing.assert_array_equal(G[2:8:3].rows, [2, 5])
    np.testing.assert_array_equal(G[4].rows, [4])
    np.testing.assert_array_equal(G[np.int64(4)].rows, [4])
    # views of views index the view's rows, and keep the whole graph
    sub = G[10:20][[0, -1]]
    np.testing.assert_array_equal(sub.rows, [10, 19])
    assert sub.n_nodes == G.n_nodes and sub.token == G.token
    np.testing.assert_array_equal(sub.node_ids, ["user010", "user019"])
    np.testing.assert_array_equal(np.asarray(sub), G.features[[10, 19]])
    with pytest.raises(IndexError, match="boolean mask of length 60"):
        G[mask[:-1]]
    with pytest.raises(IndexError, match="row"):
        G[idx, 0]
    with pytest.raises(IndexError):
        G[[G.n_nodes]]


def test_to_pandas(graph):
    pytest.importorskip("pandas")
    G = graph[0]
    df = G[[3, 0]].to_pandas()
    assert list(df.index) == ["user003", "user000"] and df.index.name == "node_id"
    assert list(df.columns) == [f"f{j}" for j in range(G.shape[1])]
    np.testing.assert_array_equal(df.to_numpy(), G.features[[3, 0]])
    Gs = GraphData(sp.csr_matrix(np.eye(3)))
    dfs = Gs[[2]].to_pandas()
    assert list(dfs.columns) == ["x0", "x1", "x2"]
    assert hasattr(dfs, "sparse")
    # scipy's unstored entries are zeros, never missing values, whatever the pandas version
    assert [dt.fill_value for dt in dfs.dtypes] == [0, 0, 0]
    np.testing.assert_array_equal(dfs.sparse.to_dense().to_numpy(), [[0, 0, 1]])
    np.testing.assert_array_equal(dfs.to_numpy(dtype=float), [[0, 0, 1]])
    assert not dfs.isna().to_numpy().any()



def test_to_pandas_does_not_depend_on_from_spmatrix_fill_value(monkeypatch):
    # Some pandas releases' DataFrame.sparse.from_spmatrix gave scipy's unstored entries
    # a NaN fill value; to_pandas must give zeros whatever that function does.
    pd = pytest.importorskip("pandas")

    def nan_filled(data, index=None, columns=None):
        a = sp.csr_matrix(data).toarray().astype(float)
        a[a == 0] = np.nan  # the old bug: the unstored zeros became the NaN fill value
        return pd.DataFrame({j: pd.arrays.SparseArray(a[:, j]) for j in range(a.shape[1])})

    monkeypatch.setattr(pd.DataFrame.sparse, "from_spmatrix", nan_filled)
    assert pd.DataFrame.sparse.from_spmatrix(sp.eye(2)).isna().to_numpy().any()  # the bug
    df = GraphData(sp.csr_matrix(np.eye(3)))[[2]].to_pandas()
    np.testing.assert_array_equal(df.to_numpy(dtype=float), [[0, 0, 1]])


# ------------------------------------------------------------------ budget
def test_privacy_report_states_epsilon_per_user(graph):
    G, y, fit, test = graph
    pipe = _pipe(eps=1.5).fit(G[fit], y[fit])
    rep = privacy_report(pipe)
    assert rep.local_epsilon == 1.5 and rep.epsilon_for("features") == 1.5
    assert rep.epsilon_for("labels") == 0.0
    assert [s.step for s in rep.spends] == ["hds"]
    text = str(rep)
    assert "hds: HDSMechanism epsilon=1.5 (local DP; protects features" in text
    assert "total local epsilon per user: 1.5" in text
    # a non-private pipeline says so: PPR read the users' features in the clear, and the
    # report reads the users' ledger, with the collection of the fit above
    plain = Pipeline([("ppr", PPRPropagation()), ("clf", SpyClassifier())]).fit(G[fit], y[fit])
    rep = privacy_report(plain)
    assert rep.local_epsilon == np.inf and "PPRPropagation read the users' features in the " \
        "clear: epsilon=inf" in str(rep)


@pytest.mark.slow
def test_cora_pipeline_end_to_end():
    b = load_cora()
    G, y = b.data, b.target
    train, val, test = random_node_split(y, random_state=0)
    pipe = Pipeline([("hds", HDSMechanism(eps=np.inf, k=G.shape[1], feature_range=(0, 1),
                                          random_state=0)),
                     ("ppr", PPRPropagation()),
                     ("clf", MLPHead(validation_fraction=1 / 3, random_state=0))])
    pipe.fit(G[train | val], y[train | val])
    assert pipe.score(G[test], y[test]) > 0.8


def _classifiers():
    from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier
    from skldp.central import DPGNNClassifier, DPMLPClassifier
    from skldp.models import (
        GATClassifier,
        GCNClassifier,
        LPGNNClassifier,
        RGNNClassifier,
        SAGEClassifier,
        SolitudeClassifier,
    )
    return [MLPHead(epochs=2), GCNClassifier(epochs=2), SAGEClassifier(epochs=2),
            GATClassifier(epochs=2), LPGNNClassifier(epochs=2, classes=[0, 1, 2]),
            LPGNNClassifier(epochs=2, eps_y=np.inf, classes=[0, 1, 2]),
            RGNNClassifier(epochs=2, alpha=0.0, classes=[0, 1, 2]), SolitudeClassifier(epochs=2),
            DPGNNClassifier(epochs=1, classes=[0, 1, 2]), DPGNNClassifier(epochs=1),
            DPMLPClassifier(epochs=1, classes=[0, 1, 2], accountant="hypergeometric"),
            LabelPropagationClassifier(),
            CorrectAndSmooth(LabelPropagationClassifier())]


@pytest.mark.parametrize("clf", _classifiers(), ids=lambda c: type(c).__name__)
def test_a_classifier_on_the_raw_features_is_charged_for_reading_them(graph, clf):
    """Every model that reads the users' raw features on the server says so in the
    ledger (epsilon inf); central-DP trainings protect them by their own epsilon, and
    label propagation reads the graph and the labels only."""
    G, y, fit, _ = graph
    G = G.new_simulation()   # users who have sent nothing yet
    if "batch_size" in clf.get_params():
        clf = clone(clf).set_params(batch_size=10)   # the graph's few training nodes
    rep = privacy_report(clf.fit(G[fit], y[fit]))
    if type(clf).__name__ in ("DPGNNClassifier", "DPMLPClassifier"):
        assert rep.epsilon_for("features") == 0 and rep.central_epsilon > 0
    elif type(clf).__name__ in ("LabelPropagationClassifier", "CorrectAndSmooth"):
        assert rep.epsilon_for("features") == 0
    else:
        assert rep.epsilon_for("features") == np.inf, type(clf).__name__


@pytest.mark.parametrize("clf", _classifiers(), ids=lambda c: type(c).__name__)
def test_a_fit_on_no_rows_is_a_clear_error(graph, clf):
    """An empty view (a split that selected nothing) is refused by name, not with an
    IndexError from deep inside, nor fitted on nothing (a model given its classes)."""
    G, y, _, _ = graph
    none = np.array([], dtype=int)
    with pytest.raises(ValueError, match=r"got 0 rows to fit on|n_samples = 0"):
        clf.fit(G[none], y[none])
