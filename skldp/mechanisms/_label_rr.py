"""Label local DP: k-ary randomized response on node labels (LPGNN, later version)."""

import warnings

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils.validation import check_is_fitted

from .._graph_data import GraphData, refusal_is_read
from ..base import (
    LABELS_OUTSIDE_DOMAIN,
    PrivateStepMixin,
    charge_public_read,
    clean_label_users,
    put_back,
    refuse_foreign_labels,
    sent_these_labels,
)
from ..device._kinds import label_encode, label_flip_q
from ..device._random import check_node_keys
from ..exceptions import PrivacyLeakWarning
from ..population import default_population
from ..population._digest import label_digests
from ..population._reports import LabelReports
from ..population._spec import public_params, step_kind
from ..utils.validation import EPS_CONSTRAINT, RANDOM_STATE_CONSTRAINT, check_eps
from ._grid import check_eps_per_coordinate

__all__ = ["LabelRandomizedResponse"]


def _check_one_type(values, name):
    """Refuse a label domain that mixes text and other values (``[0, "a"]``): NumPy makes
    them all text (``["0", "a"]``), the domain the spec publishes, so a device holding
    the number 0 would find its label outside it and send a random class."""
    if isinstance(values, np.ndarray) and values.dtype != object:
        return
    flat = np.asarray(values, dtype=object).ravel()
    text = [isinstance(v, str) for v in flat]
    if any(text) and not all(text):
        first = flat[text.index(False)] if text[0] else flat[text.index(True)]
        raise ValueError(f"{name} mixes text and other values ({flat[0]!r} and {first!r}): "
                         "a label domain must be all strings or all numbers, since the spec "
                         "publishes one type and a device's label must match it exactly. "
                         "Give the labels of one type (e.g. all as strings).")


