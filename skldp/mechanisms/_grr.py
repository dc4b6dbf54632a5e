"""Generalized randomized response with feature sampling (GRR-FS).

Bhaila et al., "Local Differential Privacy in Graph Neural Networks: a
Reconstruction Approach", SIAM SDM 2024, §IV-A. The per-user budget is
``m * eps`` (:func:`grrfs_epsilon`), not the paper's Theorem 1
(:func:`grrfs_paper_epsilon`).

Also holds the categorical preprocessing the mechanism needs: public-bin
discretisation of continuous columns (:func:`discretize`,
:func:`quantile_bin_edges`) and the paper's feature grouping that sums blocks
of binary columns and binarises them (:func:`group_features`,
:class:`FeatureGrouper`).
"""

import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils.validation import check_is_fitted

from .._graph_data import GraphData, refusal_is_read
from ..base import (
    OUTSIDE_DOMAIN,
    GraphTransformerMixin,
    LDPMechanism,
    NumberedColumnsMixin,
    boundary_input,
    boundary_users,
    collected_spec,
    population_of,
)
from ..device._kinds import MAX_DOMAIN_SIZE, grr_probabilities, grrfs_encode
from ..exceptions import PrivacyLeakWarning
from ..utils._arrays import canonical_csr, sorted_lookup
from ..utils._blocks import row_blocks
from ..utils.validation import (
    EPS_CONSTRAINT,
    RANDOM_STATE_CONSTRAINT,
    Count,
    check_eps,
    check_feature_array,
    check_finite_features,
    check_has_features,
    check_int,
    refuse_graph_data,
)
from ._grid import check_eps_per_coordinate

__all__ = ["GRRFSMechanism", "grrfs_epsilon", "grrfs_paper_epsilon", "grr_probabilities",
           "group_features", "FeatureGrouper", "discretize", "quantile_bin_edges"]

_BLOCK_ENTRIES = 1 << 22  # rows x columns per block: bounds temporaries to ~32 MB


def grrfs_epsilon(eps, m, d=None):
    r"""Per-user LDP budget of GRR-FS: exactly ``m * eps``.

    Each user samples ``m`` of its ``d`` features uniformly without
    replacement, applies GRR with budget ``eps`` to each sampled feature and
    reports a uniform code for the others (:class:`GRRFSMechanism`). The
    smallest ``epsilon`` such that the mechanism is ``epsilon``-LDP for every
    pair of inputs and every output is ``m * eps``, whatever ``d`` and the
    domain sizes ``c_j >= 2``.

    **Proof.** Write ``g_j(y | x) = c_j P_j(y | x)`` for the likelihood of GRR
    on feature ``j`` relative to the uniform distribution: ``c_j p_j`` when
    ``y = x``, ``c_j q_j`` otherwise, so ``g_j(y | x) / g_j(y | x') <= e^eps``
    with equality when ``y = x != x'``. The probability of an output is an
    average over the ``C(d, m)`` sampled subsets ``S`` of products
    (eq. (4) of Bhaila et al., SDM 2024),

    .. math:: P(y \mid x) = \prod_{j=1}^{d} \frac{1}{c_j}\;
              \binom{d}{m}^{-1} \sum_{|S| = m} \prod_{j \in S} g_j(y_j \mid x_j).

    *Upper bound.* A ratio of two sums of positive terms is at most the
    largest ratio of corresponding terms, and the term of ``S`` has ratio
    ``prod_{j in S} g_j(y_j|x_j) / g_j(y_j|x'_j) <= e^(m eps)``.
    *Attained.* Take ``x`` and ``x'`` that differ in every feature and the
    output ``y = x``: every term has ratio exactly ``e^(m eps)``, hence so has
    the sum. So the worst-case ratio is ``e^(m eps)``. (Pairs that differ in
    fewer features have smaller ratios, but LDP bounds every pair.) Sampling
    amplifies nothing here: it hides *which* features were randomised, not
    whether the user took part, and when ``x`` and ``x'`` differ everywhere
    every sampled subset consists of differing features.

    Parameters
    ----------
    eps : float
        GRR budget of each sampled feature (``inf`` allowed).
    m : int
        Number of sampled features.
    d : int or None, default=None
        Number of features; only checked (``1 <= m <= d``), the budget does
        not depend on it.

    Returns
    -------
    epsilon : float

    Raises
    ------
    InvalidParameterError
        If ``eps`` is not a number > 0 (NaN, a string) or ``m`` is not an
        integer in ``1..d`` (``m >= 1`` when ``d`` is None).

    See Also
    --------
    grrfs_paper_epsilon : the smaller value of Theorem 1 of Bhaila et al.
        (SDM 2024), which is not an LDP bound.

    References
    ----------
    K. Bhaila, W. Huang, Y. Wu, X. Wu, "Local Differential Privacy in Graph
    Neural Networks: a Reconstruction Approach", SIAM SDM 2024, §IV-A, eq. (4)
    and Theorem 1.

    Examples
    --------
    >>> from skldp.mechanisms import grrfs_epsilon
    >>> grrfs_epsilon(1.0, 10, 53)    # CiteSeer after grouping (paper: "8.3")
    10.0
    """
    eps = check_eps(eps, "eps")
    d = check_int(d, "d", 1, allow_none=True)
    m = check_int(m, "m", 1, d, maximum_is="d")
    return float(m * eps)


