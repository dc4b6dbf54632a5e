"""The Piecewise mechanism (Wang et al. 2019) with k-of-d sampling."""

import numpy as np

from ..base import LDPMechanism
from ..utils import node_uniforms
from ._one_bit import (
    _assemble_sampled,
    _dense_rows,
    _gather,
    _n_sampled,
    _row_blocks,
    _sample_columns,
    _variance_input,
)

__all__ = ["PiecewiseMechanism"]

# Wang et al. (2019) §IV-C: k = max(1, min(d, floor(eps / 2.5))).
_EPS_PER_DIM = 2.5


def _pm_constants(eps):
    """``a = e^{eps/2}``, ``C``, and the probability of the central piece."""
    a = np.exp(eps / 2.0)
    C = (a + 1.0) / (a - 1.0)
    return a, C, a / (a + 1.0)


def _pm_draw(t, u_piece, u_pos, C, p_center):
    """Piecewise mechanism draw for inputs ``t`` in [-1, 1] (paper 000 eq. (22)).

    The density is ``p`` on ``[l(t), r(t)]`` (length ``C - 1``, total mass
    ``p (C - 1) = e^{eps/2}/(e^{eps/2}+1)``) and ``p / e^eps`` on the rest of
    ``[-C, C]`` (length ``C + 1``); both pieces are uniform.
    """
    left = (C + 1.0) / 2.0 * t - (C - 1.0) / 2.0
    center = left + (C - 1.0) * u_pos
    tail = -C + (C + 1.0) * u_pos          # position on [-C, C] with the centre cut out
    tail = np.where(tail >= left, tail + (C - 1.0), tail)
    return np.where(u_piece < p_center, center, tail)


class PiecewiseMechanism(LDPMechanism):
    r"""Piecewise mechanism with k-of-d sampling (Wang et al. 2019).

    Each user samples ``k`` of its ``d`` features uniformly without
    replacement and spends ``eps/k`` on each. A sampled feature ``x`` in
    ``[lo, hi]`` is mapped to ``t = 2 (x - lo)/Delta - 1`` in ``[-1, 1]``
    (paper 000 eq. (24)) and perturbed to ``t*`` in ``[-C, C]``,
    ``C = (e^{eps'/2}+1)/(e^{eps'/2}-1)``, from the piecewise-constant density
    of paper 000 eq. (22) / paper 002 eq. (3) with ``eps' = eps/k``. The
    report is

    .. math:: \hat x = \mathrm{mid} + \frac{\Delta}{2} \frac{d}{k} t^*

    for sampled features and ``mid = (lo + hi)/2`` for the others, which is
    unbiased (``E[t*] = t``, sampled with probability ``k/d``). Variance per
    coordinate (paper 002, text after eq. (3), in original units; with
    ``k = d`` it is paper 000 eq. (27)):

    .. math:: (\Delta/2)^2 \Big[\frac{d (a + 3)}{3k (a - 1)^2}
              + \Big(\frac{d\,a}{k (a - 1)} - 1\Big) t^2\Big], \quad a = e^{\epsilon/(2k)}.

    Privacy: each sampled coordinate is ``eps/k``-LDP, so the report is
    ``eps``-LDP per user (``epsilon_ = eps``). Paper 000 (App. A.3) applies
    PM with the full ``eps`` to every feature: reproduce it with ``k = d``
    and ``eps = d * eps_per_feature``.

    Output: with ``k = d`` (no sampling) the report is dense. With sampling,
    unsampled coordinates equal ``mid``; the report is CSR when ``mid`` is 0
    everywhere and ``k/d <= 0.25``, dense otherwise.

    Parameters
    ----------
    eps : float
        Per-user privacy budget (> 0; ``inf`` returns the clipped features).
    k : int or None, default=None
        Number of sampled features in ``1..d``; ``None`` uses Wang et al.'s
        rule ``max(1, min(d, floor(eps / 2.5)))``.
    feature_range : tuple (lo, hi) of scalars or arrays of shape (n_features,), default=None
        Public bounds; ``None`` reads them from the data with a
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
    seed_, feature_min_, feature_max_, protects_, n_features_in_
        See :class:`~skldp.base.LDPMechanism`.

    References
    ----------
    Paper 000 (``shared/papers/000_d33593cc1e28739e.txt``) App. A.3,
    eqs. (21)-(27); paper 002 (``shared/papers/002_39ad2ffba99fc09f.txt``)
    eq. (3) and the k-of-d extension after it; Wang et al., "Collecting and
    Analyzing Multidimensional Data with Local Differential Privacy", ICDE
    2019.

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

    def __init__(self, eps=1.0, *, k=None, feature_range=None, random_state=None):
        self.eps = eps
        self.k = k
        self.feature_range = feature_range
        self.random_state = random_state

    def _validate_params(self):
        d = self.n_features_in_
        self.k_ = k = _n_sampled(self.k, "k", d, self.eps, _EPS_PER_DIM)
        self.epsilon_per_feature_ = float(self.eps) / k

    def _epsilon_total(self):
        return float(self.eps)

    def _perturb(self, X, keys):
        eps = self.epsilon_per_feature_
        if np.isinf(eps):
            return X.copy()
        n, d = X.shape
        k = self.k_
        lo, hi = self.feature_min_, self.feature_max_
        delta, mid = hi - lo, (hi + lo) / 2.0
        _, C, p_center = _pm_constants(eps)
        if k == d:  # no sampling: dense report, processed in row blocks
            out = np.empty((n, d), dtype=np.float64)
            for rows in _row_blocks(n, d):
                t = 2.0 * (_dense_rows(X, rows) - lo) / delta - 1.0
                t_star = _pm_draw(t, node_uniforms(self.seed_, keys[rows], d, stream=1),
                                  node_uniforms(self.seed_, keys[rows], d, stream=2),
                                  C, p_center)
                out[rows] = mid + delta / 2.0 * t_star
            return out
        idx = _sample_columns(self.seed_, keys, d, k, stream=0)
        x = _gather(X, np.arange(n), idx)
        t = 2.0 * (x - lo[idx]) / delta[idx] - 1.0
        t_star = _pm_draw(t, node_uniforms(self.seed_, keys, k, stream=1),
                          node_uniforms(self.seed_, keys, k, stream=2), C, p_center)
        values = (d / k) * (delta[idx] / 2.0) * t_star
        return _assemble_sampled(n, d, idx, values, mid)

    def variance(self, x):
        """Variance of the report of ``x`` per coordinate (002 after eq. (3); 000 eq. (27)).

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
        a = np.exp(eps / 2.0)
        t = 2.0 * (x - lo) / (hi - lo) - 1.0
        inner = (d * (a + 3.0) / (3.0 * k * (a - 1.0) ** 2)
                 + (d * a / (k * (a - 1.0)) - 1.0) * t ** 2)
        return ((hi - lo) / 2.0) ** 2 * inner
