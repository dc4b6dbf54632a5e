"""The registry of mechanism kinds: what a device computes for each, and its wire format.

Each kind reads a :class:`~skldp.device.CollectionSpec` (validating every
parameter and public bound, and that the spec's ``epsilon`` covers what the
parameters spend), prepares one user's raw data (the public on-device steps,
clipping to the public bounds, the label's position in the public domain), and
encodes a batch of users into their reports. The server's mechanisms call the
same ``*_encode`` functions (one implementation), then decode the reports into
their output.

A report travels as a JSON object whose fields are listed per kind in
:data:`KINDS`: ``"ints"`` (an array of integers), ``"int"`` (one integer),
``"bits"`` (a hex string of the bits packed 8 per byte, most significant bit
first, padding bits 0) and ``"list"`` (increasing integers, any length).
"""

import math
import reprlib

import numpy as np

from ._edges import flip_probability, randomized_lists
from ._errors import SpecError, spec_number
from ._grid import (
    MAX_EPS_PER_COORDINATE,
    MIN_RANGE_WIDTH,
    TwoLevelGrid,
    discrete_laplace,
    randomized_round,
)
from ._random import (
    node_bernoulli_fine,
    node_uniforms,
    node_uniforms_fine,
    sample_columns,
    sample_k_of_d,
)

__all__ = ["KINDS", "plan", "ReportError", "take", "square_wave_b", "square_wave_grid", "pm_grid",
           "pm_estimate_map", "laplace_grid", "MIN_EPS_PER_COORDINATE",
           "LAPLACE_MAX_EPS_PER_COORDINATE", "hds_encode", "one_bit_encode", "multi_bit_encode",
           "piecewise_encode", "laplace_encode", "set_valued_encode", "grrfs_encode",
           "label_encode", "directory_digest", "frequency_oracle_probabilities",
           "grr_probabilities", "label_flip_q"]


class ReportError(ValueError):
    """A report that does not fit its collection's spec.

    Parameters
    ----------
    reason : {"malformed", "out of domain"}
        How it does not fit (what :func:`skldp.population.read_reports` counts).
    message : str
        What is wrong.
    """

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason


# ----------------------------------------------------------------------------- the maths
# The square wave of HDS on a grid of 2^24 cells of width 2^-23 over [-1, 1].
HDS_LOG2_CELLS = 24
HDS_CELL = 2.0 / (1 << HDS_LOG2_CELLS)


def square_wave_b(eps):
    """Half-width ``b`` of the square wave on [-1, 1] for a budget ``eps`` (Li et al.,
    CIKM 2024, Alg. 1, line 1): ``(eps - 1 + e^-eps) / (e^eps - 1 - eps)``, with a
    Taylor series for small ``eps``."""
    eps = float(eps)
    if eps < 1e-3:
        num = 0.5 - eps / 6 + eps ** 2 / 24 - eps ** 3 / 120
        den = 0.5 + eps / 6 + eps ** 2 / 24 + eps ** 3 / 120
        return num / den
    with np.errstate(over="ignore"):
        den = np.expm1(eps) - eps
    return float((eps + np.expm1(-eps)) / den)


def square_wave_grid(eps):
    """The square wave at budget ``eps`` on the grid, and its half-width ``b``: the band
    has the odd number of cells nearest to ``2b/h``."""
    n_band = 2 * int(np.floor(square_wave_b(eps) / HDS_CELL)) + 1
    return TwoLevelGrid(eps, 1 << HDS_LOG2_CELLS, 1, n_band), n_band * HDS_CELL / 2.0


PM_LOG2_STEPS = 24


def pm_grid(eps):
    """The piecewise mechanism at budget ``eps`` on the grid (2^24 lattice steps)."""
    n_steps = 1 << PM_LOG2_STEPS
    n_band = int(np.rint(n_steps * np.exp(-eps / 2.0)))
    return TwoLevelGrid(eps, n_steps, 1, n_band)


def pm_estimate_map(grid):
    """``(c0, c1)`` with ``t_hat = c0 + c1 j`` unbiased for ``t``."""
    A, B = grid.affine_mean()
    c1 = 2.0 / (grid.n_steps * B)
    return float(-1.0 - A * c1), float(c1)


LAPLACE_LOG2_CELLS = 20
LAPLACE_MAX_LOG2_SCALE = 30

#: The smallest budget of one coordinate (one value, one report) the mechanisms accept.
#: Below it the discrete Laplace scale ``N / eps`` exceeds the ``2^30`` cells its
#: floating-point sampler is exact for (with ``N = 1`` cell per range), and ``e^eps``
#: differs from 1 by fewer than ~2^22 ulps, so every frequency or unbiasing estimate
#: (dividing by ``p - q``) loses more than ~1e-6 of its relative accuracy.
MIN_EPS_PER_COORDINATE = 2.0 ** -LAPLACE_MAX_LOG2_SCALE

#: The largest budget per feature of the Laplace mechanism: its clamp margin,
#: ``max(1, 50 - eps)`` noise scales, stays at 20 scales or more, so the clamp moves a
#: mass below ``e^-20`` (a bias below 4e-11 of the range, a relative variance error
#: below 3e-8). Above it the reports of values near the bounds would be biased.
LAPLACE_MAX_EPS_PER_COORDINATE = 30.0


def laplace_grid(eps_j):
    """``(N, s, margin)`` of the discrete Laplace mechanism at ``eps_j`` per feature: cells
    per range, noise scale in cells, and the clamp margin of the output.

    Raises ``ValueError`` for ``eps_j`` outside ``[MIN_EPS_PER_COORDINATE,
    LAPLACE_MAX_EPS_PER_COORDINATE]`` (callers check it first with a clearer message).
    """
    if not MIN_EPS_PER_COORDINATE <= eps_j <= LAPLACE_MAX_EPS_PER_COORDINATE:
        raise ValueError(f"the Laplace budget per feature must be in "
                         f"[2^-{LAPLACE_MAX_LOG2_SCALE}, {LAPLACE_MAX_EPS_PER_COORDINATE:g}], "
                         f"got {eps_j!r}.")
    log2_cells = int(np.clip(np.floor(np.log2(2.0 ** LAPLACE_MAX_LOG2_SCALE * eps_j)), 0,
                             LAPLACE_LOG2_CELLS))
    N = 1 << log2_cells
    s = N / eps_j
    margin = int(np.ceil(s * max(1.0, MAX_EPS_PER_COORDINATE - eps_j)))
    return N, s, margin


