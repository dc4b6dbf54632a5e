"""privacy_report reads the ledger: every collection the users answered is counted."""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.mechanisms import HDSMechanism
from skldp.models import MLPHead
from skldp.propagation import PPRPropagation


@pytest.fixture
def data(small_graph):
    A, X, y = small_graph
    return GraphData(X, A), y


def _pipe(random_state=0):
    return Pipeline([("hds", HDSMechanism(1.0, k=2, feature_range=(-1, 2),
                                          random_state=random_state)),
                     ("ppr", PPRPropagation()),
                     ("clf", MLPHead(epochs=3, early_stopping=False, random_state=0))])


def test_search_over_eps_sums_every_candidate(data):
    G, y = data
    gs = GridSearchCV(_pipe(), {"hds__eps": [0.5, 1.0, 4.0], "ppr__alpha": [0.1, 0.2]},
                      cv=2).fit(G, y)
    rep = privacy_report(gs)
    # three collections, each answered once by every user (folds and refit reuse one)
    assert len(rep.spends) == 3
    assert rep.local_epsilon == pytest.approx(5.5)
    kept = [s for s in rep.spends if s.step]
    assert [s.step for s in kept] == ["best_estimator.hds"]
    assert kept[0].epsilon == gs.best_params_["hds__eps"]
    assert "total local epsilon per user: 5.5" in str(rep)
    assert rep.local_epsilon == G.ledger.local_epsilon


def test_a_fitted_template_is_not_named_after_the_search_scorer(data):
    # the template, fitted before the search, was reported as "scorer._estimator.hds"
    # (scikit-learn's scorer_ holds the template), as if the scorer had collected it
    G, y = data
    template = _pipe().set_params(hds__eps=2.0).fit(G, y)
    gs = GridSearchCV(template, {"hds__eps": [0.5, 1.0]}, cv=2).fit(G, y)
    rep = privacy_report(gs)
    assert not any("scorer" in (s.step or "") for s in rep.spends)
    assert "scorer" not in str(rep)
    assert [s.step for s in rep.spends if s.step] == ["best_estimator.hds"]
    assert rep.local_epsilon == pytest.approx(3.5)   # the template's 2 still counted


def test_search_over_public_params_only_spends_once(data):
    G, y = data
    rep = privacy_report(GridSearchCV(_pipe(), {"ppr__alpha": [0.1, 0.2]}, cv=2).fit(G, y))
    assert len(rep.spends) == 1 and rep.local_epsilon == pytest.approx(1.0)


def test_search_over_other_mechanism_params_counts_settings(data):
    G, y = data
    rep = privacy_report(GridSearchCV(_pipe(), {"hds__k": [1, 2]}, cv=2).fit(G, y))
    assert len(rep.spends) == 2 and rep.local_epsilon == pytest.approx(2.0)


def test_unseeded_mechanism_is_a_new_collection_per_fit(data):
    G, y = data
    rep = privacy_report(GridSearchCV(_pipe(random_state=None), {"ppr__alpha": [0.1, 0.2]},
                                      cv=3).fit(G, y))
    # every candidate in every fold (2 x 3) + the refit: a fresh collection at eps = 1 each
    assert len(rep.spends) == 7
    assert rep.local_epsilon == pytest.approx(7.0)


@pytest.mark.long
def test_search_over_eps_and_k(data):
    G, y = data
    rep = privacy_report(GridSearchCV(_pipe(), {"hds__eps": [0.5, 4.0], "hds__k": [1, 2]},
                                      cv=2).fit(G, y))
    assert len(rep.spends) == 4 and rep.local_epsilon == pytest.approx(9.0)


