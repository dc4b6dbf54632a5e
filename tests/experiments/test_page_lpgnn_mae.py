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
from studies.lpgnn_mae import write_page

PAGE = PAGES_DIR / "lpgnn_mae.md"
BLOCKS = ["command", "details", "figure", "table"]


@pytest.fixture
def records():
    return load_runs(RUNS_DIR / "lpgnn_mae_runs.jsonl", "lpgnn_mae")


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