def frequency_oracle_probabilities(eps, domain_size, oracle):
    """Report probabilities ``(p, q)`` of GRR or OUE on ``domain_size`` items (the formulas
    are in :func:`skldp.mechanisms.frequency_oracle_probabilities`, which validates its
    arguments; the device passes those of a checked spec)."""
    if np.isinf(eps):
        return 1.0, 0.0
    e = _exp(eps)
    if oracle == "grr":
        if np.isinf(e):
            return _grr_large_eps(eps, domain_size)
        return e / (e + domain_size - 1.0), 1.0 / (e + domain_size - 1.0)
    if oracle == "oue":
        return 0.5, 1.0 / (e + 1.0)
    raise ValueError(f"oracle must be 'grr' or 'oue', got {oracle!r}.")


def _exp(eps):
    """``e^eps``, ``inf`` without a warning where it overflows (``eps > 709.78``)."""
    with np.errstate(over="ignore"):
        return np.exp(eps)


def _grr_large_eps(eps, c):
    """GRR's ``(p, q)`` where ``e^eps`` overflows: ``e / (e + c - 1)`` is ``inf / inf``,
    so divide through by ``e`` (only there: below, the reports' probabilities stay
    bit for bit those of the device program)."""
    t = np.exp(-eps)
    return 1.0 / (1.0 + (c - 1.0) * t), t / (1.0 + (c - 1.0) * t)


def grr_probabilities(eps, c):
    """Keep and flip probabilities ``(p, q)`` of GRR on domains of sizes ``c``."""
    c = np.asarray(c, dtype=np.float64)
    if np.isinf(eps):
        return np.ones_like(c), np.zeros_like(c)
    e = _exp(eps)
    if np.isinf(e):
        return _grr_large_eps(eps, c)
    return e / (e + c - 1.0), 1.0 / (e + c - 1.0)


def label_flip_q(eps, c):
    """``q = 1 / (e^eps + c - 1)`` of k-ary randomized response on ``c`` labels."""
    return float(1.0 / (np.exp(eps) + c - 1))


def _sigmoid_neg(eps):
    """``1 / (1 + e^eps)`` for ``0 < eps <= 50``."""
    return 1.0 / (1.0 + np.exp(eps))


def _bit_probabilities(unit, eps):
    """One-bit's probabilities of a 1 and of a 0 for inputs ``unit`` in [0, 1], each
    computed directly: either can be as small as ``1 / (1 + e^eps)``."""
    t = np.tanh(eps / 2.0)
    return _sigmoid_neg(eps) + unit * t, _sigmoid_neg(eps) + (1.0 - unit) * t


# ---------------------------------------------------------------------- device programs
# Each takes the users' device inputs (clipped to the public bounds), the seed and the
# users' keys, and returns their reports as integer arrays. Streams and layouts are part
# of the format (a port reproduces them; the test vectors check it).

def take(X, cols):
    """``X[i, cols[i, j]]`` of a dense array or of a scipy sparse matrix (duck-typed)."""
    rows = np.arange(X.shape[0])[:, None]
    if hasattr(X, "tocsr"):
        r = np.repeat(np.arange(X.shape[0]), cols.shape[1])
        return np.asarray(X.tocsr()[r, cols.ravel()], dtype=np.float64).reshape(cols.shape)
    # the k values gathered first, then widened: no float64 copy of a float32 X
    return np.asarray(np.asarray(X)[rows, cols], dtype=np.float64)


def hds_inputs(X, lo, hi, cols):
    """HDS's sampled values ``X[i, cols[i, j]]`` scaled from the bounds to [-1, 1]."""
    return 2.0 * (take(X, cols) - lo[cols]) / (hi[cols] - lo[cols]) - 1.0


def hds_encode(X, lo, hi, k, grid, seed, keys, cols=None):
    """HDS: ``k`` sampled columns (increasing) and the square wave's cell of each.

    ``cols``: the columns ``sample_k_of_d(seed, keys, d, k, stream=0)``, when the
    caller (the server's simulation) has drawn them elsewhere.
    """
    if cols is None:
        cols = sample_k_of_d(seed, keys, X.shape[1], k, stream=0)
    t = hds_inputs(X, lo, hi, cols)
    cells = grid.sample((t + 1.0) / 2.0, node_uniforms(seed, keys, k, stream=3),
                        node_uniforms_fine(seed, keys, k, stream=2),
                        node_uniforms(seed, keys, k, stream=1))
    return {"i": cols, "c": cells}


def one_bit_encode(X, lo, hi, eps, seed, keys):
    """One-bit: one biased bit per feature (uniforms of stream 0)."""
    unit = (np.asarray(X, dtype=np.float64) - lo) / (hi - lo)
    p_one, p_zero = _bit_probabilities(unit, eps)
    return {"b": node_bernoulli_fine(seed, keys, X.shape[1], 0, p_one, p_zero)}


def multi_bit_encode(X, lo, hi, m, eps, seed, keys):
    """Multi-bit: ``m`` sampled columns (increasing) and a +-1 bit each (1 = +1)."""
    idx = sample_columns(seed, keys, X.shape[1], m, stream=0)
    unit = (take(X, idx) - lo[idx]) / (hi[idx] - lo[idx])
    p_plus, p_minus = _bit_probabilities(unit, eps)
    return {"i": idx, "b": node_bernoulli_fine(seed, keys, m, 1, p_plus, p_minus)}


def piecewise_encode(X, lo, hi, k, grid, seed, keys):
    """Piecewise: ``k`` sampled columns (all of them when ``k = d``) and a cell each."""
    d = X.shape[1]
    if k == d:
        t = 2.0 * (np.asarray(X, dtype=np.float64) - lo) / (hi - lo) - 1.0
        cols = None
    else:
        cols = sample_columns(seed, keys, d, k, stream=0)
        t = 2.0 * (take(X, cols) - lo[cols]) / (hi[cols] - lo[cols]) - 1.0
    cells = grid.sample((t + 1.0) / 2.0, node_uniforms(seed, keys, t.shape[1], stream=3),
                        node_uniforms_fine(seed, keys, t.shape[1], stream=1),
                        node_uniforms(seed, keys, t.shape[1], stream=2))
    return {"c": cells} if cols is None else {"i": cols, "c": cells}


