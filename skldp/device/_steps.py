"""The public, stateless steps a device may run on its own row before a mechanism."""

import numpy as np

from ._errors import SpecError

__all__ = ["feature_hashing_map", "hash_rows", "group_rows", "device_steps", "STEP_KINDS"]


def feature_hashing_map(d, n_components, random_state):
    """The public map of :class:`skldp.mechanisms.FeatureHashing`: each input column's
    output column and sign, drawn with ``numpy.random.default_rng(random_state)``.

    The server's: a spec ships the map (version 5), and a device hashes with the shipped
    one, never drawing it (a port cannot redraw numpy's PCG64)."""
    rng = np.random.default_rng(int(random_state))
    bucket = rng.integers(0, n_components, size=d)
    sign = rng.choice(np.array([-1.0, 1.0]), size=d)
    return bucket, sign


def hash_rows(X, bucket, sign, n_components, clip):
    """Signed hashing of dense rows, summed in increasing column order, then clipped."""
    X = np.asarray(X, dtype=np.float64)
    out = np.zeros((X.shape[0], n_components))
    rows, cols = np.nonzero(X)                # row-major: increasing column within a row
    np.add.at(out, (rows, bucket[cols]), X[rows, cols] * sign[cols])
    return np.clip(out, -clip, clip)


def group_rows(X, group_size):
    """:func:`skldp.mechanisms.group_features` of dense rows: 1 where a block of
    ``group_size`` columns holds a non-zero."""
    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1]
    n_groups = -(-d // group_size)
    out = np.zeros((X.shape[0], n_groups))
    rows, cols = np.nonzero(X)
    out[rows, cols // group_size] = 1.0
    return out


# The steps' parameters were checked when the spec was read (skldp.device._kinds, one
# validator for every device program), before any row is hashed or grouped.
def _hashing(step, X):
    params, shipped = step["params"], step["public_state"]
    bucket = np.asarray(shipped["columns"], dtype=np.int64)
    sign = np.asarray(shipped["signs"], dtype=np.float64)
    return hash_rows(X, bucket, sign, params["n_components"], float(params["clip"]))


def _grouping(step, X):
    return group_rows(X, step["params"]["group_size"])


STEP_KINDS = {"skldp.mechanisms.FeatureHashing": _hashing,
              "skldp.mechanisms.FeatureGrouper": _grouping}


def device_steps(spec, X):
    """Apply the spec's on-device steps, in order, to raw rows ``X``.

    A row of another width than the first step's ``n_features_in`` is refused: the
    FeatureHashing map gives a column and a sign to each column of that width, and a row of
    another width would be hashed with other signs (a wrong answer no one could see). So is
    a FeatureHashing step without its map (a spec older than version 5): a device hashes
    with the map the spec ships and never draws one."""
    for step in spec.device_steps:
        kind = step.get("kind") if isinstance(step, dict) else None
        fn = STEP_KINDS.get(kind)
        if fn is None:
            raise SpecError(f"unknown on-device step {kind!r}; devices run "
                            f"{sorted(STEP_KINDS)}.")
        X = np.asarray(X, dtype=np.float64)
        name = kind.rsplit(".", 1)[-1]
        if "n_features_in" not in step:
            raise SpecError(f"this spec (version {spec.version}) has an on-device {name} "
                            "step that does not state the width of the row it reads: ask the "
                            "server for the spec in the current version.")
        if fn is _hashing and "public_state" not in step:
            raise SpecError(f"this spec (version {spec.version}) has an on-device "
                            "FeatureHashing step that does not ship its map (its columns and "
                            "signs, from version 5): ask the server for the spec in the "
                            "current version.")
        if X.ndim != 2 or X.shape[1] != step["n_features_in"]:
            raise ValueError(f"the on-device {name} step expects rows of "
                             f"{step['n_features_in']} features (the spec's n_features_in), "
                             f"got shape {X.shape}: the row must have the columns the "
                             "collection names, in its order.")
        X = fn(step, X)
    return X
