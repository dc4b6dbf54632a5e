"""Test configuration and shared fixtures.

Real datasets: the bundled ones (``skldp.datasets.BUNDLED``) are always there; a test of
another dataset runs when the loader finds it locally (``SKLDP_DATASETS_DIR`` or the
download cache) and skips otherwise. Tests never download.
"""

import faulthandler
import importlib
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch

torch.set_num_threads(min(2, torch.get_num_threads()))


def _register_stack_dumps():
    """With ``SKLDP_STACKS_DIR`` set (``benchmarks/gpu_check.py`` sets it for the suite),
    ``kill -USR1`` makes this process (pytest, or one of its workers) write every
    thread's stack to ``stacks-<pid>.txt`` there: a run out of time says where it waits."""
    folder = os.environ.get("SKLDP_STACKS_DIR")
    if not folder or not hasattr(signal, "SIGUSR1"):
        return None
    f = open(os.path.join(folder, f"stacks-{os.getpid()}.txt"), "w")  # noqa: SIM115
    faulthandler.register(signal.SIGUSR1, file=f, all_threads=True)
    return f   # kept open: faulthandler writes to its descriptor


_STACKS = _register_stack_dumps()


def pytest_collection_modifyitems(config, items):
    """On pytest-xdist's workers the tests marked ``long`` go first, every other one.

    ``--dist load --maxschedchunk 1`` hands the tests out in this order, two to a
    worker, then one as each ends: every worker starts with one long test, and no
    long test starts last (on 16 workers the suite then takes about its longest test
    or its total over the workers, not the two added). Elsewhere the order is pytest's.
    """
    if not hasattr(config, "workerinput"):
        return
    long = [it for it in items if it.get_closest_marker("long")]
    rest = [it for it in items if not it.get_closest_marker("long")]
    ordered = []
    for i, it in enumerate(long):
        ordered += [it] + rest[i:i + 1]
    items[:] = ordered + rest[len(long):]


@pytest.fixture(autouse=True)
def _plain_array_users_of_this_test(monkeypatch):
    """Each test starts with no plain array's users known (as a new process would): a
    report that adds every plain array's ledger of the process then reads this test's."""
    from skldp.population import _population
    monkeypatch.setattr(_population, "_ARRAYS", {})
    monkeypatch.setattr(_population, "_DEFAULT", None)
    monkeypatch.setattr(_population, "_LOADED", {})   # (those loaded with estimators)


def _dataset_file(name):
    """Path of dataset ``name``'s ``.npz`` (bundled, ``SKLDP_DATASETS_DIR`` or the cache);
    skips the test when it is not available without a download."""
    from skldp.datasets import _loaders
    try:
        return _loaders._locate(name, None, None, download_if_missing=False)
    except FileNotFoundError:
        pytest.skip(f"dataset {name!r} is not bundled with skldp and not available offline: "
                    f"set SKLDP_DATASETS_DIR to a folder holding {name}.npz (or load it once "
                    "with skldp.datasets.load_dataset to download it into the cache)")


@pytest.fixture
def dataset_file():
    """The function :func:`_dataset_file` (skips when a dataset is not available)."""
    return _dataset_file


def _binary_sbm(n=150, d=12, p_in=0.2, p_out=0.01, base=0.2, lift=0.5, seed=0):
    """A 3-block SBM with 0/1 features: column j is 1 with probability ``base``, plus
    ``lift`` on the nodes of class ``j mod 3``. Returns ``(GraphData, y)``."""
    from skldp import GraphData
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    P = np.where(y[:, None] == y[None, :], p_in, p_out)
    A = np.triu(rng.random((n, n)) < P, 1)
    A = sp.csr_array((A | A.T).astype(float))
    X = rng.random((n, d)) < base + lift * (np.arange(d)[None, :] % 3 == y[:, None])
    return GraphData(X.astype(float), A), y


@pytest.fixture
def binary_sbm():
    """The factory :func:`_binary_sbm` (call it with the sizes a test needs)."""
    return _binary_sbm


@pytest.fixture
def small_graph():
    """A 2-block stochastic block model with informative features (60 nodes)."""
    rng = np.random.default_rng(0)
    n, d = 60, 5
    y = np.repeat([0, 1], n // 2)
    P = np.where(y[:, None] == y[None, :], 0.3, 0.02)
    A = np.triu(rng.random((n, n)) < P, 1)
    A = (A | A.T).astype(float)
    X = rng.normal(size=(n, d)) * 0.3 + y[:, None]
    X = np.clip(X, -1, 2)
    return sp.csr_array(A), X, y


def _under_meta(fn):
    """``fn()`` with torch's default device set to "meta" (tensors without data): a tensor
    created without an explicit ``device=`` lands there and fails when it meets a CPU
    tensor or is read, as it would meet CUDA tensors on a GPU run."""
    torch.set_default_device("meta")
    try:
        return fn()
    finally:
        torch.set_default_device(None)


@pytest.fixture
def under_meta():
    """The function :func:`_under_meta`."""
    return _under_meta


@pytest.fixture
def benchmark_script():
    """Import a script of ``benchmarks/`` (not a package) as a module: ``load(name)``."""
    folder = str(Path(__file__).resolve().parents[1] / "benchmarks")

    def load(name):
        sys.path.insert(0, folder)
        try:
            return importlib.import_module(name)
        finally:
            sys.path.pop(0)
    return load


def _forked_exit_code(work, timeout=60):
    """Run ``work()`` in a forked child; its exit code: what ``work`` returned (0 for
    None), 1 if it raised, -9 if it had not ended within ``timeout`` seconds (then the
    child is killed: a hung child fails its test instead of hanging the run)."""
    pid = os.fork()
    if pid == 0:   # the child: never back into pytest
        code = 1
        try:
            code = int(work() or 0)
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -9
        time.sleep(0.005)


@pytest.fixture
def forked_exit_code():
    """:func:`_forked_exit_code`, skipped where ``os.fork`` is missing or unsafe."""
    if not hasattr(os, "fork") or sys.platform == "darwin":
        pytest.skip("needs os.fork")
    return _forked_exit_code


@pytest.fixture
def run_in_forked_child(forked_exit_code):
    """Run ``fn()`` in a forked child process; whether it returned without raising."""
    return lambda fn: forked_exit_code(lambda: fn() and 0) == 0
