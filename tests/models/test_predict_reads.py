"""What the local models read outside ``fit`` and the ledger records.

* Prediction (``predict``, ``predict_proba``, ``decision_function``, a link predictor's
  ``embed`` and ``score``) reads the features of the graph it is given: raw features are
  charged as read in the clear (epsilon = inf), exactly as ``fit`` is, and a population
  with a budget refuses it; reports cost nothing more.
* A link predictor trains on pair labels. When an edge mechanism collected the graph it
  trains on, labels read from the users' true graph hand it their true edges: the users at
  the ends of the fit pairs are charged a read of their edges in the clear. Pairs labelled
  from the collected graph (``random_edge_split`` of the mechanism's output) are not.
"""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.mechanisms import EdgeRR, MultiBitMechanism
from skldp.model_selection import PairData, random_edge_split
from skldp.models import (
    GCNClassifier,
    HadamardLinkPredictor,
    LPGNNClassifier,
    MLPHead,
    RGNNClassifier,
    SAGEClassifier,
    SolitudeClassifier,
    VGAELinkPredictor,
)
from skldp.population import BudgetExceededError


def _graph(n=90, d=6, seed=0, budget=None):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    X = (rng.random((n, d)) < 0.1 + 0.5 * (y[:, None] == np.arange(d) % 3)).astype(float)
    A = np.triu(rng.random((n, n)) < np.where(y[:, None] == y[None, :], 0.15, 0.01), 1)
    A = sp.csr_array((A | A.T).astype(float))
    return GraphData(X, A, budget=budget), y


def _reports(G):
    return MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0).fit_transform(G)


MODELS = {
    "mlp": lambda: MLPHead(epochs=5, random_state=0),
    "gcn": lambda: GCNClassifier(epochs=5, random_state=0),
    "sage": lambda: SAGEClassifier(epochs=5, random_state=0),
    "solitude": lambda: SolitudeClassifier(epochs=5, random_state=0),
    "lpgnn": lambda: LPGNNClassifier(eps_y=1.0, classes=[0, 1, 2], epochs=5, random_state=0),
    "rgnn": lambda: RGNNClassifier(eps_y=1.0, classes=[0, 1, 2], epochs=5, alpha=0.0,
                                   random_state=0),
}


