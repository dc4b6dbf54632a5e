"""The one-bit mechanism of PGC (Private Graph Convolution) [Sajadmanesh & Gatica-Perez 2020, §4].

Also holds small private helpers shared by the LPGNN feature mechanisms
(``_laplace.py``, ``_multi_bit.py``, ``_piecewise.py``): row blocks that bound
temporary memory, dense views of CSR row blocks, the assembly of sampled
reports, and the ``variance`` input checks.
"""

import numpy as np

from ..base import LDPMechanism
from ..device._kinds import one_bit_encode
from ..utils._blocks import row_blocks
from ._feature_reports import _BLOCK_ENTRIES, _dense_rows, _variance_input
from ._grid import check_eps_per_coordinate

__all__ = ["OneBitMechanism"]

class OneBitMechanism(LDPMechanism):
    r"""One-bit mechanism of PGC: each feature is reported as one biased bit.

    For a feature ``x`` in ``[alpha, beta]`` a user sends one bit, 1 with a
    probability that grows linearly with ``x``, and the server rectifies it
    into an unbiased estimate in the original units. As in the paper, ``eps``
    is spent on every feature by default, so one report is ``d * eps``-LDP per
    user (``epsilon_``); ``split_eps=True`` gives every feature ``eps / d``.
    The output is dense.

    Read more in the :ref:`User Guide <one_bit_mechanism>`.

    Parameters
    ----------
    eps : float, default=1.0
        Privacy budget (> 0, ``inf`` = no noise: the clipped features are
        returned unchanged). Per feature or per user, see ``split_eps``.
    feature_range : tuple (lo, hi) of scalars or arrays of shape (n_features,), default=None
        Public bounds ``[alpha, beta]`` of each feature. ``None``: read from
        the data, charged as a read in the clear (epsilon inf; refused under a
        budget), with a :class:`~skldp.exceptions.PrivacyLeakWarning`.
        Values outside are clipped with a warning.
    split_eps : bool, default=False
        ``False``: ``eps`` per feature (as in the paper), ``epsilon_ = d * eps``.
        ``True``: ``eps / d`` per feature, ``epsilon_ = eps``.
    random_state : int, RandomState, Generator or None, default=None
        Seed of the collection. Reports are a pure function of the seed and the
        node id; ``None`` draws a new collection at every fit.

    Attributes
    ----------
    seed_ : int
        Seed of this collection.
    feature_min_, feature_max_ : ndarray of shape (n_features,)
        The bounds ``alpha`` and ``beta``.
    epsilon_per_feature_ : float
        Budget spent on each feature, ``eps'``.
    epsilon_ : float
        Per-user total: ``d * eps`` (``split_eps=False``) or ``eps``.
    protects_ : tuple of str
        ``("features",)``.
    n_features_in_ : int
        Number of features ``d``.

    See Also
    --------
    skldp.mechanisms.MultiBitMechanism : One bit for each of ``m`` sampled features.

    References
    ----------
    .. [1] S. Sajadmanesh and D. Gatica-Perez, "When Differential Privacy
       Meets Graph Neural Networks", arXiv:2006.05535, 2020, eqs. (3), (5)
       and (7), Lemma 1.

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.mechanisms import OneBitMechanism
    >>> X = np.array([[0., 1.], [1., 0.]])
    >>> mech = OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0).fit(X)
    >>> mech.epsilon_                      # 2 features x eps=1 each
    2.0
    >>> Z = mech.transform(X)
    >>> np.unique(np.round(Z, 3))           # the two rectified bit values
    array([-0.582,  1.582])
    """

    _parameter_constraints = {**LDPMechanism._parameter_constraints,
                              "split_eps": ["boolean"]}

    def __init__(self, eps=1.0, *, feature_range=None, split_eps=False, random_state=None):
        self.eps = eps
        self.feature_range = feature_range
        self.split_eps = split_eps
        self.random_state = random_state

    def _setup_fit(self):
        d = self.n_features_in_
        self.epsilon_per_feature_ = float(self.eps) / d if self.split_eps else float(self.eps)
        check_eps_per_coordinate(self.epsilon_per_feature_, "the budget per feature",
                                 type(self).__name__)

    def _epsilon_total(self):
        return self.epsilon_per_feature_ * self.n_features_in_

    def _perturb(self, X, keys):
        eps = self.epsilon_per_feature_
        if np.isinf(eps):
            return X.copy()
        n, d = X.shape
        out = np.empty((n, d), dtype=np.float64)
        for rows in row_blocks(n, d, _BLOCK_ENTRIES):
            # the device program: one biased bit per feature
            report = one_bit_encode(_dense_rows(X, rows), self.feature_min_, self.feature_max_,
                                    eps, self.seed_, keys[rows])
            out[rows] = self._decode(report)
        return out

    def _decode(self, report, X=None):
        """The rectified values (eq. (5)) of the devices' bits."""
        eps = self.epsilon_per_feature_
        lo, delta = self.feature_min_, self.feature_max_ - self.feature_min_
        # e / (e - 1) and 1 / (e - 1) without overflow (e = e^eps).
        hi_val = lo - delta / np.expm1(-eps)    # rectified y = 1: ((e+1) - 1)/(e-1)
        lo_val = lo - delta / np.expm1(eps)     # rectified y = 0: -1/(e-1)
        return np.where(report["b"], hi_val, lo_val)

    def variance(self, x):
        """Variance of the rectified report of a feature value ``x`` (eq. (7)).

        Parameters
        ----------
        x : float or array-like broadcastable to (n_features,)
            Feature values inside ``feature_range``, in original units.

        Returns
        -------
        var : ndarray
            ``Delta^2 e^eps' / (e^eps' - 1)^2 + (x - alpha)(beta - x)`` per
            coordinate (0 when ``eps = inf``).
        """
        x = _variance_input(self, x)
        lo, hi = self.feature_min_, self.feature_max_
        eps = self.epsilon_per_feature_
        if np.isinf(eps):
            return np.zeros(np.broadcast_shapes(x.shape, lo.shape))
        # e / (e - 1)^2 = 1 / (4 sinh^2(eps / 2)), which is 0 (not NaN) for huge eps.
        with np.errstate(over="ignore"):
            inv = 1.0 / (4.0 * np.sinh(eps / 2.0) ** 2)
        return (hi - lo) ** 2 * inv + (x - lo) * (hi - x)
