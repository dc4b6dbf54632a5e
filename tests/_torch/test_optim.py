"""skldp's Adam and SGD: the same updates as torch.optim, without importing torch._dynamo."""

import subprocess
import sys
import textwrap

import pytest
import torch

from skldp._torch._optim import SGD, Adam, _fused_devices


def _train(make_optimizer, dtype=torch.float32, steps=40):
    """Parameters of a small MLP after ``steps`` full-batch steps (fixed data and init)."""
    g = torch.Generator().manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(12, 6), torch.nn.Tanh(),
                              torch.nn.Linear(6, 3)).to(dtype)
    frozen = torch.nn.Parameter(torch.ones(2, dtype=dtype), requires_grad=False)
    unused = torch.nn.Parameter(torch.ones(4, dtype=dtype))  # never gets a gradient
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=dtype))
    X = torch.randn(50, 12, generator=g, dtype=dtype)
    y = torch.randint(0, 3, (50,), generator=g)
    opt = make_optimizer([*net.parameters(), frozen, unused])
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(X), y).backward()
        opt.step()
    return [p.detach().clone() for p in [*net.parameters(), frozen, unused]]


@pytest.mark.parametrize("version, devices", [
    ("2.2.2", ("cuda",)), ("2.3.1+cpu", ("cuda",)),     # no CPU kernel yet: it would raise
    ("2.4.0", ("cpu", "cuda")), ("2.13.0+cpu", ("cpu", "cuda"))])
def test_adam_fuses_on_the_cpu_only_from_torch_2_4(version, devices):
    assert _fused_devices(version) == devices


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("weight_decay", [0.0, 1e-2])
def test_adam_matches_torch_bit_for_bit(dtype, weight_decay, fused):
    ours = _train(lambda p: Adam(p, lr=0.05, weight_decay=weight_decay, fused=fused), dtype)
    ref = _train(lambda p: torch.optim.Adam(p, lr=0.05, weight_decay=weight_decay,
                                            fused=fused), dtype)
    assert all(torch.equal(a, b) for a, b in zip(ours, ref, strict=True))
    start = _train(lambda p: Adam(p, lr=0.05), dtype, steps=0)
    assert not torch.equal(ours[0], start[0])  # it did move
    assert torch.equal(ours[-1], start[-1]) and torch.equal(ours[-2], start[-2])


def test_adam_fused_by_default_where_torch_has_the_kernel():
    # the default (fused=None) runs the fused kernel on CPU: torch.optim.Adam(fused=True)
    default = _train(lambda p: Adam(p, lr=0.05, weight_decay=1e-2))
    ref = _train(lambda p: torch.optim.Adam(p, lr=0.05, weight_decay=1e-2, fused=True))
    assert all(torch.equal(a, b) for a, b in zip(default, ref, strict=True))
    # and agrees to rounding with the single-tensor update
    single = _train(lambda p: Adam(p, lr=0.05, weight_decay=1e-2, fused=False))
    for a, b in zip(default, single, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fused", [False, True])
def test_adam_betas_and_eps_are_used(fused):
    ref = _train(lambda p: torch.optim.Adam(p, lr=0.05, betas=(0.5, 0.9), eps=1e-3,
                                            fused=fused))
    ours = _train(lambda p: Adam(p, lr=0.05, betas=(0.5, 0.9), eps=1e-3, fused=fused))
    default = _train(lambda p: Adam(p, lr=0.05, fused=fused))
    assert all(torch.equal(a, b) for a, b in zip(ours, ref, strict=True))
    assert not torch.equal(ours[0], default[0])


def test_sgd_matches_torch_bit_for_bit():
    ours = _train(lambda p: SGD(p, lr=0.1))
    ref = _train(lambda p: torch.optim.SGD(p, lr=0.1))
    assert all(torch.equal(a, b) for a, b in zip(ours, ref, strict=True))


def test_zero_grad():
    p = torch.nn.Parameter(torch.ones(3))
    opt = SGD([p], lr=1.0)
    p.grad = torch.full((3,), 2.0)
    opt.zero_grad(set_to_none=False)
    assert torch.equal(p.grad, torch.zeros(3))
    opt.zero_grad()
    assert p.grad is None


def test_bad_arguments():
    with pytest.raises(ValueError, match="lr must be > 0"):
        Adam([torch.nn.Parameter(torch.ones(1))], lr=0.0)
    with pytest.raises(ValueError, match="no parameters"):
        SGD([torch.ones(1)], lr=0.1)  # a plain tensor does not require a gradient


def test_fits_do_not_import_torch_dynamo():
    # torch.optim imports torch._dynamo (about 2 s) on its first use: the reason
    # for _optim. Every local-DP model family trains here in a fresh interpreter, on the
    # default device (CUDA where there is one), and the first fit that imports
    # torch._dynamo is named. (DPGNNClassifier is not among them: its per-node gradients
    # use torch.func, which imports torch._dynamo itself.)
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import scipy.sparse as sp
        from skldp import GraphData
        from skldp.models import (GCNClassifier, LPGNNClassifier, MLPHead, RGNNClassifier,
                                  HadamardLinkPredictor, SolitudeClassifier, VGAELinkPredictor)
        from skldp.model_selection import random_edge_split
        try:  # RGNN's label-proportion term partitions the graph with METIS (optional)
            import pymetis  # noqa: F401
            alpha = 1.0
        except ImportError:
            alpha = 0.0

        def dynamo():
            return "torch._dynamo" in sys.modules

        print("before", dynamo())
        rng = np.random.default_rng(0)
        n = 40
        y = np.repeat([0, 1], n // 2)
        A = np.triu(rng.random((n, n)) < np.where(y[:, None] == y[None, :], 0.4, 0.05), 1)
        A = sp.csr_array((A | A.T).astype(float))
        X = rng.random((n, 4))
        G = GraphData(X, A)
        for clf in (MLPHead(epochs=2), GCNClassifier(epochs=2),
                    LPGNNClassifier(epochs=2, x_steps=1, classes=[0, 1]),
                    RGNNClassifier(epochs=2, n_clusters=4, classes=[0, 1], alpha=alpha),
                    SolitudeClassifier(epochs=2)):
            clf.set_params(random_state=0).fit(G, y)
            print(type(clf).__name__, dynamo())
        P_tr, _, _, y_tr, _, _ = random_edge_split(G, random_state=0)
        for link in (VGAELinkPredictor(epochs=2), HadamardLinkPredictor(epochs=2)):
            link.set_params(random_state=0).fit(P_tr, y_tr)
            print(type(link).__name__, dynamo())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = dict(line.split() for line in out.stdout.strip().splitlines())
    if lines.pop("before") == "True":  # not a fit's doing: a plugin or torch's own import
        pytest.skip(f"torch {torch.__version__} imported torch._dynamo before any fit")
    assert len(lines) == 7
    importers = [name for name, imported in lines.items() if imported == "True"]
    assert not importers, f"{importers[0]}.fit imported torch._dynamo"
