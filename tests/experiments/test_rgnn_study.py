"""The registered ``rgnn`` study: its quick grid validates, its keys are those of the runs file."""


import pytest

from skldp.__main__ import main
from skldp.experiments import load_runs, validate_study
from studies import RUNS_DIR, get_study, list_studies
from studies.rgnn import CITATION_ONLY, KINDS, LPGNN_KINDS, TABLE_METHODS

RUNS = RUNS_DIR / "rgnn_runs.jsonl"


def test_rgnn_is_registered_with_a_quick_grid_that_validates(dataset_file):
    assert "rgnn" in list_studies()
    study = get_study("rgnn")
    assert list(study.methods) == list(KINDS)
    quick = study.quick_variant()
    assert quick.name == "rgnn_quick"
    runs = quick.runs()
    # one dataset, one seed, one budget pair per method
    assert sorted(r.method for r in runs) == sorted(TABLE_METHODS)
    assert {r.dataset for r in runs} == {"student_rgnn"}
    assert all(r.param_dict["eps_y"] == 1.0 for r in runs)
    dataset_file("student_rgnn")  # validating loads it
    validate_study(quick)  # builds each method's estimator and sets its grid values


def test_rgnn_keys_are_the_recorded_runs():
    study = get_study("rgnn")
    keys = [spec.key for spec in study.runs()]
    recorded = {r["key"] for r in load_runs(RUNS, "rgnn")}
    # the study is its runs file: resuming it runs nothing, and every record is one of its runs
    assert len(keys) == len(set(keys)) == len(recorded)
    assert set(keys) == recorded


def test_rgnn_runs_k16_and_the_ablations_on_the_citation_graphs_only():
    runs = get_study("rgnn").runs()
    for method in CITATION_ONLY:
        assert {r.dataset for r in runs if r.method == method} == {"cora", "citeseer"}
    for method in LPGNN_KINDS:   # three seeds on Facebook, five elsewhere
        seeds = {(r.dataset, r.seed) for r in runs if r.method == method}
        assert {s for d, s in seeds if d == "facebook"} == {0, 1, 2}
        assert {s for d, s in seeds if d == "cora"} == set(range(5))
    # a study on other datasets has none of them
    assert not [r for r in get_study("rgnn", datasets=["student_rgnn"]).runs()
                if r.method in CITATION_ONLY]


def test_rgnn_rejects_unknown_names():
    with pytest.raises(ValueError, match="not \\['RGNN-X'\\]"):
        get_study("rgnn", methods=["RGNN-X"])
    with pytest.raises(SystemExit) as e:   # a user error: one line (sys.exit), status 1
        main(["reproduce", "rgnn", "--datasets", "pubmed_nofeatures"])
    assert "rgnn has settings for" in e.value.code
