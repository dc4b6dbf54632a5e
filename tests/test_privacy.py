"""forget_secrets: a fitted pipeline saved without seeds keeps its users' reports only."""

import pickle

import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.mechanisms import EdgeRR, GRRFSMechanism, HDSMechanism, LabelRandomizedResponse
from skldp.models import GCNClassifier, MLPHead
from skldp.privacy import forget_secrets
from skldp.propagation import PPRPropagation


def _estimators(value):
    if hasattr(value, "get_params"):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _estimators(v)


def _has_seed(obj, seen=None):
    """Whether any estimator reachable from ``obj`` (attributes, steps, branches) has seed_."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    if hasattr(obj, "seed_"):
        return True
    children = [c for v in vars(obj).values() for c in _estimators(v)]
    return any(_has_seed(c, seen) for c in children)


def test_pipeline_without_secrets_predicts_for_seen_users_only(small_graph):
    A, X, y = small_graph
    G = GraphData(X, A, node_ids=np.arange(100, 160))
    pipe = Pipeline([("hds", HDSMechanism(1.0, k=2, feature_range=(-1, 2), random_state=0)),
                     ("ppr", PPRPropagation()),
                     ("clf", MLPHead(epochs=5, early_stopping=False, random_state=0))])
    pipe.fit(G[:40], y[:40])
    before = pipe.predict(G[40:])
    reports = np.asarray(pipe[0].transform(G))
    forget_secrets(pipe, G)
    assert not _has_seed(pipe)
    restored = pickle.loads(pickle.dumps(pipe))
    np.testing.assert_array_equal(restored.predict(G[40:]), before)
    np.testing.assert_array_equal(np.asarray(restored[0].transform(G)), reports)
    # a new user has no report: the secret would be needed
    G_new = GraphData(np.vstack([X, X[:1]]), node_ids=np.arange(100, 161), population=G)
    with pytest.raises(ValueError, match="without its secret"):
        restored[0].transform(G_new)


def test_label_and_edge_secrets_are_forgotten(small_graph):
    A, X, y = small_graph
    G = GraphData(X, A, node_ids=np.arange(60))
    clf = GCNClassifier(epochs=2, early_stopping=False, random_state=0,
                        label_mechanism=LabelRandomizedResponse(1.0, classes=[0, 1],
                                                                random_state=0))
    pipe = Pipeline([("edges", EdgeRR(4.0, random_state=0)), ("clf", clf)]).fit(G, y)
    A_rand = pipe[0].transform(G).adjacency.toarray()
    forget_secrets(pipe, G)
    assert not _has_seed(pipe)
    np.testing.assert_array_equal(pipe[0].transform(G).adjacency.toarray(), A_rand)
    with pytest.raises(ValueError, match="without its secret"):
        pipe[1].label_mechanism_.randomize(y, G)


def test_plain_array_mechanism_without_secret():
    X = np.random.default_rng(0).integers(0, 3, size=(20, 4)).astype(float)
    mech = GRRFSMechanism(1.0, m=2, domain_sizes=3, random_state=0).fit(X)
    Z = mech.transform(X)
    forget_secrets(mech, X)
    assert not hasattr(mech, "seed_")
    np.testing.assert_array_equal(mech.transform(X), Z)


def test_saved_reports_are_served_in_a_worker_process(monkeypatch):
    # no device answers them, so the worker-process refusal does not apply (it did)
    import multiprocessing
    X = np.random.default_rng(0).random((20, 3))
    mech = HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit(X)
    Z = mech.transform(X)
    monkeypatch.setattr(multiprocessing, "parent_process", lambda: object())
    with pytest.raises(RuntimeError, match="worker process"):   # with its secret: refused
        mech.transform(X)
    monkeypatch.undo()
    forget_secrets(mech, X)
    monkeypatch.setattr(multiprocessing, "parent_process", lambda: object())
    np.testing.assert_array_equal(mech.transform(X), Z)


def test_secrets_inside_unions_and_meta_estimators_are_forgotten(small_graph):
    from skldp.baselines import CorrectAndSmooth, GraphFeatureUnion, StructuralFeatures
    A, X, y = small_graph
    G = GraphData(X, A, node_ids=np.arange(60))

    def private():
        return Pipeline([("hds", HDSMechanism(1.0, k=2, feature_range=(-1, 2),
                                              random_state=0)), ("ppr", PPRPropagation())])

    union = Pipeline([("union", GraphFeatureUnion([
        ("structure", StructuralFeatures(n_eigenvectors=2, n_components=8, random_state=0)),
        ("private", private())])), ("clf", MLPHead(epochs=3, early_stopping=False,
                                                     random_state=0))]).fit(G[:40], y[:40])
    cs = CorrectAndSmooth(Pipeline(private().steps + [
        ("clf", MLPHead(epochs=3, early_stopping=False, random_state=0))])).fit(G[:40], y[:40])
    for model in (union, cs):
        before = model.predict(G[40:])
        forget_secrets(model, G)
        assert not _has_seed(model)
        np.testing.assert_array_equal(model.predict(G[40:]), before)


def test_secrets_inside_calibrated_folds_are_reported_and_forgotten(small_graph):
    # CalibratedClassifierCV keeps its folds in objects that are not estimators: the
    # report said "no private step" (epsilon inf) and forget_secrets left every seed_
    from sklearn.calibration import CalibratedClassifierCV

    from skldp.accounting import privacy_report
    A, X, y = small_graph
    G = GraphData(X, A)
    pipe = Pipeline([("hds", HDSMechanism(1.0, k=2, feature_range=(-1, 2), random_state=0)),
                     ("ppr", PPRPropagation()), ("clf", MLPHead(epochs=5, random_state=0))])
    cal = CalibratedClassifierCV(pipe, cv=2).fit(G[:40], y[:40])
    rep = privacy_report(cal)
    assert not rep.no_private_step and rep.local_epsilon == pytest.approx(1.0)
    assert "HDSMechanism epsilon=1" in str(rep)
    before = cal.predict_proba(G[40:])
    assert _has_seed(cal.calibrated_classifiers_[0].estimator)
    forget_secrets(cal, G)
    assert not any(_has_seed(fold.estimator) for fold in cal.calibrated_classifiers_)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(cal)).predict_proba(G[40:]), before)


@pytest.mark.parametrize("skipped", ["passthrough", None])
def test_a_report_skips_a_pipeline_s_empty_steps(small_graph, skipped):
    # the non-private baseline (the mechanism step left out) crashed privacy_report
    from sklearn.model_selection import GridSearchCV

    from skldp.accounting import privacy_report
    A, X, y = small_graph
    G = GraphData(X, A)
    pipe = Pipeline([("hds", skipped), ("ppr", PPRPropagation()),
                     ("clf", MLPHead(epochs=5, random_state=0))]).fit(G[:40], y[:40])
    assert privacy_report(pipe).local_epsilon == np.inf
    H = GraphData(X, A)
    search = GridSearchCV(pipe, {"hds": [skipped]}, cv=2).fit(H[:40], y[:40])
    assert privacy_report(search).by_what["features"] == np.inf


@pytest.mark.parametrize("search_kind", ["grid", "randomized"])
def test_searched_seeds_of_private_steps_are_forgotten(small_graph, search_kind):
    # a search over a mechanism's random_state kept the tried integers (grid,
    # cv_results_, best_params_): each gives its collection's seed_ back
    from scipy.stats import randint
    from sklearn.model_selection import GridSearchCV, RandomizedSearchCV

    from skldp.utils import collection_seed
    A, X, y = small_graph
    G = GraphData(X, A)
    pipe = Pipeline([("hds", HDSMechanism(1.0, k=2, feature_range=(-1, 2), random_state=0)),
                     ("clf", MLPHead(epochs=3, weight_decay=0.0, random_state=0))])
    grid = {"hds__random_state": [987_654_321, 55_555], "clf__random_state": [3, 4]}
    if search_kind == "grid":
        search = GridSearchCV(pipe, grid, cv=2)
    else:
        grid["hds__random_state"] = randint(0, 10**9)
        search = RandomizedSearchCV(pipe, grid, n_iter=2, cv=2, random_state=0)
    search.fit(G[:40], y[:40])
    mech = search.best_estimator_[0]
    seed, body = mech.seed_, mech.collection_.seed_identity()
    assert collection_seed(search.best_params_["hds__random_state"], body) == seed
    forget_secrets(search, G)
    blob = pickle.dumps(search)
    assert str(seed).encode() not in blob and seed.to_bytes(8, "little") not in blob
    assert search.best_params_["hds__random_state"] is None
    assert all(c["hds__random_state"] is None for c in search.cv_results_["params"])
    assert set(search.cv_results_["param_hds__random_state"]) == {None}
    grid_kept = search.param_grid if search_kind == "grid" else search.param_distributions
    assert set(grid_kept["hds__random_state"]) == {None}
    if search_kind == "randomized":
        assert search.random_state is None   # it would draw the same seeds again
    # the model's own seed is not a user's secret: it stays
    assert search.best_params_["clf__random_state"] in (3, 4)
    assert {c["clf__random_state"] for c in search.cv_results_["params"]} <= {3, 4}


@pytest.mark.parametrize("layout", ["passthrough template", "scaler template", "nested"])
def test_searched_seeds_are_forgotten_whatever_the_search_s_layout(layout):
    # a grid that supplies the private step itself (the template's step being
    # "passthrough" crashed; a public one kept the seeds), and a search in another
    # search's template (unfitted: its grid kept the seeds)
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(3)
    G, y = GraphData(rng.random((80, 4))), np.tile([0, 1], 40)
    seeds = [987_654_321, 55_555_555]

    def pipe(first):
        return Pipeline([("m", first), ("clf", LogisticRegression())])

    hds = HDSMechanism(1.0, k=2, feature_range=(0, 1), random_state=0)
    if layout == "nested":
        inner = GridSearchCV(pipe(hds), {"m__random_state": seeds}, cv=2)
        search = GridSearchCV(inner, {"estimator__m__eps": [1.0, 2.0]}, cv=2)
    else:
        first = "passthrough" if layout == "passthrough template" else StandardScaler()
        search = GridSearchCV(pipe(first), [{"m": [hds], "m__random_state": seeds}], cv=2)
    forget_secrets(search.fit(G, y), G)
    blob = pickle.dumps(search)
    # pickle writes these ints in 4 bytes (BININT)
    assert not any(s.to_bytes(4, "little") in blob for s in seeds)


class _HoldsAMechanism(TransformerMixin, BaseEstimator):
    """A user's meta-estimator fitting a feature mechanism it holds (``mechanism_``)."""

    def __init__(self, mechanism=None):
        self.mechanism = mechanism

    def fit(self, X, y=None):
        self.mechanism_ = clone(self.mechanism).fit(X)
        return self

    def transform(self, X):
        return self.mechanism_.transform(X)


def test_a_feature_mechanism_held_by_another_step_is_named_not_a_type_error():
    """forget_secrets cannot know the data that reaches a feature mechanism inside an
    unknown step: it refuses with its own message (it raised a TypeError of a missing
    argument), and once the mechanism is forgotten with its own input, the whole is."""
    X = np.random.default_rng(0).random((20, 3))
    G = GraphData(X)
    meta = _HoldsAMechanism(HDSMechanism(eps=1.0, feature_range=(0, 1),
                                         random_state=0)).fit(G)
    want = meta.transform(G).features
    with pytest.raises(ValueError, match=r"could not tell what data reaches \['HDSMechanism'\]"):
        forget_secrets(meta, G)
    assert hasattr(meta.mechanism_, "seed_")   # nothing half done
    forget_secrets(meta.mechanism_, G)
    forget_secrets(meta, G)
    assert not hasattr(meta.mechanism_, "seed_") and meta.mechanism.random_state is None
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(meta)).transform(G).features, want)
