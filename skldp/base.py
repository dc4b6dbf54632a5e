"""Base classes: graph transformers, local DP mechanisms, NodeWise, graph classifiers."""

import contextlib
import functools
import uuid
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, _fit_context, clone
from sklearn.utils import get_tags
from sklearn.utils._param_validation import HasMethods
from sklearn.utils._set_output import _wrap_data_with_container
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_feature_names_in,
    _num_features,
    check_is_fitted,
)

from ._graph_data import GraphData, edges_collected, reads_users_data, refusal_is_read
from .exceptions import InvalidParameterError
from .population._digest import feature_digests
from .population._population import (
    CENTRAL_INFERENCE,
    BudgetExceededError,
    array_population,
)
from .population._reports import collection_of
from .population._spec import (
    CollectionSpec,
    device_step_spec,
    public_params,
    public_value,
    step_kind,
)
from .utils._arrays import distinct, member, sorted_lookup, unique_inverse
from .utils._hashing import content_hash
from .utils._random import _GOLDEN, _mix, array_fingerprint, collection_seed
from .utils.validation import (
    EPS_CONSTRAINT,
    RANDOM_STATE_CONSTRAINT,
    check_feature_array,
    check_feature_names,
    check_finite_features,
    check_graph_data,
    check_input_features,
    check_range_width,
    clip_to_range,
    record_feature_names,
    resolve_feature_range,
    warn_on_names_presence,
)

__all__ = ["GraphTransformerMixin", "LDPMechanism", "NodeWise", "ToPandas", "GraphClassifierMixin",
           "NumberedColumnsMixin",
           "PrivateStepMixin", "fitted_token", "check_population", "population_of",
           "boundary_input", "saved_positions", "collected_spec", "edges_read_by",
           "edges_collected", "note_edge_read", "charge_clear_read", "charge_public_read"]


def collected_spec(X, part="features"):
    """The spec of the collection whose reports are ``X``'s ``part`` (features or
    adjacency), when real devices sent them (:func:`skldp.population.received_graph`);
    ``None`` otherwise."""
    if not isinstance(X, GraphData):
        return None
    st = X._store
    origin = st.feature_origin if part == "features" else st.adjacency_origin
    return origin[1] if origin[0] == "reports" else None


def edges_read_by(origin):
    """The server steps that computed data of this ``origin`` from the users' raw edges
    (the adjacency before an edge mechanism collected it): a tuple of step names, empty
    when none did (see ``GraphTransformerMixin._mark_origin``)."""
    return tuple(origin[3]) if origin[0] == "derived" and len(origin) > 3 else ()


def boundary_input(step, X, part="features"):
    """The population behind ``X`` and the public on-device steps its ``part`` went through.

    A local DP mechanism perturbs what each user's device holds: the raw data, or
    that data after public, stateless on-device steps (a fixed hashing, a fixed
    clip). Features or an adjacency computed on the server (by a step fitted on
    other users' data, by propagation, or from reports) are refused with an
    error that says what to do instead. An edge mechanism (``part="adjacency"``) also
    refuses a view whose features a server step computed from the users' true edges
    (propagation before the edge mechanism): what it passes on would reveal them.
    Plain arrays carry no history: they are taken as the users' data, and their users
    are those of :func:`~skldp.population.array_population`.

    Returns
    -------
    population : Population
    device_steps : tuple of dict
        The specs of the on-device steps, in order.
    """
    if not isinstance(X, GraphData):
        return array_population(population_of(X)), ()
    st = X._store
    origin = st.feature_origin if part == "features" else st.adjacency_origin
    if origin[0] == "reports":
        spec = origin[1]
        raise ValueError(
            f"{type(step).__name__} perturbs what each user's device holds, but its input "
            f"{part} are the reports of collection {spec.id} ({spec.describe()}) that the "
            "users' devices sent: they are already private and must not be perturbed again. "
            "Leave the step out, or give it that collection's parameters "
            "(skldp.population.mechanism_from_spec(spec)) so that it passes them on.")
    if origin[0] != "raw":
        name = type(step).__name__
        raise ValueError(
            f"{name} perturbs what each user's device holds, but its input {part} "
            f"{origin[1]}, which no device can compute. A local DP mechanism must read the "
            "users' own data: put it before server-side steps; instead of a scaler fitted on "
            "the users' data give the mechanism public bounds (feature_range=...); a public, "
            "stateless on-device step (FeatureHashing) may come first; and steps after the "
            "mechanism (scaling its reports) are free post-processing."
            + (_clear_read_already_charged(X, part) if part == "features" else ""))
    readers = edges_read_by(st.feature_origin) if part == "adjacency" else ()
    if readers:
        name = type(step).__name__
        raise ValueError(
            f"{name} collects the users' edges, but a step before {name} read the true edges "
            f"({', '.join(readers)}): the features {name} would pass on were computed on the "
            "server from the users' raw adjacency, so they reveal the edges whatever eps. "
            f"Put {name} first, so that propagation, aggregation and structural features "
            "read the users' reports.")
    return st.population, origin[1]


def _clear_read_already_charged(X, part):
    """A sentence for a refusal of server-computed ``part``: the server steps that read
    these users' ``part`` in the clear before it were charged (epsilon inf), which the
    refusal does not undo, and how to start over; empty if none was."""
    st = X._store
    ledger = st.population.ledger
    users, eps = ledger.per_user(part)
    charged = users[np.isinf(eps)]
    n = int(member(distinct(X.node_keys), charged).sum())
    if not n:
        return ""
    kinds = sorted({e.spec.kind.rsplit(".", 1)[-1] for e in ledger.entries()
                    if e.spec.model == "clear" and part in e.spec.protects})
    restart = (" To start over, call G.new_simulation() on the graph of raw data (new "
               "simulated devices, an empty ledger) and fit the corrected pipeline on it."
               if st.population.simulated else "")
    which = "An earlier step" if len(kinds) == 1 else "Earlier steps"
    return (f" {which} ({', '.join(kinds)}) already read the raw {part} of "
            f"{n} users of this graph in the clear: the ledger charged them epsilon=inf, "
            "which this refusal does not undo, and the report of any pipeline fitted on "
            f"these users states it.{restart}")


#: How the ledger names a mechanism's refusal of the users' values (``refusal_is_read``).
OUTSIDE_DOMAIN = "feature values outside its input domain"


def boundary_users(X, Xf, population):
    """The users whose features ``Xf`` a mechanism reads, for ``refusal_is_read`` and the
    charges of public values read from the data: the GraphData ``X`` (all its nodes), or
    a plain array's ``population`` with its rows' keys (:func:`array_node_keys`)."""
    if isinstance(X, GraphData):
        return X
    return population, array_node_keys(population_of(Xf), Xf.shape[0])


def note_feature_read(step, X, fitting=False):
    """Record in the users' ledger that a server-side ``step`` reads their features in the
    clear (the raw data, or data computed from it on the server): epsilon is infinite.

    The step keeps the ledger of the users it read (``ledger_``, read by
    ``privacy_report``, whether it charged it or read their reports), set
    anew by each fit (``fitting``) and kept by later calls on other graphs. A plain array
    carries no users, so nothing can be recorded: the step is marked instead
    (``_reads_unrecorded``), and a report that finds no ledger states ``inf``.
    Mechanisms, on-device steps and steps that do not read features record nothing.
    """
    if isinstance(step, PrivateStepMixin) or getattr(step, "_device_side", False) or \
            not getattr(step, "_reads_features", True):
        return
    if fitting:
        for name in ("ledger_", "_reads_unrecorded", "_reads_plain_beside_users"):
            step.__dict__.pop(name, None)
    if not isinstance(X, GraphData):
        step._reads_unrecorded = True
        if hasattr(step, "ledger_"):   # fitted on users, then given rows of no known users
            step._reads_plain_beside_users = True
        return
    st = X._store
    if reads_users_data(st.feature_origin):
        st.population.note_clear_read(step_kind(step), "features", X.node_keys, st.token)
    if not hasattr(step, "ledger_"):   # reports too: the step's report lists what they sent
        step.ledger_ = st.population.ledger


def charge_clear_read(step, X, part, keys, refusal):
    """Charge the users ``keys`` of the GraphData ``X`` a read of their ``part`` in the clear
    by ``step`` (epsilon inf); the step keeps ``ledger_``, as :func:`note_feature_read`
    does. Under a budget it refuses with ``refusal``, a pair of sentences: what the step
    reads (the budget is named after it), and what to do instead."""
    st = X._store
    try:
        st.population.note_clear_read(step_kind(step), part, keys)
    except BudgetExceededError as exc:
        raise clear_read_refusal(st.population, refusal) from exc
    if not hasattr(step, "ledger_"):
        step.ledger_ = st.population.ledger


