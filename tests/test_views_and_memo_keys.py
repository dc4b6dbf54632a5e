"""Silent wrong answers found by a hunt: memo keys of redefined functions, unlabelled
markers counted by score, reversed views, node ids edited after the graph was built."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import FunctionTransformer

from skldp import GraphData, NodeWise
from skldp.baselines import LabelPropagationClassifier
from skldp.models import GCNClassifier


def _graph(n=30):
    rng = np.random.default_rng(0)
    A = sp.random(n, n, density=0.2, random_state=0, format="csr")
    return GraphData(rng.random((n, 3)), ((A + A.T) > 0).astype(float)), np.arange(n) % 2


def test_a_function_redefined_under_its_name_is_not_served_from_the_memo():
    # Before: the memo key named a function by module and name: the redefined function
    # got the old function's output on the same graph.
    G, _ = _graph()

    def f(x):
        return x * 2

    first = np.asarray(NodeWise(FunctionTransformer(f)).fit(G).transform(G).features)

    def f(x):  # noqa: F811 - redefined under its name, as in a notebook
        return x * 3

    second = np.asarray(NodeWise(FunctionTransformer(f)).fit(G).transform(G).features)
    np.testing.assert_allclose(second, first * 1.5)
    # a lambda (unpicklable) works too: a token of its own
    third = NodeWise(FunctionTransformer(lambda x: x * 4)).fit(G).transform(G)
    np.testing.assert_allclose(np.asarray(third.features), first * 2)


def test_score_refuses_unlabelled_markers():
    # Before: score(G, y) with the documented whole-graph y counted each -1 as an error.
    G, y = _graph()
    clf = LabelPropagationClassifier().fit(G[np.arange(0, 30, 3)], y[::3])
    y_graph = y.copy()
    y_graph[::3] = -1
    with pytest.raises(ValueError, match=r"y marks 10 row\(s\) unlabelled"):
        clf.score(G, y_graph)
    keep = y_graph >= 0
    assert 0 <= clf.score(G[keep], y_graph[keep]) <= 1


def test_a_reversed_view_is_predicted_in_its_order():
    # Before: torch refused the reversed view's negative strides.
    G, y = _graph()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = GCNClassifier(epochs=2, random_state=0).fit(G, y)
    np.testing.assert_array_equal(clf.predict_proba(G[::-1]), clf.predict_proba(G)[::-1])


def test_node_ids_and_feature_names_are_copied():
    # Before: the caller's arrays were kept: editing them renamed users (a duplicate id
    # slipped past the check) while the keys kept the old ids.
    ids = np.array([10, 11, 12])
    names = np.array(["age", "income"], dtype=object)
    G = GraphData(np.zeros((3, 2)), node_ids=ids, feature_names=names)
    ids[1], names[0] = 10, "height"
    assert G.node_ids.tolist() == [10, 11, 12]
    assert list(G.feature_names) == ["age", "income"]


def _twice(X):
    return np.column_stack([X[:, j] * 2 for j in range(X.shape[1])])   # (a comprehension)


def test_a_function_holding_a_comprehension_keys_the_memo_once():
    # Before (the first fix): joblib could not hash the comprehension's code object, and
    # each call got a fresh token: no memo reuse, a new GraphCache entry every run.
    from skldp.base import fitted_token
    step = NodeWise(FunctionTransformer(_twice)).fit(np.zeros((2, 3)))
    assert fitted_token(step) == fitted_token(step)
    assert not fitted_token(step).startswith("unshared:")


_FACTOR = 2


def _scaled(X):
    return X * _FACTOR


def test_a_global_the_function_reads_keys_the_memo():
    global _FACTOR
    G, _ = _graph()
    try:
        first = np.asarray(NodeWise(FunctionTransformer(_scaled)).fit(G).transform(G).features)
        _FACTOR = 3
        second = np.asarray(NodeWise(FunctionTransformer(_scaled)).fit(G).transform(G).features)
    finally:
        _FACTOR = 2
    np.testing.assert_allclose(second, first * 1.5)


def test_the_getters_arrays_are_read_only():
    G = GraphData(np.zeros((3, 2)), node_ids=[10, 11, 12], feature_names=["a", "b"])
    with pytest.raises(ValueError, match="read-only"):
        G.all_node_ids[1] = 10
    with pytest.raises(ValueError, match="read-only"):
        G.feature_names[0] = "c"


def test_tokens_read_argument_names_set_literals_and_survive_a_pickle():
    # review findings: swapped argument names kept the token (a stale memo); a set literal
    # of strings made it depend on the hash seed; a pickled step hashed differently
    import pickle

    from skldp.base import fitted_token

    def f(X, a=1.0, b=1.0):
        return X * a - b

    g_src = "def f(X, b=1.0, a=1.0):\n    return X * b - a\n"
    scope = {}
    exec(g_src, scope)
    t1 = fitted_token(NodeWise(FunctionTransformer(f, kw_args={"a": 5})).fit(np.zeros((1, 2))))
    t2 = fitted_token(NodeWise(FunctionTransformer(scope["f"], kw_args={"a": 5}))
                      .fit(np.zeros((1, 2))))
    assert t1 != t2
    step = NodeWise(FunctionTransformer(_twice)).fit(np.zeros((2, 3)))
    assert fitted_token(pickle.loads(pickle.dumps(step))) == fitted_token(step)


def test_tokens_of_builtins_enums_slots_and_recursive_classes_are_stable():
    # review findings: builtin types were hashed by content (endless recursion: a fresh
    # "unshared" token at every call, nothing memoised), so were enums, slotted classes
    # and classes referring to themselves
    import enum

    from skldp.utils._hashing import content_hash

    class Mode(enum.Enum):
        FAST = 1

    class Slotted:
        __slots__ = ("a",)

    class Node:
        pass

    Node.parent = Node
    for value in (float, frozenset({"a", "b"}), 1 + 2j, range(3), Mode.FAST, Slotted, Node):
        assert content_hash(value) == content_hash(value)


def test_a_redefined_step_class_is_another_step():
    from sklearn.base import BaseEstimator, TransformerMixin

    from skldp.base import fitted_token

    def make(factor):
        class Scale(TransformerMixin, BaseEstimator):
            def fit(self, X, y=None):
                return self

            def transform(self, X):
                return X * factor
        return Scale

    assert fitted_token(make(1)().fit(None)) != fitted_token(make(100)().fit(None))


def test_an_object_adjacency_of_complex_numbers_or_bytes_is_refused():
    from decimal import Decimal
    for bad in (1 + 2j, np.complex64(3), bytearray(b"2")):
        A = np.array([[0, bad], [bad, 0]], dtype=object)
        with pytest.raises(TypeError, match="adjacency weights must be numbers"):
            GraphData(np.zeros((2, 1)), A)
    ok = np.array([[0, Decimal("2")], [Decimal("2"), 0]], dtype=object)
    assert GraphData(np.zeros((2, 1)), ok).adjacency[0, 1] == 2