def laplace_encode(X, lo, hi, eps_j, seed, keys):
    """Laplace: a randomized rounding to ``N`` cells plus discrete Laplace noise, clamped."""
    N, s, margin = laplace_grid(eps_j)
    d = X.shape[1]
    unit = (np.asarray(X, dtype=np.float64) - lo) / (hi - lo)
    cells = randomized_round(unit * N, node_uniforms(seed, keys, d, stream=0))
    cells += discrete_laplace(s, node_uniforms_fine(seed, keys, d, stream=1),
                              node_uniforms_fine(seed, keys, d, stream=2))
    np.clip(cells, -margin, N + margin, out=cells)
    return {"c": cells}


def set_valued_items(set_ptr, set_items, ell, seed, keys):
    """The item each user reports about: a real item of its set, or the dummy (``-1``)."""
    s = np.diff(set_ptr)
    m = np.maximum(s, ell)
    u = node_uniforms(seed, keys, 1, stream=0).ravel()
    slot = np.minimum(np.floor(u * m).astype(np.int64), m - 1)
    real = slot < s
    items = np.full(len(s), -1, dtype=np.int64)
    if len(set_items):
        items[real] = np.asarray(set_items)[(set_ptr[:-1] + slot)[real]]
    return items


def set_valued_encode(set_ptr, set_items, d, ell, oracle, p, q, seed, keys):
    """Padding-and-sampling, then GRR over the ``d + 1`` items (report ``v``, ``d`` = the
    dummy) or OUE (``d`` bits)."""
    v = set_valued_items(set_ptr, set_items, ell, seed, keys)
    v = np.where(v < 0, d, v)
    if oracle == "grr":
        # Full relative precision for the flip, whose probability (D - 1) q can be tiny.
        u_keep = node_uniforms_fine(seed, keys, 1, stream=1).ravel()
        u_other = node_uniforms(seed, keys, 1, stream=2).ravel()
        D = d + 1
        other = (v + 1 + np.minimum(np.floor(u_other * (D - 1)).astype(np.int64), D - 2)) % D
        return {"v": np.where(u_keep >= (D - 1) * q, v, other)}
    U = node_uniforms_fine(seed, keys, d, stream=3)
    B = U < q
    real = v < d
    r, c = np.flatnonzero(real), v[real]
    B[r, c] = U[r, c] < p
    return {"b": B}


def grrfs_encode(codes, sizes, m, q, seed, keys):
    """GRR-FS: GRR on ``m`` sampled features, a uniform code for the others."""
    n, d = codes.shape
    sampled = np.zeros((n, d), dtype=bool)
    idx = sample_k_of_d(seed, keys, d, m, stream=0)
    sampled[np.arange(n)[:, None], idx] = True
    u_keep = node_uniforms_fine(seed, keys, d, stream=1)
    u_val = node_uniforms(seed, keys, d, stream=2)
    x = np.asarray(codes, dtype=np.int64)
    # clamped as the label and set-valued programs are: u (c - 1) rounds to c - 1 for the
    # largest uniforms, which would report x itself as "another" code
    other = (x + 1 + np.minimum(np.floor(u_val * (sizes - 1)).astype(np.int64),
                                np.maximum(sizes - 2, 0))) % sizes
    grr = np.where(u_keep >= (sizes - 1) * q, x, other)
    uniform = np.minimum(np.floor(u_val * sizes).astype(np.int64), sizes - 1)
    return {"c": np.where(sampled, grr, uniform)}


def label_encode(y_pos, c, q, seed, keys):
    """k-ary randomized response on the label's position in the public domain."""
    y_pos = np.asarray(y_pos, dtype=np.int64)
    keep = node_uniforms_fine(seed, keys, 1, stream=1)[:, 0] >= (c - 1) * q
    u = node_uniforms(seed, keys, 2, stream=0)
    other = np.minimum((u[:, 1] * (c - 1)).astype(np.int64), c - 2)
    other = other + (other >= y_pos)   # uniform over the c - 1 other classes
    return {"y": np.where(keep, y_pos, other)}


def directory_digest(keys):
    """The public digest of a directory of users (their keys, sorted): 32 hex digits."""
    import hashlib
    keys = np.sort(np.asarray(keys, dtype=np.uint64))
    return hashlib.blake2b(keys.astype("<u8").tobytes(), digest_size=16).hexdigest()


# ---------------------------------------------------------------------- spec parsing
def _eps(spec, name="eps"):
    v = spec.params.get(name)
    eps = spec_number(v)   # (true, "2" or " 2_0 " are no numbers: read_spec's rule)
    if eps is None:
        raise SpecError(f"{_short(spec)}: parameter {name!r} must be a number, got {v!r}.")
    if not eps > 0 or math.isnan(eps):
        raise SpecError(f"{_short(spec)}: {name} must be > 0, got {v!r}.")
    if math.isinf(eps):
        raise SpecError(f"{_short(spec)}: {name} is inf, which protects nothing; devices do "
                        "not answer collections without privacy.")
    return eps


def _short(spec):
    return spec.kind.rsplit(".", 1)[-1]


def _state(spec, name):
    if name not in spec.public_state:
        raise SpecError(f"{_short(spec)} spec lacks public_state[{name!r}]; the server must "
                        "state it (devices derive nothing from the data).")
    return spec.public_state[name]


def _int(spec, value, name, lo=None, hi=None):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and (not math.isfinite(value) or value != int(value))):
        raise SpecError(f"{_short(spec)}: {name} must be an integer, got {value!r}.")
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise SpecError(f"{_short(spec)}: {name}={value} is outside {lo}..{hi}.")
    return value


def _bounds(spec, d):
    lo, hi = _state(spec, "feature_min"), _state(spec, "feature_max")
    try:
        lo, hi = _numbers(lo).reshape(-1), _numbers(hi).reshape(-1)
    except ValueError:
        raise SpecError(f"{_short(spec)}: feature_min and feature_max must be arrays of "
                        "numbers.") from None
    if lo.shape != (d,) or hi.shape != (d,):
        raise SpecError(f"{_short(spec)}: feature_min and feature_max must have n_features={d} "
                        f"entries, got {lo.size} and {hi.size}.")
    with np.errstate(over="ignore", invalid="ignore"):
        width = hi - lo
    # a width that overflows to inf would turn every scaled input into 0, inf or NaN
    if not np.all(np.isfinite(width)) or np.any(~(width > 0)):
        raise SpecError(f"{_short(spec)}: every bound must be finite with feature_min < "
                        "feature_max and feature_max - feature_min finite.")
    if np.any(width < MIN_RANGE_WIDTH):   # (the server refuses to decode them)
        raise SpecError(f"{_short(spec)}: feature_max - feature_min is below "
                        f"{MIN_RANGE_WIDTH:.3g}: the reports' grid steps would underflow.")
    return lo, hi


