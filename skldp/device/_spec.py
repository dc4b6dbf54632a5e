"""The public description of a collection: what the server asks every device to answer.

A spec is a versioned JSON document (language-neutral: objects, arrays, numbers
and strings; ``inf`` and ``nan`` are written as strings). The server makes it
from a mechanism; a device reads it with :func:`read_spec`, which validates it
against the registry of mechanism kinds (:data:`skldp.device.KINDS`).
"""

import copy
import dataclasses
import decimal
import hashlib
import json
import math
import os
from dataclasses import dataclass, field

from ._errors import SpecError, spec_number

__all__ = ["CollectionSpec", "SPEC_VERSION", "SpecError", "read_spec"]

#: Version of the spec format (bumped when a field changes meaning). Version 4: each
#: on-device step states the width of the row it reads (``n_features_in``). Version 5: a
#: FeatureHashing step ships its map (``public_state``: ``columns`` and ``signs``).
SPEC_VERSION = 5

#: The versions still read: an older spec (the journal of an older ledger, reports to
#: decode) reads as it was written; a device answers it unless it has on-device steps that
#: do not fix the width of the raw row (version 3) or a FeatureHashing step without its
#: map (versions 3 and 4).
READABLE_VERSIONS = (3, 4, 5)

_HASHING = "skldp.mechanisms.FeatureHashing"


def spec_version(device_steps):
    """The oldest format that states a spec with these on-device steps: 5 with a
    FeatureHashing step (which ships its map), else 4, so that devices of version 4 answer
    every other spec as before (and its id stays what it was)."""
    hashing = any(isinstance(s, dict) and s.get("kind") == _HASHING for s in device_steps)
    return 5 if hashing else 4


_REQUIRED = ("id", "kind", "protects", "epsilon", "version", "nonce")
_FIELDS = set(_REQUIRED) | {"delta", "model", "params", "public_state", "device_steps",
                            "further_answers"}



def _json_number(v):
    v = float(v)
    if math.isfinite(v):
        return v
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def _number(v, what):
    number = spec_number(v)
    if number is None:
        raise SpecError(f"collection spec field {what!r} must be a number, got {v!r}.")
    return number


