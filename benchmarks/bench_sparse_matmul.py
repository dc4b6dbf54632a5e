"""The torch models' sparse x dense product against ``torch.sparse.mm``, as a ratio in one run.

``skldp.models._torch_utils.sparse_matmul`` runs a CPU float32 product of a
sparse CSR tensor with a dense one as a weighted embedding-bag sum. This script
times it and ``torch.sparse.mm`` on the same operands, alternated, and prints
the median of each and their ratio for the shapes of GNN training:

* the mean aggregator (``D^-1 A``) of Cora and of Facebook times 7, 16, 32 and
  64 dense columns, contiguous and as a column slice (the fused SAGE product
  gives slices);
* with ``--large``, a random 1M-node graph with 10M edges times 16 columns.

Usage::

    SKLDP_DATASETS_DIR=/path/to/datasets python benchmarks/bench_sparse_matmul.py \\
        [--threads 1] [--repeat 30] [--large]
"""

import argparse
import platform
import statistics
import time

import numpy as np
import scipy.sparse as sp
import torch

from skldp.datasets import load_dataset
from skldp.models._torch_utils import sparse_matmul, to_torch_sparse
from skldp.utils._adjacency import normalized_adjacency


def _time(fn, repeat):
    fn()  # warm up (kernel selection, first allocation)
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def compare(name, A, widths, repeat):
    """Rows (name, width, layout, ms torch.sparse.mm, ms sparse_matmul, ratio)."""
    T = to_torch_sparse(A)
    rows = []
    for width in widths:
        wide = torch.randn(A.shape[1], 2 * width)
        for layout, h in (("contiguous", wide[:, :width].contiguous()),
                          ("column slice", wide.split(width, dim=1)[0])):
            ref, new = [], []
            for _ in range(repeat):  # alternate, so drifts of the machine hit both
                ref += _time(lambda h=h: torch.sparse.mm(T, h), 1)
                new += _time(lambda h=h: sparse_matmul(T, h), 1)
            torch.testing.assert_close(sparse_matmul(T, h), torch.sparse.mm(T, h),
                                       rtol=1e-4, atol=1e-5)
            r, s = statistics.median(ref) * 1e3, statistics.median(new) * 1e3
            rows.append((name, width, layout, r, s, r / s))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--large", action="store_true", help="add a 1M-node, 10M-edge graph")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"machine {platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} torch thread(s), median of {args.repeat} alternated runs")
    rows = []
    for name in ("cora", "facebook"):
        A = load_dataset(name).data.adjacency
        rows += compare(name, normalized_adjacency(A, False, "rw"), (7, 16, 32, 64),
                        args.repeat)
    if args.large:
        rng = np.random.default_rng(0)
        n, m = 1_000_000, 10_000_000
        A = sp.csr_matrix((np.ones(m, np.float32), (rng.integers(0, n, m),
                                                    rng.integers(0, n, m))), shape=(n, n))
        rows += compare("random 1M / 10M", A, (16,), max(3, args.repeat // 10))
    print("| graph | columns | layout | torch.sparse.mm ms | sparse_matmul ms | ratio |")
    print("|---|---|---|---|---|---|")
    for name, width, layout, r, s, ratio in rows:
        print(f"| {name} | {width} | {layout} | {r:.3f} | {s:.3f} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
