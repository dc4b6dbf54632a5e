"""The main job ``python -m skldp`` on a tiny setting."""

import io
import re
import subprocess
import sys

import pytest

from skldp.__main__ import ROWS, _parse, _verdict, main


def _row(out, key):
    m = re.search(re.escape(ROWS[key]) + r"\s+(\d+\.\d) ±\s+(\d+\.\d)", out)
    assert m, (key, out)
    return float(m.group(1)), float(m.group(2))


def _check_output(out, dataset, header, eps, seeds=1, bounds_from_data=False):
    lines = out.splitlines()
    assert lines[0].startswith(f"skldp {dataset}: {header}"), lines[0]
    seed_lines = [line for line in lines if line.startswith("  seed ")]
    assert len(seed_lines) == seeds, seed_lines
    for key in ROWS:
        assert re.search(rf"{key} [01]\.\d{{3}}", seed_lines[0]), seed_lines
        mean, std = _row(out, key)
        assert 0 <= mean <= 100
        if seeds == 1:
            assert std == 0.0
    assert f"test accuracy (%), mean ± std over {seeds} seed(s):" in out
    assert "graph-only: uniform noise features, independent of the labels" in out
    # one verdict line against the better feature-free row
    verdicts = [line for line in lines if line.startswith("private ")]
    assert len(verdicts) == 1 and "the better feature-free row (" in verdicts[0], verdicts
    # the budget is printed once, from the privacy report
    budget = [line for line in lines if line.startswith("epsilon spent per user")]
    assert len(budget) == 1, budget
    if bounds_from_data:   # the bounds came from the private data: a read in the clear
        assert budget[0].startswith(
            "epsilon spent per user: inf, as the feature bounds were read from the data in "
            f"the clear (the dataset's public bounds are unknown; HDS's reports alone: {eps})"
        ), budget
        assert " on the node features" in budget[0]
    else:
        assert out.count("epsilon") == 1
        assert f"epsilon spent per user: {eps} on the node features" in out


def test_main_tiny_setting(capsys):
    # A small bundled graph (1000 nodes, 27 raw numeric features) keeps this fast;
    # its bounds are not public, so the job takes them from the data and warns.
    from skldp.exceptions import PrivacyLeakWarning
    with pytest.warns(PrivacyLeakWarning):
        assert main(["--dataset", "german", "--seeds", "1", "--epochs", "3",
                     "--eps", "2"]) == 0
    _check_output(capsys.readouterr().out, "german", "1000 nodes, 27 features", 2,
                  bounds_from_data=True)


def test_epsilon_line_says_when_bounds_come_from_the_data():
    from types import SimpleNamespace

    from skldp.__main__ import _epsilon_line
    report = SimpleNamespace(local_epsilon=1.0)
    assert _epsilon_line(report, (0.0, 1.0)).startswith("epsilon spent per user: 1 on the node")
    # each seed is a new simulated deployment of the same people
    assert _epsilon_line(report, (0.0, 1.0), seeds=5).endswith(
        "each of the 5 seeds is a new simulated deployment, so one person in all of them "
        "would have spent 5")
    report = SimpleNamespace(local_epsilon=float("inf"),
                             spends=[SimpleNamespace(model="clear", epsilon=float("inf")),
                                     SimpleNamespace(model="local", epsilon=1.0)])
    line = _epsilon_line(report, None)
    assert line.startswith("epsilon spent per user: inf, as the feature bounds were read from "
                           "the data in the clear (the dataset's public bounds are unknown; "
                           "HDS's reports alone: 1)")


def test_non_private_row_is_the_raw_features_without_a_mechanism(monkeypatch):
    # The ceiling is PPR -> head on the raw features: no step of the pipeline is a
    # mechanism, and the rows' pipelines differ only in what they are fed.
    from sklearn.pipeline import Pipeline

    from skldp import __main__ as job
    from skldp.base import LDPMechanism
    from skldp.exceptions import PrivacyLeakWarning
    seen = []
    original = Pipeline.fit

    def spy(self, X, y=None, **kw):
        seen.append(([type(s).__name__ for _, s in self.steps],
                     any(isinstance(s, LDPMechanism) for _, s in self.steps),
                     X.features is X.full().features, X.shape))
        return original(self, X, y, **kw)

    monkeypatch.setattr(Pipeline, "fit", spy)
    with pytest.warns(PrivacyLeakWarning):  # german's raw bounds are not public
        scores, report = job.run("german", eps=1.0, seeds=1, epochs=2, out=io.StringIO())
    private, raw, graph_only = seen
    assert private[:2] == (["HDSMechanism", "PPRPropagation", "MLPHead"], True)
    assert raw[:2] == (["PPRPropagation", "MLPHead"], False)
    assert graph_only[:2] == (["PPRPropagation", "MLPHead"], False)
    assert raw[3] == private[3] == graph_only[3]
    assert set(scores) == set(ROWS) and all(len(v) == 1 for v in scores.values())
    # german's bounds are read from the data: charged in the clear, beside HDS's eps
    assert report.local_epsilon == float("inf")
    assert [s.epsilon for s in report.spends if s.model == "local"] == [1.0]


