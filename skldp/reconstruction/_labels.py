"""Label reconstruction from randomized-response labels [Bhaila et al., SDM 2024, Alg. 2]."""

import numpy as np
import scipy.sparse as sp

from ..mechanisms._grid import check_eps_per_coordinate
from ..utils.validation import (
    check_adjacency,
    check_bool,
    check_eps,
    check_int,
    refuse_graph_data,
)
from ._frequency import mean_propagation_matrix

__all__ = ["project_simplex", "grr_transition_matrix", "reconstruct_labels",
           "unbiased_label_distribution"]

_LARGE = 2.0 ** 20   # rows of project_simplex beyond this magnitude are shifted first


def project_simplex(V):
    """Euclidean projection of each row of ``V`` onto the probability simplex.

    Vectorised sort-based algorithm (Held, Wolfe & Crowder 1974; Duchi et al.,
    ICML 2008): for a row ``v`` sorted decreasingly as ``u``, with
    ``rho = max{j : u_j - (sum_{i<=j} u_i - 1) / j > 0}`` and
    ``theta = (sum_{i<=rho} u_i - 1) / rho``, the projection is
    ``max(v - theta, 0)``.

    Parameters
    ----------
    V : array-like of shape (n, c) or (c,)

    Returns
    -------
    W : ndarray of the same shape, rows non-negative and summing to 1.

    Raises
    ------
    ValueError
        If ``V`` is not 1-D or 2-D, has no column or holds NaN or infinite values.

    Examples
    --------
    >>> from skldp.reconstruction import project_simplex
    >>> project_simplex([0.8, 0.6, -0.4])
    array([0.6, 0.4, 0. ])
    """
    V = np.asarray(V, dtype=np.float64)
    if V.ndim not in (1, 2):
        got = "a scalar" if V.ndim == 0 else f"shape {V.shape}"
        raise ValueError(f"project_simplex projects a row (c,) or the rows of an array "
                         f"(n, c): V must be 1-D or 2-D, got {got}.")
    if V.shape[-1] == 0:
        raise ValueError(f"project_simplex needs at least one column (the simplex of no "
                         f"class is empty), got shape {V.shape}.")
    one_d = V.ndim == 1
    V2 = np.atleast_2d(V)
    if not np.all(np.isfinite(V2)):
        raise ValueError("project_simplex needs finite values.")
    c = V2.shape[1]
    # The projection is invariant to shifting a row; a row of large values is shifted
    # by its max first, else its cumulative sums round the -1 away (theta misses the
    # simplex). Other rows are left as they are, so their results stay bit for bit.
    # (Entries more than ~1.8e308 below their row's max become -inf: projected to 0.)
    big = np.abs(V2).max(axis=1, initial=0.0, keepdims=True) > _LARGE
    with np.errstate(over="ignore", invalid="ignore"):
        V2 = V2 - np.where(big, V2.max(axis=1, initial=-np.inf, keepdims=True), 0.0)
        U = -np.sort(-V2, axis=1)
        css = np.cumsum(U, axis=1) - 1.0
        j = np.arange(1, c + 1)
        cond = U - css / j > 0
        rho = c - np.argmax(cond[:, ::-1], axis=1)  # last index where cond holds (1-based)
        theta = css[np.arange(len(U)), rho - 1] / rho
        W = np.maximum(V2 - theta[:, None], 0.0)
    return W[0] if one_d else W


def grr_transition_matrix(eps, n_classes):
    """GRR transition matrix: ``p = e^eps / (e^eps + c - 1)`` on the diagonal, ``q`` elsewhere.

    Parameters
    ----------
    eps : float
        Budget of the randomized response (``inf``: identity).
    n_classes : int
        Domain size ``c``.

    Returns
    -------
    T : ndarray of shape (n_classes, n_classes)
        ``T[i, j] = P(report j | true i)``; ``q = 1 / (e^eps + c - 1)``.

    Raises
    ------
    InvalidParameterError
        If ``eps`` is not a number > 0 or ``n_classes`` not an integer >= 2.
    ValueError
        If ``eps`` is below ``2^-30``, as the label mechanisms refuse it (``e^eps``
        too close to 1 for an accurate ``p - q``).
    """
    # the floor only: no sampling here, and e^eps is capped at e^700 below
    eps = check_eps_per_coordinate(check_eps(eps, "eps"), "eps", "grr_transition_matrix",
                                   limit=np.inf)
    c = check_int(n_classes, "n_classes", 2)
    if np.isinf(eps):
        return np.eye(c)
    e = np.exp(min(float(eps), 700.0))
    T = np.full((c, c), 1.0 / (e + c - 1))
    np.fill_diagonal(T, e / (e + c - 1))
    return T


