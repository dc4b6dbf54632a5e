"""Users of plain arrays across processes. A private step on a plain array in a Ray worker
(no parent process) was not refused: its spends reached no report (0.5 printed under
joblib's Ray backend, 8 with n_jobs=1)."""

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from skldp.mechanisms import MultiBitMechanism

ROOT = Path(__file__).resolve().parents[2]
# what a worker process started on its own (Ray's, a Dask worker without a nanny) needs on
# its path: this skldp, and this file (its functions are pickled by reference)
WORKER_PATH = os.pathsep.join([str(Path(__file__).resolve().parent), str(ROOT)])

def _perturb_a_plain_array(seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X = np.random.default_rng(seed).random((10, 3))
        return MultiBitMechanism(eps=1.0, feature_range=(0, 1)).fit_transform(X).shape


def test_a_private_step_on_a_plain_array_is_refused_in_a_ray_worker():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": WORKER_PATH}})
    try:
        assert _perturb_a_plain_array(0) == (10, 3)   # in the driver: fine
        task = ray.remote(_perturb_a_plain_array)
        with pytest.raises(RuntimeError, match="plain array ran in a worker process"):
            ray.get(task.remote(1))
    finally:
        ray.shutdown()


def _dask_worker_refuses(client):
    try:
        client.submit(_perturb_a_plain_array, 0, pure=False).result(timeout=120)
    except RuntimeError as exc:
        assert "plain array ran in a worker process" in str(exc)
        return True
    return False


@pytest.mark.slow  # three Dask clusters start (5-10 s)
def test_dask_workers_in_other_processes_refuse_and_threads_of_this_one_do_not():
    distributed = pytest.importorskip("distributed")
    kw = {"n_workers": 1, "threads_per_worker": 1, "dashboard_address": None}
    with distributed.LocalCluster(processes=False, **kw) as cluster, \
            distributed.Client(cluster) as client:
        assert not _dask_worker_refuses(client)   # this process: its registry is ours
    with distributed.LocalCluster(processes=True, host="127.0.0.1", **kw) as cluster, \
            distributed.Client(cluster) as client:
        assert _dask_worker_refuses(client)   # a nanny's child process
    # a worker without a nanny is a process of its own (no parent process either)
    with distributed.LocalCluster(n_workers=0, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        worker = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address,
             "--no-nanny", "--nthreads", "1", "--no-dashboard"], cwd=ROOT,
            env={**os.environ, "PYTHONPATH": WORKER_PATH},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with distributed.Client(cluster) as client:
                client.wait_for_workers(1, timeout=60)
                assert _dask_worker_refuses(client)
        finally:
            worker.terminate()
            worker.wait()