def clear_read_refusal(population, refusal):
    """The error :func:`charge_clear_read` refuses with under ``population``'s budget (also
    for a step that refuses before it spends anything on the way to that read)."""
    return BudgetExceededError(
        f"{refusal[0]}, which no privacy budget admits (this population's is "
        f"{population.budget:.4g} per user). {refusal[1]}")


def charge_public_read(step, population, keys, part, option, read, instead, kind=None):
    """Charge the users ``keys`` of ``population`` a read of their ``part`` in the clear
    (epsilon inf): ``step`` derives a public parameter from their data because ``option``
    (e.g. ``"feature_range=None"``) gives none. The read is named ``<kind>(<option>)`` in the
    ledger (``kind``: the step's, or the one given). Under a budget it refuses with a
    :class:`BudgetExceededError` that says what the step ``read`` and what to pass
    ``instead``; call it before anything derived from the read is kept or released. A
    plain array's users are those of its own population
    (:func:`~skldp.population.array_population`, keys :func:`array_node_keys`)."""
    keys = distinct(np.asarray(keys, dtype=np.uint64))
    if len(keys) == 0:
        return
    kind = step_kind(step) if kind is None else kind
    name = f"{kind.rsplit('.', 1)[-1]}({option})"
    try:
        population.note_clear_read(f"{kind}({option})", part, keys)
    except BudgetExceededError as exc:
        raise BudgetExceededError(
            f"{name} reads {read} from the {part} of {len(keys)} user(s), a read in the "
            f"clear (epsilon=inf) that no privacy budget admits (this population's is "
            f"{population.budget:.4g} per user). The step read nothing. Pass "
            f"{instead}.") from exc


def note_edge_read(step, X, fitting=False):
    """A server ``step`` reads the adjacency of ``X`` (at fit, or at predict).

    At ``fitting`` the step remembers whether its training graph's edges were collected
    (:func:`edges_collected`). A model fitted on collected edges that is then given a
    graph of the true edges reads them in the clear: charged in the users' ledger,
    epsilon infinite. Any other read of the users' true graph is taken as given, unless
    an edge mechanism collects those users' edges, or a central DP training protects
    them, before or after: then it is charged
    the same (``GraphData._note_true_graph_read``). A central DP training's own fit
    (``PrivateStepMixin``) is covered by its guarantee, and a step that reads no
    adjacency (``_reads_adjacency = False``) reads nothing here.
    """
    # (a step that reads no adjacency, MLPHead, predicts from the features alone, whatever
    # graph it was fitted on)
    if not isinstance(X, GraphData) or not getattr(step, "_reads_adjacency", True):
        if fitting:
            step._fit_on_collected_edges = False
        return
    st = X._store
    if fitting:
        step._fit_on_collected_edges = edges_collected(st.adjacency_origin)
        if isinstance(step, PrivateStepMixin):
            return
    elif getattr(step, "_fit_on_collected_edges", False):
        if st.adjacency is not None and reads_users_data(st.adjacency_origin):
            st.population.note_clear_read(step_kind(step), "edges", X.node_keys, st.token)
        return
    # a central DP model's predictions: outside its training's guarantee, as documented
    X._note_true_graph_read((CENTRAL_INFERENCE if isinstance(step, PrivateStepMixin)
                             else "") + step_kind(step))


def labels_sent(G, y):
    """Whether ``y`` are the labels the users of the view ``G`` sent in a label collection:
    ``y`` is marked with that collection (:class:`~skldp.population.LabelReports`, what
    ``randomize`` and ``received_graph`` return) and these users answered it.

    Decided on provenance only for a simulated population, never on the values: whether
    clean labels equal the reports depends on the clean labels, so a charge decided on it
    would tell which labels flipped (even for a marked array whose memory was written
    through). A collection received from real devices (a population not simulated) is also
    checked on the values (the server holds those reports): other labels under its mark
    are clean labels, with a warning.
    """
    cid = collection_of(y)
    if cid is None:
        return False
    population, keys = G.population, G.node_keys[G.rows]
    if not (any(e.spec.id == cid and e.spec.model == "local" and "labels" in e.spec.protects
                for e in population.ledger.entries()) and
            population.received(cid, keys)[1].all()):
        return False
    # (a simulated population's collections, even one recorded by Population.receive:
    # provenance only, the mark is the caller's word)
    received = [] if population.simulated else \
        [s for s in population.collected() if s.id == cid]
    if received:
        differ = int(np.count_nonzero(~sent_these_labels(population, received[0], keys, y)))
        if differ:
            warnings.warn(
                f"labels marked as the reports of collection {cid} (LabelReports) differ "
                f"from what {differ} of these {len(keys)} users sent, received from their "
                "devices: they are read as clean labels (epsilon=inf; refused under a "
                "budget). Pass the labels received_graph returned (a view of them: "
                "y[train]).", UserWarning, stacklevel=3)
            return False
    return True


def sent_these_labels(population, spec, keys, y):
    """Whether each user ``keys[i]`` sent the label ``y[i]`` (a value of the public
    ``classes``) in the received label collection ``spec``: its latest report, or one that a
    later batch replaced (each was sent, and charged).

    Returns
    -------
    sent : ndarray of bool of shape (len(keys),)
        All false when ``y`` is not one label per user.
    """
    y = np.asarray(y)
    if y.shape != keys.shape:
        return np.zeros(len(keys), bool)
    classes = np.asarray(spec.public_state.get("classes", []))
    try:
        pos, found = sorted_lookup(classes, y, sorter=np.argsort(classes, kind="stable"))
    except (TypeError, ValueError):   # labels of another type than the classes
        return np.zeros(len(keys), bool)
    return found & population.sent(spec.id, keys, np.where(found, pos, 0))


#: How the ledger names a refusal of the users' labels (``refusal_is_read``).
LABELS_OUTSIDE_DOMAIN = "labels outside its domain"


def clean_label_users(X, y):
    """The users whose labels ``y`` a refusal of them reads, for ``refusal_is_read`` (asked
    on a refusal only): the view ``X`` when ``y`` are clean labels; ``None`` when they are
    the labels those users sent (:func:`labels_sent`: a refusal of reports tells nothing
    more), or ``X`` is no GraphData of nodes (a PairData's labels are links)."""
    def users():
        if not isinstance(X, GraphData) or hasattr(X, "pairs"):
            return None
        from .model_selection._node_splits import _label_column
        return None if labels_sent(X, _label_column(y)) else X
    return users


def refuse_foreign_labels(step, X, y):
    """Refuse labels ``y`` that users of another population sent (marked with a collection
    that the ledger of ``X``'s users does not hold): no report would count them."""
    if not isinstance(X, GraphData):
        return
    from .model_selection._node_splits import _label_column

    cid = collection_of(_label_column(y))
    if cid is not None and not any(e.spec.id == cid for e in X.population.ledger.entries()):
        raise ValueError(
            f"{type(step).__name__} is given labels that users of another population sent "
            f"(collection {cid}); this GraphData's users sent no such labels, so their "
            "report would not count them. Build this GraphData with population=<the graph "
            "whose users sent the labels> (received_graph(..., population=G) for reports "
            "of real devices), or fit on that graph.")


def note_label_read(step, X, y, *, sent=None):
    """A server ``step`` fits on the labels ``y`` of the rows of ``X``.

    Labels the users sent (a label mechanism's reports: the step's own
    ``label_mechanism_``, or ``y`` marked as the reports of a collection,
    :func:`labels_sent`) read nothing more. Clean labels are taken as given,
    unless a label mechanism collects those users' labels, or a central DP training
    protects them, before or after: then
    the read is charged as a read of their labels in the clear (epsilon inf, refused
    under a budget; :meth:`Population.note_true_read
    <skldp.population.Population.note_true_read>`). A central DP training's own fit
    (``PrivateStepMixin``) is covered by its guarantee. ``sent``: what the caller's
    :func:`labels_sent` of these ``X`` and ``y`` returned (``None``: asked here; asked
    twice, its warning would be given twice).
    """
    if not isinstance(X, GraphData) or isinstance(step, PrivateStepMixin) or \
            getattr(step, "label_mechanism_", None) is not None:
        return
    from .model_selection._node_splits import _label_column

    y = _label_column(y)
    if labels_sent(X, y) if sent is None else sent:
        return
    refuse_foreign_labels(step, X, y)
    keys = distinct(X.node_keys[X.rows])
    X.population.note_true_read(step_kind(step), "labels", keys,
                                f"{X._store.token}:{content_hash(keys)}")


def saved_positions(saved_keys, keys, owner):
    """Positions of ``keys`` among the saved users; a clear error for any other user."""
    rows, found = sorted_lookup(saved_keys, keys, sorter=np.argsort(saved_keys, kind="stable"))
    missing = ~found
    if np.any(missing):
        raise ValueError(
            f"{owner} was saved without its secret (skldp.privacy.forget_secrets), so it "
            f"holds the reports of the users seen then only; {int(missing.sum())} user(s) "
            "have no report. New users need a new collection (fit a new mechanism).")
    return rows


