"""skldp.experiments: numpydoc validation of its public API, docstring examples, CLI errors."""

import dataclasses
import doctest
import importlib
import inspect

import pytest

from skldp.__main__ import main

CODES = {"GL06", "GL07", "GL08", "SS01", "PR01", "PR02", "PR03", "PR10"}
MODULES = ["skldp.experiments", "studies"]


def _objects():
    out = {}
    for modname in MODULES:
        mod = importlib.import_module(modname)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not callable(obj):   # constants (studies.RUNS_DIR)
                continue
            out[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return out


@pytest.mark.parametrize("path, obj", sorted(_objects().items()))
def test_numpydoc(path, obj):
    validate = pytest.importorskip("numpydoc.validate").validate
    errors = [(c, m) for c, m in validate(path)["errors"] if c in CODES]
    if dataclasses.is_dataclass(obj):  # fields documented under Attributes count
        doc = inspect.getdoc(obj)
        missing = [f.name for f in dataclasses.fields(obj) if f"{f.name} :" not in doc]
        errors = [(c, m) for c, m in errors if c != "PR01"] + (
            [("PR01", f"undocumented fields {missing}")] if missing else [])
    assert not errors, errors


@pytest.mark.parametrize("modname", ["skldp.experiments._study", "skldp.experiments._pipeline",
                                     "skldp.experiments._cache"])
def test_docstring_examples_run(modname):
    mod = importlib.import_module(modname)
    failed, attempted = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert attempted > 0 and failed == 0


def test_cli_rejects_unknown_study_and_bad_jobs(capsys):
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "no_such_study"])
    # a user error: sys.exit(one line), status 1 (as an unknown dataset)
    assert e.value.code.startswith("skldp reproduce: unknown study 'no_such_study'")
    with pytest.raises(SystemExit):
        main(["reproduce", "privge", "--n-jobs", "0"])
    assert "--n-jobs" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "privge", "--datasets", "citeseer"])
    assert "privge has settings for" in e.value.code


@pytest.mark.slow  # two Cora runs (head <= 20 epochs)
def test_cli_quick_one_run(tmp_path, capsys):
    # one run of the quick PrivGE study (cora, head <= 20 epochs), then the summary
    assert main(["reproduce", "privge", "--quick", "--max-runs", "1", "--no-progress",
                 "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "privge_quick: 1 run(s) done" in out
    lines = (tmp_path / "privge_quick_runs.jsonl").read_text().splitlines()
    assert len(lines) == 1
    assert (tmp_path / "privge_quick_summary.md").exists()
    # resumed: the recorded run is skipped, the next one runs
    assert main(["reproduce", "privge", "--quick", "--max-runs", "1", "--no-progress",
                 "--results-dir", str(tmp_path)]) == 0
    assert "1 already recorded" in capsys.readouterr().out
    assert len((tmp_path / "privge_quick_runs.jsonl").read_text().splitlines()) == 2


def test_progress_bar_with_tqdm_and_silent_without(monkeypatch, capsys):
    import builtins

    from skldp.experiments._runner import _Progress
    pytest.importorskip("tqdm")
    bar = _Progress(3, "demo", True)
    for _ in range(3):
        bar.update("acc 0.5")
    bar.close()
    err = capsys.readouterr().err
    assert "demo" in err and "3/3" in err  # tqdm writes the bar (with the time left) to stderr
    real_import = builtins.__import__

    def no_tqdm(name, *args, **kwargs):
        if name.startswith("tqdm"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    bar = _Progress(3, "demo", True)
    bar.update("x")
    bar.close()
    assert bar.bar is None and capsys.readouterr() == ("", "")


def test_cli_says_where_the_studies_are_when_they_cannot_be_imported(monkeypatch, capsys):
    # an installed skldp without a clone: no "studies" package on sys.path
    import skldp.experiments._cli as cli
    monkeypatch.setattr(cli, "paper_studies", lambda: None)
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "privge"])
    assert e.value.code == 2
    assert "studies/ folder of skldp's source repository" in capsys.readouterr().err


def test_former_studies_module_still_works_with_a_future_warning():
    import studies
    from studies.privge import privge_study
    with pytest.warns(FutureWarning, match="studies/ package"):
        from skldp.experiments.studies import privge_study as former
    assert former is privge_study
    with pytest.warns(FutureWarning):
        from skldp.experiments.studies import list_studies
    assert list_studies() == studies.list_studies()


@pytest.mark.parametrize("argv, message", [
    (["--max-runs", "-3"], "--max-runs must be >= 0"),
    (["--retries", "-1"], "--retries must be >= 0"),
])
def test_cli_rejects_negative_counts(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "privge", "--quick", "--results-dir", str(tmp_path), *argv])
    assert e.value.code == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("backend", ["loky", "threading", "sequential"])