def test_label_randomisers_built_inside_classifiers_are_counted(data):
    from skldp.models import LPGNNClassifier
    G, y = data
    pipe = Pipeline([("hds", HDSMechanism(1.0, k=2, feature_range=(-1, 2), random_state=0)),
                     ("clf", LPGNNClassifier(classes=[0, 1], x_steps=1, y_steps=1, epochs=2,
                                             early_stopping=False, random_state=0))])
    rep = privacy_report(GridSearchCV(pipe, {"clf__eps_y": [1.0, 2.0]}, cv=2).fit(G, y))
    # one feature collection and two label collections (eps_y = 1 and 2)
    assert len(rep.spends) == 3
    assert rep.local_epsilon == pytest.approx(4.0)
    assert rep.epsilon_for("labels") == pytest.approx(3.0)
    assert rep.epsilon_for("features") == pytest.approx(1.0)


def test_central_dp_models_trained_in_a_search_compose(data, monkeypatch):
    from skldp.central import DPMLPClassifier
    G, y = data
    calls = []
    fit = DPMLPClassifier.fit

    def counting_fit(self, *a, **k):
        calls.append(self)
        return fit(self, *a, **k)

    monkeypatch.setattr(DPMLPClassifier, "fit", counting_fit)
    clf = DPMLPClassifier(classes=[0, 1], batch_size=10, n_steps=3, noise_multiplier=1.0,
                          delta=1e-3, accountant="hypergeometric", random_state=0)
    gs = GridSearchCV(clf, {"lr": [0.01, 0.1]}, cv=2).fit(G, y)
    rep = privacy_report(gs)
    # each training's own guarantee (folds train on fewer nodes than the refit)
    assert len(rep.central) == len(calls) == 5
    assert rep.central_delta == pytest.approx(5e-3)
    assert rep.central_epsilon == pytest.approx(sum(c.epsilon_ for c in calls))
    assert len({c.epsilon_ for c in calls}) > 1


def test_mechanisms_inside_feature_union_and_column_transformer_are_found():
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion

    from skldp.mechanisms import LaplaceMechanism
    X = np.random.default_rng(11).random((30, 4))
    union = FeatureUnion([("lap", LaplaceMechanism(1.0, feature_range=(0, 1), random_state=0)),
                          ("hds", HDSMechanism(2.0, k=1, feature_range=(0, 1),
                                               random_state=0))])
    union.fit(X)
    assert privacy_report(union).local_epsilon == 0.0      # fitted, nothing sent yet
    union.transform(X)
    assert privacy_report(union).local_epsilon == pytest.approx(3.0)
    ct = ColumnTransformer([("lap", LaplaceMechanism(1.5, feature_range=(0, 1),
                                                     random_state=0), [0, 1])])
    X2 = np.random.default_rng(12).random((30, 4))
    ct.fit_transform(X2)
    rep = privacy_report(ct)
    assert [s.epsilon for s in rep.spends if s.step] == [1.5]     # its own collection
    # X2 may hold X's people (plain arrays carry no ids): the union's reports are added
    assert rep.plain_arrays and rep.local_epsilon == pytest.approx(1.5 + 3.0)


def test_an_estimator_without_private_steps_protects_nothing():
    from sklearn.base import BaseEstimator

    class Trainer(BaseEstimator):
        def __init__(self, steps=10):
            self.steps = steps

    t = Trainer()
    t.epsilon_, t.protects_ = 2.0, ("features",)    # an epsilon_ alone is no collection
    rep = privacy_report(t)
    assert rep.spends == [] and "nothing is protected" in str(rep)


def test_report_of_the_data_and_of_a_search_without_refit(data):
    G, y = data
    gs = GridSearchCV(_pipe(), {"hds__eps": [0.5, 1.0]}, cv=2, refit=False).fit(G, y)
    with pytest.raises(ValueError, match="privacy_report\\(G\\)"):
        privacy_report(gs)
    rep = privacy_report(G)
    assert len(rep.spends) == 2 and rep.local_epsilon == pytest.approx(1.5)


