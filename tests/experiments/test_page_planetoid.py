"""The Planetoid page is written from its runs file: byte for byte the committed page."""

import shutil

import pytest

from skldp.experiments import load_runs
from studies import PAGES_DIR, RUNS_DIR, write_page


def test_write_page_gives_back_the_committed_page(tmp_path):
    shutil.copy(PAGES_DIR / "planetoid.md", tmp_path)
    records = load_runs(RUNS_DIR / "planetoid_runs.jsonl", "planetoid")
    paths = write_page("planetoid", records, tmp_path)
    assert paths == {"page": tmp_path / "planetoid.md"}
    assert paths["page"].read_bytes() == (PAGES_DIR / "planetoid.md").read_bytes()


def test_the_table_follows_the_records(tmp_path):
    shutil.copy(PAGES_DIR / "planetoid.md", tmp_path)
    records = load_runs(RUNS_DIR / "planetoid_runs.jsonl", "planetoid")
    text = write_page("planetoid", [r for r in records if r["seed"] < 3],
                      tmp_path)["page"].read_text()
    assert "mean ± std over 3 seeds" in text and "over 10 seeds (the model" not in text
    assert "planetoid_runs.jsonl` (72 records" in text


def test_a_page_without_its_blocks_is_refused(tmp_path):
    (tmp_path / "planetoid.md").write_text("# Planetoid\n\nno blocks\n")
    records = load_runs(RUNS_DIR / "planetoid_runs.jsonl", "planetoid")
    with pytest.raises(ValueError, match="no block"):
        write_page("planetoid", records, tmp_path)
    assert (tmp_path / "planetoid.md").read_text() == "# Planetoid\n\nno blocks\n"
