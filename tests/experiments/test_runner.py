"""run_study: resumable sweeps, one record per key, clear errors, lost workers."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from skldp.experiments import (
    Method,
    RunsFile,
    RunsFileError,
    Study,
    load_runs,
    run_study,
    summarize,
    write_summary,
)
from skldp.mechanisms import HDSMechanism


def hds_logreg(ctx):
    # german (bundled): 1000 nodes, 27 raw numeric features in [0, 18424] (declared
    # public here)
    return Pipeline([("hds", HDSMechanism(k=4, feature_range=(0, 18424), random_state=ctx.seed)),
                     ("clf", LogisticRegression(max_iter=100))])


def logreg_raw(ctx):
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=100))


def plain_features(G, y, config):
    return G.features, y


def raw_evaluate(est, X, y, masks):
    train, val, test = masks
    fit = train | val
    est.fit(X[fit], y[fit])
    return {"accuracy": float(est.score(X[test], y[test]))}


def _study(name="tiny", seeds=(0, 1), grid=None, **kw):
    methods = {
        "hds": Method(hds_logreg, grid or {"hds__eps": [1.0, np.inf]}),
        "raw": Method(logreg_raw, role="raw-features", data=plain_features,
                      evaluate=raw_evaluate),
    }
    methods.update(kw.pop("methods", {}))
    return Study(name, ["german"], methods, seeds=list(seeds), **kw)


def test_each_run_records_its_threads_one_on_a_small_graph(tmp_path, monkeypatch):
    from skldp.utils import _threads, thread_share
    monkeypatch.delenv("SKLDP_NUM_THREADS", raising=False)
    run_study(_study(seeds=(0,)), tmp_path / "small", progress=False)
    assert {r["threads"] for r in load_runs(tmp_path / "small" / "tiny_runs.jsonl",
                                            "tiny")} == {1}   # German: 1,000 nodes
    monkeypatch.setattr(_threads, "SMALL_GRAPH_NODES", 0)
    run_study(_study(seeds=(0,)), tmp_path / "any", progress=False)
    assert {r["threads"] for r in load_runs(tmp_path / "any" / "tiny_runs.jsonl",
                                            "tiny")} == {thread_share()}


def test_sweep_records_resumes_and_summarises(tmp_path):
    study = _study()
    res = run_study(study, tmp_path, progress=False)
    assert len(res.done) == 6 and not res.failed and not res.missing
    recs = load_runs(tmp_path / "tiny_runs.jsonl", "tiny")
    assert len(recs) == 6 and len({r["key"] for r in recs}) == 6
    by_key = {(r["method"], r["seed"], r["params"].get("hds__eps")): r for r in recs}
    # the eps spent is privacy_report's: the grid value for HDS, inf for the raw baseline
    # (a scikit-learn model fitted on the raw features: nothing protects them)
    assert by_key[("hds", 0, 1.0)]["eps_spent"] == 1.0
    assert np.isinf(by_key[("hds", 1, np.inf)]["eps_spent"])
    assert np.isinf(by_key[("raw", 0, None)]["eps_spent"])
    for r in recs:
        assert 0 <= r["metrics"]["accuracy"] <= 1
        assert r["wall_s"] >= 0 and r["cpu_s"] >= 0 and r["peak_rss_mb"] > 0
    # resumed: nothing runs again, nothing is appended
    size = (tmp_path / "tiny_runs.jsonl").stat().st_size
    again = run_study(study, tmp_path, progress=False)
    assert again.done == [] and len(again.skipped) == 6
    assert (tmp_path / "tiny_runs.jsonl").stat().st_size == size
    # a third seed runs only the new runs
    more = run_study(_study(seeds=(0, 1, 2)), tmp_path, progress=False)
    assert len(more.done) == 3 and all("|2|" in k for k in more.done)
    rows = summarize(more.records)
    hds1 = next(r for r in rows if r["method"] == "hds" and r["eps"] == 1.0)
    accs = [r["metrics"]["accuracy"] for r in more.records
            if r["method"] == "hds" and r["params"]["hds__eps"] == 1.0]
    assert hds1["n"] == 3 and hds1["mean"] == pytest.approx(np.mean(accs))
    assert hds1["std"] == pytest.approx(np.std(accs))
    paths = write_summary(_study(seeds=(0, 1, 2)), more.records, tmp_path)
    text = paths["markdown"].read_text()
    assert "| 3 |" in text and "hds__eps=inf" in text
    try:
        import matplotlib  # noqa: F401  (optional: the figure is drawn only with it)
    except ImportError:
        assert "figure" not in paths and "![" not in text
    else:
        assert paths["figure"].stat().st_size > 0 and f"]({paths['figure'].name})" in text


@pytest.mark.slow
def test_parallel_results_equal_serial(tmp_path):
    study = _study(seeds=(0,))
    serial = run_study(study, tmp_path / "s", progress=False)
    par = run_study(study, tmp_path / "p", n_jobs=2, progress=False)
    acc = {r["key"]: r["metrics"] for r in serial.records}
    assert {r["key"]: r["metrics"] for r in par.records} == acc


def test_bad_study_input(tmp_path):
    with pytest.raises(ValueError, match=r"unknown dataset\(s\) \['no_such_graph'\]"):
        run_study(Study("x", ["no_such_graph"], {"hds": Method(hds_logreg)}), tmp_path)
    with pytest.raises(ValueError, match=r"grid key\(s\) \['hds__epz'\]"):
        run_study(_study(grid={"hds__epz": [1.0]}), tmp_path, progress=False)
    assert not (tmp_path / "tiny_runs.jsonl").exists()  # nothing ran
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        _study(quick={"grid": {"nope": {"a": [1]}}}).quick_variant()
    with pytest.raises(TypeError, match="skldp.experiments.Method"):
        Study("x", ["german"], {"hds": hds_logreg})
    with pytest.raises(ValueError, match="role"):
        Method(hds_logreg, role="oracle")
    with pytest.raises(TypeError, match="JSON"):
        Method(hds_logreg, {"hds__k": [object()]})
    with pytest.raises(ValueError, match="name"):
        Study("a b", ["german"], {"hds": Method(hds_logreg)})


def test_runs_file_of_another_study_or_damaged(tmp_path):
    f = tmp_path / "tiny_runs.jsonl"
    f.write_text(json.dumps({"study": "other", "key": "k", "metrics": {"acc": 1}}) + "\n")
    with pytest.raises(RunsFileError, match=r"tiny_runs.jsonl:1: record of study 'other'"):
        run_study(_study(), tmp_path, progress=False)
    good = [json.dumps({"study": "tiny", "key": f"k{i}", "metrics": {"acc": 1}}) for i in range(3)]
    f.write_text("\n".join([good[0], good[1], '{"study": "tiny", "key": ', good[2]]) + "\n")
    before = f.read_bytes()
    with pytest.raises(RunsFileError, match=r"tiny_runs.jsonl:3: not a JSON record"):
        run_study(_study(), tmp_path, progress=False)
    assert f.read_bytes() == before  # nothing else lost


def test_key_never_recorded_twice(tmp_path):
    f = tmp_path / "t_runs.jsonl"
    rf = RunsFile(f, "t")
    assert rf.append({"key": "a", "v": 1, "metrics": {"acc": 1}})
    assert not rf.append({"key": "a", "v": 2, "metrics": {"acc": 1}})
    # a line cut short by a killed writer, then a new record: the new one stays readable
    with open(f, "a") as fh:
        fh.write('{"study": "t", "key": "b"')
    with pytest.raises(RunsFileError, match=":2:"):
        RunsFile(f, "t")
    f.write_text(f.read_text() + "\n"
                 + json.dumps({"study": "t", "key": "a", "v": 3, "metrics": {"acc": 1}}) + "\n")
    lines = f.read_text().splitlines()
    f.write_text("\n".join([lines[0], lines[2]]) + "\n")  # the damaged line deleted by hand
    recs = load_runs(f, "t")
    assert [(r["key"], r["v"]) for r in recs] == [("a", 1)]  # first record of a key counts


# --- a worker that dies mid-sweep ---------------------------------------------------------
def dying(ctx):
    """Kills its worker process: once (a marker file) or always (a file 'always').

    The driving process builds every run's estimator too (its fingerprint): it lives.
    (Files, not the study's configs: a changed config is another configuration.)
    """
    folder = Path(ctx.config["marker"])
    marker = folder / f"seed{ctx.seed}"
    in_worker = os.getpid() != ctx.config["driver"]
    always = (folder / "always").exists()
    if ctx.seed == 1 and in_worker and (always or not marker.exists()):
        marker.touch()
        os._exit(1)
    return hds_logreg(ctx)


def _dying_study(tmp_path, always):
    (tmp_path / "always").unlink(missing_ok=True)
    if always:
        (tmp_path / "always").touch()
    return Study("dying", ["german"], {"hds": Method(dying, {"hds__eps": [1.0]})},
                 seeds=[0, 1, 2], configs={"german": {"marker": str(tmp_path),
                                                    "driver": os.getpid()}})


@pytest.mark.long
def test_dead_worker_is_retried_never_recorded_twice(tmp_path):
    res = run_study(_dying_study(tmp_path, False), tmp_path, n_jobs=2, retries=1,
                    progress=False)
    recs = load_runs(tmp_path / "dying_runs.jsonl", "dying")
    assert sorted(r["seed"] for r in recs) == [0, 1, 2]
    assert res.missing == [] and len(res.done) == 3


@pytest.mark.long
def test_dead_worker_runs_are_reported_missing(tmp_path):
    res = run_study(_dying_study(tmp_path, True), tmp_path, n_jobs=2, retries=1,
                    progress=False)
    recs = load_runs(tmp_path / "dying_runs.jsonl", "dying")
    assert [k for k in res.missing] == ['german|hds|random|1|{"hds__eps": 1.0}']
    assert 1 not in [r["seed"] for r in recs]
    assert len(recs) == len({r["key"] for r in recs}) == len(res.done)
    # a later call (the bug fixed) runs only the missing run
    again = run_study(_dying_study(tmp_path, False), tmp_path, progress=False)
    assert again.done == res.missing


def test_runs_leave_no_memoised_reports_on_the_loaded_graph(tmp_path):
    # a run's whole-graph reports are its own; kept on the process's loaded graph they
    # would pile up across a sweep (and make loky restart its workers)
    from skldp.experiments import _runner
    from skldp.experiments._study import fit_and_score

    seen = []

    def evaluate_and_peek(est, G, y, masks):
        out = fit_and_score(est, G, y, masks)
        seen.append(len(G._store._memo))
        return out

    study = Study("tiny_memo", ["german"],
                  {"hds": Method(hds_logreg, {"hds__eps": [1.0, 2.0]},
                                 evaluate=evaluate_and_peek)}, seeds=[0])
    res = run_study(study, tmp_path, progress=False)
    assert len(res.done) == 2
    assert seen and min(seen) >= 1            # the runs did memoise their reports ...
    G = _runner._DATA["german"][0]
    assert len(G._store._memo) == 0           # ... and left none behind


def test_negative_max_runs_or_retries_are_refused(tmp_path):
    # max_runs=-3 used to slice todo[:-3] (all but the last 3 runs)
    for kw in ({"max_runs": -3}, {"retries": -1}):
        with pytest.raises(ValueError, match="must be an int >= 0"):
            run_study(_study(), tmp_path, progress=False, **kw)
    assert not (tmp_path / "tiny_runs.jsonl").exists()


def test_bad_grid_value_fails_up_front_not_in_every_run(tmp_path):
    # eps=-1 (second grid value) used to pass the checks and fail in each of its runs
    from skldp.experiments._runner import validate_study
    study = _study(grid={"hds__eps": [1.0, -1.0]})
    with pytest.raises(ValueError, match="eps"):
        validate_study(study)
    with pytest.raises(ValueError, match="eps"):
        run_study(study, tmp_path, progress=False)
    assert not (tmp_path / "tiny_runs.jsonl").exists()


def test_record_without_metrics_is_refused_with_its_line(tmp_path):
    # it used to count as recorded (never run again) and silently drop out of the tables
    f = tmp_path / "tiny_runs.jsonl"
    lines = [{"study": "tiny", "key": "k0", "metrics": {"accuracy": 0.5}},
             {"study": "tiny", "key": "k1"},
             {"study": "tiny", "key": "k2", "metrics": None}]
    f.write_text("\n".join(json.dumps(r) for r in lines[:2]) + "\n")
    with pytest.raises(RunsFileError, match=r"tiny_runs.jsonl:2: record 'k1' has no 'metrics'"):
        load_runs(f, "tiny")
    with pytest.raises(RunsFileError, match=r"tiny_runs.jsonl:2: .*no 'metrics'"):
        run_study(_study(), tmp_path, progress=False)
    f.write_text("\n".join(json.dumps(r) for r in (lines[0], lines[2])) + "\n")
    with pytest.raises(RunsFileError, match=":2: record 'k2'"):
        RunsFile(f, "tiny")
    with pytest.raises(RunsFileError, match="no 'metrics'"):
        RunsFile(tmp_path / "new_runs.jsonl", "new").append({"key": "x"})


def test_run_whose_claimant_dies_is_run_here_not_counted_elsewhere(tmp_path, monkeypatch):
    # sweep B finds a run claimed by a live sweep A, which is then SIGKILLed before recording
    # it: B used to report it "elsewhere", 0 missing, and finish with a run unrecorded
    import subprocess
    import sys

    from skldp.experiments._claims import RunClaims
    from skldp.utils._threads import _start_time
    study = _study(grid={"hds__eps": [1.0]})
    key = study.runs()[1].key
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        claims = RunClaims(tmp_path / "tiny_runs.jsonl")
        path = claims._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"key": key, "host": os.uname().nodename,
                                    "pid": sleeper.pid, "start": _start_time(sleeper.pid)}))
        acquire = RunClaims.acquire

        def acquire_then_kill_the_holder(self, k):
            got = acquire(self, k)
            if k == key and not got:   # held by the live sweep A, which is killed now
                sleeper.kill()
                sleeper.wait()
            return got

        monkeypatch.setattr(RunClaims, "acquire", acquire_then_kill_the_holder)
        res = run_study(study, tmp_path, backend="sequential", progress=False)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert sorted(res.done) == sorted(s.key for s in study.runs())
    assert res.elsewhere == [] and not res.missing
    assert len(load_runs(tmp_path / "tiny_runs.jsonl", "tiny")) == len(study.runs())
    assert not any((tmp_path / "tiny_claims").glob("*.claim"))


def test_a_run_recorded_by_another_sweep_meanwhile_is_reported_elsewhere(tmp_path,
                                                                          monkeypatch):
    # another sweep records the run while this one runs it (its claim was taken over):
    # the run was then in no list of the SweepResult
    from skldp.experiments import _runner
    study = _study(grid={"hds__eps": [1.0]}, seeds=(0,))
    path = tmp_path / "tiny_runs.jsonl"
    run_one = _runner._run_one

    def recorded_meanwhile(study, spec, cache):
        rec = run_one(study, spec, cache)
        RunsFile(path, "tiny").append({"key": spec.key, "metrics": {"accuracy": 0.5}})
        return rec

    monkeypatch.setattr(_runner, "_run_one", recorded_meanwhile)
    res = run_study(study, tmp_path, backend="sequential", progress=False)
    keys = sorted(s.key for s in study.runs())
    assert sorted(res.elsewhere) == keys and not res.done
    assert [r["metrics"] for r in load_runs(path)] == [{"accuracy": 0.5}] * len(keys)


def test_a_study_declared_again_gets_its_own_method_data(tmp_path):
    """The method inputs are kept per process: a study of the same name declared again
    with another data function or config (a notebook cell run twice) runs on its own."""
    from sklearn.dummy import DummyClassifier

    def constant(G, y, config):
        return G.with_features(np.full(G.shape, float(config["level"])), source="public"), y

    def mean_feature(est, G, y, masks):
        return {"accuracy": float(np.asarray(G.features).mean())}

    def run(data, level, where):
        study = Study("again", ["german"],
                      {"m": Method(lambda ctx: DummyClassifier(), role="baseline", data=data,
                                   evaluate=mean_feature)},
                      seeds=[0], configs={"german": {"level": level}})
        return run_study(study, tmp_path / where, progress=False).records[0]["metrics"]

    assert run(constant, 0.0, "a")["accuracy"] == 0.0
    assert run(constant, 1.0, "b")["accuracy"] == 1.0
    assert run(lambda G, y, c: constant(G, y, {"level": 7.0}), 1.0, "c")["accuracy"] == 7.0


class _Level:
    """A data callable that is not hashable (a dataclass-like object with __eq__)."""

    def __init__(self, level):
        self.level = level

    def __eq__(self, other):
        return isinstance(other, _Level) and other.level == self.level

    __hash__ = None

    def __call__(self, G, y, config):
        return G.with_features(np.full(G.shape, self.level), source="public"), y


def test_method_data_is_built_once_per_content(monkeypatch):
    """Workers receive a new copy of a script's data function with each task: the inputs
    are kept by the function's content, built once, and an unhashable callable works."""
    import pickle

    from skldp.experiments import _runner
    from skldp.experiments._study import RunSpec

    monkeypatch.setattr(_runner, "_METHOD_DATA", {})
    inputs = []
    for fn in (_Level(2.0), pickle.loads(pickle.dumps(_Level(2.0))), _Level(3.0)):
        study = Study("once", ["german"], {"m": Method(logreg_raw, role="baseline", data=fn)},
                      seeds=[0])
        for seed in (0, 1):
            G, _ = _runner._method_input(study, RunSpec("german", "m", "50/25/25", seed))
            assert G.features[0, 0] == fn.level
            inputs.append(G)
    assert len({id(G) for G in inputs}) == 2 and len(_runner._METHOD_DATA) == 2


def test_a_relative_cache_is_the_folder_of_the_callers_working_directory(tmp_path,
                                                                          monkeypatch):
    # the path went to the workers as given: a worker in another working directory (a
    # reused loky worker started before a chdir, a remote one) cached somewhere else
    from skldp.experiments import _runner
    here, elsewhere = tmp_path / "here", tmp_path / "worker"
    here.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(here)
    run_one = _runner._run_one

    def in_another_directory(study, spec, cache):
        os.chdir(elsewhere)   # (undone by monkeypatch)
        return run_one(study, spec, cache)

    monkeypatch.setattr(_runner, "_run_one", in_another_directory)
    res = run_study(_study(grid={"hds__eps": [1.0]}, seeds=(0,)), tmp_path / "runs",
                    backend="sequential", cache="cache", progress=False)
    assert res.done and not res.failed
    assert any((here / "cache").iterdir()) and not (elsewhere / "cache").exists()