def test_a_model_fitted_on_the_users_data_as_it_is_reports_inf():
    # a model that reads the features in the clear leads to the ledger it charged; a step
    # from outside skldp records nothing, so with no ledger the report cannot say less than inf
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 40)
    G = GraphData(rng.random((40, 3)))
    rep = privacy_report(Pipeline([("c", MLPHead(epochs=2))]).fit(G, y))
    assert rep.local_epsilon == np.inf and not rep.no_private_step
    assert [s.model for s in rep.spends] == ["clear"] and rep.spends[0].kind == "MLPHead"
    rep = privacy_report(Pipeline([("c", LogisticRegression())]).fit(rng.random((40, 3)), y))
    assert rep.local_epsilon == rep.total_epsilon == np.inf and rep.no_private_step
    assert "nothing is protected" in str(rep)
    # the data's own ledger, untouched: nothing spent, and the report says so
    fresh = privacy_report(GraphData(rng.random((40, 3))))
    assert fresh.local_epsilon == 0 and "epsilon = 0" in str(fresh)
    with pytest.raises(NotFittedError):
        privacy_report(Pipeline([("c", MLPHead())]))
    with pytest.raises(TypeError, match="takes a fitted estimator"):
        privacy_report(np.zeros((3, 3)))


def test_features_exported_to_a_step_outside_skldp_are_read_in_the_clear():
    # np.asarray(G) hands the users' raw features to a step that records nothing (a
    # scikit-learn scaler or model): the users' ledger charges the read
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from skldp.mechanisms import EdgeRR, MultiBitMechanism
    rng = np.random.default_rng(0)
    X, y = rng.random((60, 5)), rng.integers(0, 2, 60)
    A = sp.triu(sp.random(60, 60, density=0.05, random_state=0, format="csr"), 1)
    A = ((A + A.T) > 0).astype(float)
    edges = EdgeRR(eps=1.0, random_state=0)
    for tail in ([("s", StandardScaler()), ("c", MLPHead(epochs=2))],
                 [("c", LogisticRegression())]):
        rep = privacy_report(Pipeline([("e", edges)] + tail).fit(GraphData(X, A), y))
        assert rep.local_epsilon == rep.epsilon_for("features") == np.inf
        assert "Array export of the features" in str(rep)
    # after a mechanism the array holds the users' reports: nothing more is charged
    reports = Pipeline([("m", MultiBitMechanism(1.0, feature_range=(0, 1), random_state=0)),
                        ("s", StandardScaler()), ("c", LogisticRegression())])
    assert privacy_report(reports.fit(GraphData(X, A), y)).local_epsilon == 1.0
    with pytest.raises(ValueError, match="what must be"):
        privacy_report(GraphData(X)).epsilon_for("feature")


def test_an_export_charges_the_rows_that_left_and_a_refit_resets_the_ledger():
    X, y = np.random.default_rng(0).random((60, 3)), np.arange(60) % 2
    G = GraphData(X)
    np.asarray(G[:30])
    assert int(np.isinf(G.ledger.spent(G.node_keys)).sum()) == 30   # the view's users only
    np.asarray(G[20:40])
    assert int(np.isinf(G.ledger.spent(G.node_keys)).sum()) == 40   # and then 10 more
    # a model fitted on a plain array records nothing and leads to no ledger: inf
    clf = MLPHead(epochs=2).fit(G, y)
    assert privacy_report(clf).spends                 # its users' ledger
    clf.fit(X, y)                                     # refitted: that ledger is not this fit's
    rep = privacy_report(clf)
    assert rep.no_private_step and rep.local_epsilon == rep.epsilon_for("features") == np.inf


def test_a_model_fitted_on_reports_made_elsewhere_reports_them():
    # the report of a pipeline fitted on reports (a mechanism fitted outside it, or real
    # devices) said the users sent no report (epsilon = 0)
    import scipy.sparse as sp

    from skldp.baselines import LabelPropagationClassifier
    rng = np.random.default_rng(0)
    A = sp.random(60, 60, density=0.1, random_state=0, format="csr")
    G, y = GraphData(rng.random((60, 3)), ((A + A.T) > 0).astype(float)), np.arange(60) % 2
    Z = HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(G)
    pipe = Pipeline([("ppr", PPRPropagation()), ("clf", MLPHead(epochs=2))]).fit(Z[:40], y[:40])
    rep = privacy_report(pipe)
    assert rep.local_epsilon == pytest.approx(1.0) and "HDSMechanism epsilon=1" in str(rep)
    lp = LabelPropagationClassifier().fit(G[:40], y[:40])    # its labels taken as given
    assert privacy_report(lp).local_epsilon == pytest.approx(1.0)
    # beside that ledger, a read of a plain array (no known users) is still inf
    pipe[-1].predict(np.asarray(Z.features)[:5])
    rep = privacy_report(pipe)
    assert rep.local_epsilon == np.inf and "a plain array: no known users" in str(rep)