def check_saved_input(step, G, part, digests):
    """Refuse a GraphData whose ``part`` ("features", "adjacency") is not what the users of
    ``step``, saved without its secret (:func:`skldp.privacy.forget_secrets`), answered about:
    their saved reports would be served for other data.

    Where the population can tell, it compares ``digests()`` (the digests of the device
    inputs) with the answers it recorded, read-only; elsewhere (a copy cut off from the
    devices, e.g. in a new process) ``G``'s ``part`` must descend from the data the reports
    were saved for (the same lineage: the GraphData saved with the step, its views, graphs
    derived from it that keep ``part``).
    """
    name, what = type(step).__name__, {"features": "feature rows",
                                       "adjacency": "adjacency lists"}[part]
    changed = G.population.changed_answers(step.collection_, G.node_keys, digests)
    if changed:   # (it tells who changed, as a collection's refusal: a read of the data)
        with refusal_is_read(step, "features" if part == "features" else "edges", G,
                             "changed data"):
            raise ValueError(
                f"{name} was saved without its secret (skldp.privacy.forget_secrets): it "
                f"serves the reports its users sent about their {part} then, but {changed} "
                f"user(s) of this GraphData hold other {what} now, so those reports are not "
                "about these data. A device answers a collection once: collect changed "
                "data with a new collection (fit a new mechanism on these users).")
    saved = getattr(step, "saved_source_", None)   # (None: pickled before it was kept)
    source = getattr(G._store, "feature_source" if part == "features" else "adjacency_source")
    if changed is None and saved is not None and source != saved:
        raise ValueError(
            f"{name} was saved without its secret (skldp.privacy.forget_secrets) and cannot "
            f"ask these users' devices (this copy of their population is cut off from them) "
            f"whether these {part} are those it saved reports for: they were set anew, not "
            f"taken from the GraphData it was saved with. Transform that GraphData (loaded "
            f"with the pipeline), its views, or graphs derived from it that keep its {part}; "
            "changed data need a new collection (fit a new mechanism on these users).")


def population_of(X):
    """Who the rows of ``X`` are: the id of a GraphData's population, or a plain array's
    content hash (plain arrays carry no user ids)."""
    if isinstance(X, GraphData):
        return "graph:" + X.population.id
    return array_fingerprint(X)


def array_node_keys(fingerprint, n):
    """Keys of the users of a plain array: its row positions, told apart from other arrays'."""
    salt = np.uint64(int(fingerprint[:16], 16))
    with np.errstate(over="ignore"):
        return _mix(np.arange(n, dtype=np.uint64) * _GOLDEN ^ salt)


def check_population(estimator, X):
    """Refuse data whose users differ from the ones the collection was drawn for.

    A GraphData's users are its population (shared by every view and derived
    graph; ``GraphData(..., population=G)`` says that other data are the same
    users). A plain array carries no user ids, so its row ``i`` is keyed by its
    position and only the very array (same content) is the same users.
    """
    expected = getattr(estimator, "population_", None)
    got = population_of(X)
    if got == expected:
        return
    name = type(estimator).__name__
    if isinstance(X, GraphData):
        raise ValueError(
            f"{name} was fitted on other users (another GraphData's population). Its "
            "collection belongs to those users; to collect from these, fit it on them (a new "
            "collection). If these are the same users, build the GraphData with "
            "population=<the GraphData it was fitted on>; a changed input still needs a new "
            "collection (a device answers one once). A pipeline loaded from a file answers "
            "only the users of the GraphData saved with it: save that GraphData with the "
            "pipeline (after skldp.privacy.forget_secrets(pipe, G)) and predict on the "
            "loaded one or its views; one rebuilt from the same table is new users.")
    if str(expected).startswith("graph:"):
        raise ValueError(
            f"{name} was fitted on other users (a GraphData's population) and is given a "
            "plain array, whose rows are no known users. Transform a view of the GraphData it "
            "was fitted on. If you passed one, a scikit-learn tool converted it to an array "
            "of its rows on the way (permutation_importance does): apply the tool to the "
            "steps after the mechanism, on their input (pipe[:k].transform(X)).")
    raise ValueError(
        f"{name} was fitted on another array. Plain arrays carry no user ids, so row i is "
        "keyed by its position and row i of another array (another user) would receive the "
        "same noise. Transform the very array the mechanism was fitted on, or wrap the "
        "users' features in GraphData(X, node_ids=ids) and index it (G[rows]).")


class PrivateStepMixin:
    """The protocol of every private step (Design page, "One protocol for private steps").

    A private step declares what it protects (``protects``) and its privacy
    model (``"local"``: each user's report; ``"central"``: the released model).
    When fitted it holds the public :class:`~skldp.device.CollectionSpec` of
    the collection it makes (``collection_``), its cost (``epsilon_``,
    ``delta_``), the :class:`~skldp.population.Ledger` its users' answers go to
    (``ledger_``), and it can forget its secret (``_forget_secret``). The
    accounting reads ledgers, never a step's class.
    """

    protects = ()
    privacy_model = "local"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _restores_fit(cls)   # a failed fit leaves the step as it was

    def _open_collection(self, population, *, epsilon, public_state=None, device_steps=(),
                         delta=0.0):
        """Fix this fit's collection: its public spec, its secret seed and its ledger.

        The seed is a keyed hash of ``random_state`` and the spec's body
        (:func:`skldp.utils.collection_seed`): two different requests never share
        random numbers, the same request with the same integer ``random_state``
        is the same collection (a device answers it once), and
        ``random_state=None`` takes a new seed from the OS's entropy (a new
        collection at every fit). The spec's nonce is a keyed hash of the seed
        with the population's secret (``_bind_collection``), and its id a digest
        of its content: neither reveals the seed or ``random_state``.
        """
        # The ledger's own invariant, even where scikit-learn's parameter checks are
        # skipped (set_config(skip_parameter_validation=True)): an answer costs eps > 0.
        if not float(epsilon) > 0:
            raise InvalidParameterError(f"{type(self).__name__}: the budget of a report must "
                                        f"be > 0 (check eps), got {epsilon!r}.")
        spec = CollectionSpec(id="", kind=step_kind(self), protects=tuple(self.protects),
                              epsilon=float(epsilon), delta=float(delta),
                              model=self.privacy_model, params=public_params(self),
                              public_state=public_value(public_state or {}),
                              device_steps=tuple(device_steps))
        self.seed_ = collection_seed(self.random_state, spec.seed_identity())
        self.collection_ = spec
        self.epsilon_ = float(epsilon)
        self.protects_ = tuple(self.protects)
        self.ledger_ = None
        if population is not None:
            self._bind_collection(population)
        return self.collection_

    def _bind_collection(self, population):
        """Give the collection its nonce and id for the devices of ``population``."""
        self.collection_ = self.collection_.with_nonce(population.nonce(self.seed_))
        self.ledger_ = population.ledger

    def _check_unchanged(self):
        """Refuse parameters changed since fit: a step perturbs with what it fixed then."""
        if public_params(self) != self.collection_.params:
            changed = sorted(k for k, v in public_params(self).items()
                             if self.collection_.params.get(k) != v)
            raise ValueError(
                f"{type(self).__name__}'s parameters {changed} changed since it was fitted; "
                "its collection was made with the old values, and the new ones would not be "
                "what epsilon_ and the ledger state. Fit it again (a new collection).")

    def _fit_collected(self, X, spec):
        """Fit on the reports of ``spec`` that real devices sent: adopt the collection.

        The step does not perturb again: it takes the collection's spec (its id,
        budget and public state) and the ledger of the users who answered, and
        :meth:`transform` passes the reports on (``collected_`` is True). Its
        parameters must be the collection's.
        """
        name = type(self).__name__
        if step_kind(self) != spec.kind:
            raise ValueError(
                f"{name} is given the reports of collection {spec.id} ({spec.describe()}), "
                "another mechanism's. Use that collection's mechanism "
                "(skldp.population.mechanism_from_spec(spec)) or leave the step out: "
                "skldp.population.received_graph has already decoded the reports.")
        mine = public_params(self)
        changed = sorted(k for k in set(mine) | set(spec.params)
                         if mine.get(k) != spec.params.get(k))
        if changed:
            diff = ", ".join(f"{k}={mine.get(k)!r} (collection: {spec.params.get(k)!r})"
                             for k in changed)
            raise ValueError(
                f"{name} is given the reports of collection {spec.id}, made with other "
                f"parameters: {diff}. A step over collected reports must state the "
                "collection's parameters (skldp.population.mechanism_from_spec(spec)).")
        self._restore_public_state(spec, X)
        self.collection_ = spec
        self.epsilon_ = float(spec.epsilon)
        self.protects_ = tuple(self.protects)
        self.ledger_ = X.population.ledger if isinstance(X, GraphData) else None
        self.population_ = population_of(X) if X is not None else None
        self.collected_ = True
        self.__dict__.pop("seed_", None)
        return self

    def _restore_public_state(self, spec, X):   # pragma: no cover - per mechanism
        raise NotImplementedError

    def _collected_output(self, G, part):
        """``G`` itself, when its ``part`` is the reports of this step's collection."""
        spec = collected_spec(G, part)
        if spec is None or spec.id != self.collection_.id:
            raise ValueError(
                f"{type(self).__name__} was fitted on the reports of collection "
                f"{self.collection_.id} that real devices sent; it holds no secret and "
                f"cannot perturb anything else. Give it that graph (or its views).")
        return G

    def _check_device_steps(self, device_steps):
        if self.collection_.version < 5:
            # fitted before specs shipped FeatureHashing's map: the map is a function of
            # the step's parameters and width, so the request is the same without it
            device_steps = [{k: v for k, v in s.items() if k != "public_state"}
                            for s in device_steps]
        if tuple(device_steps) != tuple(self.collection_.device_steps):
            raise ValueError(
                f"The on-device steps before {type(self).__name__} changed since it was fitted "
                f"(then: {[s['kind'] for s in self.collection_.device_steps]}, now: "
                f"{[s['kind'] for s in device_steps]}, or their parameters): its collection "
                "asked the devices for other inputs. Fit the pipeline again.")


