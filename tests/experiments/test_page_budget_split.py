"""The total-budget page is written from its runs file: byte for byte the committed page,
for any number of seeds."""

import shutil

import pytest

from skldp.experiments import load_runs
from studies import PAGES_DIR, RUNS_DIR, write_page

PAGE = "budget_split.md"


@pytest.fixture(scope="module")
def records():
    return load_runs(RUNS_DIR / "budget_split_runs.jsonl", "budget_split")


def test_fewer_seeds_change_every_count_of_the_page(tmp_path, records, monkeypatch):
    import studies.budget_split as module
    monkeypatch.setattr(module, "budget_split_figure", lambda records, path, then=None: None)
    shutil.copy(PAGES_DIR / PAGE, tmp_path)
    few = [r for r in records if r["seed"] < 2]
    text = write_page("budget_split", few, tmp_path)["page"].read_text()
    assert "mean ± std over 2 seeds" in text and "(n = 2)" in text and "(n = 4)" not in text
    assert "--seeds 2\n" in text and f"jsonl` ({len(few)} records" in text
    assert "Seeds: 2 of the 10 planned (seeds 0, 1 ran)" in text
    assert "every user who sent a label spent exactly B" in text
    # a run missing from a panel is said, not hidden
    text = write_page("budget_split", few[1:], tmp_path)["page"].read_text()
    assert "runs of the seeds that ran are missing" in text


def test_the_motivating_pair_names_only_datasets_with_random_splits(records):
    from studies.budget_split import RANDOM, SCARCE, _table
    assert "—" not in _table(records).split("the comparison that motivated this study")[1]
    scarce = [r for r in records if r["split"] == SCARCE]
    assert "motivated" not in _table(scarce)   # no 50/25/25 split: no sentence, no dashes
    one = [r for r in records if r["split"] == RANDOM and r["dataset"] == "cora"] + scarce
    assert "citeseer" not in _table(one).split("motivated this study")[1]
