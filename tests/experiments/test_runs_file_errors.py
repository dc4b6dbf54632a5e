"""Damaged runs files, user errors and partial sweeps: one clear line, the right status."""

import json
from pathlib import Path

import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skldp.__main__ import main
from skldp.experiments import Method, RunsFile, RunsFileError, Study, load_runs, run_study


def _write(path, *records, raw=b""):
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records) + raw)


GOOD = {"study": "tiny", "key": "k0", "metrics": {"accuracy": 0.5}}


@pytest.mark.parametrize("bad, message", [
    # counted as recorded (never run again) and yet in no table
    ({"study": "tiny", "key": "k1", "metrics": {}}, "record 'k1' has no metric"),
    # was TypeError: unhashable type: 'list'
    ({"study": "tiny", "key": ["x"], "metrics": {"accuracy": 0.5}},
     "the record's 'key' is ['x'], not a non-empty string"),
    ({"study": 3, "key": "k1", "metrics": {"accuracy": 0.5}}, "the record's 'study' is 3"),
    # was "could not convert string to float: 'high'" when the tables were made
    ({"study": "tiny", "key": "k1", "metrics": {"accuracy": "high"}},
     "record 'k1': metric 'accuracy' is 'high', not a number"),
    # a NaN line (written by hand: the writer refuses it) counted as a finished run
    ({"study": "tiny", "key": "k1", "metrics": {"accuracy": float("nan")}},
     "record 'k1': metric 'accuracy' is NaN, not a number"),
    # were an AttributeError and a TypeError when the summary was made
    ({"study": "tiny", "key": "k1", "params": [1, 2], "metrics": {"accuracy": 0.5}},
     "record 'k1': its 'params' is [1, 2], not a dict"),
    ({"study": "tiny", "key": "k1", "dataset": 3, "metrics": {"accuracy": 0.5}},
     "record 'k1': its 'dataset' is 3, not a non-empty string"),
])
def test_damaged_record_names_file_and_line(tmp_path, bad, message):
    f = tmp_path / "tiny_runs.jsonl"
    _write(f, GOOD, bad)
    for read in (lambda: load_runs(f, "tiny"), lambda: RunsFile(f, "tiny")):
        with pytest.raises(RunsFileError) as e:
            read()
        assert str(e.value).startswith(f"{f}:2: {message}")
        assert "Fix or delete this line" in str(e.value)


def test_invalid_utf8_names_file_and_line(tmp_path):
    # was "'utf-8' codec can't decode byte 0xff in position ...": no file, no line
    f = tmp_path / "tiny_runs.jsonl"
    _write(f, GOOD, GOOD, raw=b'{"study": "tiny", "key": "k\xff"}\n')
    with pytest.raises(RunsFileError, match=r"tiny_runs.jsonl:3: not UTF-8 text \(byte 0xff"):
        load_runs(f, "tiny")
    # the same when the line is appended after opening (refresh)
    _write(f, GOOD)
    rf = RunsFile(f, "tiny")
    with open(f, "ab") as fh:
        fh.write(b"\n\xff\n")
    with pytest.raises(RunsFileError, match=r"tiny_runs.jsonl:3: not UTF-8 text"):
        rf.refresh()


def test_record_without_a_number_is_not_written(tmp_path):
    rf = RunsFile(tmp_path / "t_runs.jsonl", "t")
    with pytest.raises(RunsFileError, match="record 'a' has no metric"):
        rf.append({"key": "a", "metrics": {}})
    with pytest.raises(RunsFileError, match="metric 'acc' is None"):
        rf.append({"key": "a", "metrics": {"acc": None}})
    with pytest.raises(RunsFileError, match="'key' is 3"):
        rf.append({"key": 3, "metrics": {"acc": 1.0}})
    with pytest.raises(RunsFileError, match="metric 'acc' is NaN, not a number; not written"):
        rf.append({"key": "a", "metrics": {"acc2": 1.0, "acc": float("nan")}})
    assert not rf.path.exists()
    assert rf.append({"key": "a", "metrics": {"acc": 1}})   # an int is a number
    assert rf.append({"key": "b", "metrics": {"mae": float("inf")}})   # and so is inf
    assert [r["key"] for r in load_runs(rf.path, "t")] == ["a", "b"]