def grrfs_paper_epsilon(eps, m, d):
    """Theorem 1 of Bhaila et al. (SDM 2024), ``ln(1 + (m/d)(e^(m eps) - 1))``: NOT an LDP bound.

    The paper composes the ``m`` sampled GRRs to ``m eps`` and then applies
    the amplification of record sampling with rate ``m/d`` (its Lemma 1) to
    the attributes of one user's report. Amplification by sampling needs the
    sampled-out part to be *another individual*, whose presence or absence is
    hidden; here every feature belongs to the same user, and two inputs that
    differ in every feature differ in each sampled subset. For ``d = 2``,
    ``m = 1``, ``eps = 2``, inputs ``x = (0, 0)``, ``x' = (1, 1)`` on binary
    features and the output ``y = (0, 0)``:
    ``P(y | x) / P(y | x') = p / q = e^2``, while this function gives
    ``ln(1 + (e^2 - 1) / 2) = 1.43``. The sound budget is
    :func:`grrfs_epsilon` (``m eps``). This value is kept only to compare
    with the budgets the paper states (e.g. CiteSeer ``{8.3, 0.3, 0.02}`` for
    ``eps`` in ``{1, 0.1, 0.01}``, ``d = 53``, ``m = 10``; sound: ``{10, 1,
    0.1}``).

    Parameters
    ----------
    eps : float
        GRR budget of each sampled feature.
    m, d : int
        Sampled and total number of features.

    Returns
    -------
    epsilon : float
        The paper's number, for comparison only.

    Raises
    ------
    InvalidParameterError
        If ``eps`` is not a number > 0, ``d`` not an integer >= 1 or ``m``
        not an integer in ``1..d``.

    References
    ----------
    K. Bhaila, W. Huang, Y. Wu, X. Wu, "Local Differential Privacy in Graph
    Neural Networks: a Reconstruction Approach", SIAM SDM 2024, Theorem 1 and
    Lemma 1; §V-A3 for the CiteSeer budgets.

    Examples
    --------
    >>> from skldp.mechanisms import grrfs_paper_epsilon
    >>> round(grrfs_paper_epsilon(1.0, 10, 53), 2)   # CiteSeer after grouping (d = 53)
    8.33
    >>> round(grrfs_paper_epsilon(2.0, 1, 2), 2)     # the worst-case ratio is e^2 here
    1.43
    """
    eps = check_eps(eps, "eps")
    d = check_int(d, "d", 1)
    m = check_int(m, "m", 1, d, maximum_is="d")
    if np.isinf(eps):
        return np.inf
    x, r = m * eps, m / d
    if x <= 700.0:
        return float(np.log1p(r * np.expm1(x)))
    # e^x overflows past ~709.8: the same number in log space, x + ln(r + (1 - r) e^-x)
    return float(x + np.log(r + (1.0 - r) * np.exp(-x)))


def _column_name(names, j):
    return f"column {j}" if names is None else f"column {j} ({names[j]!r})"


def public_domain_sizes(domain_sizes, d, names=None):
    """``domain_sizes`` (one for all or one per feature) as ``d`` int64 sizes >= 2.

    Refuses, with a clear error, another length, a non-integer (2.5 is not read
    as 2) or a non-finite size.
    """
    sizes = np.asarray(domain_sizes)
    if sizes.ndim == 0:   # one size for every feature
        sizes = np.full(d, sizes)
    elif sizes.shape != (d,):
        raise ValueError(f"domain_sizes must have one entry per feature ({d}), got "
                         f"{sizes.size if sizes.ndim == 1 else sizes.shape}.")
    if (not np.issubdtype(sizes.dtype, np.number) or not np.all(np.isfinite(sizes))
            or np.any(sizes != np.round(sizes))):
        raise ValueError(f"domain_sizes must be integers, got {domain_sizes!r}.")
    sizes = sizes.astype(np.int64)
    _check_domain_sizes(sizes, names)
    return sizes


def _public_categories(categories, names=None):
    """Each feature's ``categories`` as sorted unique float64 values; refuses, with a clear
    error, a list that is not 1-D or holds text, ``None``, NaN or inf (the features are
    finite numbers: such a value would raise numpy's conversion error, be read as a
    number, or add a domain value no user can hold)."""
    out = []
    for j, c in enumerate(categories):
        try:
            if np.asarray(c).dtype.kind in "USO":
                raise TypeError
            v = np.asarray(c, dtype=np.float64)
        except (TypeError, ValueError):
            v = None
        if v is None or v.ndim != 1 or not np.all(np.isfinite(v)):
            raise ValueError(f"categories of {_column_name(names, j)} must be a 1-D list of "
                             f"finite numbers (the values that feature takes), got {c!r}.")
        out.append(np.unique(v))
    return out


