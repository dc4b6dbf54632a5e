"""Tests of EdgeRR: randomized response on adjacency lists (paper 003, eqs. (5)-(6))."""

import pickle
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.mechanisms import EdgeRR
from skldp.mechanisms._edge_rr import randomized_adjacency_lists
from skldp.population import list_digests, report_keys


def _random_graph(n, density, seed=0):
    A = sp.random(n, n, density=density, random_state=seed, format="csr")
    A = ((A + A.T) > 0).astype(np.float64)
    A.setdiag(0)
    A.eliminate_zeros()
    return sp.csr_matrix(A)


def _graph(n=400, density=0.02, seed=0):
    A = _random_graph(n, density, seed)
    return GraphData(np.zeros((n, 2)), A), A


def _rates(A, R):
    n = A.shape[0]
    kept = R.multiply(A).sum()
    n_true = A.nnz
    n_non = n * (n - 1) - n_true
    return kept / n_true, (R.nnz - kept) / n_non, n_true, n_non


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_keep_and_flip_rates_match_formula(eps):
    G, A = _graph()
    mech = EdgeRR(eps, symmetrize="directed", random_state=1).fit(G)
    R = mech.transform(G).adjacency
    q = 1 / (1 + np.exp(eps))
    keep, flip, n_true, n_non = _rates(A, R)
    assert mech.flip_probability_ == pytest.approx(q)
    assert abs(keep - (1 - q)) < 5 * np.sqrt(q * (1 - q) / n_true)
    assert abs(flip - q) < 5 * np.sqrt(q * (1 - q) / n_non)


@pytest.mark.parametrize("n", [2, 60])
def test_complete_graph_has_nothing_to_flip_in(n):
    # every user is linked to every other: no free slot (this crashed), only drops
    A = sp.csr_matrix(np.ones((n, n)) - np.eye(n))
    G = GraphData(np.zeros((n, 1)), A)
    mech = EdgeRR(1.0, symmetrize="directed", random_state=0).fit(G)
    R = mech.transform(G).adjacency
    kept, n_true = R.multiply(A).sum(), A.nnz
    assert R.nnz == kept          # no edge outside the true ones
    keep = kept / n_true
    q = mech.flip_probability_
    assert abs(keep - (1 - q)) < 5 * np.sqrt(q * (1 - q) / n_true)


def test_single_bit_ldp_ratio():
    """P(report 1 | bit 1) / P(report 1 | bit 0) estimates e^eps (eq. (6))."""
    eps = 1.0
    n = 300
    A = _random_graph(n, 0.3, seed=3)  # many true bits so both rates are precise
    G = GraphData(np.zeros((n, 1)), A)
    R = EdgeRR(eps, symmetrize="directed", random_state=4).fit_transform(G).adjacency
    keep, flip, n_true, n_non = _rates(A, R)
    q = 1 / (1 + np.exp(eps))
    # delta method: Var(log keep/flip) = q/((1-q) n_true) + (1-q)/(q n_non)
    se = np.sqrt(q / ((1 - q) * n_true) + (1 - q) / (q * n_non))
    assert abs(np.log(keep / flip) - eps) < 5 * se
    assert abs(np.log((1 - flip) / (1 - keep)) - eps) < 5 * np.sqrt(
        q / ((1 - q) * n_non) + (1 - q) / (q * n_true))


def test_flipped_targets_are_uniform_over_non_neighbours():
    n = 500
    A = sp.csr_matrix((n, n))  # no edges: every other user is a candidate
    G = GraphData(np.zeros((n, 1)), A)
    R = sp.coo_matrix(EdgeRR(2.0, symmetrize="directed", random_state=0).fit_transform(G)
                      .adjacency)
    # offset of the target from the user, mod n, is uniform on 1..n-1
    off = (R.col - R.row) % n
    assert off.min() >= 1
    k = len(off)
    assert abs(off.mean() - n / 2) < 5 * np.sqrt((n ** 2 - 1) / 12 / k)
    counts = np.bincount(R.col, minlength=n)
    chi2 = ((counts - k / n) ** 2 / (k / n)).sum()
    assert chi2 < (n - 1) + 5 * np.sqrt(2 * (n - 1))


