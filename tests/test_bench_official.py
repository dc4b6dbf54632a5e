"""benchmarks/bench_official.py: the import floor's side (the official codes are not here)."""

import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_floor_worker_imports_torch_and_sklearn_only(tmp_path):
    out = tmp_path / "floor.json"
    code = ("import runpy, sys; sys.argv = sys.argv[1:]; "
            "runpy.run_path(sys.argv[0], run_name='__main__'); "
            "print('skldp' in sys.modules, 'sklearn.base' in sys.modules, "
            "'torch' in sys.modules)")
    script = str(ROOT / "benchmarks" / "bench_official.py")
    res = subprocess.run([sys.executable, "-c", code, script,
                          "--worker", "floor", "--system", "rgnn", "--official", str(tmp_path),
                          "--out-json", str(out)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["False", "True", "True"]
    row = json.loads(out.read_text())
    assert math.isnan(row["accuracy"]) and row["inner_s"] > 0 and row["torch_threads"] == 1


def test_floor_row_prints_without_accuracy(benchmark_script):
    bench_official = benchmark_script("bench_official")
    row = dict(side="floor", timed_out=False, returncode=0, wall_s=3.2, cpu_s=3.1,
               peak_rss_mib=324.0, accuracy=float("nan"), load_before=(0.5,),
               load_after=(0.6,), inner_s=1.2)
    line = bench_official._fmt_row(row)
    assert "--" in line and "nan" not in line and "3.2 s" in line


def test_compile_sources_writes_bytecode_for_every_module(tmp_path, monkeypatch,
                                                          benchmark_script):
    # The environment may forbid writing bytecode on import; compileall must not care.
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    bench_official = benchmark_script("bench_official")
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    for f in (pkg / "a.py", pkg / "sub" / "b.py"):
        f.write_text("X = 1\n")
    bench_official.compile_sources(sys.executable, str(pkg))
    tag = sys.implementation.cache_tag
    assert (pkg / "__pycache__" / f"a.{tag}.pyc").is_file()
    assert (pkg / "sub" / "__pycache__" / f"b.{tag}.pyc").is_file()


def _side(side, wall, repeat=0, timed_out=False, returncode=0):
    return dict(side=side, wall_s=wall, cpu_s=wall, timed_out=timed_out, returncode=returncode,
                repeat=repeat)


def test_ratio_summary_reports_the_work_above_the_floor(benchmark_script):
    bench_official = benchmark_script("bench_official")
    rows = [_side("official", 14.0, 0), _side("official", 15.0, 1), _side("official", 16.0, 2),
            _side("skldp", 6.0, 0), _side("skldp", 6.0, 1), _side("skldp", 99.0, 2, returncode=1),
            _side("floor", 5.0, 0), _side("floor", 5.0, 1)]
    ratio, paired, floor = bench_official.ratio_summary(rows)
    assert "wall 2.5x" in ratio            # 15 / 6: the failed skldp run is left out
    # Repeat by repeat: 14 / 6 and 15 / 6; repeat 2 has no finished skldp run.
    assert paired.endswith("2.3x, 2.5x (range 2.3-2.5x)")
    assert "official / floor: wall 3.0x" in floor
    assert "above the floor, official / skldp: wall 10.0x" in floor  # (15 - 5) / (6 - 5)
    # A skldp side at or below the floor has no such ratio, and a timeout gives none at all.
    assert "above the floor, official" not in bench_official.ratio_summary(
        rows[:3] + [_side("skldp", 5.0), _side("floor", 5.0)])[-1]
    assert bench_official.ratio_summary(rows + [_side("skldp", 1800.0, timed_out=True)]) == [
        "no ratio: skldp did not finish within the timeout"]
