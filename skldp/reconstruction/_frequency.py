"""Feature reconstruction from GRR-FS reports by neighbourhood frequency estimation.

[Bhaila et al., SDM 2024, §IV-A, Algorithm 1].
"""


import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context

from .._graph_data import reads_users_data
from ..base import GraphTransformerMixin, charge_public_read, collected_spec
from ..mechanisms._grid import check_eps_per_coordinate
from ..mechanisms._grr import MAX_DOMAIN_SIZE, grr_probabilities, public_domain_sizes
from ..utils._adjacency import normalized_adjacency
from ..utils.validation import (
    EPS_CONSTRAINT,
    Count,
    check_adjacency,
    check_bool,
    check_graph_data,
    check_int,
    refuse_graph_data,
)

__all__ = ["FrequencyReconstructor", "mean_propagation_matrix"]

_BLOCK_ENTRIES = 1 << 22  # n x (one-hot columns) per block: bounds the dense temporaries
_TIE = 1e-9   # proportions closer than this are a tie (rounding, not data)
_GRRFS_KIND = "skldp.mechanisms.GRRFSMechanism"
_GRRFS_SIMULATED = ("derived", "are the reports of GRRFSMechanism", False)


def mean_propagation_matrix(A, self_loops=True):
    """Row-normalised ``D^-1 (A + I)`` (mean over each node's neighbours and itself), CSR.

    Parameters
    ----------
    A : sparse matrix of shape (n_nodes, n_nodes)
        Adjacency; row ``v`` lists the nodes ``v`` averages over.
    self_loops : bool, default=True
        Include each node itself (``A + I``); ``False`` gives ``D^-1 A``.

    Returns
    -------
    P : scipy.sparse.csr_matrix of shape (n_nodes, n_nodes)
        The row-stochastic propagation matrix.

    Raises
    ------
    ValueError
        If ``A`` is None, not square or holds NaN, infinite or negative
        weights (as :class:`~skldp.GraphData`).
    TypeError
        If ``A`` is a :class:`~skldp.GraphData` (pass its ``adjacency``).
    InvalidParameterError
        If ``self_loops`` is not a bool.
    """
    refuse_graph_data(A, "mean_propagation_matrix", "A")
    self_loops = check_bool(self_loops, "self_loops")
    check_adjacency(A)
    return normalized_adjacency(A, self_loops, "rw", dtype=np.float64)


