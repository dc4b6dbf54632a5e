"""The benchmarks that use ``studies`` run as their docstrings say, with skldp installed."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
USERS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py")
               if "from studies" in p.read_text() or "import studies" in p.read_text())


def test_some_benchmarks_use_studies():
    assert {"bench_lpgnn.py", "bench_performance.py", "bench_sweep.py"} <= set(USERS)


@pytest.mark.parametrize("name", USERS)
def test_benchmark_finds_studies_from_any_folder(name, tmp_path):
    # `python benchmarks/x.py` puts benchmarks/, not the checkout, first on the path;
    # an installed skldp does not bring `studies` with it.
    code = ("import runpy, sys; runpy.run_path(sys.argv[1], run_name='not_main'); "
            "import studies; print(studies.__file__)")
    res = subprocess.run([sys.executable, "-c", code, str(ROOT / "benchmarks" / name)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert Path(res.stdout.strip()).resolve().parent == ROOT / "studies"
