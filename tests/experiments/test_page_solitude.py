"""The Solitude page: written from its runs file by the study's ``write_page``.

The committed page is what ``write_page`` gives from the committed runs (so the page
cannot disagree with its runs), the figure is drawn, a page without its markers is
refused, and its feature-free floor (label propagation) is a run of the study.
"""


import pytest

from skldp.experiments import load_runs
from studies import PAGES_DIR, RUNS_DIR, get_study
from studies.solitude import tables_block

PAGE = PAGES_DIR / "solitude.md"
BLOCKS = ["command", "figure", "tables"]


@pytest.fixture
def records():
    return load_runs(RUNS_DIR / "solitude_runs.jsonl", "solitude")


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