#: Active on-disk caches of whole-graph results (``skldp.experiments.GraphCache``); the last wins.
_GRAPH_CACHES = []


def clone_private_step(step):
    """``clone(step)`` that keeps a ``random_state`` given as a RandomState or Generator.

    ``clone`` copies such an object: the copy would draw the same seed at every fit
    (one collection for every fit, where the step alone makes a new one), the same
    seed the caller's object then gives the model that holds the step, so a collection's
    key would be a model's training seed.
    """
    copy = clone(step)
    rs = getattr(step, "random_state", None)
    if isinstance(rs, (np.random.RandomState, np.random.Generator)):
        copy.set_params(random_state=rs)
    return copy


def fitted_token(estimator):
    """A hash of an estimator's parameters and fitted state.

    Used as the memo key of whole-graph results (Design page, "Memoisation of
    whole-graph steps"): two
    estimators with the same token produce the same output on the same graph.
    """
    params = {k: v for k, v in estimator.get_params(deep=False).items()
              if k != "random_state" or not hasattr(estimator, "seed_")}
    # The seed, the request and the data identify the output; which population answered
    # (the spec's nonce and id, keyed by its devices' secret), and its ledger (which
    # changes as users answer), do not: a cache may share reports between simulations.
    state = {k: v for k, v in vars(estimator).items()
             if k.endswith("_") and not k.startswith("_") and k not in ("ledger_", "population_")}
    spec = state.get("collection_")
    if spec is not None:
        state["collection_"] = (spec.body(), spec.epsilon, spec.delta)
    try:
        # (its class by content too: a step class redefined in a notebook is another step)
        return content_hash((type(estimator), params, state))
    except Exception:  # noqa: BLE001 - unhashable (a lock in a closure): no sharing
        return UNSHARED + uuid.uuid4().hex


#: The prefix of a token that keys nothing twice: no memo or cache entry is shared.
UNSHARED = "unshared:"


def put_back(est, state):
    """Set the attributes of ``est`` to ``state`` (a ``dict(vars(est))`` taken before)."""
    vars(est).clear()
    vars(est).update(state)


def restores_on_failure(method):
    """Wrap ``method`` (a ``fit``, or a call that binds users) so that, if it raises (a
    refused collection, a bad input, Ctrl-C), the estimator is left as it was: no mix of
    a new ``classes_``, ``ledger_`` or ``label_mechanism_`` with an old ``module_``.
    What users sent during the failed call stays charged in their population's ledger.
    Applied once (a wrapped method is returned as it is).
    """
    if getattr(method, "_skldp_restores", False):
        return method

    @functools.wraps(method)
    def wrapped(self, *args, **kwargs):
        # shallow: no fit mutates a fitted attribute in place (each builds new objects)
        before = dict(vars(self))
        try:
            return method(self, *args, **kwargs)
        except BaseException:
            put_back(self, before)
            raise

    wrapped._skldp_restores = True
    return wrapped


def _restores_fit(cls):
    """Make the ``fit`` that ``cls`` itself defines restore the estimator on failure."""
    if "fit" in cls.__dict__:
        cls.fit = restores_on_failure(cls.__dict__["fit"])


def _records_fit_input(fit):
    """Wrap ``fit`` so that it records what later calls compare with.

    The names of ``X`` (a GraphData's ``feature_names``, a DataFrame's string
    columns) are stored after a successful fit, as scikit-learn does; unnamed input
    removes those of an earlier fit. A server step that reads the adjacency also
    notes whether it was fitted on collected edges (:func:`note_edge_read`). A
    failed fit leaves the step as it was (:func:`restores_on_failure`).
    """
    if getattr(fit, "_skldp_records_names", False):
        return fit
    if getattr(fit, "_skldp_restores", False):   # (wrapped by another mixin first)
        fit = fit.__wrapped__

    @restores_on_failure
    @functools.wraps(fit)
    def wrapped(self, *args, **kwargs):
        # (a failed fit restored: nothing half set - check_is_fitted passed on a step whose
        # transform said it was not fitted - nothing overwritten - the earlier collection's
        # seed with a failed fit's bounds, after the parameters were set back, answered a
        # second time for free)
        out = fit(self, *args, **kwargs)
        X = args[0] if args else kwargs.get("X")
        record_feature_names(self, X)
        if self._reads_adjacency and not isinstance(self, PrivateStepMixin):
            note_edge_read(self, X, fitting=True)
        return out

    wrapped._skldp_records_names = True
    return wrapped


def _wraps_plain_output(method):
    """Wrap ``transform`` (or ``fit_transform``): plain-array outputs follow ``set_output``;
    GraphData never.

    ``transform`` first compares the names of ``X`` (a GraphData's ``feature_names``, a
    DataFrame's string columns) with those seen in fit, as scikit-learn does
    (:func:`~skldp.utils.validation.check_feature_names`): the same columns in another
    order would otherwise be transformed silently wrong. A step that reads no feature
    (``_reads_features = False``) is not checked.
    """
    if getattr(method, "_skldp_wraps_output", False):
        return method
    checks_names = method.__name__ == "transform"

    @functools.wraps(method)
    def wrapped(self, X, *args, **kwargs):
        if checks_names and self._reads_features:
            check_feature_names(self, X)
        return self._wrap_plain_output(method(self, X, *args, **kwargs), X)

    wrapped._skldp_wraps_output = True
    return wrapped


