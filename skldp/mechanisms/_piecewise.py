"""The Piecewise mechanism (Wang et al. 2019) with k-of-d sampling."""

from functools import partial

import numpy as np

from ..base import LDPMechanism
from ..device._kinds import piecewise_encode, pm_estimate_map, pm_grid
from ..utils._blocks import row_blocks
from ..utils.validation import Count
from ._feature_reports import (
    _BLOCK_ENTRIES,
    _assemble_sampled,
    _dense_rows,
    _n_sampled,
    _variance_input,
)
from ._grid import check_eps_per_coordinate

__all__ = ["PiecewiseMechanism"]

# Wang et al. (2019) §IV-C: k = max(1, min(d, floor(eps / 2.5))).
_EPS_PER_DIM = 2.5


# The grid (the part of [-C, C] outside the central piece has 2^24 cells) and the
# device program are the device encoder's: one implementation.
_pm_grid = pm_grid
_pm_estimate_map = pm_estimate_map
# Most ulps (of the magnitude) by which the value mid of unsampled coordinates differs from
# the decode of the cell nearest it (about 2; output_grid_). The reports are the declared
# decode bit for bit: compared with fl(offset + c * step) instead, 1 ulp off for up to half
# the cells where a step is under 16 ulps (narrow ranges far from 0).
_DECODE_ULPS = 4


def _cell_values(cells, mid, half, c0, c1):
    """``mid + half * t_hat``, ``t_hat = c0 + c1 * cells``: the reported value of a cell (the
    reports and the decode that ``output_grid_`` declares, so that they agree bit for bit)."""
    return mid + half * (c0 + c1 * cells)


