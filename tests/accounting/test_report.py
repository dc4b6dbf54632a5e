"""privacy_report over hyperparameter searches: every distinct collection is counted."""

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
    assert rep.local_epsilon == gs.best_params_["hds__eps"]
    assert rep.search_collections == 3
    assert rep.search_epsilon == pytest.approx(5.5)
    assert "each user spent 5.5" in str(rep)


def test_search_over_public_params_only_spends_once(data):
    G, y = data
    rep = privacy_report(GridSearchCV(_pipe(), {"ppr__alpha": [0.1, 0.2]}, cv=2).fit(G, y))
    assert rep.search_epsilon is None and "WARNING" not in str(rep)


def test_search_over_other_mechanism_params_counts_settings(data):
    G, y = data
    rep = privacy_report(GridSearchCV(_pipe(), {"hds__k": [1, 2]}, cv=2).fit(G, y))
    assert rep.search_collections == 2 and rep.search_epsilon == pytest.approx(2.0)


class _CollectionLog:
    """Records every collection seed drawn (instrumenting the fits)."""

    def __init__(self, monkeypatch):
        import skldp.base
        import skldp.mechanisms._label_rr as label_rr
        from skldp.utils._random import collection_seed
        self.eps = {}

        def record(random_state, identity):
            seed = collection_seed(random_state, identity)
            # identities: (module, class, params, ...) or (module, class, eps, classes)
            p = identity[2]
            self.eps[seed] = float(p["eps"] if isinstance(p, dict) else p)
            return seed

        monkeypatch.setattr(skldp.base, "collection_seed", record)
        monkeypatch.setattr(label_rr, "collection_seed", record)

    @property
    def total(self):
        return sum(self.eps.values())


def test_unseeded_mechanism_is_a_new_collection_per_fit(data, monkeypatch):
    G, y = data
    log = _CollectionLog(monkeypatch)
    rep = privacy_report(GridSearchCV(_pipe(random_state=None), {"ppr__alpha": [0.1, 0.2]},
                                      cv=3).fit(G, y))
    # every candidate in every fold (2 x 3) + the refit: a fresh collection at eps = 1 each
    assert len(log.eps) == 7
    assert rep.search_collections == len(log.eps)
    assert rep.search_epsilon == pytest.approx(log.total)


def test_search_report_matches_the_collections_made(data, monkeypatch):
    G, y = data
    log = _CollectionLog(monkeypatch)
    rep = privacy_report(GridSearchCV(_pipe(), {"hds__eps": [0.5, 4.0], "hds__k": [1, 2]},
                                      cv=2).fit(G, y))
    assert len(log.eps) == 4 == rep.search_collections
    assert rep.search_epsilon == pytest.approx(log.total) == pytest.approx(9.0)


def test_label_randomisers_built_inside_classifiers_are_counted(data, monkeypatch):
    from skldp.models import LPGNNClassifier
    G, y = data
    log = _CollectionLog(monkeypatch)
    pipe = Pipeline([("hds", HDSMechanism(1.0, k=2, feature_range=(-1, 2), random_state=0)),
                     ("clf", LPGNNClassifier(classes=[0, 1], x_steps=1, y_steps=1, epochs=2,
                                             early_stopping=False, random_state=0))])
    rep = privacy_report(GridSearchCV(pipe, {"clf__eps_y": [1.0, 2.0]}, cv=2).fit(G, y))
    # one feature collection and two label collections (eps_y = 1 and 2)
    assert len(log.eps) == 3 == rep.search_collections
    assert rep.search_epsilon == pytest.approx(log.total) == pytest.approx(4.0)


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
    assert rep.search_trainings == len(calls) == 5
    assert rep.search_central_delta == pytest.approx(5e-3)
    assert "non-private validation" in str(rep)
    assert rep.search_central_epsilon >= 5 * min(c.epsilon_ for c in calls) - 1e-9


def test_mechanisms_inside_feature_union_and_column_transformer_are_found():
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion

    from skldp.mechanisms import LaplaceMechanism
    X = np.random.default_rng(0).random((30, 4))
    union = FeatureUnion([("lap", LaplaceMechanism(1.0, feature_range=(0, 1), random_state=0)),
                          ("hds", HDSMechanism(2.0, k=1, feature_range=(0, 1),
                                               random_state=0))]).fit(X)
    assert privacy_report(union).local_epsilon == pytest.approx(3.0)
    ct = ColumnTransformer([("lap", LaplaceMechanism(1.5, feature_range=(0, 1),
                                                     random_state=0), [0, 1])]).fit(X)
    assert privacy_report(ct).local_epsilon == pytest.approx(1.5)


def test_integer_steps_parameter_is_not_mistaken_for_a_pipeline():
    from sklearn.base import BaseEstimator

    class Trainer(BaseEstimator):
        def __init__(self, steps=10):
            self.steps = steps

    t = Trainer()
    t.epsilon_, t.protects_ = 2.0, ("features",)
    assert privacy_report(t).local_epsilon == 2.0
