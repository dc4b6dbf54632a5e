"""Set-valued local DP for sparse binary features: padding-and-sampling, then a frequency oracle."""

import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions

from .._graph_data import GraphData, refusal_is_read
from ..base import (
    OUTSIDE_DOMAIN,
    LDPMechanism,
    boundary_input,
    boundary_users,
    collected_spec,
    population_of,
)
from ..device import _kinds
from ..device._kinds import set_valued_encode
from ..exceptions import InvalidParameterError, PrivacyLeakWarning
from ..utils.validation import (
    EPS_CONSTRAINT,
    RANDOM_STATE_CONSTRAINT,
    Count,
    Interval,
    check_eps,
    check_finite_features,
    check_has_features,
    check_int,
)
from ._grid import check_eps_per_coordinate

__all__ = ["SetValuedMechanism", "frequency_oracle_probabilities", "set_valued_variance"]

_ORACLES = ("auto", "grr", "oue")

_BLOCK_ENTRIES = 1 << 22  # rows x columns per block of OUE bits: bounds temporaries


def frequency_oracle_probabilities(eps, domain_size, oracle):
    """Report probabilities ``(p, q)`` of a frequency oracle on ``domain_size`` items.

    GRR (generalized randomized response) reports the true item with
    probability ``p = e^eps / (e^eps + D - 1)`` and each other item with
    ``q = 1 / (e^eps + D - 1)``. OUE (optimized unary encoding, Wang et al.,
    USENIX Security 2017) reports a bit per item: 1 with probability
    ``p = 1/2`` for the true item and ``q = 1 / (e^eps + 1)`` for each other.
    In both, item ``j`` is "seen" with probability ``q + 1[j = v] (p - q)``.
    ``eps = inf`` gives ``(1, 0)``. The devices compute the same numbers.

    Parameters
    ----------
    eps : float
        Budget of one report (> 0, ``inf`` allowed).
    domain_size : int
        Number of items ``D >= 2``.
    oracle : {"grr", "oue"}
        The frequency oracle.

    Returns
    -------
    p, q : float

    Raises
    ------
    InvalidParameterError
        If ``eps`` is not a number > 0 or ``domain_size`` not an integer >= 2.
    ValueError
        If ``oracle`` is neither ``"grr"`` nor ``"oue"``.
    """
    eps = check_eps(eps, "eps")
    domain_size = check_int(domain_size, "domain_size", 2)
    return _kinds.frequency_oracle_probabilities(eps, domain_size, oracle)


def set_valued_variance(eps, n_features, ell, oracle, share=0.0):
    """Variance of one coordinate of a user's estimate (:class:`SetValuedMechanism`).

    The estimate of coordinate ``j`` is ``ell (I_j - q) / (p - q)`` where ``I_j``
    says whether item ``j`` was seen, with probability ``P = q + pi (p - q)``
    and ``pi`` the probability that the user reports item ``j`` (its
    ``share``: ``x_j / max(|S|, ell)``). So the variance is
    ``ell^2 P (1 - P) / (p - q)^2``; ``share=0`` (an item the user does not
    hold, i.e. almost every coordinate of a sparse vector) gives the noise floor
    ``ell^2 q (1 - q) / (p - q)^2``. The domain is the ``n_features`` items and
    one dummy.

    Parameters
    ----------
    eps : float
        Per-user budget.
    n_features : int
        Number of items ``d``.
    ell : int
        Padding length.
    oracle : {"grr", "oue"}
        The frequency oracle.
    share : float or ndarray, default=0.0
        Probability ``pi`` that the user reports this item.

    Returns
    -------
    float or ndarray

    Raises
    ------
    InvalidParameterError
        If ``eps`` is not a number > 0, ``n_features`` or ``ell`` not an
        integer >= 1, or ``share`` not in [0, 1] (NaN included).
    """
    n_features = check_int(n_features, "n_features", 1)
    ell = check_int(ell, "ell", 1)
    share = np.asarray(share, dtype=np.float64)
    if not np.all((share >= 0) & (share <= 1)):
        raise InvalidParameterError(f"share must be a probability in [0, 1], got "
                                    f"{share[~((share >= 0) & (share <= 1))].ravel()[0]!r}.")
    p, q = frequency_oracle_probabilities(eps, n_features + 1, oracle)
    P = q + share * (p - q)
    return ell * ell * P * (1.0 - P) / (p - q) ** 2


