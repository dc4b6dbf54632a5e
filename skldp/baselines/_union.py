"""A FeatureUnion of graph transformers: hybrid structural / private-feature inputs."""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.validation import check_is_fitted

from .._graph_data import GraphData, reads_users_data
from ..base import edges_read_by
from ..exceptions import InvalidParameterError
from ..utils.validation import check_graph_data, check_input_features, record_feature_names

__all__ = ["GraphFeatureUnion"]


def _is_passthrough(trans):
    # FeatureUnion runs "passthrough" as an identity FunctionTransformer, whose output
    # wrapping (set_output, a global pandas config) would turn the GraphData into a frame
    return isinstance(trans, FunctionTransformer) and trans.func is None


def _edge_mechanism_in(trans):
    """The class name of an edge mechanism in a branch (in its pipelines and unions), or
    ``None``: its output is another graph, which the union refuses."""
    if "edges" in getattr(trans, "protects", ()):
        return type(trans).__name__
    inner = getattr(trans, "steps", None) or getattr(trans, "transformer_list", None)
    for item in inner if isinstance(inner, list) else ():
        found = _edge_mechanism_in(item[1]) if isinstance(item, tuple) and len(item) >= 2 \
            else None
        if found:
            return found
    return None


def _plain_step_in(trans):
    """The class name of a plain scikit-learn step in a branch (in its pipelines), or
    ``None``: it returns an array, which the union refuses. ``FunctionTransformer`` (a
    function may return a GraphData) and the union's own branches are not checked."""
    if isinstance(trans, Pipeline):
        return next((found for item in trans.steps if isinstance(item, tuple) and
                     len(item) == 2 and (found := _plain_step_in(item[1]))), None)
    if isinstance(trans, (str, FunctionTransformer, GraphFeatureUnion)) or trans is None:
        return None
    return type(trans).__name__ if type(trans).__module__.startswith("sklearn.") else None


