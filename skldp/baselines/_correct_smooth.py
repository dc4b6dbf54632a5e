"""Correct and Smooth (Huang et al., ICLR 2021): label propagation around any classifier."""

import uuid
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context, clone
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..base import (
    GraphClassifierMixin,
    PrivateStepMixin,
    charge_clear_read,
    clear_read_refusal,
    edges_collected,
    labels_sent,
    note_edge_read,
    note_label_read,
    step_kind,
)
from ..model_selection._node_splits import _check_all_labelled, _check_one_label_per_node
from ..population import BudgetExceededError
from ..utils._arrays import member, sorted_lookup
from ..utils.validation import LABEL_MECHANISM_CONSTRAINT, Count, Interval, check_graph_data
from ._graph_ops import (
    check_training_population,
    fit_label_mechanism,
    node_positions,
    sym_normalized_adjacency,
)
from ._label_propagation import label_matrix, normalize_rows

__all__ = ["CorrectAndSmooth"]


def _labels_sent(G, records):
    """The labels the users of ``G`` sent while the base model was fitted.

    ``records`` are the label reports sent through the users' population in
    that time (:meth:`~skldp.population.Population.recording`: a repeated
    request, which costs nothing, is seen too) by the collections the fitted
    base model holds, however deeply nested. The labels are those of the latest collection that
    every user of ``G`` answered; ``None`` if no label was randomized.
    """
    labels = [(spec, keys, reports) for spec, keys, reports in records
              if "labels" in spec.protects and spec.model == "local"]
    if not labels:
        return None, False
    keys = G.node_keys[G.rows]
    sent = {}
    for spec, k, r in labels:
        sent.setdefault(spec.id, (spec, {}))[1].update(
            zip(np.asarray(k).tolist(), np.asarray(r).tolist(), strict=True))
    for spec, _, _ in reversed(labels):
        got = sent[spec.id][1]
        if all(int(k) in got for k in keys):
            classes = np.asarray(spec.public_state["classes"])
            return classes[np.asarray([got[int(k)] for k in keys], dtype=np.int64)], True
    raise ValueError(
        "The base model randomized labels, but no label collection covers every training "
        "user of CorrectAndSmooth: it cannot tell which labels these users sent. Fit "
        "CorrectAndSmooth on the rows its base model was fitted on.")


def _protections(estimator):
    """The specs of the collections and central trainings the fitted base model holds, at
    any depth (an edge collection read from a memo sends nothing, but its step holds it).
    Its own only: other threads' collections on the same users in that time are not its."""
    from ..accounting._report import _children

    specs, seen = [], set()

    def walk(est):
        if id(est) in seen:
            return
        seen.add(id(est))
        spec = getattr(est, "collection_", None)
        if spec is not None and hasattr(spec, "protects"):
            specs.append(spec)
        for _, child in _children(est):
            walk(child)

    walk(estimator)
    return specs


def _clean_labels_refusal(cs, G, kinds, unattributed=False):
    """What C&S reads when it propagates the clean labels of ``G``, and what to do instead
    (the pair :func:`~skldp.base.charge_clear_read` refuses with)."""
    name = type(cs).__name__
    if unattributed:
        what = (f"{name} propagates the training labels into its predictions; label reports "
                "were sent during its base model's fit by a collection the fitted base model "
                "does not hold (a label mechanism it keeps out of sight, or another fit on "
                "the same users meanwhile), so it cannot tell which labels its base model "
                f"used and propagates the clean labels of {len(G)} user(s), a read in the "
                "clear (epsilon=inf)")
        instead = (f"{name} was not fitted. Keep the fitted label mechanism on the base "
                   "model as a fitted attribute (a public name ending in '_', e.g. "
                   "self.label_mechanism_), or give CorrectAndSmooth the label_mechanism: "
                   "the propagation then uses the labels the users sent.")
        return what, instead
    return (f"{name} propagates the training labels into its predictions; its base "
            f"model's central DP training ({kinds}) protects them, but the propagation reads "
            f"the clean labels of {len(G)} user(s) in the clear (epsilon=inf)",
            f"{name} was not fitted. Give it a label_mechanism (e.g. "
            "LabelRandomizedResponse): the base model and the propagation then both use the "
            "labels the users sent.")


