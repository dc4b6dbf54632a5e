"""A pipeline saved in one process and loaded in another: what works, and errors that say
what to save (the user guide's "Saving a fitted pipeline")."""

import subprocess
import sys
import textwrap
from pathlib import Path

import joblib
import numpy as np
import pytest

from skldp import GraphData

ROOT = Path(__file__).resolve().parents[1]

SAVE = textwrap.dedent("""
    import sys, joblib, numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from skldp import GraphData
    from skldp.mechanisms import MultiBitMechanism
    from skldp.privacy import forget_secrets
    from skldp.propagation import KProp

    rng = np.random.default_rng(0)
    X, y = rng.random((30, 2)), np.arange(30) % 2
    A = np.eye(30, k=1) + np.eye(30, k=-1)
    G = GraphData(X, A, node_ids=[f"u{i}" for i in range(30)])
    pipe = Pipeline([("mb", MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)),
                     ("kp", KProp(steps=1)), ("clf", LogisticRegression())]).fit(G[:20], y[:20])
    out = sys.argv[1]
    np.save(out + "/pred.npy", pipe.predict(G))
    joblib.dump(pipe, out + "/raw.joblib")
    forget_secrets(pipe, G)
    joblib.dump((pipe, G), out + "/forgot.joblib")
""")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    out = tmp_path_factory.mktemp("saved")
    res = subprocess.run([sys.executable, "-c", SAVE, str(out)], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr
    return out


def _rebuilt():
    rng = np.random.default_rng(0)
    X = rng.random((30, 2))
    A = np.eye(30, k=1) + np.eye(30, k=-1)
    return GraphData(X, A, node_ids=[f"u{i}" for i in range(30)])


def test_the_pipeline_saved_with_its_graph_predicts_in_a_new_process(saved):
    pipe, G = joblib.load(saved / "forgot.joblib")
    np.testing.assert_array_equal(pipe.predict(G), np.load(saved / "pred.npy"))


def test_a_rebuilt_graph_is_refused_with_advice_to_load_the_saved_one(saved):
    # the advice was population=<the GraphData it was fitted on>, which no new process has
    pipe, _ = joblib.load(saved / "forgot.joblib")
    with pytest.raises(ValueError, match=r"fitted on other users.*loaded from a file.*save "
                                         r"that GraphData with the pipeline.*"
                                         r"skldp\.privacy\.forget_secrets"):
        pipe.predict(_rebuilt())


def test_a_pipeline_saved_with_its_secrets_names_forget_secrets(saved):
    # the message said "fit the mechanisms first": they were fitted
    pipe = joblib.load(saved / "raw.joblib")
    _, G = joblib.load(saved / "forgot.joblib")
    with pytest.raises(RuntimeError, match=r"loaded from a file whose mechanisms kept their "
                                           r"secret.*skldp\.privacy\.forget_secrets\(pipe, G\)"
                                           r".*save G with it"):
        pipe.predict(G)
