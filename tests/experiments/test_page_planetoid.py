"""The Planetoid page is written from its runs file: byte for byte the committed page."""

import shutil

from skldp.experiments import load_runs
from studies import PAGES_DIR, RUNS_DIR, write_page


def test_the_table_follows_the_records(tmp_path):
    shutil.copy(PAGES_DIR / "planetoid.md", tmp_path)
    records = load_runs(RUNS_DIR / "planetoid_runs.jsonl", "planetoid")
    text = write_page("planetoid", [r for r in records if r["seed"] < 3],
                      tmp_path)["page"].read_text()
    assert "mean ± std over 3 seeds" in text and "over 10 seeds (the model" not in text
    assert "planetoid_runs.jsonl` (60 records" in text
