"""A run recorded under another configuration of its study is never taken for one of its
runs: the sweep stops on it, ``redo_changed`` runs it again and its new record replaces it;
legacy records (no fingerprint) are taken as they are, and a migration stamps them."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skldp.experiments import (
    Method,
    StaleRunsError,
    Study,
    fingerprint_legacy_runs,
    load_runs,
    run_study,
    write_summary,
)
from skldp.experiments._fingerprint import IGNORED_PARAMS, digest

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = {"C": 1.0}   # what the factory builds: changed by the tests between two sweeps


def plain(G, y, config):
    return G.features, y


def logreg(ctx):
    return make_pipeline(StandardScaler(), LogisticRegression(C=SETTINGS["C"]))


def score_and_c(est, X, y, masks):
    train, val, test = masks
    est.fit(X[train | val], y[train | val])
    return {"accuracy": float(est.score(X[test], y[test])), "C": float(est[-1].C)}


def _study(**kw):
    return Study("fp", ["german"], {"lr": Method(logreg, role="raw-features", data=plain,
                                                 evaluate=score_and_c)},
                 seeds=[0, 1], metric="C", scale=1.0, digits=2, **kw)


@pytest.fixture
def settings(monkeypatch):
    monkeypatch.setitem(SETTINGS, "C", 1.0)
    return SETTINGS


def test_a_changed_fixed_parameter_stops_the_sweep_then_is_run_again(tmp_path, settings):
    path = tmp_path / "fp_runs.jsonl"
    first = run_study(_study(), tmp_path, progress=False)
    assert len(first.done) == 2
    assert all(r["fingerprint"] == first.fingerprints[r["key"]] for r in load_runs(path))
    before = path.read_bytes()

    settings["C"] = 0.25            # the factory now builds another estimator
    with pytest.raises(StaleRunsError) as err:
        run_study(_study(), tmp_path, progress=False)
    message = str(err.value)
    assert "Study 'fp': 2 of the 2 recorded runs" in message
    assert first.done[0] in message and "its estimator" in message and "C=0.25" in message
    assert "--redo-changed" in message and "redo_changed=True" in message
    assert path.read_bytes() == before                          # nothing run or dropped

    again = run_study(_study(), tmp_path, progress=False, redo_changed=True)
    assert sorted(again.redone) == sorted(again.done) == sorted(first.done)
    records = load_runs(path, "fp")
    assert len(path.read_bytes().splitlines()) == len(records) == 2   # one line per key
    assert {r["metrics"]["C"] for r in records} == {0.25}
    assert all(r["fingerprint"] == again.fingerprints[r["key"]] for r in records)
    page = write_summary(_study(), records, tmp_path)["markdown"].read_text()
    assert "| 0.25 ± 0.00 | 2 |" in page and "1.00 ±" not in page
    assert run_study(_study(), tmp_path, progress=False).done == []   # current now


def test_a_changed_config_or_data_function_is_named(tmp_path, settings):
    run_study(_study(configs={"german": {"level": 1}}), tmp_path, progress=False)
    with pytest.raises(StaleRunsError, match=r"configs for its dataset; configs\['german'\] "
                                             r"is now \{'level': 2\}"):
        run_study(_study(configs={"german": {"level": 2}}), tmp_path, progress=False)

    def other_plain(G, y, config):
        return G.features[:, :5], y

    study = _study(configs={"german": {"level": 1}})
    study.methods["lr"].data = other_plain
    with pytest.raises(StaleRunsError, match="changed: its method's data function"):
        run_study(study, tmp_path, progress=False)


def test_legacy_records_are_taken_and_the_migration_stamps_them_once(tmp_path, settings):
    path = tmp_path / "fp_runs.jsonl"
    first = run_study(_study(), tmp_path, progress=False)
    stamped = path.read_bytes()
    legacy = [json.loads(line) for line in stamped.splitlines()]
    for r in legacy:
        del r["fingerprint"]
    path.write_text("".join(json.dumps(r) + "\n" for r in legacy))
    settings["C"] = 0.25   # legacy: no fingerprint to compare, taken as it is
    res = run_study(_study(), tmp_path, progress=False)
    assert res.done == [] and sorted(res.legacy) == sorted(first.done)

    settings["C"] = 1.0    # the configuration the legacy records were made with
    assert fingerprint_legacy_runs(_study(), tmp_path) == {"stamped": 2, "fingerprinted": 0,
                                                           "outside": 0}
    assert path.read_bytes() == stamped                   # as a sweep writes them
    assert fingerprint_legacy_runs(_study(), tmp_path)["stamped"] == 0   # idempotent
    assert path.read_bytes() == stamped
    settings["C"] = 0.25   # stamped: a change is found now
    with pytest.raises(StaleRunsError):
        run_study(_study(), tmp_path, progress=False)


def test_the_fingerprint_ignores_device_n_jobs_and_verbose():
    from skldp.models import MLPHead
    assert {"device", "n_jobs", "verbose"} <= IGNORED_PARAMS
    assert digest(LogisticRegression(n_jobs=2, verbose=1)) == digest(LogisticRegression())
    assert digest(MLPHead(device="cpu")) == digest(MLPHead(device="auto"))
    assert digest(MLPHead(epochs=200)) == digest(MLPHead(epochs=200.0))   # as the keys
    assert digest(MLPHead(epochs=100)) != digest(MLPHead(epochs=200))
    assert digest(MLPHead(hidden_layer_sizes=(64,))) != digest(MLPHead(hidden_layer_sizes=(32,)))


FINGERPRINTS = '''
import json, sys
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from skldp.experiments import Method, Study, run_fingerprints
from skldp.mechanisms import HDSMechanism
from skldp.models import MLPHead

def noise(G, y, config):
    return G.with_features(G.features * config["scale"], source="public"), y

def make(ctx):
    return Pipeline([("hds", HDSMechanism(k=4, feature_range=(0, 18424), random_state=ctx.seed)),
                     ("clf", MLPHead(hidden_layer_sizes=(16,), device=sys.argv[1]))])

study = Study("p", ["german"], {"m": Method(make, {"hds__eps": [0.5, 1.0]}, data=noise)},
              seeds=[0, 1], configs={"german": {"scale": 0.5, "tags": {"a", "b", "c"}}})
print(json.dumps(run_fingerprints(study), sort_keys=True))
'''


def test_the_fingerprint_is_the_same_in_another_process(tmp_path):
    script = tmp_path / "fingerprints.py"
    script.write_text(textwrap.dedent(FINGERPRINTS))
    outs = []
    for seed, device in (("1", "cpu"), ("2", "auto")):   # set order, and the device
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED=seed, OMP_NUM_THREADS="1")
        outs.append(json.loads(subprocess.run(
            [sys.executable, str(script), device], env=env, cwd=tmp_path, check=True,
            capture_output=True, text=True).stdout))
    assert outs[0] == outs[1] and len(outs[0]) == 4
    assert all(fp is not None and len(set(fp.values())) == 5 for fp in outs[0].values())
    assert len({fp["estimator"] for fp in outs[0].values()}) == 4   # seed, eps


def test_the_page_of_a_partial_sweep_says_k_of_n(tmp_path, settings):
    res = run_study(_study(), tmp_path, progress=False, max_runs=1)
    text = write_summary(_study(), res.records, tmp_path)["markdown"].read_text()
    assert "Partial results: 1 of the study's 2 runs are recorded" in text
    res = run_study(_study(), tmp_path, progress=False)
    text = write_summary(_study(), res.records, tmp_path)["markdown"].read_text()
    assert "Partial" not in text


def _fake_studies(tmp_path):
    """The paper studies as the command finds them, with ``fp`` as their one study."""
    from types import SimpleNamespace

    from studies.pages import command_block, fill_blocks

    def write_page(name, records, pages_dir, runs_file=None, partial=None):
        values = sorted(r["metrics"]["C"] for r in records)
        return {"page": fill_blocks(Path(pages_dir) / f"{name}.md", {
            "table": f"C: {values}", "command": command_block(name, len(records),
                                                              partial=partial)})}

    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "fp.md").write_text("# fp\n<!-- generated: table -->\n<!-- end generated -->\n"
                                 "<!-- generated: command -->\n<!-- end generated -->\n")
    return SimpleNamespace(list_studies=lambda: ["fp"], get_study=lambda name: _study(),
                           RUNS_DIR=tmp_path / "runs", PAGES_DIR=pages, write_page=write_page)


def test_reproduce_stops_on_stale_runs_and_redo_changed_replaces_them(tmp_path, settings,
                                                                       monkeypatch, capsys):
    from skldp.__main__ import main
    from skldp.experiments import _cli
    fake = _fake_studies(tmp_path)
    monkeypatch.setattr(_cli, "paper_studies", lambda: fake)
    page = tmp_path / "pages" / "fp.md"
    argv = ["reproduce", "fp", "--no-progress"]
    assert main(argv + ["--max-runs", "1"]) == 0
    assert "Partial results: 1 of the 2 runs of this command are recorded" in page.read_text()
    assert main(argv) == 0
    assert "Partial" not in page.read_text() and "C: [1.0, 1.0]" in page.read_text()
    settings["C"] = 0.25
    with pytest.raises(SystemExit) as err:
        main(argv)
    assert "2 of the 2 recorded runs" in err.value.code and "--redo-changed" in err.value.code
    assert "C: [1.0, 1.0]" in page.read_text()                     # the page left as it was
    capsys.readouterr()
    assert main(argv + ["--redo-changed"]) == 0
    assert "2 run(s) recorded under another configuration were run again" in \
        capsys.readouterr().out
    assert "C: [0.25, 0.25]" in page.read_text()


STUDY_MODULE = '''
import functools
from sklearn.base import BaseEstimator

class Run(BaseEstimator):
    """A study's own estimator: it fixes a setting in its code."""

    def __init__(self, eps=1.0):
        self.eps = eps

    def fit(self, X, y):
        self.hidden_ = 32   # the setting
        return self

