"""The server's side of a deployment: the spec it publishes, and the mechanism of a spec."""

import importlib
import numbers
import secrets
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError

from ..device._kinds import KINDS, plan
from ..device._spec import SpecError, read_spec
from ..exceptions import PrivacyLeakWarning
from ._spec import check_hashing_maps

__all__ = ["collection_spec", "mechanism_from_spec"]


def collection_spec(estimator, *, n_features=None, node_ids=None, simulation=False):
    """The public spec devices answer, made by the server from a mechanism.

    A fitted mechanism gives the spec of its collection; an unfitted one is fitted
    on placeholder data that fixes only what the spec needs (the number of
    features, the directory of users), never on private data.

    Parameters
    ----------
    estimator : mechanism
        A feature mechanism (e.g. :class:`~skldp.mechanisms.HDSMechanism`), a
        :class:`~skldp.mechanisms.LabelRandomizedResponse` or an
        :class:`~skldp.mechanisms.EdgeRR`, fitted or not. Give feature mechanisms
        their public bounds (``feature_range``) and label mechanisms their
        ``classes``.
    n_features : int or None, default=None
        The number of features of an unfitted feature mechanism.
    node_ids : array-like or None, default=None
        Every user's id, for an unfitted :class:`~skldp.mechanisms.EdgeRR` (an
        adjacency list names other users, so the directory is public; the spec
        holds its size and digest).
    simulation : bool, default=False
        ``estimator.random_state`` must be ``None``: in a deployment every
        device draws its own secret randomness, and a spec made from a seeded
        estimator says that every report could be recomputed from a public
        number. Pass ``True`` to say this is a simulation.

    Returns
    -------
    spec : CollectionSpec
        Validated as a device reads it (:func:`skldp.device.read_spec`); it
        holds no secret.

    Examples
    --------
    >>> from skldp.mechanisms import HDSMechanism
    >>> from skldp.population import collection_spec
    >>> spec = collection_spec(HDSMechanism(1.0, k=2, feature_range=(0, 1)), n_features=8)
    >>> spec.kind, spec.epsilon, spec.public_state["k"]
    ('skldp.mechanisms.HDSMechanism', 1.0, 2)
    """
    name = type(estimator).__name__
    if getattr(estimator, "privacy_model", "local") != "local":
        raise ValueError(f"{name} is a central-DP step: devices answer local collections only.")
    if getattr(estimator, "random_state", None) is not None and not simulation:
        raise ValueError(
            f"{name} has random_state={estimator.random_state!r}: a spec made from it would "
            "tie every report to a public number, and whoever knows it can invert the "
            "reports. In a deployment each device draws its own secret randomness: set "
            "random_state=None, or pass simulation=True if this is a simulation.")
    spec = getattr(estimator, "collection_", None)
    if spec is None:
        spec = _placeholder_spec(estimator, name, n_features, node_ids)
    elif "edges" not in estimator.protects:
        # a fitted mechanism may hold a public value it read from the private data (its
        # bounds, its classes): its parameters alone must fix every public value
        _placeholder_spec(estimator, name, getattr(estimator, "n_features_in_", n_features),
                          node_ids)
    if spec.model != "local":
        raise ValueError(f"{name} is a central-DP step: devices answer local collections only.")
    if not spec.id:   # not bound to simulated users (a label randomizer): a fresh nonce
        spec = spec.with_nonce(secrets.token_hex(8))
    spec = read_spec(spec.to_dict())   # validated as a device reads it
    check_hashing_maps(spec)
    return spec


def _placeholder_spec(estimator, name, n_features, node_ids):
    """The spec of ``estimator``'s parameters, fitted on a placeholder (no data): an
    error if a public value would have to be read from the data."""
    with warnings.catch_warnings():
        # the placeholder is no data: a public value read from it would be made up
        warnings.simplefilter("error", PrivacyLeakWarning)
        try:
            return _fit_placeholder(clone(estimator), name, n_features, node_ids)
        except PrivacyLeakWarning as w:
            raise ValueError(f"{name} reads a public value from the data it is fitted on "
                             f"({w}); a spec needs it from public knowledge.") from None


