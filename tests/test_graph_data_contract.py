"""GraphData's contract: views select the right rows, bad input is refused, caches
belong to the graph they describe."""

import numpy as np
import pytest

from skldp import GraphData


def _graph():
    X = np.arange(10.).reshape(5, 2)
    return GraphData(X, np.eye(5), node_ids=[10, 11, 12, 13, 14])


# ------------------------------------------------------------------ views
def test_a_slice_selects_rows_of_the_view_not_of_the_whole_graph():
    G = _graph()
    v = G[[4, 1, 3]]
    w = v[1:]
    np.testing.assert_array_equal(w.rows, [1, 3])
    np.testing.assert_array_equal(w.node_ids, [11, 13])
    np.testing.assert_array_equal(np.asarray(w), G.features[[1, 3]])
    np.testing.assert_array_equal(v[::-1].node_ids, [13, 11, 14])


def test_a_single_boolean_is_refused_even_on_a_one_row_view():
    v = _graph()[[2]]
    for key in (True, False, np.True_):
        with pytest.raises(IndexError, match="single boolean"):
            v[key]


def test_to_pandas_is_indexed_by_the_views_node_ids():
    pytest.importorskip("pandas")
    G = _graph()
    df = G[[3, 0]].to_pandas()
    assert df.index.tolist() == [13, 10]
    np.testing.assert_array_equal(df.to_numpy(), G.features[[3, 0]])


# ------------------------------------------------------------- validation
@pytest.mark.parametrize("features", [
    np.array([["1", "2"], ["3", "4"]]),                                     # numeric text
    np.array([["2020-01-01"], ["2020-01-02"]], dtype="datetime64[D]"),      # dates
])
def test_features_that_are_not_numbers_are_refused(features):
    with pytest.raises(TypeError, match="numeric"):
        GraphData(features)


@pytest.mark.parametrize("dtype", ["timedelta64[s]", "datetime64[s]", "<U1"])
def test_durations_dates_and_text_are_neither_features_nor_weights(dtype):
    # numpy counts timedelta64 as an integer type: durations passed as counts of their unit
    values = np.array([[0, 1], [1, 0]]).astype(dtype)
    with pytest.raises(TypeError, match="numeric"):
        GraphData(values)
    with pytest.raises(TypeError, match="adjacency weights must be numbers"):
        GraphData(np.ones((2, 1)), values)


@pytest.mark.parametrize("bad", [-np.inf, np.inf, np.nan])
def test_infinite_or_nan_adjacency_weights_are_refused(bad):
    A = np.eye(3)
    A[0, 1] = bad
    with pytest.raises(ValueError, match="NaN or infinite"):
        GraphData(np.ones((3, 1)), A)


# ------------------------------------------------------------------ caches
def test_the_memo_is_not_shared_with_a_graph_of_other_features():
    G = _graph()
    G.memo_set("embedding", np.zeros(5))
    H = G.with_features(np.ones((5, 2)))
    assert H.token != G.token
    assert H.memo_get("embedding") is None
    H.memo_set("embedding", np.ones(5))
    np.testing.assert_array_equal(G.memo_get("embedding"), 0)


def test_finite_check_is_redone_for_new_features():
    G = _graph()
    G.require_finite_features("Step")
    X = np.ones((5, 2))
    X[2, 1] = np.nan
    H = G.with_features(X)
    with pytest.raises(ValueError):
        H.require_finite_features("Step")
    # the adjacency is unchanged: the view of the new features is still usable
    assert H.adjacency is G.adjacency


def test_a_claim_of_false_symmetry_stays_with_its_graph_not_the_matrix():
    A = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    G = GraphData(np.ones((3, 1)), A, symmetric=False)
    assert not G.is_symmetric()
    # a fresh GraphData on the same (symmetric) matrix checks it for itself
    assert GraphData(np.zeros((3, 1)), G.adjacency).is_symmetric()


def test_new_simulation_gives_the_same_data_to_new_devices():
    G = _graph()
    v = G[[3, 1]]
    w = v.new_simulation(budget=2.0)
    assert w.population is not G.population
    assert w.population.budget == 2.0 and G.population.budget is None
    np.testing.assert_array_equal(w.node_ids, [13, 11])
    assert w.features is G.features and w.adjacency is G.adjacency


def test_dataframe_adjacency_with_columns_in_another_order_is_read_by_label():
    pd = pytest.importorskip("pandas")
    ids = ["a", "b", "c"]
    # directed weighted edges a -> b (1) and b -> c (2); columns in another order
    frame = pd.DataFrame([[0., 0., 1.], [2., 0., 0.], [0., 0., 0.]],
                         index=["a", "b", "c"], columns=["c", "a", "b"])
    G = GraphData(np.ones((3, 1)), frame, node_ids=ids)
    expected = np.array([[0, 1, 0], [0, 0, 2], [0, 0, 0]], dtype=np.float32)
    np.testing.assert_array_equal(G.adjacency.toarray(), expected)


def test_population_without_node_ids_must_name_the_same_users():
    # rows 3-5 of a frame indexed by id were named 0-2: G's first three users were charged
    # for what users 103-105 sent
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(0).random((6, 2))
    df = pd.DataFrame(X, index=[100, 101, 102, 103, 104, 105])
    G = GraphData(X)
    for bad in (df.iloc[3:], X[3:], df):
        with pytest.raises(ValueError, match="population= says these rows are users already"):
            GraphData(bad, population=G)
    with pytest.raises(ValueError, match="population= says"):
        GraphData(X, population=GraphData(X, node_ids=[f"u{i}" for i in range(6)]))
    assert GraphData(X + 1, population=G).population is G.population   # G's users, in order
    H = GraphData(df.iloc[3:], node_ids=[3, 4, 5], population=G)
    assert np.array_equal(H.node_keys, G.node_keys[3:])


def test_duplicate_node_ids_are_named_and_counted():
    # "node_ids must be unique." named no id: in a million users, which one?
    ids = ["a", "b", "a", "c", "b", "a"]
    with pytest.raises(ValueError, match=r"^node_ids must be unique, but 2 id\(s\) appear more "
                                         r"than once \(3 extra row\(s\)\): 'a' is at rows 0, "
                                         r"2, 5\.$"):
        GraphData(np.zeros((6, 1)), node_ids=ids)
    ids = list(range(10)) + [7] * 8
    with pytest.raises(ValueError, match=r"1 id\(s\) appear more than once \(8 extra row\(s\)"
                                         r"\): 7 is at rows 7, 10, 11, 12, 13 and 4 more\.$"):
        GraphData(np.zeros((18, 1)), node_ids=ids)
    with pytest.raises(ValueError, match=r"\): 1 is at rows 0, 2\.$"):   # 1.0 is user 1
        GraphData(np.zeros((3, 1)), node_ids=np.array([1.0, 2.0, 1.0]))
