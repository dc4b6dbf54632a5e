"""benchmarks/plot_performance.py draws the performance page's figure from the page's tables."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "performance" / "performance.md"


def _load(name):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def plot():
    return _load("plot_performance")


def test_numbers_reads_a_cell_before_its_brackets(plot):
    assert plot.numbers("4.8×, 5.1×") == [4.8, 5.1]
    assert plot.numbers("51.5× (54.9× in CPU time)") == [51.5]
    assert plot.numbers("2,004.5") == [2004.5]
    assert plot.numbers("—") == []


def test_table_after_a_marker(plot):
    text = "x\n<!-- m -->\n| a | b |\n|---|---|\n| 1 | 2, 3 |\n| 4 | 5 |\n\nafter | not a row\n"
    assert plot.table_after(text, "<!-- m -->") == [{"a": "1", "b": "2, 3"}, {"a": "4", "b": "5"}]
    with pytest.raises(ValueError, match="has no"):
        plot.table_after(text, "<!-- other -->")
    with pytest.raises(ValueError, match="no table"):
        plot.table_after("<!-- m -->\ntext only\n", "<!-- m -->")
    with pytest.raises(ValueError, match="has 3 cells, its header 2"):
        plot.table_after("<!-- m -->\n| a | b |\n|---|---|\n| 1 | 2 | 3 |\n", "<!-- m -->")


def test_the_page_has_the_figures_tables(plot):
    text = PAGE.read_text()
    steps, f32, f64 = plot.propagation(text)
    assert len(steps) == 4 and all(len(v) == 2 for v in f32) and all(len(v) == 2 for v in f64)
    assert all(0.5 < x < 10 for v in f32 + f64 for x in v)   # ratios, not seconds
    names, ratios = plot.official(text)
    assert len(names) == 6 and all(r and r[0] > 1 for r in ratios)
    cases, speedups = plot.gpu(text)
    assert cases and len(cases) == len(speedups) and all(s > 0 for s in speedups)
    assert "(performance.png)" in text


def test_the_gpu_panel_reads_what_the_gpu_check_writes(plot):
    # the GPU check's section, made by its own code: the CUDA row with a CPU row has a ratio
    check = _load("gpu_check")
    row = dict(metric=0.5, metric_name="accuracy", gpu_gib=None)
    rows = [dict(row, case="Cora GCNClassifier", device="cpu", seconds=4.0),
            dict(row, case="Cora GCNClassifier", device="cuda", seconds=2.0, gpu_gib=1.0),
            dict(row, case="10M users", device="cuda", seconds=3.0, gpu_gib=1.0)]
    section = check.summary([], rows, [], ["--out-dir", "x"], smoke=False)
    page = check.with_section(PAGE.read_text(), section)
    assert plot.gpu(page) == (["Cora GCNClassifier"], [2.0])


def test_the_figure_is_drawn(plot, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "figure.png"
    plot.main(["--out", str(out)])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
