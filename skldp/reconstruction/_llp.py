"""Label proportions of graph clusters [Bhaila et al., SDM 2024, §IV-C, Algorithm 3, Eq. 15]."""

import numpy as np
import scipy.sparse as sp

from ..utils._arrays import check_sparse_structure
from ..utils.validation import check_int, refuse_graph_data
from ._labels import check_codes, check_transition_matrix, unbiased_label_distribution

__all__ = ["metis_clusters", "cluster_label_proportions", "llp_kl_loss"]


def metis_clusters(A, n_clusters, seed=0):
    """Partition a graph into ``n_clusters`` parts with METIS (``pymetis``).

    METIS (Karypis & Kumar 1998) is a multilevel k-way partitioner: parts of
    about ``n / n_clusters`` nodes with few edges between them, as [Bhaila et al., SDM 2024]
    uses for its label-proportion bags.

    Parameters
    ----------
    A : sparse matrix of shape (n, n)
        Adjacency (symmetrised here; self loops and weights are ignored: every
        stored nonzero entry, of either sign, is an edge).
    n_clusters : int
        Number of parts, ``1 <= n_clusters <= n``.
    seed : int, default=0
        METIS random seed, an integer >= 0 (taken modulo ``2**31``).

    Returns
    -------
    labels : ndarray of int of shape (n,)
        Part of each node, ``0..n_clusters-1``.

    Raises
    ------
    TypeError
        If ``A`` is a :class:`~skldp.GraphData` (pass its ``adjacency``).
    ValueError
        If ``A`` is not a square 2-D matrix, or ``n_clusters`` is outside ``1..n``.
    InvalidParameterError
        If ``seed`` is not an integer >= 0.
    """
    refuse_graph_data(A, "metis_clusters", "A")
    shape = getattr(A, "shape", None)
    if shape is None or len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError("A must be an adjacency matrix of shape (n_nodes, n_nodes), got "
                         + (f"shape {tuple(shape)}." if shape is not None else f"{A!r:.80}."))
    if sp.issparse(A):
        check_sparse_structure(A, "A")   # before scipy reads its arrays
    n = shape[0]
    n_clusters = check_int(n_clusters, "n_clusters", 1, n,
                           maximum_is="the number of nodes")
    seed = check_int(seed, "seed")   # (1.5 was truncated, -1 taken modulo 2**31)
    if n_clusters == 1:
        return np.zeros(n, dtype=np.int64)
    try:
        import pymetis
    except ImportError as exc:  # pragma: no cover - pymetis is in the test and metis extras
        raise ImportError("metis_clusters needs pymetis: pip install 'skldp[metis]'.") from exc
    # the pattern: every stored nonzero entry is an edge, whatever its sign (a sum of
    # weights, A + A.T or duplicates summed, would cancel an edge given as +w and -w)
    C = sp.coo_matrix(A)
    keep = C.data != 0
    S = sp.csr_matrix((np.ones(int(keep.sum())), (C.row[keep], C.col[keep])), shape=(n, n))
    S = (S + S.T).tocsr()
    S.setdiag(0)
    S.eliminate_zeros()
    S.sort_indices()
    opts = pymetis.Options(seed=seed % (2**31))
    graph = pymetis.CSRAdjacency(S.indptr.astype(np.int64), S.indices.astype(np.int64))
    _, parts = pymetis.part_graph(int(n_clusters), graph, options=opts)
    return np.asarray(parts, dtype=np.int64)


def cluster_label_proportions(clusters, noisy_labels, T, n_clusters=None):
    """Unbiased label proportions of each cluster from noisy labels (eq. (14)).

    Parameters
    ----------
    clusters : array of int of shape (n_labelled,)
        Cluster of each labelled node.
    noisy_labels : array of int of shape (n_labelled,)
        Their randomized-response class positions.
    T : ndarray of shape (c, c)
        Transition matrix of the label mechanism.
    n_clusters : int or None
        Number of clusters (default ``max(clusters) + 1``).

    Returns
    -------
    props : ndarray of shape (n_clusters, c)
        Estimated true proportions, projected onto the simplex; rows of
        clusters without labelled nodes are NaN.
    counts : ndarray of int of shape (n_clusters,)
        Labelled nodes per cluster.

    Raises
    ------
    ValueError
        If a cluster is negative (or ``>= n_clusters``), a noisy label is
        outside ``0..c-1``, the two arrays differ in length or ``T`` is not a
        ``(c, c)`` matrix of finite numbers.
    """
    T = check_transition_matrix(T)
    c = T.shape[0]
    if n_clusters is None:
        raw = np.asarray(clusters)
        if raw.size == 0:
            raise ValueError("cluster_label_proportions needs n_clusters when no node "
                             "is given.")
        k = check_codes(raw, "clusters").max() + 1
    else:
        k = check_int(n_clusters, "n_clusters", 1)
    clusters = check_codes(clusters, "clusters", k, "n_clusters")
    noisy = check_codes(noisy_labels, "noisy_labels", c, "T's number of classes")
    if len(noisy) != len(clusters):
        raise ValueError(f"noisy_labels must have one entry per entry of clusters "
                         f"({len(clusters)}), got {len(noisy)}.")
    k = int(k)
    counts = np.bincount(clusters, minlength=k)
    obs = np.zeros((k, c))
    np.add.at(obs, (clusters, noisy), 1.0)
    has = counts > 0
    props = np.full((k, c), np.nan)
    props[has] = unbiased_label_distribution(obs[has] / counts[has, None], T)
    return props, counts


def llp_kl_loss(proba, clusters, target, eps=1e-8):
    """Mean over clusters of ``KL(target_k || mean predicted proba in cluster k)``.

    The LLP term of eq. (15) of Bhaila et al. (SDM 2024). Clusters with no
    node in the batch, or no valid target, are skipped.

    Parameters
    ----------
    proba : torch.Tensor of shape (b, c)
        Predicted class probabilities of a batch of labelled nodes.
    clusters : torch.LongTensor of shape (b,)
        Their clusters.
    target : torch.Tensor of shape (K, c)
        Reconstructed label proportions of the clusters (NaN rows: unknown).
    eps : float, default=1e-8
        Floor of the probabilities inside the logarithms.

    Returns
    -------
    loss : torch.Tensor
        Scalar, differentiable in ``proba``.
    """
    import torch
    K, c = target.shape
    sums = torch.zeros((K, c), dtype=proba.dtype, device=proba.device)
    sums = sums.index_add(0, clusters, proba)
    cnt = torch.bincount(clusters, minlength=K).to(proba.dtype)
    valid = (cnt > 0) & torch.isfinite(target).all(dim=1)
    # the skipped clusters masked (target 0, prediction 1: a term of 0 and no gradient),
    # not dropped: no branch on, nor boolean index by, a device value (each waits for it)
    v = valid[:, None]
    pred = torch.where(v, sums / cnt.clamp_min(1)[:, None], 1.0)
    t = torch.where(v, target, 0.0)
    kl = (t * (torch.log(t.clamp_min(eps)) - torch.log(pred.clamp_min(eps)))).sum(dim=1)
    return kl.sum() / valid.sum().clamp_min(1)