@functools.lru_cache
def _masks(n):
    return n // 2

def data(G, y, config):
    """The method's input."""
    return _masks(len(y)), y
'''

DIGESTS = '''
import json, sys
sys.path.insert(0, ".")
from fpmod import Run, data
from skldp.experiments._fingerprint import digest
print(json.dumps([digest(Run()), digest(data)]))
'''


def _digests(tmp_path, module):
    (tmp_path / "fpmod.py").write_text(module)
    (tmp_path / "digests.py").write_text(DIGESTS)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return json.loads(subprocess.run([sys.executable, "digests.py"], env=env, cwd=tmp_path,
                                     check=True, capture_output=True, text=True).stdout)


def test_the_code_of_a_studys_own_class_counts_and_its_comments_do_not(tmp_path):
    before = _digests(tmp_path, STUDY_MODULE)
    hidden = _digests(tmp_path, STUDY_MODULE.replace("= 32", "= 64"))
    assert hidden[0] != before[0] and hidden[1] == before[1]
    masks = _digests(tmp_path, STUDY_MODULE.replace("n // 2", "n // 3"))   # a cached helper
    assert masks[1] != before[1] and masks[0] == before[0]
    edited = (STUDY_MODULE.replace("# the setting", "# the hidden size")
              .replace('"""The method\'s input."""', '"""Its input."""\n    # reads config')
              .replace("self.hidden_ = 32", "self.hidden_  =  32"))
    assert _digests(tmp_path, edited) == before


def test_a_run_recorded_without_a_fingerprint_is_said_with_its_reason(tmp_path, monkeypatch):
    # its configuration could not be digested before the sweep: the record is legacy,
    # so no later change of it would be found; the sweep says so instead of staying silent
    import skldp.experiments._runner as runner

    def fails(*args, **kwargs):
        raise TypeError("cannot digest this estimator")

    monkeypatch.setattr(runner, "run_fingerprint", fails)
    with pytest.warns(RuntimeWarning, match="without a configuration fingerprint.*"
                                            "cannot digest this estimator"):
        result = run_study(_study(), tmp_path, progress=False)
    assert len(result.done) == 2 and set(result.fingerprint_failures) == set(result.done)
    assert all("fingerprint" not in r for r in load_runs(tmp_path / "fp_runs.jsonl", "fp"))


@pytest.mark.parametrize("options, message", [
    ({"backend": "lokyy"}, "backend must be one of"),
    ({"n_jobs": 0}, "n_jobs must be"),
    ({"n_jobs": -2}, "n_jobs must be"),
    ({"n_jobs": 1.5}, "n_jobs must be"),
    ({"scheduler": "tcp://head:8786"}, "needs backend='dask' or 'ray'"),
])
def test_bad_sweep_options_are_refused_before_redo_changed_drops_anything(
        tmp_path, settings, options, message):
    # before: the stale records were dropped (the file rewritten), then the backend or
    # n_jobs failed at dispatch, so nothing replaced them; a scheduler with loky was ignored
    path = tmp_path / "fp_runs.jsonl"
    run_study(_study(), tmp_path, progress=False)
    before = path.read_bytes()
    settings["C"] = 0.25
    with pytest.raises(ValueError, match=message):
        run_study(_study(), tmp_path, progress=False, redo_changed=True, **options)
    assert path.read_bytes() == before
