"""GraphData built from pandas and networkx objects: labels, ids and dtypes."""

import re
from decimal import Decimal
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData

pd = pytest.importorskip("pandas")   # the frames and the networkx adjacency frames


def _path_graph():
    g = nx.Graph([("c", "a"), ("c", "b")])
    g.add_node("d")
    return g


def test_dataframe_adjacency_is_read_by_node_id():
    # nx.to_pandas_adjacency lists c first: its rows were read by position, and user
    # "a" got c's neighbours
    g = _path_graph()
    D = nx.to_pandas_adjacency(g)
    expected = GraphData(np.eye(4), g, node_ids=list("abcd")).adjacency.toarray()
    G = GraphData(np.eye(4), D, node_ids=list("abcd"))
    np.testing.assert_array_equal(G.adjacency.toarray(), expected)
    np.testing.assert_array_equal(G.adjacency.toarray()[0], [0, 0, 1, 0])
    # the graph's own ids order a new adjacency too
    np.testing.assert_array_equal(
        GraphData(np.eye(4), node_ids=list("abcd")).with_adjacency(D).adjacency.toarray(),
        expected)
    with pytest.raises(ValueError, match="needs node_ids"):
        GraphData(np.eye(4), D)
    with pytest.raises(ValueError, match=r"labels differ from node_ids: .*'d'.*'e'"):
        GraphData(np.eye(4), D, node_ids=list("abce"))
    with pytest.raises(ValueError, match="same node ids on its index and its columns"):
        GraphData(np.eye(4), D.set_axis(list("wxyz"), axis=1), node_ids=list("abcd"))


def test_dataframe_adjacency_with_position_labels_is_read_by_position():
    A = nx.to_numpy_array(_path_graph())
    ids = list("abcd")
    for frame in (pd.DataFrame(A),                                  # pandas' default labels
                  pd.DataFrame(A, index=np.arange(4), columns=np.arange(4)),
                  pd.DataFrame(A, index=np.arange(4), columns=list("0123"))):   # read_csv
        for node_ids in (None, ids):
            G = GraphData(np.eye(4), frame, node_ids=node_ids)
            np.testing.assert_array_equal(G.adjacency.toarray(), A)


def test_features_dataframe_indexed_by_other_ids_is_refused():
    X = pd.DataFrame({"x": [1.0, 2.0, 3.0]}, index=["b", "a", "c"])
    with pytest.raises(ValueError, match=r"index holds node ids.*features\.loc\[node_ids\]"):
        GraphData(X, node_ids=["a", "b", "c"])
    np.testing.assert_array_equal(GraphData(X.loc[["a", "b", "c"]], node_ids=["a", "b", "c"])
                                  .features.ravel(), [2, 1, 3])
    # the index in node_ids' order, pandas' default index, or row numbers: by position
    for frame, ids in ((X, ["b", "a", "c"]), (X.reset_index(drop=True), ["a", "b", "c"]),
                       (X.set_axis([0, 4, 9]), ["a", "b", "c"])):
        np.testing.assert_array_equal(GraphData(frame, node_ids=ids).features.ravel(), [1, 2, 3])


def test_frame_indexed_by_ids_without_node_ids_is_refused():
    # the index was dropped without a word: ids became 0..n-1 and rows were matched to
    # the adjacency by position ('cat', row 0, got ann's edge to bob)
    A = sp.csr_array(np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]],
                              float))   # ann-bob, cat-dan in this order
    ids = ["ann", "bob", "cat", "dan"]
    feats = pd.DataFrame({"age": [45.0, 34, 51, 27]},
                         index=pd.Index(["cat", "ann", "dan", "bob"], name="user"))
    with pytest.raises(ValueError, match=r"index \('cat', 'ann', 'dan', 'bob'\) is not "
                                         r"pandas' default 0\.\.3, but no node_ids.*"
                                         r"node_ids=features\.index.*"
                                         r"reset_index\(drop=True\)"):
        GraphData(feats, A)
    # the advice works: node_ids=features.index with the adjacency in that order
    order = [ids.index(u) for u in feats.index]
    G = GraphData(feats, A[np.ix_(order, order)], node_ids=feats.index)
    assert G.all_node_ids.tolist() == ["cat", "ann", "dan", "bob"]
    # the round trip through to_pandas() keeps the ids, given back as node_ids
    G2 = GraphData(feats.loc[ids], A, node_ids=ids)
    with pytest.raises(ValueError, match="no node_ids were given"):
        GraphData(G2.to_pandas(), A)
    frame = G2.to_pandas()
    G3 = GraphData(frame, A, node_ids=frame.index)
    assert G3.all_node_ids.tolist() == ids
    np.testing.assert_array_equal(G3.features, G2.features)
    # pandas' default index, and 0..n-1 in order (to_pandas() of default ids), are read
    # as positions, as before
    G4 = GraphData(feats.reset_index(drop=True), A)
    assert G4.all_node_ids.tolist() == [0, 1, 2, 3]
    GraphData(G4.to_pandas(), A)


