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


def test_unseeded_mechanism_is_a_new_collection_per_fold(data):
    G, y = data
    rep = privacy_report(GridSearchCV(_pipe(random_state=None), {"ppr__alpha": [0.1, 0.2]},
                                      cv=3).fit(G, y))
    # 3 folds + the refit, each a fresh collection at eps = 1
    assert rep.search_collections == 4 and rep.search_epsilon == pytest.approx(4.0)
    assert not np.isnan(rep.search_epsilon)


def test_integer_steps_parameter_is_not_mistaken_for_a_pipeline():
    from sklearn.base import BaseEstimator

    class Trainer(BaseEstimator):
        def __init__(self, steps=10):
            self.steps = steps

    t = Trainer()
    t.epsilon_, t.protects_ = 2.0, ("features",)
    assert privacy_report(t).local_epsilon == 2.0
