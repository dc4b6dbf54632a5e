"""Benchmark: GRR-FS + frequency reconstruction on Facebook.

Algorithm 1 of Bhaila et al., SDM 2024.

Reports wall time and peak traced memory (tracemalloc; numpy registers its
buffers) of the mechanism and of the reconstruction, next to the size a dense
``n x sum(c_j)`` one-hot / proportion matrix would need. The reconstructor
keeps the one-hot encoding sparse and forms dense proportions only for blocks
of features of at most ~32 MB.

Usage::

    SKLDP_DATASETS_DIR=<datasets folder> OMP_NUM_THREADS=1 python benchmarks/bench_rgnn.py
"""

import os
import time
import tracemalloc

os.environ.setdefault("OMP_NUM_THREADS", "1")


from skldp.datasets import load_dataset  # noqa: E402
from skldp.mechanisms import GRRFSMechanism, group_features  # noqa: E402
from skldp.reconstruction import FrequencyReconstructor  # noqa: E402


def measure(fn):
    tracemalloc.start()
    t0 = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, dt, peak / 2**20


def main():
    ds = load_dataset("facebook")
    G = ds.data
    settings = [("grouped (100 cols/group, d=48)", group_features(G.features, 100), 4),
                ("raw binary, first 1000 cols", G.features[:, :1000], 4)]
    print(f"facebook: n={G.n_nodes}, edges={G.adjacency.nnz // 2}")
    print("| features | d | hops | mechanism s | mechanism peak MiB | reconstruction s | "
          "reconstruction peak MiB | dense n x sum(c) MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for label, X, hops in settings:
        Gx = G.with_features(X, source="users")
        d = Gx.shape[1]
        mech = GRRFSMechanism(1.0, m=10, domain_sizes=2, random_state=0).fit(Gx)
        R, t_mech, m_mech = measure(lambda mech=mech, Gx=Gx: mech.transform(Gx))
        rec = FrequencyReconstructor(1.0, 10, domain_sizes=2, hops=hops).fit(R)
        _, t_rec, m_rec = measure(lambda rec=rec, R=R: rec.transform(R))
        dense = G.n_nodes * 2 * d * 8 / 2**20
        print(f"| {label} | {d} | {hops} | {t_mech:.2f} | {m_mech:.0f} | {t_rec:.2f} | "
              f"{m_rec:.0f} | {dense:.0f} |")


if __name__ == "__main__":
    main()
