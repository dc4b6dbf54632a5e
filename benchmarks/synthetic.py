"""Large synthetic graphs for the speed benchmarks, built fast and lean.

``uniform_graph(n, n_edges=...)`` draws ``n_edges`` edges uniformly at random
(self loops dropped, duplicates merged, the graph made undirected) and dense
uniform features. At 10 million users and 100 million edges it is built in a
few seconds with about 4 GB of temporaries besides the result:

* the edge endpoints are drawn as int32 (half the memory of int64);
* the CSR arrays are built by scipy's COO -> CSR counting sort over both
  directions at once (no ``A + A.T`` pass, no ``argsort``), in float32;
* the features are drawn in float32 in row blocks, straight into the result;
* the result says what it is: ``node_ids`` (the users' keys, as a real
  collection has them; shards of the graph keep them) and ``symmetric=True``
  (so that the symmetry is checked by two sparse products instead of a
  transpose).

With ``device="cuda"`` the same is drawn on the GPU and copied to the host.

Used by ``bench_privge.py``, ``bench_performance.py --large``,
``bench_gpu.py --large`` and ``gpu_check.py``.
"""

import time

import numpy as np

__all__ = ["uniform_graph"]

_BLOCK = 1 << 24   # features drawn per block (64 MiB of float32)


def uniform_graph(n=169_343, d=128, n_edges=1_200_000, n_classes=40, seed=0, verbose=False,
                  hints=True, device=None):
    """A uniform random undirected graph with uniform [0, 1) float32 features.

    Parameters
    ----------
    n : int
        Users (nodes).
    d : int
        Features per user.
    n_edges : int
        Edges drawn (self loops and repeats are dropped, so slightly fewer remain).
    n_classes : int
        Labels drawn uniformly (the features carry no signal: accuracy is chance).
    seed : int
        Seed of every draw.
    verbose : bool
        Print the time of each part.
    hints : bool
        Build ``GraphData(X, A, node_ids=..., symmetric=True)``; ``False``: the
        plain ``GraphData(X, A)`` (as a user would, or an older skldp takes).
    device : str or None
        ``None``: numpy and scipy draw and build everything on the host. A torch
        device (``"cuda"``): the edges are drawn, sorted and merged there and the
        features drawn there, then copied to the host (at 10M users, seconds
        instead of half a minute of single-threaded host work). Another random
        stream: the same distribution, another graph than ``device=None``'s.

    Returns
    -------
    G : GraphData
    y : ndarray of int64
    """
    import scipy.sparse as sp

    t0 = time.perf_counter()
    if device is not None:
        A, X, y, t1 = _drawn_with_torch(n, d, n_edges, n_classes, seed, device)
        return _finish(X, A, y, hints, verbose, t0, t1)
    rng = np.random.default_rng(seed)
    itype = np.int32 if n < 2**31 and 2 * n_edges < 2**31 else np.int64
    # both directions in one pair of arrays: (src, dst) then (dst, src)
    rows = np.empty(2 * n_edges, dtype=itype)
    cols = np.empty(2 * n_edges, dtype=itype)
    rows[:n_edges] = rng.integers(0, n, n_edges, dtype=itype)
    rows[n_edges:] = rng.integers(0, n, n_edges, dtype=itype)
    cols[:n_edges] = rows[n_edges:]
    cols[n_edges:] = rows[:n_edges]
    keep = rows != cols                     # no self loops
    if not keep.all():
        rows, cols = rows[keep], cols[keep]
    del keep
    A = sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(n, n))
    del rows, cols
    A.sum_duplicates()                      # sorted indices, repeats merged ...
    A.data[:] = 1.0                         # ... into unweighted edges
    t1 = time.perf_counter()
    X = np.empty((n, d), dtype=np.float32)
    step = max(1, _BLOCK // max(d, 1))
    for s in range(0, n, step):             # blocks: no float64 temporary of n x d
        X[s:s + step] = rng.random((min(step, n - s), d), dtype=np.float32)
    y = rng.integers(0, n_classes, n)
    return _finish(X, A, y, hints, verbose, t0, t1)


def _finish(X, A, y, hints, verbose, t0, t1):
    from skldp import GraphData
    n = X.shape[0]
    t2 = time.perf_counter()
    G = GraphData(X, A, node_ids=np.arange(n), symmetric=True) if hints else GraphData(X, A)
    t3 = time.perf_counter()
    if verbose:
        print(f"uniform_graph({n}, {A.nnz // 2} edges): edges {t1 - t0:.1f} s, features "
              f"{t2 - t1:.1f} s, GraphData {t3 - t2:.1f} s", flush=True)
    return G, y


def _drawn_with_torch(n, d, n_edges, n_classes, seed, device):
    """``(A, X, y, t_edges)`` drawn on a torch device, returned on the host."""
    import scipy.sparse as sp
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    src = torch.randint(0, n, (n_edges,), generator=gen, device=device)
    dst = torch.randint(0, n, (n_edges,), generator=gen, device=device)
    keep = src != dst                                        # no self loops
    src, dst = src[keep], dst[keep]
    # both directions, as one int64 key per entry (row * n + column): sorted and merged,
    # the keys are the CSR order
    key = torch.cat([src * n + dst, dst * n + src])
    del src, dst, keep
    key = torch.unique(key)                                  # sorted, repeats merged
    rows = torch.div(key, n, rounding_mode="floor")
    itype = np.int32 if n < 2**31 and len(key) < 2**31 else np.int64
    tt = torch.int32 if itype == np.int32 else torch.int64
    indices = (key - rows * n).to(tt).cpu().numpy()
    counts = torch.bincount(rows, minlength=n)
    del key, rows
    indptr = np.zeros(n + 1, dtype=itype)
    np.cumsum(counts.cpu().numpy(), out=indptr[1:])
    A = sp.csr_matrix((np.ones(len(indices), dtype=np.float32), indices, indptr),
                      shape=(n, n))
    A.has_sorted_indices = True
    t1 = time.perf_counter()
    X = np.empty((n, d), dtype=np.float32)
    step = max(1, _BLOCK // max(d, 1))
    out = torch.from_numpy(X)
    for s in range(0, n, step):
        m = min(step, n - s)
        out[s:s + m].copy_(torch.rand((m, d), generator=gen, device=device))
    y = torch.randint(0, n_classes, (n,), generator=gen, device=device).cpu().numpy()
    if torch.device(device).type == "cuda":
        torch.cuda.empty_cache()   # the sort's temporaries: the card is the pipeline's
    return A, X, y, t1