# ------------------------------------------------------------------ node classifiers
@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("method", ["predict", "predict_proba", "decision_function"])
def test_predicting_on_raw_features_is_charged_as_fit_is(name, method):
    G, y = _graph()
    Z = _reports(G)
    clf = MODELS[name]().fit(Z[:60], y[:60])
    spent = privacy_report(G).local_epsilon
    assert np.isfinite(spent)
    on_reports = getattr(clf, method)(Z[60:])
    assert privacy_report(G).local_epsilon == spent   # reports: nothing more
    getattr(clf, method)(G[60:])                      # the forward pass reads raw X
    rep = privacy_report(G)
    assert rep.local_epsilon == rep.epsilon_for("features") == np.inf
    assert f"{type(clf).__name__} read the users' features in the clear" in str(rep)
    # the model keeps the ledger it charged: its own report states inf
    assert privacy_report(clf).local_epsilon == np.inf
    # a prediction on reports is unchanged by the charge: bit for bit on the CPU; on CUDA
    # Solitude's learned degrees are scatter-adds whose order varies (the user guide's
    # "Models" says so), in the last bits only
    again = getattr(clf, method)(Z[60:])
    if torch.cuda.is_available():
        np.testing.assert_allclose(again, on_reports, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(again, on_reports)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_predicting_on_raw_features_is_refused_under_a_budget(name):
    G, y = _graph(budget=4.0)
    Z = _reports(G)
    clf = MODELS[name]().fit(Z[:60], y[:60])
    with pytest.raises(BudgetExceededError, match="in the clear"):
        MODELS[name]().fit(G[:60], y[:60])            # fit on raw X: refused ...
    for method in ("predict", "predict_proba", "decision_function"):
        with pytest.raises(BudgetExceededError, match="in the clear"):
            getattr(clf, method)(G[60:])              # ... and so is predict
    assert np.isfinite(privacy_report(G).local_epsilon)
    clf.predict(Z[60:])                               # reports: accepted



@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("other", ["width", "names"])
@pytest.mark.parametrize("budget", [None, 4.0])
def test_a_prediction_refused_for_its_columns_charges_nothing(name, other, budget):
    # The GNNs noted their reads of the raw features and edges before they compared the
    # columns with fit's: a graph of another width, or other feature names, left a read in
    # the clear (epsilon inf) behind the ValueError; under a budget it met
    # BudgetExceededError instead. (MLPHead compared first.)
    G, y = _graph()
    Z = _reports(G)
    d = Z.shape[1]
    Zn = GraphData(np.asarray(Z), Z.adjacency, feature_names=[f"f{j}" for j in range(d)])
    clf = MODELS[name]().fit(Zn[:60], y[:60])
    X = np.asarray(G.features)
    if other == "width":
        H = GraphData(np.c_[X, X[:, :1]], G.adjacency, budget=budget)
        error = f"has {d + 1} features"
    else:
        H = GraphData(X, G.adjacency, feature_names=[f"g{j}" for j in range(d)],
                      budget=budget)
        error = "feature names should match"
    for method in ("predict", "predict_proba", "decision_function"):
        with pytest.raises(ValueError, match=error):
            getattr(clf, method)(H[60:])
    assert len(H.ledger) == 0



GRAPH_MODELS = sorted(set(MODELS) - {"mlp"})


@pytest.mark.parametrize("name", GRAPH_MODELS)
@pytest.mark.parametrize("budget", [None, 4.0])
def test_a_prediction_refused_for_want_of_a_graph_charges_nothing(name, budget):
    # The GNNs noted their reads before they found that X had no adjacency (or was no
    # GraphData): a read in the clear was charged to the graph's users (BudgetExceededError
    # under a budget instead of the error), and a plain array marked the model's own
    # report inf though nothing was predicted.
    G, y = _graph()
    clf = MODELS[name]().fit(_reports(G)[:60], y[:60])
    H = GraphData(np.asarray(G.features), budget=budget)   # no adjacency
    for method in ("predict", "predict_proba", "decision_function"):
        with pytest.raises(ValueError, match="no adjacency"):
            getattr(clf, method)(H[60:])
        with pytest.raises(TypeError, match="needs the graph"):
            getattr(clf, method)(np.asarray(G.features)[60:])
    assert len(H.ledger) == 0
    assert np.isfinite(privacy_report(clf).local_epsilon)


def test_predictions_are_unchanged_by_the_charge():
    G, y = _graph()
    clf = GCNClassifier(epochs=5, random_state=0).fit(_reports(G)[:60], y[:60])
    # the same raw graph under other users (population): charged separately, same output
    G2 = GraphData(G.features, G.adjacency)
    np.testing.assert_array_equal(clf.predict_proba(G[60:]), clf.predict_proba(G2[60:]))
    np.testing.assert_array_equal(clf.predict_proba(G[60:]), clf.predict_proba(G[60:]))


def test_a_graph_is_charged_once_not_at_every_prediction(monkeypatch):
    # no hashing of the users' keys after the first prediction on a graph (its token)
    from skldp.population import _population
    G, y = _graph()
    clf = MLPHead(epochs=5, random_state=0).fit(_reports(G)[:60], y[:60])
    clf.predict(G[60:])
    calls = []
    real = _population.answer_tags
    monkeypatch.setattr(_population, "answer_tags",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    for rows in (slice(60, 70), slice(70, 90), slice(0, 90)):
        clf.predict_proba(G[rows])
    assert calls == []


def test_predicting_on_a_plain_array_marks_the_read_unrecorded():
    G, y = _graph()
    Z = _reports(G)
    clf = MLPHead(epochs=5, random_state=0).fit(Z[:60], y[:60])
    assert not getattr(clf, "_reads_unrecorded", False)
    clf.predict(G.features[60:])    # rows of no known users: the report states inf
    assert privacy_report(clf).local_epsilon == np.inf


# ------------------------------------------------------------------ link predictors
def _split(G, **kw):
    return random_edge_split(G, random_state=0, **kw)


LINKS = {
    "vgae": lambda: VGAELinkPredictor(epochs=5, min_epochs=0, random_state=0),
    "hadamard": lambda: HadamardLinkPredictor(epochs=5, random_state=0),
}


@pytest.mark.parametrize("name", sorted(LINKS))
def test_link_prediction_on_raw_features_is_charged(name):
    G, _ = _graph()
    P_tr, _, P_te, y_tr, _, y_te = _split(G)
    mb = MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)
    link = LINKS[name]().fit(mb.fit_transform(P_tr), y_tr)
    R_te = mb.transform(P_te)
    scores = link.decision_function(R_te)
    assert privacy_report(G).local_epsilon == pytest.approx(1.0)
    link.score(P_te, y_te)                               # raw node features
    assert privacy_report(G).epsilon_for("features") == np.inf
    np.testing.assert_array_equal(link.decision_function(R_te), scores)


@pytest.mark.parametrize("name", sorted(LINKS))
def test_link_prediction_on_raw_features_is_refused_under_a_budget(name):
    G, _ = _graph(budget=4.0)
    P_tr, _, P_te, y_tr, _, _ = _split(G)
    mb = MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)
    link = LINKS[name]().fit(mb.fit_transform(P_tr), y_tr)
    methods = ["predict", "predict_proba", "decision_function"] + \
        (["embed"] if name == "vgae" else [])
    for method in methods:
        with pytest.raises(BudgetExceededError, match="in the clear"):
            getattr(link, method)(P_te)
    link.predict(mb.transform(P_te))


