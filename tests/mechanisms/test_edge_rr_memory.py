"""EdgeRR's streamed construction against the straightforward one it replaced.

The reports are drawn block by block and symmetrised by counting first (so
that a 1M-user graph fits in a few GiB); the result must be the very same
adjacency as each device drawing its own report alone, symmetrised with scipy.
"""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.device._edges import flip_probability, randomized_lists
from skldp.mechanisms import EdgeRR
from skldp.mechanisms import _edge_rr as er
from skldp.population import list_digests, report_keys


def _reference_reports(A, keys, eps, seed, rkeys=None):
    """Every user on its own through the device program, assembled with scipy.

    ``rkeys`` are the keys each user draws its own numbers from (``keys`` by
    default); ``keys`` also name the targets (by their rank in key order).
    """
    n = A.shape[0]
    q = flip_probability(eps)
    keys = np.asarray(keys, dtype=np.uint64)
    rkeys = keys if rkeys is None else rkeys
    by_key = np.argsort(keys, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[by_key] = np.arange(n)
    rows, cols = [], []
    for i in range(n):
        nb = A.indices[A.indptr[i]:A.indptr[i + 1]]
        o = np.argsort(rank[nb])
        _, pos = randomized_lists(seed, rkeys[i:i + 1], [rank[i]], [0, len(nb)], rank[nb][o],
                                  keys[nb][o], n, q)
        rows += [i] * len(pos)
        cols.extend(by_key[pos].tolist())
    return sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n, n))


def _reference(A, keys, eps, seed, symmetrize, through_population=False):
    """The reference graph; ``through_population``: as EdgeRR draws it, each user's numbers
    keyed on the user and a digest of its list."""
    rkeys = report_keys(keys, list_digests(A, keys)) if through_population else None
    R = _reference_reports(A, keys, eps, seed, rkeys)
    if symmetrize == "or":
        R = R.maximum(R.T.tocsr())
    elif symmetrize == "and":
        R = R.multiply(R.T.tocsr())
    R = sp.csr_matrix(R, dtype=np.float32)
    R.sort_indices()
    return R


def _graph(n, density, seed, weighted=False):
    A = sp.random(n, n, density=density, random_state=seed, format="csr")
    A = (A + A.T).tocsr()
    A.setdiag(0)
    A.eliminate_zeros()
    if not weighted:
        A.data[:] = 1.0
    # keys out of storage order, so that the rank order of the targets matters
    ids = np.random.default_rng(seed).permutation(n) * 7 + 3
    return GraphData(np.zeros((n, 1)), A, node_ids=ids), A


def _assert_same(R, ref):
    assert R.shape == ref.shape
    assert R.dtype == ref.dtype == np.float32
    assert R.has_sorted_indices
    np.testing.assert_array_equal(R.indptr, ref.indptr)
    np.testing.assert_array_equal(R.indices, ref.indices)
    np.testing.assert_array_equal(R.data, ref.data)


@pytest.mark.parametrize("symmetrize", ["or", "and", "directed"])
@pytest.mark.parametrize("eps,seed", [(0.5, 0), (2.0, 1), (5.0, 7), (np.inf, 3)])
@pytest.mark.parametrize("weighted", [False, True])
def test_identical_to_reference(symmetrize, eps, seed, weighted, monkeypatch):
    # tiny blocks, so that the graph spans many blocks of every pass
    monkeypatch.setattr(er, "_BLOCK_DRAWS", 97)
    G, A = _graph(300, 0.03, seed, weighted)
    mech = EdgeRR(eps, symmetrize=symmetrize, binarize=weighted, random_state=seed).fit(G)
    R = mech.transform(G).adjacency
    A01 = A.copy()
    A01.data[:] = 1.0
    ref = _reference(A01, G.node_keys, float(eps), mech.seed_, symmetrize, True)
    _assert_same(R, ref)
    if symmetrize != "directed":
        assert (R != R.T).nnz == 0
    if np.isfinite(eps):  # the noise is there: the comparison is not of empty graphs
        assert R.nnz > 0 and (R != sp.csr_matrix(A01, dtype=np.float32)).nnz > 0


