"""Base classes: graph transformers, local DP mechanisms, NodeWise, graph classifiers."""

import functools

import numpy as np
import scipy.sparse as sp
from joblib import hash as joblib_hash
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, clone
from sklearn.utils._set_output import _wrap_data_with_container
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d

from ._graph_data import GraphData
from .utils._random import array_fingerprint, collection_seed
from .utils.validation import (
    check_eps,
    check_finite_features,
    check_graph_data,
    check_input_features,
    clip_to_range,
    input_feature_names,
    resolve_feature_range,
)

__all__ = ["GraphTransformerMixin", "LDPMechanism", "NodeWise", "GraphClassifierMixin",
           "fitted_token", "draw_collection_seed", "check_population", "population_of",
           "saved_positions"]


def draw_collection_seed(estimator, *public_state, random_state=None, role=None):
    """``seed_`` of the collection that ``estimator`` makes (Design page, "Per-user determinism").

    The collection's identity is the estimator's class, its parameters other than
    ``random_state``, the public values it fixed in ``fit`` (``public_state``, e.g.
    the bounds) and an optional ``role`` (e.g. ``"labels"`` for a randomiser built
    inside a classifier). See :func:`skldp.utils.collection_seed`.
    """
    params = {k: v for k, v in estimator.get_params(deep=False).items() if k != "random_state"}
    identity = (type(estimator).__module__, type(estimator).__qualname__, params,
                public_state, role)
    rs = estimator.random_state if random_state is None else random_state
    return collection_seed(rs, identity)


def saved_positions(saved_keys, keys, owner):
    """Positions of ``keys`` among the saved users; a clear error for any other user."""
    order = np.argsort(saved_keys, kind="stable")
    pos = np.clip(np.searchsorted(saved_keys, keys, sorter=order), 0, len(order) - 1)
    rows = order[pos]
    missing = saved_keys[rows] != keys
    if np.any(missing):
        raise ValueError(
            f"{owner} was saved without its secret (skldp.privacy.forget_secrets), so it "
            f"holds the reports of the users seen then only; {int(missing.sum())} user(s) "
            "have no report. New users need a new collection (fit a new mechanism).")
    return rows


def population_of(X):
    """Who the rows of ``X`` are: ``None`` for a GraphData with node ids, else a content hash.

    See :attr:`skldp.GraphData.population`; a plain array is fingerprinted whole.
    """
    if isinstance(X, GraphData):
        return X.population
    return array_fingerprint(X)


def check_population(estimator, X):
    """Refuse data whose users differ from the ones the collection was drawn for.

    Without node ids a user is known only by its position; row ``i`` of another
    array (or of another graph without ``node_ids``) is another user and would
    receive the same noise, so that one known value would reveal the other.
    """
    expected = getattr(estimator, "population_", None)
    got = population_of(X)
    if got == expected:
        return
    name = type(estimator).__name__
    if isinstance(X, GraphData) or expected is None:
        raise ValueError(
            f"{name} was fitted on other users: without node_ids a user is known only by "
            "its position, and position i of different data is a different user who must "
            "not receive the same noise. Build every GraphData with the users' node_ids "
            "(GraphData(X, A, node_ids=ids)) or transform the data the mechanism was fitted "
            "on.")
    raise ValueError(
        f"{name} was fitted on another array. Plain arrays carry no user ids, so row i is "
        "keyed by its position and row i of another array (another user) would receive the "
        "same noise. Transform the very array the mechanism was fitted on, or wrap the "
        "users' features in GraphData(X, node_ids=ids) and index it (G[rows]).")


#: Active on-disk caches of whole-graph results (``skldp.experiments.GraphCache``); the last wins.
_GRAPH_CACHES = []


def fitted_token(estimator):
    """A hash of an estimator's parameters and fitted state.

    Used as the memo key of whole-graph results (Design page, "Memoisation of
    whole-graph steps"): two
    estimators with the same token produce the same output on the same graph.
    """
    params = {k: v for k, v in estimator.get_params(deep=False).items()
              if k != "random_state" or not hasattr(estimator, "seed_")}
    state = {k: v for k, v in vars(estimator).items()
             if k.endswith("_") and not k.startswith("_")}
    return joblib_hash((type(estimator).__module__, type(estimator).__qualname__, params, state))