def test_filtered_frame_whose_row_numbers_overlap_integer_ids_says_what_happened():
    # df[df.x > 0] keeps the row numbers 0, 2, 3, 5, some of them integer node ids: the
    # message spoke of "node ids" that were never ids, and named no row
    df = pd.DataFrame({"x": [1.0, -2.0, 3.0, 4.0, -1.0, 5.0], "z": np.arange(6.0)})
    kept = df[df.x > 0]
    with pytest.raises(ValueError, match=r"index \(0, 2, 3, 5\) shares 3 of its 4 labels .*"
                                         r"row 1, labelled 2, would be read as the features of "
                                         r"node id 1.*row numbers that a filter.*"
                                         r"reset_index\(drop=True\).*node_ids=features\.index"):
        GraphData(kept, node_ids=np.arange(4))
    # either fix reads the intended rows
    G = GraphData(kept.reset_index(drop=True), node_ids=np.arange(4))
    np.testing.assert_array_equal(G.features[:, 1], [0, 2, 3, 5])
    G = GraphData(kept, node_ids=kept.index)
    assert G.all_node_ids.tolist() == [0, 2, 3, 5]
    # without node_ids the labels would be dropped: refused (either fix above works);
    # ids sharing no label with the index read the frame by position
    with pytest.raises(ValueError, match=r"index \(0, 2, 3, 5\) is not pandas' default"):
        GraphData(kept)
    GraphData(kept, node_ids=[10, 11, 12, 13])
    # a graph's new features name the graph's ids and what to do there
    H = GraphData(np.eye(4), node_ids=[10, 3, 2, 0])
    with pytest.raises(ValueError, match=r"with the graph's node ids.*"
                                         r"features\.loc\[G\.all_node_ids\]"):
        H.with_features(kept)
    # an index of the very ids in another order: reorder it
    with pytest.raises(ValueError, match=r"not node_ids in order: its row 0, labelled 0, "
                                         r"would be read as the features of node id 5.*"
                                         r"features\.loc\[node_ids\]"):
        GraphData(kept, node_ids=[5, 3, 2, 0])


@pytest.mark.parametrize("weight", ["3", None, Fraction(1, 3), Decimal("0.5"), 1 + 2j,
                                    np.complex64(1)])
@pytest.mark.parametrize("multi", [False, True])
def test_networkx_weights_that_are_not_numbers_are_named(weight, multi):
    # scipy said "does not support dtype <U1" (or object) without naming the edge
    g = (nx.MultiGraph if multi else nx.Graph)()
    g.add_edge("a", "b", weight=2.0, kind="friend")
    g.add_edge("b", "c", weight=weight)
    # Fraction: scipy's "does not support dtype object"; complex: the imaginary part
    # was dropped with a warning
    with pytest.raises(ValueError, match=rf"edge \('b', 'c'\) has the weight "
                                         rf"{re.escape(repr(weight))}, which is not a real "
                                         r"number.*float\(w\).*weight=None"):
        GraphData(np.eye(3), g, node_ids=list("abc"))
    # other edge attributes are ignored; the numeric weights are read
    g.edges[("b", "c", 0) if multi else ("b", "c")]["weight"] = 1
    A = GraphData(np.eye(3), g, node_ids=list("abc")).adjacency.toarray()
    np.testing.assert_array_equal(A, [[0, 2, 0], [2, 0, 1], [0, 1, 0]])