def _numbers(values):
    """A spec's list of numbers (nested lists too) as a float array; ValueError if an entry
    is no number as :func:`spec_number` reads one (true, "0")."""
    if isinstance(values, np.ndarray):
        values = values.tolist()
    if isinstance(values, (list, tuple)):
        return np.array([_numbers(v) for v in values], dtype=np.float64)
    number = spec_number(values)
    if number is None:
        raise ValueError(f"{values!r:.40} is not a number.")
    return np.float64(number)


def _check_cost(spec, cost):
    if not spec.epsilon >= cost * (1 - 1e-9):   # (written to refuse a NaN too)
        raise SpecError(f"{_short(spec)} spec states epsilon={spec.epsilon:.6g} but its "
                        f"parameters spend {cost:.6g} per user; a device refuses it.")
    if spec.protects != (_KIND_PROTECTS[spec.kind],):
        raise SpecError(f"{_short(spec)} protects {_KIND_PROTECTS[spec.kind]!r}, the spec "
                        f"says {list(spec.protects)}.")


def _per_coordinate(spec, eps, limit=MAX_EPS_PER_COORDINATE):
    if eps > limit:
        raise SpecError(f"{_short(spec)}: the budget per coordinate is {eps:.6g}, above "
                        f"{limit:g}, the most this kind's sampling honours exactly.")
    if eps < MIN_EPS_PER_COORDINATE:
        raise SpecError(f"{_short(spec)}: the budget per coordinate is {eps:.6g}, below "
                        f"2^-{LAPLACE_MAX_LOG2_SCALE} (about {MIN_EPS_PER_COORDINATE:.3g}), "
                        "where the samplers and estimates lose their accuracy.")


# ------------------------------------------------------------------------------ kinds
class _Plan:
    """A validated spec of one kind: what a device needs to answer it."""

    protects = "features"
    fields = {}

    def __init__(self, spec):
        self.spec = spec
        self.d = _int(spec, _state(spec, "n_features"), "n_features", 1)

    # -- the device side
    def _rows(self, rows, copy=False, finite=True):
        """The users' raw rows as a 2-D float64 array of ``d`` columns (finite, unless
        ``finite=False``)."""
        X = (np.array if copy else np.asarray)(rows, dtype=np.float64)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != self.d:
            raise ValueError(f"{_short(self.spec)} expects rows of {self.d} features, got "
                             f"shape {X.shape}.")
        if finite and not np.all(np.isfinite(X)):
            raise ValueError("a feature row must be finite (no NaN or infinity).")
        return X

    def prepare(self, rows):
        """The users' device inputs from their raw rows (after the on-device steps)."""
        return np.clip(self._rows(rows), self.lo, self.hi)   # the public bounds

    def prepare_on_device(self, rows, rng):
        """:meth:`prepare` on a device: a value outside the public domain is replaced by a
        uniformly random one (drawn from ``rng``, the device's secret stream) instead of
        refused, so that whether a device answers never depends on its data (a server could
        choose a domain to learn who holds a value). Returns the inputs and how many values
        were replaced. The report of a random in-domain value is a mixture of reports of
        in-domain values: the same epsilon. Here (numbers in public bounds): a missing
        value (NaN) is drawn uniformly between the bounds, an infinite one is clipped."""
        X = self._rows(rows, copy=True, finite=False)
        missing = np.isnan(X)
        n = int(missing.sum())
        if n:
            lo = np.broadcast_to(self.lo, X.shape)[missing]
            hi = np.broadcast_to(self.hi, X.shape)[missing]
            X[missing] = lo + (hi - lo) * rng.random(n)
        return self.prepare(np.clip(X, self.lo, self.hi)), n

    # -- the wire format
    def field_specs(self):
        """``{name: (type, length, low, high)}``: the report's fields and their domains
        (``low <= value < high``; length ``None`` for one integer)."""
        raise NotImplementedError

    def row(self, batch, i):
        """User ``i``'s report as JSON data."""
        out = {}
        for name, (typ, _, _, _) in self.field_specs().items():
            v = np.asarray(batch[name][i])
            if typ == "bits":
                out[name] = np.packbits(v.astype(np.uint8)).tobytes().hex()
            elif typ == "int":
                out[name] = int(v)
            else:
                out[name] = [int(a) for a in v.ravel()]
        return out

    def check(self, report):
        """Validate one report (JSON data) and return its fields as arrays.

        Raises
        ------
        ReportError
            ``reason`` is ``"malformed"`` (wrong fields, types or lengths) or
            ``"out of domain"`` (a value outside its public domain, indices not
            increasing).
        """
        if not isinstance(report, dict):
            raise ReportError("malformed", f"a report is a JSON object, got {_value_text(report)}.")
        specs = self.field_specs()
        if set(report) != set(specs):
            raise ReportError("malformed", f"a {_short(self.spec)} report has the fields "
                                           f"{sorted(specs)}, got {sorted(map(repr, report))}.")
        out = {}
        for name, (typ, length, low, high) in specs.items():
            v = report[name]
            if typ == "bits":
                out[name] = _read_bits(v, length, name)
                continue
            if typ == "int":
                if isinstance(v, bool) or not isinstance(v, int):
                    raise ReportError("malformed", f"field {name!r} must be an integer.")
                if not -(1 << 63) <= v < (1 << 63):   # (np.int64 would raise OverflowError)
                    raise ReportError("out of domain", f"field {name!r} has a value outside "
                                                       "its domain.")
                a = np.asarray(v, dtype=np.int64)
            else:
                if not isinstance(v, list) or any(isinstance(e, bool) or not isinstance(e, int)
                                                   for e in v):
                    raise ReportError("malformed", f"field {name!r} must be an array of "
                                                   "integers.")
                if length is not None and len(v) != length:
                    raise ReportError("malformed", f"field {name!r} must have {length} "
                                                   f"entries, got {len(v)}.")
                try:
                    a = np.asarray(v, dtype=np.int64)
                except OverflowError:
                    raise ReportError("out of domain", f"field {name!r} has a value outside "
                                                       "its domain.") from None
            if np.any(a < low) or np.any(a >= high):
                raise ReportError("out of domain", f"field {name!r} has a value outside "
                                                   f"{np.min(low)}..{np.max(high) - 1}.")
            if typ in ("sorted", "list") and a.size > 1 and np.any(np.diff(a) <= 0):
                raise ReportError("out of domain", f"field {name!r} must be increasing "
                                                   "(distinct indices).")
            out[name] = a
        return out

    def n_bytes(self, report=None):
        """Size of a report in the compact binary format: fixed-width integers (the fewest
        bytes that hold the field's domain), bits packed 8 per byte, and a list as a 4-byte
        count followed by its entries (give the ``report`` to size its lists)."""
        total = 0
        for name, (typ, length, low, high) in self.field_specs().items():
            if typ == "bits":
                total += (length + 7) // 8
                continue
            width = _int_width(np.min(low), np.max(high) - 1)
            if typ == "list":
                total += 4 + width * (0 if report is None else len(report[name]))
            else:
                total += width * (1 if length is None else length)
        return total


