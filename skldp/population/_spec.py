"""How the server writes a step's parameters into a collection spec.

The spec itself (:class:`~skldp.device.CollectionSpec`) lives in :mod:`skldp.device`, where the
devices read it.
"""

import numbers

import numpy as np

from ..device._spec import SPEC_VERSION, CollectionSpec, SpecError, body_digest  # noqa: F401

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
    FeatureHashing map drawn for another width hashes with other signs)."""
    out = {"kind": step_kind(step), "params": public_params(step, exclude=())}
    if n_features_in is not None:
        out["n_features_in"] = int(n_features_in)
    return out