def check_transition_matrix(T, n_classes=None):
    """``T`` as a float64 (c, c) matrix of finite numbers, ``c >= 2`` (``n_classes``
    when given)."""
    T = np.asarray(T, dtype=np.float64)
    if T.ndim != 2 or T.shape[0] != T.shape[1] or T.shape[0] < 2 or (
            n_classes is not None and T.shape[0] != n_classes):
        want = "(c, c), c >= 2" if n_classes is None else \
            f"({n_classes}, {n_classes}), one row per column of observed"
        raise ValueError(f"the transition matrix T must have shape {want}, got {T.shape}.")
    if not np.all(np.isfinite(T)):
        raise ValueError("the transition matrix T holds NaN or infinite values.")
    return T


def check_codes(values, name, c=None, upper_is="the number of classes"):
    """``values`` as a 1-D int64 array of integers in ``0..c - 1`` (``>= 0`` when ``c``
    is None)."""
    arr = np.asarray(values)
    expected = "integers >= 0" if c is None else f"integers in 0..{c - 1} ({c}: {upper_is})"
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}.")
    if arr.size and not (arr.dtype.kind in "iu" or (
            arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and
            np.all(arr == np.round(arr)))):
        raise ValueError(f"{name} must hold {expected}, got dtype {arr.dtype}.")
    arr = arr.astype(np.int64)
    bad = np.flatnonzero((arr < 0) | (arr >= c if c is not None else False))
    if len(bad):
        raise ValueError(f"{name} must hold {expected}; position {bad[0]} holds "
                         f"{arr[bad[0]]}.")
    return arr


def unbiased_label_distribution(observed, T, project=True):
    """Eq. (14): ``pi_hat = (T^T)^-1 pi_obs`` per row, optionally projected on the simplex.

    Parameters
    ----------
    observed : array-like of shape (..., c)
        Rows of observed (noisy) label proportions.
    T : array-like of shape (c, c)
        Transition matrix, ``T[i, j] = P(report j | true i)``.
    project : bool, default=True
        Project each estimate onto the probability simplex.

    Returns
    -------
    pi_hat : ndarray of shape (..., c)
        The unbiased (or projected) estimates of the true proportions.

    Raises
    ------
    ValueError
        If ``T`` is not a square matrix of finite numbers with one row per
        column of ``observed``, or if ``T`` is singular.
    InvalidParameterError
        If ``project`` is not a bool.
    """
    project = check_bool(project, "project")
    observed = np.asarray(observed, dtype=np.float64)
    if observed.ndim == 0:
        raise ValueError("observed must have shape (..., c), got a scalar.")
    T = check_transition_matrix(T, observed.shape[-1])
    try:
        est = np.linalg.solve(T.T, observed.reshape(-1, observed.shape[-1]).T).T
    except np.linalg.LinAlgError as err:
        raise ValueError("the transition matrix T is singular, so the observed proportions "
                         "cannot be unbiased: its budget is too small to invert (use a "
                         "larger eps).") from err
    if project:
        est = project_simplex(est)
    return est.reshape(observed.shape)