def test_a_pipeline_on_plain_arrays_reports_its_mechanism():
    # a step after the mechanism reads its reports, as plain arrays: not a read in the clear
    from sklearn.preprocessing import StandardScaler

    from skldp import NodeWise
    from skldp.mechanisms import OneBitMechanism
    rng = np.random.default_rng(0)
    X = rng.random((60, 4))
    y = (X[:, 0] > 0.5).astype(int)
    for last in ([("clf", MLPHead(epochs=2))],
                 [("s", NodeWise(StandardScaler())), ("clf", MLPHead(epochs=2))]):
        pipe = Pipeline([("m", OneBitMechanism(1.0, feature_range=(0, 1), random_state=0)),
                         *last]).fit(X, y)
        assert privacy_report(pipe).local_epsilon == pytest.approx(4.0)


def test_estimators_held_in_a_bunch_are_walked():
    # scikit-learn's Bunch is a dict with a __dict__: it was walked as an object, and the
    # estimators it holds (a VotingClassifier's named_estimators_) were skipped
    from sklearn.linear_model import LogisticRegression
    from sklearn.utils import Bunch

    from skldp.accounting._report import _estimators_in
    lr = LogisticRegression()
    assert list(_estimators_in(Bunch(m=lr), "named")) == [("named.m", lr)]


@pytest.mark.parametrize("as_graph", [True, False])
def test_a_plain_step_fitted_before_a_mechanism_read_the_users_in_the_clear(as_graph):
    # The scaler learns from every user's raw row, the mechanism after it reads a plain
    # array: the report printed the mechanism's epsilon alone (the graph's ledger said inf).
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    from skldp import NodeWise
    from skldp.mechanisms import MultiBitMechanism

    rng = np.random.default_rng(55)   # a plain array's users are its content: its own
    X, y = rng.random((60, 4)), rng.integers(0, 3, 60)

    def report(first, second):
        pipe = Pipeline([("a", first), ("b", second), ("clf", LogisticRegression())])
        return privacy_report(pipe.fit(GraphData(X) if as_graph else X, y))

    def mech():
        return MultiBitMechanism(eps=1.0, feature_range=(-3, 3), random_state=0)

    for before in (StandardScaler(), FunctionTransformer(np.log1p)):
        rep = report(before, mech())
        assert rep.local_epsilon == rep.by_what["features"] == np.inf
        assert f"{type(before).__name__} read the users' features in the clear" in str(rep)
        assert "before a mechanism" in str(rep)
    if not as_graph:   # (on a GraphData the mechanism refuses the server's output)
        rep = report(NodeWise(StandardScaler()), mech())
        assert rep.local_epsilon == np.inf and "StandardScaler read" in str(rep)
    # after the mechanism, or on the device (inside a container too), a step reads no raw row
    assert _its_own_collection_alone(report(mech(), StandardScaler(with_mean=False)))

    def on_device():
        return NodeWise(SimpleImputer(strategy="constant"), on_device=True)

    assert _its_own_collection_alone(report(on_device(), mech()))
    assert _its_own_collection_alone(report(Pipeline([("od", on_device())]), mech()))


def _its_own_collection_alone(rep, eps=1.0):
    """The report holds its step's collection of ``eps`` and no read in the clear (on a plain
    array, the other plain arrays' collections of the test are added)."""
    assert all(s.model != "clear" for s in rep.spends)
    assert [s.epsilon for s in rep.spends if s.step] == [eps]
    return rep.plain_arrays or rep.local_epsilon == eps


