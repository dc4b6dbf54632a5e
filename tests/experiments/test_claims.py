"""Concurrent sweeps of one study share the runs: each run once, none lost to a kill."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skldp.experiments import load_runs
from skldp.experiments._claims import RunClaims

ROOT = Path(__file__).resolve().parents[2]

SWEEPER = '''
import json, os, sys, time
from pathlib import Path
from sklearn.linear_model import LogisticRegression
from skldp.experiments import Method, Study, run_study

def slow_evaluate(est, X, y, masks):
    time.sleep(float(os.environ.get("RUN_SECONDS", "0.3")))
    return {"accuracy": 0.5}

def plain(G, y, config):
    return G.features, y

study = Study("shared", ["german"],
              {"raw": Method(lambda ctx: LogisticRegression(), role="raw-features",
                             data=plain, evaluate=slow_evaluate)},
              seeds=list(range(int(os.environ.get("RUNS", "12")))))
out, name = Path(sys.argv[1]), sys.argv[2]
(out / f"{name}.ready").touch()
while not (out / "go").exists():          # start together
    time.sleep(0.01)
res = run_study(study, out, n_jobs=1, backend="sequential", progress=False)
(out / f"{name}.json").write_text(json.dumps({"done": res.done, "elsewhere": res.elsewhere,
                                              "records": len(res.records)}))
'''


def _start(tmp_path, name, **env):
    script = tmp_path / "sweep.py"
    script.write_text(SWEEPER)
    return subprocess.Popen([sys.executable, str(script), str(tmp_path), name], cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1",
                                     **env))


def _wait_ready(tmp_path, names, timeout=120):
    t0 = time.time()
    while not all((tmp_path / f"{n}.ready").exists() for n in names):
        assert time.time() - t0 < timeout, "sweepers did not start"
        time.sleep(0.05)
    (tmp_path / "go").touch()


@pytest.mark.long
def test_two_processes_share_a_study_and_never_repeat_a_run(tmp_path):
    procs = [_start(tmp_path, n) for n in ("a", "b")]
    _wait_ready(tmp_path, ["a", "b"])
    for p in procs:
        assert p.wait(timeout=300) == 0
    a, b = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("a", "b"))
    lines = (tmp_path / "shared_runs.jsonl").read_text().splitlines()
    keys = [json.loads(x)["key"] for x in lines]
    assert len(keys) == len(set(keys)) == 12            # each run once, in one file
    assert set(a["done"]).isdisjoint(b["done"])
    assert set(a["done"]) | set(b["done"]) == set(keys)
    assert a["done"] and b["done"]                       # the work was shared
    assert set(a["elsewhere"]) <= set(b["done"]) and set(b["elsewhere"]) <= set(a["done"])
    assert max(a["records"], b["records"]) == 12         # the last to finish sees them all
    assert not any((tmp_path / "shared_claims").glob("*.claim"))   # all released


@pytest.mark.long
def test_a_killed_sweep_leaves_nothing_half_done(tmp_path):
    p = _start(tmp_path, "a", RUN_SECONDS="1.0", RUNS="6")
    _wait_ready(tmp_path, ["a"])
    runs = tmp_path / "shared_runs.jsonl"
    t0 = time.time()
    while not (runs.exists() and runs.read_text().count("\n") >= 1):   # killed mid-sweep
        assert time.time() - t0 < 120
        time.sleep(0.05)
    time.sleep(0.3)
    p.send_signal(signal.SIGKILL)
    p.wait()
    claims = list((tmp_path / "shared_claims").glob("*.claim"))
    assert len(claims) == 1                               # the run it was doing
    done_before = len(load_runs(runs, "shared"))
    (tmp_path / "a.ready").unlink()
    q = _start(tmp_path, "b", RUN_SECONDS="0.05", RUNS="6")   # takes the stale claim over
    _wait_ready(tmp_path, ["b"])
    assert q.wait(timeout=300) == 0
    recs = load_runs(runs, "shared")
    assert len(recs) == 6 and len({r["key"] for r in recs}) == 6
    b = json.loads((tmp_path / "b.json").read_text())
    assert len(b["done"]) == 6 - done_before and not b["elsewhere"]
    assert all(json.loads(x) for x in runs.read_text().splitlines())   # no damaged line


def test_claims_of_live_and_dead_processes(tmp_path):
    claims = RunClaims(tmp_path / "s_runs.jsonl")
    assert claims.folder == tmp_path / "s_claims"
    assert claims.acquire("k") and claims.acquire("k")   # its own claim again
    # a live process's claim is kept; a dead one's is taken over
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        path = claims._path("k2")
        path.parent.mkdir(parents=True, exist_ok=True)
        from skldp.utils._threads import _start_time
        rec = {"key": "k2", "host": os.uname().nodename, "pid": sleeper.pid,
               "start": _start_time(sleeper.pid)}
        path.write_text(json.dumps(rec))
        assert claims.owner("k2")["pid"] == sleeper.pid and not claims.acquire("k2")
    finally:
        sleeper.kill()
        sleeper.wait()
    assert claims.owner("k2") is None and claims.acquire("k2")
    claims.release("k2")
    assert not claims._path("k2").exists()


def test_a_run_recorded_between_the_check_and_the_claim_is_not_run_again(tmp_path):
    # Another sweep may append a run and release its claim after this sweep found the
    # run unrecorded and before it claims it: the claim then succeeds, and the run was
    # dispatched a second time.
    import types

    from skldp.experiments._runner import SweepResult, _Claims
    from skldp.experiments._runs import RunsFile

    path = tmp_path / "s_runs.jsonl"
    runs, claims = RunsFile(path, "s"), RunClaims(path)
    acquire = claims.acquire

    def acquire_after_the_other_sweep(key):
        RunsFile(path, "s").append({"key": key, "metrics": {"accuracy": 0.5}})
        return acquire(key)

    claims.acquire = acquire_after_the_other_sweep
    result = SweepResult(path)
    take = _Claims(claims, runs, result, types.SimpleNamespace(update=lambda *a: None)).take
    assert not take(types.SimpleNamespace(key="cora|X|0"))
    assert result.elsewhere == ["cora|X|0"] and claims.owner("cora|X|0") is None


def test_reproduce_writes_the_page_from_the_whole_runs_file_under_its_lock(tmp_path,
                                                                           monkeypatch):
    # sweeps of one study side by side each write the summary when done: one that read the
    # runs file before another appended its last run wrote it last, "(9 records)" of 10
    import fcntl

    import skldp.experiments._runner as runner
    import skldp.experiments._summary as summary
    from skldp.__main__ import main
    argv = ["reproduce", "privge", "--quick", "--no-progress", "--results-dir", str(tmp_path)]
    assert main([*argv, "--max-runs", "2"]) == 0
    runs = tmp_path / "privge_quick_runs.jsonl"
    assert len(load_runs(runs)) == 2

    def stale(study, *args, **kwargs):   # its last read was before the other's append
        return runner.SweepResult(runs_file=runs, records=load_runs(runs)[:1])

    written = []

    def spy(study, records, *args, **kwargs):
        with open(runs, "rb") as f, pytest.raises(BlockingIOError):
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)   # no process appends meanwhile
        written.append(len(records))
        return write_summary(study, records, *args, **kwargs)

    write_summary = summary.write_summary
    monkeypatch.setattr(runner, "run_study", stale)
    monkeypatch.setattr(summary, "write_summary", spy)
    assert main([*argv, "--max-runs", "0"]) == 0
    assert written == [2]
    assert "(2 records)" in (tmp_path / "privge_quick_summary.md").read_text()