class LabelRandomizedResponse(PrivateStepMixin, BaseEstimator):
    r"""k-ary randomized response on node labels, deterministic per node id.

    Each labelled user ``v`` with label ``y_v`` in a public domain of ``c``
    classes reports

    .. math:: \tilde y_v = \begin{cases} y_v & \text{with probability }
              p = \frac{e^\varepsilon}{e^\varepsilon + c - 1} \\
              y' \ne y_v & \text{each with probability }
              q = \frac{1}{e^\varepsilon + c - 1}, \end{cases}

    which is :math:`\varepsilon`-LDP since ``p / q = e^eps``. Labels are not
    features, so this is not a transformer: a classifier's
    ``label_mechanism`` (or the user) calls :meth:`randomize` with the labels
    and the users (a GraphData view), and each user answers once.

    Read more in the :ref:`User Guide <label_rr>`.

    Parameters
    ----------
    eps : float, default=1.0
        Label privacy budget per user, ``> 0``. ``inf`` reports the true label
        (no privacy).
    classes : array-like or None, default=None
        The public label domain (all classes a user may hold). ``None`` takes
        it from the labels passed to :meth:`fit`, charged as a read of those
        users' labels in the clear (epsilon inf; refused under a budget, before
        any label is sent), with a :class:`~skldp.exceptions.PrivacyLeakWarning`.
    random_state : int, RandomState, Generator or None, default=None
        Seed of the collection. ``None`` draws a new collection per fit.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The label domain (sorted).
    collection_ : CollectionSpec
        The public spec of the collection.
    seed_ : int
        Seed of this collection.
    ledger_ : Ledger or None
        The ledger of the users it randomized (``None`` before the first
        :meth:`randomize`).
    epsilon_ : float
        Per-user label budget (``eps``).
    protects_ : tuple of str
        ``("labels",)``.
    p_, q_ : float
        Probability of keeping the label and of reporting one given other label.
    transition_matrix_ : ndarray of shape (n_classes, n_classes)
        ``T[i, j] = P(report j | true label i)``: ``p`` on the diagonal, ``q``
        elsewhere (rows sum to 1).

    See Also
    --------
    skldp.models.LPGNNClassifier : Denoises randomized labels by propagation.
    skldp.models.RGNNClassifier : Reconstructs randomized labels.

    References
    ----------
    .. [1] S. L. Warner, "Randomized Response: A Survey Technique for
       Eliminating Evasive Answer Bias", JASA 1965.
    .. [2] P. Kairouz, K. Bonawitz and D. Ramage, "Discrete Distribution
       Estimation under Local Privacy", ICML 2016 (k-ary randomized response).
    .. [3] K. Bhaila, W. Huang, Y. Wu and X. Wu, "Local Differential Privacy in
       Graph Neural Networks: a Reconstruction Approach", SIAM SDM 2024,
       eq. (14).

    Examples
    --------
    >>> import numpy as np
    >>> from skldp.mechanisms import LabelRandomizedResponse
    >>> from skldp import GraphData
    >>> G = GraphData(np.zeros((4, 1)))
    >>> rr = LabelRandomizedResponse(2.0, classes=[0, 1, 2], random_state=0).fit()
    >>> y_noisy = rr.randomize(np.array([0, 1, 2, 2]), G)
    >>> y_noisy.shape
    (4,)
    >>> round(rr.p_, 4)
    0.787
    """

    protects = ("labels",)
    _parameter_constraints = {
        "eps": [EPS_CONSTRAINT],
        "classes": ["array-like", None],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(self, eps=1.0, *, classes=None, random_state=None):
        self.eps = eps
        self.classes = classes
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X=None, y=None):
        """Validate ``eps``, fix the label domain and draw the collection's seed.

        Parameters
        ----------
        X : GraphData or None
            The users whose labels it will randomize, to bind its ledger now;
            otherwise the first :meth:`randomize` binds it. Required with
            ``classes=None``: the view of the users of ``y``.
        y : array-like or None
            Labels; only used (with a warning) when ``classes`` is ``None``:
            their users, the rows of ``X``, are charged a read of their labels
            in the clear.

        Returns
        -------
        self
        """
        eps = check_eps_per_coordinate(self.eps, "eps", type(self).__name__)
        self.__dict__.pop("_classes_read", None)
        self.__dict__.pop("collected_", None)   # (a refit opens a new collection)
        if self.classes is not None:
            _check_one_type(self.classes, "classes")
            given = np.asarray(self.classes, dtype=object)
            if given.ndim != 1 or any(np.ndim(c) for c in given):
                raise ValueError(f"classes must be a 1-D list of labels, got shape "
                                 f"{given.shape}{' of sequences' if given.ndim == 1 else ''}: "
                                 "the label domain is flat (one entry per class).")
            classes = np.unique(np.asarray(self.classes))
            if len(classes) != len(np.asarray(self.classes).ravel()):
                raise ValueError("classes contains duplicates.")
        else:
            if y is None:
                raise ValueError("LabelRandomizedResponse needs the public label domain: pass "
                                 "classes=[...] (or labels y to derive it, which leaks).")
            from ..model_selection._node_splits import _check_label_index, _label_column
            if isinstance(X, GraphData):   # labels of other users than X's: refused
                _check_label_index(y, X)
            bound = isinstance(X, GraphData) and len(X) == len(_label_column(y))
            if bound and X.population.simulated:   # (real devices' labels are reports)
                warnings.warn("LabelRandomizedResponse: classes was not given, so the label "
                              "domain is read from the private labels in the clear, which "
                              "reveals which classes occur: the ledger charges those users a "
                              "read of their labels in the clear (epsilon=inf). Pass "
                              "classes=[...] from public knowledge.", PrivacyLeakWarning,
                              stacklevel=2)
                # charged before the domain is derived, and before the values are checked
                # (a refusal of them tells something of them too)
                self._charge_classes_read(X.population, X.node_keys[X.rows])
            y, raw = self._check_y(y), y
            _check_one_type(raw, "y")   # (after _check_y: its unlabelled markers first)
            if not bound:
                raise ValueError(
                    "LabelRandomizedResponse(classes=None) reads the label domain from the "
                    "labels y: pass X, the GraphData view of their users (fit(G[rows], y)), "
                    "so that the ledger charges them for that read at fit, or pass "
                    "classes=[...] (the public label domain).")
            classes = np.unique(y)
        if classes.dtype.kind in "fc" and not np.all(np.isfinite(classes)):
            # (no label can be inf, and a spec writes it as the text "inf": a domain of
            # text and numbers, which devices refuse)
            raise ValueError(f"classes must not contain NaN or infinity, got "
                             f"{classes.tolist()}.")
        if len(classes) < 2:
            raise ValueError(f"The label domain needs at least two classes, got "
                             f"{classes.tolist()}.")
        if np.issubdtype(classes.dtype, np.number) and np.any(classes < 0):
            raise ValueError("classes must not contain a negative number: -1 (any negative "
                             "number) marks an unlabelled node.")
        self._check_class_labels(classes)
        self.classes_ = classes
        c = len(classes)
        # The flip probability (c - 1) q is computed directly: p = 1 - (c - 1) q rounds to
        # 1.0 for large eps, and a test on p would never flip.
        if np.isinf(eps):
            self.p_, self.q_ = 1.0, 0.0
        else:
            # eps <= 50 (checked), so e^eps does not overflow; 1 - p = (c - 1) q.
            self.q_ = label_flip_q(eps, c)
            self.p_ = float(np.exp(eps) * self.q_)
        T = np.full((c, c), self.q_)
        np.fill_diagonal(T, self.p_)
        self.transition_matrix_ = T
        population = X.population if isinstance(X, GraphData) else None
        self._open_collection(population, epsilon=eps,
                              public_state={"classes": classes.tolist()})
        self.population_ = None if population is None else "graph:" + population.id
        return self

    def _charge_classes_read(self, population, node_keys):
        """Charge the users whose labels ``classes=None`` read the label domain from (at
        fit, before the domain is derived): a read of their labels in the clear (epsilon
        inf), named after the option, or after the classifier that made this mechanism
        (``_classes_read_by``, its step kind)."""
        by = self.__dict__.get("_classes_read_by")
        name = by.rsplit(".", 1)[-1] if by else type(self).__name__
        charge_public_read(self, population, node_keys, "labels", "classes=None",
                           "the label domain (which classes occur)",
                           f"classes=[...] (the public label domain) to {name}", kind=by)

    def _refuse_a_pending_read(self):
        """Refuse a mechanism saved by an older version between ``fit(y=...)`` and its
        first randomize: the read of the label domain was to be charged to that
        randomize's users, but whose labels were read is not known."""
        if self.__dict__.get("_classes_read"):
            raise ValueError(
                "This LabelRandomizedResponse(classes=None) was saved by an older version "
                "between fit and its first randomize: whose labels the label domain was read "
                "from is not known, so that read cannot be charged. Fit it again with X, the "
                "GraphData view of the users of y, or pass classes=[...].")

    @staticmethod
    def _check_class_labels(classes):
        """Refuse a domain that no label array can hold: labels are checked as scikit-learn
        checks classification targets (:meth:`_check_y`), so a domain of continuous values
        (``[0.5, 1.5]``) or of an unknown type could never be randomized."""
        from sklearn.utils.multiclass import type_of_target
        try:
            with np.errstate(invalid="ignore"):   # (its cast of 1e308 to an integer)
                kind = type_of_target(classes)
        except ValueError:
            kind = "unknown"
        if kind not in ("binary", "multiclass"):
            raise ValueError(f"classes must be class labels (integers, floats equal to "
                             f"integers, strings or booleans), got {classes.tolist()!r:.80}: "
                             f"scikit-learn reads them as {kind!r} values, so a label array of "
                             "them would be refused and none could be randomized.")

    @staticmethod
    def _check_y(y):
        from sklearn.utils.multiclass import check_classification_targets

        from ..model_selection._node_splits import (
            _UNLABELLED_MARKERS,
            _label_column,
            _labelled_mask,
        )
        y = _label_column(y)   # a list of strings keeps its NaN markers
        marked = np.flatnonzero(~_labelled_mask(y))
        if len(marked):
            raise ValueError(f"y marks {len(marked)} row(s) unlabelled ({_UNLABELLED_MARKERS}; "
                             f"first at row {int(marked[0])}): a label mechanism can only "
                             "randomize labels that exist. Pass labelled nodes only.")
        check_classification_targets(y)   # continuous or mixed labels are no classes
        return y

    def encode(self, y):
        """Positions of the labels ``y`` in ``classes_`` (error for unknown labels)."""
        check_is_fitted(self, "epsilon_")
        y = self._check_y(y)
        idx = np.searchsorted(self.classes_, y)
        idx = np.clip(idx, 0, len(self.classes_) - 1)
        bad = self.classes_[idx] != y
        if np.any(bad):
            raise ValueError(f"y contains labels not in classes: "
                             f"{np.unique(y[bad])[:10].tolist()}; classes are "
                             f"{self.classes_.tolist()}.")
        return idx

    def _forget_secret(self, X=None):
        """Delete ``seed_``: the labels already randomized were used; no new ones can be."""
        del self.seed_

    def randomize_encoded(self, y_enc, keys):
        """Noisy class positions for class positions ``y_enc`` (see :meth:`randomize`)."""
        check_is_fitted(self, "epsilon_")
        before, asked = dict(vars(self)), None
        try:
            if isinstance(keys, GraphData) and not keys.population.simulated:
                y_enc = np.asarray(y_enc, dtype=np.int64)
                population, node_keys = self._users(keys, len(y_enc))
                return self._received_labels(population, node_keys, y_enc)
            population, node_keys, y_enc = self._request(y_enc, keys)
            asked = population
            return population.collect(self.collection_, node_keys, label_digests(y_enc),
                                      lambda rkeys: self._encode_report(y_enc, rkeys),
                                      keep=True)
        except BaseException:
            # a refused collection leaves the mechanism unbound (its first use binds its
            # users); once some of them answered, it stays theirs: its report names them,
            # and its random numbers are not another population's
            if asked is None or not any(e.spec.id == self.collection_.id
                                        for e in asked.ledger.entries()):
                put_back(self, before)
            raise

    def _request(self, y_enc, keys):
        """``(population, node keys, y_enc)`` of a new collection of the labels ``y_enc``,
        once this mechanism can make it."""
        if not hasattr(self, "seed_"):
            raise ValueError("LabelRandomizedResponse was saved without its secret "
                             "(skldp.privacy.forget_secrets): it cannot randomize labels any "
                             "more. Fit a new collection for new users.")
        self._check_unchanged()
        y_enc = np.asarray(y_enc, dtype=np.int64)
        population, node_keys = self._users(keys, len(y_enc))
        self._refuse_a_pending_read()
        return population, node_keys, y_enc

    def check_randomize(self, y, keys):
        """Raise what :meth:`randomize` would raise before a user sends anything (a label
        not in ``classes_``, another population's users, the budget); nothing is sent.
        Labels real devices sent are read, not collected: only :meth:`randomize` checks
        them."""
        y_enc = self._encode_users_labels(y, keys)
        if isinstance(keys, GraphData) and not keys.population.simulated:
            return
        before = dict(vars(self))
        try:
            population, node_keys, y_enc = self._request(y_enc, keys)
            population.check_collect(self.collection_, node_keys, label_digests(y_enc))
        finally:   # a check sends nothing: it binds no users either
            put_back(self, before)

    def _encode_users_labels(self, y, keys):
        """:meth:`encode` of the labels ``y`` of the users ``keys`` (see :meth:`randomize`):
        a refusal of their values (a label outside ``classes_``, a user given two labels)
        is charged as a read of their labels (``refusal_is_read``)."""
        from ..model_selection._node_splits import (
            _check_label_index,
            _check_one_label_per_node,
        )
        graph = isinstance(keys, GraphData)
        if graph:   # a Series indexed by other users is refused (its index: public ids)
            _check_label_index(y, keys)
        users = clean_label_users(keys, y) if graph else lambda: _keyed_users(keys)
        with refusal_is_read(self, "labels", users, LABELS_OUTSIDE_DOMAIN):
            if graph:   # one user, one label
                _check_one_label_per_node(y, keys, "LabelRandomizedResponse", who="user")
            return self.encode(y)

    def _encode_report(self, y_enc, keys):
        """The device program: keep the label, or report one of the others uniformly."""
        if np.isinf(self.epsilon_):
            return y_enc.copy()
        return label_encode(y_enc, len(self.classes_), self.q_, self.seed_, keys)["y"]

    def _received_labels(self, population, node_keys, y_enc):
        """The labels real devices sent (no new randomization): each of ``y_enc`` must be
        one that its user sent, in any batch."""
        self._check_unchanged()
        spec = self.collection_ if getattr(self, "collected_", False) else \
            self._received_collection(population, node_keys, self.classes_[y_enc])
        if self.classes is None and spec is not self.collection_:
            # the domain read from the received labels may lack a class no one reported:
            # the collection's public one
            labels, bound = self.classes_[y_enc], self.population_
            self._restore_public_state(spec)
            self.population_ = bound
            y_enc = self.encode(labels)
        missing = int(np.count_nonzero(~population.received(spec.id, node_keys)[1]))
        if missing:
            raise ValueError(f"{missing} of these users sent no label in collection {spec.id}; "
                             "fit on the users who sent one (y >= 0 in received_graph's y).")
        # (an earlier batch's report too: it was sent, and charged)
        if not sent_these_labels(population, spec, node_keys, self.classes_[y_enc]).all():
            raise ValueError(f"The labels given are not those these users sent in collection "
                             f"{spec.id}: pass the received labels (received_graph's y).")
        self.collection_ = spec
        self.epsilon_ = float(spec.epsilon)
        self.collected_ = True
        self.__dict__.pop("seed_", None)
        return y_enc.copy()   # (a new array, as a collection's reports)

    def _received_collection(self, population, node_keys, labels):
        """The label collection of this kind and budget (and ``classes``, when given) that
        these users answered with ``labels``; with none, the one error that says why."""
        def domain(spec):
            return np.asarray(spec.public_state.get("classes", []))

        like = [s for s in population.collected()
                if s.kind == self.collection_.kind and s.epsilon == self.collection_.epsilon
                and "classes" in s.public_state
                and (self.classes is None or np.array_equal(domain(s), self.classes_))]
        answered = [s for s in like
                    if sent_these_labels(population, s, node_keys, labels).all()]
        if len(answered) == 1 or (not answered and len(like) == 1):
            return (answered or like)[0]   # (a single candidate: its checks say what differs)
        if len(answered) > 1 and all(np.array_equal(domain(s), domain(answered[0]))
                                     for s in answered):
            return answered[-1]   # rounds that gave these users the same labels: any of them
        if not like:
            raise ValueError(
                "These users' devices are real: their labels were randomized on the devices "
                "and cannot be randomized again here, and no label collection they answered "
                f"has this mechanism's parameters (eps={self.eps!r}, classes="
                f"{self.classes_.tolist() if self.classes is not None else None}). Received: "
                f"{[s.describe() for s in population.collected()]}. Build the mechanism "
                "from the collection's spec (LabelRandomizedResponse.from_spec(spec)), or "
                "give it that collection's eps and classes=[...].")
        which = "; ".join(f"{s.id} (classes {domain(s).tolist()})" for s in (answered or like))
        raise ValueError(
            f"{'Several' if answered else 'None'} of the label collections of this budget "
            f"({which}) hold these labels of these users: pass the classes=[...] of the one "
            "they answered, or build the mechanism from its spec "
            "(LabelRandomizedResponse.from_spec(spec)).")

    def _check_unchanged(self):
        # (with classes=None on received labels, the domain is the collection's)
        if self.classes is None and getattr(self, "collected_", False):
            mine = {k: v for k, v in public_params(self).items() if k != "classes"}
            if mine == {k: v for k, v in self.collection_.params.items() if k != "classes"}:
                return
        super()._check_unchanged()

    def _restore_public_state(self, spec, X=None):
        """The fitted state of a label collection from its spec alone."""
        check_eps(self.eps)
        self.classes_ = np.asarray(spec.public_state["classes"])
        c, eps = len(self.classes_), float(self.eps)
        self.q_ = label_flip_q(eps, c)
        self.p_ = float(np.exp(eps) * self.q_)
        T = np.full((c, c), self.q_)
        np.fill_diagonal(T, self.p_)
        self.transition_matrix_ = T
        self.population_ = None

    @classmethod
    def from_spec(cls, spec):
        """The unfitted mechanism of a label collection's spec (its ``eps`` and
        ``classes``): used in a classifier over labels that real devices randomized,
        it reads the received labels (each user's, from any batch it sent) instead of
        randomizing them again.

        Parameters
        ----------
        spec : CollectionSpec, dict or JSON text

        Returns
        -------
        LabelRandomizedResponse
        """
        from ..population import mechanism_from_spec
        est = mechanism_from_spec(spec, fitted=False)
        if not isinstance(est, cls):
            raise ValueError(f"{est!r} is not a {cls.__name__} spec.")
        return est

    def randomize(self, y, keys):
        """Each user's noisy label, sent through the users' population.

        Parameters
        ----------
        y : array-like of shape (n,)
            True labels, all in ``classes_`` (``-1`` is an error).
        keys : GraphData or array of uint64
            The users: the GraphData view of the labelled users (its rows), or
            their node keys (then they belong to
            :func:`~skldp.population.default_population`). Required: labels
            carry no user ids.

        Returns
        -------
        y_noisy : LabelReports of shape (n,)
            Reported labels, values in ``classes_``: a read-only array marked with
            this collection (:class:`~skldp.population.LabelReports`), which a
            classifier fits on without reading a clean label. ``y_noisy[rows]``
            keeps the mark; an edited or computed copy (``y_noisy + 0``,
            ``np.array(list(y_noisy))``) counts as clean labels.
        """
        y_enc = self._encode_users_labels(y, keys)
        sent = self.randomize_encoded(y_enc, keys)
        # (received labels may have set the domain and the collection: read after)
        return LabelReports(self.classes_[sent], self.collection_.id)

    def _users(self, keys, n):
        """(population, node keys) of the users ``keys``; binds the ledger at first use."""
        if keys is None:
            raise ValueError("randomize needs the users: pass the GraphData view of the "
                             "labelled users (or their node keys). Keying by position would "
                             "give user i of two label arrays the same noise.")
        if isinstance(keys, GraphData):
            population, node_keys = keys.population, keys.node_keys[keys.rows]
        else:
            population, node_keys = default_population(), check_node_keys(keys)
        if node_keys.shape != (n,):
            raise ValueError(f"keys must have shape ({n},), got {node_keys.shape}.")
        if self.population_ is None:
            self.population_ = "graph:" + population.id
            if hasattr(self, "seed_"):
                self._bind_collection(population)
            else:
                self.ledger_ = population.ledger
        elif self.population_ != "graph:" + population.id:
            raise ValueError(
                "LabelRandomizedResponse already randomized the labels of other users (another "
                "GraphData's population); its collection belongs to them. Fit a new one for "
                "these users, or build their GraphData with population=<the first one>.")
        return population, node_keys.astype(np.uint64, copy=False)

    def estimate_frequencies(self, y_noisy):
        """Unbiased estimate of the true class frequencies from noisy labels.

        Solves ``T^T f = o`` where ``o`` are the observed class frequencies of
        ``y_noisy`` [Bhaila et al., SDM 2024, Eq. 14]; the estimate sums to 1 but may have
        negative entries. At least one report is needed (``ValueError`` otherwise).
        """
        idx = self.encode(y_noisy)
        if len(idx) == 0:
            raise ValueError("estimate_frequencies needs at least one report.")
        o = np.bincount(idx, minlength=len(self.classes_)) / len(idx)
        return np.linalg.solve(self.transition_matrix_.T, o)