def _int_width(low, high):
    for w in (1, 2, 4, 8):
        if low >= 0 and high < 2 ** (8 * w):
            return w
        if low < 0 and -(2 ** (8 * w - 1)) <= low and high < 2 ** (8 * w - 1):
            return w
    return 8


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _read_bits(v, length, name):
    n_bytes = (length + 7) // 8
    # exactly 2 hex digits a byte: bytes.fromhex skips whitespace, so "62  " would pass a
    # length check and read as fewer bytes (a report of the wrong width)
    if not isinstance(v, str) or len(v) != 2 * n_bytes or \
            not set(v) <= _HEX_DIGITS:
        raise ReportError("malformed", f"field {name!r} must be {n_bytes} bytes in hex "
                                       f"({2 * n_bytes} digits 0-9, a-f or A-F, nothing else).")
    raw = np.frombuffer(bytes.fromhex(v), dtype=np.uint8)
    bits = np.unpackbits(raw)
    if bits[length:].any():
        raise ReportError("out of domain", f"field {name!r} has padding bits set.")
    return bits[:length].astype(bool)


class _HDS(_Plan):
    def __init__(self, spec):
        super().__init__(spec)
        self.eps = _eps(spec)
        self.lo, self.hi = _bounds(spec, self.d)
        self.k = _int(spec, _state(spec, "k"), "k", 1, self.d)
        _per_coordinate(spec, self.eps / self.k)
        _check_cost(spec, self.eps)
        self.grid, _ = square_wave_grid(self.eps / self.k)

    def field_specs(self):
        return {"i": ("sorted", self.k, 0, self.d), "c": ("ints", self.k, 0, self.grid.n_cells)}

    def encode(self, X, seed, keys):
        return hds_encode(X, self.lo, self.hi, self.k, self.grid, seed, keys)


class _OneBit(_Plan):
    def __init__(self, spec):
        super().__init__(spec)
        eps = _eps(spec)
        self.lo, self.hi = _bounds(spec, self.d)
        split = spec.params.get("split_eps", False)
        if not isinstance(split, bool):
            raise SpecError(f"OneBitMechanism: split_eps must be true or false, got {split!r}.")
        self.eps_f = eps / self.d if split else eps
        _per_coordinate(spec, self.eps_f)
        _check_cost(spec, self.eps_f * self.d)

    def field_specs(self):
        return {"b": ("bits", self.d, 0, 2)}

    def encode(self, X, seed, keys):
        return one_bit_encode(X, self.lo, self.hi, self.eps_f, seed, keys)


class _MultiBit(_Plan):
    def __init__(self, spec):
        super().__init__(spec)
        self.eps = _eps(spec)
        self.lo, self.hi = _bounds(spec, self.d)
        self.m = _int(spec, _state(spec, "m"), "m", 1, self.d)
        _per_coordinate(spec, self.eps / self.m)
        _check_cost(spec, self.eps)

    def field_specs(self):
        return {"i": ("sorted", self.m, 0, self.d), "b": ("bits", self.m, 0, 2)}

    def encode(self, X, seed, keys):
        return multi_bit_encode(X, self.lo, self.hi, self.m, self.eps / self.m, seed, keys)


class _Piecewise(_Plan):
    def __init__(self, spec):
        super().__init__(spec)
        self.eps = _eps(spec)
        self.lo, self.hi = _bounds(spec, self.d)
        self.k = _int(spec, _state(spec, "k"), "k", 1, self.d)
        _per_coordinate(spec, self.eps / self.k)
        _check_cost(spec, self.eps)
        self.grid = pm_grid(self.eps / self.k)

    def field_specs(self):
        cells = {"c": ("ints", self.k, 0, self.grid.n_cells)}
        return cells if self.k == self.d else {"i": ("sorted", self.k, 0, self.d), **cells}

    def encode(self, X, seed, keys):
        return piecewise_encode(X, self.lo, self.hi, self.k, self.grid, seed, keys)


class _Laplace(_Plan):
    def __init__(self, spec):
        super().__init__(spec)
        eps = _eps(spec)
        self.lo, self.hi = _bounds(spec, self.d)
        self.eps_j = eps / self.d
        _per_coordinate(spec, self.eps_j, limit=LAPLACE_MAX_EPS_PER_COORDINATE)
        _check_cost(spec, eps)
        self.N, _, self.margin = laplace_grid(self.eps_j)

    def field_specs(self):
        return {"c": ("ints", self.d, -self.margin, self.N + self.margin + 1)}

    def encode(self, X, seed, keys):
        return laplace_encode(X, self.lo, self.hi, self.eps_j, seed, keys)


class _SetValued(_Plan):
    def __init__(self, spec):
        super().__init__(spec)
        self.eps = _eps(spec)
        _per_coordinate(spec, self.eps)
        _check_cost(spec, self.eps)
        self.ell = _int(spec, _state(spec, "ell"), "ell", 1)
        self.oracle = _state(spec, "oracle")
        if self.oracle not in ("grr", "oue"):
            raise SpecError(f"SetValuedMechanism: oracle must be 'grr' or 'oue', got "
                            f"{self.oracle!r}.")
        t = spec.params.get("binarize")
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float))
                              or not math.isfinite(t) or t < 0):
            raise SpecError(f"SetValuedMechanism: binarize must be a number >= 0 or null, got "
                            f"{t!r}.")
        self.binarize = t
        if self.oracle == "grr" and self.d + 1 > MAX_DOMAIN_SIZE:
            raise SpecError(f"SetValuedMechanism: the GRR oracle takes at most "
                            f"{MAX_DOMAIN_SIZE - 1:,} items (the draw of another value is "
                            "uniform only that far); use the OUE oracle.")
        self.p, self.q = frequency_oracle_probabilities(self.eps, self.d + 1, self.oracle)

    def prepare(self, rows):
        X = self._rows(rows)
        if self.binarize is None:
            if np.any((X != 0) & (X != 1)):
                raise ValueError("SetValuedMechanism needs binary features (0 or 1).")
            return X != 0
        return X > self.binarize

    def prepare_on_device(self, rows, rng):
        X = self._rows(rows, copy=True, finite=False)
        bad = (X != 0) & (X != 1) if self.binarize is None else ~np.isfinite(X)
        X[bad] = rng.integers(0, 2, size=int(bad.sum()))
        return self.prepare(X), int(bad.sum())

    def field_specs(self):
        if self.oracle == "grr":
            return {"v": ("int", None, 0, self.d + 1)}
        return {"b": ("bits", self.d, 0, 2)}

    def encode(self, S, seed, keys):
        S = np.asarray(S, dtype=bool)
        counts = S.sum(axis=1)
        ptr = np.concatenate([[0], np.cumsum(counts)])
        items = np.nonzero(S)[1]
        return set_valued_encode(ptr, items, self.d, self.ell, self.oracle, self.p, self.q,
                                 seed, keys)