def _as_codes(X):
    """Validate GRR-FS reports (integer codes ``0..2^24 - 1``, the codes of the largest
    domain a GRR-FS collection allows) in row blocks -> int32 array. (A larger code would
    wrap in int32 and index outside the one-hot matrix, or read as a domain too large to
    propagate.)"""
    n, d = X.shape
    out = np.empty((n, d), dtype=np.int32)
    step = max(1, _BLOCK_ENTRIES // max(d, 1))
    for s in range(0, n, step):
        B = X[s:s + step]
        B = B.toarray() if sp.issparse(B) else np.asarray(B)
        if np.any(B != np.round(B)) or np.any(B < 0):
            raise ValueError("FrequencyReconstructor expects GRR-FS reports (integer codes "
                             "0..c-1); place it after GRRFSMechanism.")
        if np.any(B >= MAX_DOMAIN_SIZE):
            r, c = np.argwhere(B >= MAX_DOMAIN_SIZE)[0]
            raise ValueError(f"FrequencyReconstructor expects GRR-FS reports, codes 0..c-1 of "
                             f"domains of at most 2^24 values (codes at most "
                             f"{MAX_DOMAIN_SIZE - 1:,}); row {s + r}, column {c} holds "
                             f"{B[r, c]:.17g}. Place it after GRRFSMechanism.")
        out[s:s + step] = B
    return out


def _own_where_lost(lam, own_codes, c):
    """Proportions of reports reached, renormalised; a node's own report where none is.

    Without self-loops, a node with no out-neighbours (or whose paths end at such
    nodes within ``hops`` steps) keeps a share of mass below 1, down to 0; as in
    :func:`~skldp.reconstruction.reconstruct_labels`, its proportions are those of the
    reports it reaches, and its own report when it reaches none.
    """
    mass = lam.sum(axis=1)
    lost = np.abs(mass - 1.0) > 1e-9   # rows of a row-stochastic product sum to 1
    if not lost.any():
        return lam
    lam = lam.copy()
    reached = lost & (mass > 1e-12)
    lam[reached] /= mass[reached, None]
    none = lost & ~reached
    lam[none] = np.eye(c)[own_codes[none]]
    return lam


class FrequencyReconstructor(GraphTransformerMixin, BaseEstimator):
    r"""Reconstruct categorical features from GRR-FS reports (Bhaila et al., Algorithm 1).

    The one-hot encoded reports of every feature are averaged ``hops`` times
    over each node's neighbourhood and the GRR-FS frequency estimate is
    inverted: the reconstructed feature is the most probable code, or the
    estimated probability of a binary feature. The protocol parameters are
    public (:meth:`from_mechanism` copies them from the mechanism).

    Read more in the :ref:`User Guide <frequency_reconstruction>`.

    Parameters
    ----------
    eps : float, default=1.0
        Per-feature GRR budget of the mechanism (> 0, ``inf`` allowed).
    m : int, default=1
        Number of features each user randomised.
    domain_sizes : int or array-like of int, default=None
        Domain size of each feature. ``None`` takes ``max report + 1`` (at
        least 2) from the reports of every node of the graph given to
        :meth:`fit` (from raw features: a read in the clear, charged).
    hops : int, default=2
        Propagation steps ``K_x`` (0 = each node's own report only).
    self_loops : bool, default=True
        Include the node's own report in its neighbourhood.
    clip : bool, default=True
        Clip binary probabilities to [0, 1].

    Attributes
    ----------
    n_features_in_ : int
        Number of reported features.
    domain_sizes_ : ndarray of int64 of shape (n_features,)
        Domain size of each feature, fixed at fit; :meth:`transform` refuses
        codes outside them.
    feature_names_in_ : ndarray of str objects
        Names of the reported features, when the GraphData has them; the
        output keeps them.

    See Also
    --------
    skldp.mechanisms.GRRFSMechanism : The mechanism whose reports this reconstructs.
    skldp.models.RGNNClassifier : The classifier of the same paper.

    Notes
    -----
    Directed graphs are supported, not symmetrised. With ``self_loops=False``
    a node that reaches no report within ``hops`` steps (no out-neighbours)
    is reconstructed from its own report, and one that loses part of its
    mass to such nodes from the reports it reaches. NaN or infinite reports
    raise a ``ValueError``.

    On a :class:`~skldp.GraphData` the origin of the features is checked:
    the reports of a collection real devices sent
    (:func:`~skldp.population.received_graph`) raise a ``ValueError`` when
    ``eps``, ``m`` or the domain sizes differ from the collection's, and
    features that are not GRR-FS reports (raw features, another mechanism's
    reports, features computed on the server) give a ``UserWarning``: the
    inversion assumes GRR-FS reports. Raw features with ``eps=inf`` and
    ``m = n_features`` are accepted silently (they equal those reports).

    References
    ----------
    .. [1] K. Bhaila, W. Huang, Y. Wu and X. Wu, "Local Differential Privacy in
       Graph Neural Networks: a Reconstruction Approach", SIAM SDM 2024,
       eqs. (5), (6), (8), Algorithm 1.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skldp import GraphData
    >>> from skldp.mechanisms import GRRFSMechanism
    >>> from skldp.reconstruction import FrequencyReconstructor
    >>> A = sp.csr_array(np.ones((4, 4)) - np.eye(4))
    >>> G = GraphData(np.array([[0, 1], [0, 1], [1, 1], [0, 0]]), A)
    >>> mech = GRRFSMechanism(2.0, m=1, domain_sizes=2, random_state=0).fit(G)
    >>> rec = FrequencyReconstructor.from_mechanism(mech, hops=1)
    >>> rec.fit_transform(mech.transform(G)).shape
    (4, 2)
    """

    _graph_requirements = {"require_adjacency": True, "require_finite": True}

    _parameter_constraints = {
        "eps": [EPS_CONSTRAINT],
        "m": [Count(1)],
        "domain_sizes": ["array-like", Real, None],
        "hops": [Count(0)],
        "self_loops": ["boolean"],
        "clip": ["boolean"],
    }

    def __init__(self, eps=1.0, m=1, *, domain_sizes=None, hops=2, self_loops=True, clip=True):
        self.eps = eps
        self.m = m
        self.domain_sizes = domain_sizes
        self.hops = hops
        self.self_loops = self_loops
        self.clip = clip

    @classmethod
    def from_mechanism(cls, mechanism, **params):
        """A reconstructor with the public protocol of a fitted GRRFSMechanism."""
        return cls(eps=mechanism.eps, m=mechanism.m,
                   domain_sizes=np.asarray(mechanism.domain_sizes_).tolist(), **params)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check the graph and the protocol parameters; fix the domain sizes."""
        G = check_graph_data(X, self, **self._graph_requirements)
        d = G.shape[1]
        check_eps_per_coordinate(self.eps, "eps", type(self).__name__)   # GRRFSMechanism's
        check_int(self.m, "m", 1, d, maximum_is=f"n_features={d}")
        if self.domain_sizes is not None:   # (refused before the origin's warning)
            public_domain_sizes(self.domain_sizes, d)
        sizes = self._check_reports(G)
        self.domain_sizes_ = self._read_sizes(G) if sizes is None else sizes
        self.n_features_in_ = d
        return self

    def _read_sizes(self, G):
        """The domain sizes: the public ones, or ``max code + 1`` (at least 2) over every
        node's reports (a read in the clear, charged, when they are the users' data)."""
        if self.domain_sizes is not None:
            return public_domain_sizes(self.domain_sizes, G.shape[1])
        st = G._store
        if reads_users_data(st.feature_origin):
            charge_public_read(self, st.population, G.node_keys, "features",
                               "domain_sizes=None",
                               "the domain sizes (each column's largest code)",
                               "the mechanism's domain_sizes=[...] "
                               "(FrequencyReconstructor.from_mechanism)")
        return np.maximum(_as_codes(G.features).max(axis=0).astype(np.int64) + 1, 2)

    def _check_reports(self, G, sizes=None):
        """Refuse another protocol than the collection's; warn on features that are
        not GRR-FS reports (the inversion would return meaningless values). Returns the
        domain sizes it compared (``sizes``, else read), or ``None``."""
        origin = G._store.feature_origin
        spec = collected_spec(G)
        d = G.shape[1]
        if spec is not None and spec.kind == _GRRFS_KIND:
            want = {"eps": float(spec.params["eps"]), "m": int(spec.params["m"]),
                    "domain_sizes": np.asarray(spec.public_state["domain_sizes"], np.int64)}
            sizes = self._read_sizes(G) if sizes is None else sizes
            have = {"eps": float(self.eps), "m": int(self.m), "domain_sizes": sizes}
            diff = [f"{k}={np.asarray(have[k]).tolist()} (collection: "
                    f"{np.asarray(want[k]).tolist()})"
                    for k in want if not np.array_equal(have[k], want[k])]
            if diff and self.domain_sizes is None and diff[-1].startswith("domain_sizes"):
                diff[-1] = (f"domain_sizes=None reads {diff[-1][len('domain_sizes='):]} from "
                            "the largest codes received (a code no user reported is missed); "
                            "pass the collection's domain_sizes")
            if diff:
                raise ValueError(
                    f"{type(self).__name__} reconstructs the reports of collection {spec.id} "
                    f"with other parameters: {', '.join(diff)}. Copy the collection's with "
                    "FrequencyReconstructor.from_mechanism(skldp.population."
                    "mechanism_from_spec(spec), hops=...), spec being the collection's.")
            return sizes
        if spec is None and origin == _GRRFS_SIMULATED:
            return
        if origin[0] == "raw":
            if np.isinf(float(self.eps)) and int(self.m) == d:
                return   # GRR-FS at eps=inf with every feature reports the raw codes
            what = "are the users' raw features"
        elif spec is not None:
            what = f"are the reports of collection {spec.id} ({spec.describe()})"
        else:
            what = origin[1]
        warnings.warn(
            f"{type(self).__name__} inverts GRR-FS reports, but its input features {what}: "
            "on other features its output is no frequency estimate. Put it right after "
            "GRRFSMechanism, or read real devices' reports with "
            "skldp.population.received_graph (reports saved from a simulation and loaded "
            "again lose their origin: then ignore this warning).", UserWarning, stacklevel=2)

    def _transform_graph(self, G):
        sizes = self.domain_sizes_   # (fit's: a column's domain must not change meaning)
        self._check_reports(G, sizes)
        codes = _as_codes(G.features)
        bad = np.flatnonzero(codes.max(axis=0) >= sizes)
        if len(bad):
            raise ValueError(f"column {bad[0]} holds codes outside 0..{sizes[bad[0]] - 1}, "
                             f"the domain fixed at fit (domain_sizes_).")
        P = None
        if check_int(self.hops, "hops"):   # normalised once per adjacency (every fit on it)
            loops = bool(self.self_loops)
            P = G.operator(("skldp.reconstruction.mean_propagation", loops),
                           lambda A: normalized_adjacency(A, loops, "rw", dtype=np.float64))
        Z = self.reconstruct(codes, G.adjacency, sizes, P)
        return G.with_features(Z, feature_names=G.feature_names)

    def propagated_proportions(self, codes, A, sizes, columns, P=None):
        """Observed proportions of each code of ``columns`` after ``hops`` mean steps.

        Returns a dense array of shape (n, sum(sizes[columns])), features in order.
        """
        n = codes.shape[0]
        c = sizes[columns]
        offsets = np.concatenate([[0], np.cumsum(c)])
        H = sp.csr_matrix((np.ones(n * len(columns)),
                           (codes[:, columns].astype(np.int64) + offsets[:-1]).ravel(),
                           np.arange(0, n * len(columns) + 1, len(columns))),
                          shape=(n, offsets[-1]))
        hops = check_int(self.hops, "hops")
        if hops == 0:
            return H.toarray()
        P = mean_propagation_matrix(A, self.self_loops) if P is None else P
        # One block of features at a time: the dense proportions of the block
        # are bounded (~32 MB); sparse x dense products are much faster than
        # sparse x sparse ones whose fill-in grows with every hop.
        L = H.toarray()
        for _ in range(hops):
            L = P @ L
        return L

    def reconstruct(self, codes, A, sizes, P=None):
        """Reconstructed features of all nodes (dense (n, d)); ``P``: the propagation
        matrix of ``A`` when known (:func:`mean_propagation_matrix`)."""
        n, d = codes.shape
        p, q = grr_probabilities(float(self.eps), sizes)
        if P is None and check_int(self.hops, "hops"):
            P = mean_propagation_matrix(A, self.self_loops)
        r = self.m / d
        out = np.empty((n, d), dtype=np.float64)
        # Features in blocks so that the dense proportions stay small.
        budget = max(1, _BLOCK_ENTRIES // max(n, 1))
        start = 0
        while start < d:
            stop, width = start, 0
            while stop < d and (width + sizes[stop] <= budget or stop == start):
                width += sizes[stop]
                stop += 1
            cols = np.arange(start, stop)
            L = self.propagated_proportions(codes, A, sizes, cols, P)
            pos = 0
            for j in cols:  # loop over features (d is small), never over nodes
                cj = sizes[j]
                lam = _own_where_lost(L[:, pos:pos + cj], codes[:, j], cj)
                f = (lam - r * q[j] - (1 - r) / cj) / (r * (p[j] - q[j]))
                if cj == 2:
                    out[:, j] = np.clip(f[:, 1], 0, 1) if self.clip else f[:, 1]
                else:
                    # the most frequent code: f rises with lam, and codes whose proportions
                    # tie but for rounding (sums of neighbour counts in another order)
                    # resolve to the first, whatever the node order
                    top = lam.max(axis=1, keepdims=True)
                    out[:, j] = np.argmax(lam >= top - _TIE, axis=1)
                pos += cj
            start = stop
        return out
