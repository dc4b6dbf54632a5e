"""GraphFeatureUnion on node pairs (PairData): the output keeps the pairs, as every graph
transformer's does, so that a link pipeline with a union fits."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.baselines import GraphFeatureUnion, StructuralFeatures
from skldp.mechanisms import LaplaceMechanism
from skldp.model_selection import PairData
from skldp.propagation import KProp


@pytest.fixture
def graph(small_graph):
    A, X, _ = small_graph
    return GraphData(X, A, feature_names=["a", "b", "c", "d", "e"])


def _union():
    return GraphFeatureUnion([
        ("s", StructuralFeatures(degree_bins=1, n_eigenvectors=0, n_components=0,
                                 random_state=0)),
        ("p", Pipeline([("lap", LaplaceMechanism(eps=1.0, feature_range=(-1, 2),
                                                 random_state=0)),
                        ("k", KProp(steps=1))]))])


def test_node_pairs_stay_pairs(graph):
    # the union returned the pairs' endpoint nodes: a link pipeline failed with
    # "Found input variables with inconsistent numbers of samples"
    P = PairData(graph, [[0, 1], [2, 5], [3, 4], [6, 7]])
    union = _union()
    Z = union.fit_transform(P)
    assert isinstance(Z, PairData) and Z.shape == (4, 7)
    np.testing.assert_array_equal(Z.pairs, P.pairs)
    nodes = np.asarray(union.transform(graph.full()))
    np.testing.assert_array_equal(np.asarray(Z), nodes[P.pairs[:, 0]] * nodes[P.pairs[:, 1]])
    assert list(Z.feature_names) == list(union.get_feature_names_out())
    Pipeline([("u", _union()), ("clf", LogisticRegression())]).fit(P, [1, 0, 1, 0])
