"""The HDS (High-Dimensional Square wave) mechanism of PrivGE [Li et al., CIKM 2024, §3.1]."""

import numpy as np
import scipy.sparse as sp

from ..base import LDPMechanism
from ..device._kinds import (
    HDS_CELL,
    HDS_LOG2_CELLS,
    hds_encode,
    square_wave_b,
    square_wave_grid,
    take,
)
from ..utils._random import sample_k_of_d
from ..utils.validation import check_int
from ._grid import check_eps_per_coordinate

__all__ = ["HDSMechanism", "hds_estimator_variance", "hds_optimal_k"]

# The device program (sampling, streams, the grid) is the device encoder's: one
# implementation for the server's simulation and the users' devices.
_LOG2_CELLS = HDS_LOG2_CELLS
_CELL = HDS_CELL
_square_wave_grid = square_wave_grid

_DEFAULT_K = 5


def hds_estimator_variance(eps, k, d, x2=1.0 / 3.0):
    """Variance of the unbiased estimate ``report / C`` of one coordinate (Lemma 3.2).

    ``Var[report] / C^2`` with ``Var = k (b^3 e^eps' + 3b^2 + 3b + 1) / (3 d (b e^eps' + 1))
    + (C - C^2) x^2``, ``C = (k/d) b (e^eps' - 1) / (b e^eps' + 1)`` and ``eps' = eps / k``,
    at ``E[x^2] = x2`` (1/3 for inputs uniform on [-1, 1]). An average of ``n`` users'
    estimates has this variance divided by ``n``, so the ``k`` that minimises it is the
    budget split under which propagation (an average over neighbours) sees the most signal.

    Parameters
    ----------
    eps : float
        Per-user budget.
    k : int or array of int
        Reported dimensions.
    d : int
        Number of features.
    x2 : float, default=1/3
        Mean square of the scaled input.

    Returns
    -------
    float or ndarray
    """
    k = np.asarray(k, dtype=np.float64)
    e = eps / k
    b = np.vectorize(square_wave_b)(e)
    with np.errstate(over="ignore"):
        w = b * np.exp(np.minimum(e, 700.0))
    C = (k / d) * (w - b) / (w + 1.0)
    const = k * (b * b * w + 3 * b * b + 3 * b + 1) / (3.0 * d * (w + 1.0))
    return (const + (C - C * C) * x2) / (C * C)


def hds_optimal_k(eps, d, max_k=None):
    """The ``k`` in ``1..min(d, max_k)`` minimising :func:`hds_estimator_variance`.

    Only ``k`` with ``eps / k`` at most the per-coordinate limit of the grid sampler are
    considered; ``eps = inf`` gives ``d`` (every dimension, no noise).

    Parameters
    ----------
    eps : float
        Per-user budget.
    d : int
        Number of features.
    max_k : int, default=None
        Largest ``k`` considered; ``None`` means 1000.

    Returns
    -------
    k : int
        Number of dimensions each user should report.
    """
    if np.isinf(eps):
        return d
    hi = min(d, 1000 if max_k is None else max_k)
    ks = np.arange(1, hi + 1)
    ks = ks[eps / ks <= 50.0]
    if len(ks) == 0:
        return hi
    return int(ks[np.argmin(hds_estimator_variance(eps, ks, d))])


