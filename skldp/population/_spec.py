"""The public description of a collection: what the server asks every device to answer."""

import hashlib
import json
import numbers
from dataclasses import dataclass, field

import numpy as np

__all__ = ["CollectionSpec", "SPEC_VERSION", "public_value", "step_kind", "public_params",
           "device_step_spec"]

#: Version of the spec format (bumped when a field changes meaning).
SPEC_VERSION = 1


def public_value(value):
    """``value`` as plain JSON data (lists, numbers, strings), for a spec.

    Infinite and NaN floats become the strings ``"inf"``, ``"-inf"``, ``"nan"``
    (JSON has no such numbers); numpy arrays and tuples become lists.
    """
    if isinstance(value, (bool, np.bool_)) or value is None or isinstance(value, str):
        return bool(value) if isinstance(value, np.bool_) else value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        v = float(value)
        return v if np.isfinite(v) else ("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(value, np.ndarray):
        return [public_value(v) for v in value.tolist()] if value.ndim else \
            public_value(value.item())
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))
        return {str(k): public_value(v) for k, v in items}
    if isinstance(value, (list, tuple, range)):
        return [public_value(v) for v in value]
    if hasattr(value, "get_params"):   # an estimator given as a parameter: its kind and params
        return {"kind": step_kind(value), "params": public_params(value)}
    raise TypeError(f"{type(value).__name__} is not a public value a spec can hold: {value!r}.")


def step_kind(step):
    """``module.Class`` of a step, with skldp's private modules hidden."""
    module = type(step).__module__
    parts = [p for p in module.split(".") if not p.startswith("_")]
    return ".".join(parts + [type(step).__qualname__])


def public_params(step, exclude=("random_state",)):
    """The step's parameters as public values, without ``random_state`` (a secret)."""
    return {k: public_value(v) for k, v in sorted(step.get_params(deep=False).items())
            if k not in exclude}


def device_step_spec(step):
    """How a public, stateless step that runs on the device is written in a spec."""
    return {"kind": step_kind(step), "params": public_params(step, exclude=())}


@dataclass(frozen=True)
class CollectionSpec:
    """The public description of one collection (Design page, "Local DP is a protocol").

    The server sends it to every device; a device answers it once per value of
    its data. It holds no secret: anyone may read it, and two collections never
    share random numbers.

    Attributes
    ----------
    id : str
        The collection's identifier (public, 16 hex digits).
    kind : str
        The mechanism, e.g. ``"skldp.mechanisms.HDSMechanism"``.
    protects : tuple of str
        ``"features"``, ``"labels"`` or ``"edges"``.
    epsilon : float
        What one answer costs each user (local DP), or the training's epsilon
        (central DP).
    delta : float
        0 for local DP.
    model : {"local", "central"}
    params : dict
        The mechanism's public parameters (``random_state`` excluded).
    public_state : dict
        Public values fixed at fit: bounds, dimensions, label domain.
    device_steps : tuple of dict
        The public, stateless steps each device applies to its raw data before
        the mechanism (kind and parameters), in order.
    version : int
        :data:`SPEC_VERSION`.
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
    version: int = SPEC_VERSION

    def body(self):
        """Everything but the id and the budget: what makes two collections the same request."""
        return {"kind": self.kind, "protects": list(self.protects), "model": self.model,
                "params": self.params, "public_state": self.public_state,
                "device_steps": list(self.device_steps), "version": self.version}

    def to_dict(self):
        """The spec as plain JSON data."""
        out = {"id": self.id, **self.body(), "epsilon": public_value(self.epsilon),
               "delta": public_value(self.delta)}
        return out

    def to_json(self):
        """The spec as a JSON document (keys sorted)."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data):
        """Read a spec written by :meth:`to_dict` (unknown versions are refused)."""
        version = data.get("version")
        if version != SPEC_VERSION:
            raise ValueError(f"collection spec version {version!r} is not supported (this "
                             f"skldp reads version {SPEC_VERSION}).")
        missing = {"id", "kind", "protects", "epsilon"} - set(data)
        if missing:
            raise ValueError(f"collection spec lacks {sorted(missing)}.")
        return cls(id=str(data["id"]), kind=str(data["kind"]),
                   protects=tuple(data["protects"]), epsilon=_number(data["epsilon"]),
                   delta=_number(data.get("delta", 0.0)), model=data.get("model", "local"),
                   params=dict(data.get("params", {})),
                   public_state=dict(data.get("public_state", {})),
                   device_steps=tuple(data.get("device_steps", ())), version=version)

    @classmethod
    def from_json(cls, text):
        """Read a spec written by :meth:`to_json`."""
        return cls.from_dict(json.loads(text))

    def describe(self):
        """One line: kind, what it protects and its budget."""
        name = self.kind.rsplit(".", 1)[-1]
        d = f", delta={self.delta:.3g}" if self.delta else ""
        return f"{name} ({', '.join(self.protects)}; epsilon={self.epsilon:.4g}{d})"


def _number(v):
    return float(v)   # also reads "inf", "-inf" and "nan"


def body_digest(body):
    """A stable hash of a spec's body (JSON with sorted keys)."""
    return hashlib.blake2b(json.dumps(body, sort_keys=True).encode(), digest_size=16).hexdigest()