def _check_domain_sizes(sizes, names):
    bad = np.flatnonzero(sizes < 2)
    if len(bad):
        raise ValueError(f"every domain size must be >= 2; {_column_name(names, bad[0])} "
                         f"has {sizes[bad[0]]}.")
    big = np.flatnonzero(sizes > MAX_DOMAIN_SIZE)
    if len(big):
        # beyond it the draw of "another value" is measurably non-uniform (more loss)
        raise ValueError(f"every domain size must be at most 2^24 = {MAX_DOMAIN_SIZE:,}; "
                         f"{_column_name(names, big[0])} has {sizes[big[0]]}. Group rare "
                         "values, or hash them into fewer buckets.")


def _any_per_column(X, test):
    """``test(block).any(axis=0)`` over row blocks (bounded temporaries)."""
    out = np.zeros(X.shape[1], dtype=bool)
    for rows in row_blocks(*X.shape, _BLOCK_ENTRIES):
        out |= test(X[rows]).any(axis=0)
    return out


# --------------------------------------------------------------------------- preprocessing
def _check_2d(X, func):
    """Refuse an ``X`` that is not a matrix of users by features (a 1-D array was numpy's
    IndexError, or read as one user)."""
    if X.ndim != 2:
        raise ValueError(f"{func} needs a 2-D X of shape (n_users, n_features), got shape "
                         f"{X.shape}: reshape one feature of several users with "
                         "X.reshape(-1, 1), one user's features with X.reshape(1, -1).")


def quantile_bin_edges(X, n_bins=4, columns=None):
    """Inner bin edges at the empirical quantiles of some columns.

    Bhaila et al. (SDM 2024, §V-A1) discretise the numerical attributes of
    German and Student "based on the quantile distribution of their values". Edges read
    from the private data leak information about it, so this function warns
    with :class:`~skldp.exceptions.PrivacyLeakWarning`; use public edges
    (census quantiles, round numbers) in deployment.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
    n_bins : int, default=4
    columns : array-like of int or None
        Columns to bin; ``None`` = all.

    Returns
    -------
    edges : dict {column: ndarray}
        Strictly increasing inner edges (at most ``n_bins - 1`` of them) per column.

    Raises
    ------
    InvalidParameterError
        If ``n_bins`` is not an integer >= 2 or a column is not one of ``X``'s.
    ValueError
        If a column to bin holds NaN (impute it first), or ``X`` is not 2-D.
    """
    warnings.warn("quantile_bin_edges reads bin edges from the private data, which leaks "
                  "information about it; pass public edges in deployment.",
                  PrivacyLeakWarning, stacklevel=2)
    check_int(n_bins, "n_bins", 2)
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    _check_2d(X, "quantile_bin_edges")
    d = X.shape[1]
    cols = range(d) if columns is None else [_bin_column(j, d, "each of columns")
                                             for j in columns]
    qs = np.linspace(0, 1, n_bins + 1)[1:-1]
    edges = {}
    for j in cols:
        _check_no_nan(X[:, j], j)
        edges[int(j)] = np.unique(np.quantile(X[:, j], qs))
    return edges


def _bin_column(j, d, name="bin_edges column"):
    """A column named by ``bin_edges`` (or ``columns``) as an int in ``0..d - 1``; a
    spec's JSON object has string keys."""
    if isinstance(j, str) and j.strip().isdigit():
        j = int(j)
    return check_int(j, name, 0, d - 1, maximum_is="the last column of X")


def _check_no_nan(x, j):
    if np.isnan(x).any():
        raise ValueError(f"column {j} holds NaN, which has no bin; impute it before "
                         "binning.")


def _edge_items(bin_edges, d):
    """(column, edges) pairs of a bin_edges spec: dict, list per column, or one 1-D array."""
    if isinstance(bin_edges, dict):
        items = [(_bin_column(j, d), e) for j, e in bin_edges.items()]
    else:
        seq = list(bin_edges)
        if seq and all(np.ndim(e) == 0 and e is not None for e in seq):
            items = [(j, seq) for j in range(d)]  # the same edges for every column
        elif len(seq) != d:
            raise ValueError(f"bin_edges must give edges (or None) for each of the {d} "
                             f"columns, got {len(seq)} entries.")
        else:
            items = list(enumerate(seq))
    return [(j, None if e is None else _checked_edges(e, j)) for j, e in items]


def _checked_edges(edges, j):
    edges = np.asarray(edges, dtype=np.float64)
    # NaN passes np.diff(edges) <= 0 (a comparison with NaN is False); an infinite
    # inner edge makes an empty bin, as a repeated one does
    if edges.ndim != 1 or not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
        raise ValueError(f"bin edges of column {j} must be a strictly increasing 1-D array "
                         f"of finite numbers, got {edges.tolist()!r}.")
    return edges


