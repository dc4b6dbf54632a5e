"""The configuration fingerprint of a run: short digests of what it fits and how.

A run's key names its dataset, method, split, seed and grid values, not what
the study fixes around them (a factory's epochs, ``Study.configs``, a data
function): the fingerprint does, so that a record made under another
configuration is never taken for one of the study's runs now.
"""

import functools
import hashlib
import itertools
import json
import numbers
import pickle
import types

import numpy as np

from ..utils._hashing import _named, content_hash
from ._study import _key_number

__all__ = ["IGNORED_PARAMS", "PARTS", "describe", "digest", "run_fingerprint", "changed_parts"]

# Parameters that say where or how loudly a run computes, not what it gives: the torch
# device, joblib's workers, logging, scikit-learn's and skldp's caches of fitted steps.
IGNORED_PARAMS = frozenset({"device", "n_jobs", "verbose", "memory", "graph_cache"})

# The parts of a fingerprint and what each one covers (in messages).
PARTS = {"estimator": "its estimator (class or parameters)",
         "config": "the study's configs for its dataset",
         "data": "its method's data function",
         "split": "its split function",
         "evaluate": "its method's evaluate function"}


def _public_name(obj):
    """``module.qualname`` with the module cut before its first private part:
    ``skldp.mechanisms._hds.HDSMechanism`` is ``skldp.mechanisms.HDSMechanism``, so that
    moving a class between private modules changes no fingerprint."""
    parts = (getattr(obj, "__module__", None) or "").split(".")
    public = parts[:1] + list(itertools.takewhile(lambda p: not p.startswith("_"), parts[1:]))
    return ".".join([*public, obj.__qualname__])


def describe(value):
    """A JSON-able, canonical description of ``value`` (an estimator, a parameter).

    An estimator is its class and its parameters (``get_params(deep=False)``, nested
    estimators described the same way, :data:`IGNORED_PARAMS` left out), a class of
    the user's (a study's own estimator) also by its code as a function is; numbers are
    compared as the run keys compare them (1 == 1.0); an array by its dtype, shape and
    bytes; a function of a library by its name, one of the user's by its source text
    and what it reads (:func:`~skldp.utils._hashing.content_hash`); any other object by
    its class and a content hash (its class alone where it cannot be pickled).

    Parameters
    ----------
    value : object

    Returns
    -------
    description : JSON-able object
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Real):
        return _key_number(value.item() if isinstance(value, np.generic) else value)
    if hasattr(value, "get_params") and not isinstance(value, type):
        params = value.get_params(deep=False)
        return {**describe(type(value)),
                "params": {k: describe(v) for k, v in sorted(params.items())
                           if k not in IGNORED_PARAMS}}
    if isinstance(value, (list, tuple)):
        return [describe(v) for v in value]
    if isinstance(value, dict):
        items = [[describe(k), describe(v)] for k, v in value.items()]
        return {"dict": sorted(items, key=lambda kv: _json(kv[0]))}
    if isinstance(value, (set, frozenset)):
        return {"set": sorted(_json(describe(v)) for v in value)}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            return {"array": describe(value.tolist()), "shape": list(value.shape)}
        little = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
        return {"array": little.dtype.str, "shape": list(value.shape),
                "sha256": hashlib.sha256(little.tobytes()).hexdigest()}
    if isinstance(value, type):   # (the settings a study's own class fixes in its code)
        return {"class": _public_name(value), **({} if _named(value) else _class_code(value))}
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
        return {"function": _public_name(value), **({} if _named(value) else _hashed(value))}
    return {"object": _public_name(type(value)), **_hashed(value)}


@functools.lru_cache(maxsize=256)
def _class_code(cls):
    """:func:`_hashed` of a class of the user's, once per class object (a sweep builds
    thousands of its estimators; a class defined again is another object)."""
    return _hashed(cls)


def _hashed(value):
    """``{"hash": content hash}``, or ``{}`` for what cannot be pickled (a lock, a
    generator): it then counts by its class or name alone."""
    try:
        return {"hash": content_hash(value, by_source=True)}
    except (pickle.PicklingError, TypeError, AttributeError):
        return {}


def _json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def digest(value):
    """A 12-hex-digit digest of :func:`describe` ``(value)``.

    Parameters
    ----------
    value : object

    Returns
    -------
    digest : str
    """
    return hashlib.sha256(_json(describe(value)).encode()).hexdigest()[:12]


def run_fingerprint(study, spec, estimator, memo=None):
    """The fingerprint of one run: a digest of each of its :data:`PARTS`.

    Parameters
    ----------
    study : Study
        The study.
    spec : RunSpec
        The run.
    estimator : estimator
        Its unfitted estimator (factory, then the grid values).
    memo : dict or None, default=None
        Digests of the study's configs and functions, kept across the runs of
        one study (each is then computed once).

    Returns
    -------
    fingerprint : dict of str -> str
    """
    memo = {} if memo is None else memo
    method = study.methods[spec.method]

    def once(name, value):
        if name not in memo:
            memo[name] = digest(value)
        return memo[name]

    return {"estimator": digest(estimator),
            "config": once(("config", spec.dataset),
                           dict(study.configs.get(spec.dataset, {}))),
            "data": once(("data", spec.method), method.data),
            "split": once(("split", spec.split), study.splits[spec.split]),
            "evaluate": once(("evaluate", spec.method), method.evaluate)}


def changed_parts(recorded, now):
    """The parts of two fingerprints that differ (in :data:`PARTS` order).

    Parameters
    ----------
    recorded, now : dict of str -> str

    Returns
    -------
    parts : list of str
    """
    if not isinstance(recorded, dict):
        return list(PARTS)
    return [p for p in PARTS if recorded.get(p) != now.get(p)]
