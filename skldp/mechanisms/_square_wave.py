"""The HDS (High-Dimensional Square wave) mechanism of PrivGE [Li et al., CIKM 2024, §3.1]."""

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import StrOptions

from ..base import LDPMechanism
from ..device._kinds import (
    HDS_CELL,
    HDS_LOG2_CELLS,
    hds_encode,
    hds_inputs,
    square_wave_grid,
    take,
)
from ..exceptions import InvalidParameterError
from ..utils._random import sample_k_of_d
from ..utils.validation import Count, check_eps, check_int
from ._grid import check_eps_per_coordinate

__all__ = ["HDSMechanism", "hds_estimator_variance", "hds_optimal_k"]

# The device program (sampling, streams, the grid) is the device encoder's: one
# implementation for the server's simulation and the users' devices.
_LOG2_CELLS = HDS_LOG2_CELLS
_CELL = HDS_CELL
_square_wave_grid = square_wave_grid

_DEFAULT_K = 5


def _check_mean_square(x2):
    """``x2`` (a number or an array of them) as float64, each in ``[0, 1]``: the mean square
    of an input scaled to ``[-1, 1]`` (a negative one gave a negative variance)."""
    a = np.asarray(x2) if not isinstance(x2, str) else None
    if a is None or a.dtype.kind not in "iuf" or not np.all((a >= 0) & (a <= 1)):
        raise InvalidParameterError(f"x2 must be a real number in [0, 1] (the mean square "
                                    f"of an input scaled to [-1, 1]), got {x2!r}.")
    return a.astype(np.float64)[()]


