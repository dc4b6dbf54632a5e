"""A public, data-independent dimension reduction applied on the device before a mechanism."""

from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils.validation import check_is_fitted

from .._graph_data import GraphData, refusal_is_read
from ..base import GraphTransformerMixin, NumberedColumnsMixin
from ..device._steps import feature_hashing_map
from ..exceptions import InvalidParameterError
from ..utils.validation import (
    RANDOM_STATE_CONSTRAINT,
    Count,
    Interval,
    check_feature_array,
    check_finite_features,
)

__all__ = ["FeatureHashing"]


class FeatureHashing(NumberedColumnsMixin, GraphTransformerMixin, BaseEstimator):
    """Signed feature hashing to ``n_components`` columns, clipped to a public range.

    Hashing the features with a public map fixed in advance, the same for
    every user (feature ``i`` goes to column ``h(i)`` with sign ``s(i)``),
    lets the mechanism that follows spend its budget on ``n_components``
    coordinates instead of ``d``. It reads no private data and costs no
    budget; it is not a mechanism and must be followed by one, given
    ``output_range_`` as its ``feature_range``.

    Read more in the :ref:`User Guide <feature_hashing>`.

    Parameters
    ----------
    n_components : int, default=64
        Number of output columns.
    clip : float, default=1.0
        Hashed values are clipped to ``[-clip, clip]``. With sparse binary
        features (bag of words) few words share a column, so 1 keeps most of
        the signal.
    random_state : int, default=0
        Seed of the public hash (not a secret: every user must apply the same map).

    Attributes
    ----------
    bucket_ : ndarray of shape (n_features,)
        Output column of each input feature.
    sign_ : ndarray of shape (n_features,)
        Sign (+1 or -1) of each input feature.
    output_range_ : tuple of float
        ``(-clip, clip)``.
    n_features_in_ : int
        Number of input features.

    See Also
    --------
    skldp.mechanisms.group_features : Group binary columns into categorical features.

    References
    ----------
    .. [1] K. Weinberger, A. Dasgupta, J. Langford, A. Smola and J. Attenberg,
       "Feature Hashing for Large Scale Multitask Learning", ICML 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.mechanisms import FeatureHashing
    >>> X = np.eye(6)
    >>> FeatureHashing(n_components=3).fit(X).transform(X).shape
    (6, 3)
    """

    _graph_requirements = {}
    _device_side = True   # a public map of each user's own row: runs on the device

    _parameter_constraints = {
        "n_components": [Count(1)],
        "clip": [Interval(Real, 0, np.inf, closed="neither")],
        "random_state": RANDOM_STATE_CONSTRAINT,   # an integer only: checked in fit, with why
    }

    def __init__(self, n_components=64, *, clip=1.0, random_state=0):
        self.n_components = n_components
        self.clip = clip
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fix the public map for the number of features of ``X`` (its values are not read)."""
        if not isinstance(self.random_state, (int, np.integer)) or isinstance(self.random_state,
                                                                             bool):
            raise InvalidParameterError(
                "random_state must be an integer: the hash is public and every user must "
                f"apply the same one; got {self.random_state!r}.")
        if not isinstance(X, GraphData):
            # scikit-learn's 2-D check (a 1-D X would fail below on X.shape[1])
            X = check_feature_array(X, ensure_all_finite=False)
        d = X.shape[1]
        # the map its collections' specs ship to the devices (skldp.device never draws it)
        self.bucket_, self.sign_ = feature_hashing_map(d, self.n_components, self.random_state)
        self.output_range_ = (-float(self.clip), float(self.clip))
        self.n_features_in_ = d
        return self

    def _device_public_state(self):
        """The map a spec ships for the devices (version 5): each input column's output
        column and sign, in column order."""
        return {"columns": self.bucket_.tolist(), "signs": self.sign_.astype(int).tolist()}

    def _hash(self, X):
        check_finite_features(X)
        d = self.n_features_in_
        H = sp.csr_matrix((self.sign_, (np.arange(d), self.bucket_)),
                          shape=(d, self.n_components))
        Z = X @ H
        Z = Z.toarray() if sp.issparse(Z) else np.asarray(Z, dtype=np.float64)
        return np.clip(Z, -self.clip, self.clip)

    def transform(self, X):
        """Hash and clip the features of every user (of the whole graph for a GraphData)."""
        check_is_fitted(self, "bucket_")
        if isinstance(X, GraphData):
            return super().transform(X)
        X = check_feature_array(X, ensure_all_finite=False)
        self._check_n_features(X)
        return self._hash(X)

    _column_prefix = "hash"

    def _n_columns_out(self):
        # hashing makes new columns: the input names would not match their number
        return self.n_components

    def _transform_graph(self, G):
        with refusal_is_read(self, "features", G, "non-finite features"):
            Z = self._hash(G.features)
        return G.with_features(Z)
