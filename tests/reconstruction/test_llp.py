"""Tests of METIS bags, label proportions and the LLP loss (paper 001 §IV-C, eq. (15))."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from skldp.reconstruction import (
    cluster_label_proportions,
    grr_transition_matrix,
    llp_kl_loss,
    metis_clusters,
)


def _two_cliques(k=20):
    B = np.ones((k, k)) - np.eye(k)
    A = sp.block_diag([B, B]).tolil()
    A[0, k] = A[k, 0] = 1
    return sp.csr_matrix(A)


def test_metis_finds_the_two_cliques():
    pytest.importorskip("pymetis")
    A = _two_cliques()
    parts = metis_clusters(A, 2, seed=0)
    assert set(parts) == {0, 1}
    assert len(set(parts[:20])) == 1 and len(set(parts[20:])) == 1
    assert np.array_equal(metis_clusters(A, 1), np.zeros(40))
    many = metis_clusters(A, 8, seed=0)
    assert len(np.unique(many)) == 8 and np.bincount(many).max() <= 10


def test_metis_symmetrises_and_ignores_self_loops():
    # as documented: a directed copy, or one with self loops, gives the same parts
    pytest.importorskip("pymetis")
    A = _two_cliques()
    parts = metis_clusters(A.copy(), 2, seed=0)
    assert len(set(parts[:20])) == 1 and len(set(parts[20:])) == 1 and parts[0] != parts[20]
    directed = sp.triu(A, format="csr")
    kept = directed.copy()
    np.testing.assert_array_equal(metis_clusters(directed, 2, seed=0), parts)
    assert (directed != kept).nnz == 0          # the caller's matrix is left as it was
    loops = (A + 5 * sp.eye(40)).tocsr()
    np.testing.assert_array_equal(metis_clusters(loops, 2, seed=0), parts)


def test_metis_is_given_the_symmetric_graph_without_self_loops(monkeypatch):
    # METIS needs each edge listed at both ends: a directed graph with self loops
    # reaches it as its undirected simple graph
    pymetis = pytest.importorskip("pymetis")
    given = []
    real = pymetis.part_graph
    monkeypatch.setattr(pymetis, "part_graph",
                        lambda k, graph, **kw: given.append(graph) or real(k, graph, **kw))
    A = sp.csr_matrix(np.array([[2, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1], [0, 0, 0, 0]],
                               dtype=float))
    metis_clusters(A, 2, seed=0)
    xadj, adjncy = np.asarray(given[0].adj_starts), np.asarray(given[0].adjacent)
    S = sp.csr_matrix((np.ones(len(adjncy)), adjncy, xadj), shape=(4, 4)).toarray()
    np.testing.assert_array_equal(S, [[0, 1, 0, 0], [1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 0]])


@pytest.mark.parametrize("fmt", ["csr", "coo-duplicates"])
def test_metis_keeps_an_edge_whose_weights_cancel(monkeypatch, fmt):
    # weights are ignored: A[0, 1] = 1 and A[1, 0] = -1 (or 1 and -1 stored twice at
    # (0, 1)) is an edge; the sum A + A.T cancelled it and METIS never saw it
    pymetis = pytest.importorskip("pymetis")
    given = []
    real = pymetis.part_graph
    monkeypatch.setattr(pymetis, "part_graph",
                        lambda k, graph, **kw: given.append(graph) or real(k, graph, **kw))
    if fmt == "csr":
        A = sp.csr_matrix(np.array([[0, 1, 0], [-1, 0, 2], [0, 2, 0]], dtype=float))
    else:
        A = sp.coo_matrix(([1.0, -1.0, 2.0], ([0, 0, 1], [1, 1, 2])), shape=(3, 3))
    metis_clusters(A, 2, seed=0)
    xadj, adjncy = np.asarray(given[0].adj_starts), np.asarray(given[0].adjacent)
    S = sp.csr_matrix((np.ones(len(adjncy)), adjncy, xadj), shape=(3, 3)).toarray()
    np.testing.assert_array_equal(S, [[0, 1, 0], [1, 0, 1], [0, 1, 0]])


def test_metis_bad_input():
    A = _two_cliques(3)
    with pytest.raises(ValueError, match="n_clusters must be an integer in 1..6"):
        metis_clusters(A, 7)
    with pytest.raises(ValueError):
        metis_clusters(A, 0)
    with pytest.raises(TypeError):
        metis_clusters(A, 2.5)


@pytest.mark.parametrize("seed", [1.5, -1, True, "0", None])
def test_metis_refuses_a_seed_that_is_not_an_integer_ge_0(seed):
    # int(seed) truncated 1.5 to 1 and took -1 modulo 2**31: other seeds than the one asked
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        metis_clusters(_two_cliques(3), 2, seed=seed)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        metis_clusters(_two_cliques(3), 1, seed=seed)


@pytest.mark.parametrize("A", [sp.csr_matrix(np.ones((3, 4))), np.ones((4, 3)),
                               np.ones(4), np.ones((2, 2, 2)), None])
def test_metis_refuses_an_adjacency_that_is_not_square(A):
    # a clear ValueError before scipy's "inconsistent shapes" (or an n of 3 on a 3 x 4)
    with pytest.raises(ValueError, match=r"A must be an adjacency matrix of shape "
                                         r"\(n_nodes, n_nodes\)"):
        metis_clusters(A, 2)


def test_cluster_proportions_unbiased():
    # R draws of the noisy labels of the same users: the mean and spread of each
    # cluster's proportions against the formula (each label randomized once)
    rng = np.random.default_rng(0)
    n, c, eps, R = 2000, 3, 1.0, 500
    T = grr_transition_matrix(eps, c)
    clusters = np.repeat([0, 1], n // 2)
    pis = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    y = np.concatenate([rng.choice(c, n // 2, p=pis[0]), rng.choice(c, n // 2, p=pis[1])])
    # noisy label of each user in each draw: inverse CDF of its row of T
    noisy = (rng.random((R, n, 1)) > np.cumsum(T, axis=1)[y]).sum(axis=2)
    est = []
    for r in range(R):
        props, counts = cluster_label_proportions(clusters, noisy[r], T, n_clusters=3)
        est.append(props[:2])
    assert np.array_equal(counts, [n // 2, n // 2, 0])
    assert np.all(np.isnan(props[2]))
    np.testing.assert_allclose(props[:2].sum(axis=1), 1)
    est = np.array(est)                                     # (R, 2, c)
    truth = np.array([np.bincount(y[clusters == k], minlength=c) / (n // 2) for k in (0, 1)])
    Tinv = np.linalg.inv(T.T)
    var = np.array([np.diag(Tinv @ sum(f[k] * (np.diag(T[k]) - np.outer(T[k], T[k]))
                                       for k in range(c)) @ Tinv.T) / (n // 2)
                    for f in truth])
    m, v = est.mean(axis=0), est.var(axis=0, ddof=1)
    assert np.all(np.abs(m - truth) < 4 * np.sqrt(var / R)), (m, truth)
    se_v = np.sqrt((np.mean((est - m) ** 4, axis=0) - v ** 2) / R)
    assert np.all(np.abs(v - var) < 4 * se_v), (v, var)


def test_cluster_proportions_name_bad_clusters_and_codes():
    # a negative cluster id or a code >= c gave numpy's errors
    T = grr_transition_matrix(1.0, 3)
    with pytest.raises(ValueError, match="clusters must hold integers >= 0; position 1"):
        cluster_label_proportions([0, -1, 1], [0, 1, 2], T)
    with pytest.raises(ValueError, match=r"clusters must hold integers in 0\.\.1"):
        cluster_label_proportions([0, 1, 2], [0, 1, 2], T, n_clusters=2)
    for bad in (3, -1):
        with pytest.raises(ValueError, match=r"noisy_labels must hold integers in 0\.\.2"):
            cluster_label_proportions([0, 1, 1], [0, 1, bad], T)
    with pytest.raises(ValueError, match="one entry per entry of clusters"):
        cluster_label_proportions([0, 1, 1], [0, 1], T)
    props, counts = cluster_label_proportions([0, 1, 1], [0, 1, 2], T, n_clusters=3)
    assert counts.tolist() == [1, 2, 0] and np.isnan(props[2]).all()


def test_llp_kl_loss():
    target = torch.tensor([[0.5, 0.5], [0.9, 0.1], [float("nan")] * 2])
    proba = torch.tensor([[0.4, 0.6], [0.6, 0.4], [0.9, 0.1], [0.2, 0.8]], requires_grad=True)
    clusters = torch.tensor([0, 0, 1, 2])
    loss = llp_kl_loss(proba, clusters, target)
    # cluster 0: mean (0.5, 0.5) = target -> 0; cluster 1 matches too; cluster 2 has no target
    assert float(loss.detach()) == pytest.approx(0.0, abs=1e-7)
    proba2 = torch.tensor([[0.9, 0.1], [0.9, 0.1], [0.9, 0.1], [0.5, 0.5]], requires_grad=True)
    loss2 = llp_kl_loss(proba2, clusters, target)
    expected = 0.5 * (0.5 * np.log(0.5 / 0.9) + 0.5 * np.log(0.5 / 0.1))
    assert float(loss2.detach()) == pytest.approx(expected, rel=1e-5)
    loss2.backward()
    assert proba2.grad is not None and torch.any(proba2.grad != 0)


def _llp_kl_dropping(proba, clusters, target, eps=1e-8):
    """The term with the skipped clusters dropped (boolean indexing): the reference."""
    K, c = target.shape
    sums = torch.zeros((K, c), dtype=proba.dtype).index_add(0, clusters, proba)
    cnt = torch.bincount(clusters, minlength=K).to(proba.dtype)
    valid = (cnt > 0) & torch.isfinite(target).all(dim=1)
    if not bool(valid.any()):
        return proba.sum() * 0.0
    pred, t = sums[valid] / cnt[valid, None], target[valid]
    return (t * (torch.log(t.clamp_min(eps)) - torch.log(pred.clamp_min(eps)))).sum(1).mean()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_llp_kl_loss_masks_skipped_clusters_with_the_same_gradient(dtype):
    g = torch.Generator().manual_seed(0)
    for K, c in [(1, 2), (3, 7), (16, 2), (64, 7), (200, 40)]:
        for missing in (0.0, 0.3, 1.0):
            b = int(torch.randint(1, 3 * K + 5, (1,), generator=g))
            proba = torch.softmax(torch.randn(b, c, generator=g, dtype=dtype), 1)
            proba.requires_grad_()
            clusters = torch.randint(0, K, (b,), generator=g)
            target = torch.softmax(torch.randn(K, c, generator=g), 1)
            target[torch.rand(K, generator=g) < missing] = float("nan")
            want = _llp_kl_dropping(proba, clusters, target)
            got = llp_kl_loss(proba, clusters, target)
            # the same gradient to the last bit (so the same training); the mean's sum
            # runs over all K rows, so its value may differ in the last place
            assert torch.equal(torch.autograd.grad(got, proba)[0],
                               torch.autograd.grad(want, proba)[0])
            assert float(got) == pytest.approx(float(want), rel=1e-6, abs=0)


def test_llp_kl_loss_reads_nothing_from_the_device(monkeypatch):
    # on an accelerator a branch on (or a boolean index by) a device value waits for it
    reads = []
    for name in ("__bool__", "item", "__float__", "__int__", "tolist", "cpu", "numpy"):
        orig = getattr(torch.Tensor, name)
        monkeypatch.setattr(torch.Tensor, name, lambda self, *a, _o=orig, _n=name, **k:
                            (reads.append(_n), _o(self, *a, **k))[1])
    target = torch.tensor([[0.5, 0.5], [0.9, 0.1], [float("nan")] * 2])
    proba = torch.tensor([[0.9, 0.1], [0.9, 0.1], [0.9, 0.1], [0.5, 0.5]], requires_grad=True)
    grads = [torch.autograd.grad(llp_kl_loss(proba, clusters, target), proba)[0]
             for clusters in (torch.tensor([0, 0, 1, 2]), torch.tensor([2, 2, 2, 2]))]
    assert reads == []
    assert torch.equal(grads[0][3], torch.zeros(2))   # none through cluster 2 (no target)
    assert torch.equal(grads[1], torch.zeros(4, 2))   # no cluster with a target: no term
