"""The registered studies lpgnn, link_prediction, dpgnn and lpgnn_mae.

Each is registered with a quick variant that validates; resuming each over its
committed runs file has nothing to run (no recorded result is lost or redone);
the quick variants run end to end.
"""

import json
import shutil

import numpy as np
import pytest

from skldp.__main__ import main
from skldp.experiments import load_runs, run_study, write_summary
from studies import RUNS_DIR as RESULTS
from studies import get_study, list_studies

NEW = ("lpgnn", "link_prediction", "dpgnn", "lpgnn_mae")
COMMITTED = {"lpgnn": 650, "link_prediction": 365, "dpgnn": 152,  # runs of each study's grid
             "lpgnn_mae": 300}


@pytest.mark.parametrize("name", NEW)
def test_registered_with_a_quick_variant(name):
    assert name in list_studies()
    study = get_study(name)
    assert study.name == name
    quick = study.quick_variant()
    runs = quick.runs()
    assert 0 < len(runs) <= 6
    assert len(runs) < len(study.runs()) / 20
    assert {r.seed for r in runs} == {0}


@pytest.mark.parametrize("name", sorted(COMMITTED))
def test_resuming_over_the_committed_runs_has_nothing_to_do(name):
    study = get_study(name)
    records = load_runs(RESULTS / f"{name}_runs.jsonl", name)
    recorded = {r["key"] for r in records}
    keys = [s.key for s in study.runs()]
    assert len(keys) == len(set(keys)) == COMMITTED[name]
    # no run of the study is missing from the runs file (0 pending) ...
    assert [k for k in keys if k not in recorded] == []
    # ... and every record is a run of the study, except dpgnn's runs of the code before
    # the privacy audit (version 1, kept for the page's dagger cells)
    outside = [r for r in records if r["key"] not in set(keys)]
    if name == "dpgnn":
        assert outside and all(r["params"]["version"] == 1 for r in outside)
    else:
        assert outside == []


@pytest.mark.parametrize("name", sorted(COMMITTED))
def test_run_study_over_a_copy_of_the_committed_runs_runs_none(name, tmp_path, dataset_file):
    first = {}  # validating the study loads the dataset of each method's first run
    for spec in get_study(name).runs():
        first.setdefault(spec.method, spec.dataset)
    for dataset in set(first.values()):
        dataset_file(dataset)
    shutil.copy(RESULTS / f"{name}_runs.jsonl", tmp_path)
    before = (tmp_path / f"{name}_runs.jsonl").read_bytes()
    study = get_study(name)
    res = run_study(study, tmp_path, progress=False)
    assert res.done == [] and res.failed == {} and res.missing == []
    assert len(res.skipped) == COMMITTED[name]
    assert (tmp_path / f"{name}_runs.jsonl").read_bytes() == before
    # the generic summary renders every record (dpgnn draws more reference lines than the
    # figure has line styles)
    paths = write_summary(study, res.records, tmp_path)
    assert f"({len(res.records)} records)" in paths["markdown"].read_text()


def test_lpgnn_records_keep_the_scripts_keys():
    records = load_runs(RESULTS / "lpgnn_runs.jsonl", "lpgnn")
    # the 410 runs of the script keep its key; the study's later method (the authors'
    # configuration, 240 runs) never had one
    legacy = [r["legacy_key"] for r in records if "legacy_key" in r]
    assert len(set(legacy)) == len(legacy) == 410
    assert sorted({r["method"] for r in records if "legacy_key" not in r}) == ["LPGNN-AUTHORS"]
    assert len(records) == 410 + 240
    # the split and the grid values in the key are those of the record's fields
    for r in records:
        part = r["part"] if "legacy_key" in r else r["params"]["part"]
        assert r["split"] == {"table2": "planetoid", "lpgnn": "random-50/25/25"}[part]
        if "legacy_key" in r:
            assert r["metrics"]["accuracy"] == r["acc"]


def test_lpgnn_mae_quick_end_to_end(tmp_path, capsys):
    status = main(["reproduce", "lpgnn_mae", "--quick", "--results-dir", str(tmp_path),
                   "--no-progress"])
    assert status == 0
    records = load_runs(tmp_path / "lpgnn_mae_quick_runs.jsonl", "lpgnn_mae_quick")
    assert sorted(r["method"] for r in records) == ["LM", "PGC", "PM"]
    by = {r["method"]: r["metrics"] for r in records}
    for m in by.values():
        # the exact RMSE prediction of the variance formulas holds within 1 %
        assert m["rmse"] == pytest.approx(m["rmse_pred"], rel=0.01)
        assert m["deg_q99"] >= 1 and "mae_deg_1" in m
    # the paper's ordering at eps = 1 (Figure 2): PGC < PM < LM
    assert by["PGC"]["mae"] < by["PM"]["mae"] < by["LM"]["mae"]
    assert all(r["eps_spent"] == pytest.approx(1433) for r in records)  # d * eps on Cora
    assert (tmp_path / "lpgnn_mae_quick_summary.md").exists()


def _quick(name, tmp_path, dataset_file):
    quick = get_study(name).quick_variant()
    for dataset in {spec.dataset for spec in quick.runs()}:
        dataset_file(dataset)  # skips a dataset that is neither bundled nor available offline
    res = run_study(quick, tmp_path, progress=False)
    assert res.failed == {} and res.missing == []
    assert len(res.done) == len(get_study(name).quick_variant().runs())
    return {r["key"]: r for r in res.records}


@pytest.mark.slow
def test_link_prediction_quick_end_to_end(tmp_path, dataset_file):
    recs = _quick("link_prediction", tmp_path, dataset_file)
    assert len(recs) == 3
    for r in recs.values():
        assert 50 < r["metrics"]["auc"] <= 100  # AUC in percent, better than chance
    spent = {r["method"]: r["eps_spent"] for r in recs.values()}
    assert spent == {"GRAPH": 0.0, "PGC": pytest.approx(1433.0), "HDS": pytest.approx(1.0)}


@pytest.mark.slow
def test_lpgnn_quick_end_to_end(tmp_path, dataset_file):
    recs = _quick("lpgnn", tmp_path, dataset_file)
    assert sorted(r["split"] for r in recs.values()) == ["planetoid", "random-50/25/25"]
    for r in recs.values():
        assert 0.3 < r["metrics"]["accuracy"] <= 1  # 7 classes: chance is about 0.14
    lp = next(r for r in recs.values() if r["method"] == "LPGNN")
    assert 0 < lp["metrics"]["label_agreement"] <= 1


@pytest.mark.slow
def test_dpgnn_quick_end_to_end_matches_the_committed_private_runs(tmp_path, dataset_file):
    recs = _quick("dpgnn", tmp_path, dataset_file)
    committed = {r["key"]: r for r in load_runs(RESULTS / "dpgnn_runs.jsonl", "dpgnn")}
    for key, r in recs.items():
        assert key in committed  # the quick runs are runs of the page
        central = r["privacy"].get("central_epsilon")
        if r["method"] in ("DP-GNN", "DP-MLP"):
            assert central == pytest.approx(1.0, abs=0.01)  # target eps = 1 reached
            # the same run as the page's: the private models reproduce it exactly
            assert r["metrics"]["accuracy"] == committed[key]["metrics"]["accuracy"]
    assert np.isfinite([r["metrics"]["val_accuracy"] for r in recs.values()]).all()
    json.dumps(list(recs.values()))  # records are plain JSON