@pytest.mark.parametrize("sparse", [False, True])
def test_complex_adjacency_weights_are_refused(sparse):
    A = np.array([[0, 1 + 1j, 0], [1 + 1j, 0, 1], [0, 1, 0]])
    with pytest.raises(TypeError, match="adjacency weights must be real numbers, got dtype "
                                        "complex128"):
        GraphData(np.eye(3), sp.csr_matrix(A) if sparse else A)
    A = GraphData(np.eye(3), sp.csr_matrix(A.real) if sparse else A.real).adjacency
    np.testing.assert_array_equal(A.toarray(), [[0, 1, 0], [1, 0, 1], [0, 1, 0]])


def test_csv_round_trip_of_ids_0_to_n_minus_1_in_another_order_is_refused():
    # ids 0..2 written to CSV come back as positions (int index, text columns): read by
    # position, users 2, 0, 1 got the neighbours of 0, 1, 2
    import io
    g = nx.Graph([(0, 1)])
    g.add_node(2)
    back = pd.read_csv(io.StringIO(nx.to_pandas_adjacency(g).to_csv()), index_col=0)
    with pytest.raises(ValueError, match="positions or node ids"):
        GraphData(np.eye(3), back, node_ids=[2, 0, 1])
    want = nx.to_numpy_array(g, nodelist=[0, 1, 2])
    np.testing.assert_array_equal(
        GraphData(np.eye(3), back, node_ids=[0, 1, 2]).adjacency.toarray(), want)
    np.testing.assert_array_equal(
        GraphData(np.eye(3), back, node_ids=list("abc")).adjacency.toarray(), want)


def test_with_features_checks_the_frame_index_too():
    G = GraphData(np.eye(3), None, node_ids=["a", "b", "c"])
    with pytest.raises(ValueError, match="not node_ids in order"):
        G.with_features(pd.DataFrame({"x": [2.0, 1.0, 3.0]}, index=["b", "a", "c"]))
    H = G.with_features(pd.DataFrame({"x": [1.0, 2.0, 3.0]}, index=["a", "b", "c"]))
    assert H.features.ravel().tolist() == [1.0, 2.0, 3.0]
    # a graph of default ids too: its users 0..2 in another order, or one of them twice,
    # would give a user another's row (the constructor, naming new users, reads by position)
    D = GraphData(np.eye(3), None)
    for index in ([1, 0, 2], [0, 0, 2]):
        with pytest.raises(ValueError, match="index"):
            D.with_features(pd.DataFrame({"x": [2.0, 1.0, 3.0]}, index=index))
    frame = pd.DataFrame({"x": [2.0, 1.0, 3.0]}, index=["r", "s", "t"])   # row labels
    assert D.with_features(frame).features.ravel().tolist() == [2.0, 1.0, 3.0]


@pytest.mark.parametrize("edges", [[("u1", 2), (2, 3)], [((0, 1), (0, 2)), ((0, 2), (1, 1))]])
def test_networkx_nodes_of_mixed_types_or_tuples(edges):
    # np.asarray made the strings "2", "3" of the nodes 2, 3 ("nodes differ"), and
    # tuples rows of a 2-D array
    g = nx.Graph(edges)
    G = GraphData(np.eye(3), g, node_ids=list(g.nodes))
    assert G.all_node_ids.tolist() == list(g.nodes)
    np.testing.assert_array_equal(G.adjacency.toarray(), nx.to_numpy_array(g))
    assert len(set(G.node_keys.tolist())) == 3


def test_node_ids_of_one_type_keep_their_array_and_keys():
    # node keys seed every collection: they and the stored ids must not change
    for ids, dtype in (([5, 6, 7], np.int64), (["a", "b", "c"], np.dtype("<U1")),
                       ((5.0, 6.0, 7.0), np.int64), ([1.5, 2, 3], np.float64)):
        G = GraphData(np.eye(3), node_ids=ids)
        assert G.all_node_ids.dtype == dtype
        np.testing.assert_array_equal(G.node_keys, GraphData(np.eye(3), node_ids=np.asarray(
            ids)).node_keys)


def test_networkx_mismatch_names_the_differing_ids():
    g = nx.Graph([("u1", 2), (2, 3)])
    with pytest.raises(ValueError, match=r"nodes differ from node_ids: .*\(3\).*\(4\)"):
        GraphData(np.eye(3), g, node_ids=["u1", 2, 4])
    with pytest.raises(ValueError, match="compared with their type"):
        GraphData(np.eye(3), g, node_ids=np.array(["u1", "2", "3"]))