def test_branches_beside_a_mechanism_pass_the_users_rows_on_in_the_clear():
    # a column transformer with a mechanism on some columns and a scaler (or passthrough)
    # on the others printed the mechanism's epsilon alone on a plain array
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import FeatureUnion
    from sklearn.preprocessing import StandardScaler

    from skldp.baselines import GraphFeatureUnion, StructuralFeatures
    from skldp.mechanisms import MultiBitMechanism

    rng = np.random.default_rng(56)   # a plain array's users are its content: its own
    X, y = rng.random((60, 4)), rng.integers(0, 3, 60)

    def mech():
        return MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)

    def report(first, data=X):
        pipe = Pipeline([("first", first), ("clf", LogisticRegression())])
        return privacy_report(pipe.fit(data, y))

    for beside in (StandardScaler(), "passthrough"):
        rep = report(ColumnTransformer([("m", mech(), [0, 1]), ("other", beside, [2, 3])]))
        assert rep.local_epsilon == np.inf and "beside a mechanism" in str(rep)
    rep = report(FeatureUnion([("m", mech()), ("raw", "passthrough")]))
    assert rep.local_epsilon == np.inf
    # the mechanism alone, or beside a step that reads the graph only: no raw row passes
    assert _its_own_collection_alone(report(ColumnTransformer([("m", mech(), [0, 1, 2, 3])])))
    A = (rng.random((60, 60)) < 0.1).astype(float)
    union = GraphFeatureUnion([("structure", StructuralFeatures(random_state=0)),
                               ("private", mech())])
    assert report(union, GraphData(X, np.maximum(A, A.T))).local_epsilon == 1.0


def test_a_step_before_an_edge_mechanism_is_not_said_to_stand_before_a_mechanism():
    # only a mechanism of the features reads the rows a step before it returns; before an
    # edge mechanism the step's read is the graph's own clear read, charged once
    import scipy.sparse as sp
    from sklearn.preprocessing import StandardScaler

    from skldp import NodeWise
    from skldp.mechanisms import EdgeRR
    from skldp.models import GCNClassifier

    rng = np.random.default_rng(0)
    A = sp.random(40, 40, density=0.1, random_state=0)
    A = sp.csr_matrix(((A + A.T) > 0).astype(float))
    A.setdiag(0)
    A.eliminate_zeros()
    pipe = Pipeline([("scale", NodeWise(StandardScaler())),
                     ("edges", EdgeRR(2.0, random_state=0)),
                     ("clf", GCNClassifier(epochs=2, random_state=0))])
    rep = privacy_report(pipe.fit(GraphData(rng.random((40, 4)), A), rng.integers(0, 2, 40)))
    assert rep.by_what["edges"] == 2.0 and rep.by_what["features"] == np.inf
    assert "before a mechanism" not in str(rep)
    assert [s.kind for s in rep.spends if s.model == "clear"] == ["NodeWise", "GCNClassifier"]


def test_a_search_over_a_plain_array_adds_every_fold():
    # Each fold of a plain array is another array, whose rows get other keys and
    # independent noise: a person in two training folds and the refit sent three reports,
    # and the report printed the refit's one (1.0).
    import warnings

    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold

    from skldp.mechanisms import MultiBitMechanism
    rng = np.random.default_rng(0)
    X, y = rng.random((60, 5)), rng.integers(0, 2, 60)
    pipe = Pipeline([("m", MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)),
                     ("clf", LogisticRegression())])
    with warnings.catch_warnings():   # each fold's scoring refuses the held-out array
        warnings.simplefilter("ignore")
        search = GridSearchCV(pipe, {"clf__C": [0.1, 1.0]}, cv=KFold(3)).fit(X, y)
    rep = privacy_report(search)
    assert rep.plain_arrays and rep.local_epsilon == pytest.approx(4.0)   # >= the true 3.0
    assert "plain arrays carry no user ids" in str(rep)
    # a GraphData's users are its own: the plain arrays of the process are not theirs
    G = GraphData(X)
    graph_rep = privacy_report(Pipeline([("m", MultiBitMechanism(eps=1.0, feature_range=(0, 1))),
                                         ("clf", LogisticRegression())]).fit(G, y))
    assert not graph_rep.plain_arrays and graph_rep.local_epsilon == pytest.approx(1.0)
    assert privacy_report(G).local_epsilon == pytest.approx(1.0)