#: The largest domain of a GRR feature: its "another value" draw maps 2^53 equally likely
#: uniforms onto c - 1 values, equal to a factor 1 + c / 2^53 (2^-29 here) of the probability.
MAX_DOMAIN_SIZE = 1 << 24


class _GRRFS(_Plan):
    def __init__(self, spec):
        super().__init__(spec)
        self.eps = _eps(spec)
        _per_coordinate(spec, self.eps)
        self.m = _int(spec, spec.params.get("m"), "m", 1, self.d)
        _check_cost(spec, self.m * self.eps)
        sizes = _state(spec, "domain_sizes")
        if not isinstance(sizes, list) or len(sizes) != self.d:
            raise SpecError(f"GRRFSMechanism: domain_sizes must list {self.d} sizes.")
        self.sizes = np.array([_int(spec, c, "a domain size", 2, MAX_DOMAIN_SIZE)
                               for c in sizes], np.int64)
        self.q = grr_probabilities(self.eps, self.sizes)[1]
        cats = spec.params.get("categories")
        edges = spec.params.get("bin_edges")
        try:
            self.categories = None if cats is None else [np.unique(_numbers(c)) for c in cats]
            self.bin_edges = None if edges is None else _edge_items(edges, self.d)
        except (TypeError, ValueError, OverflowError):
            raise SpecError("GRRFSMechanism: categories must list each feature's values (numbers) "
                            "and bin_edges give increasing numbers per feature.") from None
        if self.categories is not None and (
                len(self.categories) != self.d or
                [len(c) for c in self.categories] != self.sizes.tolist() or
                any(c.ndim != 1 or not np.all(np.isfinite(c)) for c in self.categories)):
            raise SpecError(f"GRRFSMechanism: categories must list the {self.d} features' "
                            "finite values, as many as each feature's domain size.")
        if self.bin_edges is not None and any(
                not 0 <= j < self.d or e.ndim != 1 or not np.all(np.isfinite(e))
                or np.any(np.diff(e) <= 0) for j, e in self.bin_edges):
            # NaN passes np.diff(e) <= 0; np.digitize reads decreasing edges backwards
            raise SpecError(f"GRRFSMechanism: bin_edges must give strictly increasing 1-D "
                            f"finite edges of columns 0..{self.d - 1}.")

    def _binned(self, rows, finite=True):
        X = self._rows(rows, copy=True, finite=finite)   # binned in place
        if self.bin_edges is not None:
            for j, e in self.bin_edges:
                X[:, j] = np.where(np.isnan(X[:, j]), np.nan, np.digitize(X[:, j], e))
        return X

    def _outside(self, X, j):
        """The rows whose feature ``j`` is outside its public domain."""
        if self.categories is not None:
            return ~np.isin(X[:, j], self.categories[j])
        x = X[:, j]
        return (x != np.round(x)) | (x < 0) | (x >= self.sizes[j])

    def _codes(self, X):
        for j in range(self.d):
            if self._outside(X, j).any():
                raise ValueError(f"feature {j} holds a value outside its categories."
                                 if self.categories is not None else
                                 "GRRFSMechanism needs integer codes 0..c_j - 1 in each "
                                 "feature.")
        if self.categories is None:
            return X.astype(np.int64)
        return np.stack([np.searchsorted(c, X[:, j]) for j, c in enumerate(self.categories)],
                        axis=1).astype(np.int64)

    def prepare(self, rows):
        return self._codes(self._binned(rows))

    def prepare_on_device(self, rows, rng):
        X, n = self._binned(rows, finite=False), 0   # (NaN and inf: outside the domain)
        for j in range(self.d):
            bad = self._outside(X, j)
            k = int(bad.sum())
            if k:
                draw = rng.integers(0, int(self.sizes[j]), size=k)
                X[bad, j] = self.categories[j][draw] if self.categories is not None else draw
                n += k
        return self._codes(X), n

    def field_specs(self):
        return {"c": ("ints", self.d, 0, self.sizes)}

    def encode(self, codes, seed, keys):
        return grrfs_encode(codes, self.sizes, self.m, self.q, seed, keys)


def _check_classes(classes):
    """A label domain of distinct integers (not negative), strings or booleans: -1 and ``None``
    are the "no report" of the received labels (:func:`skldp.population.received_graph`),
    so a class with that value could not be told from a user who sent nothing."""
    for c in classes:
        if c is None or isinstance(c, (list, dict)) or \
                (isinstance(c, float) and not math.isfinite(c)):
            raise SpecError(f"LabelRandomizedResponse: every class must be a number, a string "
                            f"or a boolean (not null, NaN or a list), got {c!r}.")
        if not isinstance(c, (bool, str)) and c < 0:
            raise SpecError("LabelRandomizedResponse: classes must not contain -1 or another "
                            "negative number: -1 is the 'no report' marker of the received "
                            "labels, and a negative label marks an unlabelled node.")
    # Numbers are class labels only as integers of int64's range (a float one only with an
    # integer value, and, in a domain holding a float, as a double below 2**63): the
    # server's LabelRandomizedResponse refuses any other domain (scikit-learn reads it as
    # continuous), so no label of it could be used.
    numbers = [c for c in classes if not isinstance(c, (bool, str))]
    floats = any(isinstance(c, float) for c in numbers)
    for c in numbers:
        if (isinstance(c, float) and not c.is_integer()) or \
                (float(c) if floats else c) >= 2 ** 63:
            raise SpecError(f"LabelRandomizedResponse: a class that is a number must be an "
                            f"integer below 2**63 (a float only with an integer value), got "
                            f"{c!r}: the server refuses such a label domain.")
    if len({type(c) is str for c in classes}) > 1:   # (the server's NumPy makes them text)
        raise SpecError("LabelRandomizedResponse: classes mixes strings and other values: a "
                        "label domain must be all strings or all numbers.")
    if len({(type(c) is str, c) for c in classes}) != len(classes):
        raise SpecError("LabelRandomizedResponse: classes contains duplicates.")