def hds_estimator_variance(eps, k, d, x2=1.0 / 3.0):
    """Variance of the unbiased estimate ``report / C`` of one coordinate (Lemma 3.2).

    ``Var[report] / C^2`` with ``Var = k (b^3 e^eps' + 3b^2 + 3b + 1) / (3 d (b e^eps' + 1))
    + (C - C^2) x^2``, ``C = (k/d) b (e^eps' - 1) / (b e^eps' + 1)`` and ``eps' = eps / k``,
    at ``E[x^2] = x2`` (1/3 for inputs uniform on [-1, 1]), with ``b`` the half-width of
    the wave :class:`HDSMechanism` draws on its grid (its ``b_``: the paper's ``b``
    rounded to an odd number of cells of ``2^-23``, at least one). Lemma 3.2's ``b``
    differs from it by up to 10 % of the value past ``eps' = 18.8``, where ``b`` falls
    below a cell. An average of ``n`` users' estimates has this variance divided by
    ``n``, so the ``k`` that minimises it is the budget split under which propagation
    (an average over neighbours) sees the most signal.

    Parameters
    ----------
    eps : float
        Per-user budget.
    k : int or array of int
        Reported dimensions.
    d : int
        Number of features.
    x2 : float or array of float, default=1/3
        Mean square of the scaled input, in ``[0, 1]`` (the input lies in
        ``[-1, 1]``).

    Returns
    -------
    float or ndarray
        ``eps = inf`` gives the variance of the sampling alone, ``(d / k - 1) x2``.

    Raises
    ------
    InvalidParameterError
        If ``eps`` is not a number > 0 (``inf`` allowed), ``d`` not an integer >= 1
        or ``x2`` not a number in ``[0, 1]``.
    ValueError
        If a ``k`` is outside ``1..d``.
    """
    eps = np.vectorize(check_eps, otypes=[np.float64])(eps)[()]   # (an array of budgets too)
    d = check_int(d, "d", 1)
    x2 = _check_mean_square(x2)
    k = np.asarray(k, dtype=np.float64)
    bad = (k < 1) | (k > d) | (k != np.round(k))
    if np.any(bad):
        raise ValueError(f"k must be an integer in 1..{d} (n_features={d}), got "
                         f"{k[bad].ravel()[0]:g}.")
    e = eps / k
    # eps = inf: no noise, C = k / d and the report varies by the sampling alone (the
    # formula below would be inf / inf there); a stand-in budget keeps it finite
    none = np.isinf(e)
    if np.any(none):
        e = np.where(none, 1.0, e)
    with np.errstate(over="ignore"):   # (e^eps' overflows past eps' ~ 709: w = inf)
        b = np.vectorize(lambda ek: _square_wave_grid(ek)[1])(e)
        w = b * np.exp(e)   # b e^eps' (b >= 2^-24: no underflow)
    C = (k / d) * (1.0 - (1.0 + b) / (w + 1.0))
    const = k * (b * b / (1.0 + 1.0 / w) + (3 * b * b + 3 * b + 1) / (w + 1.0)) / (3.0 * d)
    var = (const + (C - C * C) * x2) / (C * C)
    if np.any(none):
        var = np.where(none, (d / k - 1.0) * x2, var)[()]
    return var


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

    Raises
    ------
    InvalidParameterError
        If ``eps`` is not a number > 0 (``inf`` allowed), ``d`` not an integer
        >= 1 or ``max_k`` neither None nor an integer >= 1.
    """
    eps = check_eps(eps, "eps")
    d = check_int(d, "d", 1)
    max_k = check_int(max_k, "max_k", 1, allow_none=True)
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
    samples ``k`` of the ``d`` dimensions, perturbs each sampled value with
    the square wave of budget ``eps / k`` and reports 0 for the others. The
    report is ``eps``-LDP per user. It is biased on purpose,
    ``E[report_j] = C x_j`` (see :meth:`mean` and :meth:`variance`), and drawn
    on a grid of floating-point values, so that the guarantee holds exactly.

    Read more in the :ref:`User Guide <hds_mechanism>`.

    Parameters
    ----------
    eps : float, default=1.0
        Per-user privacy budget, split evenly over the ``k`` reported
        dimensions. ``np.inf``: no noise, each user reports its ``k`` sampled
        dimensions exactly (scaled to [-1, 1]) and 0 for the others.
    k : int or "auto", default=None
        Number of dimensions each user reports, 1 <= k <= d. ``None`` means
        ``min(5, d)``; ``"auto"`` minimises :func:`hds_estimator_variance`
        for ``eps`` and ``d`` (no data).
    feature_range : tuple (lo, hi) of float or arrays of shape (n_features,), default=None
        Public bounds of the raw features; values outside are clipped with a
        warning. ``None``: read from the data, charged as a read in the clear
        (epsilon inf; refused under a budget), with a
        :class:`~skldp.exceptions.PrivacyLeakWarning`.
    random_state : int, RandomState, Generator or None, default=None
        Seeds the collection. ``None`` draws a new collection (a new use of
        the budget) at every ``fit``; a ``RandomState`` or ``Generator`` gives
        the seed of one draw from it.

    Attributes
    ----------
    k_ : int
        Number of reported dimensions per user.
    b_ : float
        Half-width of the square wave at ``eps / k`` on the grid: the paper's
        ``b`` rounded to an odd number of cells of ``2^-23`` (at least one, so
        ``2^-24`` when ``b`` is below a cell, past ``eps / k`` ~ 18.8; 0 when
        ``eps`` is inf).
    scale_ : float
        ``C`` of Lemma 3.2 at ``b = b_``, exact on the grid: ``E[report_j] =
        scale_ * x_j`` for ``x`` scaled to [-1, 1] (``k / d`` when ``eps`` is
        inf); see :meth:`estimate`.
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

    See Also
    --------
    skldp.mechanisms.hds_estimator_variance : Variance of the unbiased estimate from the reports.
    skldp.mechanisms.PiecewiseMechanism : Unbiased reports of ``k`` sampled features.
    skldp.propagation.PPRPropagation : The propagation after HDS in PrivGE.

    Notes
    -----
    The output is a CSR matrix with exactly ``k`` stored entries per row when
    ``k < d / 4``, or when the input is sparse and ``feature_range`` contains
    0 for every feature (a sparse input whose range excludes 0 is densified
    by the clipping); otherwise it is a dense ndarray (float64). This holds
    for every ``eps`` including inf.

    References
    ----------
    .. [1] Z. Li, R.-H. Li, M. Liao, F. Jin and G. Wang, "Privacy-Preserving
       Graph Embedding based on Local Differential Privacy", CIKM 2024,
       eq. (5), Algorithms 1-2, Theorem 3.1, Lemma 3.2.
    .. [2] Z. Li, T. Wang, M. Lopuhaä-Zwakenberg, N. Li and B. Škoric,
       "Estimating Numerical Distributions under Local Differential Privacy",
       SIGMOD 2020 (the Square Wave mechanism).

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

    _parameter_constraints = {
        **LDPMechanism._parameter_constraints,
        "k": [Count(1), StrOptions({"auto"}), None]}
    _input_dtype = None   # the encoder widens the k values it takes: no float64 copy of X
    _reports_in_feature_units = False   # reports stay in the encoding's [-1, 1] scale

    def __init__(self, eps=1.0, *, k=None, feature_range=None, random_state=None):
        self.eps = eps
        self.k = k
        self.feature_range = feature_range
        self.random_state = random_state

    # ------------------------------------------------------------ parameters
    def _setup_fit(self):
        d = self.n_features_in_
        if isinstance(self.k, str) and self.k == "auto":
            k = hds_optimal_k(float(self.eps), d)
        else:
            k = min(_DEFAULT_K, d) if self.k is None else self.k
        self.k_ = check_int(k, "k", 1, d, maximum_is=f"n_features={d}")
        eps = float(self.eps)
        check_eps_per_coordinate(eps / self.k_, "eps / k", type(self).__name__)
        r = self.k_ / d
        if np.isinf(eps):
            self.b_, self.output_grid_, self.scale_ = 0.0, None, r
        else:
            grid, self.b_ = _square_wave_grid(eps / self.k_)
            self.output_grid_ = (np.zeros(d), np.full(d, _CELL))
            # C of Lemma 3.2 at b = b_, exactly the grid's slope (not at the paper's b,
            # which is below a cell past eps' ~ 18.8: C 0.95-1.04 times the grid's there)
            self.scale_ = r * float(grid.slope())

    def _epsilon_total(self):
        return float(self.eps)

    def _grid(self):
        return _square_wave_grid(self._fitted_eps() / self.k_)[0]

    # ------------------------------------------------------------ perturbation
    def _public_state(self):
        return {**super()._public_state(), "k": self.k_}

    def _perturb(self, X, keys):
        from .._torch import _counter_random as on_device
        keys = np.asarray(keys, dtype=np.uint64)
        d = X.shape[1]
        # The devices' program, its hashes on the GPU when there is one and the draw is
        # large: the same columns and cells, so the same reports
        device = on_device.sampling_device(len(keys), d)
        cols = (sample_k_of_d(self.seed_, keys, d, self.k_, stream=0) if device is None else
                on_device.sample_k_of_d(self.seed_, keys, d, self.k_, stream=0, device=device))
        if np.isinf(self._fitted_eps()):
            # the eps -> inf limit: b -> 0 and the band holds all the mass
            lo, hi = self.feature_min_[cols], self.feature_max_[cols]
            return self._assemble(X, cols, 2.0 * (take(X, cols) - lo) / (hi - lo) - 1.0)
        lo, hi = self.feature_min_, self.feature_max_
        if device is None:
            report = hds_encode(X, lo, hi, self.k_, self._grid(), self.seed_, keys, cols=cols)
        else:
            report = {"i": cols, "c": on_device.square_wave_cells(
                self._grid(), hds_inputs(X, lo, hi, cols), self.seed_, keys, device=device)}
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
        if not np.all(np.isfinite(x)):   # (np.clip would pass NaN on as a NaN moment)
            raise ValueError("x must be finite.")
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

    def estimate(self, R):
        """Unbiased estimates of the (clipped) raw features from reports ``R``.

        ``feature_min_ + (R / scale_ + 1) (feature_max_ - feature_min_) / 2``, in
        feature units; the variance of a scaled coordinate is
        :func:`hds_estimator_variance` (times the squared half-width of the range).

        Parameters
        ----------
        R : array-like or sparse matrix of shape (n, n_features)
            Reports of this mechanism (the output of :meth:`transform`).

        Returns
        -------
        ndarray of shape (n, n_features)
        """
        self._check_fitted()
        R = R.toarray() if sp.issparse(R) else np.asarray(R, dtype=np.float64)
        if R.ndim != 2 or R.shape[1] != self.n_features_in_:
            raise ValueError(f"R must have shape (n, {self.n_features_in_}), got {R.shape}.")
        half = (self.feature_max_ - self.feature_min_) / 2.0
        return self.feature_min_ + (R / self.scale_ + 1.0) * half

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
        if np.isinf(self._fitted_eps()):
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
        if np.isinf(self._fitted_eps()):
            return (r - r * r) * xs ** 2   # only the sampling of the k dimensions varies
        m, v = self._report_moments(xs)
        return r * (v + m ** 2) - (r * m) ** 2   # reported with probability k / d
