"""The label-scarce page is written from its runs file: byte for byte the committed page,
for any number of seeds."""

import shutil

import pytest

from skldp.experiments import load_runs
from studies import PAGES_DIR, RUNS_DIR, write_page

PAGE = "label_scarce.md"


@pytest.fixture(scope="module")
def records():
    return load_runs(RUNS_DIR / "label_scarce_runs.jsonl", "label_scarce")


def test_fewer_seeds_change_every_count_of_the_page(tmp_path, records, monkeypatch):
    # the seed counts, the verdict and the command come from the records, never the text
    import studies.label_scarce as module
    monkeypatch.setattr(module, "_figure", lambda records, pages_dir: None)
    shutil.copy(PAGES_DIR / PAGE, tmp_path)
    few = [r for r in records if r["seed"] < 2]
    text = write_page("label_scarce", few, tmp_path)["page"].read_text()
    assert "(n = 5)" not in text and "(n = 2)" in text
    assert "--seeds 2 " in text and "--seeds 5" not in text
    assert f"label_scarce_runs.jsonl` ({len(few)} records" in text
    assert "seeds 0-1;" in text
    # the hand-written text around the blocks is kept
    assert "every model is within its large" in text
