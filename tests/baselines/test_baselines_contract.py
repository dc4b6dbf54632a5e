"""The baselines keep the data contract: pandas output, parallel CV, string ids, no test labels."""

import numpy as np
import pytest
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.baselines import (
    CorrectAndSmooth,
    GraphFeatureUnion,
    LabelPropagationClassifier,
    StructuralFeatures,
)
from skldp.mechanisms import HDSMechanism
from skldp.model_selection import LabelledKFold, random_node_split
from skldp.models import MLPHead
from skldp.propagation import PPRPropagation


@pytest.fixture
def graph(small_graph):
    """60-node SBM with string user ids; 6 nodes unlabelled (-1)."""
    A, X, y = small_graph
    y = y.copy()
    y[::10] = -1
    ids = np.array([f"user{i:03d}" for i in range(len(y))])
    G = GraphData(X, A, node_ids=ids)
    train, val, test = random_node_split(y, 0.5, 0.25, 0.25, random_state=0)
    return G, y, train | val, test


class SpyProba(ClassifierMixin, BaseEstimator):
    """Uniform classifier that records the node ids and labels every fit saw."""

    log = []

    def fit(self, X, y):
        self.log.append((np.asarray(X.node_ids).copy(), np.asarray(y).copy()))
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        return np.full((len(X), len(self.classes_)), 1.0 / len(self.classes_))


def _hybrid():
    return Pipeline([
        ("union", GraphFeatureUnion([
            ("structure", StructuralFeatures(n_eigenvectors=4, n_components=16,
                                             random_state=0)),
            ("private", Pipeline([("hds", HDSMechanism(2.0, k=2, feature_range=(-1, 2),
                                                       random_state=0)),
                                  ("ppr", PPRPropagation())]))])),
        ("clf", MLPHead(epochs=20, early_stopping=False, random_state=0))])


def test_pandas_output_config_leaves_graph_pipelines_intact(graph):
    G, y, fit, test = graph
    with config_context(transform_output="pandas"):
        Z = StructuralFeatures(n_components=4, n_eigenvectors=1).fit_transform(G)
        assert isinstance(Z, GraphData)
        pipe = _hybrid().fit(G[fit], y[fit])
        assert 0 <= pipe.score(G[test], y[test]) <= 1
        cs = CorrectAndSmooth(LabelPropagationClassifier()).fit(G[fit], y[fit])
        assert cs.score(G[test], y[test]) > 0.8


def test_parallel_cross_validation_over_labelled_nodes(graph):
    G, y, _, _ = graph
    scores = cross_val_score(LabelPropagationClassifier(), G, y,
                             cv=LabelledKFold(3, shuffle=True, random_state=0), n_jobs=2)
    assert len(scores) == 3 and scores.min() > 0.8
    cs = cross_val_score(CorrectAndSmooth(LabelPropagationClassifier()), G[y >= 0], y[y >= 0],
                         cv=3)
    assert cs.min() > 0.8


def test_no_test_label_reaches_fit(graph):
    G, y, fit, test = graph
    SpyProba.log.clear()
    cs = CorrectAndSmooth(SpyProba()).fit(G[fit], y[fit])
    cs.predict(G[test])
    (ids, labels), = SpyProba.log
    np.testing.assert_array_equal(ids, G.node_ids[fit])
    np.testing.assert_array_equal(labels, y[fit])
    # the propagation is seeded with the fit rows only
    np.testing.assert_array_equal(np.sort(cs.train_keys_), np.sort(G.node_keys[fit]))
    lp = LabelPropagationClassifier().fit(G[fit], y[fit])
    np.testing.assert_array_equal(lp.train_keys_, G.node_keys[fit])