def test_an_edge_collections_line_says_its_epsilon_is_per_adjacency_list():
    # Before: "EdgeRR epsilon=1 (local DP; protects edges; ...)" read as epsilon per edge,
    # though an edge between two users is in both lists (an audit of one edge: up to 2x)
    import scipy.sparse as sp

    from skldp.mechanisms import EdgeRR
    A = sp.csr_array(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    G = GraphData(np.zeros((3, 1)), A)
    HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(G)
    EdgeRR(1.0, random_state=0).fit_transform(G)
    lines = str(privacy_report(G)).splitlines()
    edges, = (line for line in lines if "EdgeRR" in line)
    assert "protects edges, each user's adjacency list: one edge is in two lists;" in edges
    assert any("protects features; 3 users" in line for line in lines)   # the others: as they were


@pytest.mark.parametrize("as_graph", [False, True], ids=["array", "GraphData"])
def test_a_plain_step_fitted_before_a_central_training_read_the_users_in_the_clear(as_graph):
    # The scaler's means and scales, learnt in the clear from the private rows, are
    # released with the pipeline: the report printed the training's epsilon alone
    # (audit lower bound 4.07 against a printed 0.066 on the scaler's mean).
    from sklearn.preprocessing import StandardScaler

    from skldp import NodeWise
    from skldp.central import DPMLPClassifier

    rng = np.random.default_rng(56)
    X, y = rng.normal(size=(80, 4)), rng.integers(0, 2, 80)

    def dp():
        return DPMLPClassifier(classes=[0, 1], batch_size=20, n_steps=3, noise_multiplier=1.0,
                               accountant="hypergeometric", device="cpu", random_state=0)

    befores = [StandardScaler()] + ([] if as_graph else [NodeWise(StandardScaler())])
    for before in befores:
        pipe = Pipeline([("scale", before), ("clf", dp())])
        rep = privacy_report(pipe.fit(GraphData(X) if as_graph else X, y))
        assert rep.total_epsilon == rep.by_what["features"] == np.inf
        assert "before a central DP training" in str(rep)
    # the training alone (or after a mechanism) prints its own epsilon
    rep = privacy_report(Pipeline([("clf", dp())]).fit(X, y))
    assert np.isfinite(rep.total_epsilon) and rep.central_epsilon > 0


def test_the_docstring_names_every_error_privacy_report_raises(data):
    # it named NotFittedError only; a non-estimator (TypeError) and a search without refit
    # (ValueError) were raised all the same
    from numpydoc.docscrape import FunctionDoc
    from sklearn.exceptions import NotFittedError
    raises = {p.type.rsplit(".", 1)[-1] for p in FunctionDoc(privacy_report)["Raises"]}
    G, y = data
    search = GridSearchCV(_pipe(), {"hds__eps": [0.5, 1.0]}, cv=2, refit=False).fit(G, y)
    for bad, error in [(Pipeline([("c", MLPHead())]), NotFittedError),
                       (np.zeros((3, 3)), TypeError), (search, ValueError)]:
        with pytest.raises(error):
            privacy_report(bad)
        assert error.__name__ in raises, (error, raises)


def test_a_search_without_refit_on_plain_arrays_is_told_what_to_do(data):
    # the error said "privacy_report(G)", which a search fitted on an array cannot do
    # (privacy_report refuses an array)
    G, y = data
    X = np.asarray(G.features[G.rows])
    pipe = Pipeline([("hds", HDSMechanism(1.0, feature_range=(-1, 2), random_state=0)),
                     ("clf", MLPHead(epochs=1, early_stopping=False, random_state=0))])
    search = GridSearchCV(pipe, {"hds__eps": [0.5, 1.0]}, cv=2, refit=False).fit(X, y)
    with pytest.raises(ValueError, match="refit=False") as err:
        privacy_report(search)
    assert "plain array" in str(err.value) and "refit=True" in str(err.value)
