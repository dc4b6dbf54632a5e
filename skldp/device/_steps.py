"""The public, stateless steps a device may run on its own row before a mechanism."""

import numpy as np

from ._errors import SpecError

__all__ = ["feature_hashing_map", "hash_rows", "group_rows", "device_steps", "STEP_KINDS"]


def feature_hashing_map(d, n_components, random_state):
    """The public map of :class:`skldp.mechanisms.FeatureHashing`: each input column's
    output column and sign, drawn with ``numpy.random.default_rng(random_state)``."""
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


def _hashing(params, X):
    n, clip, rs = params.get("n_components"), params.get("clip"), params.get("random_state")
    if not isinstance(n, int) or n < 1 or not isinstance(rs, int) or \
            not isinstance(clip, (int, float)) or not clip > 0:
        raise SpecError(f"FeatureHashing step needs n_components >= 1, clip > 0 and an "
                        f"integer random_state, got {params}.")
    bucket, sign = feature_hashing_map(X.shape[1], n, rs)
    return hash_rows(X, bucket, sign, n, float(clip))


def _grouping(params, X):
    g = params.get("group_size")
    if not isinstance(g, int) or g < 1:
        raise SpecError(f"FeatureGrouper step needs group_size >= 1, got {params}.")
    return group_rows(X, g)


STEP_KINDS = {"skldp.mechanisms.FeatureHashing": _hashing,
              "skldp.mechanisms.FeatureGrouper": _grouping}


def device_steps(spec, X):
    """Apply the spec's on-device steps, in order, to raw rows ``X``."""
    for step in spec.device_steps:
        kind = step.get("kind") if isinstance(step, dict) else None
        fn = STEP_KINDS.get(kind)
        if fn is None:
            raise SpecError(f"unknown on-device step {kind!r}; devices run "
                            f"{sorted(STEP_KINDS)}.")
        X = fn(step.get("params", {}), np.asarray(X, dtype=np.float64))
    return X
