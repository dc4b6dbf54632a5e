"""Degree-bounded subgraph sampling [Daigavane et al., arXiv 2021, Algorithm 2], vectorised."""


import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ..accounting._rdp import check_max_degree
from ..base import GraphTransformerMixin
from ..utils._arrays import check_sparse_structure
from ..utils._random import draw_seed, training_seed
from ..utils.validation import (
    RANDOM_STATE_CONSTRAINT,
    Count,
    check_graph_data,
    refuse_graph_data,
)

__all__ = ["degree_bounded_sample", "DegreeBoundedSampler"]


def _rank_within(nodes, prio, edge):
    """Rank (0 = highest priority) of each entry among the entries with the same node.

    Equal priorities are ordered by ``edge``, the same way at both ends of an edge: the
    first edge in (priority, edge) order then ranks 0 at both its ends, so each round
    accepts it (ordered by position, a cycle of tied edges could each come second at
    one end, and no round would end the loop).
    """
    order = np.lexsort((edge, prio, nodes))
    sorted_nodes = nodes[order]
    start = np.r_[True, sorted_nodes[1:] != sorted_nodes[:-1]]
    group_start = np.maximum.accumulate(np.where(start, np.arange(len(order)), 0))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order)) - group_start
    return rank


def degree_bounded_sample(adjacency, max_degree, nodes=None, random_state=None):
    """Random subgraph in which every node has in- and out-degree at most ``K``.

    A vectorised version of [Daigavane et al., arXiv 2021, Algorithm 2]. Algorithm 2 visits the
    training nodes in random order and greedily adds each node's edges while
    both endpoints have fewer than ``K`` sampled edges. Here every undirected
    edge gets an independent uniform priority and edges are added greedily in
    priority order, i.e. the same greedy rule over a uniformly random order of
    the *edges*. The greedy pass is run in parallel rounds without a Python
    loop over nodes: in each round every remaining candidate edge is ranked
    (by priority) among the candidates at each endpoint, and it is accepted
    when its rank is below the remaining capacity of both endpoints. The
    highest-priority candidate is always accepted, so each round makes
    progress, and the result is maximal: every edge left out has an endpoint
    with ``K`` sampled edges.

    Because each sampled edge is kept in both directions, every node has at
    most ``K`` neighbours (out-degree: the nodes it aggregates from) and
    appears in at most ``K`` other nodes' neighbourhoods (in-degree), the
    condition of Lemma 1 and Theorem 1.

    Parameters
    ----------
    adjacency : sparse matrix of shape (n, n)
        Symmetric adjacency (weights are ignored; self loops are dropped, since
        the GNN adds its own).
    max_degree : int >= 0
        The degree bound ``K``.
    nodes : array-like of int or bool mask, default=None
        Training nodes ``V_tr``: positions in ``0..n-1``, or a mask of length
        ``n``. As in Algorithm 2, only edges with at least one endpoint in
        ``nodes`` are candidates (edges between two other nodes never enter a
        training neighbourhood). ``None``: all edges.
    random_state : int, RandomState, Generator or None
        Seeds the edge priorities. ``None`` draws them from the operating
        system's entropy (numpy's global generator is never used).

    Returns
    -------
    sampled : scipy.sparse.csr_matrix of shape (n, n)
        Symmetric 0/1 adjacency, a subset of the input's edges, with every row
        and column sum at most ``K``.

    Raises
    ------
    TypeError
        If ``adjacency`` is a :class:`~skldp.GraphData` (sample one with
        :class:`DegreeBoundedSampler`).

    References
    ----------
    .. [1] Daigavane, A. et al., "Node-level differentially private graph
       neural networks", arXiv:2111.15521, 2021:
       Appendix B, Algorithm 2.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skldp.central import degree_bounded_sample
    >>> A = sp.csr_matrix(np.ones((6, 6)) - np.eye(6))
    >>> S = degree_bounded_sample(A, 2, random_state=0)
    >>> int(S.sum(axis=1).max()) <= 2, (S != S.T).nnz
    (True, 0)
    """
    refuse_graph_data(adjacency, "degree_bounded_sample", "adjacency",
                      "Pass its adjacency: adjacency=G.adjacency, or sample a GraphData's graph "
                      "with skldp.central.DegreeBoundedSampler (GraphData in and out).")
    K = check_max_degree(max_degree)
    if sp.issparse(adjacency):
        check_sparse_structure(adjacency, "adjacency")   # before scipy reads its arrays
    else:
        adjacency = sp.csr_matrix(np.asarray(adjacency))
    A = sp.csr_matrix(adjacency)
    n = A.shape[0]
    if A.shape != (n, n):
        raise ValueError(f"adjacency must be square, got shape {A.shape}.")
    if (A != A.T).nnz:
        raise ValueError("degree_bounded_sample needs a symmetric adjacency; symmetrise it "
                         "first, e.g. A.maximum(A.T).")
    upper = sp.triu(A, k=1, format="csr")
    upper.eliminate_zeros()   # a stored zero is no edge
    coo = upper.tocoo()
    u, v = coo.row.astype(np.int64), coo.col.astype(np.int64)
    if nodes is not None:
        nodes = np.asarray(nodes)
        mask = np.zeros(n, dtype=bool)
        if nodes.dtype == bool:
            if nodes.shape != (n,):
                raise ValueError(f"boolean nodes mask must have length {n}.")
            mask = nodes
        else:
            if nodes.size == 0:
                nodes = nodes.astype(np.int64)
            if nodes.ndim != 1 or not np.issubdtype(nodes.dtype, np.integer):
                raise ValueError(f"nodes must be a 1-D array of node positions (integers) or "
                                 f"a boolean mask of length {n}, got dtype {nodes.dtype} "
                                 f"and shape {nodes.shape}.")
            if nodes.size and (nodes.min() < 0 or nodes.max() >= n):
                raise ValueError(f"nodes names positions outside 0..{n - 1} (the adjacency "
                                 f"has {n} nodes): {nodes.min()}..{nodes.max()}.")
            mask[nodes.astype(np.int64)] = True
        keep = mask[u] | mask[v]
        u, v = u[keep], v[keep]
    if random_state is None:  # OS entropy, never numpy's global state
        rng = np.random.default_rng(draw_seed(None))
    elif isinstance(random_state, np.random.Generator):
        rng = random_state
    else:
        rng = check_random_state(random_state)
    prio = rng.random(len(u)) if isinstance(rng, np.random.Generator) else rng.random_sample(len(u))
    cap = np.full(n, min(K, n), dtype=np.int64)   # (n - 1 neighbours at most: K may pass int64)
    kept = np.zeros(len(u), dtype=bool)
    cand = np.flatnonzero(cap[u] > 0) if K > 0 else np.empty(0, dtype=np.int64)
    while len(cand):
        cu, cv, cp = u[cand], v[cand], prio[cand]
        r = _rank_within(np.concatenate([cu, cv]), np.concatenate([cp, cp]),
                         np.concatenate([cand, cand]))
        ru, rv = r[:len(cand)], r[len(cand):]
        acc = (ru < cap[cu]) & (rv < cap[cv])
        kept[cand[acc]] = True
        cap -= np.bincount(cu[acc], minlength=n) + np.bincount(cv[acc], minlength=n)
        rest = cand[~acc]
        cand = rest[(cap[u[rest]] > 0) & (cap[v[rest]] > 0)]
    ku, kv = u[kept], v[kept]
    data = np.ones(2 * len(ku), dtype=np.float32)
    S = sp.csr_matrix((data, (np.concatenate([ku, kv]), np.concatenate([kv, ku]))),
                      shape=(n, n))
    S.sort_indices()
    return S