@dataclass(frozen=True)
class CollectionSpec:
    """The public description of one collection (Design page, "Local DP is a protocol").

    The server sends it to every device; a device answers it once per value of
    its data. It holds no secret: anyone may read it, and two collections never
    share random numbers.

    Attributes
    ----------
    id : str
        The collection's identifier (public, 16 hex digits): an unkeyed digest
        of every other field. A spec whose content no longer matches its id (a
        copy garbled or edited by mistake) is refused when it is read; the digest
        is not a signature, so whoever changes a field can compute the new id: it
        does not protect a device from a server (or a relay) that publishes other
        parameters. A device protects its user with its own cap,
        ``Device(max_epsilon=...)``, and by checking every spec against what its
        parameters spend (:func:`read_spec`).
    kind : str
        The mechanism, e.g. ``"skldp.mechanisms.HDSMechanism"``.
    protects : tuple of str
        ``"features"``, ``"labels"`` or ``"edges"``.
    epsilon : float
        What one answer costs each user (local DP), or the training's epsilon
        (central DP).
    delta : float
        0 for local DP (a local collection with another delta is refused).
    model : {"local", "central", "clear"}
        ``"clear"``: a server-side step that read the users' data in the clear
        (recorded with an infinite ``epsilon``).
    params : dict
        The mechanism's public parameters (``random_state`` excluded).
    public_state : dict
        Public values fixed at fit: bounds, dimensions, label domain, sample
        sizes: everything a device needs besides ``params``.
    device_steps : tuple of dict
        The public, stateless steps each device applies to its raw data before
        the mechanism (kind, parameters and ``n_features_in``, the width of the row
        the step reads; a FeatureHashing step also its map, ``public_state``), in order.
    version : int
        By default the oldest that states ``device_steps``: :data:`SPEC_VERSION` for a
        spec with a FeatureHashing step, else 4 (versions 3 and 4 are still read).
    nonce : str
        Public and random-looking (16 hex digits): it tells apart two
        collections of the same request (e.g. two fits with ``random_state=None``).
        The simulation derives it from the collection's seed with a key that
        only the simulated devices hold, so it does not reveal an integer
        ``random_state``.
    further_answers : dict or None
        Only in the ledger, for the charge of answers that users sent beyond their
        first to a collection received from real devices:
        ``{"collection": its id, "count": further answers per user}`` (this spec's
        ``epsilon`` is ``count`` times that collection's). Never sent to a device:
        :func:`~skldp.device.read_spec` refuses it (the ledger reads it with
        :meth:`~skldp.device.CollectionSpec.from_dict`).
    """

    id: str
    kind: str
    protects: tuple
    epsilon: float
    delta: float = 0.0
    model: str = "local"
    params: dict = field(default_factory=dict)
    public_state: dict = field(default_factory=dict)
    device_steps: tuple = ()
    version: int = None
    nonce: str = ""
    further_answers: dict = None

    def __post_init__(self):
        if self.version is None:
            object.__setattr__(self, "version", spec_version(self.device_steps))

    def body(self):
        """Everything but the id and the budget: what makes two collections the same request."""
        return {"kind": self.kind, "protects": list(self.protects), "model": self.model,
                "params": self.params, "public_state": self.public_state,
                "device_steps": list(self.device_steps), "version": self.version}

    def seed_identity(self):
        """What a simulated collection's seed is keyed by
        (:func:`skldp.utils.collection_seed`): the body, with the version it had when
        seeds were first drawn from it (3) and without the FeatureHashing maps (version 5),
        so that a new format keeps the seeds, and the recorded runs, of the requests it
        does not change."""
        # A shipped map is a function of its step's random_state and widths (the server
        # refuses a spec where it is not: skldp.population's check_hashing_maps), so the
        # request is the same without it.
        steps = [{k: v for k, v in s.items() if k != "public_state"} if isinstance(s, dict)
                 else s for s in self.device_steps]
        return {**self.body(), "device_steps": steps, "version": 3}

    def to_dict(self):
        """The spec as plain JSON data (a copy: changing it leaves the spec as it is)."""
        out = {"id": self.id, **copy.deepcopy(self.body()), "epsilon": _json_number(self.epsilon),
               "delta": _json_number(self.delta), "nonce": self.nonce}
        if self.further_answers is not None:
            out["further_answers"] = dict(self.further_answers)
        return out

    def content_id(self):
        """The id this spec's content gives: a digest of every field but the id."""
        data = self.to_dict()
        del data["id"]
        text = json.dumps(data, sort_keys=True).encode()
        return hashlib.blake2b(text, digest_size=8, person=b"skldp-spec-id").hexdigest()

    def with_nonce(self, nonce):
        """The same request under ``nonce``, with the id its content gives."""
        spec = dataclasses.replace(self, nonce=str(nonce), id="")
        return dataclasses.replace(spec, id=spec.content_id())

    def to_json(self, indent=None):
        """The spec as a JSON document (keys sorted)."""
        return json.dumps(self.to_dict(), sort_keys=True, indent=indent)

    @classmethod
    def from_dict(cls, data, *, check_kind=True):
        """Read a spec written by :meth:`to_dict`, and validate it.

        Parameters
        ----------
        data : dict
        check_kind : bool, default=True
            Validate the parameters of a local collection against its kind in
            the registry (:data:`skldp.device.KINDS`): an unknown kind, a missing
            bound or a budget below what the parameters spend is an error.
            ``False`` only checks the format (the ledger's journal reads specs of
            any private step, central trainings and custom mechanisms included).

        Raises
        ------
        SpecError
        """
        if not isinstance(data, dict):
            raise SpecError(f"a collection spec is a JSON object, got {type(data).__name__}.")
        version = data.get("version")
        # (an integer: 4.0 equals 4 but is no version, nor is true, which equals 1)
        if isinstance(version, bool) or not isinstance(version, int) or \
                version not in READABLE_VERSIONS:
            raise SpecError(f"collection spec version {version!r} is not supported (this "
                            f"reader reads versions {READABLE_VERSIONS}); ask the server for a "
                            f"spec in version {SPEC_VERSION}, or update the encoder.")
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            raise SpecError(f"collection spec lacks {missing}.")
        unknown = sorted(set(data) - _FIELDS)
        if unknown:
            raise SpecError(f"collection spec has unknown fields {unknown}.")
        for name, typ in (("params", dict), ("public_state", dict), ("device_steps", list),
                          ("protects", list)):
            if name in data and not isinstance(data[name], (typ, tuple)):
                raise SpecError(f"collection spec field {name!r} must be a JSON "
                                f"{'object' if typ is dict else 'array'}, got {data[name]!r}.")
        # deep copies: a spec read shares no list or dict with the data it was read from
        spec = cls(id=str(data["id"]), kind=str(data["kind"]),
                   protects=tuple(data["protects"]), epsilon=_number(data["epsilon"], "epsilon"),
                   delta=_number(data.get("delta", 0.0), "delta"),
                   model=data.get("model", "local"),
                   params=copy.deepcopy(dict(data.get("params", {}))),
                   public_state=copy.deepcopy(dict(data.get("public_state", {}))),
                   device_steps=copy.deepcopy(tuple(data.get("device_steps", ()))),
                   version=version,
                   nonce=str(data["nonce"]),
                   further_answers=_further_answers(data.get("further_answers")))
        if math.isnan(spec.epsilon) or spec.epsilon < 0:   # (a NaN would pass every cap)
            raise SpecError(f"collection spec epsilon must be a number >= 0, got "
                            f"{data['epsilon']!r}.")
        if not 0 <= spec.delta <= 1:   # (NaN fails too)
            raise SpecError(f"collection spec delta must be in [0, 1], got {data.get('delta')!r}.")
        if spec.model not in ("local", "central", "clear"):
            raise SpecError(f"collection spec model must be 'local', 'central' or 'clear', "
                            f"got {spec.model!r}.")
        if check_kind and spec.model == "local":
            from ._kinds import plan
            plan(spec)   # raises SpecError for an unknown kind or bad parameters
        if spec.id != spec.content_id():
            raise SpecError(f"collection spec {spec.id!r} does not match its content (its id "
                            "is a digest of every other field): it was changed after it was "
                            "made. Ask the server for the spec again.")
        return spec

    @classmethod
    def from_json(cls, text, *, check_kind=True):
        """Read and validate a spec from its JSON text (see :meth:`from_dict`)."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise SpecError(f"a collection spec must be JSON: {e}.") from None
        except RecursionError:
            raise SpecError("a collection spec must be JSON: it nests too deep.") from None
        return cls.from_dict(data, check_kind=check_kind)

    def describe(self):
        """One line: kind, what it protects and its budget."""
        name = self.kind.rsplit(".", 1)[-1]
        d = f", delta={significant(self.delta, 3)}" if self.delta else ""
        return f"{name} ({', '.join(self.protects)}; epsilon={significant(self.epsilon)}{d})"


def significant(x, digits=4, up=True, *, exact=False):
    """``x`` as text to ``digits`` significant digits, rounded up (a spend: never printed
    below what it is) or down (``up=False``: what is left); float noise (a relative 1e-9) aside, so
    that 0.1 + 0.2 prints 0.3, unless ``exact`` (a bound: never printed beyond itself). The
    rounding starts from the shortest decimal that reads back as ``x`` (0.3 prints 0.3)."""
    x = float(x)
    text = f"{x:.{digits}g}"
    if not math.isfinite(x) or x == 0 or (float(text) >= x) == up or \
            (not exact and abs(float(text) - x) <= 1e-9 * abs(x)):
        return text
    rounding = decimal.ROUND_CEILING if up else decimal.ROUND_FLOOR
    d = decimal.Context(prec=digits, rounding=rounding).plus(decimal.Decimal(repr(x)))
    return f"{float(d):.{digits}g}"


def _further_answers(value):
    """A spec's ``further_answers`` field, checked: ``None``, or the id of a collection and
    a count of answers."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"collection", "count"} or \
            not isinstance(value["collection"], str) or isinstance(value["count"], bool) or \
            not isinstance(value["count"], int) or value["count"] < 1:
        raise SpecError(f"collection spec field 'further_answers' must be {{\"collection\": "
                        f"an id, \"count\": an integer >= 1}}, got {value!r}.")
    return dict(value)