def _charge_clean_labels(cs, G, specs, unattributed=False):
    """Charge the training users of ``G`` a read of their labels in the clear: a central-DP
    base model (its trainings among ``specs``) protects them, or label reports of these
    users that the fitted base does not hold were sent during its fit (``unattributed``),
    but C&S propagates the clean labels into its predictions, outside any guarantee.
    Refused under a budget, before anything is kept."""
    kinds = ", ".join(sorted({spec.kind.rsplit(".", 1)[-1] for spec in specs
                              if spec.model == "central" and "labels" in spec.protects}))
    charge_clear_read(cs, G, "labels", G.node_keys[G.rows],
                      _clean_labels_refusal(cs, G, kinds, unattributed))


def _central_label_steps(estimator):
    """The central DP trainings protecting the labels that fitting ``estimator`` surely
    runs, with no label randomized: known from its parameters only when it is made of skldp
    and scikit-learn estimators (a user's own class may randomize labels in ``fit``), none
    of which randomizes labels (a label mechanism, ``eps_y``), and no parameter maps names
    to estimators (a search's grid may swap them). Empty when unknown."""
    steps, seen, todo = [], set(), [estimator]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or obj is None or isinstance(obj, (str, Real, type)):
            continue
        seen.add(id(obj))
        if isinstance(obj, (list, tuple)):
            todo.extend(obj)
        elif isinstance(obj, dict):
            if _holds_estimator(obj):
                return []   # a grid that sets steps (or a map of them): not known yet
        elif hasattr(obj, "fit"):
            if not type(obj).__module__.startswith(("skldp.", "sklearn.")):
                return []
            if isinstance(obj, PrivateStepMixin) and "labels" in obj.protects and \
                    obj.privacy_model == "local":
                return []
            params = obj.get_params(deep=False) if hasattr(obj, "get_params") else {}
            if params.get("label_mechanism") is not None or "eps_y" in params:
                return []
            if getattr(obj, "privacy_model", None) == "central" and "labels" in obj.protects:
                steps.append(obj)
            todo.extend(params.values())
    return steps


