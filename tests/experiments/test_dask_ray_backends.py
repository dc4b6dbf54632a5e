"""Sweeps on a real local Dask cluster (and Ray): same records as serial, graph loaded once."""

import os
import pickle

import pytest
from joblib._parallel_backends import ThreadingBackend
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from skldp.experiments import Method, Study, _runner, run_study
from skldp.mechanisms import HDSMechanism


def hds_logreg(ctx):
    # german (bundled): 1000 nodes, 27 raw numeric features in [0, 18424] (declared
    # public here)
    return Pipeline([("hds", HDSMechanism(k=4, feature_range=(0, 18424), random_state=ctx.seed)),
                     ("clf", LogisticRegression(max_iter=100))])


def _study():
    return Study("dist", ["german"], {"hds": Method(hds_logreg, {"hds__eps": [0.5, 2.0]})},
                 seeds=[0, 1, 2])


def _metrics(res):
    return {r["key"]: (r["metrics"], r["eps_spent"]) for r in res.records}


def _loads(dask_worker=None):
    return dict(_runner._LOADS)


@pytest.mark.slow  # a real cluster starts: about 30 s on 2 shared cores
def test_local_dask_cluster_equals_serial_and_ships_no_graph(tmp_path):
    distributed = pytest.importorskip("distributed")
    study = _study()
    serial = run_study(study, tmp_path / "serial", progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        res = run_study(study, tmp_path / "dask", backend="dask",
                        scheduler=cluster.scheduler_address, progress=False)
        loads = client.run(_loads)
        pids = {r["pid"] for r in res.records}
    assert _metrics(res) == _metrics(serial)
    assert len(res.done) == 6 and not res.missing
    # The workers ran the runs (not this process) and each loaded the graph once, by
    # name, however many runs it did: the graph never travels with a task.
    assert len(loads) == 2 and all(v.get("german", 0) <= 1 for v in loads.values())
    assert sum(v.get("german", 0) for v in loads.values()) == len(pids) >= 1
    # What a task carries: the study (factories by reference), one run spec, the cache path.
    cloudpickle = pytest.importorskip("cloudpickle")

    from skldp.datasets import load_dataset
    task = cloudpickle.dumps((_runner._run_one, study, study.runs()[0], None))
    graph = pickle.dumps(load_dataset("german").data)
    assert len(task) < 5_000 < len(graph)


@pytest.mark.slow
def test_ray_equals_serial(tmp_path):
    ray = pytest.importorskip("ray")
    study = _study()
    serial = run_study(study, tmp_path / "serial", progress=False)
    # Ray workers import the factories by module: put this test folder on their path.
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join([here, os.path.dirname(os.path.dirname(here))])
    ray.init(num_cpus=2, include_dashboard=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    try:
        res = run_study(study, tmp_path / "ray", backend="ray", n_jobs=2, progress=False)
    finally:
        ray.shutdown()
    assert _metrics(res) == _metrics(serial)
    assert len(res.done) == 6 and not res.missing


def test_unknown_backend(tmp_path):
    with pytest.raises(ValueError, match="backend must be one of"):
        run_study(_study(), tmp_path, backend="spark", progress=False)


class _RayLike(ThreadingBackend):
    """A joblib backend that, like Ray's, gives no result generator; 8 CPUs in all."""

    supports_return_generator = False

    def effective_n_jobs(self, n_jobs):
        return 8 if n_jobs == -1 else n_jobs


@pytest.mark.parametrize("options, calls", [
    # an existing cluster, n_jobs left at 1: joblib ran every run in this process, one at
    # a time; now all of the cluster's CPUs
    ({"scheduler": "ray://head:10001"}, [(-1, 6)]),
    # -1: the cluster's CPUs, two runs each in flight (before: batches of 2 runs)
    ({"n_jobs": -1}, [(-1, 6)]),
    ({"scheduler": "ray://head:10001", "n_jobs": 2}, [(2, 4), (2, 2)]),   # as asked
])
def test_ray_runs_on_every_cpu_of_its_cluster(tmp_path, monkeypatch, options, calls):
    import contextlib

    import joblib

    @contextlib.contextmanager
    def ray_like(backend, n_jobs, scheduler):
        with joblib.parallel_config(backend=_RayLike()):
            yield None

    seen = []

    class Recording:
        def __init__(self, n_jobs, return_as):
            self.n_jobs = n_jobs

        def __call__(self, tasks):
            tasks = list(tasks)
            seen.append((self.n_jobs, len(tasks)))
            return [f(*a, **k) for f, a, k in tasks]

    monkeypatch.setattr(_runner, "parallel_backend", ray_like)
    monkeypatch.setattr(joblib, "Parallel", Recording)
    res = run_study(_study(), tmp_path, backend="ray", progress=False, **options)
    assert len(res.done) == 6 and seen == calls
