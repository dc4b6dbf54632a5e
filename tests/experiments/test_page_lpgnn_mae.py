"""The LPGNN MAE page: written from its runs file by the study's ``write_page``.

The committed page is what ``write_page`` gives from the committed runs (so the page
cannot disagree with its runs), the figure is drawn, and a page without its markers is
refused.
"""

import shutil

import numpy as np
import pytest

from skldp.experiments import load_runs
from studies import PAGES_DIR, RUNS_DIR
from studies import write_page as write_any_page
from studies.lpgnn_mae import write_page

PAGE = PAGES_DIR / "lpgnn_mae.md"
BLOCKS = ["command", "details", "figure", "table"]


@pytest.fixture
def records():
    return load_runs(RUNS_DIR / "lpgnn_mae_runs.jsonl", "lpgnn_mae")


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
    (tmp_path / "lpgnn_mae.md").write_text(blank, encoding="utf-8")
    paths = write_page(records, tmp_path)
    assert paths["page"] == tmp_path / "lpgnn_mae.md"
    assert paths["page"].read_bytes() == committed
    shutil.copy(PAGE, tmp_path / "lpgnn_mae.md")
    write_any_page("lpgnn_mae", records, tmp_path)
    assert (tmp_path / "lpgnn_mae.md").read_bytes() == committed


def test_the_table_follows_the_runs(records, tmp_path):
    # keep two of Cora's PGC collections at eps = 1: the cell is their mean and std
    drop = [r for r in records if r["dataset"] == "cora" and r["method"] == "PGC"
            and r["params"]["eps"] == 1][2:]
    kept = [r for r in records if r not in drop]
    mine = [r["metrics"]["mae"] for r in kept if r["dataset"] == "cora"
            and r["method"] == "PGC" and r["params"]["eps"] == 1]
    shutil.copy(PAGE, tmp_path / "lpgnn_mae.md")
    text = write_page(kept, tmp_path)["page"].read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| cora | 1 |"))
    cells = row.split(" | ")
    assert cells[4] == f"{np.mean(mine):.4f} ± {np.std(mine, ddof=1):.4f}"
    assert cells[6] == "2/5 |"   # collections per cell: 2 for PGC, 5 for LM and PM
    assert f"({len(kept)} records;" in text


def test_write_page_draws_the_figure(records, tmp_path):
    pytest.importorskip("matplotlib")
    shutil.copy(PAGE, tmp_path / "lpgnn_mae.md")
    paths = write_page(records, tmp_path)
    assert paths["figure"] == tmp_path / "fig_lpgnn_mae.png"
    assert paths["figure"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_page_without_its_markers_is_refused(records, tmp_path):
    page = tmp_path / "lpgnn_mae.md"
    page.write_text("# MAE\n\nNo generated block here.\n", encoding="utf-8")
    missing = ", ".join(map(repr, BLOCKS))
    with pytest.raises(ValueError, match=rf"lpgnn_mae.md: no block \[{missing}\]"):
        write_page(records, tmp_path)
    assert page.read_text(encoding="utf-8") == "# MAE\n\nNo generated block here.\n"
