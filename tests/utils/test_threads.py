"""Thread pools sized from the CPUs a process may use, shared with other skldp processes."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from skldp.utils import _threads, available_cpus, share_cpus, size_thread_pools, thread_share

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """A private registry folder, two CPUs, no environment override."""
    monkeypatch.setattr(_threads.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(_threads, "_affinity", lambda: {0, 1})
    monkeypatch.setattr(_threads, "_cgroup_quota", lambda root="": None)
    for var in (_threads.ENV_NUM_THREADS, "OMP_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def test_environment_override(registry, monkeypatch):
    assert thread_share() == 2
    monkeypatch.setenv("SKLDP_NUM_THREADS", "5")
    assert thread_share() == 5                     # the user's word, whatever the CPUs
    monkeypatch.setenv("SKLDP_NUM_THREADS", "zero")
    with pytest.raises(ValueError, match="SKLDP_NUM_THREADS"):
        thread_share()
    monkeypatch.delenv("SKLDP_NUM_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")     # a joblib / Dask / Ray worker's share
    assert thread_share() == 1


def test_cgroup_quota(tmp_path, monkeypatch):
    monkeypatch.setattr(_threads, "_affinity", lambda: set(range(8)))
    (tmp_path / "cpu.max").write_text("300000 100000\n")
    assert available_cpus(str(tmp_path)) == 3
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert available_cpus(str(tmp_path)) == 8
    assert available_cpus(str(tmp_path / "absent")) == 8


def _holder(registry, weight, cpus="0,1"):
    """Another process that declares ``weight`` jobs on ``cpus`` until killed."""
    code = (f"import os, sys, tempfile, time; tempfile.gettempdir = lambda: {str(registry)!r};"
            "from skldp.utils import _threads;"
            f"_threads._affinity = lambda: {{{cpus}}};"
            f"ctx = _threads.share_cpus({weight}); ctx.__enter__();"
            "print('ready', flush=True); time.sleep(60)")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.stdout.readline().strip() == "ready"
    return p


def test_processes_on_the_same_cpus_share_them(registry):
    assert thread_share() == 2
    other = _holder(registry, 1)
    try:
        assert thread_share() == 1                 # two processes on two CPUs
        with share_cpus(1):
            assert thread_share() == 1             # counted once, not twice
    finally:
        other.kill()
        other.wait()
    assert thread_share() == 2                     # a killed process no longer counts
    assert not any(registry.glob("skldp-cpus-*/*.json"))   # and its file is gone
    elsewhere = _holder(registry, 4, cpus="6,7")   # other CPUs: not counted
    try:
        assert thread_share() == 2
    finally:
        elsewhere.kill()
        elsewhere.wait()


def test_two_declarations_of_one_process_add_up(registry, monkeypatch):
    # two sweeps in two threads: the second overwrote the first's entry (one file per
    # pid, and one temporary file, which the other could rename away first), and the first
    # to end removed it
    monkeypatch.setattr(_threads, "_affinity", lambda: set(range(8)))
    with share_cpus(2):
        with share_cpus(2):
            assert thread_share() == 2             # four jobs on eight CPUs
        assert thread_share() == 4                 # the first is still declared
    assert thread_share() == 8
    assert not list(registry.glob("skldp-cpus-*/*"))


def _state(pid):
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc (Linux)")
def test_a_killed_process_not_yet_reaped_is_dead():
    # a zombie still answers kill(pid, 0): its claims and its share of the CPUs were kept
    # until its parent reaped it
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    start = _threads._start_time(p.pid)
    try:
        assert _threads._alive(p.pid, start)
        assert not _threads._alive(p.pid, str(int(start) + 1))   # a reused pid
        p.kill()
        for _ in range(500):
            if _state(p.pid) == "Z":
                break
            time.sleep(0.01)
        assert _state(p.pid) == "Z"
        assert not _threads._alive(p.pid, start)
    finally:
        p.wait()
    assert not _threads._alive(p.pid, start)
    assert not _threads._alive(-1, None)           # a claim without a pid: no process


def test_without_proc_the_kernel_tells(monkeypatch):
    monkeypatch.setattr(_threads, "_stat", lambda pid: open(f"/absent/{pid}/stat"))
    monkeypatch.setattr(_threads.os.path, "isdir", lambda path: False)
    assert _threads._alive(os.getpid(), "whatever")
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert not _threads._alive(p.pid, None)


@pytest.mark.parametrize("error", [FileNotFoundError, PermissionError])
def test_a_process_hidden_in_proc_is_asked_of_the_kernel(monkeypatch, error):
    # /proc mounted with hidepid hides other users' live processes: their claims were
    # taken over and their share of the CPUs dropped
    def hidden(pid):
        raise error(f"/proc/{pid}/stat")

    monkeypatch.setattr(_threads, "_stat", hidden)
    assert _threads._alive(os.getpid(), "whatever")
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert not _threads._alive(p.pid, None)


def test_a_run_on_a_small_graph_takes_one_thread(registry, monkeypatch):
    assert thread_share() == 2
    small = _threads.SMALL_GRAPH_NODES - 1
    assert _threads.run_threads(small) == 1          # waking a second costs more than it gains
    assert _threads.run_threads(_threads.SMALL_GRAPH_NODES) == 2
    monkeypatch.setenv("SKLDP_NUM_THREADS", "2")     # the user's word, whatever the graph
    assert _threads.run_threads(small) == 2


def test_size_thread_pools_sets_torch_and_blas():
    from threadpoolctl import threadpool_info
    before = torch.get_num_threads()
    try:
        assert size_thread_pools(1) == 1 and torch.get_num_threads() == 1
        assert all(i["num_threads"] == 1 for i in threadpool_info()
                   if i["user_api"] == "blas")
        with pytest.raises(ValueError):
            size_thread_pools(0)
    finally:
        size_thread_pools(before)


def test_torch_threads_sets_and_restores_even_after_an_error():
    before = torch.get_num_threads()
    inner = 1 if before > 1 else 2
    with _threads.torch_threads(inner):
        assert torch.get_num_threads() == inner
    assert torch.get_num_threads() == before
    with pytest.raises(KeyError), _threads.torch_threads(inner):
        raise KeyError("a failed step")
    assert torch.get_num_threads() == before


def test_passive_waiting_is_set_for_the_reproduce_command():
    """`python -m skldp reproduce` sets OMP_WAIT_POLICY before torch is imported; a
    user's value is kept."""
    code = ("import os, sys; from skldp.utils._threads import passive_waiting;"
            "print(passive_waiting(), os.environ['OMP_WAIT_POLICY'])")
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["True", "PASSIVE"]
    out = subprocess.run([sys.executable, "-c", "import torch;" + code], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "PASSIVE"]            # too late for this process
    env["OMP_WAIT_POLICY"] = "active"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["False", "active"]


