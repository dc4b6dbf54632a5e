"""The honest-utility study: registered over its recorded keys (nothing left to run), its
page written from its runs file byte for byte."""

import shutil

import numpy as np
import pytest

from skldp.datasets import load_dataset
from skldp.experiments import default_split, load_runs, run_study
from studies import PAGES_DIR, RUNS_DIR, get_study, list_studies, write_page
from studies.honest_utility import HonestRun

PAGE = "honest_utility.md"
RUNS = RUNS_DIR / "honest_utility_runs.jsonl"


@pytest.fixture(scope="module")
def records():
    return load_runs(RUNS, "honest_utility")


def test_the_study_is_its_recorded_runs(records):
    assert "honest_utility" in list_studies()
    keys = [s.key for s in get_study("honest_utility").runs()]
    assert len(keys) == len(set(keys)) == len(records) == 1585
    assert set(keys) == {r["key"] for r in records}


def test_every_record_is_the_runners(records):
    # every dataset's runs, LastFM's feature-free ones included, were made (again) by the
    # runner: none of the former script's records (former key, fields) is left
    assert {r["dataset"] for r in records} == {
        "cora", "citeseer", "facebook", "german", "lastfm_asia_nofeatures", "twitch_ENGB",
        "wiki_chameleon"}
    assert not [r for r in records if "legacy_key" in r or "acc" in r]
    assert all("finished" in r and "cpu_s" in r for r in records)


def test_run_study_over_a_copy_of_the_runs_runs_none(tmp_path):
    shutil.copy(RUNS, tmp_path)
    before = (tmp_path / RUNS.name).read_bytes()
    res = run_study(get_study("honest_utility"), tmp_path, progress=False)
    assert res.done == [] and res.failed == {} and len(res.skipped) == 1585
    assert (tmp_path / RUNS.name).read_bytes() == before


def test_a_feature_free_run_gives_its_recorded_accuracy(records):
    # label propagation is deterministic: today's run is the recorded one
    bunch = load_dataset("cora")
    G, y = bunch.data.new_simulation(), np.asarray(bunch.target)
    out = HonestRun("feature-free: label propagation", dataset="cora",
                    random_state=0).run(G, y, default_split(y, 0))
    rec = next(r for r in records
               if r["key"] == "cora|feature-free: label propagation|50/25/25|0|{}")
    assert out == rec["metrics"]


def test_bad_runs_are_refused():
    bunch = load_dataset("cora")
    G, y = bunch.data, np.asarray(bunch.target)
    with pytest.raises(ValueError, match="pipeline must be one of"):
        HonestRun("GCN").run(G, y, default_split(y, 0))
    with pytest.raises(ValueError, match="needs eps"):
        HonestRun("multi-bit -> PPR -> MLP").run(G, y, default_split(y, 0))


def test_the_page_follows_the_records(tmp_path, records, monkeypatch):
    import studies.honest_utility as module
    monkeypatch.setattr(module, "_figure", lambda records, path, then=None: None)
    shutil.copy(PAGES_DIR / PAGE, tmp_path)
    few = [r for r in records if r["seed"] < 2]
    text = write_page("honest_utility", few, tmp_path)["page"].read_text()
    assert "(n=5)" not in text and "(n=2)" in text and "--seeds 2\n" in text
    assert f"honest_utility_runs.jsonl` ({len(few)} records" in text


def _rec(method, eps, seed, test, val=None):
    metrics = {"accuracy": test} if val is None else {"accuracy": test, "val_accuracy": val}
    return {"dataset": "cora", "method": method, "seed": seed, "metrics": metrics,
            "params": {} if eps is None else {"eps": eps}}


def test_the_verdict_picks_on_the_validation_nodes():
    from studies.honest_utility import verdict_table
    lp, st = "feature-free: label propagation", "feature-free: structural -> MLP"
    hds, mb = "PrivGE: HDS(k=auto) -> PPR -> MLP", "multi-bit -> PPR -> MLP"
    records = []
    for s in range(3):
        records += [_rec(lp, None, s, 0.80 + s / 100, 0.70), _rec(st, None, s, 0.90, 0.60),
                    # best on test but not on validation
                    _rec(hds, 1.0, s, 0.95, 0.50), _rec(mb, 0.5, s, 0.75 + s / 100, 0.65),
                    # best on validation, but above eps 2 / without validation scores
                    _rec(mb, 4.0, s, 0.99, 0.99), _rec(hds, 2.0, s, 0.99)]
    row = next(line for line in verdict_table(records).splitlines()
               if line.startswith("| cora"))
    assert row.startswith(f"| cora | {lp}: 81.0 (n=3) | {mb} at eps = 0.5: 76.0 (n=3) | -5.0 |")
    # the same seeds' splits: the paired differences are all -5 points
    assert row.endswith("| 0.0 | – |")   # (no raw-feature run: no ceiling)