def _features(G, y, config):
    return G.features, y


def _study(evaluate):
    method = Method(lambda ctx: make_pipeline(StandardScaler(), LogisticRegression()),
                    role="raw-features", data=_features, evaluate=evaluate)
    return Study("tiny", ["german"], {"raw": method}, seeds=[0])


@pytest.mark.parametrize("metrics, message", [
    ({}, "returned no metric"), ({"accuracy": "high"}, "could not convert"),
    # NaN was recorded as a finished run (never run again; the table said nan ± nan)
    ({"accuracy": 0.5, "loss": float("nan")}, "returned NaN for metric 'loss'")])
def test_run_without_a_number_fails_and_is_not_recorded(tmp_path, metrics, message):
    # {} was recorded (then never run again, in no table); "high" stopped the whole sweep
    res = run_study(_study(lambda est, X, y, masks: metrics), tmp_path, progress=False,
                    backend="sequential")
    assert list(res.failed) == [s.key for s in _study(None).runs()] and not res.done
    assert all(message in error for error in res.failed.values())
    assert not (tmp_path / "tiny_runs.jsonl").exists()


@pytest.mark.parametrize("argv, message", [
    (["nosuch"], "skldp reproduce: unknown study 'nosuch'"),
    (["privge", "--datasets", "nosuch"], "skldp reproduce: privge has settings for"),
])
def test_cli_unknown_study_or_dataset_one_line_status_1(argv, message, capsys, monkeypatch):
    # were argparse's usage block and status 2 (label_scarce --datasets nosuch: 1, one line)
    monkeypatch.delenv("SKLDP_TRACEBACK", raising=False)
    with pytest.raises(SystemExit) as e:
        main(["reproduce", *argv])
    # sys.exit(message): the message on stderr in one line, status 1
    assert e.value.code.startswith(message) and "\n" not in e.value.code
    assert "usage:" not in capsys.readouterr().err
    monkeypatch.setenv("SKLDP_TRACEBACK", "1")
    with pytest.raises(ValueError):
        main(["reproduce", *argv])


def test_cli_syntax_errors_stay_argparse_status_2(capsys):
    for argv in (["privge", "--bogus"], ["privge", "--seeds"]):
        with pytest.raises(SystemExit) as e:
            main(["reproduce", *argv])
        assert e.value.code == 2
        assert "usage:" in capsys.readouterr().err


