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
import os

import numpy as np

from skldp.device import encode
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
    spec = dataclasses.replace(spec, device_steps=tuple(steps))
    return spec.with_nonce(f"{case_id:016x}")   # a fixed nonce: the same file every run


def _case(spec, data, **extra):
    seed, key = int(RNG.integers(0, 2**63)), int(RNG.integers(0, 2**63)) * 2 + 1
    report = encode(spec, data, seed=seed, key=key, **extra)
    case = {"spec": spec.to_dict(), "input": data, "seed": f"0x{seed:016x}",
            "key": f"0x{key:016x}", "report": report}
    if "user" in extra:
        case["user"] = extra["user"]
        case["directory"] = extra["directory"]
    return case


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


def main():
    os.makedirs(OUT, exist_ok=True)
    files = feature_cases()
    files["LabelRandomizedResponse"] = label_cases()
    files["EdgeRR"] = edge_cases()
    for name, cases in files.items():
        doc = {"kind": f"skldp.mechanisms.{name}", "format": "skldp device test vectors 1",
               "cases": cases}
        with open(os.path.join(OUT, f"{name}.json"), "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1, sort_keys=True)
            fh.write("\n")
    print(f"wrote {sum(len(c) for c in files.values())} cases in {len(files)} files to {OUT}")


if __name__ == "__main__":
    main()
