"""G[mask] with a boolean pandas Series follows y's rule for its index; node_ids of any
iterable (a set refused); errors that name what was given (a 2-D mask, an edge list)."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.population import received_graph

pd = pytest.importorskip("pandas")

USERS = ["ann", "bob", "cat", "dan", "eve", "fay"]


def _graph():
    A = sp.csr_matrix(np.roll(np.eye(6), 1, 1) + np.roll(np.eye(6), -1, 1))
    return GraphData(np.arange(6.0).reshape(6, 1), A, node_ids=USERS)


def test_a_mask_series_indexed_by_the_users_in_another_order_is_refused():
    # np.asarray dropped the index: G[labels < 0] selected eve and fay for cat and fay
    G = _graph()
    labels = pd.Series([1, 1, 0, 0, -1, -1], index=["dan", "bob", "ann", "eve", "cat", "fay"])
    with pytest.raises(ValueError, match=r"mask is a pandas Series indexed by the users of "
                                         r"G's rows, but in another order.*"
                                         r"mask\.loc\[G\.node_ids\]"):
        G[labels < 0]
    assert G[(labels < 0).loc[G.node_ids]].node_ids.tolist() == ["cat", "fay"]
    # mostly users of the graph, some not the view's: refused as y's index is
    view = G[[0, 1, 2]]
    with pytest.raises(ValueError, match="3 of which are not users of G's rows"):
        view[pd.Series([True, False, True], index=["dan", "eve", "fay"])]
    # read by position, as y is
    view = G[[5, 0, 3]]
    in_order = pd.Series([True, False, True], index=view.node_ids)   # the view's users
    assert view[in_order].node_ids.tolist() == ["fay", "dan"]
    # a RangeIndex, the graph positions of the view's rows: by position, as for y
    assert view[pd.Series([False, True, True])].node_ids.tolist() == ["ann", "dan"]
    assert view[pd.Series([True, True, False], index=view.rows)].node_ids.tolist() == \
        ["fay", "ann"]
    # G.to_pandas()'s columns are indexed by the view's users in order
    assert view[view.to_pandas().iloc[:, 0] > 2].node_ids.tolist() == ["fay", "dan"]


@pytest.mark.parametrize("key, message", [
    (np.ones((6, 1), bool), r"1-D boolean mask of length 6 .*got shape \(6, 1\).*ravel"),
    (np.ones((3, 2), bool), r"1-D boolean mask of length 6 .*got shape \(3, 2\)\.$"),
    (np.ones(4, bool), r"1-D boolean mask of length 6 .*got length 4"),
    (np.array(True), "does not take a single boolean"),
])
def test_a_wrong_mask_is_named_as_given(key, message):
    # a (6, 1) mask was "of length 6 does not match 6 rows", a 0-d one "of length 0"
    with pytest.raises(IndexError, match=message):
        _graph()[key]


@pytest.mark.parametrize("key, said", [
    (pd.Series([True, None, False, True, False, True], dtype="boolean"),
     r"mask\.fillna\(False\)"),
    (pd.array([True, False, None, True, False, True], dtype="boolean"), r"fillna\(False\)"),
    (pd.Series([0, None, 2], dtype="Int64"), r"dropna\(\)"),
    (np.array([True, None, False, True, False, True], dtype=object), r"fillna\(False\)"),
], ids=["boolean Series", "BooleanArray", "Int64 Series", "object array"])
def test_an_index_with_missing_values_says_so(key, said):
    # a train mask read from a frame with NA was "row indices must be integers or
    # booleans, got dtype object: rows are indexed by position, not by node id"
    with pytest.raises(IndexError, match=r"GraphData's row index holds a missing value "
                                         rf"\(.*\) at position [12].*{said}"):
        _graph()[key]


@pytest.mark.parametrize("make", [lambda: (u for u in USERS), lambda: dict.fromkeys(USERS),
                                  lambda: dict.fromkeys(USERS).keys(), lambda: iter(USERS)],
                         ids=["generator", "dict", "dict keys", "iterator"])
def test_node_ids_of_any_iterable_in_order(make):
    # these were 0-d arrays: "must have length 6 ..., got shape ()"
    G = GraphData(np.zeros((6, 1)), node_ids=make())
    assert G.node_ids.tolist() == USERS
    np.testing.assert_array_equal(G.node_keys, _graph().node_keys)


def test_node_ids_of_a_set_or_a_single_value_are_refused():
    for ids in (set(USERS), frozenset(USERS)):
        with pytest.raises(TypeError, match="got a set, whose order is arbitrary"):
            GraphData(np.zeros((6, 1)), node_ids=ids)
        with pytest.raises(TypeError, match="got a set"):   # received_graph reads them alike
            received_graph(node_ids=ids)
    for ids in ("abcdef", 6):
        with pytest.raises(ValueError, match=r"a sequence of 6 ids .*got the single value"):
            GraphData(np.zeros((6, 1)), node_ids=ids)


@pytest.mark.parametrize("edges, said", [
    (np.array([[0, 1], [0, 2]]), "adjacency has 2 nodes"),
    (np.array([[0, 1], [0, 2], [1, 2]]), r"must be square, got shape \(3, 2\)"),
    (np.array([[0, 0, 1, 1], [1, 2, 0, 2]]), r"must be square, got shape \(2, 4\)"),  # PyG
])
def test_an_edge_list_as_adjacency_says_so(edges, said):
    with pytest.raises(ValueError, match=said + r".*looks like an edge list.*sp\.coo_array.*"
                                                "From a pandas edge list"):
        GraphData(np.zeros((3, 1)), edges)
    with pytest.raises(ValueError, match="adjacency has 4 nodes") as err:   # no edge list
        GraphData(np.zeros((3, 1)), np.eye(4))
    assert "edge list" not in str(err.value)


@pytest.mark.parametrize("features, said", [
    ([[1, 2], [3]], r"row 1 has 1 value\(s\) while row 0 has 2"),
    ([[1, 2], [3, 4], [5, 6, 7]], r"row 2 has 3 value\(s\) while row 0 has 2"),
    ([[1, 2], 3], r"row 1 is a single value while row 0 has 2"),
    (np.array([np.array([1.0, 2.0]), np.array([3.0])], dtype=object),
     r"row 1 has 1 value\(s\) while row 0 has 2"),
], ids=["short row", "long row", "scalar row", "object array of rows"])
def test_ragged_rows_of_features_say_which_row_differs(features, said):
    # numpy's "inhomogeneous shape after 1 dimensions" (or "a 1-D array, reshape")
    with pytest.raises(ValueError, match=r"features must be rows of equal length .*" + said):
        GraphData(features)
    with pytest.raises(ValueError, match=said):   # new features of a graph alike
        GraphData(np.zeros((2, 2))).with_features(features)


@pytest.mark.parametrize("key", [[True, 2], [0, False], [True, 1, 2], [np.True_, 3]])
def test_a_list_mixing_booleans_and_integers_is_refused(key):
    # numpy read [True, 2] as the positions [1, 2]: rows 1 and 2, silently
    with pytest.raises(IndexError, match=r"mixes booleans and integers .*either a boolean "
                                         r"mask of length 6 .*or integer positions"):
        _graph()[key]
    assert _graph()[[1, 2]].node_ids.tolist() == ["bob", "cat"]   # either alone is read
    assert _graph()[[True] * 3 + [False] * 3].node_ids.tolist() == USERS[:3]