@pytest.mark.parametrize("sym", ["directed", "or", "and"])
def test_no_self_loops_no_duplicates_and_symmetry(sym):
    G, A = _graph(300, 0.05)
    R = EdgeRR(1.5, symmetrize=sym, random_state=0).fit_transform(G).adjacency
    assert R.diagonal().sum() == 0
    assert np.all(R.data == 1)
    C = R.copy()
    C.sum_duplicates()
    assert C.nnz == R.nnz
    if sym != "directed":
        assert (R != R.T).nnz == 0


@pytest.mark.parametrize("sym", ["directed", "or", "and"])
def test_expected_edge_count(sym):
    n = 600
    G, A = _graph(n, 0.01, seed=5)
    mech = EdgeRR(2.5, symmetrize=sym, random_state=2).fit(G)
    R = mech.transform(G).adjacency
    expected = mech.expected_n_edges(n, A.nnz // 2)
    # entries come in symmetric pairs for or/and: variance at most 2 * mean
    assert abs(R.nnz - expected) < 5 * np.sqrt(2 * expected)


def test_determinism_and_per_user_reports():
    G, A = _graph(300, 0.03)
    m1 = EdgeRR(2.0, symmetrize="directed", random_state=7).fit(G)
    R1 = m1.transform(G).adjacency
    R2 = EdgeRR(2.0, symmetrize="directed", random_state=7).fit(G).transform(G).adjacency
    assert (R1 != R2).nnz == 0
    # transform of a view returns the same graph; pickling keeps the collection
    assert (m1.transform(G[[3, 1]]).adjacency != R1).nnz == 0
    assert (pickle.loads(pickle.dumps(m1)).transform(G).adjacency != R1).nnz == 0
    R3 = EdgeRR(2.0, symmetrize="directed", random_state=8).fit(G).transform(G).adjacency
    assert (R1 != R3).nnz > 0
    # a user's report depends only on its own list: change other users' lists (the same
    # device program, as the population runs it, on another graph)
    def reports(M):
        return randomized_adjacency_lists(M, G.node_keys, 2.0, m1.seed_,
                                          report_keys(G.node_keys, list_digests(M, G.node_keys)))
    np.testing.assert_array_equal(reports(A).toarray(), R1.toarray())
    B = A.tolil()
    B[100:150, :] = 0
    B = sp.csr_matrix(B)
    Rb = reports(B)
    assert (Rb[:100] != R1[:100]).nnz == 0
    assert (Rb[150:] != R1[150:]).nnz == 0
    assert (Rb[100:150] != R1[100:150]).nnz > 0
    # node ids, not positions, key the reports: permuting the users permutes the reports
    perm = np.random.default_rng(0).permutation(300)
    Gp = GraphData(np.zeros((300, 2)), A[perm][:, perm], node_ids=perm, population=G)
    Rp = m1.transform(Gp).adjacency
    assert (Rp != R1[perm][:, perm]).nnz == 0


def test_another_directory_of_the_same_users_is_refused():
    # a report skips over the non-neighbours in key order: drawn over another directory
    # (one user replaced), every unchanged list was sent again, differently, charged once
    n = 120
    A = _random_graph(n, 0.05).tolil()
    A[n - 1, :] = 0
    A[:, n - 1] = 0
    A = sp.csr_matrix(A)
    ids = np.arange(n) + 10
    G1 = GraphData(np.zeros((n, 1)), A, node_ids=ids)
    other = ids.copy()
    other[-1] = 0
    G2 = GraphData(np.zeros((n, 1)), A, node_ids=other, population=G1)
    mech = EdgeRR(1.0, symmetrize="directed", random_state=0).fit(G1)
    mech.transform(G1)
    with pytest.raises(ValueError, match="directory"):
        mech.transform(G2)
    assert len(G1.ledger) == 1
    # the same directory in another order is the same collection
    perm = np.random.default_rng(1).permutation(n)
    Gp = GraphData(np.zeros((n, 1)), A[perm][:, perm], node_ids=ids[perm], population=G1)
    assert (mech.transform(Gp).adjacency != mech.transform(G1).adjacency[perm][:, perm]).nnz == 0


def test_attributes_and_features_untouched():
    G, A = _graph(100, 0.05)
    mech = EdgeRR(3.0, random_state=0).fit(G)
    assert mech.epsilon_ == 3.0
    assert mech.protects_ == ("edges",)
    Gr = mech.transform(G[:10])
    assert len(Gr) == 10 and Gr.n_nodes == 100
    assert Gr.features is G.features
    # no privacy: the graph is reported as is
    Gi = EdgeRR(np.inf, random_state=0).fit_transform(G)
    assert (Gi.adjacency != A).nnz == 0


def test_bad_input():
    G, A = _graph(50, 0.1)
    for eps in (0, -1.0, float("nan")):
        with pytest.raises(ValueError):
            EdgeRR(eps).fit(G)
    with pytest.raises(ValueError, match="symmetrize"):
        EdgeRR(1.0, symmetrize="max").fit(G)
    W = A.copy()
    W.data[:] = 2.5
    with pytest.raises(ValueError, match="0/1"):
        EdgeRR(1.0).fit(GraphData(np.zeros((50, 1)), W))
    Rw = EdgeRR(1.0, binarize=True, random_state=0).fit_transform(GraphData(np.zeros((50, 1)), W))
    assert np.all(Rw.adjacency.data == 1)
    D = sp.csr_matrix(sp.triu(A))
    with pytest.raises(ValueError, match="symmetric"):
        EdgeRR(1.0, symmetrize="or").fit(GraphData(np.zeros((50, 1)), D))
    EdgeRR(1.0, symmetrize="directed", random_state=0).fit(GraphData(np.zeros((50, 1)), D))
    S = A + sp.eye(50)
    with pytest.raises(ValueError, match="self loops"):
        EdgeRR(1.0).fit(GraphData(np.zeros((50, 1)), S))
    with pytest.raises(ValueError, match="at least 2"):
        EdgeRR(1.0).fit(GraphData(np.zeros((1, 1)), sp.csr_matrix((1, 1))))
    with pytest.raises(ValueError, match="adjacency"):
        EdgeRR(1.0).fit(GraphData(np.zeros((5, 1))))
    with pytest.raises(TypeError):
        EdgeRR(1.0).fit(np.zeros((5, 1)))
    # a graph without edges is valid: users still report noise edges
    E = EdgeRR(1.0, random_state=0).fit_transform(GraphData(np.zeros((50, 1)),
                                                             sp.csr_matrix((50, 50))))
    assert E.adjacency.nnz > 0


def test_scales_without_dense_matrix():
    """100k users: memory grows with edges + flips, far below a dense n x n."""
    n = 100_000
    rng = np.random.default_rng(0)
    src = rng.integers(0, n, 300_000)
    dst = rng.integers(0, n, 300_000)
    keep = src != dst
    A = sp.csr_matrix((np.ones(keep.sum()), (src[keep], dst[keep])), shape=(n, n))
    A = ((A + A.T) > 0).astype(np.float32)
    eps = 11.0
    tracemalloc.start()
    R = randomized_adjacency_lists(A, np.arange(n, dtype=np.uint64), eps, 3)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    q = 1 / (1 + np.exp(eps))
    expected = A.nnz * (1 - q) + (n * (n - 1) - A.nnz) * q
    assert abs(R.nnz - expected) < 5 * np.sqrt(expected)
    assert peak < 1e-2 * n * n  # a dense boolean n x n would need n^2 bytes (10 GB)
