"""Write the device encoder's test vectors (skldp/device/vectors/*.json).

Each file holds cases of one mechanism kind: a spec, one user's raw input, a
fixed seed and key (hex strings: JSON numbers lose precision above 2^53 in some
languages) and the exact report :func:`skldp.device.encode` gives. A port of the
encoder to another language is checked by replaying them bit for bit;
``tests/device/test_vectors.py`` replays them in Python.

    python scripts/make_device_vectors.py
"""

import dataclasses
import json
import math
import os

import numpy as np

from skldp.device import encode, plan, read_spec
from skldp.device._random import sample_k_of_d
from skldp.mechanisms import (
    EdgeRR,
    FeatureHashing,
    GRRFSMechanism,
    HDSMechanism,
    LabelRandomizedResponse,
    LaplaceMechanism,
    MultiBitMechanism,
    OneBitMechanism,
    PiecewiseMechanism,
    SetValuedMechanism,
)
from skldp.population import collection_spec
from skldp.population._spec import device_step_spec

OUT = os.path.join(os.path.dirname(__file__), "..", "skldp", "device", "vectors")
RNG = np.random.default_rng(20240531)


def _spec(est, case_id, steps=(), **kw):
    spec = collection_spec(est, **kw)
    # (the version the steps need: 5 with a hashing step, which ships its map)
    spec = dataclasses.replace(spec, device_steps=tuple(steps), version=None)
    return spec.with_nonce(f"{case_id:016x}")   # a fixed nonce: the same file every run


def _case(spec, data, **extra):
    seed, key = int(RNG.integers(0, 2**63)), int(RNG.integers(0, 2**63)) * 2 + 1
    return _fixed_case(spec, data, seed, key, **extra)


def _row(d, lo=0.0, hi=1.0, binary=False):
    if binary:
        return (RNG.random(d) < 0.2).astype(float).tolist()
    return np.round(RNG.uniform(lo - 0.1, hi + 0.1, d), 6).tolist()   # some clipped


def feature_cases():
    out = {}
    n = 0

    def add(name, est, d, rows=3, steps=(), binary=False, raw_d=None):
        nonlocal n
        n += 1
        spec = _spec(est, n, steps, n_features=d)
        out.setdefault(name, []).extend(
            _case(spec, _row(raw_d or d, binary=binary)) for _ in range(rows))

    add("HDSMechanism", HDSMechanism(1.0, k=3, feature_range=(0, 1)), 10)
    add("HDSMechanism", HDSMechanism(4.0, k=20, feature_range=(-1, 2)), 50)
    hashing = FeatureHashing(8, clip=1.0, random_state=3).fit(np.zeros((1, 30)))
    add("HDSMechanism", HDSMechanism(2.0, k=2, feature_range=(-1, 1)), 8,
        steps=[device_step_spec(hashing, 30)], binary=True, raw_d=30)
    add("OneBitMechanism", OneBitMechanism(0.5, feature_range=(0, 1)), 12)
    add("OneBitMechanism", OneBitMechanism(8.0, feature_range=(0, 1), split_eps=True), 20)
    add("MultiBitMechanism", MultiBitMechanism(1.0, m=1, feature_range=(0, 1)), 10)
    add("MultiBitMechanism", MultiBitMechanism(30.0, m=70, feature_range=(0, 1)), 100)
    add("PiecewiseMechanism", PiecewiseMechanism(2.0, k=2, feature_range=(0, 1)), 10)
    add("PiecewiseMechanism", PiecewiseMechanism(3.0, k=4, feature_range=(0, 1)), 4)
    add("LaplaceMechanism", LaplaceMechanism(2.0, feature_range=(0, 1)), 6)
    add("SetValuedMechanism", SetValuedMechanism(1.0, ell=2, oracle="grr"), 10, binary=True)
    add("SetValuedMechanism", SetValuedMechanism(1.0, ell=1, oracle="oue"), 40, binary=True)
    n += 1
    spec = _spec(GRRFSMechanism(1.0, m=2, domain_sizes=[2, 3, 4, 2, 5]), n, n_features=5)
    out["GRRFSMechanism"] = [_case(spec, [int(RNG.integers(0, c)) for c in (2, 3, 4, 2, 5)])
                             for _ in range(3)]
    n += 1
    spec = _spec(GRRFSMechanism(2.0, m=1, bin_edges={0: [0.5], 1: [0.2, 0.4, 0.8]}), n,
                 n_features=2)
    out["GRRFSMechanism"] += [_case(spec, np.round(RNG.random(2), 3).tolist())
                              for _ in range(2)]
    return out