def _fit_placeholder(est, name, n_features, node_ids):
    from .._graph_data import GraphData
    from ..device._random import _as_id_array, _id_sequence
    protects = getattr(est, "protects", ())
    if "labels" in protects:
        est.fit()
    elif "edges" in protects:
        if node_ids is None:
            raise ValueError(f"an unfitted {name} needs node_ids: the directory of users "
                             "whose lists it collects.")
        # as GraphData and received_graph read them (tuples whole, integers exact)
        ids = _as_id_array(_id_sequence(node_ids))
        est.fit(GraphData(np.zeros((len(ids), 0)), _empty(len(ids)), node_ids=ids))
    elif "features" in protects:
        if not isinstance(n_features, numbers.Integral) or n_features < 1:
            raise ValueError(f"an unfitted {name} needs n_features (an integer >= 1).")
        # a row inside the declared domain (a GRR-FS category list may leave out 0)
        row = getattr(est, "_placeholder_row", None)
        est.fit(GraphData(np.zeros((1, int(n_features))) if row is None else
                          np.asarray(row(int(n_features)), dtype=np.float64)[None, :]))
    else:
        raise TypeError(f"{name} is not a local DP mechanism (it protects nothing).")
    return est.collection_


def _empty(n):
    import scipy.sparse as sp
    return sp.csr_matrix((n, n))


def mechanism_from_spec(spec, *, fitted=True):
    """The mechanism that made a spec: its class with the spec's parameters.

    Fitted (``fitted=True``) it holds the spec's public state and no secret: it
    decodes reports (``_decode``) and, as a pipeline step over the reports of
    that collection, passes them on. Unfitted, it is the step to put in a
    pipeline (or a classifier's ``label_mechanism``) over collected reports.

    Parameters
    ----------
    spec : CollectionSpec, dict or JSON text
    fitted : bool, default=True

    Returns
    -------
    mechanism

    Raises
    ------
    SpecError
        A spec a device refuses, or one whose parameters its mechanism does not take.
    """
    spec = read_spec(spec)
    if spec.kind not in KINDS:
        raise SpecError(f"unknown mechanism kind {spec.kind!r}.")
    plan(spec)
    check_hashing_maps(spec)
    est = _unfitted(spec)
    if fitted:
        est._restore_public_state(spec, None)
        est.collection_ = spec
        est.epsilon_ = float(spec.epsilon)
        est.protects_ = tuple(est.protects)
        est.ledger_ = None
        est.collected_ = True
    return est


def _unfitted(spec):
    """The mechanism of a (read) spec with its parameters, unfitted: a ``SpecError`` that
    names a parameter its class does not take (``random_state`` too: a spec holds no seed)
    or one its class refuses."""
    module, _, name = spec.kind.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    takes = set(cls().get_params(deep=False)) - {"random_state"}
    unknown = sorted(set(spec.params) - takes)
    if unknown:
        raise SpecError(f"collection spec {spec.id}: {name} takes no parameter(s) {unknown} "
                        f"(its parameters are {sorted(takes)}); the spec was not made by "
                        "skldp.population.collection_spec from a mechanism.")
    est = cls(**{k: _param(v) for k, v in spec.params.items()})
    try:
        est._validate_params()
    except InvalidParameterError as e:
        raise SpecError(f"collection spec {spec.id}: {e}") from None
    return est


def check_spec_params(spec):
    """Refuse (``SpecError``) a read spec whose parameters its mechanism does not take."""
    _unfitted(spec)


def _param(v):
    """A spec's parameter as the estimator takes it ("inf" strings become floats)."""
    if isinstance(v, str) and v in ("inf", "-inf", "nan"):
        return float(v)
    if isinstance(v, list) and len(v) == 2 and all(isinstance(a, (int, float)) for a in v):
        return tuple(v)   # feature_range=(lo, hi)
    return v