def discretize(X, bin_edges):
    """Map continuous columns to bin codes with public inner edges.

    Column ``j`` in ``bin_edges`` becomes ``np.digitize(x, edges_j)``, an
    integer code in ``0..len(edges_j)`` (``x < edges[0]`` is bin 0, ``x >=
    edges[-1]`` the last bin); other columns are returned unchanged.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
    bin_edges : dict {column: array-like}, list of (array-like or None), or 1-D array-like
        Public, increasing inner edges per column; a single 1-D array of
        numbers applies to every column.

    Returns
    -------
    codes : ndarray of shape (n, d), float64

    Raises
    ------
    InvalidParameterError
        If a column of ``bin_edges`` is not one of ``X``'s (``-1`` is not the
        last column).
    ValueError
        If edges are not strictly increasing finite numbers, a column to
        bin holds NaN (impute it first), or ``X`` is not 2-D.
    TypeError
        If ``X`` is a :class:`~skldp.GraphData` (give the edges to
        :class:`GRRFSMechanism`).
    """
    refuse_graph_data(X, "discretize", "X", "To discretise the users' features before GRR, "
                      "give the edges to the mechanism: GRRFSMechanism(bin_edges=...) "
                      "discretises on the devices; discretize(np.asarray(G), ...) would read "
                      "the raw features in the clear.")
    # (a sparse matrix's own dtype: an int8 one wrapped a code of 128 or more around)
    X = X.toarray().astype(np.float64) if sp.issparse(X) else np.array(X, dtype=np.float64)
    _check_2d(X, "discretize")
    items = _edge_items(bin_edges, X.shape[1])
    for j, edges in items:
        if edges is None:
            continue
        _check_no_nan(X[:, j], j)   # np.digitize puts NaN in the top bin
        X[:, j] = np.digitize(X[:, j], edges)
    return X


