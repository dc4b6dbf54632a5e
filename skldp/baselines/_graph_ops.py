"""Sparse operators and solvers shared by the feature-free baselines."""


import numpy as np

from ..base import clone_private_step
from ..mechanisms._label_rr import randomize_after
from ..utils._adjacency import row_sums, scale_csr
from ..utils._arrays import sorted_lookup

__all__ = ["sym_normalized_adjacency", "solve_shifted", "node_positions",
           "check_training_population", "fit_label_mechanism"]


def sym_normalized_adjacency(G, dtype=np.float64, owner="This step"):
    """``S = D^-1/2 A D^-1/2`` of the whole graph of ``G`` as CSR, built once per adjacency.

    ``D`` holds the weighted degrees. A node without edges has a zero row and
    column (it neither sends nor receives mass). The adjacency must be
    symmetric (Zhou et al. 2004 define ``S`` for undirected graphs). Kept with the
    adjacency (:meth:`skldp.GraphData.operator`): every GraphData holding it (new
    features, a mechanism's reports) shares it; read-only.
    """
    G.require_symmetric(owner)
    return G.operator(("skldp.baselines.sym_adjacency", np.dtype(dtype).str),
                      lambda A: _sym_normalized(A, dtype))


def _sym_normalized(A, dtype):
    """``D^-1/2 A D^-1/2``: the stored values scaled in float64, rounded once to ``dtype``."""
    deg = row_sums(A, np.float64)
    d = np.zeros_like(deg)
    np.power(deg, -0.5, out=d, where=deg > 0)
    S = scale_csr(A, d, d, dtype)
    S.data.flags.writeable = False   # shared by every step on the graph
    return S


def solve_shifted(S, B, alpha, *, tol=1e-6, max_iter=1000):
    """Solve ``(I - alpha S) F = B`` column by column with conjugate gradients.

    ``S`` is symmetric with spectrum in ``[-1, 1]`` and ``0 <= alpha < 1``, so
    the system is symmetric positive definite with eigenvalues in
    ``[1 - alpha, 1 + alpha]``: CG converges in about
    ``sqrt((1 + alpha) / (1 - alpha)) log(2 / tol) / 2`` sparse products.
    Every column stops when its residual is below ``tol`` times its
    right-hand side (a zero column gives a zero solution).

    Returns
    -------
    F : ndarray, same shape as ``B``
    converged : bool
    """
    B = np.asarray(B, dtype=np.float64)
    F = np.zeros_like(B)
    R = B.copy()
    P = R.copy()
    rs = np.einsum("ij,ij->j", R, R)
    target = tol ** 2 * rs
    for _ in range(max_iter + 1):
        if np.all(rs <= target):
            return F, True
        MP = P - alpha * (S @ P)
        den = np.einsum("ij,ij->j", P, MP)
        step = rs / np.where(den > 0, den, 1.0)
        F += P * step
        R -= MP * step
        rs_new = np.einsum("ij,ij->j", R, R)
        P = R + P * (rs_new / np.where(rs > 0, rs, 1.0))
        rs = rs_new
    return F, False


def check_training_population(G, model):
    """Refuse a graph of another population than ``model``'s training users, before any
    read of it: another population's graph can hold the same keys (ids 0..n-1) for other
    people, at whose nodes the training labels would be placed."""
    fitted = getattr(model, "train_population_", None)   # (None: pickled before it was kept)
    if fitted is not None and G.population.id != fitted:
        raise ValueError(f"{type(model).__name__} was fitted on another graph's users (another "
                         "population); their labels would be placed at whichever nodes carry "
                         "the same ids. Predict on a view of the graph it was fitted on "
                         "(transductive protocol), or build this graph with "
                         "population=<that graph>.")


def node_positions(G, keys, owner):
    """Positions in the whole graph of ``G`` of the nodes with uint64 ``keys``.

    The baselines store the keys of their training nodes (not positions), so
    that ``predict`` on any graph of the same users (a view, or a graph
    derived by a pipeline step) seeds the propagation at the right nodes.
    """
    all_keys = G.node_keys
    order = G.memo_get(("skldp.baselines.key_order",))
    if order is None:
        order = G.memo_set(("skldp.baselines.key_order",), np.argsort(all_keys, kind="stable"))
    rows, found = sorted_lookup(all_keys, keys, sorter=order)
    missing = ~found
    if np.any(missing):
        raise ValueError(f"{owner} was fitted on nodes that this graph does not hold "
                         f"({int(missing.sum())} training node(s) missing). Predict on a view "
                         "of the graph it was fitted on (transductive protocol).")
    return rows


def fit_label_mechanism(owner, G, y, before=lambda: None):
    """Randomize the training labels with ``owner.label_mechanism`` (if set).

    As the GNN classifiers do: a clone of the mechanism is fitted on the public
    label domain, each training node's label is randomized once, keyed by its
    node id, and the fitted clone is stored as ``owner.label_mechanism_`` so
    that :func:`skldp.accounting.privacy_report` counts its budget. ``before()``
    (the owner's reads of the graph) runs once the collection's checks have
    passed, before any label is sent (:func:`~skldp.mechanisms._label_rr.randomize_after`).

    Returns
    -------
    y : ndarray
        The labels the estimator may use (noisy when a mechanism is set).
    mech : fitted label mechanism or None
    """
    if hasattr(owner, "label_mechanism_"):
        del owner.label_mechanism_
    # the users' ledger: the estimator's privacy report lists what they sent (features,
    # labels or edges collected by other fits, or real devices)
    owner.ledger_ = G.population.ledger
    lm = owner.label_mechanism
    if lm is None:
        before()
        return y, None
    if not (hasattr(lm, "randomize") and hasattr(lm, "fit")):
        raise TypeError("label_mechanism must be a label mechanism with fit and randomize "
                        f"(e.g. LabelRandomizedResponse), got {type(lm).__name__}.")
    mech = clone_private_step(lm).fit(G, y)   # (its users: charged at fit for a read)
    y_noisy = randomize_after(mech, y, G, before)   # the users answer through their population
    owner.label_mechanism_ = mech
    return y_noisy, mech
