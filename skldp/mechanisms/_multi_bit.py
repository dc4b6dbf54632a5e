"""The multi-bit mechanism of LPGNN (sample m of d features, one bit each)."""

import numpy as np

from ..base import LDPMechanism
from ..device._kinds import multi_bit_encode
from ..utils.validation import Count
from ._feature_reports import _assemble_sampled, _n_sampled, _variance_input
from ._grid import check_eps_per_coordinate

__all__ = ["MultiBitMechanism"]

# Wang et al. (2019) / LPGNN: below eps ~ 2.18 one sampled dimension is optimal.
_EPS_PER_DIM = 2.18


class MultiBitMechanism(LDPMechanism):
    r"""Multi-bit mechanism: m sampled features, each reported as a +-1 bit.

    Each user samples ``m`` of its ``d`` features and reports each sampled
    one as a bit ``s = +-1`` at budget ``eps / m``, +1 with a probability that
    grows linearly with the feature; the rectifier returns an unbiased
    estimate in the original units, and unsampled features report the middle
    of their range. One report is ``eps``-LDP per user.

    Read more in the :ref:`User Guide <multi_bit_mechanism>`.

    Parameters
    ----------
    eps : float, default=1.0
        Per-user privacy budget (> 0). ``inf`` returns the clipped features
        unchanged (no sampling, no noise).
    m : int or None, default=None
        Number of sampled features, in ``1..d``. ``None`` uses LPGNN's rule
        ``max(1, min(d, floor(eps / 2.18)))``.
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
    m_ : int
        Number of sampled features.
    epsilon_per_feature_ : float
        ``eps / m_``.
    epsilon_ : float
        Per-user total, ``eps``.
    seed_, feature_min_, feature_max_, protects_, n_features_in_
        See :class:`~skldp.base.LDPMechanism`.

    See Also
    --------
    skldp.mechanisms.OneBitMechanism : One bit for every feature.
    skldp.models.LPGNNClassifier : The model LPGNN trains on these reports.

    Notes
    -----
    The report is CSR with ``m`` entries per row when the middle of every
    range is 0 and ``m / d <= 0.25``, dense otherwise.

    References
    ----------
    .. [1] W. Lin, B. Li and C. Wang, "Towards Private Learning on
       Decentralized Graphs with Local Differential Privacy", IEEE TIFS 2022,
       eqs. (7)-(8) and §V.
    .. [2] S. Sajadmanesh and D. Gatica-Perez, "Locally Private Graph Neural
       Networks", ACM CCS 2021.
    .. [3] Z. Li, R.-H. Li, M. Liao, F. Jin and G. Wang, "Privacy-Preserving
       Graph Embedding based on Local Differential Privacy", CIKM 2024, eq. (4).

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.mechanisms import MultiBitMechanism
    >>> X = np.random.default_rng(0).random((5, 10))
    >>> mech = MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0).fit(X)
    >>> mech.m_, mech.epsilon_
    (1, 1.0)
    >>> Z = mech.transform(X)
    >>> int((Z != 0.5).sum())              # one sampled feature per user
    5
    """

    _parameter_constraints = {**LDPMechanism._parameter_constraints,
                              "m": [Count(1), None]}

    def __init__(self, eps=1.0, *, m=None, feature_range=None, random_state=None):
        self.eps = eps
        self.m = m
        self.feature_range = feature_range
        self.random_state = random_state

    def _setup_fit(self):
        d = self.n_features_in_
        self.m_ = m = _n_sampled(self.m, "m", d, self.eps, _EPS_PER_DIM)
        self.epsilon_per_feature_ = float(self.eps) / m
        check_eps_per_coordinate(self.epsilon_per_feature_, "eps / m",
                                 type(self).__name__)

    def _epsilon_total(self):
        return float(self.eps)

    def _public_state(self):
        return {**super()._public_state(), "m": self.m_}

    def _perturb(self, X, keys):
        eps = self.epsilon_per_feature_
        if np.isinf(eps):
            return X.copy()
        # the device program: m sampled columns and a +-1 bit each
        report = multi_bit_encode(X, self.feature_min_, self.feature_max_, self.m_, eps,
                                  self.seed_, keys)
        return self._decode(report)

    def _decode(self, report, X=None):
        """The rectified estimate (Lin et al., eq. (8)) of the devices' sampled bits."""
        idx, bits = report["i"], report["b"]
        n, d, m = idx.shape[0], self.n_features_in_, self.m_
        lo, hi = self.feature_min_, self.feature_max_
        delta, mid = hi - lo, (hi + lo) / 2.0
        sign = np.where(bits, 1.0, -1.0)
        values = sign * (d / m) * (delta[idx] / 2.0) / np.tanh(self.epsilon_per_feature_ / 2.0)
        return _assemble_sampled(n, d, idx, values, mid)

    def variance(self, x):
        """Variance of the rectified report of ``x`` per coordinate (002, after eq. (4)).

        Parameters
        ----------
        x : float or array-like broadcastable to (n_features,)
            Feature values inside ``feature_range``, original units.

        Returns
        -------
        var : ndarray
            ``(d/m) (Delta/2)^2 c^2 - (x - mid)^2`` with
            ``c = (e^{eps/m}+1)/(e^{eps/m}-1)`` (0 when ``eps = inf``).
        """
        x = _variance_input(self, x)
        lo, hi = self.feature_min_, self.feature_max_
        shape = np.broadcast_shapes(x.shape, lo.shape)
        eps = self.epsilon_per_feature_
        if np.isinf(eps):
            return np.zeros(shape)
        d, m = self.n_features_in_, self.m_
        c = 1.0 / np.tanh(eps / 2.0)   # (e + 1)/(e - 1), stable for any eps
        return (d / m) * ((hi - lo) / 2.0) ** 2 * c ** 2 - (x - (hi + lo) / 2.0) ** 2