def group_features(X, group_size):
    """Sum consecutive blocks of ``group_size`` columns and binarise (Bhaila et al. 2024, §V-A1).

    Column ``g`` of the output is 1 when any of the input columns
    ``g*group_size .. (g+1)*group_size - 1`` is non-zero, else 0; the last
    group may be smaller. CiteSeer (3703 columns, groups of 70) gives 53
    columns, Cora (1433, 25) 58 and Facebook (4714, 100) 48, as in Table I.
    Only the public ``group_size`` is needed, so every user can do this
    locally before randomising: it spends no privacy.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
    group_size : int >= 1

    Returns
    -------
    grouped : ndarray of shape (n, ceil(d / group_size)), float64 in {0, 1}

    Raises
    ------
    ValueError
        If ``X`` holds NaN or inf (impute them first), as :class:`FeatureGrouper`,
        or is not 2-D.
    TypeError
        If ``X`` is a :class:`~skldp.GraphData` (group it with
        :class:`FeatureGrouper`).

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.mechanisms import group_features
    >>> group_features(np.array([[0, 1, 0, 0, 0], [0, 0, 0, 0, 1]]), 2)
    array([[1., 0., 0.],
           [0., 0., 1.]])
    """
    refuse_graph_data(X, "group_features", "X", "Group a GraphData's features with "
                      "skldp.mechanisms.FeatureGrouper, which the devices run before their "
                      "mechanism (no privacy spent); group_features(np.asarray(G), ...) would "
                      "read the raw features in the clear.")
    check_int(group_size, "group_size", 1)
    _check_2d(X if sp.issparse(X) else np.asarray(X), "group_features")
    # canonical: abs() of a cell stored as [1, -1] (a 0) would be 2
    # (in float64: an int8 -128, or a uint8 cell stored as [128, 128], would wrap to 0)
    X = canonical_csr(sp.csr_matrix(X, dtype=np.float64))
    check_finite_features(X)   # a NaN next to a 1 made its group 0 (NaN > 0 is False)
    d = X.shape[1]
    n_groups = -(-d // group_size)
    # d x n_groups 0/1 membership matrix: the grouping is one sparse product.
    M = sp.csr_matrix((np.ones(d), (np.arange(d), np.arange(d) // group_size)),
                      shape=(d, n_groups))
    S = abs(X) @ M
    return (S.toarray() > 0).astype(np.float64)


class FeatureGrouper(NumberedColumnsMixin, GraphTransformerMixin, BaseEstimator):
    """Transformer form of :func:`group_features` (works on GraphData and arrays).

    Parameters
    ----------
    group_size : int, default=70
        Columns summed into one binary feature (70 CiteSeer, 25 Cora, 100 Facebook).

    Attributes
    ----------
    n_features_in_ : int
    n_features_out_ : int

    References
    ----------
    Bhaila et al., "Local Differential Privacy in Graph Neural Networks: a
    Reconstruction Approach", SIAM SDM 2024, §V-A1 and Table I.

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.mechanisms import FeatureGrouper
    >>> FeatureGrouper(group_size=2).fit_transform(np.eye(4)).shape
    (4, 2)
    """

    _graph_requirements = {}
    _device_side = True   # a fixed map of each user's own row

    _parameter_constraints = {"group_size": [Count(1)]}

    def __init__(self, group_size=70):
        self.group_size = group_size

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check ``X`` and ``group_size`` (nothing is learned)."""
        if isinstance(X, GraphData):
            with refusal_is_read(self, "features", X, "non-finite features"):
                check_finite_features(X.features)
        else:
            X = check_feature_array(X)
        self.n_features_in_ = X.shape[1]
        self.n_features_out_ = group_features(np.zeros((1, X.shape[1])), self.group_size).shape[1]
        return self

    def transform(self, X):
        check_is_fitted(self, "n_features_out_")
        if isinstance(X, GraphData):
            return super().transform(X)
        X = check_feature_array(X)
        self._check_n_features(X)
        return group_features(X, self.group_size)

    _column_prefix = "group"

    def _n_columns_out(self):
        return self.n_features_out_

    def _transform_graph(self, G):
        with refusal_is_read(self, "features", G, "non-finite features"):
            Z = group_features(G.features, self.group_size)
        return G.with_features(Z)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        return tags


# ------------------------------------------------------------------------------ mechanism
class GRRFSMechanism(LDPMechanism):
    r"""Generalized randomized response with feature sampling (GRR-FS).

    Each user samples ``m`` of its ``d`` categorical features, reports each
    sampled one through generalized randomized response at budget ``eps`` and
    a uniformly drawn code for every other feature. One report is
    ``m * eps``-LDP (``epsilon_``); the output holds the reported integer
    codes, whose frequencies :meth:`estimate_frequencies` estimates without
    bias.

    Read more in the :ref:`User Guide <grrfs_mechanism>`.

    Parameters
    ----------
    eps : float, default=1.0
        Budget of GRR on each sampled feature (> 0; ``inf`` = no noise on the
        sampled features; the others are still uniform unless ``m = d``). The
        per-user total is ``m * eps``.
    m : int, default=1
        Number of features each user randomises, in ``1..d``.
    domain_sizes : int or array-like of int of shape (n_features,), default=None
        Public domain size ``2 <= c_j <= 2^24`` of each feature. ``None`` with
        ``categories=None`` (and a column without ``bin_edges``) reads
        ``max code + 1`` (at least 2) from the data, charged as a read in the
        clear (epsilon inf; refused under a budget), with a
        :class:`~skldp.exceptions.PrivacyLeakWarning`.
    categories : list of array-like, default=None
        Public list of the values of each feature; values are mapped to their
        position in the sorted list (like ``OrdinalEncoder``). Exclusive with
        ``domain_sizes``.
    bin_edges : dict {column: array-like}, list or 1-D array-like, default=None
        Public inner bin edges of continuous columns (see :func:`discretize`;
        one 1-D array applies to every column); such a column gets
        ``len(edges) + 1`` codes, its public domain size unless
        ``domain_sizes`` says otherwise.
    random_state : int, RandomState, Generator or None, default=None
        Seed of the collection; reports are a pure function of the seed and
        the node id. ``None`` draws a new collection per fit.

    Attributes
    ----------
    seed_ : int
        Seed of this collection.
    domain_sizes_ : ndarray of int of shape (n_features,)
        Public domain size of each feature.
    p_, q_ : ndarray of shape (n_features,)
        GRR keep / flip probabilities per feature.
    sampling_rate_ : float
        ``m / d``.
    epsilon_ : float
        Per-user LDP budget, ``m * eps`` (exact worst case, :func:`grrfs_epsilon`).
    paper_epsilon_ : float
        Theorem 1 of the paper, ``ln(1 + (m/d)(e^(m eps) - 1))``; NOT an LDP
        bound (:func:`grrfs_paper_epsilon`), for comparison with the paper only.
    protects_ : tuple of str
        ``("features",)``.
    n_features_in_ : int
        Number of features.

    See Also
    --------
    skldp.mechanisms.grrfs_epsilon : The exact budget of one report.
    skldp.mechanisms.group_features : Group binary columns into categorical features.
    skldp.reconstruction.FrequencyReconstructor : Propagated frequency estimates.

    References
    ----------
    .. [1] K. Bhaila, W. Huang, Y. Wu and X. Wu, "Local Differential Privacy in
       Graph Neural Networks: a Reconstruction Approach", SIAM SDM 2024,
       eqs. (4)-(8), Theorem 1.
    .. [2] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna and X. Xiao, "Random
       Sampling Plus Fake Data: Multidimensional Frequency Estimates With
       Local Differential Privacy", CIKM 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.mechanisms import GRRFSMechanism
    >>> X = np.array([[0, 1, 2], [1, 0, 0], [1, 1, 1]])
    >>> mech = GRRFSMechanism(eps=1.0, m=2, domain_sizes=[2, 2, 3], random_state=0).fit(X)
    >>> mech.epsilon_                # m * eps
    2.0
    >>> round(mech.paper_epsilon_, 3)  # ln(1 + (2/3)(e^2 - 1)), Theorem 1: not an LDP bound
    1.66
    >>> mech.transform(X).shape
    (3, 3)
    """

    _reports_in_feature_units = False   # the reports are codes (estimate_frequencies)
    _parameter_constraints = {
        "eps": [EPS_CONSTRAINT],
        "m": [Count(1)],
        "domain_sizes": ["array-like", Real, None],   # integers >= 2: checked in fit
        "categories": ["array-like", None],
        "bin_edges": ["array-like", dict, None],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(self, eps=1.0, *, m=1, domain_sizes=None, categories=None, bin_edges=None,
                 random_state=None):
        self.eps = eps
        self.m = m
        self.domain_sizes = domain_sizes
        self.categories = categories
        self.bin_edges = bin_edges
        self.random_state = random_state

    # ------------------------------------------------------------------ fitting
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Validate the parameters, fix the public domains and draw the seed."""
        check_eps_per_coordinate(self.eps, "eps", type(self).__name__)
        spec = collected_spec(X, "features")
        if spec is not None:
            return self._fit_collected(X, spec)
        self.__dict__.pop("collected_", None)
        names = X.feature_names if isinstance(X, GraphData) else None
        Xf = self._all_features(X)
        check_has_features(Xf, type(self).__name__)   # before anything is charged
        population, device_steps = boundary_input(self, X if isinstance(X, GraphData) else Xf)
        users = boundary_users(X, Xf, population)   # (whom a refusal of their values reads)
        with refusal_is_read(self, "features", users, OUTSIDE_DOMAIN):
            check_finite_features(Xf)
        d = Xf.shape[1]
        self.n_features_in_ = d
        check_int(self.m, "m", 1, d, maximum_is=f"n_features={d}")
        if self.domain_sizes is not None and self.categories is not None:
            raise ValueError("Give either domain_sizes or categories, not both.")
        if self.categories is not None:
            if len(self.categories) != d:
                raise ValueError(f"categories must list the values of each of the {d} "
                                 f"features, got {len(self.categories)} lists.")
            self.categories_ = _public_categories(self.categories, names)
            sizes = np.array([len(c) for c in self.categories_])
        elif self.domain_sizes is not None:
            # before the codes are read: a size < 2 would otherwise be reported as a code
            # outside a nonsensical domain such as 0..-2
            sizes = public_domain_sizes(self.domain_sizes, d, names)
        else:
            sizes = None
        # (the edges are an argument: refused before the block that charges the codes')
        edges = None if self.bin_edges is None else _edge_items(self.bin_edges, d)
        with refusal_is_read(self, "features", users, OUTSIDE_DOMAIN):
            codes = self._codes(Xf, names, sizes, check_range=sizes is not None)
        if sizes is None and edges is not None:
            binned = {j: len(e) + 1 for j, e in edges if e is not None}
            if len(binned) == d:  # every domain is public: no need to read the data
                sizes = np.array([binned[j] for j in range(d)], dtype=np.int64)
        if sizes is None:
            warnings.warn("GRRFSMechanism: domain_sizes was not given, so the domains are read "
                          "from the private data in the clear: the ledger charges the users a "
                          "read of their features in the clear (epsilon=inf). Pass "
                          "domain_sizes or categories from public knowledge.",
                          PrivacyLeakWarning, stacklevel=2)
            self._charge_bounds_read(
                X, Xf, population, option="domain_sizes=None",
                read="the domain sizes (each column's largest code)",
                instead="domain_sizes=[...] or categories=[...] from public knowledge")
            sizes = np.maximum(codes.max(axis=0).astype(np.int64) + 1, 2)
        _check_domain_sizes(sizes, names)
        self.domain_sizes_ = sizes
        self.p_, self.q_ = grr_probabilities(float(self.eps), sizes)
        self.sampling_rate_ = self.m / d
        self.population_ = population_of(X if isinstance(X, GraphData) else Xf)
        self._open_collection(population, epsilon=grrfs_epsilon(float(self.eps), self.m, d),
                              device_steps=device_steps,
                              public_state={"n_features": d, "domain_sizes": sizes})
        self.paper_epsilon_ = grrfs_paper_epsilon(float(self.eps), self.m, d)
        return self

    def _placeholder_row(self, d):
        """A row of ``d`` values inside the declared domain, for a spec made without data
        (:func:`~skldp.population.collection_spec`): each feature's smallest category, a
        raw value in its bin where ``bin_edges`` bins the column, 0 elsewhere."""
        row = np.zeros(d)
        cats = self.categories
        if cats is None or len(cats) != d or any(np.size(c) == 0 for c in cats):
            return row   # (fit refuses such categories with its own message)
        edges = {} if self.bin_edges is None else dict(_edge_items(self.bin_edges, d))
        try:
            firsts = [float(np.min(np.asarray(c, dtype=np.float64))) for c in cats]
        except (TypeError, ValueError):
            return row
        for j, first in enumerate(firsts):
            e = edges.get(j)
            if e is None:
                row[j] = first
            elif first == int(first) and 0 <= first <= len(e):
                # np.digitize(x, e) == k for x = e[k - 1] (k >= 1), x < e[0] (k == 0)
                row[j] = e[int(first) - 1] if first >= 1 else e[0] - 1.0
        return row

    def _restore_public_state(self, spec, X):
        ps = spec.public_state
        d = self.n_features_in_ = int(ps["n_features"])
        if X is not None and X.shape[1] != d:
            raise ValueError(f"The reports have {X.shape[1]} columns; collection {spec.id} "
                             f"has {d} features.")
        check_int(self.m, "m", 1, d, maximum_is=f"n_features={d}")
        if self.categories is not None:
            self.categories_ = _public_categories(self.categories)
        self.domain_sizes_ = np.asarray(ps["domain_sizes"], dtype=np.int64)
        self.p_, self.q_ = grr_probabilities(float(self.eps), self.domain_sizes_)
        self.sampling_rate_ = self.m / d
        self.paper_epsilon_ = grrfs_paper_epsilon(float(self.eps), self.m, d)

    def _codes(self, X, names, sizes, check_range=True):
        """Validate and convert raw input to an int64 array of codes."""
        X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        if self.bin_edges is not None:
            X = discretize(X, self.bin_edges)
        if getattr(self, "categories_", None) is not None and self.categories is not None:
            out = np.empty(X.shape, dtype=np.int64)
            for j, cats in enumerate(self.categories_):
                pos, found = sorted_lookup(cats, X[:, j])
                if not found.all():
                    raise ValueError(f"{_column_name(names, j)} holds the value "
                                     f"{X[~found, j][0]!r}, which is not in its categories.")
                out[:, j] = pos
            return out
        frac_cols = _any_per_column(X, lambda B: B != np.round(B))
        if frac_cols.any():
            j = int(np.flatnonzero(frac_cols)[0])
            frac = X[:, j] != np.round(X[:, j])
            raise ValueError(f"{_column_name(names, j)} is not categorical (value "
                             f"{X[frac, j][0]!r}); GRRFSMechanism needs integer codes "
                             "0..c-1. Discretise continuous columns with public edges "
                             "(bin_edges=..., or skldp.mechanisms.discretize).")
        lo, hi = X.min(axis=0), X.max(axis=0)
        if np.any(lo < 0):
            j = int(np.flatnonzero(lo < 0)[0])
            raise ValueError(f"{_column_name(names, j)} has a negative code "
                             f"{lo[j]!r}; codes must be 0..c-1.")
        if check_range and sizes is not None and np.any(hi >= sizes):
            j = int(np.flatnonzero(hi >= sizes)[0])
            raise ValueError(f"{_column_name(names, j)} has the code {int(hi[j])} outside "
                             f"its domain 0..{sizes[j] - 1}.")
        if np.any(hi >= MAX_DOMAIN_SIZE):
            # (no domain holds it; and a code of 2^31 or more would wrap in the int32 cast,
            # so that a domain read from the data (max code + 1) came out silently small)
            j = int(np.flatnonzero(hi >= MAX_DOMAIN_SIZE)[0])
            raise ValueError(f"{_column_name(names, j)} has the code {hi[j]:.0f}, beyond every "
                             f"domain: a domain has at most 2^24 = {MAX_DOMAIN_SIZE:,} codes "
                             "(0..2^24 - 1). Group rare values, or hash them into fewer "
                             "buckets.")
        return X.astype(np.int32)

    # ---------------------------------------------------------------- reporting
    def _device_input(self, X):
        check_finite_features(X)
        return self._codes(X, None, self.domain_sizes_)

    def _perturb(self, codes, keys):
        n, d = codes.shape
        out = np.empty((n, d), dtype=np.float64)
        for rows in row_blocks(n, d, _BLOCK_ENTRIES):
            # the device program: GRR on m sampled features, a uniform code for the others
            report = grrfs_encode(codes[rows], self.domain_sizes_, self.m, self.q_, self.seed_,
                                  keys[rows])
            out[rows] = self._decode(report)
        return out

    def _decode(self, report, X=None):
        """The devices' codes (as float64, what FrequencyReconstructor reads)."""
        return np.asarray(report["c"], dtype=np.float64)

    def _epsilon_total(self):
        return grrfs_epsilon(float(self.eps), self.m, self.n_features_in_)

    # ------------------------------------------------------ frequency estimation
    def report_probabilities(self, f, j):
        """P(k) of eqs. (7)-(8): observed frequency of each code of feature ``j``.

        Parameters
        ----------
        f : array-like of shape (..., c_j) or float
            True frequencies of the codes of feature ``j`` (a float: one
            code's, answered elementwise).
        j : int
            Feature index.

        Raises
        ------
        ValueError
            If the last axis of ``f`` does not have length ``c_j``.
        """
        self._check_fitted()
        j = self._feature(j)
        f = self._per_code(f, j, "f")
        r, c = self.sampling_rate_, self.domain_sizes_[j]
        return r * (self.q_[j] + f * (self.p_[j] - self.q_[j])) + (1 - r) / c

    def _per_code(self, x, j, name):
        """``x`` as an array whose last axis has one entry per code of feature ``j``.

        A scalar (one code's value) is kept: the formulas are elementwise. Another
        length broadcast against them into silently wrong values.
        """
        x = np.asarray(x)
        c = int(self.domain_sizes_[j])
        if x.ndim and x.shape[-1] != c:
            raise ValueError(f"{name} must have one entry per code on its last axis: feature "
                             f"{j} has c_j = {c} codes, got shape {x.shape} (last axis of "
                             f"length {x.shape[-1]}).")
        return x

    def _feature(self, j):
        """The feature index ``j`` as an int in ``0..d - 1`` (``-1`` is not the last one)."""
        d = self.n_features_in_
        return check_int(j, "j", 0, d - 1, maximum_is=f"n_features - 1 = {d - 1}")

    def estimate_frequencies(self, reports, j=None):
        """Unbiased estimate of each code's frequency (eq. (5)) from reports.

        Parameters
        ----------
        reports : array-like of shape (n, d) or (n,)
            Report codes of ``n`` users (all features, or feature ``j`` only):
            integers in ``0..c_j - 1``.
        j : int or None
            Feature of a 1-D ``reports`` (required then), or the column of a
            2-D one to estimate; ``None`` estimates every feature of a 2-D
            ``reports``.

        Returns
        -------
        f_hat : ndarray of shape (c_j,) or list of them

        Raises
        ------
        ValueError
            1-D reports without ``j``, a shape that does not match the
            features, or a code that is not an integer in ``0..c_j - 1``.
        """
        self._check_fitted()
        R = np.asarray(reports)
        d = self.n_features_in_
        if R.ndim not in (1, 2):
            raise ValueError(f"reports must be 1-D (one feature) or 2-D (n, {d}), got shape "
                             f"{R.shape}.")
        if R.ndim == 1 and j is None:
            raise ValueError("1-D reports hold the codes of one feature: pass its index j "
                             "(estimate_frequencies(reports, j)).")
        if R.ndim == 2 and R.shape[1] != d:
            raise ValueError(f"reports must have {d} columns (one per feature), got "
                             f"{R.shape[1]}.")
        if j is None:
            return [self.estimate_frequencies(R[:, jj], jj) for jj in range(d)]
        j = self._feature(j)
        col = R if R.ndim == 1 else R[:, j]
        c = int(self.domain_sizes_[j])
        # a code outside 0..c-1 would count in the denominator without a bin (or be
        # truncated into one): refuse it rather than return frequencies that are off
        if (not np.issubdtype(col.dtype, np.number) or np.issubdtype(col.dtype, np.complexfloating)
                or not np.all(np.isfinite(col)) or np.any(col != np.round(col))
                or np.any(col < 0) or np.any(col >= c)):
            raise ValueError(f"reports of feature {j} must be integer codes 0..{c - 1} (its "
                             f"domain size is {c}); pass GRRFSMechanism's reports unchanged.")
        if len(col) == 0:
            raise ValueError("estimate_frequencies needs at least one report.")
        observed = np.bincount(col.astype(np.int64), minlength=c) / len(col)
        return self.invert_observed(observed, j)

    def invert_observed(self, observed, j):
        """Invert P(k) of eq. (8): observed proportions (..., c_j) -> frequency estimates.

        A last axis of another length than ``c_j`` is refused (``ValueError``); a
        float (one code's proportion) is answered elementwise.
        """
        self._check_fitted()
        j = self._feature(j)
        r, c = self.sampling_rate_, self.domain_sizes_[j]
        p, q = self.p_[j], self.q_[j]
        observed = self._per_code(observed, j, "observed")
        return (observed - r * q - (1 - r) / c) / (r * (p - q))

    def frequency_variance(self, f, j, n, *, users="sampled"):
        """Variance of the frequency estimate from ``n`` reports.

        ``users="sampled"`` (eq. (6)): ``n`` users drawn i.i.d. from ``f``, the
        variance of ``f_hat_k - f_k``, ``P(k)(1 - P(k)) / (n ((m/d)(p - q))^2)``;
        pass the estimate ``f_hat`` for the plug-in estimate of eq. (13).
        ``users="fixed"``: the ``n`` users present, whose codes have frequencies
        ``f``; the variance of :meth:`estimate_frequencies` around those
        frequencies (the randomness of the reports alone),
        ``[f a(1 - a) + (1 - f) b(1 - b)] / (n ((m/d)(p - q))^2)`` with
        ``a = (m/d) p + (1 - m/d) / c`` and ``b = (m/d) q + (1 - m/d) / c``:
        eq. (6) less the sampling of the users, ``f (1 - f) / n``.

        Parameters
        ----------
        f : array-like of shape (..., c_j)
            Frequencies of the codes of feature ``j``.
        j : int
            Feature index, in ``0..d - 1``.
        n : int
            Number of reports (>= 1).
        users : {"sampled", "fixed"}, default="sampled"
            Which error: of ``f``, the distribution the users are drawn from
            (eq. (6)), or of the frequencies of the users who reported.

        Returns
        -------
        ndarray of the shape of ``f``
        """
        if users not in ("sampled", "fixed"):
            raise ValueError(f"users must be 'sampled' or 'fixed', got {users!r}.")
        self._check_fitted()
        j = self._feature(j)
        n = check_int(n, "n", 1)   # (0 gave inf, a negative n a negative variance)
        f = np.asarray(f, dtype=np.float64)
        P = self.report_probabilities(f, j)
        r, p, q = self.sampling_rate_, self.p_[j], self.q_[j]
        var = P * (1 - P)
        if users == "fixed":
            c = self.domain_sizes_[j]
            a, b = r * p + (1 - r) / c, r * q + (1 - r) / c
            var = f * a * (1 - a) + (1 - f) * b * (1 - b)
        return var / (n * (r * (p - q)) ** 2)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