def _records_feature_names(fit):
    """Wrap ``fit`` so that it sets ``feature_names_in_`` as scikit-learn does.

    The names of ``X`` (a GraphData's ``feature_names``, a DataFrame's string
    columns) are stored after a successful fit; unnamed input removes those of
    an earlier fit.
    """
    if getattr(fit, "_skldp_records_names", False):
        return fit

    @functools.wraps(fit)
    def wrapped(self, *args, **kwargs):
        out = fit(self, *args, **kwargs)
        names = input_feature_names(args[0] if args else kwargs.get("X"))
        if names is None:
            self.__dict__.pop("feature_names_in_", None)
        else:
            self.feature_names_in_ = names
        return out

    wrapped._skldp_records_names = True
    return wrapped


def _wraps_plain_output(method):
    """Wrap ``transform``: plain-array outputs follow ``set_output``; GraphData never."""
    if getattr(method, "_skldp_wraps_output", False):
        return method

    @functools.wraps(method)
    def wrapped(self, X, *args, **kwargs):
        return self._wrap_plain_output(method(self, X, *args, **kwargs), X)

    wrapped._skldp_wraps_output = True
    return wrapped


class GraphTransformerMixin(TransformerMixin, auto_wrap_output_keys=None):
    """Mixin for transformers that take and return :class:`~skldp.GraphData`.

    Subclasses implement ``_transform_graph(G_full)`` returning a GraphData
    over all nodes (usually ``G_full.with_features(Z)``). :meth:`transform`
    computes it once per (fitted step, graph), keeps it in the graph's memo and
    returns the rows of the input view.

    **Input checks.** ``_graph_requirements`` lists what :meth:`fit` and
    :meth:`transform` require of the graph (see
    ``skldp.utils.validation.check_graph_data``); by default a known
    adjacency and finite features (checked once per graph: NaN or inf would
    spread to every neighbour). Steps that handle missing values themselves
    (:class:`NodeWise`) or check them with their own messages (mechanisms)
    override it.

    **Feature names** follow scikit-learn: ``fit`` on a GraphData with
    ``feature_names`` (or a pandas DataFrame) sets ``feature_names_in_``, and
    :meth:`get_feature_names_out` gives the output names (the input names by
    default: a step that keeps its columns). The output GraphData carries
    them, so ``G.to_pandas()`` after a pipeline has the right columns; a step
    that makes new columns names them in its ``get_feature_names_out``.

    **Output containers.** Scikit-learn's automatic output wrapping is
    disabled for every subclass (Design page, "Output wrapping"): a GraphData is
    never converted, so ``set_config(transform_output="pandas")`` and
    ``set_output(transform="pandas")`` leave graph pipelines intact. Dense
    plain-array outputs (a step used on arrays) follow these settings like any
    scikit-learn transformer; sparse ones are returned as they are.
    """

    _graph_requirements = {"require_adjacency": True, "require_finite": True}

    def __init_subclass__(cls, auto_wrap_output_keys=None, **kwargs):
        # scikit-learn would wrap transform and convert GraphData outputs: opt out, and
        # wrap with the GraphData-aware version instead (set_output stays available).
        super().__init_subclass__(auto_wrap_output_keys=None, **kwargs)
        cls._sklearn_auto_wrap_output_keys = {"transform"}
        if "fit" in cls.__dict__:
            cls.fit = _records_feature_names(cls.__dict__["fit"])
        for method in ("transform", "fit_transform"):
            if method in cls.__dict__:
                setattr(cls, method, _wraps_plain_output(cls.__dict__[method]))

    @_records_feature_names
    def fit(self, X, y=None):
        """Check the input; most propagation steps learn nothing."""
        G = check_graph_data(X, self, **self._graph_requirements)
        self.n_features_in_ = G.shape[1]
        return self

    @_wraps_plain_output
    def transform(self, X):
        """Apply the step over the whole graph and return the rows of ``X``."""
        check_is_fitted(self)
        G = check_graph_data(X, self, **self._graph_requirements)
        self._check_n_features(G)
        out = self._memoised_full(G)
        # Views whose rows are not nodes (PairData: node pairs) re-wrap the result themselves.
        rebase = getattr(G, "_rebase", None)
        return out._replace(G.rows) if rebase is None else rebase(out)

    def fit_transform(self, X, y=None, **fit_params):
        """``fit(X, y).transform(X)`` (without scikit-learn's output wrapping)."""
        fitted = self.fit(X, **fit_params) if y is None else self.fit(X, y, **fit_params)
        return fitted.transform(X)

    def get_feature_names_out(self, input_features=None):
        """Names of the output features: the input names (this step keeps its columns).

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Input names; ``None`` takes ``feature_names_in_`` when the step
            was fitted on named features, else ``x0, x1, ...``.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "n_features_in_")
        return check_input_features(self, input_features)

    def _wrap_plain_output(self, out, X):
        if isinstance(out, GraphData) or sp.issparse(out):
            return out
        return _wrap_data_with_container("transform", out, X, self)

    def _named_output(self, G, out):
        """``out`` (all nodes) with the names of :meth:`get_feature_names_out` for ``G``."""
        if out.feature_names is not None or out._store is G._store:
            return out
        try:
            names = self.get_feature_names_out(G.feature_names)
        except (AttributeError, ValueError):  # no names defined, or fitted on other names
            return out
        if len(names) != out.shape[1] or (
                G.feature_names is None
                and list(names) == [f"x{i}" for i in range(out.shape[1])]):
            return out  # unnamed in, unnamed out
        return out._with_feature_names(names)

    def _memoised_full(self, G):
        key = ("skldp", fitted_token(self))
        out = G.memo_get(key)
        if out is None:
            full = G.full()

            def compute():
                return self._named_output(full, self._transform_graph(full))

            # An active skldp.experiments.GraphCache shares the result between processes.
            out = G.memo_set(key, _GRAPH_CACHES[-1].fetch(self, full, key[1], compute)
                             if _GRAPH_CACHES else compute())
        return out

    def _check_n_features(self, X):
        n_in = getattr(self, "n_features_in_", None)
        if n_in is not None and X.shape[1] != n_in:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {n_in} features as input (it was fitted with "
                             f"{n_in} features).")

    def _transform_graph(self, G):  # pragma: no cover - abstract
        raise NotImplementedError

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        tags.input_tags.sparse = True
        return tags


class LDPMechanism(GraphTransformerMixin, BaseEstimator):
    """Base class of local DP feature mechanisms.

    A fitted mechanism holds the public bounds (``feature_min_``,
    ``feature_max_``) and one ``seed_`` drawn from ``random_state``. Each
    user's report is a pure function of ``(seed_, node key)`` (Design page, "Per-user determinism"):
    the same at fit and predict time, for any subset or order of rows, and
    after clone-free pickling. ``random_state=None`` draws a new seed at every
    fit, i.e. a new collection (a new use of the budget) per fit and CV fold.

    On :class:`~skldp.GraphData` the key of a node is its ``node_id``. Plain
    arrays are also accepted; then row *i* is keyed by its position *i*, and
    only the array the mechanism was fitted on can be transformed (any other
    array raises): row *i* of another array is another user, who must not
    receive the same noise. The same holds for a GraphData built without
    ``node_ids`` (see :attr:`skldp.GraphData.population`).

    The seed is that of the *collection* (``skldp.base.draw_collection_seed``): the
    class, every parameter but ``random_state``, and the bounds, hashed
    together with ``random_state``. Two mechanisms that differ in any of them
    never share random numbers, while the same mechanism refitted with the same
    integer ``random_state`` gives the same reports. ``random_state=None``
    takes the seed from the operating system's entropy. Anyone who knows
    ``seed_`` (or an integer ``random_state`` and the parameters) can invert
    every report: a fixed ``random_state`` is for reproducible simulations;
    see :func:`skldp.privacy.forget_secrets` to save a pipeline without it.

    Subclasses set ``protects`` and implement ``_perturb(X, keys)`` where
    ``X`` holds the clipped raw features of the given nodes (dense or CSR) and
    ``keys`` their uint64 keys, and ``_epsilon_total()``.

    Attributes
    ----------
    seed_ : int
        Seed of this collection.
    feature_min_, feature_max_ : ndarray of shape (n_features,)
        Bounds used to clip and scale the features.
    epsilon_ : float
        The per-user privacy budget spent by one report (``inf`` without privacy).
    protects_ : tuple of str
        What the guarantee covers (``("features",)`` for feature mechanisms).
    """

    protects = ("features",)
    _graph_requirements = {}

    def fit(self, X, y=None):
        """Validate ``eps``, store the bounds and draw the collection's seed."""
        self._validate_params_common()
        Xf = self._all_features(X)
        check_finite_features(Xf)
        self.feature_min_, self.feature_max_ = resolve_feature_range(
            self.feature_range, Xf, owner=type(self).__name__)
        self.n_features_in_ = Xf.shape[1]
        self._validate_params()
        self.population_ = population_of(X if isinstance(X, GraphData) else Xf)
        self.seed_ = draw_collection_seed(self, self.n_features_in_, self.feature_min_,
                                          self.feature_max_)
        self.epsilon_ = float(self._epsilon_total())
        self.protects_ = tuple(self.protects)
        return self

    def transform(self, X):
        """The users' reports: one perturbation per user, reused on every call."""
        check_is_fitted(self, "epsilon_")
        if isinstance(X, GraphData):
            check_population(self, X)
            return super().transform(X)
        X = check_array(X, accept_sparse="csr", dtype=np.float64, ensure_all_finite=False)
        self._check_n_features(X)
        check_finite_features(X)
        check_population(self, X)
        return self._reports_for(X, np.arange(X.shape[0], dtype=np.uint64))

    def _transform_graph(self, G):
        Z = self._reports_for(G.features, G.node_keys)
        return G.with_features(Z, feature_names=G.feature_names)

    def _reports_for(self, X, keys):
        """Reports of the users ``keys``: drawn from ``seed_``, or the saved ones without it."""
        if hasattr(self, "seed_"):
            return self._report(X, keys)
        rows = saved_positions(self.saved_keys_, keys, type(self).__name__)
        return self.saved_reports_[rows]

    def _forget_secret(self, X):
        """Keep the reports of the users of ``X`` and delete ``seed_`` (see forget_secrets)."""
        if isinstance(X, GraphData):
            check_population(self, X)
            keys, Z = X.node_keys, self._report(X.features, X.node_keys)
        else:
            X = check_array(X, accept_sparse="csr", dtype=np.float64, ensure_all_finite=False)
            check_population(self, X)
            keys = np.arange(X.shape[0], dtype=np.uint64)
            Z = self._report(X, keys)
        self.saved_keys_, self.saved_reports_ = keys.copy(), Z
        del self.seed_

    def _report(self, X, keys):
        check_finite_features(X)
        Xc = clip_to_range(X, self.feature_min_, self.feature_max_, owner=type(self).__name__)
        return self._perturb(Xc, keys)

    def _all_features(self, X):
        if isinstance(X, GraphData):
            # Bounds apply to every node the mechanism will perturb.
            return X.features
        return check_array(X, accept_sparse="csr", dtype=np.float64, ensure_all_finite=False)

    def _validate_params_common(self):
        check_eps(self.eps)

    def _validate_params(self):
        """Hook for subclass parameter checks (after n_features_in_ is known)."""

    def _scale(self, X, lo=-1.0, hi=1.0):
        """Affinely map clipped features from [feature_min_, feature_max_] to [lo, hi] (dense)."""
        X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        unit = (X - self.feature_min_) / (self.feature_max_ - self.feature_min_)
        return lo + (hi - lo) * unit

    def _unscale(self, Z, lo=-1.0, hi=1.0):
        """Inverse of :meth:`_scale` (keeps unbiased estimates unbiased)."""
        unit = (np.asarray(Z) - lo) / (hi - lo)
        return self.feature_min_ + unit * (self.feature_max_ - self.feature_min_)

    def _perturb(self, X, keys):  # pragma: no cover - abstract
        raise NotImplementedError

    def _epsilon_total(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags


class NodeWise(GraphTransformerMixin, BaseEstimator):
    """Apply a plain scikit-learn transformer to the features of every node.

    It is fitted on the rows of the view (the training nodes) and applied to
    all nodes, so that a graph step placed after it sees a whole graph
    (Design page, "Plain transformers before graph steps"). On plain arrays it
    behaves like the wrapped
    transformer.

    It accepts missing or infinite features (e.g. ``NodeWise(SimpleImputer())``
    imputes them); the graph step after it refuses any that remain.
    :meth:`get_feature_names_out` is the wrapped transformer's (given the
    input names), and the output GraphData carries these names, e.g.
    ``pca0, pca1`` for ``NodeWise(PCA(2))``.

    Parameters
    ----------
    estimator : transformer
        Any scikit-learn transformer, e.g. ``StandardScaler()``.

    Attributes
    ----------
    estimator_ : transformer
        The fitted clone.
    n_features_in_ : int
        Number of input features.
    feature_names_in_ : ndarray of str objects
        Input feature names, when the input had names (GraphData
        ``feature_names`` or DataFrame columns).

    Examples
    --------
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skldp import GraphData, NodeWise
    >>> import numpy as np
    >>> G = GraphData(np.arange(6.).reshape(3, 2))
    >>> NodeWise(StandardScaler()).fit(G[[0, 1]]).transform(G).shape
    (3, 2)
    """

    _graph_requirements = {}

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, X, y=None):
        # Fit on the view's rows in the store's own format (sparse stays sparse), the
        # same format transform() passes for all nodes.
        rows = X.features[X.rows] if isinstance(X, GraphData) else X
        est = clone(self.estimator)
        if isinstance(X, GraphData) and hasattr(est, "set_output"):
            est.set_output(transform="default")  # a global pandas output must not reach the store
        self.estimator_ = est.fit(rows, y)
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X):
        check_is_fitted(self, "estimator_")
        if isinstance(X, GraphData):
            return super().transform(X)
        return self.estimator_.transform(X)

    def _transform_graph(self, G):
        return G.with_features(self.estimator_.transform(G.features))

    @available_if(lambda self: hasattr(self.estimator, "get_feature_names_out"))
    def get_feature_names_out(self, input_features=None):
        """Output names of the wrapped transformer for these input names.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Input names; ``None`` takes ``feature_names_in_`` when fitted on
            named features, else ``x0, x1, ...``.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "estimator_")
        names = check_input_features(self, input_features)
        return np.asarray(self.estimator_.get_feature_names_out(names), dtype=object)


class GraphClassifierMixin(ClassifierMixin):
    """Label handling shared by classifiers on GraphData.

    ``fit`` gets the labelled training rows only; ``-1`` (the semi-supervised
    "unlabelled" convention) in ``y`` is an error, since no label may be
    invented for a node.
    """

    def _encode_labels(self, y, n_rows):
        y = column_or_1d(y, warn=True)
        if len(y) != n_rows:
            raise ValueError(f"X has {n_rows} rows but y has {len(y)} labels.")
        check_classification_targets(y)
        if np.issubdtype(y.dtype, np.number) and np.any(y == -1):
            raise ValueError("y contains -1 (unlabelled) for some rows; fit only on labelled "
                             "nodes, e.g. G[y >= 0], y[y >= 0].")
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"y has a single class {self.classes_[0]!r}; need at least two.")
        return y_enc

    def predict(self, X):
        """Most probable class of each row."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]