def _on_collected_edges(link, *between):
    """EdgeRR -> multi-bit features -> (steps ``between``) -> ``link``."""
    return Pipeline([("edges", EdgeRR(eps=1.0, random_state=0)),
                     ("mb", MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)),
                     *between, ("link", link)])


@pytest.mark.parametrize("name", sorted(LINKS))
def test_true_edge_labels_on_a_collected_graph_are_read_in_the_clear(name):
    G, _ = _graph()
    P_tr, _, _, y_tr, _, _ = _split(G)
    pipe = _on_collected_edges(LINKS[name]()).fit(P_tr, y_tr)
    rep = privacy_report(pipe)
    assert rep.epsilon_for("edges") == rep.local_epsilon == np.inf
    assert rep.epsilon_for("features") == pytest.approx(1.0)
    assert f"{type(pipe[-1]).__name__} read the users' edges in the clear" in str(rep)
    # the users at the ends of the fit pairs, no one else
    spent = G.ledger.spent(G.node_keys)
    ends = np.unique(P_tr.pairs)
    assert np.all(np.isinf(spent[ends]))
    assert np.all(np.isfinite(spent[np.setdiff1d(np.arange(G.n_nodes), ends)]))


@pytest.mark.parametrize("name", sorted(LINKS))
def test_true_edge_labels_on_a_collected_graph_are_refused_under_a_budget(name):
    G, _ = _graph(budget=5.0)
    P_tr, _, _, y_tr, _, _ = _split(G)
    pipe = _on_collected_edges(LINKS[name]())
    # the split read the true graph: the edge mechanism refuses to collect these edges
    with pytest.raises(BudgetExceededError, match=r"already read \(random_edge_split\)"):
        pipe.fit(P_tr, y_tr)
    assert np.isfinite(G.ledger.local_epsilon)


@pytest.mark.parametrize("name", sorted(LINKS))
def test_a_server_step_after_the_edge_mechanism_keeps_the_edges_collected(name):
    # a degree-bounded sample of EdgeRR's graph hid the collection: true pair labels were
    # accepted under a budget, and the report gave the edges EdgeRR's epsilon
    from skldp.central import DegreeBoundedSampler
    G, _ = _graph(budget=5.0)
    P_tr, _, _, y_tr, _, _ = _split(G)
    pipe = _on_collected_edges(LINKS[name](), ("deg", DegreeBoundedSampler(50, random_state=0)))
    with pytest.raises(BudgetExceededError, match=r"already read \(random_edge_split\)"):
        pipe.fit(P_tr, y_tr)


def test_a_model_fitted_on_collected_edges_is_charged_for_true_edges_at_predict():
    # it aggregated over the true graph at predict with nothing charged, even under a cap
    G, y = _graph(budget=3.0)
    noisy = EdgeRR(eps=1.0, random_state=0).fit_transform(G)
    Z = _reports(noisy)
    gcn = GCNClassifier(epochs=5, random_state=0).fit(Z[:60], y[:60])
    gcn.predict(Z[60:])                              # the collected graph: nothing more
    true_graph = _reports(G)                          # the same reports over the true edges
    with pytest.raises(BudgetExceededError, match="read the edges .* in the clear"):
        gcn.predict(true_graph[60:])
    H, _ = _graph()                                   # no budget: charged
    gcn = GCNClassifier(epochs=5, random_state=0).fit(
        _reports(EdgeRR(eps=1.0, random_state=0).fit_transform(H))[:60], y[:60])
    gcn.predict(_reports(H)[60:])
    assert privacy_report(H).epsilon_for("edges") == np.inf
    # fitted on the true graph (taken as given), reading it again costs nothing
    K, _ = _graph()
    GCNClassifier(epochs=5, random_state=0).fit(_reports(K)[:60], y[:60]).predict(
        _reports(K)[60:])
    assert privacy_report(K).epsilon_for("edges") == 0