def test_max_runs_reports_the_runs_left(tmp_path, capsys):
    res = run_study(_study(lambda est, X, y, masks: {"accuracy": 0.5}), tmp_path,
                    progress=False, max_runs=0)
    assert res.remaining == [s.key for s in _study(None).runs()] and not res.done
    # the CLI's summary line says how many are left; status 0 as documented
    import studies
    n = len(studies.get_study("privge").quick_variant().runs())
    assert main(["reproduce", "privge", "--quick", "--max-runs", "0", "--no-progress",
                 "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"0 missing, {n} left for later (--max-runs)" in out
    assert "no run recorded: summary not written" in out
    # no page is written: none can say it is partial (it said "the page says it is partial")
    assert "partial" not in out
    assert not (tmp_path / "privge_quick_summary.md").exists()


def test_no_record_leaves_the_page_and_prints_the_failures_first(tmp_path, capsys,
                                                                  monkeypatch):
    # was "Number of columns must be a positive integer, not 0", after the page's cells
    # were rewritten with "—", and the failures were never printed
    import skldp.experiments._runner as runner
    import studies
    committed = (Path(studies.PAGES_DIR) / "privge.md").read_bytes()
    (tmp_path / "privge.md").write_bytes(committed)
    assert main(["reproduce", "privge", "--max-runs", "0", "--no-progress",
                 "--results-dir", str(tmp_path)]) == 0
    assert f"no run recorded: {tmp_path / 'privge.md'} not written" in capsys.readouterr().out
    assert (tmp_path / "privge.md").read_bytes() == committed
    assert not (tmp_path / "privge.png").exists()

    # the failures are printed before the page is written (which may fail)
    runs = tmp_path / "privge_runs.jsonl"   # the page is written from the runs file
    _write(runs, {"study": "privge", "key": "r", "metrics": {"accuracy": 0.5}})

    def failing(study, *args, **kwargs):
        return runner.SweepResult(runs_file=runs, records=[{"key": "r"}],
                                  failed={"k": "Trace\nValueError: boom\n"})

    def no_page(*args, **kwargs):
        raise RuntimeError("page")

    monkeypatch.setattr(runner, "run_study", failing)
    monkeypatch.setattr(studies, "write_page", no_page)
    monkeypatch.setenv("SKLDP_TRACEBACK", "1")
    with pytest.raises(RuntimeError, match="page"):
        main(["reproduce", "privge", "--max-runs", "0", "--no-progress",
              "--results-dir", str(tmp_path)])
    assert "failed: k: ValueError: boom" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["/proc/x", "file/sub"])
def test_unwritable_pages_folder_fails_before_any_run(where, tmp_path, monkeypatch):
    # was "[Errno 2] No such file or directory: '/proc/x'" once every run was done
    import skldp.experiments._runner as runner

    def no_run(*args, **kwargs):
        raise AssertionError("ran")

    monkeypatch.setattr(runner, "run_study", no_run)
    (tmp_path / "file").write_text("")
    pages = where if where.startswith("/") else str(tmp_path / where)
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "privge", "--quick", "--runs-dir", str(tmp_path / "runs"),
              "--pages-dir", pages, "--no-progress"])
    assert e.value.code.startswith(f"skldp reproduce: {pages}: cannot write the results page")
    assert "nothing was run" in e.value.code


def test_budget_split_quick_table_header_matches_separator():
    # the quick sweep has no private run: 7 header cells over 6 separator cells
    from studies.budget_split import RANDOM, budget_split_table
    records = [{"dataset": "cora", "split": RANDOM, "method": "lp", "seed": 0,
                "params": {"budget": 2.0}, "metrics": {"accuracy": 0.8, "val_accuracy": 0.7}}]
    header, sep, row = budget_split_table(records).splitlines()
    assert header.count("|") == sep.count("|") == row.count("|") == 7
    assert "|  |" not in header and "|  |" not in row


def test_claims_are_taken_by_the_driver_not_the_workers():
    from skldp.experiments import _claims
    assert "its worker claims it" not in _claims.__doc__
    assert "the process that drives the sweep claims it" in _claims.__doc__


def test_a_page_linked_into_an_unwritable_folder_fails_before_any_run(tmp_path,
                                                                      monkeypatch):
    # the page is replaced through a new file beside its target: the pages folder and the
    # page were writable, and the page failed once every run was done
    import skldp.experiments._cli as cli
    import skldp.experiments._runner as runner

    def no_run(*args, **kwargs):
        raise AssertionError("ran")

    (tmp_path / "pages").mkdir()
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "privge.md").write_text("old")
    (tmp_path / "pages" / "privge.md").symlink_to(tmp_path / "ro" / "privge.md")
    temporary_file = cli.tempfile.TemporaryFile

    def read_only_ro(*args, dir=None, **kwargs):   # (root writes into a 0555 folder)
        if Path(dir) == tmp_path / "ro":
            raise PermissionError(13, "Permission denied")
        return temporary_file(*args, dir=dir, **kwargs)

    monkeypatch.setattr(runner, "run_study", no_run)
    monkeypatch.setattr(cli.tempfile, "TemporaryFile", read_only_ro)
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "privge", "--runs-dir", str(tmp_path / "runs"),
              "--pages-dir", str(tmp_path / "pages"), "--no-progress"])
    assert e.value.code.startswith(f"skldp reproduce: {tmp_path / 'ro'}: cannot write the "
                                   f"target of the results page {tmp_path / 'pages'}")
    assert "nothing was run" in e.value.code