class DegreeBoundedSampler(GraphTransformerMixin, BaseEstimator):
    """Graph transformer that replaces the adjacency by a degree-bounded sample.

    Wraps :func:`degree_bounded_sample` (Daigavane et al., Algorithm 2) for use in a
    pipeline: the returned view has the same rows and features, and an
    adjacency in which every node has at most ``max_degree`` neighbours. The
    sample is drawn once per fit (``seed_``) over the whole graph.

    Parameters
    ----------
    max_degree : int, default=10
        The degree bound ``K``.
    random_state : int, RandomState, Generator or None, default=None
        Seeds the sample; ``None`` draws a new sample per fit (from the operating
        system's entropy). A ``RandomState`` or ``Generator`` gives the seed of
        one draw from it (hashed), so it advances: the same object gives a new
        sample at each fit, a fresh one of the same seed the same sample.

    Attributes
    ----------
    seed_ : int
        Seed of the sample.
    n_features_in_ : int

    References
    ----------
    .. [1] Daigavane, A. et al., "Node-level differentially private graph
       neural networks", arXiv:2111.15521, 2021:
       Appendix B, Algorithm 2.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skldp import GraphData
    >>> from skldp.central import DegreeBoundedSampler
    >>> A = sp.csr_matrix(np.ones((5, 5)) - np.eye(5))
    >>> G = DegreeBoundedSampler(2, random_state=0).fit_transform(GraphData(np.eye(5), A))
    >>> int(G.adjacency.sum(axis=1).max()) <= 2
    True
    """

    _graph_requirements = {"require_symmetric": True}

    _parameter_constraints = {"max_degree": [Count(0)], "random_state": RANDOM_STATE_CONSTRAINT}

    def __init__(self, max_degree=10, *, random_state=None):
        self.max_degree = max_degree
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check the graph and draw the sample's seed.

        Parameters
        ----------
        X : GraphData
            A view of a graph with a known, symmetric adjacency.
        y : None
            Ignored.

        Returns
        -------
        self : DegreeBoundedSampler
            The fitted transformer.
        """
        G = check_graph_data(X, self, **self._graph_requirements)
        self.n_features_in_ = G.shape[1]
        self.seed_ = training_seed(self.random_state)   # never a collection's key
        return self

    def transform(self, X):
        """The view ``X`` over the degree-bounded sample of its whole graph.

        Parameters
        ----------
        X : GraphData
            A view of the graph.

        Returns
        -------
        G : GraphData
            Same rows and features; the adjacency has at most ``max_degree``
            neighbours per node.
        """
        check_is_fitted(self, "seed_")
        return super().transform(X)

    def _transform_graph(self, G):
        S = degree_bounded_sample(G.adjacency, self.max_degree,
                                  random_state=np.random.default_rng(self.seed_))
        return G._with_new_adjacency(S)