def _edge_items(bin_edges, d):
    """(column, increasing edges) pairs of a spec's ``bin_edges`` (see skldp's discretize)."""
    if isinstance(bin_edges, dict):
        items = [(int(j), e) for j, e in bin_edges.items()]
    elif bin_edges and all(not isinstance(e, (list, type(None))) for e in bin_edges):
        items = [(j, bin_edges) for j in range(d)]
    else:
        items = list(enumerate(bin_edges))
    return [(j, _numbers(e)) for j, e in items if e is not None]


def _class_position(y, classes):
    """``y``'s position among ``classes``, or -1 (not there, or a value that does not
    compare, such as pandas' NA)."""
    try:
        return classes.index(y)
    except Exception:
        return -1


class _Label(_Plan):
    protects = "labels"

    def __init__(self, spec):
        self.spec = spec
        self.eps = _eps(spec)
        _per_coordinate(spec, self.eps)
        _check_cost(spec, self.eps)
        classes = _state(spec, "classes")
        if not isinstance(classes, list) or len(classes) < 2:
            raise SpecError("LabelRandomizedResponse: classes must list at least two labels.")
        _check_classes(classes)
        if len(classes) > MAX_DOMAIN_SIZE:   # (the draw of another class: see the constant)
            raise SpecError(f"LabelRandomizedResponse: at most {MAX_DOMAIN_SIZE:,} classes.")
        self.classes = classes
        self.c = len(classes)
        self.q = label_flip_q(self.eps, self.c)

    def _positions(self, labels):
        labels = np.atleast_1d(np.asarray(labels, dtype=object)).tolist()
        return np.array([_class_position(y, self.classes) for y in labels], dtype=np.int64)

    def prepare(self, labels):
        out = self._positions(labels)
        if np.any(out < 0):   # (the label is the user's private data: not in the message)
            raise ValueError(f"the label is not in the collection's classes (it is not one "
                             f"of the spec's {self.c} classes).")
        return out

    def prepare_on_device(self, labels, rng):
        out = self._positions(labels)
        outside = out < 0
        out[outside] = rng.integers(0, self.c, size=int(outside.sum()))
        return out, int(outside.sum())

    def field_specs(self):
        return {"y": ("int", None, 0, self.c)}

    def encode(self, y_pos, seed, keys):
        return label_encode(y_pos, self.c, self.q, seed, keys)


class _Edges(_Plan):
    protects = "edges"

    def __init__(self, spec):
        self.spec = spec
        self.eps = _eps(spec)
        _per_coordinate(spec, self.eps, limit=20.0)
        _check_cost(spec, self.eps)
        self.n = _int(spec, _state(spec, "n_users"), "n_users", 2)
        self.digest = _state(spec, "directory")
        if spec.params.get("symmetrize") not in ("or", "and", "directed"):
            raise SpecError("EdgeRR: symmetrize must be 'or', 'and' or 'directed'.")
        self.q = flip_probability(self.eps)

    def field_specs(self):
        return {"l": ("list", None, 0, self.n)}

    def encode_one(self, own_key, nbr_keys, directory_keys, seed, key):
        """One user's report: positions (in the key-sorted directory) of its list after
        randomized response."""
        pos_of = {int(k): i for i, k in enumerate(directory_keys)}
        own = pos_of[int(own_key)]
        nbr = sorted((pos_of[int(k)] for k in set(int(x) for x in nbr_keys)))
        nbr_keys = np.asarray(directory_keys, dtype=np.uint64)[nbr] if nbr else \
            np.zeros(0, np.uint64)
        _, pos = randomized_lists(seed, np.array([key], dtype=np.uint64), [own],
                                  [0, len(nbr)], np.asarray(nbr, dtype=np.int64), nbr_keys,
                                  self.n, self.q)
        return {"l": [pos]}   # one list per user



_KIND_CLASSES = {
    "skldp.mechanisms.HDSMechanism": _HDS,
    "skldp.mechanisms.OneBitMechanism": _OneBit,
    "skldp.mechanisms.MultiBitMechanism": _MultiBit,
    "skldp.mechanisms.PiecewiseMechanism": _Piecewise,
    "skldp.mechanisms.LaplaceMechanism": _Laplace,
    "skldp.mechanisms.SetValuedMechanism": _SetValued,
    "skldp.mechanisms.GRRFSMechanism": _GRRFS,
    "skldp.mechanisms.LabelRandomizedResponse": _Label,
    "skldp.mechanisms.EdgeRR": _Edges,
}
_KIND_PROTECTS = {k: v.protects for k, v in _KIND_CLASSES.items()}

#: The mechanism kinds a device answers: ``{kind: what it protects}``.
KINDS = dict(_KIND_PROTECTS)


def plan(spec):
    """What a device computes for a local collection spec, validated.

    Parameters
    ----------
    spec : CollectionSpec

    Returns
    -------
    plan : object
        Its ``prepare`` (raw data to the mechanism's input), ``encode`` (a batch of
        users' reports from a seed and their keys), ``check`` (validate a report),
        ``field_specs`` (the wire format) and ``n_bytes`` (a report's binary size).

    Raises
    ------
    SpecError
        An unknown kind, a missing or invalid public value, or a budget below what
        the parameters spend.
    """
    cls = _KIND_CLASSES.get(spec.kind)
    if cls is None:
        raise SpecError(f"unknown mechanism kind {spec.kind!r}; devices answer "
                        f"{sorted(KINDS)}.")
    if spec.model != "local":
        raise SpecError(f"{spec.kind} spec must be a local collection, got {spec.model!r}.")
    if spec.delta != 0:
        raise SpecError(f"{_short(spec)} spec states delta={spec.delta!r}; a local collection "
                        "is pure epsilon-LDP, its delta is 0.")
    from ._steps import STEP_KINDS
    for step in spec.device_steps:
        kind = step.get("kind") if isinstance(step, dict) else None
        if kind not in STEP_KINDS or cls.protects != "features":
            raise SpecError(f"{spec.kind} spec has the on-device step {kind!r}, which devices "
                            f"do not run (they run {sorted(STEP_KINDS)} before feature "
                            "mechanisms).")
    p = cls(spec)
    if spec.device_steps:
        _check_steps(spec, p.d)
    return p


