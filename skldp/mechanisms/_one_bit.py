"""The one-bit mechanism of PGC (Private Graph Convolution) [Sajadmanesh & Gatica-Perez 2020, §4].

Also holds small private helpers shared by the LPGNN feature mechanisms
(``_laplace.py``, ``_multi_bit.py``, ``_piecewise.py``): row blocks that bound
temporary memory, dense views of CSR row blocks, the assembly of sampled
reports, and the ``variance`` input checks.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from ..base import LDPMechanism
from ..device._kinds import one_bit_encode
from ..device._random import _FLOYD_MAX_K, sample_columns  # noqa: F401
from ..utils._blocks import row_blocks
from ..utils.validation import check_int
from ._grid import check_eps_per_coordinate

__all__ = ["OneBitMechanism"]

# Entries (rows x columns) processed per block: bounds the temporaries
# (uniforms, scaled features) to 512 KiB each whatever the graph size, so they
# stay in cache (measured 2x faster on facebook than 32 MiB blocks).
_BLOCK_ENTRIES = 1 << 16


def _dense_rows(X, rows):
    """Dense float64 copy of a row block of a dense or CSR matrix."""
    B = X[rows]
    return B.toarray() if sp.issparse(B) else np.asarray(B, dtype=np.float64)


def _gather(X, rows, cols):
    """``X[rows[i], cols[i, j]]`` for a dense or CSR ``X`` (vectorised)."""
    if sp.issparse(X):
        r = np.repeat(rows, cols.shape[1])
        vals = sp.csr_matrix(X)[r, cols.ravel()]
        return np.asarray(vals, dtype=np.float64).reshape(cols.shape)
    return np.asarray(X, dtype=np.float64)[rows[:, None], cols]


def _sample_columns(seed, keys, d, k, stream=0):
    """k distinct columns out of d per node (increasing), as the devices draw them
    (:func:`skldp.device._random.sample_columns`: Floyd's algorithm for small k)."""
    return sample_columns(seed, keys, d, k, stream=stream)


# Sampled reports are returned as CSR when every unsampled coordinate is 0
# (the feature range is centred on 0) and at most this fraction is sampled.
_SPARSE_OUTPUT_MAX_DENSITY = 0.25


def _assemble_sampled(n, d, idx, values, mid):
    """Report of a k-of-d sampling mechanism in original units.

    ``idx`` (n, k) are the sampled columns, ``values`` (n, k) the reported
    deviations from the centre ``mid`` of each column's range; unsampled
    coordinates report ``mid`` (zero deviation). Returns CSR when ``mid`` is
    0 everywhere and the density k/d is small, else a dense array.
    """
    k = idx.shape[1]
    if np.all(mid == 0) and k / d <= _SPARSE_OUTPUT_MAX_DENSITY:
        order = np.argsort(idx, axis=1, kind="stable")
        idx = np.take_along_axis(idx, order, axis=1)
        values = np.take_along_axis(values, order, axis=1)
        indptr = np.arange(0, n * k + 1, k, dtype=np.int64)
        out = sp.csr_matrix((values.ravel(), idx.ravel(), indptr), shape=(n, d))
        out.eliminate_zeros()
        return out
    out = np.empty((n, d), dtype=np.float64)
    out[...] = mid
    out[np.arange(n)[:, None], idx] += values
    return out


def _n_sampled(value, name, d, eps, eps_per_dim):
    """Number of sampled dimensions: ``value`` (in 1..d) if given.

    Otherwise max(1, min(d, floor(eps / eps_per_dim))).

    The default is the rule of Wang et al. (2019) used by LPGNN; ``eps = inf`` samples all d.
    """
    k = check_int(value, name, 1, d, maximum_is=f"n_features={d}",
                  allow_none=True)
    if k is not None:
        return k
    eps = float(eps)
    return d if np.isinf(eps) else max(1, min(d, int(np.floor(eps / eps_per_dim))))


def _variance_input(mech, x):
    """Broadcast ``x`` (scalar, (d,) or (n, d)) against the fitted bounds."""
    check_is_fitted(mech, "epsilon_")
    x = np.asarray(x, dtype=np.float64)
    try:
        np.broadcast_shapes(x.shape, mech.feature_min_.shape)
    except ValueError:
        raise ValueError(f"x must be a scalar or have {mech.n_features_in_} columns, got "
                         f"shape {x.shape}.") from None
    if not np.all(np.isfinite(x)):
        raise ValueError("x must be finite.")
    if np.any(x < mech.feature_min_) or np.any(x > mech.feature_max_):
        raise ValueError("x must lie inside feature_range (the mechanism clips inputs, so "
                         "the variance of an out-of-range value is that of its clipped value).")
    return x


class OneBitMechanism(LDPMechanism):
    r"""One-bit mechanism of PGC: each feature is reported as one biased bit.

    For a feature ``x`` in ``[alpha, beta]`` (``Delta = beta - alpha``) a user
    sends the bit ``y`` with [Sajadmanesh & Gatica-Perez, arXiv 2020, Eq. 3]

    .. math:: P(y=1) = \frac{1}{e^{\epsilon'}+1} + \frac{x-\alpha}{\Delta}
              \frac{e^{\epsilon'}-1}{e^{\epsilon'}+1},

    and the server rectifies it into the unbiased estimate (eq. (5))
    ``y* = ((e^eps' + 1) y - 1) / (e^eps' - 1) * Delta + alpha``, in the
    original feature units. Its variance is eq. (7),
    ``Delta^2 e^eps' / (e^eps' - 1)^2 + (x - alpha)(beta - x)``.

    **Privacy budget.** [Sajadmanesh & Gatica-Perez, arXiv 2020] spends the full ``eps`` on
    *every* feature
    (``eps' = eps``, ``split_eps=False``, the default, as in the paper). One
    user then reveals ``d`` bits, each ``eps``-LDP, so by sequential
    composition the honest per-user guarantee is ``d * eps``, and that is
    what ``epsilon_`` reports (e.g. 1433 for Cora at ``eps=1``). With
    ``split_eps=True`` each feature gets ``eps' = eps / d`` and the per-user
    total is ``eps``.

    The report is dense by definition (every feature yields a bit), so sparse
    input gives a dense output.

    Parameters
    ----------
    eps : float
        Privacy budget (> 0, ``inf`` = no noise: the clipped features are
        returned unchanged). Per feature or per user, see ``split_eps``.
    feature_range : tuple (lo, hi) of scalars or arrays of shape (n_features,), default=None
        Public bounds ``[alpha, beta]`` of each feature. ``None`` reads them
        from the data with a :class:`~skldp.exceptions.PrivacyLeakWarning`.
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

    References
    ----------
    Sajadmanesh & Gatica-Perez, "When Differential Privacy Meets Graph Neural
    Networks", arXiv:2006.05535, 2020:
    eqs. (3) (bit probabilities), (5) (rectifier), (7) (variance), Lemma 1
    (LDP), App. A.2 (derivation from Duchi et al.'s mechanism).

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

    def __init__(self, eps=1.0, *, feature_range=None, split_eps=False, random_state=None):
        self.eps = eps
        self.feature_range = feature_range
        self.split_eps = split_eps
        self.random_state = random_state

    def _validate_params(self):
        if not isinstance(self.split_eps, (bool, np.bool_)):
            raise TypeError(f"split_eps must be a bool, got {self.split_eps!r}.")
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
