"""The Laplace mechanism for feature vectors (local DP)."""

import numpy as np

from ..base import LDPMechanism
from ..device._kinds import LAPLACE_MAX_EPS_PER_COORDINATE, laplace_encode, laplace_grid
from ..utils._blocks import row_blocks
from ._feature_reports import _BLOCK_ENTRIES, _dense_rows, _variance_input
from ._grid import check_eps_per_coordinate, discrete_laplace_variance

__all__ = ["LaplaceMechanism"]


class LaplaceMechanism(LDPMechanism):
    r"""Laplace mechanism: each feature plus Laplace noise, budget split over features.

    Every feature ``j`` in ``[lo_j, hi_j]`` gets the budget ``eps / d`` and is
    released as ``x_j + Lap(b_j)`` with the scale

    .. math:: b_j = \frac{\Delta_j}{\epsilon / d} = \frac{d\,(hi_j - lo_j)}{\epsilon},

    an unbiased report of variance ``2 b_j^2``; the whole report is
    ``eps``-LDP per user. ``eps / d`` must lie in ``[2^-30, 30]``: below, the
    noise scale leaves the sampler's exact range; above, the fixed clamp of
    the reports (``max(1, 50 - eps/d)`` noise scales beyond the range) would
    bias them (at ``eps / d <= 30`` it moves a mass below ``e^-20``). The
    noise is discrete Laplace noise on a fixed grid, so that the guarantee
    holds exactly in floating point. The output is dense.

    Read more in the :ref:`User Guide <laplace_mechanism>`.

    Parameters
    ----------
    eps : float, default=1.0
        Per-user privacy budget (> 0; ``inf`` returns the clipped features).
    feature_range : tuple (lo, hi) of scalars or arrays of shape (n_features,), default=None
        Public bounds of each feature. ``None``: read from the data, charged
        as a read in the clear (epsilon inf; refused under a budget), with a
        :class:`~skldp.exceptions.PrivacyLeakWarning`. Values outside are
        clipped with a warning.
    random_state : int, RandomState, Generator or None, default=None
        Seed of the collection; reports are a pure function of the seed and
        the node id (``None``: a new collection at every fit).

    Attributes
    ----------
    scale_ : ndarray of shape (n_features,)
        Laplace scale ``b_j`` of each feature.
    grid_cells_ : int
        Cells ``N`` per feature range.
    output_grid_ : tuple (offset, step) of ndarrays of shape (n_features,)
        Every report of feature ``j`` is ``offset[j] + k * step[j]`` for an
        integer ``k`` (``lo_j`` and ``Delta_j / N``), whatever the input.
    epsilon_per_feature_ : float
        ``eps / d``.
    epsilon_ : float
        Per-user total, ``eps``.
    seed_, feature_min_, feature_max_, protects_, n_features_in_
        See :class:`~skldp.base.LDPMechanism`.

    See Also
    --------
    skldp.mechanisms.PiecewiseMechanism : Bounded noise, with sampling of ``k`` features.

    References
    ----------
    .. [1] S. Sajadmanesh and D. Gatica-Perez, "When Differential Privacy
       Meets Graph Neural Networks", arXiv:2006.05535, 2020, App. A.1,
       eqs. (9)-(10).
    .. [2] Z. Li, R.-H. Li, M. Liao, F. Jin and G. Wang, "Privacy-Preserving
       Graph Embedding based on Local Differential Privacy", CIKM 2024, §2.

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.mechanisms import LaplaceMechanism
    >>> X = np.zeros((4, 2))
    >>> mech = LaplaceMechanism(eps=2.0, feature_range=(0, 1), random_state=0).fit(X)
    >>> mech.scale_                       # d * Delta / eps
    array([1., 1.])
    >>> np.round(mech.variance(0.3), 6)
    array([2., 2.])
    """

    def __init__(self, eps=1.0, *, feature_range=None, random_state=None):
        self.eps = eps
        self.feature_range = feature_range
        self.random_state = random_state

    def _setup_fit(self):
        d = self.n_features_in_
        eps_j = self.epsilon_per_feature_ = float(self.eps) / d
        if np.isfinite(eps_j) and eps_j > LAPLACE_MAX_EPS_PER_COORDINATE:
            # the device clamps to max(1, 50 - eps/d) noise scales beyond the range (part
            # of the wire format): above 30 the clamp biases reports near the bounds
            raise ValueError(
                f"LaplaceMechanism: eps / n_features is {eps_j:.6g}, above "
                f"{LAPLACE_MAX_EPS_PER_COORDINATE:g}. The reports are clamped to "
                "max(1, 50 - eps/d) noise scales beyond the range, which biases the "
                "reports of values near the bounds above that budget. Use "
                f"eps <= {LAPLACE_MAX_EPS_PER_COORDINATE:g} * n_features, or eps=np.inf "
                "for no noise.")
        check_eps_per_coordinate(eps_j, "eps / n_features", type(self).__name__)   # the floor
        delta = self.feature_max_ - self.feature_min_
        self.scale_ = delta / eps_j
        if np.isinf(eps_j):
            self.grid_cells_ = None
            self.output_grid_ = None
            return
        # N = 2^20 cells per range, fewer when the noise is so wide that the scale in
        # cells would exceed 2^30 (where the float sampler's error bound would grow).
        self.grid_cells_ = laplace_grid(eps_j)[0]
        self.output_grid_ = (self.feature_min_.copy(), delta / self.grid_cells_)

    def _epsilon_total(self):
        return float(self.eps)

    def _noise_cells(self):
        """Scale ``s`` of the discrete Laplace noise, in grid cells."""
        return self.grid_cells_ / self.epsilon_per_feature_

    def _perturb(self, X, keys):
        if np.isinf(self.epsilon_per_feature_):
            return X.copy()
        n, d = X.shape
        out = np.empty((n, d), dtype=np.float64)
        for rows in row_blocks(n, d, _BLOCK_ENTRIES):
            # the device program: rounded to the grid, plus discrete Laplace noise, clamped
            # to a fixed range whose edge cells keep a probability of about e^-51 or more
            report = laplace_encode(_dense_rows(X, rows), self.feature_min_, self.feature_max_,
                                    self.epsilon_per_feature_, self.seed_, keys[rows])
            out[rows] = self._decode(report)
        return out

    def _decode(self, report, X=None):
        """The devices' grid cells in original units."""
        offset, step = self.output_grid_
        return offset + report["c"] * step

    def variance(self, x):
        """Variance of the report per coordinate, ``2 b_j^2`` (eq. (10)) on the grid.

        Exactly ``(Delta_j/N)^2 (f (1 - f) + 2q/(1-q)^2)`` with ``f`` the
        fractional grid position of ``x`` (the randomized rounding) and
        ``q = exp(-1/s)`` (the discrete Laplace noise), which differs from
        ``2 b_j^2`` by a relative ``1 / (12 s^2)`` or less: below ``1e-10``
        at every budget allowed (``s = N / (eps/d) >= 2^15``).

        Parameters
        ----------
        x : float or array-like broadcastable to (n_features,)
            Feature values inside ``feature_range``. The variance depends on
            them through the rounding term ``f (1 - f)`` only (at most a
            quarter of a grid cell squared); the shape of the result follows
            their shape.

        Returns
        -------
        var : ndarray
        """
        x = _variance_input(self, x)
        shape = np.broadcast_shapes(x.shape, self.scale_.shape)
        if np.isinf(self.epsilon_per_feature_):
            return np.zeros(shape)
        offset, step = self.output_grid_
        v = (x - offset) / step
        f = v - np.floor(v)
        return np.broadcast_to(step ** 2 * (f * (1.0 - f)
                                            + discrete_laplace_variance(self._noise_cells())),
                               shape).copy()