def read_spec(source):
    """Read and validate a collection spec.

    Parameters
    ----------
    source : CollectionSpec, dict, str or file object
        The spec, its JSON data, its JSON text, or a path or file holding it.

    Returns
    -------
    spec : CollectionSpec

    Raises
    ------
    SpecError
        For a wrong version, an unknown kind, a missing bound, a parameter that
        is not a finite number of its kind, parameters whose cost exceeds the
        spec's ``epsilon``, a local collection whose ``delta`` is not 0, a label
        domain holding ``-1`` or ``null``, or on-device steps whose parameters do
        not fit (a FeatureHashing step writes exactly the width the next step
        reads, and ships a map of an output column and a sign 1 or -1 for each
        column it reads): all checked before the device allocates anything for
        the spec.
        Also for a ledger's charge of further answers (a spec with
        ``further_answers``), which is no collection and is never sent to a device.
    TypeError
        If ``source`` is not a spec, a dict, text, a path or a file object
        (``None``, say).
    """
    spec = _read(source)
    if spec.further_answers is not None:
        raise SpecError(f"collection spec {spec.id!r} is a ledger's charge of further answers "
                        f"to collection {spec.further_answers['collection']!r} "
                        "('further_answers'), not a collection: no device answers it, and "
                        "no report is read against it.")
    return spec


def _read(source):
    if isinstance(source, CollectionSpec):
        return CollectionSpec.from_dict(source.to_dict())
    if isinstance(source, dict):
        return CollectionSpec.from_dict(source)
    if hasattr(source, "read"):
        return CollectionSpec.from_json(source.read())
    if not isinstance(source, (str, os.PathLike)):   # None was opened as the file 'None'
        raise TypeError(f"read_spec reads a CollectionSpec, a dict, JSON text, a path or a "
                        f"file object, got {type(source).__name__}.")
    text = str(source)
    if not text.lstrip().startswith("{"):
        with open(text, encoding="utf-8") as fh:
            text = fh.read()
    return CollectionSpec.from_json(text)


def body_digest(body):
    """A stable hash of a spec's body (JSON with sorted keys)."""
    return hashlib.blake2b(json.dumps(body, sort_keys=True).encode(), digest_size=16).hexdigest()
