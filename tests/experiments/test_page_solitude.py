"""The Solitude page: written from its runs file by the study's ``write_page``.

The committed page is what ``write_page`` gives from the committed runs (so the page
cannot disagree with its runs), the figure is drawn, a page without its markers is
refused, and its feature-free floor (label propagation) is a run of the study.
"""

import shutil

import pytest

from skldp.experiments import load_runs
from studies import PAGES_DIR, RUNS_DIR, get_study
from studies import write_page as write_any_page
from studies.solitude import tables_block, write_page

PAGE = PAGES_DIR / "solitude.md"
BLOCKS = ["command", "figure", "tables"]


@pytest.fixture
def records():
    return load_runs(RUNS_DIR / "solitude_runs.jsonl", "solitude")


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
    (tmp_path / "solitude.md").write_text(blank, encoding="utf-8")
    paths = write_page(records, tmp_path)
    assert paths["page"] == tmp_path / "solitude.md"
    assert paths["page"].read_bytes() == committed
    shutil.copy(PAGE, tmp_path / "solitude.md")
    write_any_page("solitude", records, tmp_path)
    assert (tmp_path / "solitude.md").read_bytes() == committed


def test_label_propagation_is_a_run_of_the_study_in_both_backbones_tables(records):
    keys = {s.key for s in get_study("solitude").runs() if s.method == "label_propagation"}
    recorded = [r for r in records if r["method"] == "label_propagation"]
    assert len(keys) == 2 * 6 * 5 and {r["key"] for r in recorded} == keys
    assert all(r["metrics"]["alpha"] in (0.5, 0.8, 0.9, 0.99) for r in recorded)
    rows = [line for line in tables_block(records).splitlines()
            if line.startswith("| label propagation, alpha on validation (ours)")]
    assert len(rows) == 4 and rows[0] == rows[1] and rows[2] == rows[3] != rows[0]
    without = tables_block([r for r in records if r["method"] != "label_propagation"])
    assert "| label propagation, alpha on validation (ours) | — | — |" in without


def test_write_page_draws_the_figure(records, tmp_path):
    pytest.importorskip("matplotlib")
    shutil.copy(PAGE, tmp_path / "solitude.md")
    paths = write_page(records, tmp_path)
    assert paths["figure"] == tmp_path / "fig_solitude.png"
    assert paths["figure"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_page_without_its_markers_is_refused(records, tmp_path):
    (tmp_path / "solitude.md").write_text("# Solitude\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no block"):
        write_page(records, tmp_path)
    assert (tmp_path / "solitude.md").read_text(encoding="utf-8") == "# Solitude\n"