class GraphFeatureUnion(FeatureUnion, auto_wrap_output_keys=None):
    """Concatenate the whole-graph outputs of several graph transformers.

    Each branch of ``transformer_list`` (a graph transformer, a pipeline of
    them, or ``"passthrough"``) is fitted on the input view and transforms the
    whole graph; the outputs are concatenated column-wise into one
    :class:`~skldp.GraphData` over the input's graph, whose input rows are
    returned. The branches must not change the adjacency.

    Read more in the :ref:`User Guide <graph_feature_union>`.

    Parameters
    ----------
    transformer_list : list of (str, transformer)
        The branches; a transformer may be ``"drop"`` or ``"passthrough"``.
    n_jobs : int or None, default=None
        Number of jobs for fitting the branches (see FeatureUnion).
    transformer_weights : dict or None, default=None
        Multiplicative weights of the branches' outputs, keyed by name: finite
        numbers (a NaN or infinite weight raises at fit; scikit-learn's
        ``FeatureUnion`` returns NaN features), names of branches (as in
        ``FeatureUnion``).
    verbose : bool, default=False
        Print the time of each fit.
    verbose_feature_names_out : bool, default=True
        Prefix the output feature names with the branch names.

    Attributes
    ----------
    n_features_in_ : int
        Number of input features (of the first branch).
    feature_names_in_ : ndarray of str objects
        Names of the input features (a GraphData's ``feature_names``), when it
        has some.

    See Also
    --------
    skldp.baselines.StructuralFeatures : A feature-free branch.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from sklearn.pipeline import Pipeline
    >>> from skldp import GraphData
    >>> from skldp.baselines import GraphFeatureUnion, StructuralFeatures
    >>> from skldp.mechanisms import HDSMechanism
    >>> from skldp.propagation import PPRPropagation
    >>> A = sp.csr_array(np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]]))
    >>> G = GraphData(np.eye(3), A)
    >>> union = GraphFeatureUnion([
    ...     ("structure", StructuralFeatures(degree_bins=2, n_eigenvectors=1,
    ...                                      n_components=4, random_state=0)),
    ...     ("private", Pipeline([("hds", HDSMechanism(1.0, feature_range=(0, 1),
    ...                                                random_state=0)),
    ...                           ("ppr", PPRPropagation())]))])
    >>> union.fit_transform(G[[0, 1]]).shape
    (2, 11)
    """

    # scikit-learn's FeatureUnion declares none; the branches check their own at fit.
    _parameter_constraints = {
        "transformer_list": [list],
        "n_jobs": [Integral, None],
        "transformer_weights": [dict, None],
        "verbose": ["verbose"],
        "verbose_feature_names_out": ["boolean"],
    }

    # FeatureUnion's property reads the first branch's names (none for "passthrough"): the
    # union records those of its own input instead, as the graph steps do.
    @property
    def feature_names_in_(self):
        """Names of the input features seen in fit."""
        try:
            return self.__dict__["feature_names_in_"]
        except KeyError:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute "
                                 "'feature_names_in_'") from None

    @feature_names_in_.setter
    def feature_names_in_(self, names):
        self.__dict__["feature_names_in_"] = names

    # not prefer_skip_nested_validation: the branches are the user's, unchecked
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, **params):
        """Fit every branch on ``X`` (FeatureUnion's fit, the parameters checked first)."""
        for name, w in (self.transformer_weights or {}).items():
            if isinstance(w, bool) or not isinstance(w, Real) or not np.isfinite(w):
                raise InvalidParameterError(f"transformer_weights[{name!r}] must be a finite "
                                            f"number, got {w!r}.")
        # (refused before any branch is fitted: a fit collects, and the output is refused;
        # items of another shape get FeatureUnion's own errors)
        items = self.transformer_list if isinstance(self.transformer_list, list) else None
        branches = [item for item in items or () if isinstance(item, tuple) and len(item) == 2]
        for name, trans in branches:
            if plain := _plain_step_in(trans):
                raise TypeError(f"Branch {name!r} holds {plain}, a plain scikit-learn step "
                                "that returns an array: every branch must be a graph "
                                "transformer (wrap plain scikit-learn transformers in "
                                "skldp.NodeWise). Nothing was read.")
            if found := _edge_mechanism_in(trans):
                raise ValueError(f"Branch {name!r} holds an edge mechanism ({found}): its "
                                 "output is another graph, and a GraphFeatureUnion keeps its "
                                 "input's graph. Apply edge mechanisms before the union "
                                 "(nothing was collected).")
        if items is not None and len(branches) == len(items) and all(
                isinstance(trans, str) and trans == "drop" for _, trans in branches):
            raise ValueError("GraphFeatureUnion has no branch (transformer_list is empty or "
                             "all its branches are 'drop').")
        super().fit(X, y, **params)
        record_feature_names(self, X)
        return self

    def get_feature_names_out(self, input_features=None):
        """Names of the output features: each branch's, prefixed with its name if verbose.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Input names; ``None`` takes ``feature_names_in_`` when the union
            was fitted on named features, else ``x0, x1, ...``.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self)
        if input_features is not None or "feature_names_in_" in self.__dict__:
            input_features = check_input_features(self, input_features)
        return super().get_feature_names_out(input_features)

    def fit_transform(self, X, y=None, **params):
        """Fit every branch on ``X`` and return their concatenated outputs for its rows."""
        return self.fit(X, y, **params).transform(X)

    def transform(self, X, **params):
        """Concatenate the branches' whole-graph outputs; return the rows of ``X``.

        Parameters
        ----------
        X : GraphData
            A view of the graph, or a :class:`~skldp.model_selection.PairData`.

        Returns
        -------
        Xt : GraphData
            The rows of ``X`` (its pairs, for a PairData) over a graph whose
            features are the concatenation of the branches' outputs.
        """
        if params:
            raise TypeError(f"GraphFeatureUnion.transform takes no parameters, got "
                            f"{sorted(params)}.")
        check_is_fitted(self)   # before the input check: unfitted is the first thing to fix
        G = check_graph_data(X, self)
        outs = []
        for name, trans, weight in self._iter():
            out = G if _is_passthrough(trans) else trans.transform(G)
            if not isinstance(out, GraphData):
                raise TypeError(f"Branch {name!r} returned {type(out).__name__}, not a "
                                "GraphData: every branch must be a graph transformer (wrap "
                                "plain scikit-learn transformers in skldp.NodeWise).")
            if out.n_nodes != G.n_nodes or out.adjacency is not G.adjacency:
                raise ValueError(f"Branch {name!r} changed the graph (nodes or adjacency); "
                                 "a GraphFeatureUnion keeps its input's graph. Apply edge "
                                 "mechanisms before the union.")
            outs.append((name, out, weight))
        if not outs:
            raise ValueError("GraphFeatureUnion has no branch left (all are 'drop').")
        # everything the output depends on: the names too (with or without prefixes)
        key = ("skldp.baselines.union", bool(self.verbose_feature_names_out),
               tuple((name, out.token, None if w is None else float(w)) for name, out, w in outs))
        Z = G.memo_get(key)
        if Z is None:
            Z = G.memo_set(key, self._concatenate(G, outs))
        # Views whose rows are not nodes (PairData: node pairs) re-wrap the result themselves,
        # as for the graph transformers (GraphTransformerMixin.transform)
        rebase = getattr(G, "_rebase", None)
        return Z._replace(G.rows) if rebase is None else rebase(Z)

    def _concatenate(self, G, outs):
        blocks, names = [], []
        for name, out, weight in outs:
            B = out.features
            if weight is not None:
                B = B * weight
            blocks.append(B)
            fn = out.feature_names
            if fn is None:   # scikit-learn's default names for this branch; others keep theirs
                fn = [f"x{i}" for i in range(B.shape[1])]
            prefix = f"{name}__" if self.verbose_feature_names_out else ""
            names += [f"{prefix}{f}" for f in fn]
        if any(sp.issparse(B) for B in blocks):
            Z = sp.hstack([sp.csr_matrix(B) for B in blocks], format="csr")
        else:
            Z = np.hstack([np.asarray(B) for B in blocks])
        if len(set(names)) != len(names) or (   # unnamed in, unnamed out (the graph steps' rule)
                G.feature_names is None and names == [f"x{i}" for i in range(len(names))]):
            names = None
        # The union is the users' data (in the clear) if any branch is: a "passthrough"
        # branch, or a step that computed its output from their raw features.
        tainted = any(reads_users_data(out._store.feature_origin) for _, out, _ in outs)
        union = G.full().with_features(Z, feature_names=names, source="server")
        # a step's output, as GraphTransformerMixin marks one (not "public": new_simulation
        # would take the branches' reports for raw data); named after the union, not
        # with_features, in the refusals and reports that quote it
        union._store.feature_origin = (
            ("derived", "were computed on the server by GraphFeatureUnion from the users' "
                        "raw data", True) if tainted else
            ("derived", "were computed on the server by GraphFeatureUnion", False))
        # and computed from the users' raw edges if any branch's output is (an edge
        # mechanism after the union refuses it, see skldp.base.edges_read_by)
        readers = tuple(dict.fromkeys(
            r for _, out, _ in outs for r in edges_read_by(out._store.feature_origin)))
        origin = union._store.feature_origin
        if readers and origin[0] == "derived":
            union._store.feature_origin = origin[:3] + (readers,)
        return union

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


# auto_wrap_output_keys=None above: scikit-learn wraps no method, so the GraphData output is
# never converted; these keys keep set_output available, as GraphTransformerMixin does.
GraphFeatureUnion._sklearn_auto_wrap_output_keys = {"transform"}
