"""The RGNN page: written from its runs file by the study's ``write_page``.

The committed page is what ``write_page`` gives from the committed runs (so the page
cannot disagree with its runs), the figure is drawn, and a page without its markers is
refused.
"""


import pytest

from skldp.experiments import load_runs
from studies import PAGES_DIR, RUNS_DIR
from studies.rgnn import ablation_block, table_block

PAGE = PAGES_DIR / "rgnn.md"
BLOCKS = ["ablation", "command", "figure", "table"]


@pytest.fixture
def records():
    return load_runs(RUNS_DIR / "rgnn_runs.jsonl", "rgnn")


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