#: The most columns an on-device FeatureHashing step may write when the step after it
#: (a FeatureGrouper) does not fix its width: one row of them is 8 MiB of float64.
MAX_HASHED_COLUMNS = 1 << 20


def _check_steps(spec, d):
    """Validate the parameters of a spec's on-device steps before a device runs them.

    Each step's output must be what the next one reads: walking back from the
    mechanism's ``n_features`` ``d``, a FeatureHashing step writes exactly the width
    the next step reads (``n_components = d`` before the mechanism), and a
    FeatureGrouper of ``g`` columns per group reads ``(m - 1) g + 1 .. m g`` columns to
    write ``m``. A spec is refused here, before any allocation, rather than when a
    device has hashed its row to a width the spec chose. From version 4, each step
    states the width it reads (``n_features_in``): each the width the step before it
    writes, the first the raw row's (a device refuses a row of another width). From
    version 5, a FeatureHashing step ships its map (``public_state``)."""
    lo, hi = d, d   # the widths the next step (first, the mechanism) reads
    for step in reversed(spec.device_steps):
        kind = step["kind"].rsplit(".", 1)[-1]
        params = step.get("params")
        fields = {"kind", "params"} | ({"n_features_in"} if spec.version >= 4 else set()) | \
            ({"public_state"} if kind == "FeatureHashing" and spec.version >= 5 else set())
        if set(step) != fields or not isinstance(params, dict):
            raise SpecError(f"{_short(spec)}: an on-device step ({kind}) has the fields "
                            f"{sorted(fields)}, got {sorted(step)}.")
        if kind == "FeatureHashing":
            if set(params) != {"n_components", "clip", "random_state"}:
                raise SpecError(f"{_short(spec)}: the FeatureHashing step has the parameters "
                                f"n_components, clip and random_state, got {sorted(params)}.")
            n = _step_int(spec, params["n_components"], "FeatureHashing n_components")
            _step_int(spec, params["random_state"], "FeatureHashing random_state", lo=0)
            clip = params["clip"]
            if isinstance(clip, bool) or not isinstance(clip, (int, float)) or \
                    not 0 < clip < math.inf:
                raise SpecError(f"{_short(spec)}: the FeatureHashing step's clip must be a "
                                f"finite number > 0, got {clip!r}.")
            if not lo <= n <= hi:
                want = f"{lo}" if lo == hi else f"{lo}..{hi}"
                raise SpecError(f"{_short(spec)}: the FeatureHashing step writes "
                                f"n_components={n} columns, but the step after it reads "
                                f"{want} (the mechanism reads n_features={d}).")
            cap = max(d, MAX_HASHED_COLUMNS)
            if n > cap:   # bounds a device's memory when the steps after it read any width
                raise SpecError(f"{_short(spec)}: the FeatureHashing step writes "
                                f"n_components={n} columns; devices hash a row to at most "
                                f"{cap} (the mechanism's n_features or 2^20).")
            lo, hi = 1, math.inf   # it reads a row of any width
        else:   # FeatureGrouper (plan checked the kinds)
            if set(params) != {"group_size"}:
                raise SpecError(f"{_short(spec)}: the FeatureGrouper step has the parameter "
                                f"group_size, got {sorted(params)}.")
            g = _step_int(spec, params["group_size"], "FeatureGrouper group_size")
            lo, hi = (lo - 1) * g + 1, hi * g
    if spec.version >= 4:
        _check_step_widths(spec, d)


def _check_step_widths(spec, d):
    """Each step's ``n_features_in`` is the width the step before it writes; the last
    step writes the mechanism's ``d`` (the parameters were checked by _check_steps)."""
    width = None
    for step in spec.device_steps:
        kind, params = step["kind"].rsplit(".", 1)[-1], step["params"]
        w = _step_int(spec, step["n_features_in"], f"{kind} step's n_features_in")
        if width is not None and w != width:
            raise SpecError(f"{_short(spec)}: the {kind} step reads n_features_in={w} "
                            f"columns, but the step before it writes {width}.")
        if kind == "FeatureHashing" and spec.version >= 5:
            _check_hashing_map(spec, step["public_state"], w, params["n_components"])
        width = params["n_components"] if kind == "FeatureHashing" else \
            -(-w // params["group_size"])
    if width != d:
        raise SpecError(f"{_short(spec)}: the on-device steps write {width} columns, but the "
                        f"mechanism reads n_features={d}.")


def _check_hashing_map(spec, shipped, d, n):
    """A FeatureHashing step's map: for each of the ``d`` columns it reads, in order, its
    output column (an integer in ``0 .. n - 1``) and its sign (the integer 1 or -1)."""
    if not isinstance(shipped, dict) or set(shipped) != {"columns", "signs"}:
        raise SpecError(f"{_short(spec)}: the FeatureHashing step's public_state is its map, "
                        f"{{\"columns\": [...], \"signs\": [...]}}, got {_value_text(shipped)}.")
    columns, signs = shipped["columns"], shipped["signs"]
    for name, values in (("columns", columns), ("signs", signs)):
        if not isinstance(values, list) or len(values) != d:
            raise SpecError(f"{_short(spec)}: the FeatureHashing step's map lists one of its "
                            f"{name} for each of the n_features_in={d} columns it reads, got "
                            f"{_value_text(values)}.")
    if not all(type(c) is int for c in columns) or (d and not 0 <= min(columns) <= max(
            columns) < n):
        raise SpecError(f"{_short(spec)}: the FeatureHashing step's columns must be integers in "
                        f"0..{n - 1} (n_components={n}), got {_value_text(columns)}.")
    if not all(type(s) is int and s in (1, -1) for s in signs):
        raise SpecError(f"{_short(spec)}: the FeatureHashing step's signs must each be the "
                        f"integer 1 or -1, got {_value_text(signs)}.")


def _step_int(spec, value, name, lo=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise SpecError(f"{_short(spec)}: the {name} must be an integer >= {lo}, got "
                        f"{value!r}.")
    return value


def _value_text(value):
    """A short text of a value a device sent, even one whose full text cannot be written
    (an integer too long for text, nesting too deep)."""
    try:
        return reprlib.repr(value)
    except (ValueError, RecursionError):
        return f"a value of type {type(value).__name__}"
