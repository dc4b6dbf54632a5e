"""Run claims: other hosts' claims, damaged claim files, the folder lock, and claims
never left behind or taken from another sweep."""

import fcntl
import json
import os
import threading
import time
import types

import pytest
from sklearn.linear_model import LogisticRegression

from skldp.experiments import Method, Study, run_study
from skldp.experiments._claims import STALE_AFTER, RunClaims


def _write_claim(claims, key, **rec):
    path = claims._path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"key": key, **rec}))
    return path


def test_a_claim_from_another_host_is_kept_until_it_is_stale(tmp_path):
    # its process cannot be checked from here: only its age tells
    claims = RunClaims(tmp_path / "s_runs.jsonl")
    path = _write_claim(claims, "k", host="another-host.invalid", pid=1, start=None)
    assert claims.owner("k")["host"] == "another-host.invalid"
    assert not claims.acquire("k")
    old = time.time() - STALE_AFTER - 60
    os.utime(path, (old, old))
    assert claims.owner("k") is None
    assert claims.acquire("k") and claims.owner("k")["pid"] == os.getpid()
    recent = time.time() - STALE_AFTER + 600
    path = _write_claim(claims, "j", host="another-host.invalid", pid=1, start=None)
    os.utime(path, (recent, recent))
    assert claims.owner("j") is not None and not claims.acquire("j")
    # a file time ahead of the server's clock (a jump back) is young: kept, not stale at once
    ahead = time.time() + STALE_AFTER + 60
    os.utime(path, (ahead, ahead))
    assert claims.owner("j") is not None and not claims.acquire("j")


def test_a_claims_age_is_read_on_the_file_servers_clock(tmp_path, monkeypatch):
    # with abs(time.time() - mtime), a claim written just now by a host (or file server)
    # whose clock is 7 h ahead was stale at once, and live again an hour later
    from skldp.experiments import _claims

    claims = RunClaims(tmp_path / "s_runs.jsonl")
    _write_claim(claims, "k", host="another-host.invalid", pid=1, start=None, token="b")
    for skew in (7 * 3600, -7 * 3600, 0):   # this host's clock, hours off
        monkeypatch.setattr(_claims.time, "time", lambda skew=skew: os.path.getmtime(
            claims._path("k")) + skew)
        assert claims.owner("k") is not None and not claims.acquire("k")
    monkeypatch.undo()
    # the lock file is dated by the same clock as the claims: a claim older than it by
    # STALE_AFTER is stale, whatever this host's clock says
    old = os.path.getmtime(claims.folder / ".lock") - STALE_AFTER - 60
    os.utime(claims._path("k"), (old, old))
    assert claims.owner("k") is None and claims.acquire("k")


def test_a_claimant_releases_only_its_own_claim(tmp_path):
    # a sweep whose claim was taken over removed the new claimant's claim when its run
    # ended, and a third sweep then took the run too
    a, b = RunClaims(tmp_path / "s_runs.jsonl"), RunClaims(tmp_path / "s_runs.jsonl")
    _write_claim(a, "k", host="another-host.invalid", pid=1, start=None, token="old")
    old = time.time() - STALE_AFTER - 60
    os.utime(a._path("k"), (old, old))
    assert b.acquire("k")                          # taken over from a stale claimant
    a.release("k")
    assert b.owner("k")["token"] == b.token
    b.release("k")
    assert not b._path("k").exists()

def test_two_sweeps_of_one_process_do_not_take_each_others_claims(tmp_path):
    # two run_study calls in two threads: the pid alone made each take the other's claim
    # and every run was done twice
    a, b = RunClaims(tmp_path / "s_runs.jsonl"), RunClaims(tmp_path / "s_runs.jsonl")
    assert a.acquire("k") and a.acquire("k")            # its own claim again
    assert not b.acquire("k") and b.owner("k")["token"] == a.token
    a.release("k")
    assert b.acquire("k") and not a.acquire("k")


