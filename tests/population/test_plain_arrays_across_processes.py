"""Users of plain arrays across processes. A search over a plain array, saved and loaded in
a new process, reported the refit's epsilon alone (0.5 where the fitting process printed
8, audit lower bound 3.94): the ledgers of the folds stayed in the fitting process. And a
private step on a plain array in a Ray worker (no parent process) was not refused: its
spends reached no report (0.5 printed under joblib's Ray backend, 8 with n_jobs=1)."""

import copy
import dataclasses
import json
import os
import pickle
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import joblib
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.mechanisms import MultiBitMechanism
from skldp.population._population import plain_array_ledgers

ROOT = Path(__file__).resolve().parents[2]
# what a worker process started on its own (Ray's, a Dask worker without a nanny) needs on
# its path: this skldp, and this file (its functions are pickled by reference)
WORKER_PATH = os.pathsep.join([str(Path(__file__).resolve().parent), str(ROOT)])

# a report field by field, and as printed (the scripts below write it as JSON)
FIELDS = "lambda rep: {'fields': dataclasses.asdict(rep), 'text': str(rep)}"


def _fields(rep):
    return json.loads(json.dumps({"fields": dataclasses.asdict(rep), "text": str(rep)}))


SAVE = textwrap.dedent("""
    import dataclasses, json, sys, warnings, joblib, numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, KFold
    from sklearn.pipeline import Pipeline
    from skldp.accounting import privacy_report
    from skldp.mechanisms import MultiBitMechanism
    from skldp.population._population import plain_array_ledgers

    warnings.simplefilter("ignore")   # (each fold's scoring refuses the held-out array)
    out = sys.argv[1]
    rng = np.random.default_rng(0)
    X = rng.random((60, 3)); y = (X[:, 0] > .5).astype(int)
    first = MultiBitMechanism(eps=1.0, feature_range=(0, 1))
    first.fit_transform(X[:20])
    joblib.dump(first, out + "/first.joblib")   # saved before the search ran
    pipe = Pipeline([("mech", MultiBitMechanism(eps=1.0, feature_range=(0, 1))),
                     ("clf", LogisticRegression())])
    search = GridSearchCV(pipe, {"mech__eps": [0.5, 2.0]}, cv=KFold(3)).fit(X, y)
    joblib.dump(search, out + "/search.joblib")
    rep = privacy_report(search)
    json.dump({"epsilon": rep.local_epsilon, "plain_arrays": rep.plain_arrays,
               "refit": search.best_params_["mech__eps"],
               "n_ledgers": len(plain_array_ledgers()), "report": (%s)(rep)},
              open(out + "/saved.json", "w"))
""" % FIELDS)


