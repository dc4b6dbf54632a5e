"""The registered ``rgnn`` study: its quick grid validates, its keys are those of the runs file."""


import pytest

from skldp.__main__ import main
from skldp.experiments import load_runs, validate_study
from studies import RUNS_DIR, get_study, list_studies
from studies.rgnn import KINDS, TABLE_METHODS

RUNS = RUNS_DIR / "rgnn_runs.jsonl"


def test_rgnn_is_registered_with_a_quick_grid_that_validates(dataset_file):
    assert "rgnn" in list_studies()
    study = get_study("rgnn")
    assert list(study.methods) == list(TABLE_METHODS)
    quick = study.quick_variant()
    assert quick.name == "rgnn_quick"
    runs = quick.runs()
    # one dataset, one seed, one budget pair per method
    assert sorted(r.method for r in runs) == sorted(TABLE_METHODS)
    assert {r.dataset for r in runs} == {"student_rgnn"}
    assert all(r.param_dict["eps_y"] == 1.0 for r in runs)
    dataset_file("student_rgnn")  # validating loads it
    validate_study(quick)  # builds each method's estimator and sets its grid values


def test_rgnn_keys_cover_the_recorded_runs():
    study = get_study("rgnn", methods=KINDS)
    keys = {spec.key for spec in study.runs()}
    records = load_runs(RUNS, "rgnn")
    assert records
    # every recorded run is a run of the registered study: resuming it runs none of them again
    assert not [r["key"] for r in records if r["key"] not in keys]


def test_rgnn_rejects_unknown_names(capsys):
    with pytest.raises(ValueError, match="not \\['RGNN-X'\\]"):
        get_study("rgnn", methods=["RGNN-X"])
    with pytest.raises(SystemExit):
        main(["reproduce", "rgnn", "--datasets", "pubmed_nofeatures"])
    assert "rgnn has settings for" in capsys.readouterr().err