@pytest.mark.parametrize("content", ["", '{"key": "k", "host"', "not json"])
def test_a_damaged_claim_file_is_taken_over(tmp_path, content):
    claims = RunClaims(tmp_path / "s_runs.jsonl")
    claims._path("k").parent.mkdir(parents=True)
    claims._path("k").write_text(content)
    assert claims.owner("k") is None
    assert claims.acquire("k") and claims.owner("k")["pid"] == os.getpid()


def test_claims_wait_for_the_folder_lock(tmp_path):
    claims = RunClaims(tmp_path / "s_runs.jsonl")
    claims.folder.mkdir()
    got = []
    with open(claims.folder / ".lock", "a") as lock:   # another sweep is claiming
        fcntl.flock(lock, fcntl.LOCK_EX)
        t = threading.Thread(target=lambda: got.append(claims.acquire("k")))
        t.start()
        time.sleep(0.3)
        assert not got and not claims._path("k").exists()
        fcntl.flock(lock, fcntl.LOCK_UN)
    t.join(10)
    assert got == [True]


def test_a_sweep_releases_only_the_claims_it_holds(tmp_path):
    # a run this sweep never took (another sweep's claim) must keep its claim when this
    # sweep gives its runs back (e.g. after a worker died before the run was taken)
    from skldp.experiments._runner import SweepResult, _Claims
    from skldp.experiments._runs import RunsFile

    path = tmp_path / "s_runs.jsonl"
    claims = RunClaims(path)
    assert claims.acquire("theirs")                       # held by someone else
    mine = _Claims(RunClaims(path), RunsFile(path, "s"), SweepResult(path),
                   types.SimpleNamespace(update=lambda *a: None))
    assert mine.take(types.SimpleNamespace(key="ours"))  # its own claim: released
    mine.release("theirs")
    mine.release_all()
    assert claims._path("theirs").exists()
    assert not claims._path("ours").exists()


class Interrupted(BaseException):
    """Like KeyboardInterrupt: not an Exception, so the run does not just fail."""


def _interrupt(est, X, y, masks):
    raise Interrupted


def _plain(G, y, config):
    return G.features, y


def test_an_interrupted_sweep_leaves_no_claim(tmp_path):
    # the claim of the run in progress would keep a live process (an interactive session,
    # a notebook) holding a run that nobody does
    study = Study("intr", ["german"],
                  {"raw": Method(lambda ctx: LogisticRegression(), role="raw-features",
                                 data=_plain, evaluate=_interrupt)}, seeds=[0, 1])
    with pytest.raises(Interrupted):
        run_study(study, tmp_path, backend="sequential", progress=False)
    assert (tmp_path / "intr_claims").is_dir()
    assert not list((tmp_path / "intr_claims").glob("*.claim"))


def test_a_stopped_sweep_takes_no_claim(tmp_path):
    # after a sweep stopped on an error, joblib's dispatch thread kept taking runs: their
    # claims stayed while the process lived, and every later sweep of it skipped the runs
    from skldp.experiments._runner import SweepResult, _Claims
    from skldp.experiments._runs import RunsFile

    path = tmp_path / "s_runs.jsonl"
    claims = RunClaims(path)
    acquire, entered, go = claims.acquire, threading.Event(), threading.Event()

    def slow_acquire(key):
        entered.set()
        go.wait(10)
        return acquire(key)

    claims.acquire = slow_acquire
    mine = _Claims(claims, RunsFile(path, "s"), SweepResult(path),
                   types.SimpleNamespace(update=lambda *a: None))
    took = []
    taker = threading.Thread(target=lambda: took.append(mine.take(types.SimpleNamespace(
        key="during"))))
    taker.start()
    assert entered.wait(10)
    closer = threading.Thread(target=mine.release_all)   # while a take is in progress
    closer.start()
    time.sleep(0.2)
    go.set()
    taker.join(10)
    closer.join(10)
    assert took == [True]
    assert not mine.take(types.SimpleNamespace(key="after"))
    assert not list(claims.folder.glob("*.claim"))
    assert RunClaims(path).acquire("during") and RunClaims(path).acquire("after")