def _best_oracle(eps, n_features):
    """The oracle with the smaller noise floor (GRR iff ``D - 2 < 3 e^eps``, Wang et al. 2017)."""
    if np.isinf(eps):
        return "grr"
    v = {o: set_valued_variance(eps, n_features, 1, o) for o in ("grr", "oue")}
    return min(v, key=v.get)


class SetValuedMechanism(LDPMechanism):
    """Padding-and-sampling over the items a user holds, reported through a frequency oracle.

    For sparse binary features (bag of words, page likes), each user treats
    its features as a set of items, pads it to ``ell`` items with a dummy,
    samples one item and reports it through an ``eps``-LDP frequency oracle
    (GRR or OUE). The output is the unbiased estimate of ``ell`` times the
    report probabilities: ``x`` itself for users with at most ``ell`` items,
    the row-normalised features ``x / |S|`` with ``ell=1``.

    Read more in the :ref:`User Guide <set_valued_mechanism>`.

    Parameters
    ----------
    eps : float, default=1.0
        Per-user privacy budget (the whole set). ``np.inf`` reports the
        sampled item exactly.
    ell : int or "auto", default=1
        Padding length (public); ``"auto"`` takes ``max_set_size``, or without
        it reads the largest set size from the data, charged as a read in the
        clear (epsilon inf; refused under a budget), with a
        :class:`~skldp.exceptions.PrivacyLeakWarning`.
    oracle : {"auto", "grr", "oue"}, default="auto"
        Frequency oracle. ``"auto"``: GRR when ``d - 1 < 3 e^eps``, OUE
        otherwise (the smaller noise floor).
    max_set_size : int, default=None
        Public bound on ``|S|``, used by ``ell="auto"`` only.
    binarize : float or None, default=None
        ``None``: the features must be 0 or 1 (anything else raises).
        A number ``t``: the set is ``{j : x_j > t}`` (a public threshold,
        applied on the device; e.g. ``0`` for counts).
    random_state : int, RandomState, Generator or None, default=None
        Seeds the collection. ``None`` draws a new collection (a new use of
        the budget) at every ``fit``; a ``RandomState`` or ``Generator`` gives
        the seed of one draw from it.

    Attributes
    ----------
    ell_ : int
        Padding length used.
    oracle_ : str
        ``"grr"`` or ``"oue"``.
    p_, q_ : float
        Report probabilities of the oracle over ``d + 1`` items.
    output_grid_ : tuple (offset, step) of ndarrays of shape (n_features,), or None
        Every report is ``offset + i * step`` with ``i`` in {0, 1}
        (``-ell q / (p - q)`` and ``ell (1 - q) / (p - q)``); ``None`` when
        ``eps`` is inf.
    seed_ : int
        Seed of this collection.
    feature_min_, feature_max_ : ndarray of shape (n_features,)
        0 and 1 (the binary inputs).
    epsilon_ : float
        Per-user budget of one report (``eps``).
    protects_ : tuple of str
        ``("features",)``.
    n_features_in_ : int
        Number of features (items).

    See Also
    --------
    skldp.mechanisms.HDSMechanism : Reports ``k`` random coordinates (for dense features).
    skldp.mechanisms.set_valued_variance : Variance of one coordinate of the estimate.

    Notes
    -----
    The output is a dense float64 array (every coordinate of the estimate
    carries the oracle's offset ``-ell q / (p - q)``).

    References
    ----------
    .. [1] Z. Qin, Y. Yang, T. Yu, I. Khalil, X. Xiao and K. Ren, "Heavy
       Hitter Estimation over Set-Valued Data with Local Differential
       Privacy", CCS 2016 (padding-and-sampling).
    .. [2] T. Wang, N. Li and S. Jha, "Locally Differentially Private Frequent
       Itemset Mining", IEEE S&P 2018.
    .. [3] T. Wang, J. Blocki, N. Li and S. Jha, "Locally Differentially
       Private Protocols for Frequency Estimation", USENIX Security 2017 (OUE).

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.mechanisms import SetValuedMechanism
    >>> X = (np.random.default_rng(0).random((5, 8)) < 0.3).astype(float)
    >>> mech = SetValuedMechanism(eps=1.0, ell=2, random_state=0).fit(X)
    >>> R = mech.transform(X)
    >>> R.shape, mech.oracle_, mech.epsilon_
    ((5, 8), 'grr', 1.0)
    >>> offset, step = mech.output_grid_
    >>> bool(np.all(np.isclose(R, offset) | np.isclose(R, offset + step)))
    True
    """

    _parameter_constraints = {
        "eps": [EPS_CONSTRAINT],
        "ell": [Count(1), StrOptions({"auto"})],
        "oracle": [StrOptions(set(_ORACLES))],
        "max_set_size": [Count(1), None],
        # a negative threshold would put every zero in the set
        "binarize": [Interval(Real, 0, np.inf, closed="left"), None],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(self, eps=1.0, *, ell=1, oracle="auto", max_set_size=None, binarize=None,
                 random_state=None):
        self.eps = eps
        self.ell = ell
        self.oracle = oracle
        self.max_set_size = max_set_size
        self.binarize = binarize
        self.random_state = random_state

    @property
    def feature_range(self):
        """Public input bounds: ``(0, 1)``, or ``None`` when ``ell`` is read from the data.

        Not a parameter: ``None`` says that a public value of the collection
        (``ell``, with ``ell="auto"`` and no ``max_set_size``) is read from the
        private data. :meth:`fit` then emits a
        :class:`~skldp.exceptions.PrivacyLeakWarning` and charges the users that
        read in the clear (epsilon inf) in their ledger, which
        :func:`skldp.accounting.privacy_report` reads; it does not read this
        property.
        """
        if isinstance(self.ell, str) and self.ell == "auto" and self.max_set_size is None:
            return None
        return (0.0, 1.0)

    # ------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Validate the public parameters, fix ``ell`` and the oracle, draw the collection's seed.

        Parameters
        ----------
        X : GraphData, array-like or sparse matrix of shape (n_samples, n_features)
            The users' features (only checked, and read for ``ell="auto"``
            without ``max_set_size``, with a warning).
        y : None
            Ignored.

        Returns
        -------
        self : SetValuedMechanism
        """
        spec = collected_spec(X, "features")
        if spec is not None:
            return self._fit_collected(X, spec)
        self.__dict__.pop("collected_", None)
        Xf = self._all_features(X)
        check_has_features(Xf, type(self).__name__)   # before anything is charged
        population, device_steps = boundary_input(self, X if isinstance(X, GraphData) else Xf)
        with refusal_is_read(self, "features", boundary_users(X, Xf, population),
                             OUTSIDE_DOMAIN):
            check_finite_features(Xf)
            S = self._sets(Xf)
        d = Xf.shape[1]
        self.n_features_in_ = d
        self.feature_min_, self.feature_max_ = np.zeros(d), np.ones(d)
        self._fix_ell(S, lambda: self._charge_bounds_read(
            X, Xf, population, option="ell='auto', max_set_size=None",
            read="ell (the largest set size)",
            instead="a public bound max_set_size=... or a fixed ell"))
        eps = check_eps_per_coordinate(self.eps, "eps", type(self).__name__)
        self.oracle_ = _best_oracle(eps, d) if self.oracle == "auto" else self.oracle
        self.p_, self.q_ = frequency_oracle_probabilities(eps, d + 1, self.oracle_)
        if np.isinf(eps):
            self.output_grid_ = None
        else:
            lo, step = self._values()
            self.output_grid_ = (np.full(d, lo), np.full(d, step))
        self.population_ = population_of(X if isinstance(X, GraphData) else Xf)
        self._open_collection(population, epsilon=eps, device_steps=device_steps,
                              public_state={"n_features": d, "ell": self.ell_,
                                            "oracle": self.oracle_})
        return self

    def _restore_public_state(self, spec, X):
        ps = spec.public_state
        d = self.n_features_in_ = int(ps["n_features"])
        if X is not None and X.shape[1] != d:
            raise ValueError(f"The reports have {X.shape[1]} columns; collection {spec.id} "
                             f"has {d} features.")
        self.feature_min_, self.feature_max_ = np.zeros(d), np.ones(d)
        self.ell_, self.oracle_ = int(ps["ell"]), ps["oracle"]
        eps = float(self.eps)
        self.p_, self.q_ = frequency_oracle_probabilities(eps, d + 1, self.oracle_)
        lo, step = self._values()
        self.output_grid_ = (np.full(d, lo), np.full(d, step))

    def _fix_ell(self, S, on_read):
        if isinstance(self.ell, str) and self.ell == "auto":
            if self.max_set_size is not None:
                self.ell_ = int(self.max_set_size)
                return
            warnings.warn(
                "SetValuedMechanism(ell='auto') without max_set_size reads the largest set "
                "size from the private data in the clear: the ledger charges the users a "
                "read of their features in the clear (epsilon=inf). Give a public bound "
                "(max_set_size=...) or a fixed ell.", PrivacyLeakWarning, stacklevel=3)
            on_read()   # charged (refused under a budget) before the size is read
            self.ell_ = max(1, int(S.getnnz(axis=1).max(initial=0)))
            return
        self.ell_ = int(self.ell)

    def _sets(self, X):
        """The users' sets as a binary CSR matrix with sorted indices."""
        S = sp.csr_matrix(X, dtype=np.float64, copy=True)
        S.sum_duplicates()   # (on the copy) a cell stored as [1, 1] is a 2, not two ones
        S.eliminate_zeros()
        if self.binarize is None:
            if np.any(S.data != 1.0):
                bad = S.data[S.data != 1.0][0]
                raise ValueError(
                    f"SetValuedMechanism needs binary features (0 or 1), got {bad!r}. Pass a "
                    "public threshold binarize=t (the set is {j : x_j > t}) for other values.")
        else:
            t = float(self.binarize)
            S.data = (S.data > t).astype(np.float64)
            S.eliminate_zeros()
        S.sort_indices()
        return S

    def _values(self):
        """The two values of a coordinate: not seen (``lo``) and ``lo + step`` (seen)."""
        p, q, ell = self.p_, self.q_, self.ell_
        return -ell * q / (p - q), ell / (p - q)

    def _epsilon_total(self):
        return float(self.eps)

    # ------------------------------------------------------------ perturbation
    def _device_input(self, X):
        check_finite_features(X)
        return self._sets(X)

    def _perturb(self, S, keys):
        n, d = S.shape
        keys = np.asarray(keys, dtype=np.uint64)
        inf = np.isinf(self._fitted_eps())
        oracle = "grr" if inf else self.oracle_
        if oracle == "grr":
            report = set_valued_encode(S.indptr, S.indices, d, self.ell_, "grr", self.p_,
                                       self.q_, self.seed_, keys)
            return self._decode(report)
        out = np.empty((n, d), dtype=np.float64)
        step_rows = max(1, _BLOCK_ENTRIES // max(d, 1))
        for s in range(0, n, step_rows):  # blocks of rows, not a loop over users
            B = S[s:s + step_rows]
            report = set_valued_encode(B.indptr, B.indices, d, self.ell_, "oue", self.p_,
                                       self.q_, self.seed_, keys[s:s + step_rows])
            out[s:s + step_rows] = self._decode(report)
        return out

    def _decode(self, report, X=None):
        """The unbiased estimate ``ell (I_j - q) / (p - q)`` of the devices' reports: the
        item seen (GRR, ``d`` = the dummy) or the bits (OUE)."""
        d = self.n_features_in_
        lo, step = (0.0, float(self.ell_)) if np.isinf(self._fitted_eps()) else self._values()
        if "b" in report:
            return lo + step * np.asarray(report["b"], dtype=np.float64)
        y = np.asarray(report["v"])
        out = np.full((len(y), d), lo, dtype=np.float64)
        seen = y < d
        out[np.flatnonzero(seen), y[seen]] += step
        return out

    # ------------------------------------------------------------- moments
    def _shares(self, X):
        S = self._sets(np.atleast_2d(X) if not sp.issparse(X) else X)
        if S.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have {self.n_features_in_} features, got {S.shape[1]}.")
        m = np.maximum(np.diff(S.indptr), self.ell_).astype(np.float64)
        return S.multiply(1.0 / m[:, None]).toarray()

    def mean(self, X):
        """Expected report of users with features ``X``: ``ell x / max(|S|, ell)``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_users, n_features)
            Binary features (or values thresholded by ``binarize``).

        Returns
        -------
        ndarray of shape (n_users, n_features)
        """
        self._check_fitted()
        return self.ell_ * self._shares(X)

    def variance(self, X):
        """Variance of each coordinate of the report (:func:`set_valued_variance`).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_users, n_features)
            Binary features (or values thresholded by ``binarize``).

        Returns
        -------
        ndarray of shape (n_users, n_features)
        """
        self._check_fitted()
        share = self._shares(X)
        if np.isinf(self._fitted_eps()):
            return self.ell_ ** 2 * share * (1.0 - share)
        P = self.q_ + share * (self.p_ - self.q_)
        return self.ell_ ** 2 * P * (1.0 - P) / (self.p_ - self.q_) ** 2
