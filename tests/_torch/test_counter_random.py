"""The k-of-d sampler on a torch device gives the devices' columns, bit for bit."""

import numpy as np
import pytest
import torch

from skldp._torch import _counter_random
from skldp._torch._counter_random import (
    node_uniforms,
    node_uniforms_fine,
    sample_k_of_d,
    sampling_device,
    square_wave_cells,
)
from skldp.device import _random as host
from skldp.device._kinds import square_wave_grid
from skldp.device._random import sample_k_of_d as on_the_host
from skldp.mechanisms import HDSMechanism


def _keys(n, seed=0):
    rng = np.random.default_rng(seed)
    # keys with the top bit set too (uint64 words that are negative as int64)
    return rng.integers(0, 2 ** 63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)


@pytest.mark.parametrize(("n", "d", "k", "seed", "stream"),
                         [(300, 50, 5, 7, 0), (200, 1000, 64, 2 ** 63 + 5, 3), (50, 8, 8, 0, 0),
                          (100, 30, 1, 123, 1)])
def test_torch_sampler_gives_the_hosts_columns(n, d, k, seed, stream):
    keys = _keys(n, seed % 97)
    assert np.array_equal(sample_k_of_d(seed, keys, d, k, stream, device="cpu"),
                          on_the_host(seed, keys, d, k, stream=stream))


def test_blocks_do_not_change_the_columns(monkeypatch):
    keys = _keys(257)
    whole = sample_k_of_d(3, keys, 40, 6)
    monkeypatch.setattr(_counter_random, "_CHUNK", 40 * 16)   # blocks of 16 users
    assert np.array_equal(sample_k_of_d(3, keys, 40, 6), whole)


def test_bad_k_is_refused():
    with pytest.raises(ValueError, match="k must be in 1..5"):
        sample_k_of_d(0, _keys(3), 5, 6)


def test_small_draws_stay_on_the_host():
    assert sampling_device(10, 10) is None
    if not torch.cuda.is_available():
        assert sampling_device(10 ** 6, 10 ** 4) is None


def _dense(a):
    return a.toarray() if hasattr(a, "toarray") else np.asarray(a)


@pytest.mark.parametrize("eps", [1.0, np.inf])
def test_hds_reports_do_not_depend_on_where_the_devices_program_ran(monkeypatch, eps):
    X = np.random.default_rng(0).random((120, 40))
    mech = HDSMechanism(eps=eps, k=4, feature_range=(0, 1), random_state=5)
    host = mech.fit_transform(X)
    calls = []
    real = _counter_random.sample_k_of_d
    cells = _counter_random.square_wave_cells
    monkeypatch.setattr(_counter_random, "sampling_device", lambda n, d: torch.device("cpu"))
    monkeypatch.setattr(_counter_random, "sample_k_of_d",
                        lambda *a, **kw: calls.append(kw["device"]) or real(*a, **kw))
    monkeypatch.setattr(_counter_random, "square_wave_cells",
                        lambda *a, **kw: calls.append("cells") or cells(*a, **kw))
    torch_side = mech.fit_transform(X)
    # the columns, and the cells too where there is noise, drawn by torch
    assert calls == [torch.device("cpu")] + (["cells"] if np.isfinite(eps) else [])
    assert np.array_equal(_dense(torch_side), _dense(host))


@pytest.mark.parametrize(("seed", "stream"), [(7, 0), (2 ** 63 + 5, 3), (0, 2), (123, 1)])
def test_torch_uniforms_are_the_hosts(seed, stream):
    keys = _keys(64, seed % 89)
    for k in (1, 5, 17):
        assert np.array_equal(node_uniforms(seed, keys, k, stream).numpy(),
                              host.node_uniforms(seed, keys, k, stream))
        assert np.array_equal(node_uniforms_fine(seed, keys, k, stream).numpy(),
                              host.node_uniforms_fine(seed, keys, k, stream))


@pytest.mark.parametrize(("eps", "k"), [(0.05, 1), (1.0, 5), (8.0, 3), (40.0, 2)])
def test_torch_square_wave_cells_are_the_hosts(eps, k, monkeypatch):
    grid, _ = square_wave_grid(eps)
    rng = np.random.default_rng(k)
    n = 500
    t = rng.uniform(-1, 1, (n, k))
    t[:5] = [-1.0] * k, [1.0] * k, [0.0] * k, [-1 + 1e-12] * k, [1 - 1e-12] * k   # edges
    keys, seed = _keys(n, 3), 2 ** 63 + 11
    expected = grid.sample((t + 1.0) / 2.0, host.node_uniforms(seed, keys, k, stream=3),
                           host.node_uniforms_fine(seed, keys, k, stream=2),
                           host.node_uniforms(seed, keys, k, stream=1))
    assert np.array_equal(square_wave_cells(grid, t, seed, keys), expected)
    monkeypatch.setattr(_counter_random, "_CHUNK", 4 * k * 7)   # blocks of 7 users
    assert np.array_equal(square_wave_cells(grid, t, seed, keys), expected)


def test_torch_digest_sums_are_the_hosts(monkeypatch):
    from skldp.population import _digest
    rng = np.random.default_rng(9)
    X = rng.normal(size=(300, 23)) * 10.0 ** rng.integers(-300, 300, (300, 23))
    X[rng.random(X.shape) < 0.3] = 0.0
    X[0, :5] = [-0.0, 5e-324, -1e308, 1.0, -1.0]   # signed zero, subnormal, extremes
    X32 = (X / np.abs(X).max() * 1e30).astype(np.float32)   # within float32's range
    host = [_digest.feature_digests(X), _digest.feature_digests(X32)]
    monkeypatch.setattr(_digest, "_hashing_device", lambda n, d: torch.device("cpu"))
    monkeypatch.setattr(_digest, "_DEVICE_BLOCK", 23 * 40)   # blocks of 40 rows
    assert np.array_equal(_digest.feature_digests(X), host[0])
    assert np.array_equal(_digest.feature_digests(X32), host[1])
    assert len(np.unique(host[0])) == 300


def test_digests_import_no_torch_of_their_own():
    import subprocess
    import sys
    code = ("import sys, numpy as np\nfrom skldp.population._digest import feature_digests\n"
            "feature_digests(np.ones((3000, 2000)))\nprint('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
