"""The RGNN page: written from its runs file by the study's ``write_page``.

The committed page is what ``write_page`` gives from the committed runs (so the page
cannot disagree with its runs), the figure is drawn, and a page without its markers is
refused.
"""

import shutil

import pytest

from skldp.experiments import load_runs
from studies import PAGES_DIR, RUNS_DIR
from studies import write_page as write_any_page
from studies.rgnn import ablation_block, table_block, write_page

PAGE = PAGES_DIR / "rgnn.md"
BLOCKS = ["ablation", "command", "figure", "table"]


@pytest.fixture
def records():
    return load_runs(RUNS_DIR / "rgnn_runs.jsonl", "rgnn")


def _blank_blocks(text):
    """The page with every generated block emptied (its hand-written text kept)."""
    out, inside = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("<!-- end generated"):
            inside = False
        if not inside:
            out.append(line)
        if line.startswith("<!-- generated:"):
            inside = True
    return "".join(out)


def test_write_page_gives_back_the_committed_page(records, tmp_path):
    committed = PAGE.read_bytes()
    blank = _blank_blocks(committed.decode("utf-8"))
    assert blank != committed.decode("utf-8")
    assert all(f"<!-- generated: {b} -->" in blank for b in BLOCKS)
    (tmp_path / "rgnn.md").write_text(blank, encoding="utf-8")
    paths = write_page(records, tmp_path)
    assert paths["page"] == tmp_path / "rgnn.md"
    assert paths["page"].read_bytes() == committed
    # the registry's write_page is this one
    shutil.copy(PAGE, tmp_path / "rgnn.md")
    write_any_page("rgnn", records, tmp_path)
    assert (tmp_path / "rgnn.md").read_bytes() == committed


def test_the_tables_follow_the_runs(records):
    table = table_block(records)
    assert table.count("\n") == 2 + 5 * 2 * 4   # header, rule, one row per cell
    # without German's graph-only runs its column says so, and the other datasets keep theirs
    kept = [r for r in records
            if not (r["dataset"] == "german_rgnn" and r["method"] == "graph-only")]
    rows = {line.split(" | ")[0]: line for line in table_block(kept).splitlines()[2:]}
    assert rows["| german_rgnn"].endswith("| not run | " + rows["| german_rgnn"].split(
        " | ")[-1])
    assert "not run" not in "\n".join(v for k, v in rows.items() if k != "| german_rgnn")
    assert "| citeseer | RGNN-LLP | 34.0 ± 3.2 |" in ablation_block(records)
    assert "(n=5)" in ablation_block(records)


def test_write_page_draws_the_figure(records, tmp_path):
    pytest.importorskip("matplotlib")
    shutil.copy(PAGE, tmp_path / "rgnn.md")
    paths = write_page(records, tmp_path)
    assert paths["figure"] == tmp_path / "fig_rgnn.png"
    assert paths["figure"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_page_without_its_markers_is_refused(records, tmp_path):
    (tmp_path / "rgnn.md").write_text("# RGNN\n\nno generated blocks\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no block"):
        write_page(records, tmp_path)
    assert (tmp_path / "rgnn.md").read_text(encoding="utf-8") == "# RGNN\n\nno generated blocks\n"
