"""What run_study reports and records: resumed runs, the fields of a record, each study's
own method input, and the retries of runs lost with a worker."""

import pytest
from sklearn.linear_model import LogisticRegression

from skldp.experiments import Method, RunsFile, RunSpec, Study, _runner, load_runs, run_study


def _plain(G, y, config):
    return G.features, y


def _first_three(G, y, config):
    return G.features[:, :3], y


def _n_features(est, X, y, masks):
    return {"accuracy": 0.5, "n_features": X.shape[1]}


def _fails(est, X, y, masks):
    raise ValueError("this run fails")


def _study(name="book", seeds=(0, 1), data=_plain, evaluate=_n_features, grid=None, **kw):
    method = Method(lambda ctx: LogisticRegression(), grid or {"C": [1.0, 2]},
                    role="raw-features",
                    data=data, evaluate=evaluate)
    return Study(name, ["german"], {"raw": method}, seeds=list(seeds), **kw)


def test_a_resumed_sweep_skips_the_recorded_runs_it_does_not_count_them_elsewhere(tmp_path):
    study = _study()
    first = run_study(study, tmp_path, backend="sequential", progress=False)
    assert len(first.done) == 4
    again = run_study(study, tmp_path, backend="sequential", progress=False)
    assert again.skipped == first.done and again.done == [] and again.elsewhere == []
    assert again.remaining == [] and again.failed == {} and again.missing == []


def test_each_record_says_which_run_it_is(tmp_path):
    study = _study()
    run_study(study, tmp_path, backend="sequential", progress=False, note="nightly, nice 10")
    recs = load_runs(tmp_path / "book_runs.jsonl", "book")
    assert [r["key"] for r in recs] == [s.key for s in study.runs()]
    for r in recs:
        spec = RunSpec(r["dataset"], r["method"], r["split"], r["seed"],
                       tuple(sorted(r["params"].items())))
        assert spec.key == r["key"] and r["study"] == "book"
        assert (r["dataset"], r["method"], r["split"]) == ("german", "raw", "random")
        assert r["sweep"] == "nightly, nice 10"
    assert {(r["seed"], r["params"]["C"]) for r in recs} == {(0, 1.0), (0, 2.0), (1, 1.0),
                                                             (1, 2.0)}


def test_each_study_gets_its_own_method_input(tmp_path):
    # two studies of one process, a method of the same name on the same dataset, each
    # with its own data function: the input built for one must not serve the other
    a = run_study(_study("first", seeds=(0,)), tmp_path, backend="sequential",
                  progress=False)
    b = run_study(_study("second", seeds=(0,), data=_first_three), tmp_path,
                  backend="sequential", progress=False)
    assert {r["metrics"]["n_features"] for r in a.records} == {27.0}
    assert {r["metrics"]["n_features"] for r in b.records} == {3.0}


def test_max_runs_must_be_an_int_not_a_bool(tmp_path):
    for bad in (True, 1.5):
        with pytest.raises(ValueError, match="max_runs must be an int >= 0"):
            run_study(_study(), tmp_path, progress=False, max_runs=bad)
    assert not (tmp_path / "book_runs.jsonl").exists()


def test_a_record_already_written_by_another_sweep_is_not_counted_done(tmp_path):
    import types
    path = tmp_path / "book_runs.jsonl"
    runs = RunsFile(path, "book")
    RunsFile(path, "book").append({"key": "k", "metrics": {"accuracy": 0.5}})
    result = _runner.SweepResult(path)
    bar = types.SimpleNamespace(update=lambda *a: None)
    _runner._collect({"key": "k", "metrics": {"accuracy": 0.7}, "wall_s": 0.0}, runs,
                     result, bar)
    _runner._collect({"key": "j", "metrics": {"accuracy": 0.7}, "wall_s": 0.0}, runs,
                     result, bar)
    assert result.done == ["j"]
    assert [r["metrics"]["accuracy"] for r in load_runs(path, "book")] == [0.5, 0.7]


# --- a worker that dies, simulated in this process ----------------------------------------
class BrokenProcessPool(Exception):
    """Named as concurrent.futures' error for a dead worker (what _lost_worker looks for)."""


def _dying_run_one(monkeypatch, attempts, killer_seed=1):
    real = _runner._run_one

    def run_one(study, spec, cache):
        attempts.append(spec.seed)
        if spec.seed == killer_seed:
            raise BrokenProcessPool("a worker died")
        return real(study, spec, cache)

    monkeypatch.setattr(_runner, "_run_one", run_one)


@pytest.mark.parametrize("retries, alone", [(0, 1), (1, 2), (2, 3)])
def test_runs_lost_with_a_worker_are_retried_alone_then_missing(tmp_path, monkeypatch,
                                                                retries, alone):
    # sequential: batches of two runs, results as a list, so a death loses the whole batch;
    # its runs are then dispatched one by one, and only the run that kills its worker
    # when alone uses up its retries
    attempts = []
    _dying_run_one(monkeypatch, attempts)
    study = Study("dying", ["german"], {"raw": Method(lambda ctx: LogisticRegression(),
                                                      role="raw-features", data=_plain,
                                                      evaluate=_n_features)},
                  seeds=[0, 1, 2])
    s0, s1, s2 = (s.key for s in study.runs())
    res = run_study(study, tmp_path, backend="sequential", retries=retries, progress=False)
    assert res.done == [s0, s2] and res.missing == [s1] and not res.failed
    assert attempts == [0, 1, 0] + [1] * alone + [2]
    assert [r["key"] for r in load_runs(tmp_path / "dying_runs.jsonl", "dying")] == [s0, s2]
    assert not list((tmp_path / "dying_claims").glob("*.claim"))


def test_a_run_that_failed_before_the_worker_died_is_not_run_again(tmp_path, monkeypatch):
    # streamed results (threading): run 0 fails and is reported before run 1 kills the
    # worker; only run 1 is lost
    attempts = []
    _dying_run_one(monkeypatch, attempts)
    study = _study("failing", seeds=(0, 1), evaluate=_fails, grid={"C": [1.0]})
    s0, s1 = (s.key for s in study.runs())
    res = run_study(study, tmp_path, backend="threading", n_jobs=1, retries=0,
                    progress=False)
    assert list(res.failed) == [s0] and res.missing == [s1] and not res.done
    assert attempts == [0, 1, 1]


def _sparse(G, y, config):
    import scipy.sparse as sp
    return sp.csr_matrix(G.features), y


def test_a_method_input_of_sparse_features_runs(tmp_path):
    # len() of a sparse matrix raises: every run of a method whose data function returned
    # sparse features (Cora's raw features, say) failed with "sparse array length is
    # ambiguous" before it fitted anything
    from skldp.experiments import fit_and_score
    res = run_study(_study("sparse", seeds=[0], data=_sparse, evaluate=fit_and_score,
                           grid={"max_iter": [50]}), tmp_path, progress=False)
    assert not res.failed and len(res.done) == 1


def _features_only(G, y, config):
    return G.features   # forgot y


def test_a_data_function_that_returns_no_pair_is_named(tmp_path):
    # it failed before any run with "too many values to unpack (expected 2)", which named
    # neither the study, the method nor its data function
    with pytest.raises(ValueError, match=r"Study 'pair', method 'raw': its data function "
                                         r"must return a pair \(G, y\), got ndarray"):
        run_study(_study("pair", seeds=[0], data=_features_only), tmp_path, progress=False)
    assert not (tmp_path / "pair_runs.jsonl").exists()
