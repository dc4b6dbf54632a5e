"""The torch solvers read as few values back from the device as their stopping rules need.

On an accelerator each read of a value waits for every queued kernel: the tests count
the reads (``float``, ``bool``, ``item``, ``tolist``, ... of a tensor) on the CPU.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.propagation import PPRPropagation

torch = pytest.importorskip("torch")

_READS = ("__bool__", "item", "__float__", "__int__", "__index__", "tolist", "cpu", "numpy")


def _count_reads(monkeypatch):
    reads = []
    for name in _READS:
        orig = getattr(torch.Tensor, name)
        monkeypatch.setattr(torch.Tensor, name, lambda self, *a, _o=orig, _n=name, **k:
                            (reads.append(_n), _o(self, *a, **k))[1])
    return reads


def _spy_solver(monkeypatch, name, reads):
    """Record (reads, products) of each call of the solver ``name``."""
    real = getattr(PPRPropagation, name)
    calls = []

    def spy(self, ops, F):
        n0 = len(reads)
        out = real(self, ops, F)
        calls.append((len(reads) - n0, out[2]))
        return out

    monkeypatch.setattr(PPRPropagation, name, spy)
    return calls


def _directed_graph(seed=0, n=50, d=4):
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.1, random_state=seed, format="csr")
    A.data[:] = 1.0
    return GraphData(rng.normal(size=(n, d)), A)


def test_power_iteration_reads_one_pair_of_norms_per_step(monkeypatch):
    ppr = PPRPropagation(alpha=0.1, tol=1e-8, solver="power", backend="torch", device="cpu")
    want = ppr.fit_transform(_directed_graph()).features   # (memoised on its graph)
    reads = _count_reads(monkeypatch)
    calls = _spy_solver(monkeypatch, "_power", reads)
    got = PPRPropagation(alpha=0.1, tol=1e-8, solver="power", backend="torch",
                         device="cpu").fit_transform(_directed_graph()).features
    (n_reads, products), = calls
    assert products > 10
    # one read of ||H|| and ||Z|| together per step, and the first ||H|| == 0 check
    assert n_reads == products + 1
    np.testing.assert_array_equal(got, want)