def reconstruct_labels(A, labelled, noisy_labels, T, hops=2, self_loops=True, project=True):
    """Soft labels of the labelled nodes from their noisy labels [Bhaila et al. 2024, Alg. 2].

    The noisy labels of the labelled nodes are one-hot encoded, unlabelled
    nodes get an all-zero vector (masked propagation), and both the label
    matrix and the labelled-indicator are averaged ``hops`` times over
    ``D^-1 (A + I)``. Their ratio is the observed label distribution of each
    node's multi-hop labelled neighbourhood, which eq. (14) turns into an
    unbiased estimate of the true distribution with the inverse transition
    matrix; the estimate is projected onto the simplex (Euclidean). Nodes
    whose neighbourhood holds no labelled node keep their own estimate.

    Parameters
    ----------
    A : sparse matrix of shape (n, n)
    labelled : array of int
        Positions of the labelled nodes (the training rows). A node listed
        twice (a bootstrap view) weighs twice, in its neighbours' shares too;
        its entries must carry the same noisy label (one report per node).
    noisy_labels : array of int of shape (len(labelled),)
        Their reported class positions ``0..c-1``.
    T : ndarray of shape (c, c)
        GRR transition matrix of the label mechanism.
    hops : int, default=2
        Propagation steps ``K_y`` (0 = each node's own noisy label).
    self_loops : bool, default=True
    project : bool, default=True
        Project onto the simplex (else the raw unbiased estimate).

    Returns
    -------
    soft : ndarray of shape (len(labelled), c)

    Raises
    ------
    ValueError
        If ``A`` is not an adjacency GraphData accepts, ``labelled`` holds
        positions outside ``0..n-1``, ``noisy_labels`` codes outside
        ``0..c-1`` or another number of entries, a node listed twice has two
        different noisy labels, or ``T`` is not a
        ``(c, c)`` matrix of finite numbers.
    TypeError
        If ``A`` is a :class:`~skldp.GraphData` (pass its ``adjacency``).
    InvalidParameterError
        If ``hops`` is not an integer >= 0, or ``self_loops`` or ``project``
        not a bool.

    References
    ----------
    K. Bhaila, W. Huang, Y. Wu, X. Wu. Local Differential Privacy in Graph Neural
    Networks: a Reconstruction Approach. SIAM SDM 2024 (arXiv:2309.08569): §IV-B,
    eq. (14), Algorithm 2.
    """
    refuse_graph_data(A, "reconstruct_labels", "A")
    hops = check_int(hops, "hops")
    self_loops = check_bool(self_loops, "self_loops")
    project = check_bool(project, "project")
    n = check_adjacency(A)
    T = check_transition_matrix(T)
    c = T.shape[0]
    labelled = check_codes(labelled, "labelled", n, "the number of nodes")
    noisy = check_codes(noisy_labels, "noisy_labels", c, "T's number of classes")
    if len(noisy) != len(labelled):
        raise ValueError(f"noisy_labels must have one entry per labelled node "
                         f"({len(labelled)}), got {len(noisy)}.")
    _check_one_label_per_node(labelled, noisy)
    Y = sp.csr_matrix((np.ones(len(labelled)), (labelled, noisy)), shape=(n, c))
    # last column: the labelled indicator (the mask), counted per row as the one-hot
    # rows are summed: a node listed twice weighs twice in both (shares summing to 1)
    Y = np.hstack([Y.toarray(), np.bincount(labelled, minlength=n)[:, None]])
    if hops:
        P = mean_propagation_matrix(A, self_loops)
        for _ in range(hops):
            Y = P @ Y
    L = Y[labelled]
    mass = L[:, c]
    own = np.eye(c)[noisy]
    obs = np.where(mass[:, None] > 1e-12, L[:, :c] / np.maximum(mass, 1e-300)[:, None], own)
    return unbiased_label_distribution(obs, T, project=project)


def _check_one_label_per_node(labelled, noisy):
    """Refuse a node listed twice with two different noisy labels (its shares would mix
    them: a node reports one label)."""
    order = np.lexsort((noisy, labelled))
    nodes, codes = labelled[order], noisy[order]
    clash = np.flatnonzero((nodes[1:] == nodes[:-1]) & (codes[1:] != codes[:-1]))
    if len(clash):
        i = clash[0]
        raise ValueError(f"labelled lists node {nodes[i]} more than once with different "
                         f"noisy labels ({codes[i]} and {codes[i + 1]}); a node has one "
                         "report: list it once, or repeat it with the same label.")
