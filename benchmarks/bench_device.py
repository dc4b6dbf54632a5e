"""Device encoder: reports per second per core and report size, per mechanism.

For each mechanism kind, at Cora's dimensions (2708 users, 1433 binary features,
7 classes, average degree 3.9), this measures

* the device API, one user at a time (``Device(user).answer(spec, row)``: spec
  already read, a fresh secret seed per report, the answer remembered), in
  reports per second on one core;
* the same reports through the batch encoder (the server's simulation path,
  ``plan(spec).encode`` on all users at once), per report;
* the size of a report: JSON (what ``Device.answer`` returns, serialised) and
  the compact binary format of :meth:`skldp.device.plan(...).n_bytes`.

Besides, side by side in the same run, the way the issue measured it before the
encoder existed: one estimator per device, ``fit_transform(x[None, :])``.

    OMP_NUM_THREADS=1 python benchmarks/bench_device.py [--users 2000]

The rates are absolute times on the machine that runs it; compare ratios
within one run.
"""

import argparse
import json
import os
import secrets
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from skldp.datasets import load_cora  # noqa: E402
from skldp.device import Device, Directory, plan  # noqa: E402
from skldp.mechanisms import (  # noqa: E402
    EdgeRR,
    GRRFSMechanism,
    HDSMechanism,
    LabelRandomizedResponse,
    LaplaceMechanism,
    MultiBitMechanism,
    OneBitMechanism,
    PiecewiseMechanism,
    SetValuedMechanism,
)
from skldp.population import collection_spec  # noqa: E402


def _rate(fn, n):
    t = time.perf_counter()
    fn(n)
    return n / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=2000)
    args = ap.parse_args()
    cora = load_cora()
    G, y = cora.data, cora.target
    X = G.features.toarray() if hasattr(G.features, "toarray") else np.asarray(G.features)
    ids = G.node_ids.tolist()
    A = G.adjacency
    d = X.shape[1]
    n = min(args.users, len(ids))
    codes = np.stack([X[:, j * 25:(j + 1) * 25].any(axis=1) for j in range(d // 25)], 1)
    feature_mechs = {
        "HDS (eps=1, k=20)": HDSMechanism(1.0, k=20, feature_range=(0, 1)),
        "Multi-bit (eps=1, m=1)": MultiBitMechanism(1.0, m=1, feature_range=(0, 1)),
        "One-bit (eps=1 per feature)": OneBitMechanism(1.0, feature_range=(0, 1)),
        "Piecewise (eps=1, k=1)": PiecewiseMechanism(1.0, k=1, feature_range=(0, 1)),
        "Laplace (eps=1)": LaplaceMechanism(1.0, feature_range=(0, 1)),
        "Set-valued GRR (eps=1, ell=1)": SetValuedMechanism(1.0, ell=1, oracle="grr"),
        "Set-valued OUE (eps=1, ell=1)": SetValuedMechanism(1.0, ell=1, oracle="oue"),
    }
    rows = []
    for name, mech in feature_mechs.items():
        spec = collection_spec(mech, n_features=d)
        rows.append((name, spec, lambda i: X[i], mech, X))
    spec = collection_spec(GRRFSMechanism(1.0, m=10, domain_sizes=2), n_features=codes.shape[1])
    rows.append((f"GRR-FS (eps=1, m=10, d={codes.shape[1]})", spec,
                 lambda i: codes[i].astype(float), GRRFSMechanism(1.0, m=10, domain_sizes=2),
                 codes.astype(float)))
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=list(range(7))))
    rows.append(("Label RR (eps=1, 7 classes)", spec, lambda i: int(y[i]),
                 LabelRandomizedResponse(1.0, classes=list(range(7))), y))
    spec = collection_spec(EdgeRR(4.0), node_ids=ids)
    directory = Directory(ids)
    nbrs = [[ids[j] for j in A.indices[A.indptr[i]:A.indptr[i + 1]]] for i in range(len(ids))]
    rows.append(("EdgeRR (eps=4, n=2708)", spec, lambda i: nbrs[i], None, None))

    print(f"{'mechanism':34s} {'device API':>12s} {'batch':>12s} {'per-device':>12s} "
          f"{'JSON':>8s} {'binary':>8s}")
    print(f"{'':34s} {'reports/s':>12s} {'reports/s':>12s} {'estimator/s':>12s} "
          f"{'bytes':>8s} {'bytes':>8s}")
    out = []
    for name, spec, data, mech, Xall in rows:
        p = plan(spec)
        edge = "edges" in spec.protects
        kw = {"directory": directory} if edge else {}

        def device_api(m, spec=spec, data=data, kw=kw):
            for i in range(m):
                Device(user=ids[i]).answer(spec, data(i), **kw)

        reports = [Device(user=ids[i]).answer(spec, data(i), **kw)["report"]
                   for i in range(min(n, 500))]
        json_bytes = np.mean([len(json.dumps(r, separators=(",", ":"))) for r in reports])
        bin_bytes = np.mean([p.n_bytes(r) for r in reports])
        api = _rate(device_api, n)
        batch = per_device = float("nan")
        if Xall is not None:
            keys = np.frombuffer(secrets.token_bytes(8 * len(Xall)), "<u8").astype(np.uint64)
            prepared = p.prepare(Xall)
            batch = _rate(lambda m, p=p, prepared=prepared, keys=keys: p.encode(
                prepared[:m], secrets.randbits(63), keys[:m]), len(Xall))
        if Xall is not None and "labels" not in spec.protects:

            def per_estimator(m, mech=mech, Xall=Xall):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    for i in range(m):   # as before the encoder: a plain one-row array
                        type(mech)(**mech.get_params()).fit_transform(Xall[i:i + 1])

            per_device = _rate(per_estimator, min(n, 300))
        print(f"{name:34s} {api:12.0f} {batch:12.0f} {per_device:12.0f} {json_bytes:8.0f} "
              f"{bin_bytes:8.0f}")
        out.append({"mechanism": name, "device_api_per_s": api, "batch_per_s": batch,
                    "estimator_per_device_per_s": per_device, "json_bytes": json_bytes,
                    "binary_bytes": bin_bytes})
    return out


if __name__ == "__main__":
    main()
