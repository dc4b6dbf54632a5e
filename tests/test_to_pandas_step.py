"""ToPandas: feature names and node ids reach the plain scikit-learn steps after graph steps.

scikit-learn reads names and a row index from DataFrames only: given a GraphData, a plain
step recorded no ``feature_names_in_`` and its pandas output had columns ``x0, x1, ...``
and a positional index.
"""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import config_context
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skldp import GraphData, ToPandas
from skldp.accounting import privacy_report
from skldp.mechanisms import MultiBitMechanism
from skldp.model_selection import PairData
from skldp.population import BudgetExceededError
from skldp.propagation import KProp

pd = pytest.importorskip("pandas")

NAMES = ["age", "income", "score"]


def _graph(budget=None, names=NAMES, sparse=False):
    rng = np.random.default_rng(0)
    n = 40
    A = np.triu(rng.random((n, n)) < 0.2, 1)
    X = (rng.random((n, 3)) < 0.5).astype(float)
    return GraphData(sp.csr_matrix(X) if sparse else X, sp.csr_matrix((A | A.T).astype(float)),
                     node_ids=[f"u{i}" for i in range(n)], feature_names=names, budget=budget)


def _pipe(*tail):
    return Pipeline([("mech", MultiBitMechanism(2.0, feature_range=(0, 1), random_state=0)),
                     ("kprop", KProp(steps=1)), ("frame", ToPandas()), *tail])


def test_plain_steps_after_graph_steps_get_the_names_and_the_node_ids():
    G, y = _graph(), np.arange(40) % 2
    pipe = _pipe(("scale", StandardScaler().set_output(transform="pandas")),
                 ("clf", LogisticRegression()))
    pipe.fit(G[:30], y[:30])
    np.testing.assert_array_equal(pipe.named_steps["scale"].feature_names_in_, NAMES)
    np.testing.assert_array_equal(pipe.named_steps["clf"].feature_names_in_, NAMES)
    out = pipe[:-1].transform(G[[35, 31]])
    assert list(out.columns) == NAMES and list(out.index) == ["u35", "u31"]
    np.testing.assert_array_equal(pipe[:-1].get_feature_names_out(), NAMES)
    # the values are those the plain step saw before (the rows of the view)
    ref = np.asarray(pipe[:2].transform(G[[35, 31]]))
    np.testing.assert_array_equal(pipe.named_steps["frame"].transform(
        pipe[:2].transform(G[[35, 31]])).to_numpy(), ref)
    pipe.predict(G[30:])


def test_pipeline_and_global_pandas_output():
    G, y = _graph(), np.arange(40) % 2
    pipe = _pipe(("scale", StandardScaler())).set_output(transform="pandas")
    out = pipe.fit_transform(G[:30])
    assert list(out.columns) == NAMES and list(out.index) == [f"u{i}" for i in range(30)]
    with config_context(transform_output="pandas"):
        out = clone(_pipe(("scale", StandardScaler()))).fit(G[:30]).transform(G[30:])
        assert list(out.columns) == NAMES and list(out.index)[0] == "u30"
    # an unnamed graph: scikit-learn's default names, still the node ids as index
    out = _pipe(("scale", StandardScaler())).set_output(transform="pandas").fit_transform(
        _graph(names=None))
    assert list(out.columns) == ["x0", "x1", "x2"] and out.index[0] == "u0"
    # searches, clones and pickles
    search = GridSearchCV(_pipe(("clf", LogisticRegression())), {"kprop__steps": [1, 2]}, cv=2)
    search.fit(G[:30], y[:30])
    np.testing.assert_array_equal(search.best_estimator_[-1].feature_names_in_, NAMES)
    pickle.loads(pickle.dumps(search.best_estimator_)).predict(G[30:])


def test_reports_cost_nothing_more_and_raw_features_are_charged():
    G, y = _graph(budget=5.0), np.arange(40) % 2
    _pipe(("clf", LogisticRegression())).fit(G[:30], y[:30])
    assert privacy_report(G).local_epsilon == pytest.approx(2.0)   # the mechanism's only
    # the users' own features leave as a frame: a read in the clear, as np.asarray(G)
    with pytest.raises(BudgetExceededError, match="DataFrame export"):
        Pipeline([("frame", ToPandas()), ("clf", LogisticRegression())]).fit(G[:30], y[:30])
    G = _graph()
    Pipeline([("frame", ToPandas()), ("clf", LogisticRegression())]).fit(G[:30], y[:30])
    spent = G.ledger.spent(G.node_keys)
    assert np.all(np.isinf(spent[:30])) and np.all(spent[30:] == 0)


def test_sparse_features_stay_sparse_for_the_plain_step():
    G = _graph(sparse=True)
    frame = ToPandas().fit_transform(G)
    assert all(isinstance(t, pd.SparseDtype) for t in frame.dtypes)
    assert list(frame.columns) == NAMES
    scaled = StandardScaler(with_mean=False).fit(frame)
    np.testing.assert_array_equal(scaled.feature_names_in_, NAMES)
    assert sp.issparse(scaled.transform(frame))


def test_pairs_give_the_features_a_plain_step_sees():
    G = _graph()
    P = PairData(G, [[0, 1], [2, 5]])
    frame = ToPandas().fit_transform(P)
    np.testing.assert_array_equal(frame.to_numpy(), np.asarray(P))
    assert list(frame.columns) == NAMES
    assert frame.index.names == ["u", "v"] and list(frame.index) == [("u0", "u1"), ("u2", "u5")]


def test_checks_its_input():
    G = _graph()
    with pytest.raises(TypeError, match="takes a skldp.GraphData"):
        ToPandas().fit(np.zeros((3, 3)))
    assert not hasattr(ToPandas().fit(_graph(names=None)), "feature_names_in_")
    # the frame carries its names: the plain step after it refuses other columns
    pipe = Pipeline([("frame", ToPandas()), ("scale", StandardScaler())]).fit(G)
    renamed = GraphData(G.features[:, ::-1], G.adjacency, feature_names=NAMES[::-1],
                        node_ids=G.all_node_ids, population=G)
    assert list(pipe[0].transform(renamed).columns) == NAMES[::-1]
    with pytest.raises(ValueError, match="same order as they were in fit"):
        pipe.transform(renamed)
    with pytest.raises(ValueError, match="input_features is not equal to feature_names_in_"):
        pipe[0].get_feature_names_out(["a", "b", "c"])
    # another width than at fit
    narrow = GraphData(G.features[:, :2], G.adjacency, feature_names=NAMES[:2],
                       node_ids=G.all_node_ids, population=G)
    with pytest.raises(ValueError, match="X has 2 features, but ToPandas was fitted on 3"):
        pipe[0].transform(narrow)