class NumberedColumnsMixin:
    """For a step that makes new columns: ``get_feature_names_out`` names them
    ``<prefix>0``, ``<prefix>1``, ... (the class's ``_column_prefix``, as many as
    ``_n_columns_out()`` gives). Put it before :class:`GraphTransformerMixin`."""

    _column_prefix = "x"

    def get_feature_names_out(self, input_features=None):
        """One name per output column: the step's prefix and the column's number.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Checked against ``feature_names_in_`` / ``n_features_in_`` as in
            scikit-learn; the output names do not depend on them.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self)
        check_input_features(self, input_features)
        return np.asarray([f"{self._column_prefix}{i}" for i in range(self._n_columns_out())],
                          dtype=object)


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
    ``feature_names`` (or a pandas DataFrame) sets ``feature_names_in_``,
    :meth:`transform` refuses named input whose names differ from them (the
    same columns in another order included; unnamed input is not checked), and
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
            cls.fit = _records_fit_input(cls.__dict__["fit"])
        for method in ("transform", "fit_transform"):
            if method in cls.__dict__:
                setattr(cls, method, _wraps_plain_output(cls.__dict__[method]))

    @_records_fit_input
    def fit(self, X, y=None):
        """Check the input; most propagation steps learn nothing."""
        G = check_graph_data(X, self, **self._graph_requirements)
        self.n_features_in_ = G.shape[1]
        self.__dict__.pop("ledger_", None)   # set by the first transform after this fit
        self.__dict__.pop("_reads_unrecorded", None)
        return self

    @_wraps_plain_output
    def transform(self, X):
        """Apply the step over the whole graph and return the rows of ``X``."""
        check_is_fitted(self)
        G = check_graph_data(X, self, **self._graph_requirements)
        self._check_n_features(G)
        note_feature_read(self, G)
        if self._reads_adjacency and not isinstance(self, PrivateStepMixin):
            note_edge_read(self, G)   # the edges it reads (charged when due)
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

            # An active skldp.experiments.GraphCache shares the result between processes;
            # a private step's users still answer through their population first (the
            # ledger records them; the cache only spares recomputing the same reports).
            if _GRAPH_CACHES and isinstance(self, PrivateStepMixin):
                self._answer(full)
            out = self._mark_origin(full, _GRAPH_CACHES[-1].fetch(self, full, key[1], compute)
                                    if _GRAPH_CACHES else compute())
            out = G.memo_set(key, out)
        return out

    #: A public, stateless step that each device can run on its own data before a
    #: mechanism (its output is still the users' data, after this step).
    _device_side = False

    #: Whether the step reads the features of its input (StructuralFeatures reads the
    #: graph only): a step that reads the users' raw features on the server is recorded
    #: in their ledger as reading them in the clear.
    _reads_features = True

    @property
    def _reads_adjacency(self):
        """Whether the step reads the adjacency of its input: it requires one (the
        ``_graph_requirements`` propagation, aggregation and structural features declare)."""
        req = self._graph_requirements
        return bool(req.get("require_adjacency") or req.get("require_symmetric"))

    def _mark_origin(self, G, out):
        """Record where the parts of ``out`` this step replaced come from (see boundary_input).

        An origin is ``("raw", on-device steps)`` (the users' data), ``("reports", spec)``,
        or ``("derived", description, from the users' data?)``: whether a step after this
        one reads the users' data (in the clear) depends on the third item. Features
        computed from the users' raw edges (a step that reads an adjacency no edge
        mechanism collected, or features computed from such features) carry a fourth
        item, the names of the steps that read those edges (:func:`edges_read_by`): an
        edge mechanism after them is refused. An adjacency an edge mechanism collected,
        or computed from such an adjacency, carries ``True`` as its fourth item
        (:func:`edges_collected`).
        """
        src, st = G._store, out._store
        if st is src:
            return out
        name = type(self).__name__
        read = reads_users_data(src.feature_origin) and self._reads_features
        edges = edges_read_by(src.feature_origin) if self._reads_features else ()
        if self._reads_adjacency and reads_users_data(src.adjacency_origin) and \
                name not in edges:
            edges += (name,)
        for part, origin in (("features", "feature_origin"), ("adjacency", "adjacency_origin")):
            if st.same(src, part):   # the input's own data (an identity step): its origin
                setattr(st, origin, getattr(src, origin))
                source = "feature_source" if part == "features" else "adjacency_source"
                setattr(st, source, getattr(src, source))
                continue
            before = getattr(src, origin)
            if part == "features" and "features" in getattr(self, "protects", ()):
                after = ("derived", f"are the reports of {name}", False)
            elif part == "adjacency" and "edges" in getattr(self, "protects", ()):
                after = ("derived", f"are the reports of {name}", False, True)
            elif self._device_side and before[0] == "raw" and part == "features":
                after = ("raw", before[1] + (device_step_spec(self, G.shape[1]),))
                st.feature_source = src.feature_source   # (a function of those data)
            elif read if part == "features" else reads_users_data(before):
                after = ("derived", f"were computed on the server by {name} from the users' "
                                    "raw data", True)
            else:
                after = ("derived", f"were computed on the server by {name}", False)
            if part == "features" and edges and after[0] == "derived" and \
                    "features" not in getattr(self, "protects", ()):
                after += (edges,)
            if part == "adjacency" and len(after) == 3 and edges_collected(before):
                after += (True,)   # computed from collected edges (a sample of them)
            setattr(st, origin, after)
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


# Reports stay below float64's maximum (1.8e308) with room for the noise's tail and the
# mechanisms' constant factors.
_MAX_REPORT_SCALE = 1e300


class LDPMechanism(PrivateStepMixin, GraphTransformerMixin, BaseEstimator):
    """Base class of local DP feature mechanisms.

    Fitting a mechanism fixes its *collection* (Design page, "Local DP is a
    protocol"): the public spec (kind, parameters, bounds, the on-device steps
    before it) and a secret seed. Transforming asks the users' devices, through
    their :class:`~skldp.population.Population`, for their reports; the
    population records each answer in its ledger. A user's report is a pure
    function of the seed, the user and the input it answers about: the same at
    fit and predict time, for any subset or order of rows, after pickling; a
    collection asked about a changed input is refused (collect it anew).

    Only the users' own data may come in (see ``skldp.base.boundary_input``); a
    parameter changed after fit is refused until the mechanism is fitted again.
    On :class:`~skldp.GraphData` a user is its ``node_id``; on a plain array, its
    row position in that very array (any other array raises).

    ``random_state=None`` takes the seed from the operating system's entropy (a
    new collection at every fit and CV fold); an integer makes the same request
    the same collection, for reproducible simulations. Anyone who knows
    ``seed_`` (or an integer ``random_state``) can invert every report; see
    :func:`skldp.privacy.forget_secrets` to save a pipeline without them.

    Subclasses set ``protects`` and implement ``_perturb(X, keys)`` where
    ``X`` holds the clipped raw features of the given users (dense or CSR) and
    ``keys`` the uint64 keys to draw their random numbers from, and
    ``_epsilon_total()``.

    Attributes
    ----------
    collection_ : CollectionSpec
        The public spec of this fit's collection.
    seed_ : int
        Seed of this collection (secret).
    feature_min_, feature_max_ : ndarray of shape (n_features,)
        Bounds used to clip and scale the features.
    epsilon_ : float
        The per-user privacy budget spent by one report (``inf`` without privacy).
    protects_ : tuple of str
        What the guarantee covers (``("features",)`` for feature mechanisms).
    ledger_ : Ledger
        Where the users' answers are recorded.
    """

    protects = ("features",)
    _graph_requirements = {}
    # dtype of the dense device input (clip_to_range); None keeps float32 rows as they
    # are, for a device program that widens only the values it takes
    _input_dtype = np.float64
    # the reports estimate the features in their units, scaling the range's width back
    # (not HDS's, not GRR-FS's codes)
    _reports_in_feature_units = True
    _parameter_constraints = {
        "eps": [EPS_CONSTRAINT],
        "feature_range": [None, "array-like"],   # resolve_feature_range checks the pair
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Validate ``eps``, store the bounds and fix the collection (or adopt the
        collection whose reports ``X`` holds, see ``skldp.base.collected_spec``)."""
        spec = collected_spec(X, "features")
        if spec is not None:
            return self._fit_collected(X, spec)
        self.__dict__.pop("collected_", None)
        Xf = self._all_features(X)
        population, device_steps = boundary_input(self, X if isinstance(X, GraphData) else Xf)
        with refusal_is_read(self, "features", boundary_users(X, Xf, population),
                             OUTSIDE_DOMAIN):
            check_finite_features(Xf, feature_range=self.feature_range)
        self.feature_min_, self.feature_max_ = resolve_feature_range(
            self.feature_range, Xf, owner=type(self).__name__,
            on_read=lambda: self._charge_bounds_read(X, Xf, population))
        self.n_features_in_ = Xf.shape[1]
        self._setup_checked()
        self.population_ = population_of(X if isinstance(X, GraphData) else Xf)
        self._open_collection(population, epsilon=self._epsilon_total(),
                              device_steps=device_steps, public_state=self._public_state())
        return self

    def _charge_bounds_read(self, X, Xf, population, option="feature_range=None",
                            read="the feature bounds (each column's minimum and maximum)",
                            instead="feature_range=(lo, hi) from public knowledge"):
        """Charge the users whose features a public value is read from (every row of ``X``:
        a GraphData's whole store, or a plain array's rows) a read in the clear, before the
        value is derived (:func:`charge_public_read`)."""
        users = boundary_users(X, Xf, population)
        keys = users.node_keys if isinstance(users, GraphData) else users[1]
        charge_public_read(self, population, keys, "features", option, read, instead)

    def _public_state(self):
        """Public values fixed at fit that the spec must state (bounds, dimensions)."""
        return {"n_features": self.n_features_in_, "feature_min": self.feature_min_,
                "feature_max": self.feature_max_}

    def _restore_public_state(self, spec, X):
        """The fitted state of a collection from its spec alone (reports decoded on the
        server, see :meth:`_fit_collected`)."""
        ps = spec.public_state
        self.n_features_in_ = int(ps["n_features"])
        if X is not None and X.shape[1] != self.n_features_in_:
            raise ValueError(f"The reports have {X.shape[1]} columns; collection {spec.id} "
                             f"has {self.n_features_in_} features.")
        self.feature_min_ = np.asarray(ps["feature_min"], dtype=np.float64)
        self.feature_max_ = np.asarray(ps["feature_max"], dtype=np.float64)
        self._setup_checked()
        if public_value(self._public_state()) != ps:
            raise ValueError(f"{type(self).__name__} with these parameters would fix another "
                             f"public state than collection {spec.id}'s.")

    def _setup_checked(self):
        """:meth:`_setup_fit`, then refuse bounds and a budget whose reports overflow
        (bounds too narrow, from a fit or a collection's spec, before)."""
        check_range_width(self.feature_min_, self.feature_max_)
        with np.errstate(over="ignore"):   # (refused just below)
            self._setup_fit()
        self._check_report_scale()

    def _check_report_scale(self):
        """Refuse bounds and a budget whose reports overflow float64: a report scales the
        width of the range by up to a few times ``n_features / eps``."""
        if not self._reports_in_feature_units:
            return
        eps = self._epsilon_total()
        width = float(np.max(self.feature_max_ - self.feature_min_))
        with np.errstate(over="ignore"):
            scale = width * self.n_features_in_ / eps if np.isfinite(eps) else width
        if not scale <= _MAX_REPORT_SCALE:
            raise ValueError(
                f"{type(self).__name__}: feature_range's width ({width:.3g}) times n_features "
                f"/ eps ({self.n_features_in_} / {eps:.3g}) is {scale:.3g}; the reports scale "
                "the width by about n_features / eps and would overflow to inf. Use narrower "
                "public bounds (e.g. in the features' own unit) or a larger eps.")

    def _check_fitted(self):
        check_is_fitted(self, "epsilon_")

    def _fitted_eps(self):
        """The ``eps`` of the fitted collection (its spec's), whatever ``eps`` is now: what
        its reports were drawn with (``transform`` refuses a changed one)."""
        return float(self.collection_.params["eps"])

    def transform(self, X):
        """The users' reports: one perturbation per user and input, reused on every call."""
        self._check_fitted()
        self._check_unchanged()
        if isinstance(X, GraphData):
            check_population(self, X)
            return super().transform(X)
        if getattr(self, "collected_", False):
            raise ValueError(f"{type(self).__name__} was fitted on reports real devices sent; "
                             "give it the GraphData of those reports.")
        X = check_feature_array(X, ensure_all_finite=False)
        self._check_n_features(X)
        bounds = (self.feature_min_, self.feature_max_) if hasattr(self, "feature_min_") \
            else None   # (GRR-FS has domains, not bounds)
        # (the users of this array: read, whether or not they are those of the fit)
        with refusal_is_read(self, "features", lambda: boundary_users(
                X, X, array_population(population_of(X))), OUTSIDE_DOMAIN):
            check_finite_features(X, feature_range=bounds)
        check_population(self, X)
        # (the population only if devices answer: saved reports are served in any process)
        return self._reports_for(X, array_node_keys(self.population_, X.shape[0]),
                                 lambda: array_population(self.population_), ())

    def _transform_graph(self, G):
        if getattr(self, "collected_", False):
            return self._collected_output(G, "features")
        population, device_steps = boundary_input(self, G, "features")
        if not hasattr(self, "seed_"):   # saved reports: only for the data they are about
            self._check_device_steps(device_steps)
            check_saved_input(self, G, "features", lambda: feature_digests(
                self._users_device_input(G.features, G)))
        Z = self._reports_for(G.features, G.node_keys, population, device_steps)
        return G.with_features(Z, feature_names=G.feature_names)

    def _reports_for(self, X, node_keys, population, device_steps):
        """The users' answers, through their population (or a function giving it); the
        saved ones without the secret."""
        if not hasattr(self, "seed_"):
            rows = saved_positions(self.saved_keys_, node_keys, type(self).__name__)
            return self.saved_reports_[rows]
        if callable(population):
            population = population()
        self._check_device_steps(device_steps)
        Xd = self._users_device_input(X, (population, node_keys))
        return population.collect(self.collection_, node_keys, feature_digests(Xd),
                                  lambda keys: self._perturb(Xd, keys), unique=True)

    def _answer(self, G):
        """Record that the users of ``G`` answer (when an on-disk cache holds the reports)."""
        if hasattr(self, "seed_"):
            population, device_steps = boundary_input(self, G, "features")
            self._check_device_steps(device_steps)
            Xd = self._users_device_input(G.features, G)
            population.collect(self.collection_, G.node_keys, feature_digests(Xd),
                               lambda keys: None, unique=True)

    def _forget_secret(self, X):
        """Keep the reports of the users of ``X`` and delete ``seed_`` (see forget_secrets)."""
        if isinstance(X, GraphData):
            check_population(self, X)
            population, device_steps = boundary_input(self, X, "features")
            keys = X.node_keys
            Z = self._reports_for(X.features, keys, population, device_steps)
            self.saved_source_ = X._store.feature_source
        else:
            X = check_feature_array(X, ensure_all_finite=False)
            check_population(self, X)
            keys = array_node_keys(self.population_, X.shape[0])
            Z = self._reports_for(X, keys, array_population(self.population_), ())
        self.saved_keys_, self.saved_reports_ = keys.copy(), Z
        del self.seed_

    def _users_device_input(self, X, users):
        """:meth:`_device_input` of the rows ``X`` of ``users`` (a GraphData, or a population
        and its users' keys): its refusal of their values (NaN, a code outside the domain)
        is charged as a read of their features (``refusal_is_read``)."""
        with refusal_is_read(self, "features", users, OUTSIDE_DOMAIN):
            return self._device_input(X)

    def _device_input(self, X):
        """What the device program perturbs: the users' rows clipped to the public bounds.

        Two raw rows with the same device input get the same report (and cost
        nothing more): the report is a function of this input only.
        """
        # (clip_to_range refuses NaN and inf: its range check reads them)
        return clip_to_range(X, self.feature_min_, self.feature_max_, owner=type(self).__name__,
                             dtype=self._input_dtype)

    def _all_features(self, X):
        if isinstance(X, GraphData):
            # Bounds apply to every node the mechanism will perturb.
            return X.features
        return check_feature_array(X, ensure_all_finite=False)

    def _setup_fit(self):
        """Fit-time set-up once ``n_features_in_`` and the bounds are known: the checks
        that depend on the data or on several parameters, and the derived attributes.

        The type and range of each parameter are declared in ``_parameter_constraints``
        and checked before, by ``fit`` (scikit-learn's ``_validate_params``).
        """

    def _perturb(self, X, keys):  # pragma: no cover - abstract
        raise NotImplementedError

    def _epsilon_total(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags


def _dense(Z):
    """A transformer's output (dense or sparse) as a float array, to compare outputs."""
    return np.asarray(Z.toarray() if sp.issparse(Z) else Z, dtype=float)


@contextlib.contextmanager
def _names_checked_above():
    """Silence a wrapped transformer's warnings about the presence of feature names: it
    may have been fitted on a GraphData's rows, without them, and :class:`NodeWise`
    checks them itself."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"X (has feature names|does not have "
                                r"valid feature names), but", category=UserWarning)
        yield


class NodeWise(GraphTransformerMixin, BaseEstimator):
    """Apply a plain scikit-learn transformer to the features of every node.

    It is fitted on the rows of the view (the training nodes) and applied to
    all nodes, so that a graph step placed after it sees a whole graph
    (Design page, "Plain transformers before graph steps"). On plain data (an
    array, a list of rows, a DataFrame) it behaves like the wrapped
    transformer.

    It accepts missing or infinite features (e.g. ``NodeWise(SimpleImputer())``
    imputes them); the graph step after it refuses any that remain.
    :meth:`get_feature_names_out` is the wrapped transformer's (given the
    input names), and the output GraphData carries these names, e.g.
    ``pca0, pca1`` for ``NodeWise(PCA(2))``. Input names are checked as
    scikit-learn does: other names, or the same in another order, raise; names
    at fit or at transform only (a GraphData without ``feature_names``, an
    array) warn.

    Before a local DP mechanism only a transform each user's device can run on its
    own data may stand (Design page, "Local DP is a protocol"): pass
    ``on_device=True`` for a public per-user map such as
    ``SimpleImputer(strategy="constant")``. It is then fitted on public rows of
    zeros, never on the users' data, and its parameters, written in the
    mechanism's collection spec, must be plain values (numbers, strings, lists).
    A step whose map depends on those rows (``OneHotEncoder()`` without
    ``categories``), or whose output row depends on other rows, is refused. A
    transformer fitted on the users' rows (``StandardScaler()``) runs on the
    server; a mechanism after it is refused.

    The labels ``y`` reach the wrapped transformer only when it needs them (its
    tags require ``y``, or it cannot be fitted without them, as ``SelectKBest``):
    its output is then a function of the clean labels, so the users of a
    GraphData are charged a read of their labels in the clear (epsilon inf,
    refused under a budget). Unsupervised transformers get ``y=None``.

    Parameters
    ----------
    estimator : transformer
        Any scikit-learn transformer, e.g. ``StandardScaler()``.
    on_device : bool, default=False
        Run it as a public, stateless on-device step (fitted on no user data).

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
    _parameter_constraints = {"estimator": [HasMethods(["fit", "transform"])],
                              "on_device": ["boolean"]}

    def __init__(self, estimator, *, on_device=False):
        self.estimator = estimator
        self.on_device = on_device

    @property
    def _device_side(self):
        return bool(self.on_device)

    # not prefer_skip_nested_validation: the wrapped transformer is the user's, unchecked
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None):
        # Fit on the view's rows in the store's own format (sparse stays sparse), the
        # same format transform() passes for all nodes.
        graph = isinstance(X, GraphData)
        if graph:   # before anything is read
            self._refuse_graph_steps()
        if y is not None and graph:
            from .model_selection._node_splits import _check_label_index
            _check_label_index(y, X)
            refuse_foreign_labels(self, X, y)
        if not self.on_device:
            note_feature_read(self, X, fitting=True)
        # A plain array-like (a list of rows, a DataFrame) reaches the wrapped transformer
        # as it is, which validates it as in scikit-learn; only its width is read here.
        rows = X.features[X.rows] if graph else X
        est = clone(self.estimator)
        if graph and hasattr(est, "set_output"):
            est.set_output(transform="default")  # a global pandas output must not reach the store
        if self.on_device:
            try:   # the devices read the step from the spec: its parameters must be public values
                device_step_spec(est)
            except TypeError as exc:
                named = "give it by its name" in str(exc)   # a type: its name is the fix
                raise ValueError(
                    f"NodeWise(on_device=True) writes {type(est).__name__} into the collection "
                    f"spec that the users' devices run, but {exc}" + ("" if named else
                    " Only parameters that are numbers, strings or lists can be: apply a "
                    "function to each user's row before building the GraphData "
                    "instead.")) from None
            # A public map: fitted on two rows of zeros (some steps need two rows, e.g.
            # SplineTransformer), never on any user's data.
            shape = (2, X.shape[1] if graph else _num_features(X))
            rows, y = (sp.csr_matrix(shape) if sp.issparse(rows) else np.zeros(shape)), None
        if not self.on_device:
            self.estimator_ = self._fit_estimator(est, rows, X, y)
        else:
            try:
                self.estimator_ = self._fit_estimator(est, rows, X, y)
            except Exception as exc:   # nothing of the users' was read: say what it needs
                imputer = any(type(e).__name__ == "SimpleImputer" and
                              not getattr(e, "keep_empty_features", False)
                              for e in [est, *est.get_params(deep=True).values()])
                hint = (" (on sparse features an imputer needs keep_empty_features=True)"
                        if sp.issparse(rows) and imputer else "")
                raise ValueError(
                    f"NodeWise({type(est).__name__}, on_device=True) is fitted on public "
                    f"rows of zeros, and that fit failed{hint}: {exc}") from exc
            self._check_public_fit(sp.issparse(rows), rows.shape[1], graph)
        self.n_features_in_ = X.shape[1] if graph else _num_features(X)
        return self

    def _refuse_graph_steps(self):
        """Refuse a wrapped skldp graph step (a mechanism, a step that reads the adjacency),
        also inside a wrapped pipeline or column transformer: it would get the rows as a
        plain array (a mechanism's users would be that array's, not the graph's)."""
        est = self.estimator
        inner = est.get_params(deep=True).values() if hasattr(est, "get_params") else ()
        for step in [est, *inner]:
            if isinstance(step, PrivateStepMixin) or (
                    isinstance(step, GraphTransformerMixin) and step._reads_adjacency):
                name = type(step).__name__
                raise ValueError(
                    f"{name} is a graph step of skldp: NodeWise would give it the rows as a "
                    "plain array (no graph, no users). Put it in the pipeline itself, not "
                    "inside NodeWise (which wraps plain scikit-learn transformers). Nothing "
                    "was read.")

    def _check_public_fit(self, sparse, d, graph):
        """Refuse an on-device step whose fitted map depends on the row it is fitted on.

        Fitted on the public rows of zeros, ``OneHotEncoder()`` learns the category 0 only,
        ``SimpleImputer(strategy="mean")`` fills 0, ``MinMaxScaler()`` does nothing: maps
        whose state a device would learn from its user's data. Clones fitted on a row of
        ones, on rows of varied values (signed, and positive for steps that refuse
        negatives), on pairs of them (a spread: ``MaxAbsScaler``,
        ``StandardScaler(with_mean=False)``), on four different rows (quantiles) and on
        zeros with a missing row (``add_indicator=True``) must map the probe rows (those
        rows, zeros, missing values) the same; rows outside the step's public domain (its
        fit raises) are not compared.
        """
        varied = np.linspace(-2.5, 3.7, d) if d > 1 else np.array([-2.5])
        positive = np.linspace(0.5, 3.7, d) if d > 1 else np.array([0.5])

        def row(*values):
            r = np.vstack([np.broadcast_to(np.asarray(v, dtype=float), (1, d)) for v in values])
            return sp.csr_matrix(r) if sparse else r

        def out(est, probe):
            try:
                Z = est.transform(probe)
            except Exception:   # a probe the step refuses (NaN): compared as refused
                return None
            return _dense(Z)

        probes = ((0.0, "zeros"), (1.0, "ones"), (varied, "varied values"),
                  (positive, "positive values"), (np.nan, "missing values"))
        for fitted_on, named in (((1.0,), "ones"), ((varied,), "varied values"),
                                 ((1.0, varied), "ones and one of varied values"),
                                 ((1.0, positive), "ones and one of positive values"),
                                 ((0.0, 1.0, varied, positive), "four different values"),
                                 ((0.0, np.nan), "zeros and one of missing values")):
            other = clone(self.estimator)
            if graph and hasattr(other, "set_output"):
                other.set_output(transform="default")
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    other.fit(row(*fitted_on))
            except Exception:   # outside its public domain: nothing to compare
                continue
            for value, what in probes:
                a, b = out(self.estimator_, row(value)), out(other, row(value))
                if (a is None) == (b is None) and (a is None or (
                        a.shape == b.shape and np.allclose(a, b, equal_nan=True))):
                    continue
                name = type(self.estimator).__name__
                hint = " (for sparse features, keep_empty_features=True)" if sparse else ""
                raise ValueError(
                    f"NodeWise({name}, on_device=True) is fitted on public rows of zeros, but "
                    f"its map depends on those rows: fitted on rows of {named}, it transforms "
                    f"a row of {what} differently. On the devices its state would come from "
                    "each user's data. Fix the map with its parameters (e.g. "
                    "OneHotEncoder(categories=[...], dtype='float64'), SimpleImputer("
                    f"strategy='constant', fill_value=...){hint}), or run it on the server, "
                    "after the mechanism.")

    def _fit_estimator(self, est, rows, X, y):
        """Fit ``est`` on ``rows``, with the labels ``y`` only when it needs them.

        It needs them when its tags say so (``target_tags.required``) or when it cannot
        be fitted without them (``SelectKBest``, ``SelectFromModel``, whose tags allow
        ``y=None``): an unsupervised transformer gets ``y=None``, as it ignores ``y``.
        Labels of a GraphData's users handed to it are read in the clear by this
        server-side step: the users are charged an infinite epsilon for their labels
        (a population with a budget refuses it, and the fitted transformer is dropped).
        """
        if y is None:
            return est.fit(rows, None)
        try:
            required = get_tags(est).target_tags.required
        except AttributeError:   # a transformer without scikit-learn's tags: tried without y
            required = False
        if not required:
            try:
                # the warnings of a fit that fails for want of y are not the user's business
                with warnings.catch_warnings(record=True) as caught:
                    fitted = est.fit(rows, None)
            except Warning:   # a warning turned into an error: the fit's own error
                raise
            except Exception:   # it needs y: fitted with the labels below
                est = clone(est)
            else:
                for w in caught:   # the warnings of the fit that is kept, as they came
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno,
                                           source=w.source)
                return fitted
        # charged once the fit succeeds (a failed fit read nothing it releases); under a
        # budget the fitted transformer is dropped before anything is returned
        fitted = est.fit(rows, y)
        self._note_label_read(X, y)
        return fitted

    def _note_label_read(self, X, y):
        """Charge the users of the view ``X`` (its rows: ``y`` holds one label or marker for
        each) a read of their labels in the clear (epsilon inf), unless ``y`` are the labels
        they sent (:func:`labels_sent`); the step keeps ``ledger_``, as for features."""
        if not isinstance(X, GraphData):
            self._reads_unrecorded = True   # no users to charge: the report states inf
            return
        if labels_sent(X, y):   # their reports: nothing more is read
            self.ledger_ = X.population.ledger
            return
        keys = distinct(X.node_keys[X.rows])
        charge_clear_read(self, X, "labels", keys, (
            f"NodeWise({type(self.estimator).__name__}) fits on the labels y of {len(keys)} "
            "user(s), reading them in the clear (epsilon=inf)",
            "Nothing was kept. Use an unsupervised transformer here, or collect the labels "
            "with a label mechanism (LabelRandomizedResponse) and fit on its reports."))

    def transform(self, X):
        check_is_fitted(self, "estimator_")
        # names compared here, as scikit-learn does (the wrapped transformer was fitted on
        # a GraphData's rows without them): another order raises (check_feature_names),
        # names on one side only warn
        warn_on_names_presence(self, X)
        if isinstance(X, GraphData):
            return super().transform(X)
        with _names_checked_above():
            return self.estimator_.transform(X)

    def _transform_graph(self, G):
        # (what the wrapped step refuses depends on the values: charged as a read of them)
        with refusal_is_read(self, "features", G, "feature values its transformer refuses"), \
                _names_checked_above():
            Z = self.estimator_.transform(G.features)
        if self.on_device:   # (a refusal of the step's map, a public fact: free)
            self._check_per_user(G.features, Z)
        return G.with_features(Z)

    #: Rows transformed alone to check that an on-device step maps each row by itself.
    _ROWS_CHECKED = 16

    def _check_per_user(self, X, Z):
        """Refuse an on-device step whose output row depends on other rows than its own.

        The simulation transforms the whole matrix at once, where each device would
        transform its own row: a step that mixes rows (batch statistics, a random draw)
        would put other users' data in each user's report, uncharged. Rows drawn at
        random are transformed alone and compared with the whole matrix's output.
        """
        n = X.shape[0]
        if n < 2:
            return
        Z = Z.tocsr() if sp.issparse(Z) else Z   # (a COO output cannot be sliced)
        rng = np.random.default_rng()
        rows = rng.choice(n, size=min(n, self._ROWS_CHECKED), replace=False)
        for i in rows:
            alone = self.estimator_.transform(X[i:i + 1])
            got, want = _dense(alone), _dense(Z[i:i + 1])
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=1e-9,
                                                          equal_nan=True):
                raise ValueError(
                    f"NodeWise({type(self.estimator).__name__}, on_device=True) is not a "
                    f"per-user step: row {int(i)} transformed alone differs from its row in "
                    "the transform of all rows, so each user's output would hold other "
                    "users' data (or a random draw). Only a map of each row by itself may "
                    "run on the devices; run this step on the server (on_device=False), "
                    "after the mechanism.")

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


