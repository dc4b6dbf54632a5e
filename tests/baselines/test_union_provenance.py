"""GraphFeatureUnion: the provenance of its output and its memo.

The union builds a new feature matrix on the server; it must carry over what its
branches' outputs were computed from: the users' raw features (a "passthrough"
branch: a model reading the union reads them in the clear, epsilon inf) and the
users' true edges (structural features: an edge mechanism after the union must
refuse it). Its memo must also tell apart unions that differ only in their weights.
"""

import numpy as np
import pytest
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.baselines import GraphFeatureUnion, StructuralFeatures
from skldp.mechanisms import EdgeRR
from skldp.models import MLPHead


@pytest.fixture
def graph(small_graph):
    A, X, y = small_graph
    return GraphData(X, A), y


def _structure():
    return StructuralFeatures(degree_bins=2, n_eigenvectors=2, n_components=4, random_state=0)


def test_a_passthrough_branch_makes_the_union_a_clear_read(graph):
    G, y = graph
    union = GraphFeatureUnion([("s", _structure()), ("raw", "passthrough")])
    pipe = Pipeline([("u", union), ("clf", MLPHead(epochs=1, early_stopping=False,
                                                   random_state=0))]).fit(G, y)
    rep = privacy_report(pipe)
    assert rep.epsilon_for("features") == np.inf and rep.local_epsilon == np.inf


def test_an_edge_mechanism_refuses_structural_features_of_the_true_edges(graph):
    G, _ = graph
    Z = GraphFeatureUnion([("s", _structure())]).fit_transform(G)
    with pytest.raises(ValueError, match="read the true edges"):
        EdgeRR(1.0, random_state=0).fit_transform(Z)


def test_unions_that_differ_only_in_weights(graph):
    G, _ = graph
    branches = [("s", _structure())]
    one = np.asarray(GraphFeatureUnion(branches, transformer_weights={"s": 1.0})
                     .fit_transform(G))
    three = np.asarray(GraphFeatureUnion(branches, transformer_weights={"s": 3.0})
                       .fit_transform(G))
    np.testing.assert_allclose(three, 3.0 * one, rtol=1e-6)
    union = GraphFeatureUnion(branches).fit(G)
    plain = np.asarray(union.transform(G))
    union.set_params(transformer_weights={"s": 2.0})
    np.testing.assert_allclose(np.asarray(union.transform(G)), 2.0 * plain, rtol=1e-6)
