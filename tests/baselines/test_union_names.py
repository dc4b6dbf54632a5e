"""GraphFeatureUnion: output names (memo, passthrough, unnamed branches) and set_output."""

import pickle

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skldp import GraphData
from skldp.baselines import GraphFeatureUnion, StructuralFeatures
from skldp.mechanisms import LaplaceMechanism
from skldp.propagation import KProp

NAMES = ["a", "b", "c", "d", "e"]


@pytest.fixture
def graph(small_graph):
    A, X, _ = small_graph
    return GraphData(X, A, feature_names=NAMES)


def _structure():
    return StructuralFeatures(degree_bins=1, n_eigenvectors=0, n_components=0, random_state=0)


def _private():
    return Pipeline([("lap", LaplaceMechanism(eps=1.0, feature_range=(-1, 2), random_state=0)),
                     ("k", KProp(steps=1))])


def test_names_do_not_depend_on_which_union_ran_first(graph):
    def names(verbose):
        union = GraphFeatureUnion([("s", _structure()), ("p", _private())],
                                  verbose_feature_names_out=verbose)
        Z = union.fit_transform(graph)
        assert list(Z.feature_names) == list(union.get_feature_names_out())
        return list(Z.feature_names)

    prefixed, plain, again = names(True), names(False), names(True)   # one graph, one memo
    assert prefixed == again == ["s__degree_bin0", "s__log_degree"] + [f"p__{f}" for f in NAMES]
    assert plain == ["degree_bin0", "log_degree"] + NAMES


@pytest.mark.parametrize("verbose", [True, False])
def test_passthrough_names_are_the_input_names(graph, verbose):
    union = GraphFeatureUnion([("s", _structure()), ("raw", "passthrough")],
                              verbose_feature_names_out=verbose)
    Z = union.fit_transform(graph[:30])
    prefix = "raw__" if verbose else ""
    assert list(union.get_feature_names_out()) == list(Z.feature_names)
    assert list(Z.feature_names)[-5:] == [prefix + f for f in NAMES]
    np.testing.assert_array_equal(union.feature_names_in_, NAMES)
    assert list(pickle.loads(pickle.dumps(union)).feature_names_in_) == NAMES
    assert not hasattr(clone(union), "feature_names_in_")
    with pytest.raises(ValueError, match="feature_names_in_"):
        union.get_feature_names_out(["z"] * 5)
    union.fit(GraphData(graph.features, graph.adjacency))   # unnamed: the names are dropped
    assert not hasattr(union, "feature_names_in_")


def test_an_unnamed_branch_gets_default_names_the_others_keep_theirs(graph):
    G = GraphData(graph.features, graph.adjacency)   # unnamed: the private branch is too
    union = GraphFeatureUnion([("s", _structure()), ("p", _private())])
    Z = union.fit_transform(G)
    assert list(Z.feature_names) == (["s__degree_bin0", "s__log_degree"]
                                     + [f"p__x{i}" for i in range(5)])
    assert list(Z.feature_names) == list(union.get_feature_names_out())
    plain = GraphFeatureUnion([("s", _structure()), ("p", _private())],
                              verbose_feature_names_out=False).fit_transform(G)
    assert list(plain.feature_names) == ["degree_bin0", "log_degree"] + [f"x{i}" for i in range(5)]
    # unnamed in, unnamed out (as for the graph steps) when the names are x0, x1, ...
    only = GraphFeatureUnion([("p", _private())], verbose_feature_names_out=False)
    assert only.fit_transform(G).feature_names is None


def test_set_output_keeps_the_union_a_graph_step(graph):
    pd = pytest.importorskip("pandas")
    union = GraphFeatureUnion([("s", _structure()), ("raw", "passthrough")])
    pipe = Pipeline([("u", union), ("sc", StandardScaler())]).set_output(transform="pandas")
    out = pipe.fit_transform(graph[:30])
    assert isinstance(out, pd.DataFrame) and out.shape == (30, 7)
    assert isinstance(union.transform(graph[:30]), GraphData)
    np.testing.assert_allclose(
        out.to_numpy(), StandardScaler().fit_transform(np.asarray(union.transform(graph[:30]))))
    with sklearn.config_context(transform_output="pandas"):   # the global config too
        Z = GraphFeatureUnion([("s", _structure()), ("raw", "passthrough")]).fit_transform(graph)
    assert isinstance(Z, GraphData) and list(Z.feature_names)[-5:] == [f"raw__{f}" for f in NAMES]