@pytest.mark.parametrize("name", sorted(LINKS))
def test_pairs_labelled_from_the_collected_graph_read_no_true_edge(name):
    G, _ = _graph(budget=5.0)
    noisy = EdgeRR(eps=1.0, random_state=0).fit_transform(G)
    P_tr, P_va, P_te, y_tr, y_va, _ = _split(noisy)
    # the training graph stays the mechanism's reports: not collected again ...
    with pytest.raises(ValueError, match="reports of EdgeRR"):
        EdgeRR(eps=1.0, random_state=1).fit_transform(P_tr)
    # ... and labels read from it cost nothing more
    mb = MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)
    pipe = Pipeline([("mb", mb), ("link", LINKS[name]())])
    pipe.fit(P_tr.concat(P_va), np.r_[y_tr, y_va])
    pipe.predict(P_te)
    rep = privacy_report(G)
    assert rep.epsilon_for("edges") == pytest.approx(1.0)
    assert rep.local_epsilon == pytest.approx(2.0)
    # pairs the caller built over that graph: their labels may be the true edges
    with pytest.raises(BudgetExceededError, match="pair labels"):
        Pipeline([("mb", mb), ("link", LINKS[name]())]).fit(PairData(noisy, P_tr.pairs), y_tr)


def test_without_an_edge_mechanism_the_graph_is_taken_as_given():
    # as documented (docs/privacy.rst): no edge mechanism, nothing charged for the edges
    G, _ = _graph(budget=5.0)
    P_tr, _, P_te, y_tr, _, _ = _split(G)
    pipe = Pipeline([("mb", MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)),
                     ("link", HadamardLinkPredictor(epochs=5, random_state=0))])
    pipe.fit(P_tr, y_tr).predict(P_te)
    rep = privacy_report(pipe)
    assert rep.local_epsilon == pytest.approx(1.0) and rep.epsilon_for("edges") == 0


def test_split_keeps_the_origin_of_the_graph_and_the_labels():
    G, _ = _graph()
    P_tr, P_va, _, _, _, _ = _split(G)
    assert P_tr._store.adjacency_origin == G._store.adjacency_origin == ("raw", ())
    noisy = EdgeRR(eps=1.0, random_state=0).fit_transform(G)
    Q_tr, Q_va, _, _, _, _ = _split(noisy)
    origin = noisy._store.adjacency_origin
    assert Q_tr._store.adjacency_origin == origin
    for P in (Q_tr, Q_tr[:5], Q_tr.concat(Q_va), Q_tr.with_features(np.zeros((90, 2)))):
        assert P._labels_from == origin
    mixed = Q_tr.concat(PairData._from_pairs(Q_tr._store, Q_tr.pairs[:3]))   # one unknown
    assert mixed._labels_from is None
    assert PairData(noisy, [[0, 1]])._labels_from is None


def _graph_steps():
    from skldp.baselines import StructuralFeatures
    from skldp.central import DegreeBoundedSampler
    from skldp.propagation import FeatureSmoothing, GCNAggregation, KProp, PPRPropagation
    return {"ppr": PPRPropagation, "kprop": KProp, "gcn_aggregation": GCNAggregation,
            "smoothing": FeatureSmoothing, "structural": StructuralFeatures,
            "degree_sample": lambda: DegreeBoundedSampler(50, random_state=0)}


@pytest.mark.parametrize("name", sorted(_graph_steps()))
def test_a_graph_step_fitted_on_collected_edges_is_charged_for_true_edges(name):
    # only models were charged: propagation at predict read the true graph for free
    step = _graph_steps()[name]
    G, y = _graph(budget=3.0)
    Z = _reports(EdgeRR(eps=1.0, random_state=0).fit_transform(G))
    pipe = Pipeline([("graph", step()), ("clf", MLPHead(epochs=5, random_state=0))])
    pipe.fit(Z[:60], y[:60]).predict(Z[60:])       # the collected graph: nothing more
    assert G.ledger.epsilon_for("edges") == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError, match="in the clear"):
        pipe.predict(_reports(G)[60:])            # the same reports over the true edges
    H, _ = _graph()                                 # no budget: charged
    pipe = Pipeline([("graph", step()), ("clf", MLPHead(epochs=5, random_state=0))])
    pipe.fit(_reports(EdgeRR(eps=1.0, random_state=0).fit_transform(H))[:60], y[:60])
    pipe.predict(_reports(H)[60:])
    rep = privacy_report(H)
    assert rep.epsilon_for("edges") == np.inf
    assert "read the users' edges in the clear" in str(rep)
    # fitted on the true graph (taken as given), reading it again costs nothing
    K, _ = _graph()
    Pipeline([("graph", step()), ("clf", MLPHead(epochs=5, random_state=0))]).fit(
        _reports(K)[:60], y[:60]).predict(_reports(K)[60:])
    assert privacy_report(K).epsilon_for("edges") == 0