def test_cli_rejects_a_scheduler_with_a_local_backend(backend, capsys, tmp_path):
    # --scheduler addresses a Dask or Ray cluster: with a local backend it was ignored,
    # and the sweep ran on this machine without a word
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "privge", "--quick", "--results-dir", str(tmp_path), "--backend",
              backend, "--scheduler", "tcp://127.0.0.1:8786"])
    assert e.value.code == 2
    assert "--scheduler needs --backend dask or ray" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_cli_rejects_non_positive_eps(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "label_scarce", "--eps", "-1", "--kinds", "hds", "--datasets",
              "cora", "--seeds", "1", "--results-dir", str(tmp_path)])
    assert e.value.code == 2
    assert "--eps values must be > 0" in capsys.readouterr().err


def test_cli_needs_the_page_before_running(capsys, tmp_path):
    # a full study fills its hand-written page: without it the runs were all made first,
    # then a traceback
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "label_scarce", "--kinds", "hds", "--datasets", "cora", "--seeds",
              "1", "--results-dir", str(tmp_path)])
    assert e.value.code == 2
    assert "label_scarce.md: no such page" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())   # nothing was run


def test_cli_user_errors_end_in_one_line(monkeypatch, capsys, tmp_path):
    import json

    import skldp.experiments._runner as runner
    # a damaged runs-file line: was a RunsFileError traceback
    (tmp_path / "privge_quick_runs.jsonl").write_text('{"study": "privge_quick", "key": \n')
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "privge", "--quick", "--results-dir", str(tmp_path),
              "--no-progress"])
    assert e.value.code.startswith("skldp reproduce: ")
    assert "privge_quick_runs.jsonl:1: not a JSON record" in e.value.code
    assert "\n" not in e.value.code
    (tmp_path / "privge_quick_runs.jsonl").write_text(
        json.dumps({"study": "privge_quick", "key": "k"}) + "\n")
    with pytest.raises(SystemExit, match="no 'metrics' dict"):
        main(["reproduce", "privge", "--quick", "--results-dir", str(tmp_path)])
    (tmp_path / "privge_quick_runs.jsonl").write_text(   # a key that is no string
        json.dumps({"study": "privge_quick", "key": ["x"], "metrics": {"accuracy": 0.5}}) + "\n")
    with pytest.raises(SystemExit, match=r"privge_quick_runs.jsonl:1: the record's 'key'"):
        main(["reproduce", "privge", "--quick", "--results-dir", str(tmp_path)])
    (tmp_path / "privge_quick_runs.jsonl").unlink()

    def unavailable(*args, **kwargs):   # a dataset neither bundled nor downloadable
        raise OSError("Could not download the raw file of dataset 'facebook'.")

    monkeypatch.setattr(runner, "run_study", unavailable)
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "privge", "--quick", "--results-dir", str(tmp_path)])
    assert e.value.code == ("skldp reproduce: Could not download the raw file of dataset "
                            "'facebook'.")
    monkeypatch.setenv("SKLDP_TRACEBACK", "1")   # the traceback, on request
    with pytest.raises(OSError, match="Could not download"):
        main(["reproduce", "privge", "--quick", "--results-dir", str(tmp_path)])
    monkeypatch.delenv("SKLDP_TRACEBACK")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_study", interrupted)
    assert main(["reproduce", "privge", "--quick", "--results-dir", str(tmp_path)]) == 130
    assert "interrupted; the runs recorded so far are kept" in capsys.readouterr().err


