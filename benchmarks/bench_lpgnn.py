"""Wall time and peak memory of the LPGNN steps on ``facebook`` (22,470 x 4,714, 170,823 edges).

Steps (each a function returning the callable to time; add more to ``STEPS``):

* feature mechanisms at the per-user budget ``eps = 1`` with default parameters
  (``OneBitMechanism`` spends eps on each of the 4,714 features, as in
  Sajadmanesh and Gatica-Perez, CCS 2021; ``MultiBitMechanism`` samples m = 1
  feature; ``PiecewiseMechanism`` k = 1) and
  the dense Piecewise of the same paper (``k = d``);
* ``GCNAggregation`` on the raw sparse features and on dense one-bit reports;
* ``KProp(steps=2)`` on dense one-bit reports.

Each step runs in its own subprocess (data loaded and inputs prepared before the
timer starts). The table gives the wall time (best of ``--repeat``), the peak of
memory traced by :mod:`tracemalloc` during the step (numpy/scipy buffers; the
output included) and the process's peak RSS (monotone: it includes the data and
the prepared inputs).

Usage::

    OMP_NUM_THREADS=1 SKLDP_DATASETS_DIR=/path/to/datasets \\
        python benchmarks/bench_lpgnn.py [--steps onebit kprop2 ...] [--repeat 1]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc

os.environ.setdefault("OMP_NUM_THREADS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
if os.path.dirname(HERE) not in sys.path:   # the checkout's studies (and skldp if not installed)
    sys.path.append(os.path.dirname(HERE))
DATASET = "facebook"


def load(name=DATASET):
    from skldp.datasets import load_dataset
    return load_dataset(name).data


def _noisy(G):
    from skldp.mechanisms import OneBitMechanism
    return OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0).fit_transform(G)


# ------------------------------------------------------------------ steps
def step_mechanism(cls_name, **params):
    def prepare(G):
        from skldp import mechanisms
        mech = getattr(mechanisms, cls_name)(feature_range=(0, 1), random_state=0, **params)
        return lambda: mech.fit(G).transform(G)
    return prepare


def step_dense_piecewise(G):
    from skldp.mechanisms import PiecewiseMechanism
    d = G.shape[1]
    mech = PiecewiseMechanism(eps=float(d), k=d, feature_range=(0, 1), random_state=0)
    return lambda: mech.fit(G).transform(G)


def step_gcn_sparse(G):
    from skldp.propagation import GCNAggregation
    return lambda: GCNAggregation().fit(G).transform(G)


def step_gcn_dense(G):
    from skldp.propagation import GCNAggregation
    noisy = _noisy(G)
    return lambda: GCNAggregation().fit(noisy).transform(noisy)


def step_kprop2_dense(G):
    from skldp.propagation import KProp
    noisy = _noisy(G)
    return lambda: KProp(steps=2).fit(noisy).transform(noisy)


STEPS = {
    "onebit": ("OneBitMechanism(eps=1) [d bits, eps each]", step_mechanism("OneBitMechanism",
                                                                          eps=1.0)),
    "onebit_split": ("OneBitMechanism(eps=1, split_eps=True)",
                     step_mechanism("OneBitMechanism", eps=1.0, split_eps=True)),
    "multibit": ("MultiBitMechanism(eps=1) [m=1]", step_mechanism("MultiBitMechanism", eps=1.0)),
    "laplace": ("LaplaceMechanism(eps=1)", step_mechanism("LaplaceMechanism", eps=1.0)),
    "piecewise": ("PiecewiseMechanism(eps=1) [k=1]",
                  step_mechanism("PiecewiseMechanism", eps=1.0)),
    "piecewise_dense": ("PiecewiseMechanism(eps=d, k=d) [LPGNN paper]", step_dense_piecewise),
    "gcn_sparse": ("GCNAggregation on raw sparse features", step_gcn_sparse),
    "gcn_dense": ("GCNAggregation on dense one-bit reports", step_gcn_dense),
    "kprop2": ("KProp(steps=2) on dense one-bit reports", step_kprop2_dense),
}


# ---------------------------------------------------------------- harness
def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure(fn, repeat=1):
    """(best wall time in s, tracemalloc peak in MiB of the first run)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    t0 = time.perf_counter()
    out = fn()
    walls = [time.perf_counter() - t0]
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    del out
    for _ in range(repeat - 1):
        t0 = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
    return min(walls), peak


def worker(step, repeat):
    import torch
    torch.set_num_threads(1)
    G = load()
    fn = STEPS[step][1](G)
    rss_before = _rss_mb()
    wall, peak = measure(fn, repeat)
    return {"step": step, "label": STEPS[step][0], "wall_s": wall, "traced_peak_mib": peak,
            "rss_before_mib": rss_before, "rss_peak_mib": _rss_mb(),
            "n": G.shape[0], "d": G.shape[1]}


def run_all(steps, repeat=1):
    rows = []
    for step in steps:
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", step,
                              "--repeat", str(repeat)], capture_output=True, text=True,
                             check=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(f"{r['label']:<48} {r['wall_s']:7.2f} s  traced peak {r['traced_peak_mib']:7.0f} "
              f"MiB  RSS {r['rss_before_mib']:6.0f} -> {r['rss_peak_mib']:6.0f} MiB", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description="LPGNN benchmark on facebook")
    ap.add_argument("--steps", nargs="+", default=list(STEPS), choices=list(STEPS))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.repeat)))
        return
    print(f"dataset {DATASET}; python {sys.version.split()[0]}; OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS')}")
    run_all(args.steps, args.repeat)


# ------------------------------------------------------ full LPGNN fit (labels)
def bench_lpgnn_fit(G, epochs=20):
    """A full LPGNN fit: multi-bit (eps_x=1) -> LPGNNClassifier (eps_y=1, Kx=4, Ky=2, SAGE).

    On the 50 % training split with the 25 % validation split for early
    stopping, ``epochs`` full-batch epochs (patience larger, so all run). The
    multi-bit reports are kept as constant + sparse and KProp runs on the
    hidden layer, so nothing of size n x d is dense after the mechanism.
    """
    import numpy as np
    from sklearn.pipeline import Pipeline

    from skldp.datasets import load_dataset
    from skldp.mechanisms import MultiBitMechanism
    from skldp.model_selection import random_node_split
    from skldp.models import LPGNNClassifier
    from studies.lpgnn import PAPER_OPTIONS
    y = np.asarray(load_dataset(DATASET).target)
    tr, va, _ = random_node_split(y, random_state=0)
    pipe = Pipeline([("mb", MultiBitMechanism(1.0, feature_range=(0, 1), random_state=0)),
                     ("clf", LPGNNClassifier(eps_y=1.0, classes=np.arange(y.max() + 1),
                                             x_steps=4, y_steps=2, epochs=epochs,
                                             patience=epochs + 1, device="cpu",
                                             random_state=0, validation=va,
                                             # the configuration of the recorded timings
                                             **PAPER_OPTIONS))])
    return lambda: pipe.fit(G[tr | va], y[tr | va])


STEPS["lpgnn_fit"] = ("LPGNN fit (multi-bit + KProp + label RR/Drop, 20 ep.)", bench_lpgnn_fit)


if __name__ == "__main__":
    main()