def _save(out):
    res = subprocess.run([sys.executable, "-c", SAVE, str(out)], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr
    return json.loads((out / "saved.json").read_text())


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Two processes that ran the same script on the same array: folders and what each
    process's report printed."""
    a, b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    return a, b, _save(a), _save(b)


def test_a_search_on_a_plain_array_reports_in_a_new_process_what_it_printed_there(saved):
    a, _, printed, _ = saved
    # the first array (1), three training folds at 0.5 and 2 each, the refit
    assert printed["plain_arrays"] and \
        printed["epsilon"] == pytest.approx(1 + 3 * 2.5 + printed["refit"])
    rep = privacy_report(joblib.load(a / "search.joblib"))
    assert rep.plain_arrays and rep.local_epsilon == pytest.approx(printed["epsilon"])
    assert "plain arrays carry no user ids" in str(rep) and "at most" in str(rep)
    # field by field: the folds' ledgers were saved as summaries, without their keys
    assert _fields(rep) == printed["report"]


def test_loading_again_and_another_estimator_of_that_process_counts_nothing_twice(saved):
    a, _, printed, _ = saved
    first = joblib.load(a / "first.joblib")   # saved when only its own array was known
    search, again = joblib.load(a / "search.joblib"), joblib.load(a / "search.joblib")
    for est in (first, search, again, joblib.load(a / "first.joblib")):
        assert privacy_report(est).local_epsilon == pytest.approx(printed["epsilon"])
    assert _fields(privacy_report(search)) == printed["report"]
    assert len(plain_array_ledgers()) == printed["n_ledgers"]


def test_a_plain_array_perturbed_after_loading_adds_to_the_loaded_report(saved):
    a, _, printed, _ = saved
    search = joblib.load(a / "search.joblib")
    here = MultiBitMechanism(eps=3.0, feature_range=(0, 1))
    here.fit_transform(np.random.default_rng(1).random((10, 3)))
    for est in (search, here):   # as in the process that fitted the search
        assert privacy_report(est).local_epsilon == pytest.approx(printed["epsilon"] + 3.0)


def test_two_processes_that_perturbed_the_same_array_are_both_counted(saved):
    # the same content in two processes: two sets of reports (other secrets), not one
    a, b, printed_a, printed_b = saved
    search_a, search_b = joblib.load(a / "search.joblib"), joblib.load(b / "search.joblib")
    total = printed_a["epsilon"] + printed_b["epsilon"]
    assert privacy_report(search_a).local_epsilon == pytest.approx(total)
    assert privacy_report(search_b).local_epsilon == pytest.approx(total)


CHAIN = textwrap.dedent("""
    import dataclasses, json, pickle, sys, warnings, joblib, numpy as np
    from skldp.accounting import privacy_report
    from skldp.mechanisms import MultiBitMechanism

    warnings.simplefilter("ignore")
    folder = sys.argv[1]
    here = MultiBitMechanism(eps=3.0, feature_range=(0, 1))
    here.fit_transform(np.random.default_rng(2).random((10, 3)))
    pickle.dumps(here)   # this process's ledgers listed for saving before it loads any
    search = joblib.load(folder + "/search.joblib")
    joblib.dump(search, folder + "/chain.joblib")
    json.dump((%s)(privacy_report(search)), open(folder + "/chain.json", "w"))
""" % FIELDS)


def test_an_estimator_saved_again_by_the_process_that_loaded_it_carries_every_ledger(saved):
    # a chain of processes: the second only loads and saves again, after a plain array of
    # its own; the third reports what the first printed, and the second's array
    a, _, printed, _ = saved
    res = subprocess.run([sys.executable, "-c", CHAIN, str(a)], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr
    rep = privacy_report(joblib.load(a / "chain.joblib"))
    assert rep.plain_arrays and rep.local_epsilon == pytest.approx(printed["epsilon"] + 3.0)
    assert _fields(rep) == json.loads((a / "chain.json").read_text())   # (saved as summaries)


TWICE = textwrap.dedent("""
    import dataclasses, json, sys, warnings, joblib, numpy as np
    from skldp.accounting import privacy_report
    from skldp.mechanisms import MultiBitMechanism

    warnings.simplefilter("ignore")
    folder = sys.argv[1]
    rng = np.random.default_rng(0)
    X, Z = rng.random((30, 3)), rng.random((20, 3))
    a = MultiBitMechanism(eps=1.0, feature_range=(0, 1))
    a.fit_transform(X)
    joblib.dump(a, folder + "/a.joblib")   # X's ledger at 1
    MultiBitMechanism(eps=4.0, feature_range=(0, 1)).fit_transform(Z)
    b = MultiBitMechanism(eps=2.0, feature_range=(0, 1))
    b.fit_transform(X)
    joblib.dump(b, folder + "/b.joblib")   # X's ledger at 3, and Z's at 4
    json.dump((%s)(privacy_report(b)), open(folder + "/b.json", "w"))
""" % FIELDS)


@pytest.mark.parametrize("order", [("a", "b"), ("b", "a")])
def test_of_two_copies_of_a_ledger_saved_at_different_times_the_newer_counts(tmp_path, order):
    # the saving process has ended (its journals are gone): each loaded estimator reports
    # the newer copy of X's ledger, whichever estimator holds it and whichever came first
    res = subprocess.run([sys.executable, "-c", TWICE, str(tmp_path)], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr
    loaded = {name: joblib.load(tmp_path / f"{name}.joblib") for name in order}
    for est in loaded.values():
        assert privacy_report(est).local_epsilon == pytest.approx(1 + 2 + 4)
    assert _fields(privacy_report(loaded["b"])) == json.loads((tmp_path / "b.json").read_text())


def test_a_copy_of_this_process_s_ledgers_is_not_saved_beside_them():
    # loaded back here (joblib.load, a worker's return, deepcopy): our ledgers read the
    # journal to its end, so their copies add nothing but size
    X = np.random.default_rng(0).random((500, 3))
    MultiBitMechanism(eps=1.0, feature_range=(0, 1)).fit_transform(X)
    small = MultiBitMechanism(eps=2.0, feature_range=(0, 1))
    small.fit_transform(X[:10])
    size = len(pickle.dumps(small))
    back = pickle.loads(pickle.dumps(small))
    copy.deepcopy(small)
    assert len(pickle.dumps(small)) == size
    assert privacy_report(back).local_epsilon == pytest.approx(3.0)


def test_a_small_estimator_s_pickle_does_not_grow_with_the_other_plain_arrays():
    # the other ledgers are saved without their users' keys (50k rows: 400 KB of keys)
    rng = np.random.default_rng(0)
    MultiBitMechanism(eps=1.0, feature_range=(0, 1)).fit_transform(rng.random((100, 2)))
    small = MultiBitMechanism(eps=2.0, feature_range=(0, 1))
    small.fit_transform(rng.random((10, 2)))
    size = len(pickle.dumps(small))
    MultiBitMechanism(eps=1.0, feature_range=(0, 1)).fit_transform(rng.random((50_000, 2)))
    assert len(pickle.dumps(small)) - size < 4_000   # one more summary
    assert privacy_report(pickle.loads(pickle.dumps(small))).local_epsilon == \
        pytest.approx(4.0)


LOAD = textwrap.dedent("""
    import dataclasses, json, sys, joblib
    from skldp.accounting import privacy_report

    rep = privacy_report(joblib.load(sys.argv[1] + "/small.joblib"))
    json.dump((%s)(rep), open(sys.argv[1] + "/loaded.json", "w"))
""" % FIELDS)


def test_a_summary_reads_on_while_its_journal_is_there(tmp_path):
    # loaded while this process is alive: the other array's later collection counts, after
    # those it held when saved, as with the ledger itself
    rng = np.random.default_rng(0)
    X = rng.random((40, 2))
    MultiBitMechanism(eps=1.0, feature_range=(0, 1)).fit_transform(X)
    small = MultiBitMechanism(eps=2.0, feature_range=(0, 1))
    small.fit_transform(rng.random((10, 2)))
    joblib.dump(small, tmp_path / "small.joblib")
    MultiBitMechanism(eps=4.0, feature_range=(0, 1)).fit_transform(X)   # X's ledger grows
    res = subprocess.run([sys.executable, "-c", LOAD, str(tmp_path)], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr
    rep = privacy_report(small)
    assert rep.local_epsilon == pytest.approx(2 + 1 + 4)
    assert json.loads((tmp_path / "loaded.json").read_text()) == _fields(rep)


def test_a_graph_data_ledger_is_saved_without_the_plain_arrays():
    X = np.random.default_rng(0).random((30, 3))
    MultiBitMechanism(eps=2.0, feature_range=(0, 1)).fit_transform(X)   # a plain array
    G = GraphData(X)
    pipe = Pipeline([("mech", MultiBitMechanism(eps=1.0, feature_range=(0, 1))),
                     ("clf", LogisticRegression())]).fit(G, np.arange(30) % 2)
    assert set(G.ledger.__getstate__()) == set(pickle.loads(pickle.dumps(G.ledger)).__dict__) \
        - {"_lock", "_per_user"} and "_plain" not in vars(G.ledger)
    n = len(plain_array_ledgers())
    rep = privacy_report(pickle.loads(pickle.dumps(pipe)))
    assert not rep.plain_arrays and rep.local_epsilon == pytest.approx(1.0)
    assert len(plain_array_ledgers()) == n


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