class ToPandas(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Hand the rows of a GraphData to plain scikit-learn steps as a pandas DataFrame.

    Scikit-learn reads feature names and a row index from DataFrames only: a plain step
    after graph steps, given their GraphData, sees ``x0, x1, ...`` and row numbers. Put
    this step between them: its output is :meth:`GraphData.to_pandas`, the view's
    rows indexed by node id, with the graph's feature names, so that the next steps
    record ``feature_names_in_`` and ``set_output(transform="pandas")`` keeps the ids.
    A :class:`~skldp.model_selection.PairData` gives the features a plain step sees,
    ``x_u * x_v``, indexed by the pair's ids ``(u, v)``.

    The frame is a plain container, as ``np.asarray(G)`` is: when the features are the
    users' data (not reports), its users are charged a read in the clear (epsilon
    inf; refused under a budget), exactly what the plain step after it would be charged.

    Attributes
    ----------
    n_features_in_ : int
        Number of input features.
    feature_names_in_ : ndarray of str objects
        The input's ``feature_names``, when it has some.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skldp import GraphData
    >>> from skldp import ToPandas
    >>> from skldp.propagation import KProp
    >>> A = sp.csr_array(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
    >>> G = GraphData(np.arange(6.).reshape(3, 2), A, node_ids=["a", "b", "c"],
    ...               feature_names=["age", "income"])
    >>> pipe = make_pipeline(KProp(steps=1), ToPandas(),
    ...                      StandardScaler().set_output(transform="pandas"))
    >>> out = pipe.fit_transform(G[[0, 2]])
    >>> list(out.columns), list(out.index)
    (['age', 'income'], ['a', 'c'])
    """

    _parameter_constraints: dict = {}

    def fit(self, X, y=None):
        """Record the input's width and feature names (nothing is read).

        Parameters
        ----------
        X : GraphData
        y : None
            Ignored.

        Returns
        -------
        self : ToPandas
        """
        self._check_graph(X)
        self.n_features_in_ = X.shape[1]
        if X.feature_names is None:
            self.__dict__.pop("feature_names_in_", None)
        else:
            self.feature_names_in_ = np.asarray(X.feature_names, dtype=object)
        return self

    def transform(self, X):
        """The rows of ``X`` as a DataFrame indexed by node id (by ``(u, v)`` for pairs).

        The frame carries its own column names: the plain steps after it compare them
        with those they were fitted on, as scikit-learn does.

        Parameters
        ----------
        X : GraphData

        Returns
        -------
        frame : pandas.DataFrame of shape (n_rows, n_features)
        """
        check_is_fitted(self)
        self._check_graph(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but ToPandas was fitted on "
                             f"{self.n_features_in_}.")
        if getattr(X, "pairs", None) is None:
            return X.to_pandas()
        # node pairs (PairData): the features a plain step sees, x_u * x_v
        import pandas as pd
        ids = X.node_ids
        index = pd.MultiIndex.from_arrays([ids[:, 0], ids[:, 1]], names=["u", "v"])
        return pd.DataFrame(np.asarray(X), index=index, columns=self._names(X))

    def get_feature_names_out(self, input_features=None):
        """The input names (this step keeps its columns).

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Input names; ``None`` takes ``feature_names_in_`` when fitted on
            named features, else ``x0, x1, ...``.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self)
        return _check_feature_names_in(self, input_features)

    @staticmethod
    def _names(X):
        names = X.feature_names
        return list(names) if names is not None else [f"x{i}" for i in range(X.shape[1])]

    @staticmethod
    def _check_graph(X):
        if not isinstance(X, GraphData):
            raise TypeError(f"ToPandas takes a skldp.GraphData (the output of graph steps), "
                            f"not {type(X).__name__}.")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