def _holds_estimator(obj):
    if isinstance(obj, dict):
        return any(_holds_estimator(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_holds_estimator(v) for v in obj)
    return hasattr(obj, "fit")


def _refuse_clean_labels_early(cs, G, y):
    """Refuse before the base model spends anything when its fit will surely end in the
    refused read of the clean labels (a central DP training protecting them, no label
    mechanism, ``y`` not labels the users sent, a budget): same error as after the fit."""
    steps = _central_label_steps(cs.estimator)
    if not steps or np.isinf(G.population.remaining(G.node_keys[G.rows])).all() or \
            labels_sent(G, y):
        return
    kinds = ", ".join(sorted({type(step).__name__ for step in steps}))
    raise clear_read_refusal(G.population, _clean_labels_refusal(cs, G, kinds))


def _check_base_proba(Z, n_nodes, n_classes):
    """Refuse base-model probabilities that cannot be propagated: a NaN would spread to
    every node within ``n_iter`` hops (and read as uniform probabilities after the rows
    are normalised); the shape must be one row per node, one column per class."""
    if Z.shape != (n_nodes, n_classes):
        raise ValueError(f"CorrectAndSmooth's base model returned predict_proba of shape "
                         f"{Z.shape} for the {n_nodes} nodes of the graph; expected "
                         f"({n_nodes}, {n_classes}), a column per class of its classes_.")
    if not np.isfinite(Z).all():
        rows = np.flatnonzero(~np.isfinite(Z).all(axis=1))
        raise ValueError(f"CorrectAndSmooth's base model returned NaN or infinite "
                         f"probabilities for {len(rows)} node(s) (first at position "
                         f"{rows[0]}); propagated, they would reach every node within "
                         "n_iter hops.")


def _note_adjacency_read(cs, G):
    """The propagation reads the adjacency of ``G``: when the fit protected the edges (its
    base model was fitted on collected edges, or by a central training that protects them)
    and ``G`` holds the users' true edges, that is a read of them in the clear (epsilon
    inf), charged as :func:`~skldp.base.note_edge_read` charges it; refused under a
    budget."""
    try:
        note_edge_read(cs, G)
    except BudgetExceededError as exc:
        if not getattr(cs, "_fit_on_collected_edges", False):
            raise   # a read of a true graph whose edges were collected elsewhere: said there
        name = type(cs).__name__
        raise BudgetExceededError(
            f"{name} propagates over the adjacency of the graph it is given; its base "
            "model was fitted on edges an edge mechanism collected (or by a central DP "
            "training that protects them), so propagating over the users' true edges reads "
            "them in the clear (epsilon=inf), which no privacy budget admits (this "
            f"population's is {G.population.budget:.4g} per user). Nothing was predicted. "
            f"Collect the edges before {name} and give it the collected graph (Gr = "
            f"EdgeRR(...).fit_transform(G); {name}(...).fit(Gr[train], y)): it then "
            "propagates over the users' reports.") from exc


class CorrectAndSmooth(MetaEstimatorMixin, GraphClassifierMixin, BaseEstimator):
    """Correct and Smooth: post-process any classifier's predictions with label propagation.

    Fits a clone of ``estimator`` (any classifier on
    :class:`~skldp.GraphData` views, e.g. a private-feature pipeline), then
    propagates its training residuals over the graph to correct its
    predictions and propagates the corrected predictions to smooth them.
    Everything after the base model is post-processing of its output, the
    graph and the training labels (randomized ones with a label mechanism).

    The propagation reads the graph it is given and the training labels
    itself. When the base model protected them, that read is in the clear and
    charged (epsilon=inf; refused under a budget): ``predict`` on a graph of
    the users' true edges after a base model fitted on collected edges (an
    edge mechanism, or a central DP training that protects edges; give C&S the
    collected graph instead), and ``fit`` with the clean labels around a
    central DP model that protects them (set ``label_mechanism`` instead; under
    a budget refused before the base trains when its parameters show it), or
    after label reports that the fitted base model does not hold (keep its
    mechanism on a fitted attribute).

    Read more in the :ref:`User Guide <correct_and_smooth>`.

    Parameters
    ----------
    estimator : classifier
        A classifier with ``predict_proba`` that accepts
        :class:`~skldp.GraphData` views (a graph pipeline, an MLP head, a
        GNN, :class:`LabelPropagationClassifier`, ...).
    alpha1 : float in [0, 1), default=0.9
        Propagation weight of the correction step.
    alpha2 : float in [0, 1), default=0.8
        Propagation weight of the smoothing step.
    n_iter : int, default=50
        Propagation steps of each stage.
    scale : "auto" or float, default="auto"
        ``"auto"``: autoscale; a positive number: FDiff-scale with that scale.
    label_mechanism : label mechanism or None, default=None
        A label LDP mechanism (e.g.
        :class:`~skldp.mechanisms.LabelRandomizedResponse`), fitted as a clone.

    Attributes
    ----------
    estimator_ : classifier
        The fitted base model.
    classes_ : ndarray of shape (n_classes,)
        The base model's classes.
    train_keys_ : ndarray of uint64
        Node keys of the training nodes.
    train_population_ : str
        Id of their population: ``predict`` refuses another population's graph.
    train_labels_ : ndarray of int
        Their labels as positions in ``classes_`` (noisy with a label mechanism).
    label_mechanism_ : fitted label mechanism
        Only with ``label_mechanism``.

    See Also
    --------
    skldp.baselines.LabelPropagationClassifier : Label propagation alone.

    References
    ----------
    .. [1] Q. Huang, H. He, A. Singh, S.-N. Lim and A. R. Benson, "Combining
       Label Propagation and Simple Models Out-performs Graph Neural
       Networks", ICLR 2021.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skldp import GraphData
    >>> from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier
    >>> A = sp.csr_array(np.array([[0, 1, 0, 0], [1, 0, 0, 0],
    ...                            [0, 0, 0, 1], [0, 0, 1, 0]]))
    >>> G = GraphData(np.zeros((4, 1)), A)
    >>> cs = CorrectAndSmooth(LabelPropagationClassifier()).fit(G[[0, 2]], [0, 1])
    >>> cs.predict(G[[1, 3]])
    array([0, 1])
    """

    def __init__(self, estimator, *, alpha1=0.9, alpha2=0.8, n_iter=50, scale="auto",
                 label_mechanism=None):
        self.estimator = estimator
        self.alpha1 = alpha1
        self.alpha2 = alpha2
        self.n_iter = n_iter
        self.scale = scale
        self.label_mechanism = label_mechanism

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict_proba"])],
        "alpha1": [Interval(Real, 0, 1, closed="left")],
        "alpha2": [Interval(Real, 0, 1, closed="left")],
        "n_iter": [Count(0)],
        "scale": [StrOptions({"auto"}), Interval(Real, 0, np.inf, closed="neither")],
        "label_mechanism": LABEL_MECHANISM_CONSTRAINT,
    }

    # not prefer_skip_nested_validation: the estimator is the user's, unchecked
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Fit the base model on the view and store the training labels.

        Parameters
        ----------
        X : GraphData
            View of the training nodes of a graph with a symmetric adjacency.
        y : array-like of shape (n_rows,)
            Their labels.

        Returns
        -------
        self
        """
        G = check_graph_data(X, self, require_symmetric=True)
        from ..model_selection._node_splits import _label_column
        y = _label_column(y, warn=True, X=G)   # a list of strings keeps its NaN markers
        if len(y) != len(G):
            raise ValueError(f"X has {len(G)} rows but y has {len(y)} labels.")
        _check_all_labelled(y)   # a scikit-learn base would learn -2 as a class
        _check_one_label_per_node(y, G, "CorrectAndSmooth")
        if self.label_mechanism is None:   # before the base model spends anything
            _refuse_clean_labels_early(self, G, y)
        # Its propagation reads the adjacency of G (at predict): a read of a true graph that
        # a budget will refuse is refused before its labels or its base spend anything. (The
        # base's own reads cannot be known before its fit, which needs the labels.)
        y_used, own = fit_label_mechanism(
            self, G, y, lambda: G._note_true_graph_read(step_kind(self), check_only=True))
        with G.population.recording(protects=("labels",)) as records:
            estimator = clone(self.estimator).fit(G, y_used)
        # What the base model's fit protected: edges an edge mechanism collected, and the
        # parts a central DP training on these users covers. What C&S then reads itself
        # (the clean labels here, the adjacency at predict) is a read in the clear.
        specs = _protections(estimator)
        # Labels the base model's fit randomized (at any depth: a pipeline, a search):
        # propagate the reports the users sent, never their clean labels. Only those of
        # the label collections the fitted base holds: a report of these users by any
        # other collection meanwhile (a mechanism the base keeps out of sight, or another
        # thread's) may or may not be what the base used, so C&S cannot propagate it.
        own_labels = {s.id for s in specs if "labels" in s.protects and s.model == "local"}
        keys = G.node_keys[G.rows]
        unattributed = not own_labels and any(
            member(np.asarray(k, dtype=np.uint64), keys).any()
            for spec, k, _ in records if spec.model == "local")
        sent, made = _labels_sent(G, [r for r in records if r[0].id in own_labels])
        if own is not None and made:
            raise ValueError("Both CorrectAndSmooth and its estimator randomize the labels: "
                             "two collections of each user's label. Set label_mechanism on "
                             "one of them.")
        if sent is not None:
            y_used = sent
        elif own is None and not labels_sent(G, y_used):
            if unattributed or any(s.model == "central" and "labels" in s.protects
                                   for s in specs):
                _charge_clean_labels(self, G, specs, unattributed)
            else:   # it propagates the clean labels (a plain base model read them too)
                note_label_read(self, G, y_used, sent=False)
        self.estimator_ = estimator
        self._fit_on_collected_edges = edges_collected(G._store.adjacency_origin) or any(
            "edges" in s.protects and s.model in ("local", "central") for s in specs)
        self.classes_ = np.asarray(self.estimator_.classes_)
        # positions in the base's own classes_ (its predict_proba's columns): a custom
        # base model need not keep them sorted, as scikit-learn's classifiers do
        pos, found = sorted_lookup(self.classes_, y_used,
                                   sorter=np.argsort(self.classes_, kind="stable"))
        if not found.all():
            raise ValueError("The base model's classes_ do not contain every training label.")
        self.train_keys_ = np.array(G.node_keys[G.rows], dtype=np.uint64)
        self.train_population_ = G.population.id
        self.train_labels_ = pos.astype(np.int64)
        self.n_features_in_ = G.shape[1]
        self._fit_stamp = uuid.uuid4().hex    # memo key of this fit's whole-graph results
        return self

    def predict_proba(self, X):
        """Corrected and smoothed class probabilities of the rows of ``X``.

        Parameters
        ----------
        X : GraphData
            A view of the graph the model was fitted on.

        Returns
        -------
        proba : ndarray of shape (n_rows, n_classes)

        Raises
        ------
        ValueError
            If the base model's ``predict_proba`` on the graph holds NaN or infinite
            values, or is not of shape ``(n_nodes, n_classes)``.
        """
        check_is_fitted(self, "train_labels_")
        G = check_graph_data(X, self, require_symmetric=True)
        check_training_population(G, self)
        _note_adjacency_read(self, G)
        key = ("skldp.baselines.correct_and_smooth", getattr(self, "_fit_stamp", None),
               float(self.alpha1), float(self.alpha2), int(self.n_iter), str(self.scale))
        P = G.memo_get(key)
        if P is None or key[1] is None:
            P = G.memo_set(key, self._correct_and_smooth(G))
        return P[G.rows]

    def _base_proba(self, G):
        key = ("skldp.baselines.cs_base", getattr(self, "_fit_stamp", None))
        Z = G.memo_get(key) if key[1] is not None else None
        if Z is None:
            Z = np.asarray(self.estimator_.predict_proba(G.full()), dtype=np.float64)
            _check_base_proba(Z, G.n_nodes, len(self.classes_))
            Z = G.memo_set(key, Z)
        return Z

    def _correct_and_smooth(self, G):
        name = type(self).__name__
        S = sym_normalized_adjacency(G, owner=name)
        Z = self._base_proba(G)
        pos = node_positions(G, self.train_keys_, name)
        n, c = Z.shape
        Y = label_matrix(pos, self.train_labels_, n, c)
        Y[pos] = np.minimum(Y[pos], 1.0)        # a node listed twice is still one-hot
        # --- correct
        E0 = np.zeros_like(Z)
        E0[pos] = Y[pos] - Z[pos]
        a1, a2, T = float(self.alpha1), float(self.alpha2), int(self.n_iter)
        E = E0.copy()
        auto = isinstance(self.scale, str)
        for _ in range(T):
            E = (1.0 - a1) * E0 + a1 * (S @ E)
            if auto:
                np.clip(E, -1.0, 1.0, out=E)
            else:
                E[pos] = E0[pos]
        if auto:
            sigma = np.abs(E0[pos]).sum() / max(len(pos), 1)
            norm = np.abs(E).sum(axis=1, keepdims=True)
            s = np.where(norm > 0, sigma / np.where(norm > 0, norm, 1.0), 1.0)
            s = np.where(s > 1000, 1.0, s)
            Zc = Z + s * E
        else:
            Zc = Z + float(self.scale) * E
        # --- smooth
        H0 = Zc
        H0[pos] = Y[pos]
        H = H0.copy()
        for _ in range(T):
            H = (1.0 - a2) * H0 + a2 * (S @ H)
            np.clip(H, 0.0, 1.0, out=H)
        return normalize_rows(np.maximum(H, 0.0), np.full(c, 1.0 / c))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
