"""Feature names: ``feature_names_in_``, ``get_feature_names_out`` and named outputs.

scikit-learn's conventions: a step fitted on named columns (a GraphData with
``feature_names``, or a pandas DataFrame) records them in ``feature_names_in_``;
``get_feature_names_out(input_features=None)`` gives the names of its output
columns, so that ``Pipeline.get_feature_names_out()`` works; graph outputs carry
the names, so that ``G.to_pandas()`` after a pipeline has the right columns.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import config_context
from sklearn.decomposition import PCA
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.utils.estimator_checks import (
    check_transformer_get_feature_names_out,
    check_transformer_get_feature_names_out_pandas,
)

from skldp import GraphData, NodeWise
from skldp.central import DegreeBoundedSampler, DPGNNClassifier, DPMLPClassifier
from skldp.mechanisms import (
    EdgeRR,
    FeatureGrouper,
    GRRFSMechanism,
    HDSMechanism,
    LaplaceMechanism,
    MultiBitMechanism,
    OneBitMechanism,
    PiecewiseMechanism,
)
from skldp.models import GCNClassifier, MLPHead, SolitudeClassifier
from skldp.propagation import FeatureSmoothing, GCNAggregation, KProp, PPRPropagation
from skldp.reconstruction import FrequencyReconstructor

pd = pytest.importorskip("pandas")  # names are read from and written to DataFrames

NAMES = np.array(["age", "income", "score"], dtype=object)


@pytest.fixture
def named_graph():
    rng = np.random.default_rng(0)
    n = 30
    A = np.triu(rng.random((n, n)) < 0.2, 1)
    A = sp.csr_matrix((A | A.T).astype(float))
    X = rng.random((n, 3))
    return GraphData(X, A, node_ids=np.arange(100, 100 + n), feature_names=NAMES)


def _one_to_one_steps():
    return [
        OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0),
        MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0),
        LaplaceMechanism(eps=1.0, feature_range=(0, 1), random_state=0),
        PiecewiseMechanism(eps=1.0, feature_range=(0, 1), random_state=0),
        HDSMechanism(eps=1.0, k=2, feature_range=(0, 1), random_state=0),
        EdgeRR(eps=2.0, random_state=0),
        DegreeBoundedSampler(3, random_state=0),
        GCNAggregation(), KProp(steps=2), PPRPropagation(), FeatureSmoothing(steps=1),
        NodeWise(StandardScaler()),
    ]


@pytest.mark.parametrize("step", _one_to_one_steps(), ids=lambda s: type(s).__name__)
def test_graph_steps_keep_the_names(named_graph, step):
    G = named_graph
    out = step.fit(G[:20]).transform(G[20:])
    np.testing.assert_array_equal(step.feature_names_in_, NAMES)
    assert step.feature_names_in_.dtype == object
    names = step.get_feature_names_out()
    assert isinstance(names, np.ndarray) and names.dtype == object
    np.testing.assert_array_equal(names, NAMES)
    np.testing.assert_array_equal(step.get_feature_names_out(list(NAMES)), NAMES)
    with pytest.raises(ValueError, match="input_features is not equal to feature_names_in_"):
        step.get_feature_names_out(["a", "b", "c"])
    assert list(out.to_pandas().columns) == list(NAMES)


def test_unnamed_graph_gets_default_names(named_graph):
    G = GraphData(named_graph.features, named_graph.adjacency)
    step = PPRPropagation().fit(G)
    assert not hasattr(step, "feature_names_in_")
    np.testing.assert_array_equal(step.get_feature_names_out(), ["x0", "x1", "x2"])
    np.testing.assert_array_equal(step.get_feature_names_out(["p", "q", "r"]), ["p", "q", "r"])
    assert step.transform(G).feature_names is None
    # refitting on unnamed data forgets the names of an earlier fit
    step.fit(named_graph)
    assert hasattr(step, "feature_names_in_")
    step.fit(G)
    assert not hasattr(step, "feature_names_in_")


def test_pipeline_mechanism_then_propagation(named_graph):
    G = named_graph
    pipe = Pipeline([("mech", OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)),
                     ("agg", GCNAggregation()), ("ppr", PPRPropagation())])
    Z = pipe.fit_transform(G[:20])
    np.testing.assert_array_equal(pipe.get_feature_names_out(), NAMES)
    np.testing.assert_array_equal(pipe.feature_names_in_, NAMES)
    assert list(Z.to_pandas().columns) == list(NAMES)
    assert list(pipe.transform(G[[25, 21]]).to_pandas().columns) == list(NAMES)
    assert list(pipe.transform(G[[25, 21]]).to_pandas().index) == [125, 121]
    # the same under a global pandas output and a local set_output
    with config_context(transform_output="pandas"):
        out = pipe.fit(G[:20]).transform(G[20:])
        assert isinstance(out, GraphData) and list(out.to_pandas().columns) == list(NAMES)
        np.testing.assert_array_equal(pipe.get_feature_names_out(), NAMES)
    out = pipe.set_output(transform="pandas").fit(G[:20]).transform(G[20:])
    assert isinstance(out, GraphData)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(Z.full()[20:]))


def test_edge_mechanism_before_propagation(named_graph):
    pipe = Pipeline([("edges", EdgeRR(eps=2.0, random_state=0)), ("smooth", FeatureSmoothing())])
    out = pipe.fit_transform(named_graph)
    np.testing.assert_array_equal(pipe.get_feature_names_out(), NAMES)
    assert list(out.to_pandas().columns) == list(NAMES)


def test_steps_that_make_new_columns(named_graph):
    G = named_graph
    pca = NodeWise(PCA(n_components=2)).fit(G)
    np.testing.assert_array_equal(pca.get_feature_names_out(), ["pca0", "pca1"])
    assert list(pca.transform(G).to_pandas().columns) == ["pca0", "pca1"]
    grouper = FeatureGrouper(group_size=2).fit(G)
    np.testing.assert_array_equal(grouper.get_feature_names_out(), ["group0", "group1"])
    with pytest.raises(ValueError, match="input_features is not equal to feature_names_in_"):
        grouper.get_feature_names_out(["a", "b", "c"])
    assert list(grouper.transform(G).to_pandas().columns) == ["group0", "group1"]
    # PCA after propagation: the pipeline's names come from the last step
    pipe = Pipeline([("ppr", PPRPropagation()), ("pca", NodeWise(PCA(n_components=2)))])
    pipe.fit(G)
    np.testing.assert_array_equal(pipe.get_feature_names_out(), ["pca0", "pca1"])


def test_reconstruction_keeps_the_names_of_the_reported_features(named_graph):
    G = named_graph
    Gc = G.with_features((G.features > 0.5).astype(float), feature_names=NAMES, source="users")
    pipe = Pipeline([("grr", GRRFSMechanism(1.0, m=1, domain_sizes=2, random_state=0)),
                     ("rec", FrequencyReconstructor(1.0, 1, domain_sizes=2))])
    out = pipe.fit_transform(Gc)
    assert list(out.to_pandas().columns) == list(NAMES)
    np.testing.assert_array_equal(pipe.get_feature_names_out(), NAMES)
    np.testing.assert_array_equal(pipe.named_steps["grr"].feature_names_in_, NAMES)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
def test_nodewise_imputes_nan_then_the_graph_step_checks(named_graph):
    G = named_graph
    X = G.features.copy()
    X[3, 1] = np.nan
    Gn = GraphData(X, G.adjacency, feature_names=NAMES)
    pipe = Pipeline([("impute", NodeWise(SimpleImputer())), ("ppr", PPRPropagation())])
    out = pipe.fit_transform(Gn)
    assert np.all(np.isfinite(np.asarray(out)))
    np.testing.assert_array_equal(pipe.get_feature_names_out(), NAMES)
    log = Pipeline([("log", NodeWise(FunctionTransformer(np.log))), ("ppr", PPRPropagation())])
    with pytest.raises(ValueError, match="PPRPropagation contain NaN or infinite"):
        log.fit(GraphData(np.zeros((30, 3)), G.adjacency))


# ------------------------------------------------------------------ plain arrays
PLAIN = [OneBitMechanism(eps=1.0, random_state=0), MultiBitMechanism(eps=1.0, random_state=0),
         LaplaceMechanism(eps=1.0, random_state=0), PiecewiseMechanism(eps=1.0, random_state=0),
         HDSMechanism(eps=1.0, random_state=0), NodeWise(StandardScaler()),
         GRRFSMechanism(1.0, m=1, bin_edges=[-1.0, 0.0, 1.0], random_state=0),
         FeatureGrouper(group_size=1)]


@pytest.mark.filterwarnings("ignore::skldp.exceptions.PrivacyLeakWarning")
@pytest.mark.parametrize("est", PLAIN, ids=lambda s: type(s).__name__)
def test_sklearn_feature_name_checks_on_plain_arrays(est):
    name = type(est).__name__
    check_transformer_get_feature_names_out(name, est)
    check_transformer_get_feature_names_out_pandas(name, est)


@pytest.mark.filterwarnings("ignore::skldp.exceptions.PrivacyLeakWarning")
def test_pandas_output_on_plain_arrays():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.random((20, 3)), columns=list(NAMES),
                      index=[f"u{i}" for i in range(20)])
    mech = LaplaceMechanism(eps=1.0, feature_range=(0, 1), random_state=0)
    ref = mech.fit_transform(df)
    assert isinstance(ref, np.ndarray)
    with config_context(transform_output="pandas"):
        out = mech.fit_transform(df)
        assert isinstance(out, pd.DataFrame)
        assert list(out.columns) == list(NAMES) and list(out.index) == list(df.index)
        np.testing.assert_array_equal(out.to_numpy(), ref)
        pipe = Pipeline([("scale", StandardScaler()),
                         ("mech", LaplaceMechanism(eps=1.0, feature_range=(-3, 3),
                                                   random_state=0))])
        out = pipe.fit_transform(df)
        assert isinstance(out, pd.DataFrame) and list(out.columns) == list(NAMES)
        np.testing.assert_array_equal(pipe.get_feature_names_out(), NAMES)
    out = FeatureGrouper(group_size=2).set_output(transform="pandas").fit_transform(df)
    assert list(out.columns) == ["group0", "group1"]


def test_dataframe_columns_become_feature_names():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.random((4, 3)), columns=list(NAMES))
    G = GraphData(df)
    assert list(G.feature_names) == list(NAMES)
    np.testing.assert_array_equal(G.features, df.to_numpy())
    assert list(G.to_pandas().columns) == list(NAMES)
    # given names win; non-string column labels give none (scikit-learn's rule)
    assert list(GraphData(df, feature_names=["a", "b", "c"]).feature_names) == ["a", "b", "c"]
    assert GraphData(pd.DataFrame(rng.random((4, 2)))).feature_names is None
    assert GraphData(pd.DataFrame(rng.random((4, 2)), columns=["a", 1])).feature_names is None
    # a step fitted on the graph sees the names
    hds = HDSMechanism(eps=1.0, feature_range=(0, 1), random_state=0).fit(G)
    assert list(hds.feature_names_in_) == list(NAMES)


def test_feature_names_given_as_any_sequence_or_refused_saying_why():
    X = np.zeros((2, 3))
    # any iterable of names in order (a generator was refused as "length 3, got ()"), and
    # names that are tuples stay one name each (they made a 2-D array: "got (3, 2)")
    assert GraphData(X, feature_names=(c for c in "abc")).feature_names.tolist() == list("abc")
    tuples = [("a", 1), ("b", 1), ("c", 2)]
    assert GraphData(X, feature_names=tuples).feature_names.tolist() == tuples
    assert GraphData(X).with_features(X, tuples).feature_names.tolist() == tuples
    assert GraphData(X, feature_names=pd.Index(list("abc"))).feature_names.tolist() == \
        list("abc")
    # one string (its letters are no names), a set (no order), a non-sequence
    with pytest.raises(TypeError, match=r"feature_names must be a sequence of 3 names .*"
                                        r"the single string 'abc'"):
        GraphData(X, feature_names="abc")
    with pytest.raises(TypeError, match=r"feature_names .* a set, whose order is arbitrary"):
        GraphData(X, feature_names={"a", "b", "c"})
    with pytest.raises(TypeError, match=r"feature_names must be a sequence of 3 names .*got 3"):
        GraphData(X, feature_names=3)
    with pytest.raises(ValueError, match=r"feature_names must have length 3, got 2"):
        GraphData(X, feature_names=iter("ab"))
    with pytest.raises(ValueError, match=r"feature_names must have length 3, got shape \(1, 3\)"):
        GraphData(X, feature_names=np.array([list("abc")]))


@pytest.mark.parametrize("make", [
    lambda: MLPHead(epochs=2, weight_decay=1e-4),
    lambda: GCNClassifier(epochs=2),
    lambda: SolitudeClassifier(epochs=2),
    lambda: DPMLPClassifier(classes=[0, 1], accountant="hypergeometric", batch_size=5, n_steps=2),
    lambda: DPGNNClassifier(classes=[0, 1], batch_size=5, n_steps=2),
], ids=["MLPHead", "GCN", "Solitude", "DPMLP", "DPGNN"])
def test_classifiers_refuse_columns_named_otherwise_than_in_fit(named_graph, make):
    # the same columns in another order would be predicted on silently wrong
    G = named_graph
    y = np.arange(G.n_nodes) % 2
    clf = make().fit(G[:20], y[:20])
    np.testing.assert_array_equal(clf.feature_names_in_, NAMES)
    clf.predict(G[20:])
    order = [2, 1, 0]
    shuffled = GraphData(np.asarray(G.features)[:, order], G.adjacency,
                         node_ids=G.node_ids, feature_names=NAMES[order])
    with pytest.raises(ValueError, match="same order as they were in fit"):
        clf.predict(shuffled[20:])
    renamed = GraphData(np.asarray(G.features), G.adjacency, node_ids=G.node_ids,
                        feature_names=["a", "b", "c"])
    with pytest.raises(ValueError, match="unseen at fit time"):
        clf.predict(renamed[20:])


def test_a_model_fitted_on_a_frame_checks_the_frame_it_predicts():
    X = pd.DataFrame(np.random.default_rng(0).random((40, 3)), columns=NAMES)
    clf = MLPHead(epochs=2, weight_decay=1e-4).fit(X, np.arange(40) % 2)
    clf.predict(X)
    clf.predict(X.to_numpy())   # unnamed input: not checked, as in scikit-learn
    with pytest.raises(ValueError, match="same order"):
        clf.predict(X[NAMES[::-1]])


# ------------------------------------------------------- names checked at transform
def _named_otherwise(G, order, names):
    """The same users (``population=G``) with their columns in ``order``, named ``names``."""
    return GraphData(np.asarray(G.features)[:, order], G.adjacency, node_ids=G.node_ids,
                     feature_names=names, population=G)


@pytest.mark.parametrize("step", _one_to_one_steps() + [FeatureGrouper(group_size=1)],
                         ids=lambda s: type(s).__name__)
def test_graph_steps_refuse_columns_named_otherwise_than_in_fit(named_graph, step):
    # the same columns in another order would be transformed silently wrong
    G = named_graph
    step.fit(G[:20])
    step.transform(G[20:])   # another view of the same graph: the same names
    with pytest.raises(ValueError, match="same order as they were in fit"):
        step.transform(_named_otherwise(G, [2, 1, 0], NAMES[[2, 1, 0]]))
    with pytest.raises(ValueError, match="unseen at fit time"):
        step.transform(_named_otherwise(G, [0, 1, 2], ["a", "b", "c"]))


def test_nodewise_scaler_refuses_reordered_columns():
    # a scaler fitted on (age, income) and given (income, age) scaled each column with
    # the other's statistics (column means ~5000 and ~-5)
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(40, 10, 100), rng.normal(50000, 1e4, 100)]
    G = GraphData(X, None, feature_names=["age", "income"])
    nw = NodeWise(StandardScaler()).fit(G)
    with pytest.raises(ValueError, match="The feature names should match"):
        nw.transform(GraphData(X[:, ::-1], None, feature_names=["income", "age"], population=G))
    with pytest.raises(ValueError, match="The feature names should match"):
        nw.transform(pd.DataFrame(X[:, ::-1], columns=["income", "age"]))
    # unnamed input cannot be checked: it warns, as scikit-learn's transformers do
    with pytest.warns(UserWarning, match="X does not have valid feature names, but NodeWise "
                                         "was fitted with feature names"):
        out = np.asarray(nw.transform(GraphData(X, None, population=G)))
    np.testing.assert_allclose(out.mean(axis=0), 0.0, atol=1e-9)
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        nw.transform(X[:, ::-1])   # (the wrapped scaler, fitted without names, said nothing)


def test_nodewise_warns_on_names_as_scikit_learn_does():
    X = np.random.default_rng(0).random((10, 2))
    G = GraphData(X, None, feature_names=["a", "b"])
    with pytest.warns(UserWarning, match="X has feature names, but NodeWise was fitted "
                                         "without feature names"):
        NodeWise(StandardScaler()).fit(GraphData(X, None, population=G)).transform(G)
    # the same names on both sides: no warning (the scaler fitted on a frame warned that a
    # GraphData had none, since it sees its rows as an array)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        NodeWise(StandardScaler()).fit(pd.DataFrame(X, columns=["a", "b"])).transform(G)
        NodeWise(StandardScaler()).fit(G).transform(pd.DataFrame(X, columns=["a", "b"]))


@pytest.mark.filterwarnings("ignore::skldp.exceptions.PrivacyLeakWarning")
def test_mechanism_fitted_on_a_frame_refuses_reordered_columns():
    df = pd.DataFrame(np.random.default_rng(0).random((20, 3)), columns=NAMES)
    mech = LaplaceMechanism(eps=1.0, feature_range=(0, 1), random_state=0).fit(df)
    mech.transform(df)
    with pytest.raises(ValueError, match="same order as they were in fit"):
        mech.transform(df[NAMES[::-1]])