def _keyed_users(keys):
    """``(population, keys)`` of users named by their node keys (those of
    :func:`~skldp.population.default_population`), or ``None`` for keys that name no
    users (their own error comes next)."""
    try:
        return default_population(), check_node_keys(keys)
    except (TypeError, ValueError):
        return None


def randomize_after(mech, y, G, before):
    """``mech.randomize(y, G)`` (``y`` as it is without a mechanism), with ``before()`` (the
    server's reads of the graph, which may be refused) called once every check of the
    label collection has passed and before any label is sent: a refused read spends no
    label, and a refused collection (a label outside the domain, the budget) leaves no
    read behind. ``mech`` is fitted (its label domain known) before."""
    if mech is None:
        before()
        return y
    if isinstance(G, GraphData) and not G.population.simulated:
        y = mech.randomize(y, G)   # the labels real devices sent: read, nothing is spent
        before()
        return y
    # another population's reports would be randomized again as true labels
    refuse_foreign_labels(mech, G, y)
    check = getattr(mech, "check_randomize", None)
    if check is not None:   # (a mechanism without it: its checks come after the reads)
        check(y, G)
    before()
    return mech.randomize(y, G)


def classifier_label_mechanism(clf):
    """The label randomiser of a classifier with ``eps_y`` and ``classes`` (LPGNN, RGNN),
    unfitted; with ``classes=None`` the domain it reads from the labels is charged under
    the classifier's name."""
    mech = LabelRandomizedResponse(clf.eps_y, classes=clf.classes,
                                   random_state=clf.random_state)
    if clf.classes is None:
        mech._classes_read_by = step_kind(clf)
    return mech