class HDSMechanism(LDPMechanism):
    """High-Dimensional Square wave (HDS) mechanism of PrivGE for node features.

    Each user scales its feature vector from ``feature_range`` to [-1, 1],
    samples ``k`` of the ``d`` dimensions uniformly without replacement,
    perturbs each sampled value with the square wave of budget ``eps / k``
    [Li et al., CIKM 2024, Eq. 5, Algorithm 1] and reports 0 for the other
    ``d - k`` dimensions (Algorithm 2). By sequential composition the report
    is ``eps``-LDP per user (Theorem 3.1). A reported value lies in
    ``[-1 - b, 1 + b]`` with ``b = (eps' e^eps' - e^eps' + 1) / (e^eps' (e^eps' - 1 - eps'))``
    and ``eps' = eps / k``; this is the Square Wave of Li et al. (2020) mapped
    from [0, 1] to [-1, 1].

    The reports are *biased* on purpose (the paper feeds them to propagation
    without calibration): ``E[report_j] = C x_j`` with
    ``C = (k / d) b (e^eps' - 1) / (b e^eps' + 1)`` (Lemma 3.2), see
    :meth:`mean` and :meth:`variance`.

    **Floating-point safety (the grid).** A square-wave value computed in
    floating point can be a float that no other input produces (Mironov, CCS
    2012). The wave is therefore drawn on integer cells of width
    ``h = 2^-23`` (the private ``TwoLevelGrid`` of ``skldp.mechanisms._grid``): ``x`` is
    rounded unbiasedly to the cell lattice, the band holds an odd number of
    cells ``2b/h`` rounded (so ``b_`` differs from the paper's ``b`` by at
    most ``h``), each band cell has exactly ``e^{eps'}`` times the
    probability of every other cell, and the report is the centre of the
    cell, ``-1 - b + (j + 1/2) h``: a multiple of ``h`` (``output_grid_``),
    whatever the input. Each coordinate is then exactly ``eps'``-LDP (the
    sampler's floating-point error changes a cell's probability by a
    relative ``1e-8`` or less), and the mean and variance are Lemma 3.2's
    with ``b = b_`` up to ``h^2``; :meth:`mean` and :meth:`variance` return
    the exact values on the grid.

    Every user's report is a pure function of ``(seed_, node id)``: the
    sampled dimensions come from :func:`skldp.utils.sample_k_of_d` (stream 0),
    the rounding, the piece and the cell of each reported value from three
    further streams.

    Parameters
    ----------
    eps : float, default=1.0
        Per-user privacy budget, split evenly over the ``k`` reported
        dimensions. ``np.inf`` disables the noise and keeps everything else:
        each user reports its ``k`` sampled dimensions exactly (scaled to
        [-1, 1]) and 0 for the others, which is the limit of the mechanism as
        eps -> inf (b -> 0 and the band holds all the mass), with the same
        output format; ``epsilon_`` is then inf. With ``k=d`` this is the
        scaled feature matrix. The paper's non-private baseline (Figure 2,
        "node features are directly employed without any perturbation") is
        the raw features: drop the step (``"passthrough"`` in a Pipeline).
    k : int or "auto", default=None
        Number of dimensions each user reports, 1 <= k <= d. ``None`` means
        ``min(5, d)``: the paper tunes ``k`` per dataset in
        {1, 3, 5, 10, 20, 30, 50} (Sec. 4.2, "Parameter Analysis", accuracy
        within 2 points over k on Cora/Facebook), and 5 is the default of the
        authors' released run script (their tuned values: Cora 20, CiteSeer 5,
        PubMed 1, LastFM 5, Facebook 50, Wikipedia 20). ``"auto"`` chooses
        the ``k`` that minimises :func:`hds_estimator_variance`, the variance
        of the unbiased estimate ``report / C`` of a coordinate averaged over
        inputs uniform on [-1, 1] (Lemma 3.2): the budget split that makes
        the aggregated reports most informative, found from ``eps`` and ``d``
        only (no data).
    feature_range : tuple (lo, hi) of float or arrays of shape (n_features,), default=None
        Public bounds of the raw features; values outside are clipped with a
        warning. ``None`` reads them from the private data and emits a
        :class:`~skldp.exceptions.PrivacyLeakWarning`.
    random_state : int, RandomState instance or None, default=None
        Seeds the collection. ``None`` draws a new collection (a new use of
        the budget) at every ``fit``.

    Attributes
    ----------
    k_ : int
        Number of reported dimensions per user.
    b_ : float
        Half-width of the square wave at ``eps / k`` on the grid, within
        ``2^-23`` of ``square_wave_b(eps)`` (0 when ``eps`` is inf).
    output_grid_ : tuple (offset, step) of ndarrays of shape (n_features,), or None
        Every report is ``offset[j] + i * step[j]`` for an integer ``i``
        (offset 0, step ``2^-23``), including the 0 of unreported dimensions
        (``None`` when ``eps`` is inf).
    seed_ : int
        Seed of this collection.
    feature_min_, feature_max_ : ndarray of shape (n_features,)
        Bounds used to clip and scale.
    epsilon_ : float
        Per-user budget of one report (``eps``; by composition over the k
        dimensions).
    protects_ : tuple of str
        ``("features",)``.
    n_features_in_ : int
        Number of features.

    Notes
    -----
    Output format: a CSR matrix with exactly ``k`` stored entries per row
    when the input is sparse or ``k < d / 4``, otherwise a dense ndarray
    (float64), for every ``eps`` including inf.

    The authors' released code maps the reports back to the raw feature range
    after perturbation; this class follows the paper (reports in
    [-1 - b, 1 + b], 0 for unreported dimensions).

    References
    ----------
    Z. Li, R.-H. Li, M. Liao, F. Jin, G. Wang. Privacy-Preserving Graph
    Embedding based on Local Differential Privacy. CIKM 2024,
    doi:10.1145/3627673.3679759: eq. (5), Algorithms 1-2,
    Theorem 3.1, Lemma 3.2.

    Z. Li, T. Wang, M. Lopuhaä-Zwakenberg, N. Li, B. Škoric. Estimating
    Numerical Distributions under Local Differential Privacy. SIGMOD 2020
    (the Square Wave mechanism).

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.mechanisms import HDSMechanism
    >>> X = np.random.default_rng(0).random((4, 10))
    >>> hds = HDSMechanism(eps=1.0, k=2, feature_range=(0, 1), random_state=0).fit(X)
    >>> R = hds.transform(X)
    >>> R.shape, R.getnnz(axis=1).tolist()
    ((4, 10), [2, 2, 2, 2])
    >>> bool(abs(R.data).max() <= 1 + hds.b_)
    True
    """

    def __init__(self, eps=1.0, *, k=None, feature_range=None, random_state=None):
        self.eps = eps
        self.k = k
        self.feature_range = feature_range
        self.random_state = random_state

    # ------------------------------------------------------------ parameters
    def _validate_params(self):
        d = self.n_features_in_
        if isinstance(self.k, str) and self.k == "auto":
            k = hds_optimal_k(float(self.eps), d)
        else:
            k = min(_DEFAULT_K, d) if self.k is None else self.k
        self.k_ = check_int(k, "k", 1, d, maximum_is=f"n_features={d}")
        eps = float(self.eps)
        check_eps_per_coordinate(eps / self.k_, "eps / k", type(self).__name__)
        if np.isinf(eps):
            self.b_, self.output_grid_ = 0.0, None
        else:
            _, self.b_ = _square_wave_grid(eps / self.k_)
            self.output_grid_ = (np.zeros(d), np.full(d, _CELL))

    def _epsilon_total(self):
        return float(self.eps)

    def _grid(self):
        return _square_wave_grid(float(self.eps) / self.k_)[0]

    # ------------------------------------------------------------ perturbation
    def _public_state(self):
        return {**super()._public_state(), "k": self.k_}

    def _perturb(self, X, keys):
        keys = np.asarray(keys, dtype=np.uint64)
        if np.isinf(float(self.eps)):
            # the eps -> inf limit: b -> 0 and the band holds all the mass
            cols = sample_k_of_d(self.seed_, keys, X.shape[1], self.k_, stream=0)
            lo, hi = self.feature_min_[cols], self.feature_max_[cols]
            return self._assemble(X, cols, 2.0 * (take(X, cols) - lo) / (hi - lo) - 1.0)
        report = hds_encode(X, self.feature_min_, self.feature_max_, self.k_, self._grid(),
                            self.seed_, keys)
        return self._decode(report, X)

    def _decode(self, report, X=None):
        """The server's matrix of reports from the devices' (columns, cells)."""
        return self._assemble(X, report["i"], self._cell_values(report["c"]))

    def _assemble(self, X, cols, vals):
        n, k = cols.shape
        d = self.n_features_in_
        if (X is not None and sp.issparse(X)) or 4 * k < d:
            indptr = np.arange(0, n * k + 1, k, dtype=np.int64)
            return sp.csr_matrix((vals.ravel(), cols.ravel(), indptr), shape=(n, d))
        out = np.zeros((n, d), dtype=np.float64)
        out[np.arange(n)[:, None], cols] = vals
        return out

    # ------------------------------------------------------------- moments
    def _scaled_input(self, x):
        x = np.asarray(x, dtype=np.float64)
        if x.shape[-1:] != (self.n_features_in_,) and x.ndim > 0:
            raise ValueError(f"x must have {self.n_features_in_} features in its last axis, "
                             f"got shape {x.shape}.")
        x = np.clip(x, self.feature_min_, self.feature_max_)
        return 2.0 * (x - self.feature_min_) / (self.feature_max_ - self.feature_min_) - 1.0

    def _cell_values(self, j):
        """Report of cell ``j``: its centre ``-1 - b + (j + 1/2) h``, a multiple of ``h``."""
        return (j - ((1 << (_LOG2_CELLS - 1)) + (self._grid().n_band - 1) // 2)) * _CELL

    def _report_moments(self, xs):
        """Mean and variance of one *sampled* coordinate's report for scaled inputs ``xs``."""
        grid = self._grid()
        m, v = grid.moments((xs + 1.0) / 2.0)
        return self._cell_values(m), v * _CELL ** 2

    def _bias_factor(self):
        """C of Lemma 3.2: E[report_j] = C x_j (x scaled to [-1, 1]); k / d when eps is inf."""
        r = self.k_ / self.n_features_in_
        if np.isinf(float(self.eps)):
            return r
        m_hi, _ = self._report_moments(np.float64(1.0))
        m_lo, _ = self._report_moments(np.float64(-1.0))
        return r * (m_hi - m_lo) / 2.0

    def mean(self, x):
        """Expected report ``C x`` of a user with raw features ``x`` (Lemma 3.2, eq. (8)).

        Parameters
        ----------
        x : array-like of shape (..., n_features)
            Raw feature values (clipped to ``feature_range`` and scaled to
            [-1, 1] as in :meth:`transform`).

        Returns
        -------
        ndarray of the same shape
            ``C * x_scaled`` with ``C = (k/d) b (e^eps' - 1) / (b e^eps' + 1)``
            (``b = b_``; exact on the grid); ``C = k / d`` when ``eps`` is inf.
        """
        self._check_fitted()
        xs = self._scaled_input(x)
        r = self.k_ / self.n_features_in_
        if np.isinf(float(self.eps)):
            return r * xs
        return r * self._report_moments(xs)[0]

    def variance(self, x):
        """Variance of each reported coordinate (Lemma 3.2, eq. (11)).

        ``Var = k (b^3 e^eps' + 3b^2 + 3b + 1) / (3 d (b e^eps' + 1)) + (C - C^2) x^2``
        with ``eps' = eps / k``, ``b = b_`` and ``x`` scaled to [-1, 1], computed
        exactly on the grid (it differs from the formula by about ``h^2``). Its
        limit for ``eps`` inf, ``(C - C^2) x^2`` with ``C = k / d``, is returned
        then (the variance of the dimension sampling alone).

        Parameters
        ----------
        x : array-like of shape (..., n_features)
            Raw feature values.

        Returns
        -------
        ndarray of the same shape
        """
        self._check_fitted()
        xs = self._scaled_input(x)
        r = self.k_ / self.n_features_in_
        if np.isinf(float(self.eps)):
            return (r - r * r) * xs ** 2   # only the sampling of the k dimensions varies
        m, v = self._report_moments(xs)
        return r * (v + m ** 2) - (r * m) ** 2   # reported with probability k / d

    def _check_fitted(self):
        from sklearn.utils.validation import check_is_fitted
        check_is_fitted(self, "epsilon_")