def label_cases():
    spec = _spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2, 3, 4, 5, 6]), 100)
    spec2 = _spec(LabelRandomizedResponse(3.0, classes=["cat", "dog"]), 101)
    return [_case(spec, int(RNG.integers(0, 7))) for _ in range(4)] + \
        [_case(spec2, str(RNG.choice(["cat", "dog"]))) for _ in range(2)]


def edge_cases():
    ids = [int(v) for v in RNG.permutation(40) * 3 + 5]
    spec = _spec(EdgeRR(1.0, symmetrize="or"), 200, node_ids=ids)
    spec2 = _spec(EdgeRR(4.0, symmetrize="and"), 201, node_ids=ids)
    cases = []
    for sp_ in (spec, spec2, spec):
        user = ids[int(RNG.integers(0, 40))]
        nbrs = [v for v in RNG.choice(ids, 6, replace=False).tolist() if v != user]
        cases.append(_case(sp_, nbrs, user=user, directory=ids))
    return cases


# ------------------------------------------------ cases a port gets wrong by a small slip
# (their own generator, after the cases above: those stay as they were)
_M64 = (1 << 64) - 1
_G = 0x9E3779B97F4A7C15
_FINE = 1 << 40   # the fine uniform's second stream: stream + 2^40


def _mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _unmix(z):
    """SplitMix64's finaliser inverted (each step is a bijection of 64-bit words)."""
    def unshift(z, s):
        x = z
        for _ in range(64 // s + 1):
            x = z ^ (x >> s)
        return x & _M64
    z = (unshift(z, 31) * pow(0x94D049BB133111EB, -1, 1 << 64)) & _M64
    z = (unshift(z, 27) * pow(0xBF58476D1CE4E5B9, -1, 1 << 64)) & _M64
    return unshift(z, 30)


def _row_key(seed, key, stream):
    return _mix(((key * _G) & _M64) ^ _mix((seed & _M64) ^ _mix((stream * _G + _G) & _M64)))


def _key_for(seed, stream, word, counter=0):
    """The key whose word ``counter`` of ``stream`` is ``word``."""
    s = (seed & _M64) ^ _mix((stream * _G + _G) & _M64)
    row = (_unmix(word) - (counter + 1) * _G) & _M64
    return ((_unmix(row) ^ _mix(s)) * pow(_G, -1, 1 << 64)) & _M64


def _crafted(rng, stream, top, v_ok, counter=0, accept=None):
    """(seed, key) whose fine uniform (``counter`` of ``stream``) has top 53 bits ``top``
    and a second part ``v`` (in [0, 1)) with ``v_ok(v)``, and ``accept(seed, key)`` if
    given: found by trying seeds."""
    while True:
        seed = int(rng.integers(0, 2**63))
        key = _key_for(seed, stream, (top << 11) | int(rng.integers(0, 1 << 11)), counter)
        v = (_mix((_row_key(seed, key, stream + _FINE) + (counter + 1) * _G) & _M64)
             >> 12) * 2.0 ** -52
        if v_ok(v) and (accept is None or accept(seed, key)):
            return seed, key


def _fixed_case(spec, data, seed, key, **extra):
    report = encode(spec, data, seed=seed, key=key, **extra)
    case = {"spec": spec.to_dict(), "input": data, "seed": f"0x{seed:016x}",
            "key": f"0x{key:016x}", "report": report}
    if "user" in extra:
        case["user"] = extra["user"]
        case["directory"] = extra["directory"]
    return case


def precision_cases():
    """Cases that a port with plain 53-bit uniforms (no fine uniform, no complement branch),
    text user ids, a value on a bin edge or an input outside the domain gets wrong."""
    rng = np.random.default_rng(20261130)
    out = {}

    def add(name, spec, data, seed=None, key=None, **extra):
        if seed is None:
            seed, key = int(rng.integers(0, 2**63)), int(rng.integers(0, 2**64, dtype=np.uint64))
        out.setdefault(name, []).append(_fixed_case(spec, data, seed, key, **extra))

    low = (0, lambda v: v < 0.03)               # u = v 2^-53 < 3.3e-18
    high = ((1 << 53) - 1, lambda v: v > 0.97)  # 1 - u = (1 - v) 2^-53 < 3.3e-18
    # One-bit at eps = 40: P(1 | x = 0) = P(0 | x = 1) = 1 / (1 + e^40) = 4.2e-18
    spec = _spec(OneBitMechanism(40.0, feature_range=(0, 1)), 300, n_features=1)
    for x, (top, ok) in ((0.0, low), (0.0, low), (1.0, high), (1.0, high)):
        add("OneBitMechanism", spec, [x], *_crafted(rng, 0, top, ok))
    spec = _spec(OneBitMechanism(1.0, feature_range=(-1, 1)), 301, n_features=4)
    add("OneBitMechanism", spec, [0.5, None, -3.0, 1e300])   # missing (null), clipped
    # Multi-bit: the bit of sampled column i is the fine draw of stream 1, counter i
    spec = _spec(MultiBitMechanism(40.0, m=1, feature_range=(0, 1)), 302, n_features=3)
    for x, (top, ok) in ((0.0, low), (1.0, high)):
        add("MultiBitMechanism", spec, [x] * 3, *_crafted(rng, 1, top, ok))
    # Labels: kept iff the fine uniform of stream 1 >= (c - 1) q = 2 / (e^40 + 2) = 8.5e-18
    spec = _spec(LabelRandomizedResponse(40.0, classes=[0, 1, 2]), 303)
    for y in (0, 2):
        add("LabelRandomizedResponse", spec, y, *_crafted(rng, 1, 0, lambda v: v < 0.07))
    spec = _spec(LabelRandomizedResponse(0.5, classes=[3, 5, 7, 9]), 304)
    for _ in range(8):
        add("LabelRandomizedResponse", spec, int(rng.choice([3, 5, 7, 9])))
    add("LabelRandomizedResponse", spec, 4)   # not a class: replaced
    spec = _spec(LabelRandomizedResponse(1.0, classes=["cat", "dog", "eel"]), 305)
    add("LabelRandomizedResponse", spec, "bird")   # not a class: replaced
    # GRR-FS: the flip at eps = 40 (stream 1), many "other" codes at eps = 0.2, bin edges,
    # codes outside the domain
    spec = _spec(GRRFSMechanism(40.0, m=1, domain_sizes=[4]), 306, n_features=1)
    add("GRRFSMechanism", spec, [1], *_crafted(rng, 1, 0, lambda v: v < 0.1))
    sizes = [2, 3, 5, 4]
    spec = _spec(GRRFSMechanism(0.2, m=4, domain_sizes=sizes), 307, n_features=4)
    for _ in range(6):
        add("GRRFSMechanism", spec, [int(rng.integers(0, c)) for c in sizes])
    spec = _spec(GRRFSMechanism(30.0, m=1, bin_edges={0: [0.5], 1: [0.2, 0.4, 0.8]}), 308,
                 n_features=2)
    for x in ([0.5, 0.2], [0.5, 0.4], [0.4999, 0.8], [1.0, 0.7999], [0.5, 0.8],
              [0.4999, 0.3999]):   # a value on an edge is in the bin above it
        add("GRRFSMechanism", spec, x)
    spec = _spec(GRRFSMechanism(1.0, m=2, domain_sizes=[3, 4]), 309, n_features=2)
    add("GRRFSMechanism", spec, [7, None])   # outside the domain, missing: replaced
    # Edges: text ids (keys from BLAKE2b), and ids mixing text and integers
    ids = [f"u{i}" for i in range(30)]
    spec = _spec(EdgeRR(1.0, symmetrize="or"), 310, node_ids=ids)
    for user in ("u3", "u17"):
        nbrs = [v for v in rng.choice(ids, 6, replace=False).tolist() if v != user]
        add("EdgeRR", spec, nbrs, user=user, directory=ids)
    mixed = [f"n{i}" for i in range(10)] + list(range(10, 30))
    spec = _spec(EdgeRR(2.0, symmetrize="directed"), 311, node_ids=mixed)
    add("EdgeRR", spec, ["n1", 12, "n7", 29, 404], user=15, directory=mixed)   # 404: not a user
    return out


def _straddle(p):
    """(top, v_ok) for ``_crafted``: the fine uniform of that word falls on the other side
    of the threshold ``p`` than the plain uniform of the same word, ``(top + 0.5) 2^-53``
    (top: the largest 53-bit part whose plain uniform can be below ``p``)."""
    top = math.ceil(p * 2.0 ** 53) - 1
    plain = (top + 0.5) * 2.0 ** -53 < p   # (rounded to even, as the spec says, from 2^52)

    def ok(v):
        return ((top + v) * 2.0 ** -53 < p) != plain
    assert any(ok(i / 4096) for i in range(4096)), p   # else no seed would do
    return top, ok


def plain_uniform_cases():
    """Cases of piecewise, HDS, Laplace and set-valued whose report a port with plain
    53-bit uniforms in place of the fine ones gets wrong (their own generator: the cases
    above stay as they were)."""
    rng = np.random.default_rng(20261201)
    out = {}

    def add(name, est, data, d, case_id, threshold, stream, craft=None):
        spec = _spec(est, case_id, n_features=d)
        p = plan(read_spec(spec.to_dict()))
        top, ok = craft or _straddle(threshold(p))
        out.setdefault(name, []).append(_fixed_case(spec, data, *_crafted(rng, stream, top, ok)))

    def outside(p):
        return p.grid.p_outside

    # Grid sampler: the piece is "outside" iff the fine uniform of stream 1 (piecewise) or
    # 2 (HDS) is below p_o; on one side of p_o only with the fine uniform, then the other
    # (p_o 2^53 has a fractional part below 1/2, then above)
    for case_id, eps in ((312, 30.0), (313, 20.0)):
        add("PiecewiseMechanism", PiecewiseMechanism(eps, k=1, feature_range=(0, 1)), [0.3],
            1, case_id, outside, 1)
    for case_id, eps in ((314, 50.0), (315, 45.0)):   # eps' = 50: p_o = 29.1 steps of 2^-53
        add("HDSMechanism", HDSMechanism(eps, k=1, feature_range=(0, 1)), [0.6],
            1, case_id, outside, 2)
    # Laplace: g = floor(-log(u) s) of a fine uniform near 0 (v 2^-53, v < 0.03, against
    # the plain 2^-54): a larger g1 (stream 1), then a larger g2 (stream 2)
    for stream in (1, 2):
        add("LaplaceMechanism", LaplaceMechanism(2.0, feature_range=(0, 1)), [0.4], 1,
            315 + stream, None, stream, craft=(0, lambda v: v < 0.03))
    # Set-valued GRR: kept iff the fine uniform of stream 1 >= (D - 1) q, 4.2e-17 at
    # eps = 40 (below every plain uniform: only the fine one flips), 8.5e-16 at eps = 37
    row = [0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    for case_id, eps in ((318, 40.0), (319, 37.0)):
        add("SetValuedMechanism", SetValuedMechanism(eps, ell=2, oracle="grr"), row, 10,
            case_id, lambda p: p.d * p.q, 1)   # (D - 1) q, D = d + 1
    # Set-valued OUE at eps = 40, ell = 1 (the item is the set's one column): column 0's
    # bit is the fine uniform of stream 3, counter 0, below q = 4.2e-18 when column 0 is
    # not the item (set only by the fine uniform); below 1/2 when it is, where r = 2^52 - 1
    # and v > 3/4 give r + v rounded to 2^52, so u = 1/2 (cleared only by the fine uniform)
    for case_id, item in ((320, 1), (321, 0)):
        add("SetValuedMechanism", SetValuedMechanism(40.0, ell=1, oracle="oue"),
            [float(j == item) for j in range(4)], 4, case_id,
            lambda p, item=item: p.q if item else p.p, 3)
    return out


def grrfs_plain_uniform_cases():
    """GRR-FS cases whose report a port with a plain uniform in place of the fine one
    (stream 1, the keep draw of feature ``j``) gets wrong: a sampled feature kept only with
    the fine uniform, and one flipped only with it (their own generator)."""
    rng = np.random.default_rng(20261203)
    cases = []
    # (domain sizes, m, the feature crafted, eps, its case id): the threshold (c_j - 1) q_j
    # is 10^-16 .. 10^-14, a few steps of 2^-53; its fraction of a step is below 1/2 (the
    # plain uniform keeps, the fine one flips) or above (the reverse)
    # (m < d: another key gives another report, a feature not sampled being uniform)
    for sizes, m, j, eps, case_id in (([4, 3], 1, 0, 34.0, 330), ([4, 3], 1, 0, 33.0, 331),
                                      ([3, 5, 2], 2, 1, 36.0, 332),
                                      ([3, 5, 2], 2, 1, 34.0, 333),
                                      ([3, 5, 2], 2, 2, 34.0, 334),
                                      ([3, 5, 2], 2, 2, 35.0, 335)):
        d = len(sizes)
        spec = _spec(GRRFSMechanism(eps, m=m, domain_sizes=sizes), case_id, n_features=d)
        p = plan(read_spec(spec.to_dict()))
        top, ok = _straddle((p.sizes[j] - 1) * p.q[j])

        def sampled(seed, key, d=d, m=m, j=j):
            return j in sample_k_of_d(seed, np.array([key], np.uint64), d, m, stream=0)

        codes = [int(rng.integers(0, c)) for c in sizes]
        cases.append(_fixed_case(spec, codes, *_crafted(rng, 1, top, ok, j, sampled)))
    return cases


def hashing_cases():
    """A FeatureHashing step (its map shipped in the spec) in front of Laplace, whose report
    moves with every hashed value: columns 0 and 1 collide with sign +1, 2 and 3 with -1,
    4 (+1) and 5 (-1): sums clipped to [-1.5, 1.5] (inside Laplace's wider bounds, so that a
    port that does not clip fails), a negative sign, a missing value (its output column is
    missing, then replaced) (their own generator)."""
    rng = np.random.default_rng(20261204)
    hashing = FeatureHashing(3, clip=1.5, random_state=1).fit(np.zeros((1, 6)))
    assert hashing.bucket_.tolist() == [1, 1, 2, 2, 0, 0], hashing.bucket_
    assert hashing.sign_.tolist() == [1, 1, -1, -1, 1, -1], hashing.sign_
    spec = _spec(LaplaceMechanism(6.0, feature_range=(-2, 2)), 336,
                 [device_step_spec(hashing, 6)], n_features=3)
    rows = ([0.9, 0.8, 0.25, 0.0, 0.6, 0.0],      # 1.7 -> 1.5, -0.25, 0.6
            [0.5, -0.2, 0.7, 0.9, 0.4, 1.0],      # 0.3, -1.6 -> -1.5, 0.4 - 1 = -0.6
            [None, 0.3, -0.4, 0.0, 1.2, 0.2])     # missing, 0.4, 1.2 - 0.2 = 1.0
    return [_fixed_case(spec, row, int(rng.integers(0, 2**63)),
                        int(rng.integers(0, 2**64, dtype=np.uint64))) for row in rows]


def main():
    os.makedirs(OUT, exist_ok=True)
    files = feature_cases()
    files["LabelRandomizedResponse"] = label_cases()
    files["EdgeRR"] = edge_cases()
    for name, cases in precision_cases().items():
        files[name] += cases
    for name, cases in plain_uniform_cases().items():
        files[name] += cases
    files["GRRFSMechanism"] += grrfs_plain_uniform_cases()
    files["LaplaceMechanism"] += hashing_cases()
    for name, cases in files.items():
        doc = {"kind": f"skldp.mechanisms.{name}", "format": "skldp device test vectors 1",
               "cases": cases}
        with open(os.path.join(OUT, f"{name}.json"), "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1, sort_keys=True)
            fh.write("\n")
    print(f"wrote {sum(len(c) for c in files.values())} cases in {len(files)} files to {OUT}")


if __name__ == "__main__":
    main()