@pytest.mark.parametrize("rec", [{"weight": "two"}, {"weight": None}, {"weight": [2]},
                                 {"weight": 0}, {"weight": -3}, {"weight": 2.5},
                                 {"cpus": 7}, {"cpus": [[0]]}])
def test_a_corrupt_entry_of_the_registry_is_ignored(registry, rec):
    # a bad weight (or cpus) raised from thread_share: its parse was outside the guard
    # that skips a bad pid; a weight below 1 took jobs away from the others
    import json
    folder = Path(_threads._registry())
    pid = os.getpid()
    entry = {"pid": pid, "start": _threads._start_time(pid), "weight": 1, "cpus": [0, 1]}
    (folder / f"{pid}-corrupt.json").write_text(json.dumps({**entry, **rec}))
    assert thread_share() == 2
    assert _threads._registered() == []
    (folder / f"{pid}-good.json").write_text(json.dumps(dict(entry, weight=2)))
    assert thread_share() == 1                       # a good entry still counts


@pytest.mark.parametrize("weight", [0, -1, 2.5, "2", True, None])
def test_share_cpus_refuses_a_weight_that_is_not_a_whole_number_above_zero(registry, weight):
    # 0 was clamped to 1 and 2.5 truncated to 2, silently
    with pytest.raises(ValueError, match="weight must be an int >= 1"):
        with share_cpus(weight):
            pass
    assert not list(registry.glob("skldp-cpus-*/*"))


def test_share_cpus_takes_numpy_integers(registry):
    import numpy as np
    with share_cpus(np.int64(2)):
        assert thread_share() == 1


@pytest.mark.parametrize("n", [2.5, 1.0, "1", True, 0, -2])
def test_size_thread_pools_refuses_a_count_that_is_not_a_whole_number_above_zero(n):
    # 2.5 was truncated to 2 threads, silently
    before = torch.get_num_threads()
    with pytest.raises(ValueError, match="n must be an int >= 1 or None"):
        size_thread_pools(n)
    assert torch.get_num_threads() == before