# auto_wrap_output_keys=None: the frame is never re-wrapped (a global pandas output would
# rename nothing, a polars one would convert it); these keys keep set_output available, so
# that Pipeline.set_output reaches the steps after it, as GraphTransformerMixin does.
ToPandas._sklearn_auto_wrap_output_keys = {"transform"}


class GraphClassifierMixin(ClassifierMixin):
    """Label handling shared by classifiers on GraphData.

    ``fit`` gets the labelled training rows only; ``-1`` (the semi-supervised
    "unlabelled" convention) in ``y`` is an error, since no label may be
    invented for a node.

    A ``fit`` that fails (bad labels, a refused collection, Ctrl-C in training) leaves
    the classifier as it was.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _restores_fit(cls)

    def _check_labels(self, y, n_rows, X=None):
        """``y`` as a 1-D array of ``n_rows`` labels, at least one (an empty fit is an error);
        with ``X``, the GraphData they label, a Series indexed by other users is refused,
        and so is a node listed twice with two different labels."""
        from .model_selection._node_splits import _check_one_label_per_node, _label_column

        y = _label_column(y, warn=True, X=X)   # a list of strings keeps its NaN markers
        if len(y) != n_rows:
            raise ValueError(f"X has {n_rows} rows but y has {len(y)} labels.")
        if n_rows == 0:
            raise ValueError(f"{type(self).__name__} got 0 rows to fit on (an empty "
                             "selection of nodes or pairs?); fit needs labelled rows.")
        with refusal_is_read(self, "labels", clean_label_users(X, y), LABELS_OUTSIDE_DOMAIN):
            _check_one_label_per_node(y, X, type(self).__name__)
        return y

    def _encode_labels(self, y, n_rows, X=None):
        from .model_selection._node_splits import _check_all_labelled, _labelled_mask

        y = self._check_labels(y, n_rows, X)
        # (refusals of the values of clean labels are reads of them)
        with refusal_is_read(self, "labels", clean_label_users(X, y), LABELS_OUTSIDE_DOMAIN):
            if y.dtype.kind == "f":   # a continuous target gets scikit-learn's error first
                check_classification_targets(y[_labelled_mask(y)])
            _check_all_labelled(y)   # the splitters' test: -2, NaN, None are unlabelled too
            check_classification_targets(y)
            self.classes_, y_enc = unique_inverse(y)
            if len(self.classes_) < 2:
                raise ValueError(f"y has a single class ({self.classes_.tolist()[0]!r}); "
                                 "need at least two.")
        return y_enc

    def predict(self, X):
        """Most probable class of each row."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def score(self, X, y, sample_weight=None):
        """Mean accuracy on the rows of ``X`` with labels ``y`` (as scikit-learn's).

        A pandas Series indexed by other users than ``X``'s rows is refused:
        its labels would be compared with other users' predictions; so are
        unlabelled markers (``-1``), which would count as errors.
        """
        from .model_selection._node_splits import (
            _check_all_labelled,
            _check_label_index,
            _label_column,
        )

        _check_label_index(y, X)
        _check_all_labelled(_label_column(y), action="score")
        return super().score(X, y, sample_weight=sample_weight)
