"""benchmarks/bench_gpu.py runs every case (on the CPU here), so a GPU session can use it as is."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from skldp.mechanisms import HDSMechanism

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def bench(monkeypatch, binary_sbm):
    spec = importlib.util.spec_from_file_location("bench_gpu", ROOT / "benchmarks" / "bench_gpu.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # A 3-block SBM with binary features stands in for Cora and Facebook.
    G, y = binary_sbm(n=150, d=12)
    n = len(y)
    fit = np.arange(n) % 4 != 0
    hds = HDSMechanism(eps=1.0, k=3, feature_range=(0, 1), random_state=0)
    monkeypatch.setattr(mod, "_cora", lambda: (G, y, fit, ~fit))
    monkeypatch.setattr(mod, "_facebook_reports", lambda: (G, y, fit, ~fit, hds))
    return mod


@pytest.mark.slow
def test_every_case_runs_and_reports(bench, tmp_path):
    out = tmp_path / "table.md"
    rows = bench.main(["--devices", "cpu", "--out", str(out)])
    cases = [r["case"] for r in rows]
    assert len(cases) == len(set(cases)) == 2 + 1 + 8 + 2
    for r in rows:
        assert r["device"] == "cpu" and r["seconds"] > 0 and r["gpu_gib"] is None
        assert np.isfinite(r["metric"])
    ppr = [r for r in rows if r["case"].startswith("PPRPropagation")]
    assert all(r["metric"] <= 1e-3 for r in ppr)       # within PPRPropagation's tol
    acc = [r["metric"] for r in rows if r["metric_name"] == "test accuracy"]
    assert np.median(acc) > 0.5                           # 3 classes: chance is 1/3
    table = out.read_text()
    assert table.count("\n| ") == 1 + len(rows)
    # the machine's GPU is named even when only the CPU is measured
    assert ("GPU: none" in table) == (not torch.cuda.is_available())
