"""The Laplace mechanism for feature vectors (local DP)."""

import numpy as np

from ..base import LDPMechanism
from ..utils import node_uniforms
from ._one_bit import _dense_rows, _row_blocks, _variance_input

__all__ = ["LaplaceMechanism"]


class LaplaceMechanism(LDPMechanism):
    r"""Laplace mechanism: each feature plus Laplace noise, budget split over features.

    Every feature ``j`` in ``[lo_j, hi_j]`` gets the budget ``eps / d`` and is
    released as ``x_j + Lap(b_j)`` with the scale

    .. math:: b_j = \frac{\Delta_j}{\epsilon / d} = \frac{d\,(hi_j - lo_j)}{\epsilon}.

    **Sensitivity used.** The per-feature sensitivity is the width of the
    public range, ``Delta_j = hi_j - lo_j`` (two users' values of feature
    ``j`` differ by at most that much after clipping). Each coordinate is then
    ``eps/d``-LDP and, by sequential composition over the ``d`` coordinates,
    the whole report is ``eps``-LDP per user (``epsilon_ = eps``). With equal
    ranges this is the same as one vector Laplace mechanism with
    L1-sensitivity ``d * Delta``. Paper 000 (App. A.1) adds ``Lap(Delta/eps)``
    to every feature, i.e. ``eps`` *per feature*: to reproduce it pass
    ``eps = d * eps_per_feature`` (``epsilon_`` then honestly reports the
    per-user total ``d * eps_per_feature``).

    The report is unbiased with variance ``2 b_j^2`` (eq. (10)), independent
    of ``x``. It is dense by definition, so sparse input gives dense output.

    Parameters
    ----------
    eps : float
        Per-user privacy budget (> 0; ``inf`` returns the clipped features).
    feature_range : tuple (lo, hi) of scalars or arrays of shape (n_features,), default=None
        Public bounds of each feature; ``None`` reads them from the data with
        a :class:`~skldp.exceptions.PrivacyLeakWarning`. Values outside are
        clipped with a warning.
    random_state : int, RandomState, Generator or None, default=None
        Seed of the collection; reports are a pure function of the seed and
        the node id (``None``: a new collection at every fit).

    Attributes
    ----------
    scale_ : ndarray of shape (n_features,)
        Laplace scale ``b_j`` of each feature.
    epsilon_per_feature_ : float
        ``eps / d``.
    epsilon_ : float
        Per-user total, ``eps``.
    seed_, feature_min_, feature_max_, protects_, n_features_in_
        See :class:`~skldp.base.LDPMechanism`.

    References
    ----------
    Paper 000 (``shared/papers/000_d33593cc1e28739e.txt``) App. A.1,
    eqs. (9)-(10); paper 002 (``shared/papers/002_39ad2ffba99fc09f.txt``)
    §2 (the ``eps/d`` split, variance ``8 d^2 / eps^2`` on ``[-1, 1]``).

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.mechanisms import LaplaceMechanism
    >>> X = np.zeros((4, 2))
    >>> mech = LaplaceMechanism(eps=2.0, feature_range=(0, 1), random_state=0).fit(X)
    >>> mech.scale_                       # d * Delta / eps
    array([1., 1.])
    >>> mech.variance(0.3)
    array([2., 2.])
    """

    def __init__(self, eps=1.0, *, feature_range=None, random_state=None):
        self.eps = eps
        self.feature_range = feature_range
        self.random_state = random_state

    def _validate_params(self):
        d = self.n_features_in_
        self.epsilon_per_feature_ = float(self.eps) / d
        self.scale_ = (self.feature_max_ - self.feature_min_) / self.epsilon_per_feature_

    def _epsilon_total(self):
        return float(self.eps)

    def _perturb(self, X, keys):
        if np.isinf(self.epsilon_per_feature_):
            return X.copy()
        n, d = X.shape
        out = np.empty((n, d), dtype=np.float64)
        for rows in _row_blocks(n, d):
            # Inverse CDF of Lap(b): u in (0, 1) is never 0 or 1 (see utils._random).
            h = node_uniforms(self.seed_, keys[rows], d, stream=0) - 0.5
            noise = -self.scale_ * np.sign(h) * np.log1p(-2.0 * np.abs(h))
            out[rows] = _dense_rows(X, rows) + noise
        return out

    def variance(self, x):
        """Variance of the report per coordinate, ``2 b_j^2`` (eq. (10)).

        Parameters
        ----------
        x : float or array-like broadcastable to (n_features,)
            Feature values inside ``feature_range`` (the variance does not
            depend on them; the shape of the result does).

        Returns
        -------
        var : ndarray
        """
        x = _variance_input(self, x)
        shape = np.broadcast_shapes(x.shape, self.scale_.shape)
        return np.broadcast_to(2.0 * self.scale_ ** 2, shape).copy()
