"""How the server writes a step's parameters into a collection spec.

The spec itself (:class:`~skldp.device.CollectionSpec`) lives in :mod:`skldp.device`, where the
devices read it.
"""

import numbers

import numpy as np

from ..device._spec import (  # noqa: F401
    _HASHING,
    SPEC_VERSION,
    CollectionSpec,
    SpecError,
    body_digest,
)
from ..device._steps import feature_hashing_map

__all__ = ["CollectionSpec", "SPEC_VERSION", "SpecError", "public_value", "step_kind",
           "public_params", "device_step_spec"]


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
    """The step's parameters as public values, without ``random_state`` (a secret).

    A parameter that is no public value raises a ``TypeError`` that names it (the
    innermost one, for an estimator given as a parameter).
    """
    out = {}
    for k, v in sorted(step.get_params(deep=False).items()):
        if k in exclude:
            continue
        try:
            out[k] = public_value(v)
        except TypeError as exc:
            if getattr(exc, "names_parameter", False):
                raise
            err = TypeError(f"the parameter {k}={v!r} of {type(step).__name__} is not a "
                            f"public value a spec can hold{_as_text_hint(k, v)}.")
            err.names_parameter = True
            raise err from None
    return out


def _as_text_hint(name, value):
    """How to give a type parameter (numpy's ``float64``) as the public text it names."""
    if not isinstance(value, type):
        return ""
    try:
        text = np.dtype(value).name
    except TypeError:
        return ""
    return f" (a type): give it by its name, {name}={text!r}"


def device_step_spec(step, n_features_in=None):
    """How a public, stateless step that runs on the device is written in a spec: with
    ``n_features_in``, the width of the row it reads (a device refuses another width: a
    FeatureHashing map for another width hashes with other signs), and the public state a
    device needs from a fitted step (FeatureHashing's map, which no port could redraw)."""
    out = {"kind": step_kind(step), "params": public_params(step, exclude=())}
    if n_features_in is not None:
        out["n_features_in"] = int(n_features_in)
    if hasattr(step, "_device_public_state") and hasattr(step, "n_features_in_"):
        out["public_state"] = step._device_public_state()
    return out


def check_hashing_maps(spec):
    """Refuse a spec whose FeatureHashing step ships another map than its ``random_state``
    draws (:func:`~skldp.device._steps.feature_hashing_map`), where the server reads
    reports against it.

    The devices hash with the shipped map; the server's FeatureHashing of that
    ``random_state`` (the one that hashes rows on the server: a simulation, users whose
    rows it holds) with the drawn one. Other columns and signs would give a model fitted
    on the reports rows that mean something else, with no error; and the seed identity,
    which leaves the map out, would make two such requests one collection.

    Raises
    ------
    SpecError
    """
    for step in spec.device_steps:
        if not isinstance(step, dict) or step.get("kind") != _HASHING or \
                "public_state" not in step:
            continue   # (a spec older than version 5: its devices drew the map)
        params = step["params"]
        columns, signs = feature_hashing_map(step["n_features_in"], params["n_components"],
                                             params["random_state"])
        shipped = step["public_state"]
        if shipped["columns"] != columns.tolist() or shipped["signs"] != signs.astype(
                int).tolist():
            raise SpecError(
                f"collection spec {spec.id}: its FeatureHashing step ships another map than "
                f"FeatureHashing(n_components={params['n_components']}, random_state="
                f"{params['random_state']}) draws for {step['n_features_in']} columns; the "
                "server would read the reports as hashed with other columns and signs than "
                "the devices used. Make the spec from the pipeline's FeatureHashing "
                "(skldp.population.collection_spec).")
