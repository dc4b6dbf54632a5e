"""GraphFeatureUnion: hybrid structural + private-feature inputs and their privacy report."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skldp import GraphData, NodeWise
from skldp.accounting import privacy_report
from skldp.baselines import GraphFeatureUnion, StructuralFeatures
from skldp.mechanisms import EdgeRR, HDSMechanism, LabelRandomizedResponse, OneBitMechanism
from skldp.models import GCNClassifier, MLPHead
from skldp.propagation import PPRPropagation


@pytest.fixture
def graph(small_graph):
    A, X, y = small_graph
    return GraphData(X, A), y


def _structure():
    return StructuralFeatures(degree_bins=4, n_eigenvectors=2, n_components=8, random_state=0)


def _private(eps=1.0):
    return Pipeline([("hds", HDSMechanism(eps, k=2, feature_range=(-1, 2), random_state=0)),
                     ("ppr", PPRPropagation())])


def test_shapes_and_blocks(graph):
    G, _ = graph
    union = GraphFeatureUnion([("structure", _structure()), ("private", _private())])
    Z = union.fit(G[:20]).transform(G[[4, 9, 30]])
    assert isinstance(Z, GraphData) and Z.shape == (3, 15 + 5)
    assert Z.features.shape == (60, 20) and Z.adjacency is G.adjacency
    full_s = _structure().fit(G).transform(G).features
    full_p = _private().fit(G).transform(G).features
    np.testing.assert_allclose(Z.features[:, :15], full_s)
    np.testing.assert_allclose(Z.features[:, 15:], full_p, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(Z), np.hstack([full_s, full_p])[[4, 9, 30]],
                               rtol=1e-6)
    # memoised: a second transform returns the same whole-graph store
    assert union.transform(G[[1]]).token == Z.token
    np.testing.assert_array_equal(union.fit_transform(G[:20]).features, Z.features)


def test_sparse_if_any_block_is_sparse_and_weights(graph):
    G, _ = graph
    Gs = G.with_features(sp.csr_matrix(np.where(G.features > 1, 1.0, 0.0)))
    union = GraphFeatureUnion([("structure", _structure()), ("raw", "passthrough")],
                              transformer_weights={"raw": 2.0})
    Z = union.fit_transform(Gs)
    assert sp.issparse(Z.features) and Z.features.shape == (60, 15 + 5)
    np.testing.assert_allclose(Z.features[:, 15:].toarray(), 2.0 * Gs.features.toarray())
    dense = GraphFeatureUnion([("structure", _structure()), ("raw", "passthrough")])
    assert isinstance(dense.fit_transform(G).features, np.ndarray)
    dropped = GraphFeatureUnion([("structure", _structure()), ("raw", "drop")])
    assert dropped.fit_transform(G).shape == (60, 15)


def test_feature_names(graph):
    G, _ = graph
    union = GraphFeatureUnion([("s", _structure()),
                               ("t", StructuralFeatures(degree_bins=2, n_eigenvectors=0,
                                                        n_components=0))])
    names = union.fit_transform(G).feature_names
    assert names[0] == "s__degree_bin0" and names[-1] == "t__log_degree" and len(names) == 18


def test_privacy_report_finds_nested_mechanisms(graph):
    G, y = graph
    pipe = Pipeline([("union", GraphFeatureUnion([("structure", _structure()),
                                                  ("private", _private(eps=1.5)),
                                                  ("bits", OneBitMechanism(
                                                      0.5, feature_range=(-1, 2),
                                                      split_eps=True, random_state=0))])),
                     ("clf", MLPHead(epochs=5, early_stopping=False, random_state=0))])
    pipe.fit(G[::2], y[::2])
    rep = privacy_report(pipe)
    steps = {s.step: s.epsilon for s in rep.spends}
    assert steps == {"union.private.hds": 1.5, "union.bits": 0.5}
    assert rep.local_epsilon == pytest.approx(2.0)
    assert pipe.predict(G[1::2]).shape == (30,)


def test_search_over_nested_eps_counts_collections(graph):
    G, y = graph
    pipe = Pipeline([("union", GraphFeatureUnion([("structure", _structure()),
                                                  ("private", _private())])),
                     ("clf", MLPHead(epochs=3, early_stopping=False, random_state=0))])
    search = GridSearchCV(pipe, {"union__private__hds__eps": [0.5, 1.0]}, cv=2).fit(G, y)
    rep = privacy_report(search)
    assert len(rep.spends) == 2 and rep.local_epsilon == pytest.approx(1.5)


def test_union_in_a_gnn_pipeline_with_label_privacy(graph):
    G, y = graph
    rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0)
    pipe = Pipeline([("union", GraphFeatureUnion([("structure", _structure()),
                                                  ("private", _private())])),
                     ("gcn", GCNClassifier(epochs=10, early_stopping=False, random_state=0,
                                           label_mechanism=rr))])
    pipe.fit(G[::2], y[::2])
    rep = privacy_report(pipe)
    assert rep.epsilon_for("labels") == 1.0 and rep.epsilon_for("features") == 1.0


def test_sklearn_conventions(graph):
    G, _ = graph
    union = GraphFeatureUnion([("structure", _structure()), ("private", _private())])
    assert union.get_params()["private__hds__eps"] == 1.0
    u2 = clone(union).set_params(private__hds__eps=2.0, structure__n_components=4)
    assert u2.transformer_list[1][1].named_steps["hds"].eps == 2.0
    assert union.transformer_list[1][1].named_steps["hds"].eps == 1.0
    assert u2.fit_transform(G).shape == (60, 11 + 5)
    union.fit(G)
    restored = pickle.loads(pickle.dumps(union))
    np.testing.assert_allclose(restored.transform(G).features, union.transform(G).features)


def test_nodewise_branch(graph):
    G, _ = graph
    union = GraphFeatureUnion([("scaled", NodeWise(StandardScaler())),
                               ("structure", _structure())])
    Z = union.fit(G[:30]).transform(G)
    np.testing.assert_allclose(Z.features[:30, :5].mean(0), 0, atol=1e-12)


def test_errors(graph):
    G, _ = graph
    with pytest.raises(TypeError, match="graph transformer"):
        GraphFeatureUnion([("plain", StandardScaler()), ("s", _structure())]).fit_transform(G)
    with pytest.raises(ValueError, match="holds an edge mechanism"):
        GraphFeatureUnion([("edges", EdgeRR(2.0, random_state=0)),
                           ("s", _structure())]).fit_transform(G)
    with pytest.raises(TypeError, match="GraphData"):
        GraphFeatureUnion([("s", _structure())]).fit(G).transform(np.asarray(G))


@pytest.mark.parametrize("weight", [np.nan, np.inf, -np.inf, "2", True])
def test_weights_must_be_finite_numbers(graph, weight):
    # a NaN weight gave all-NaN features (as scikit-learn's FeatureUnion does)
    G, _ = graph
    union = GraphFeatureUnion([("structure", _structure()), ("raw", "passthrough")],
                              transformer_weights={"raw": weight})
    with pytest.raises(ValueError, match=r"transformer_weights\['raw'\] must be a finite"):
        union.fit(G)
    # a name that is no branch's: FeatureUnion's own error
    with pytest.raises(ValueError, match="not present in transformer_list"):
        GraphFeatureUnion([("raw", "passthrough")], transformer_weights={"x": 1.0}).fit(G)
    assert GraphFeatureUnion([("raw", "passthrough")],
                             transformer_weights={"raw": -0.5}).fit_transform(G).shape == (60, 5)


# The union carries over what its branches were computed from: raw features (a
# "passthrough" branch is a clear read) and true edges (an edge mechanism refuses them);
# its memo tells apart unions that differ only in their weights.
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


def test_mechanism_after_a_union_of_raw_reads_names_the_union(graph):
    # A union whose branch read the users' raw features is the server's computation from
    # them: a mechanism after it says so, not that the features were set with
    # GraphData.with_features (which the user never called).
    G, y = graph
    pipe = Pipeline([("u", GraphFeatureUnion([("p", PPRPropagation())])),
                     ("h", HDSMechanism(1.0, feature_range=(-5, 5), random_state=0))])
    with pytest.raises(ValueError, match="computed on the server by GraphFeatureUnion "
                                         "from the users' raw data") as err:
        pipe.fit(G[:30], y[:30])
    assert "with_features" not in str(err.value)


@pytest.mark.parametrize("nested", [False, True])
def test_an_edge_mechanism_branch_is_refused_before_anything_is_collected(small_graph,
                                                                          nested):
    # Its output is another graph, which the union refuses; that refusal came only
    # after every branch was fitted and had collected (under a budget of 5, 4 spent).
    A, X, y = small_graph
    G = GraphData(X, A, budget=5.0)
    edges = Pipeline([("x", HDSMechanism(1.0, feature_range=(-1, 2), random_state=1)),
                      ("e", EdgeRR(2.0, random_state=0)), ("p", PPRPropagation())])
    if nested:
        edges = GraphFeatureUnion([("inner", edges)])
    union = GraphFeatureUnion([("h", HDSMechanism(1.0, feature_range=(-1, 2),
                                                  random_state=0)), ("a", edges)])
    with pytest.raises(ValueError, match="Branch 'a' holds an edge mechanism "
                                         r"\(EdgeRR\).*before the union"):
        union.fit_transform(G[:30], y[:30])
    assert G.ledger.entries() == [] and G.ledger.local_epsilon == 0


@pytest.mark.parametrize("plain", ["scaler", "in a pipeline"])
def test_a_plain_branch_is_refused_before_anything_is_read(small_graph, plain):
    # A plain scikit-learn branch returns an array, which the union refused only in
    # transform: after the mechanism branch had collected and the scaler had read the
    # raw features in the clear (epsilon=inf).
    A, X, y = small_graph
    G = GraphData(X, A)
    branch = StandardScaler() if plain == "scaler" else Pipeline([
        ("h", HDSMechanism(2.0, feature_range=(-1, 2), random_state=1)),
        ("s", StandardScaler())])
    union = GraphFeatureUnion([("h", HDSMechanism(1.0, feature_range=(-1, 2),
                                                  random_state=0)), ("s", branch)])
    with pytest.raises(TypeError, match="Branch 's' holds StandardScaler.*skldp.NodeWise"):
        union.fit_transform(G[:30], y[:30])
    assert G.ledger.entries() == []
    # wrapped, it is a graph step
    ok = GraphFeatureUnion([("s", NodeWise(StandardScaler()))]).fit_transform(G[:30])
    assert ok.shape == (30, 5)


@pytest.mark.parametrize("branches", [[], [("a", "drop")]])
def test_a_union_without_branches_is_refused_at_fit(graph, branches):
    # an empty list failed with FeatureUnion's "not enough values to unpack"; all
    # branches dropped fitted, then failed in transform
    G, _ = graph
    with pytest.raises(ValueError, match="GraphFeatureUnion has no branch"):
        GraphFeatureUnion(branches).fit(G)
