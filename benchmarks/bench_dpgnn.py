"""Training throughput of DP-GNN: per-node gradients (clipped, noised) vs a plain step.

Measures, on ``facebook`` and on a synthetic ogbn-arxiv-sized graph (169,343
nodes, 128 dense features, ~1.2M undirected edges, 54 % training nodes):

- setup time (degree-bounded sampling + neighbourhood Gram matrices);
- seconds per DP step (per-node gradients with torch.func, per-layer clipping,
  noise) and per non-private step (one backward of the summed loss) on the same
  batch, model and neighbourhoods, and their ratio;
- throughput in training nodes per second.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_dpgnn.py [--threads 1] [--steps 5]
        [--device auto] [--datasets facebook synthetic]
"""

import argparse
import time

import numpy as np
import scipy.sparse as sp
import torch

from skldp.central import degree_bounded_sample
from skldp.central._dpgnn import (
    _Features,
    _grid_gaussian,
    _grid_step,
    _OneLayerGNN,
    _padded_neighbourhoods,
    _PerNodeGradients,
)
from skldp.models._torch_utils import resolve_device


def synthetic(n=169_343, d=128, n_edges=1_200_000, n_classes=40, seed=0):
    rng = np.random.default_rng(seed)
    u = rng.integers(0, n, int(n_edges * 1.02))
    v = rng.integers(0, n, len(u))
    keep = u != v
    A = sp.coo_matrix((np.ones(keep.sum(), np.float32), (u[keep], v[keep])), shape=(n, n))
    A = ((A + A.T) > 0).astype(np.float32).tocsr()
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = rng.integers(0, n_classes, n)
    return X, A, y


def load(name):
    if name == "synthetic":
        return synthetic()
    from skldp.datasets import load_dataset
    b = load_dataset(name)
    return b.data.features, b.data.adjacency, b.target


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def bench(name, K, m, hidden, steps, device):
    X, A, y = load(name)
    n = A.shape[0]
    rng = np.random.default_rng(0)
    train = np.sort(rng.permutation(n)[: int(0.54 * n) if name == "synthetic" else n // 2])
    t0 = time.perf_counter()
    S = degree_bounded_sample(A, K, nodes=train, random_state=0)
    t_sample = time.perf_counter() - t0
    nb, w = _padded_neighbourhoods(S, train, K)
    module = _OneLayerGNN(X.shape[1], int(y.max()) + 1, hidden, 1, 1, "tanh", True,
                          generator=torch.Generator().manual_seed(0)).to(device)
    t0 = time.perf_counter()
    eng = _PerNodeGradients(module, _Features(X, device), nb, torch.as_tensor(w, device=device),
                            torch.as_tensor(y[train], device=device))
    t_gram = time.perf_counter() - t0
    C = {g: 1.0 for g in eng.groups}
    gen = torch.Generator(device=device)
    gen.manual_seed(0)

    sigma = 1.0
    step = _grid_step(sigma)

    def private_step(idx):  # as in DPGNNClassifier: noise added on a grid, in float64
        sums = eng.clipped_sum(idx, C)
        for k, p in eng.params.items():
            p.grad = (_grid_gaussian(sums[k], sigma, step, gen) / m).to(p.dtype)

    def plain_step(idx):
        sums = eng.summed(idx)
        for k, p in eng.params.items():
            p.grad = sums[k] / m

    out = {}
    for label, fn in (("dp", private_step), ("plain", plain_step)):
        batches = [np.sort(rng.choice(len(train), m, replace=False)) for _ in range(steps + 1)]
        fn(batches[0])  # warm-up
        sync(device)
        t0 = time.perf_counter()
        for b in batches[1:]:
            fn(b)
        sync(device)
        out[label] = (time.perf_counter() - t0) / steps
    return dict(dataset=name, n=n, edges=A.nnz // 2, d=X.shape[1], n_train=len(train), K=K,
                m=m, hidden=hidden, device=str(device), sample_s=t_sample, gram_s=t_gram,
                dp_step_s=out["dp"], plain_step_s=out["plain"],
                dp_nodes_per_s=m / out["dp"], plain_nodes_per_s=m / out["plain"],
                ratio=out["dp"] / out["plain"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--datasets", nargs="+", default=["facebook", "synthetic"])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    configs = {"facebook": [(3, 5000, 32), (10, 1000, 64)],
               "synthetic": [(7, 10000, 64)]}
    print("| graph | nodes | edges | d | device | K | batch | hidden | sampling s | Gram s | "
          "DP step s | plain step s | DP nodes/s | plain nodes/s | DP/plain |")
    print("|" + "---|" * 15)
    for name in args.datasets:
        for K, m, h in configs.get(name, [(7, 1000, 64)]):
            r = bench(name, K, m, h, args.steps, device)
            print(f"| {r['dataset']} | {r['n']} | {r['edges']} | {r['d']} | {r['device']} | "
                  f"{K} | {m} | {h} | {r['sample_s']:.2f} | {r['gram_s']:.2f} | "
                  f"{r['dp_step_s']:.3f} | {r['plain_step_s']:.3f} | "
                  f"{r['dp_nodes_per_s']:.0f} | {r['plain_nodes_per_s']:.0f} | "
                  f"{r['ratio']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