@pytest.mark.parametrize("column", [
    pd.date_range("2020", periods=3), pd.date_range("2020", periods=3, tz="UTC"),
    pd.to_timedelta([1, 2, 3], unit="D"), pd.period_range("2020", periods=3, freq="D"),
    pd.Categorical(["a", "b", "a"]), pd.array(["1", "2", "3"], dtype="string"),
    pd.Series(["1", "2", "3"], dtype=object)], ids=lambda c: str(getattr(c, "dtype", c)))
def test_non_numeric_dataframe_columns_are_refused(column):
    # beside a number column, dates became nanoseconds since 1970 (to_numpy(float))
    X = pd.DataFrame({"x": [0.1, 0.2, 0.3], "t": column})
    with pytest.raises(TypeError, match=r"features must be numeric, but column\(s\) 't'"):
        GraphData(X)
    with pytest.raises(TypeError, match="features must be numeric"):
        GraphData(np.eye(3)).with_features(X)


def test_numeric_extension_columns_still_convert():
    X = np.array([[0.5, 1, 1], [np.nan, 2, 0], [1.5, 3, 1]])
    frame = pd.DataFrame({"f": pd.array(X[:, 0], dtype="Float64"),
                          "i": pd.array([1, 2, 3], dtype="Int64"),
                          "b": pd.array([True, False, True], dtype="boolean"),
                          "a": pd.array([1, 2, 3], dtype="int64[pyarrow]"),
                          "c": pd.Categorical([1, 2, 1]),
                          "o": pd.Series([1, 2.0, 3], dtype=object)})
    G = GraphData(frame)
    np.testing.assert_array_equal(G.features, np.c_[X, [1, 2, 3], [1, 2, 1], [1, 2, 3]])
    assert G.features.dtype == np.float64


def test_object_arrays_of_numbers_convert_as_the_frames_columns_do():
    # df.to_numpy() of a nullable integer column beside a float one is an object array of
    # numbers (pandas' NA for the missing one): refused as "not numeric", the frame taken
    import decimal
    frame = pd.DataFrame({"i": pd.array([31, 45, None], dtype="Int64"), "f": [0.5, 1.5, 2.5]})
    expected = np.array([[31, 0.5], [45, 1.5], [np.nan, 2.5]])
    for X in (frame.to_numpy(), [[31, 0.5], [45, 1.5], [None, 2.5]],
              np.array([[31, decimal.Decimal("0.5")], [np.int64(45), 1.5], [np.nan, 2.5]],
                       dtype=object)):
        G = GraphData(X)
        np.testing.assert_array_equal(G.features, expected)
        assert G.features.dtype == np.float64
        np.testing.assert_array_equal(GraphData(np.eye(3)).with_features(X).features, expected)
    # what is no number is refused, named with its place
    for bad, shown in (("2.5", "'2.5'"), (1j, "1j"), (b"1", "b'1'")):
        X = np.array([[1, 2], [3, bad]], dtype=object)
        with pytest.raises(TypeError, match=rf"features must be numeric, got {shown} at row 1, "
                                            r"column 1"):
            GraphData(X)


def test_gnn_takes_features_with_negative_strides():
    from skldp._torch._sparse import to_torch_dense
    from skldp.models import GCNClassifier
    rng = np.random.default_rng(0)
    X = rng.random((20, 3))
    np.testing.assert_array_equal(to_torch_dense(X[::-1, ::-1]).numpy(),
                                  X[::-1, ::-1].astype(np.float32))
    Xc = X.astype(np.float32)
    assert np.shares_memory(to_torch_dense(Xc).numpy(), Xc)   # no copy otherwise
    A = sp.random(20, 20, density=0.2, random_state=0, format="csr")
    A = ((A + A.T) > 0).astype(float)
    y = rng.integers(0, 2, 20)
    G = GraphData(X[:, ::-1], A)
    GCNClassifier(epochs=1, random_state=0).fit(G[:10], y[:10]).predict(G[10:])


def test_column_selection_points_to_nodewise():
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    from skldp import NodeWise
    from skldp.propagation import KProp
    A = sp.csr_matrix(np.ones((4, 4)) - np.eye(4))
    G = GraphData(np.arange(8.0).reshape(4, 2), A)
    ct = ColumnTransformer([("s", StandardScaler(), [0])])
    with pytest.raises(IndexError, match=r"supports row \(node\) indexing only.*NodeWise"):
        Pipeline([("kprop", KProp(steps=1)), ("ct", ct)]).fit_transform(G)
    out = Pipeline([("kprop", KProp(steps=1)), ("ct", NodeWise(ct))]).fit_transform(G)
    assert out.shape == (4, 1)