def test_studies_found_in_the_current_folder_without_it_on_sys_path(monkeypatch, tmp_path):
    # the `skldp` console script does not put the current folder on sys.path: from the root
    # of a clone, `skldp reproduce` said "run this command from the root of a clone"
    import sys
    from pathlib import Path

    import skldp.experiments._cli as cli
    root = Path(__file__).resolve().parents[2]
    for name in [m for m in sys.modules if m == "studies" or m.startswith("studies.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "path", [p for p in sys.path
                                      if p not in ("", ".", str(root))])
    monkeypatch.chdir(tmp_path)          # elsewhere: not found
    assert cli.paper_studies() is None
    monkeypatch.chdir(root)              # the root of the clone: found
    module = cli.paper_studies()
    assert module is not None and Path(module.__file__).parent == root / "studies"


def test_reproduce_usage_names_the_program_it_was_run_as(monkeypatch, capsys):
    import sys
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/skldp", "reproduce", "--help"])
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    assert capsys.readouterr().out.startswith("usage: skldp reproduce ")
    monkeypatch.setattr(sys, "argv", ["/x/skldp/__main__.py", "reproduce", "--help"])
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    assert capsys.readouterr().out.startswith("usage: python -m skldp reproduce ")


@pytest.mark.parametrize("extra", [["--seeds", "1"], ["--datasets", "facebook"],
                                   ["--eps", "0.5"]])
def test_quick_with_its_own_choices_is_refused(extra, capsys, tmp_path):
    # --quick silently replaced them (--seeds 1 ran seeds 0 and 1; --eps 0.5 ran eps 1
    # and 2; --datasets facebook crashed with a KeyError)
    study = "label_scarce" if extra[0] == "--eps" else "privge"
    with pytest.raises(SystemExit) as e:
        main(["reproduce", study, "--quick", *extra, "--results-dir", str(tmp_path)])
    assert e.value.code == 2
    assert "--quick fixes its own datasets, seeds and eps; drop --quick to choose them" \
        in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_summary_rows_sorted_by_eps_methods_in_first_seen_order(tmp_path):
    # the eps rows came out in record order (eps = 1, 0.5, 2, inf on a study's page)
    import math

    from skldp.experiments import Method, Study, summarize, write_summary

    def rec(method, eps, seed, dataset="cora", acc=0.5):
        params = {} if eps is False else {"hds__eps": eps}
        return {"dataset": dataset, "method": method, "split": "random", "seed": seed,
                "params": params, "metrics": {"accuracy": acc}, "eps_spent": None}

    order = [1.0, math.inf, 0.5, None, 2.0]
    records = [rec("lp", False, 0)]
    records += [rec("hds", e, s) for s in (0, 1) for e in order]
    records += [rec("raw", False, 0), rec("hds", 0.5, 0, "citeseer"), rec("lp", False, 0,
                                                                          "citeseer"),
                rec("hds", 0.1, 0, "citeseer")]
    rows = summarize(records)
    assert [(r["dataset"], r["method"], r["eps"]) for r in rows] == [
        ("cora", "lp", None), ("cora", "hds", 0.5), ("cora", "hds", 1.0),
        ("cora", "hds", 2.0), ("cora", "hds", math.inf), ("cora", "hds", None),
        ("cora", "raw", None), ("citeseer", "hds", 0.1), ("citeseer", "hds", 0.5),
        ("citeseer", "lp", None)]
    assert all(r["n"] == 2 for r in rows if r["method"] == "hds" and r["dataset"] == "cora")
    study = Study("order", ["cora", "citeseer"], {m: Method(lambda ctx: None)
                                                  for m in ("lp", "hds", "raw")})
    text = write_summary(study, records, tmp_path)["markdown"].read_text()
    cells = [line.split(" | ")[0].lstrip("| ") + " " + line.split(" | ")[2]
             for line in text.splitlines() if line.startswith("| ") and "---" not in line
             and not line.startswith("| method")]
    assert cells == ["lp —", "hds hds__eps=0.5", "hds hds__eps=1", "hds hds__eps=2",
                     "hds hds__eps=inf", "hds hds__eps=—", "raw —",
                     "hds hds__eps=0.1", "hds hds__eps=0.5", "lp —"]