@pytest.mark.parametrize("private, floor, word", [
    ([0.80, 0.82, 0.81], [0.70, 0.71, 0.72], "beats"),
    ([0.70, 0.71, 0.72], [0.80, 0.82, 0.81], "is below"),
    ([0.80, 0.70, 0.75], [0.74, 0.76, 0.74], "is within noise of"),  # +0.3 ± 3.2
    ([0.75, 0.75], [0.75, 0.75], "is within noise of"),
])
def test_verdict(private, floor, word):
    line = _verdict(private, floor, "graph-only")
    assert line.startswith(f"private {word} the better feature-free row (graph-only)"), line
    assert "paired seeds" in line


def test_verdict_one_seed_cannot_tell():
    line = _verdict([0.9], [0.8], "label propagation")
    assert "on 1 seed" in line and "beats" not in line and "+10.0" in line


@pytest.mark.slow
def test_main_cora_one_seed(capsys):
    assert main(["--seeds", "1", "--epochs", "30", "--eps", "2"]) == 0
    out = capsys.readouterr().out
    _check_output(out, "cora", "2708 nodes, 1433 features, 2708 labelled", 2)
    assert _row(out, "non-private")[0] > 70  # raw features: about 87 % at 100 epochs
    assert _row(out, "feature-free")[0] > 80  # label propagation on Cora: about 87 %


@pytest.mark.parametrize("argv", [["--seeds", "0"], ["--epochs", "0"], ["--eps", "0"],
                                  ["--eps", "-1"], ["--bogus"]])
def test_main_rejects_bad_options(argv):
    with pytest.raises(SystemExit) as e:
        _parse(argv)
    assert e.value.code == 2


def test_main_defaults():
    a = _parse([])
    assert (a.dataset, a.eps, a.seeds, a.epochs) == ("cora", 1.0, 5, 100)


def test_main_dataset_without_features():
    with pytest.raises(SystemExit, match="no node features"):
        main(["--dataset", "pubmed_nofeatures", "--seeds", "1", "--epochs", "1"])


def test_module_entry_point_help():
    r = subprocess.run([sys.executable, "-m", "skldp", "--help"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0
    for opt in ("--dataset", "--eps", "--seeds", "--epochs"):
        assert opt in r.stdout
    # every row is defined, and the help says this is the PrivGE demo beside the studies
    for key in ROWS:
        assert f"\n  {key} " in r.stdout
    assert "graph-only    uniform noise features" in r.stdout
    assert "PrivGE demo" in r.stdout and "python -m skldp reproduce <study>" in r.stdout


def test_user_errors_end_in_one_line_not_a_traceback(monkeypatch, capsys):
    from skldp import __main__ as job
    with pytest.raises(SystemExit) as e:   # unknown dataset: was a ValueError traceback
        main(["--dataset", "nope", "--seeds", "1"])
    assert e.value.code.startswith("skldp: Unknown dataset 'nope'; choose one of")
    assert "\n" not in e.value.code

    def unavailable(*args, **kwargs):
        raise OSError("Could not download the raw file of dataset 'facebook'.\nPoint "
                      "SKLDP_DATASETS_DIR at a folder")

    monkeypatch.setattr(job, "_run", unavailable)
    with pytest.raises(SystemExit) as e:
        main(["--dataset", "facebook", "--seeds", "1"])
    assert e.value.code == ("skldp: Could not download the raw file of dataset 'facebook'. "
                            "Point SKLDP_DATASETS_DIR at a folder")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(job, "_run", interrupted)
    assert main(["--seeds", "1"]) == 130
    assert capsys.readouterr().err.strip() == "skldp: interrupted"


def test_traceback_variable_shows_where_an_error_was_raised(monkeypatch):
    # a ValueError from an internal bug would otherwise be one line with no location
    monkeypatch.setenv("SKLDP_TRACEBACK", "1")
    with pytest.raises(ValueError, match="Unknown dataset 'nope'"):
        main(["--dataset", "nope", "--seeds", "1"])
    monkeypatch.setenv("SKLDP_TRACEBACK", "0")
    with pytest.raises(SystemExit, match="^skldp: Unknown dataset 'nope'"):
        main(["--dataset", "nope", "--seeds", "1"])