def test_a_column_transformer_holding_a_mechanism_points_to_private_columns():
    # the advice was NodeWise(ColumnTransformer(...)), which read every column in the clear
    # (epsilon inf for every user) and then failed: the mechanism was given an array
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    from skldp import NodeWise
    from skldp.accounting import privacy_report
    from skldp.mechanisms import PiecewiseMechanism
    from skldp.propagation import KProp

    rng = np.random.default_rng(0)
    n = 30
    visits, age = rng.integers(0, 30, n).astype(float), rng.integers(18, 90, n).astype(float)
    y = (visits > 14).astype(int)
    A = sp.csr_array(np.eye(n, k=1) + np.eye(n, k=-1))
    G = GraphData(np.c_[visits, age], A, node_ids=[f"u{i}" for i in range(n)])
    mech = PiecewiseMechanism(eps=1.0, feature_range=(18, 90), random_state=0)
    ct = ColumnTransformer([("priv", mech, [1]), ("pub", "passthrough", [0])])
    with pytest.raises(IndexError, match=r"cannot hold a local DP mechanism "
                                         r"\(PiecewiseMechanism\).*on_device=True.*"
                                         r"with_features\(\.\.\., source='public'\)"):
        Pipeline([("ct", ct), ("clf", LogisticRegression())]).fit(G[:20], y[:20])
    nested = ColumnTransformer([("priv", Pipeline([("m", mech)]), [1])])
    with pytest.raises(IndexError, match=r"\(PiecewiseMechanism\)"):
        nested.fit_transform(G)
    assert len(G.ledger) == 0
    # the advice works: the private column alone leaves the devices, the public one is
    # joined to the reports, and the ledger holds the mechanism only
    private = Pipeline([("cols", NodeWise(ColumnTransformer([("private", "passthrough", [1])]),
                                          on_device=True)), ("mech", mech)])
    reports = private.fit_transform(G)
    mixed = reports.with_features(np.c_[reports.features, visits], source="public")
    clf = Pipeline([("kp", KProp(1)), ("clf", LogisticRegression())]).fit(mixed[:20], y[:20])
    clf.score(mixed[20:], y[20:])
    assert G.ledger.local_epsilon == 1.0
    assert privacy_report(private).local_epsilon == 1.0


def test_graph_construction_silent_errors_found_by_a_hunt():
    # with_features dropped a frame's names; small-int COO duplicates overflowed; None in
    # an object adjacency was no edge; an index of the ids as text was read by position
    pd = pytest.importorskip("pandas")
    import scipy.sparse as sp
    df = pd.DataFrame({"age": [20.0, 30.0, 40.0], "income": [1.0, 2.0, 3.0]})
    G = GraphData(df)
    assert list(G.with_features(df[["income", "age"]]).feature_names) == ["income", "age"]
    A = sp.coo_matrix((np.array([200, 100], dtype=np.uint8), ([0, 0], [1, 1])), shape=(3, 3))
    assert GraphData(np.zeros((3, 1)), A, symmetric=False).adjacency[0, 1] == 300
    obj = np.array([[0, 1, None], [1, 0, 1], [None, 1, 0]], dtype=object)
    with pytest.raises(TypeError, match=r"adjacency weights must be numbers, got None"):
        GraphData(np.zeros((3, 1)), obj)
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0]}, index=["12", "11", "10"])
    with pytest.raises(ValueError, match="holds the node ids .* as another type"):
        GraphData(frame, node_ids=[10, 11, 12])


def test_with_adjacency_takes_a_networkx_graph_over_the_graphs_ids():
    # Before: with_adjacency(networkx graph) asked for node_ids, which it does not take.
    nx = pytest.importorskip("networkx")
    g = nx.Graph()
    g.add_edges_from([("c", "a"), ("b", "c")])
    G = GraphData(np.zeros((3, 1)), node_ids=["a", "b", "c"])
    A = G.with_adjacency(g).adjacency.toarray()
    np.testing.assert_array_equal(A, [[0, 0, 1], [0, 0, 1], [1, 1, 0]])
