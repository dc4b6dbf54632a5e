"""GraphData: validation, input formats, views, memo and pickling."""

import importlib.util
import pickle
import subprocess
import sys
import textwrap

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp._graph_data import _MEMO_SIZE


def _path_graph(n=4):
    A = np.zeros((n, n))
    i = np.arange(n - 1)
    A[i, i + 1] = A[i + 1, i] = 1
    return A


def test_non_square_adjacency():
    with pytest.raises(ValueError, match="square"):
        GraphData(np.ones((3, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="square"):
        GraphData(np.ones((3, 2)), sp.csr_array(np.ones((3, 4))))


def test_shape_mismatch():
    with pytest.raises(ValueError, match="adjacency has 4 nodes but features have 3 rows"):
        GraphData(np.ones((3, 2)), _path_graph(4))
    with pytest.raises(ValueError, match="node_ids must have length 3"):
        GraphData(np.ones((3, 2)), node_ids=[1, 2])
    with pytest.raises(ValueError, match="feature_names must have length 2"):
        GraphData(np.ones((3, 2)), feature_names=["a"])


def test_empty_graph_and_bad_features():
    with pytest.raises(ValueError, match="at least one node"):
        GraphData(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="1-D"):
        GraphData(np.ones(3))
    with pytest.raises(ValueError, match="2-D"):
        GraphData(np.ones((2, 2, 2)))
    with pytest.raises(TypeError, match="numeric"):
        GraphData(np.array([["a", "b"]], dtype=object))


def test_bad_adjacency_values():
    A = _path_graph(3)
    A[0, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        GraphData(np.ones((3, 1)), A)
    A = _path_graph(3)
    A[0, 1] = -1
    with pytest.raises(ValueError, match="negative"):
        GraphData(np.ones((3, 1)), A)
    with pytest.raises(ValueError, match="2-D"):
        GraphData(np.ones((3, 1)), np.ones(3))


def test_non_unique_ids():
    with pytest.raises(ValueError, match="unique"):
        GraphData(np.ones((3, 2)), node_ids=["a", "b", "a"])


def test_networkx_input():
    g = nx.Graph([("a", "b"), ("b", "c")])
    G = GraphData(np.eye(3), g, node_ids=["c", "a", "b"])
    assert sp.issparse(G.adjacency) and G.adjacency.dtype == np.float32
    # order follows node_ids: c-b and a-b
    np.testing.assert_array_equal(G.adjacency.toarray(), [[0, 0, 1], [0, 0, 1], [1, 1, 0]])
    assert G.is_symmetric()
    with pytest.raises(ValueError, match="needs node_ids"):
        GraphData(np.eye(3), g)
    with pytest.raises(ValueError, match="differ"):
        GraphData(np.eye(3), g, node_ids=["a", "b", "z"])


def test_graphs_without_networkx_do_not_import_it():
    # Only a networkx graph needs networkx, and one exists only once it is imported:
    # the other inputs spare its import (about 0.2 s of every process).
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import scipy.sparse as sp
        from skldp import GraphData
        from skldp.datasets import load_cora
        G = load_cora().data
        GraphData(np.ones((3, 2)), sp.eye(3, format="csr"))
        print("networkx" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize("fmt", [sp.csr_array, sp.csr_matrix, sp.coo_array, sp.coo_matrix,
                                 sp.csc_matrix, sp.lil_array])
def test_scipy_sparse_arrays_and_matrices(fmt):
    X = np.array([[1, 0, 0], [0, 2, 0], [0, 0, 0], [3, 0, 4]], dtype=np.int64)
    A = _path_graph(4)
    G = GraphData(fmt(X), fmt(A))
    assert isinstance(G.features, sp.csr_matrix) and np.issubdtype(G.features.dtype,
                                                                   np.floating)
    assert isinstance(G.adjacency, sp.csr_matrix) and G.adjacency.has_sorted_indices
    np.testing.assert_array_equal(G.features.toarray(), X)
    np.testing.assert_array_equal(G.adjacency.toarray(), A)
    np.testing.assert_array_equal(np.asarray(G[[3, 0]]), X[[3, 0]])
    assert G.adjacency.nnz == 6


def test_dense_input_and_duplicates():
    G = GraphData(np.arange(6).reshape(3, 2), _path_graph(3))
    assert G.features.dtype == np.float64 and isinstance(G.features, np.ndarray)
    assert G.shape == (3, 2) and len(G) == 3 and G.ndim == 2
    assert G.adjacency.nnz == 4
    # explicit zeros are dropped, duplicates merged
    A = sp.coo_matrix(([1.0, 1.0, 0.0, 1.0], ([0, 0, 1, 1], [1, 1, 2, 0])), shape=(3, 3))
    G2 = GraphData(np.ones((3, 1)), A)
    assert G2.adjacency.nnz == 2 and G2.adjacency[0, 1] == 2
    assert not G2.is_symmetric()
    with pytest.raises(ValueError, match="not symmetric"):
        G2.require_symmetric("Step")
    G3 = GraphData(np.ones((3, 1)))
    assert G3.adjacency is None and not G3.is_symmetric()
    with pytest.raises(ValueError, match="no adjacency"):
        G3.require_adjacency("Step")


def test_views_share_the_store():
    G = GraphData(np.arange(8.).reshape(4, 2), _path_graph(4), node_ids=[10, 11, 12, 13])
    v = G[[2, 3]]
    assert v.features is G.features and v.adjacency is G.adjacency and v.token == G.token
    np.testing.assert_array_equal(v.node_ids, [12, 13])
    np.testing.assert_array_equal(v.full().rows, np.arange(4))
    Z = np.zeros((4, 2))
    w = v.with_features(Z)
    assert w.token != G.token and w.adjacency is G.adjacency
    np.testing.assert_array_equal(w.rows, [2, 3])
    np.testing.assert_array_equal(np.asarray(w), 0)
    with pytest.raises(ValueError, match="rows"):
        v.with_features(np.zeros((3, 2)))
    u = v.with_adjacency(np.eye(4))
    assert u.features is G.features and u.adjacency.nnz == 4
    assert "view of 2 of 4 nodes" in repr(v)
    np.testing.assert_array_equal(G.node_keys, [10, 11, 12, 13])


def test_string_ids_have_stable_keys():
    a = GraphData(np.ones((3, 1)), node_ids=["x", "y", "z"]).node_keys
    b = GraphData(np.ones((2, 1)), node_ids=["z", "x"]).node_keys
    assert a.dtype == np.uint64 and len(set(a.tolist())) == 3
    np.testing.assert_array_equal(b, a[[2, 0]])


def test_memo_lru():
    G = GraphData(np.ones((3, 1)))
    v = G[[0]]
    for i in range(_MEMO_SIZE):
        v.memo_set(i, f"value{i}")
    assert G.memo_get(0) == "value0"  # shared by views; moves 0 to the recent end
    G.memo_set("new", 1)              # evicts the least recently used: 1
    assert G.memo_get(1) is None
    assert G.memo_get(0) == "value0" and G.memo_get("new") == 1
    assert len(G._store._memo) == _MEMO_SIZE
    assert GraphData(np.ones((3, 1))).memo_get(0) is None  # other graph, other memo


def test_pickle_drops_the_memo():
    G = GraphData(np.arange(6.).reshape(3, 2), _path_graph(3), node_ids=["a", "b", "c"],
                  feature_names=["p", "q"])
    v = G[[2, 0]]
    v.memo_set("k", np.arange(3))
    v2 = pickle.loads(pickle.dumps(v))
    assert v2.memo_get("k") is None
    assert v2.token == v.token
    np.testing.assert_array_equal(v2.rows, [2, 0])
    np.testing.assert_array_equal(np.asarray(v2), np.asarray(v))
    np.testing.assert_array_equal(v2.node_ids, ["c", "a"])
    assert list(v2.feature_names) == ["p", "q"]
    assert (v2.adjacency != G.adjacency).nnz == 0
    assert v.memo_get("k") is not None  # the original keeps its memo


def test_array_protocol_dtype():
    G = GraphData(sp.csr_matrix(np.eye(3)))
    a = np.asarray(G[[1]], dtype=np.float32)
    assert a.dtype == np.float32 and a.shape == (1, 3) and a[0, 1] == 1


def test_memo_is_bounded_in_bytes(monkeypatch):
    import skldp._graph_data as gd
    monkeypatch.setattr(gd, "_MEMO_BYTES", 3 * 800)
    G = GraphData(np.ones((3, 1)))
    for i in range(4):
        G.memo_set(i, np.zeros(100))  # 800 bytes each: only 3 fit
    assert G.memo_get(0) is None and all(G.memo_get(i) is not None for i in (1, 2, 3))
    G.memo_set("big", np.zeros(10_000))  # larger than the budget alone: still kept, alone
    assert G.memo_get("big") is not None and len(G._store._memo) == 1
    view = GraphData(np.ones((3, 1))).with_features(np.zeros((3, 50)))
    assert gd._nbytes(view) == 3 * 50 * 8


# ------------------------------------------------------------------ indexing
def test_positions_select_nodes_by_id():
    """``G[G.positions(ids)]`` selects nodes by id, where ``G[...]`` is positional: with
    1-based ids ``G[[3, 4]]`` is ids 4 and 5."""
    X = np.arange(10.).reshape(5, 2)
    G = GraphData(X, _path_graph(5), node_ids=[1, 2, 3, 4, 5])
    assert G[[3, 4]].node_ids.tolist() == [4, 5]
    assert G[G.positions([3, 4])].node_ids.tolist() == [3, 4]
    np.testing.assert_array_equal(np.asarray(G[G.positions([5, 1])]), X[[4, 0]])
    # the ids' user keys: 3.0 and np.int32(3) are user 3
    assert G.positions([3.0, np.int32(3)]).tolist() == [2, 2]
    assert G.positions([]).tolist() == []
    # positions in the view, not in the graph; a row held twice: its first position
    v = G[[4, 2, 2, 0]]
    assert v.positions([1, 3, 5]).tolist() == [3, 1, 0]
    assert v[v.positions([3])].node_ids.tolist() == [3]
    Gs = GraphData(X, node_ids=list("abcde"))
    assert Gs[Gs.positions(["d", "b"])].node_ids.tolist() == ["d", "b"]
    pd = pytest.importorskip("pandas")
    assert Gs.positions(pd.Index(["e", "a"])).tolist() == [4, 0]
    Gt = GraphData(X, node_ids=[(0, 0), (0, 1), "u", 7, (1, 0)])
    assert Gt.positions([(1, 0), 7, "u", (np.int64(0), np.int64(1))]).tolist() == [4, 3, 2, 1]


def test_positions_name_the_ids_that_are_not_in_the_view():
    G = GraphData(np.zeros((5, 2)), node_ids=[101, 102, 103, 104, 105])
    with pytest.raises(KeyError) as missing:
        G.positions([999, 101, "103"])   # text "103" is another user than 103
    assert missing.value.args[0] == ("2 of the 3 ids are not nodes of this view of 5 rows: "
                                     "999, '103'.")
    with pytest.raises(KeyError, match=r"1 of the 2 ids .* view of 2 rows: 102\. Nodes of "
                                        r"the graph outside this view: 1 of them"):
        G[[0, 2]].positions([103, 102])
    assert G.full().positions([102]).tolist() == [1]
    with pytest.raises(TypeError, match="wrap one id in a list"):
        G.positions(103)
    with pytest.raises(TypeError, match="wrap one id in a list"):
        G.positions("103")
    with pytest.raises(TypeError, match="boolean"):
        G.positions([True])


def test_indexing_by_an_id_says_indexing_is_by_position():
    G = GraphData(np.zeros((5, 2)), node_ids=[101, 102, 103, 104, 105])
    with pytest.raises(IndexError, match=r"valid positions: -5\.\.4\): rows are indexed by "
                                         r"position, not by node id.*G\[G\.positions\(ids\)\]"):
        G[[103]]
    Gs = GraphData(np.zeros((3, 2)), node_ids=["a", "b", "c"])
    with pytest.raises(IndexError, match=r"integers or booleans, got dtype <U1: rows are "
                                         r"indexed by position.*G\[G\.positions\(ids\)\]"):
        Gs[["b"]]


def test_empty_index_gives_an_empty_view():
    G = GraphData(np.arange(8.).reshape(4, 2), _path_graph(4), node_ids=[10, 11, 12, 13])
    for key in ([], np.array([], dtype=np.int64), np.array([]), (np.array([], int), ...)):
        v = G[key]
        assert v.shape == (0, 2) and v.n_nodes == 4 and v.token == G.token
        assert np.asarray(v).shape == (0, 2) and v.node_ids.shape == (0,)
    assert G[[]][[]].shape == (0, 2)
    from sklearn.utils import _safe_indexing
    assert _safe_indexing(G, np.array([], dtype=int)).shape == (0, 2)


def test_out_of_range_and_bad_indices_name_the_view_size():
    G = GraphData(np.arange(8.).reshape(4, 2), _path_graph(4))
    v = G[[1, 3]]
    with pytest.raises(IndexError, match=r"row index 2 is out of range for a view of 2 rows"):
        v[[0, 2]]
    with pytest.raises(IndexError, match=r"row index -3 is out of range for a view of 2 rows"):
        v[-3]
    with pytest.raises(IndexError, match="view of 4 rows"):
        G[np.array([4])]
    with pytest.raises(IndexError, match="integers or booleans"):
        G[[0.5]]
    with pytest.raises(IndexError, match="integers or booleans"):
        G[["a"]]
    with pytest.raises(IndexError, match="1-D"):
        G[np.array([[0, 1]])]
    # negative positions count from the end of the view, as in numpy
    np.testing.assert_array_equal(v[-1].rows, [3])
    np.testing.assert_array_equal(v[[-2, -1]].rows, [1, 3])


# ------------------------------------------------------- cached graph checks
def test_finite_check_is_cached_on_the_store(monkeypatch):
    import skldp._graph_data as gd
    calls = []
    real = gd.check_finite_features
    monkeypatch.setattr(gd, "check_finite_features",
                        lambda X, name="features": calls.append(1) or real(X, name))
    G = GraphData(np.arange(8.).reshape(4, 2), _path_graph(4))
    for view in (G, G[[0]], G[[2, 3]]):
        view.require_finite_features("Step")
    assert len(calls) == 1
    # a new adjacency keeps the features, and their check
    G.with_adjacency(np.eye(4)).require_finite_features("Step")
    assert len(calls) == 1
    bad = np.arange(8.).reshape(4, 2)
    bad[2, 1] = np.inf
    with pytest.raises(ValueError, match=r"the features given to Step contain NaN or infinite "
                                         r"values \(first at row 2, column 1\)"):
        GraphData(bad, _path_graph(4))[[0]].require_finite_features("Step")


def test_one_sided_adjacency_is_detected():
    A = np.triu(_path_graph(4))
    assert GraphData(np.ones((4, 1)), A).is_one_sided()
    assert GraphData(np.ones((4, 1)), A.T).is_one_sided()
    assert not GraphData(np.ones((4, 1)), _path_graph(4)).is_one_sided()
    B = A.copy()
    B[3, 0] = 1  # a directed cycle: edges on both sides
    assert not GraphData(np.ones((4, 1)), B).is_one_sided()
    assert not GraphData(np.ones((4, 1)), np.eye(4)).is_one_sided()  # self loops only
    assert not GraphData(np.ones((4, 1))).is_one_sided()


def test_known_symmetry_answers_one_sidedness_without_a_scan(monkeypatch):
    # (a scan of every entry: 0.12 s at 1M users, before every graph step's first use)
    import skldp._graph_data as gd
    calls = []
    scan = gd._is_one_sided
    monkeypatch.setattr(gd, "_is_one_sided", lambda A: calls.append(1) or scan(A))
    G = GraphData(np.ones((4, 1)), _path_graph(4))
    assert G.is_symmetric() and not G.is_one_sided() and calls == []
    assert not GraphData(np.ones((4, 1)), _path_graph(4), symmetric=True).is_one_sided()
    assert calls == []
    assert GraphData(np.ones((4, 1)), np.triu(_path_graph(4))).is_one_sided() and calls == [1]


def test_finite_check_is_exact_when_the_sum_overflows():
    huge = np.array([[1e308, 1e308], [1e308, -1.0]])
    G = GraphData(huge)
    # finite, though the sum is inf: refused for float32's range, not as non-finite
    with pytest.raises(ValueError, match="exceed float32's range"):
        G.require_finite_features("Step")
    huge[1, 1] = np.nan
    with pytest.raises(ValueError, match=r"first at row 1, column 1"):
        GraphData(huge).require_finite_features("Step")
    with pytest.raises(ValueError, match=r"first at row 0, column 2"):
        GraphData(sp.csr_matrix([[0, 0, np.inf]])).require_finite_features("Step")


# ---------------------------------------------------------------- adjacency info
def _sym_graph(n=40, seed=0):
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.1, random_state=rng, format="csr")
    A.data[:] = 1.0
    return sp.csr_matrix(A.maximum(A.T)), rng.random((n, 3))


def test_symmetry_is_checked_once_per_adjacency(monkeypatch):
    from skldp import _graph_data
    calls = []
    real = _graph_data._is_symmetric
    monkeypatch.setattr(_graph_data, "_is_symmetric", lambda A: calls.append(1) or real(A))
    A, X = _sym_graph()
    G = GraphData(X, A)
    assert G.is_symmetric() and G[[0, 1]].is_symmetric()
    assert G.with_features(X * 2).is_symmetric()            # derived store
    assert GraphData(X + 1, G.adjacency).is_symmetric()      # fresh store, same matrix
    assert len(calls) == 1
    assert GraphData(X, A.copy()).is_symmetric() and len(calls) == 2   # another matrix


def test_symmetric_argument():
    A, X = _sym_graph()
    assert GraphData(X, A, symmetric=True).is_symmetric()
    D = sp.triu(A, format="csr")
    with pytest.raises(ValueError, match="not symmetric"):
        GraphData(X, D, symmetric=True)
    # a directed cycle: equal row and column counts, still caught
    n = 30
    C = sp.csr_matrix((np.ones(n), (np.arange(n), (np.arange(n) + 1) % n)), shape=(n, n))
    with pytest.raises(ValueError, match="not symmetric"):
        GraphData(np.ones((n, 1)), C, symmetric=True)
    # False is the caller's word for this graph only
    assert not GraphData(X, A, symmetric=False).is_symmetric()
    with pytest.raises(TypeError, match="symmetric"):
        GraphData(X, A, symmetric="yes")
    with pytest.raises(ValueError, match="without an adjacency"):
        GraphData(X, symmetric=True)


def test_operators_are_built_once_and_shared_by_the_graph():
    import pickle
    A, X = _sym_graph()
    G = GraphData(X, A)
    built = []

    def build(adj):
        built.append(adj)
        return object()

    op = G.operator("k", build)
    assert G[[1, 2]].operator("k", build) is op
    assert G.with_features(X + 1).operator("k", build) is op          # new features
    assert GraphData(X, G.adjacency).operator("k", build) is op       # fresh, same matrix
    assert len(built) == 1 and built[0] is G.adjacency
    assert G.with_adjacency(A.copy()).operator("k", build) is not op  # another graph
    # a small LRU, never pickled
    for i in range(10):
        G.operator(i, build)
    assert G.operator("k", build) is not op
    G2 = pickle.loads(pickle.dumps(G))
    n = len(built)
    G2.operator("k", build)
    assert len(built) == n + 1
    with pytest.raises(ValueError, match="no adjacency"):
        GraphData(X).operator("k", build)


def test_features_held_on_a_device_are_copied_to_the_host_on_first_read_only():
    # a step on an accelerator leaves its output there; the host copy is lazy
    import torch

    from skldp._graph_data import _nbytes
    rng = np.random.default_rng(0)
    A = sp.random(6, 6, density=0.4, random_state=0, format="csr")
    G = GraphData(rng.random((6, 3)), A)
    T = torch.arange(12, dtype=torch.float32).reshape(6, 2)
    H = G[[1, 4]]._with_features_on_device(T, feature_names=["a", "b"])
    st = H._store
    assert H.shape == (2, 2) and H.n_nodes == 6 and st._features is None
    assert H._features_on(torch.device("cpu")) is T
    assert G._features_on(torch.device("cpu")) is None          # held on the host
    assert _nbytes(H) == T.numel() * 4 and st._features is None  # the memo counts it
    # views, names and new simulations share the device copy without a host one
    for other in (H.full(), H._with_feature_names(["c", "d"]), H.new_simulation()):
        assert other._store._on_device is T and other._store._features is None
    np.testing.assert_array_equal(np.asarray(H), T.numpy()[[1, 4]])   # read: copied
    np.testing.assert_array_equal(H.features, T.numpy())
    assert st._features is not None and H._features_on(torch.device("cpu")) is T
    # pickled as the host copy (a worker holds no device tensor)
    K = pickle.loads(pickle.dumps(G._with_features_on_device(T)))
    assert K._store._on_device is None
    np.testing.assert_array_equal(K.features, T.numpy())
    with pytest.raises(ValueError, match="2-D floating tensor with 6 rows"):
        G._with_features_on_device(torch.zeros(5, 2))
    with pytest.raises(ValueError, match="2-D floating tensor"):
        G._with_features_on_device(torch.zeros(6, 2, dtype=torch.int64))


# ------------------------------------------------ the caller's matrix, ids, weights
def test_graph_never_edits_the_callers_matrix_nor_follows_its_edits():
    # a float32 CSR with an unsorted row, a duplicate and an explicit zero: the
    # canonical form GraphData needs is built on its own copy
    data = np.array([2, 1, 1, 0, 1], np.float32)
    indices = np.array([2, 1, 1, 0, 0], np.int32)
    indptr = np.array([0, 3, 4, 5], np.int32)
    for dtype in (np.float32, np.float64):   # kept as they are, or converted
        A = sp.csr_matrix((data.astype(dtype), indices, indptr), shape=(3, 3))
        before = [a.copy() for a in (A.data, A.indices, A.indptr)]
        G = GraphData(np.ones((3, 1)), A)
        for a, b in zip((A.data, A.indices, A.indptr), before, strict=True):
            np.testing.assert_array_equal(a, b)
        assert G.adjacency.nnz == 3 and G.adjacency[0, 1] == 2
    # sparse features likewise
    F = sp.csr_matrix((np.array([1., 2., 3.]), np.array([1, 0, 1]), np.array([0, 3])),
                      shape=(1, 2))
    G = GraphData(F)
    np.testing.assert_array_equal(F.indices, [1, 0, 1])
    np.testing.assert_array_equal(G.features.toarray(), [[2., 4.]])

    # the caller edits its matrix in place: a new GraphData sees the new contents,
    # not the symmetry or the operators computed for the old ones
    A = sp.csr_matrix(np.ones((6, 6), np.float32) - np.eye(6, dtype=np.float32))
    X = np.random.default_rng(0).normal(size=(6, 3))
    G1 = GraphData(X, A)
    op = G1.operator("k", lambda adj: adj.data.copy())
    assert G1.is_symmetric()
    A.data[:] = np.arange(1, A.nnz + 1, dtype=np.float32) ** 3
    G2 = GraphData(X, A)
    assert not G2.is_symmetric()
    np.testing.assert_array_equal(G2.operator("k", lambda adj: adj.data.copy()), A.data)
    # the first graph keeps what it was given
    assert G1.is_symmetric() and np.all(G1.adjacency.data == 1)
    assert G1.operator("k", lambda adj: adj.data.copy()) is op
    # a graph's own matrix is still taken as it is (no copy, caches shared)
    assert GraphData(X, G1.adjacency).operator("k", None) is op


def test_model_predicts_on_the_edited_matrix_not_the_cached_one():
    from skldp.models import GCNClassifier
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(6, 3)), np.array([0, 0, 0, 1, 1, 1])
    A = sp.csr_matrix(np.ones((6, 6), np.float32) - np.eye(6, dtype=np.float32))
    G1 = GraphData(X, A)   # alive, as the caches it holds
    m = GCNClassifier(epochs=5, early_stopping=False, random_state=0).fit(G1, y)
    A.data[:] = np.arange(1, A.nnz + 1, dtype=np.float32) ** 3
    np.testing.assert_array_equal(m.predict_proba(GraphData(X, A)),
                                  m.predict_proba(GraphData(X, A.copy())))


def test_integer_ids_get_the_same_keys_whatever_array_holds_them():
    from skldp.device._random import ids_to_keys
    X = np.random.default_rng(0).random((4, 2))
    ids = np.array([10, 11, 12, 13])
    G1 = GraphData(X, node_ids=ids)
    for other in (ids.astype(object), np.array([10, np.int64(11), np.uint8(12), 13], object)):
        G2 = GraphData(X, node_ids=other, population=G1)
        np.testing.assert_array_equal(G2.node_keys, G1.node_keys)
        assert G2.all_node_ids.dtype == np.int64
        np.testing.assert_array_equal(ids_to_keys(other), G1.node_keys)
    # pandas' integer index as object (e.g. after a concat with strings dropped)
    pd = pytest.importorskip("pandas")
    s = pd.Series([10, 11, 12, 13], dtype=object)
    np.testing.assert_array_equal(GraphData(X, node_ids=s).node_keys, G1.node_keys)
    # beyond int64: uint64, as numpy holds them; beside text, an integer keeps its key
    big = np.array([2**63, 1, 2, 3], dtype=object)
    np.testing.assert_array_equal(GraphData(X, node_ids=big).node_keys,
                                  np.array([2**63, 1, 2, 3], np.uint64))
    mixed = GraphData(X, node_ids=np.array([10, "11", 12.0, 13], dtype=object)).node_keys
    np.testing.assert_array_equal(mixed[[0, 2, 3]], G1.node_keys[[0, 2, 3]])
    assert mixed[1] not in G1.node_keys and mixed[1] == ids_to_keys(["11"])[0]
    # floats with integer values (a pandas column with gaps reads so) are those integers
    G3 = GraphData(X, node_ids=ids.astype(np.float64), population=G1)
    np.testing.assert_array_equal(G3.node_keys, G1.node_keys)
    assert G3.all_node_ids.dtype == np.int64
    halves = ids_to_keys(np.array([10.5, 11.0]))
    assert halves[0] == ids_to_keys(["10.5"])[0] and halves[1] == 11
    assert ids_to_keys(np.array([2**70, 1], dtype=object))[0] == ids_to_keys([str(2**70)])[0]
    # the same integer and its duplicate in another type are one id
    with pytest.raises(ValueError, match="unique"):
        GraphData(X, node_ids=np.array([10, np.int64(10), 12, 13], object))
    with pytest.raises(ValueError, match="unique"):
        GraphData(X, node_ids=np.array([10, 10.0, 12, 13], object))


@pytest.mark.parametrize("ids", [
    [1.0, np.nan, np.nan],
    np.array([1, None, 3], dtype=object),
    np.array(["a", None, "c"], dtype=object),
    np.array(["a", float("nan"), "c"], dtype=object),
    np.array(["2020-01-01", "NaT", "2020-01-03"], dtype="datetime64[D]"),
], ids=["float-nan", "object-none", "str-none", "str-nan", "nat"])
def test_missing_node_ids_are_refused(ids):
    with pytest.raises(ValueError, match=r"node_ids has a missing id, .* at position 1"):
        GraphData(np.zeros((3, 1)), node_ids=ids)


def test_missing_node_ids_from_pandas_are_refused():
    pd = pytest.importorskip("pandas")
    ids = pd.array([1, pd.NA, 3], dtype=object)
    with pytest.raises(ValueError, match="missing id"):
        GraphData(np.zeros((3, 1)), node_ids=np.asarray(ids, dtype=object))


def test_negative_entry_cancelled_by_a_duplicate_is_refused():
    # -1 and +1 at (0, 1): summed they would be an absent edge
    C = sp.coo_matrix((np.array([1., -1., 1.]), ([0, 0, 1], [1, 1, 0])), shape=(3, 3))
    for M in (C, sp.csr_matrix((C.data, C.col, np.array([0, 2, 3, 3])), shape=(3, 3)),
              sp.csc_matrix((C.data, C.row, np.array([0, 1, 3, 3])), shape=(3, 3))):
        with pytest.raises(ValueError, match=r"negative weight, -1.0 at row 0, column 1"):
            GraphData(np.eye(3), M)
    with pytest.raises(ValueError, match="negative weight"):
        GraphData(np.eye(3)).with_adjacency(C)
    g = nx.MultiGraph()
    g.add_edge("a", "b", weight=1.0)
    g.add_edge("a", "b", weight=-1.0)
    g.add_node("c")
    with pytest.raises(ValueError, match="negative weight, -1.0 on an edge"):
        GraphData(np.eye(3), g, node_ids=["a", "b", "c"])
    # positive duplicates are still summed
    D = sp.coo_matrix((np.array([1., 2.]), ([0, 0], [1, 1])), shape=(3, 3))
    assert GraphData(np.eye(3), D).adjacency[0, 1] == 3


def test_weights_that_underflow_in_float32_are_refused():
    # 1e-50 is 0 in float32: the edge vanished silently (nnz 0)
    W = np.array([[0, 1e-50, 1], [1e-50, 0, 0], [1, 0, 0]])
    g = nx.Graph()
    g.add_edge(0, 1, weight=1e-50)
    g.add_edge(0, 2, weight=1.0)
    for A in (W, sp.csr_matrix(W), sp.coo_matrix(W), sp.csc_matrix(W), sp.lil_matrix(W)):
        with pytest.raises(ValueError, match=r"2 positive weight\(s\) too small for float32"):
            GraphData(np.eye(3), A)
    with pytest.raises(ValueError, match=r"2 positive weight\(s\).*e\.g\. 1e-50"):
        GraphData(np.eye(3), g, node_ids=[0, 1, 2])
    with pytest.raises(ValueError, match="too small for float32"):
        GraphData(np.eye(3)).with_adjacency(W)
    with pytest.raises(ValueError, match="negative weight, -1e-50"):   # was dropped too
        GraphData(np.eye(3), sp.csr_matrix(-W))
    # the caller's explicit zeros, and weights float32 rounds to its smallest, are kept
    kept = sp.csr_matrix((np.array([0.0, 1e-45, 2.0]), [1, 2, 0], [0, 2, 3, 3]), shape=(3, 3))
    for A in (kept, kept.tocoo()):
        stored = GraphData(np.eye(3), A).adjacency
        assert stored.nnz == 2 and stored[0, 2] == np.float32(1e-45)


def test_feature_dtypes_are_real_floats_torch_can_read():
    # complex features lost their imaginary part with a numpy warning only; longdouble
    # features reached torch, which cannot read them; pandas' nullable dtypes were refused
    X = np.arange(6.0).reshape(3, 2)
    for bad in (X + 1j, sp.csr_matrix(X + 1j)):
        with pytest.raises(TypeError, match="real numbers, got dtype complex128"):
            GraphData(bad)
    for dtype in (np.longdouble, np.float16, np.int32, bool):
        assert GraphData(X.astype(dtype)).features.dtype == np.float64
    assert GraphData(sp.csr_matrix(X.astype(np.longdouble))).features.dtype == np.float64
    if importlib.util.find_spec("pandas") is not None:   # optional
        import pandas as pd
        G = GraphData(pd.DataFrame(X, columns=["a", "b"]).astype("Float64"))
        np.testing.assert_array_equal(G.features, X)
        assert list(G.feature_names) == ["a", "b"]


def test_features_beyond_float32_are_refused_by_graph_steps_and_models():
    # finite in float64, inf in float32: KProp gave inf, GCN and DP-MLP NaN probabilities
    from skldp.central import DPMLPClassifier
    from skldp.models import GCNClassifier
    from skldp.propagation import KProp
    rng = np.random.default_rng(0)
    X = rng.random((30, 3)) * 1e39
    A = sp.random(30, 30, density=0.2, random_state=0, format="csr")
    A = sp.csr_matrix(((A + A.T) > 0).astype(float))
    y = rng.integers(0, 2, 30)
    for fit in (lambda G: KProp().fit_transform(G),
                lambda G: GCNClassifier(epochs=1, random_state=0).fit(G[:20], y[:20]),
                lambda G: DPMLPClassifier(n_steps=1, batch_size=10, random_state=0,
                                          classes=[0, 1]).fit(G[:20], y[:20])):
        with pytest.raises(ValueError, match="exceed float32's range"):
            fit(GraphData(X, A))
    KProp().fit_transform(GraphData(X / 1e10, A))   # within range: fine


@pytest.mark.parametrize("ids", [[-1, 2**64 - 1, 5, 6], [1.5, "1.5", "a", "b"]])
def test_ids_that_are_one_user_key_are_refused(ids):
    # they passed as unique, and every keyed step (noise, ledger, label seeds) merged them
    with pytest.raises(ValueError, match="same user key"):
        GraphData(np.eye(4), np.zeros((4, 4)), node_ids=np.array(ids, dtype=object))
    GraphData(np.eye(4), np.zeros((4, 4)), node_ids=np.array([1.5, "x", 7, "a"], dtype=object))


def test_the_memo_is_shared_safely_by_threads():
    # joblib's threading backend shares one graph between searches: the unlocked memo
    # raised "OrderedDict mutated during iteration" (or a KeyError) when two evicted at once
    import sys
    import threading

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)   # switch threads as often as possible
    G = GraphData(np.zeros((5, 2)))
    errors = []

    def worker(t):
        try:
            for i in range(2000):
                if G.memo_get(("k", t, i % 20)) is None:
                    G.memo_set(("k", t, i % 20), np.zeros(10))
        except Exception as exc:   # noqa: BLE001 - any error of a thread is the failure
            errors.append(repr(exc))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []


def test_a_symmetric_matrix_stated_not_symmetric_gets_advice_on_the_statement():
    from skldp.mechanisms import EdgeRR
    from skldp.propagation import PPRPropagation
    A = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    X = np.eye(3)
    G = GraphData(X, A, symmetric=False)
    stated = r"built with symmetric=False, although its adjacency is symmetric.*symmetric=True"
    with pytest.raises(ValueError, match=stated) as err:
        G.require_symmetric("Step")
    assert "A.maximum(A.T)" not in str(err.value)   # symmetrising would not help
    with pytest.raises(ValueError, match=stated):
        PPRPropagation(solver="cg").fit_transform(G)
    with pytest.raises(ValueError, match=stated):
        EdgeRR(eps=1.0).fit_transform(G)
    # a matrix that is not symmetric keeps the advice to symmetrise it
    D = GraphData(X, sp.triu(A, format="csr"), symmetric=False)
    with pytest.raises(ValueError, match=r"is not symmetric\. Symmetrise it first"):
        D.require_symmetric("Step")


def test_symmetric_true_on_a_matrix_known_not_symmetric_gets_the_advice():
    A, X = _sym_graph()
    G = GraphData(X, sp.triu(A, format="csr"))
    assert not G.is_symmetric()   # known for this matrix from now on
    with pytest.raises(ValueError, match=r"not symmetric\. Symmetrise it.*symmetric=None"):
        GraphData(X, G.adjacency, symmetric=True)