def test_write_summary_failing_midway_leaves_the_old_summary(tmp_path):
    # the summary was truncated, then written: a failure (or a kill) midway emptied it
    from skldp.experiments import Method, Study, write_summary

    study = Study("whole", ["cora"], {"m": Method(lambda ctx: None)}, description="\udc80")
    md = tmp_path / "whole_summary.md"
    md.write_text("the old summary\n")
    records = [{"dataset": "cora", "method": "m", "split": "random", "seed": 0,
                "params": {"m__eps": 1.0}, "metrics": {"accuracy": 0.5}, "eps_spent": 1.0}]
    with pytest.raises(UnicodeEncodeError):
        write_summary(study, records, tmp_path)
    assert md.read_text() == "the old summary\n"


@pytest.mark.parametrize("other", ["--runs-dir", "--pages-dir"])
def test_cli_refuses_results_dir_with_runs_or_pages_dir(other, capsys, tmp_path):
    # --results-dir sets both folders: with --runs-dir beside it, the runs went to
    # --runs-dir and the page to --results-dir without a word
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "privge", "--quick", "--results-dir", str(tmp_path / "r"),
              other, str(tmp_path / "o")])
    assert e.value.code == 2
    assert "--results-dir sets both" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_write_summary_refuses_records_without_the_studys_metric(tmp_path):
    # a typo in Study.metric wrote a summary with an empty table and no figure
    from skldp.experiments import Method, Study, write_summary

    study = Study("typo", ["cora"], {"m": Method(lambda ctx: None)}, metric="acuracy")
    records = [{"key": "k", "dataset": "cora", "method": "m", "split": "random", "seed": 0,
                "params": {}, "metrics": {"accuracy": 0.5}, "eps_spent": 1.0}]
    with pytest.raises(ValueError, match=r"metric 'acuracy' \(they have \['accuracy'\]\)"):
        write_summary(study, records, tmp_path)
    assert not list(tmp_path.iterdir())
    write_summary(study, [], tmp_path)   # no record: the summary says so, as before


def _studies_with(monkeypatch, make_study):
    """A studies package of one study, ``s``, whose ``make_study`` is given."""
    import sys
    import types

    import skldp.experiments._cli as cli
    package = types.ModuleType("fake_studies")
    module = types.ModuleType("fake_studies.s")
    module.make_study = make_study
    package.list_studies = lambda: ["s"]
    package.get_study = lambda name, **kwargs: sys.modules[f"fake_studies.{name}"].make_study(
        **kwargs)
    monkeypatch.setitem(sys.modules, "fake_studies", package)
    monkeypatch.setitem(sys.modules, "fake_studies.s", module)
    monkeypatch.setattr(cli, "paper_studies", lambda: package)


def test_cli_lets_through_a_type_error_of_a_study_that_takes_the_option(monkeypatch):
    # any TypeError of make_study was reported as "study 's' takes no --eps"
    def make_study(datasets=None, seeds=None, eps=None):
        return sorted([*eps, "inf"])   # a bug in the study: TypeError

    _studies_with(monkeypatch, make_study)
    with pytest.raises(TypeError, match="'<' not supported"):
        main(["reproduce", "s", "--eps", "1"])


@pytest.mark.parametrize("argv, refused", [
    (["--eps", "1"], "--eps"), (["--kinds", "a", "--eps", "1"], "--eps or --kinds")])
def test_cli_says_which_options_a_study_does_not_take(argv, refused, capsys):
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "privge", *argv])
    assert e.value.code == 2
    assert f"study 'privge' takes no {refused}." in capsys.readouterr().err