@pytest.mark.parametrize("block", [1, 50, 1 << 22])
def test_block_size_does_not_change_the_reports(block, monkeypatch):
    G, A = _graph(200, 0.05, 2)
    keys = G.node_keys
    monkeypatch.setattr(er, "_BLOCK_DRAWS", block)
    R = er.randomized_adjacency_lists(A, keys, 1.5, 11)
    _assert_same(R, _reference(A, keys, 1.5, 11, "directed"))


def test_graph_with_isolated_and_empty_rows(monkeypatch):
    """Rows with no true edge and no report (eps large) at the start, middle and end."""
    monkeypatch.setattr(er, "_BLOCK_DRAWS", 5)
    n = 60
    A = sp.lil_matrix((n, n))
    for i, j in [(5, 6), (6, 7), (30, 31), (10, 40)]:
        A[i, j] = A[j, i] = 1
    A = sp.csr_matrix(A)
    G = GraphData(np.zeros((n, 1)), A)
    for mode in ["or", "and", "directed"]:
        for eps in [1.0, 19.0]:
            mech = EdgeRR(eps, symmetrize=mode, random_state=4).fit(G)
            R = mech.transform(G).adjacency
            _assert_same(R, _reference(A, G.node_keys, eps, mech.seed_, mode, True))


def _transform_peak(n, eps, symmetrize, monkeypatch):
    """``(R, traced peak of EdgeRR's transform, R's bytes)`` on a graph of ``n`` users."""
    monkeypatch.setattr(er, "_BLOCK_DRAWS", 1 << 16)  # temporaries small against the output
    G, _ = _graph(n, 5 / n, 0)
    mech = EdgeRR(eps, symmetrize=symmetrize, random_state=0).fit(G)
    tracemalloc.start()
    R = mech.transform(G).adjacency
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return R, peak, R.data.nbytes + R.indices.nbytes + R.indptr.nbytes


@pytest.mark.long
def test_symmetrized_peak_memory_is_near_the_output(monkeypatch):
    """The 'or' graph is built without a second copy of the reports or of itself.

    Output = int32 indices + float32 data (8 bytes per stored entry). The former
    path held the reports, their transpose and a union buffer of both at once
    (over 3x the output); the streamed one stays below 2x.
    """
    R, peak, out_bytes = _transform_peak(20_000, 4.0, "or", monkeypatch)
    assert R.nnz > 2e6
    assert peak < 2.0 * out_bytes, (peak, out_bytes)


def test_directed_reports_peak_memory_is_near_the_output(monkeypatch):
    """The reports are gathered in the output's index dtype, not in int64 then converted.

    Output = int32 indices + float32 data. Gathering int64 blocks, joining them and
    converting held five times the indices (2.5x the output); now the blocks and
    their join, twice the indices.
    """
    R, peak, out_bytes = _transform_peak(6_000, 3.0, "directed", monkeypatch)
    assert R.indices.dtype == np.int32 and R.nnz > 2e5
    assert peak < 1.3 * out_bytes, (peak, out_bytes)


@pytest.mark.parametrize("bad,msg", [(np.nan, "NaN or infinite"), (np.inf, "NaN or infinite"),
                                     (-np.inf, "NaN or infinite"), (-1.0, "negative")])
def test_adjacency_weight_checks_without_a_mask(bad, msg):
    """The output's validation (min/max instead of a boolean mask) still rejects bad weights."""
    A = sp.csr_matrix(np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]], dtype=np.float64))
    A.data[3] = bad
    with pytest.raises(ValueError, match=msg):
        GraphData(np.zeros((3, 1)), A)
    G = GraphData(np.zeros((3, 1)), sp.csr_matrix((3, 3)))  # no edge at all is fine
    assert G.with_adjacency(sp.csr_matrix((3, 3))).adjacency.nnz == 0