class PiecewiseMechanism(LDPMechanism):
    r"""Piecewise mechanism with k-of-d sampling (Wang et al. 2019).

    Each user samples ``k`` of its ``d`` features and spends ``eps / k`` on
    each: a sampled feature, scaled to ``t`` in [-1, 1], is perturbed to
    ``t*`` from the piecewise-constant density of the mechanism and reported
    as

    .. math:: \hat x = \mathrm{mid} + \frac{\Delta}{2} \frac{d}{k} t^*,

    an unbiased estimate; unsampled features report ``mid = (lo + hi) / 2``.
    The report is ``eps``-LDP per user and drawn on a grid of floating-point
    values, so that the guarantee holds exactly.

    Read more in the :ref:`User Guide <piecewise_mechanism>`.

    Parameters
    ----------
    eps : float, default=1.0
        Per-user privacy budget (> 0; ``inf`` returns the clipped features).
    k : int or None, default=None
        Number of sampled features in ``1..d``; ``None`` uses Wang et al.'s
        rule ``max(1, min(d, floor(eps / 2.5)))``.
    feature_range : tuple (lo, hi) of scalars or arrays of shape (n_features,), default=None
        Public bounds. ``None``: read from the data, charged as a read in the
        clear (epsilon inf; refused under a budget), with a
        :class:`~skldp.exceptions.PrivacyLeakWarning`. Values outside are
        clipped with a warning.
    random_state : int, RandomState, Generator or None, default=None
        Seed of the collection; reports are a pure function of the seed and
        the node id (``None``: a new collection at every fit).

    Attributes
    ----------
    k_ : int
        Number of sampled features.
    epsilon_per_feature_ : float
        ``eps / k_``.
    epsilon_ : float
        Per-user total, ``eps``.
    output_grid_ : tuple (offset, step, ulps, decode), or None
        Every reported (sampled) coordinate ``j`` is the float ``decode(i)``
        of its integer cell ``i`` (indices of shape (n, n_features)),
        whatever the input: ``mid + half * (c0 + c1 * i)``, within a few ulps
        of ``offset[j] + i * step[j]``; ``ulps`` is the tolerance of the
        value ``mid`` of unsampled coordinates. ``None`` when ``eps`` is inf.
    seed_, feature_min_, feature_max_, protects_, n_features_in_
        See :class:`~skldp.base.LDPMechanism`.

    See Also
    --------
    skldp.mechanisms.HDSMechanism : Biased square-wave reports of ``k`` features.
    skldp.mechanisms.MultiBitMechanism : One-bit reports of ``m`` features.

    Notes
    -----
    With ``k = d`` the report is dense. With sampling it is CSR when ``mid``
    is 0 everywhere and ``k / d <= 0.25``, dense otherwise.

    References
    ----------
    .. [1] N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin and
       G. Yu, "Collecting and Analyzing Multidimensional Data with Local
       Differential Privacy", ICDE 2019.
    .. [2] S. Sajadmanesh and D. Gatica-Perez, "When Differential Privacy
       Meets Graph Neural Networks", arXiv:2006.05535, 2020, App. A.3,
       eqs. (21)-(27).
    .. [3] Z. Li, R.-H. Li, M. Liao, F. Jin and G. Wang, "Privacy-Preserving
       Graph Embedding based on Local Differential Privacy", CIKM 2024, eq. (3).

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.mechanisms import PiecewiseMechanism
    >>> X = np.random.default_rng(0).random((6, 3))
    >>> mech = PiecewiseMechanism(eps=3.0, k=3, feature_range=(0, 1), random_state=0).fit(X)
    >>> mech.epsilon_, mech.epsilon_per_feature_
    (3.0, 1.0)
    >>> mech.transform(X).shape
    (6, 3)
    """

    _parameter_constraints = {**LDPMechanism._parameter_constraints,
                              "k": [Count(1), None]}

    def __init__(self, eps=1.0, *, k=None, feature_range=None, random_state=None):
        self.eps = eps
        self.k = k
        self.feature_range = feature_range
        self.random_state = random_state

    def _setup_fit(self):
        d = self.n_features_in_
        self.k_ = k = _n_sampled(self.k, "k", d, self.eps, _EPS_PER_DIM)
        self.epsilon_per_feature_ = float(self.eps) / k
        check_eps_per_coordinate(self.epsilon_per_feature_, "eps / k", type(self).__name__)
        self.output_grid_ = None
        if not np.isinf(self.epsilon_per_feature_):
            c0, c1 = _pm_estimate_map(_pm_grid(self.epsilon_per_feature_))
            half = (d / k) * ((self.feature_max_ - self.feature_min_) / 2.0)
            mid = (self.feature_max_ + self.feature_min_) / 2.0
            self.output_grid_ = (mid + half * c0, half * c1, _DECODE_ULPS,
                                 partial(_cell_values, mid=mid, half=half, c0=c0, c1=c1))

    def _epsilon_total(self):
        return float(self.eps)

    def _public_state(self):
        return {**super()._public_state(), "k": self.k_}

    def _perturb(self, X, keys):
        eps = self.epsilon_per_feature_
        if np.isinf(eps):
            return X.copy()
        n, d = X.shape
        lo, hi = self.feature_min_, self.feature_max_
        grid = _pm_grid(eps)
        if self.k_ == d:  # no sampling: dense report, processed in row blocks
            out = np.empty((n, d), dtype=np.float64)
            for rows in row_blocks(n, d, _BLOCK_ENTRIES):
                report = piecewise_encode(_dense_rows(X, rows), lo, hi, d, grid, self.seed_,
                                          keys[rows])
                out[rows] = self._decode(report)
            return out
        return self._decode(piecewise_encode(X, lo, hi, self.k_, grid, self.seed_, keys))

    def _decode(self, report, X=None):
        """Unbiased estimates ``mid + (Delta/2)(d/k) t_hat`` from the devices' cells."""
        d, k = self.n_features_in_, self.k_
        lo, hi = self.feature_min_, self.feature_max_
        delta, mid = hi - lo, (hi + lo) / 2.0
        c0, c1 = _pm_estimate_map(_pm_grid(self.epsilon_per_feature_))
        half = (d / k) * (delta / 2.0)
        if "i" not in report:
            return _cell_values(report["c"], mid, half, c0, c1)
        idx = report["i"]
        values = _cell_values(report["c"], 0.0, half[idx], c0, c1)   # deviations from mid
        return _assemble_sampled(idx.shape[0], d, idx, values, mid)

    def variance(self, x):
        """Variance of the report of ``x`` per coordinate (002 after eq. (3); 000 eq. (27)).

        Computed exactly for the mechanism on the grid; the paper's formula
        ``(Delta/2)^2 [d (a + 3) / (3k (a - 1)^2) + (d a / (k (a - 1)) - 1) t^2]``
        with ``a = e^{eps/(2k)}`` is its limit for an infinitely fine grid.

        Parameters
        ----------
        x : float or array-like broadcastable to (n_features,)
            Feature values inside ``feature_range``, original units.

        Returns
        -------
        var : ndarray
            0 when ``eps = inf``.
        """
        x = _variance_input(self, x)
        lo, hi = self.feature_min_, self.feature_max_
        shape = np.broadcast_shapes(x.shape, lo.shape)
        eps = self.epsilon_per_feature_
        if np.isinf(eps):
            return np.zeros(shape)
        d, k = self.n_features_in_, self.k_
        grid = _pm_grid(eps)
        t = 2.0 * (x - lo) / (hi - lo) - 1.0
        _, var_cell = grid.moments((t + 1.0) / 2.0)
        _, c1 = _pm_estimate_map(grid)
        second = c1 ** 2 * var_cell + t ** 2     # E[t_hat^2]; t_hat is unbiased
        inner = (d / k) * second - t ** 2        # sampled with probability k / d
        return np.broadcast_to(((hi - lo) / 2.0) ** 2 * inner, shape).copy()
