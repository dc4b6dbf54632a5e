"""The registered ``solitude`` study: quick grid, data preparation, keys of the runs file."""


import numpy as np
import pytest
import scipy.sparse as sp

from skldp.datasets import load_dataset
from skldp.experiments import load_runs, validate_study
from studies import RUNS_DIR, get_study, list_studies
from studies.solitude import METHODS, largest_component_data

RUNS = RUNS_DIR / "solitude_runs.jsonl"


def test_solitude_quick_grid_validates():
    assert "solitude" in list_studies()
    quick = get_study("solitude").quick_variant()
    runs = quick.runs()
    assert quick.name == "solitude_quick"
    assert sorted(r.method for r in runs) == sorted(METHODS)
    assert {(r.dataset, r.param_dict.get("backbone", "gcn"), r.param_dict["eps_a"])
            for r in runs} == {("cora", "gcn", 8.0)}
    validate_study(quick)  # builds each method's estimator and sets backbone and eps_a


def test_largest_component_data_is_symmetric_and_connected():
    bunch = load_dataset("citeseer")
    G, y = largest_component_data(bunch.data, bunch.target, {"largest_component": True})
    A = G.adjacency
    assert (A != A.T).nnz == 0 and A.diagonal().sum() == 0
    assert G.n_nodes == len(y) < bunch.data.n_nodes
    from scipy.sparse.csgraph import connected_components
    assert connected_components(A, directed=False)[0] == 1
    G2, y2 = largest_component_data(bunch.data, bunch.target, {})
    assert G2.n_nodes == bunch.data.n_nodes and np.array_equal(y2, bunch.target)


def test_solitude_keys_are_the_recorded_runs():
    keys = [spec.key for spec in get_study("solitude").runs()]
    recorded = {r["key"] for r in load_runs(RUNS, "solitude")}
    assert len(keys) == len(set(keys)) == len(recorded) and set(keys) == recorded
    with pytest.raises(ValueError, match="solitude has the methods"):
        get_study("solitude", methods=["gat"])


def _graph(n):
    """A random symmetric graph of ``n`` nodes with 4 features and two alternating classes."""
    from skldp import GraphData
    rng = np.random.default_rng(0)
    A = sp.random(n, n, density=0.2, random_state=0, format="csr")
    A = ((A + A.T) > 0).astype(float)
    A.setdiag(0)
    A.eliminate_zeros()
    return GraphData(rng.random((n, 4)), A), np.arange(n) % 2


def test_graph_only_collects_no_features():
    # label propagation reads only the received graph: its users spend eps_a, not 1 + eps_a
    from skldp.accounting import privacy_report
    from studies.solitude import SolitudeRun
    G, y = _graph(30)
    run = SolitudeRun(kind="graph_only", eps_a=2.0, random_state=0).fit(G[:20], y[:20])
    assert not hasattr(run, "feature_mechanism_")
    assert privacy_report(G).local_epsilon == 2.0
    assert run.predict(G[20:]).shape == (10,)


def test_models_keep_the_epoch_of_the_best_validation_accuracy():
    # fit_on_train fits on the training and validation nodes; the model selects its epoch
    # on the validation nodes' accuracy; graph_only never reads their labels
    from studies.solitude import SolitudeRun, fit_on_train
    G, y = _graph(40)
    masks = (np.arange(40) < 20, (np.arange(40) >= 20) & (np.arange(40) < 30),
             np.arange(40) >= 30)
    run = SolitudeRun(kind="solitude", eps_a=2.0, random_state=0)
    fit_on_train(run, G, y, masks)
    clf = run.model_
    assert clf.selection == "accuracy"
    assert np.array_equal(clf.validation, masks[1])
    err = np.asarray(clf.validation_scores_)
    assert clf.best_epoch_ == int(np.argmin(err))
    assert clf.score(run.graph_in_[masks[1]], y[masks[1]]) == pytest.approx(1 - err.min())
    preds = []
    for labels in (y, np.where(masks[1], 1 - y, y)):
        go = SolitudeRun(kind="graph_only", eps_a=2.0, random_state=0)
        fit_on_train(go, G, labels, masks)
        preds.append(go.predict(G[masks[2]]))
    np.testing.assert_array_equal(*preds)


def test_the_authors_cora_recipe_is_lpgnn_with_label_kprop_and_no_patience():
    from studies.solitude import SolitudeRun
    params = SolitudeRun(kind="solitude_authors", backbone="sage")._model().get_params()
    assert {k: params[k] for k in ("x_steps", "y_steps", "normalization",
                                   "propagate_predictions", "center_features", "patience",
                                   "backbone", "epochs", "weight_decay")} == {
        "x_steps": 4, "y_steps": 2, "normalization": "sym", "propagate_predictions": True,
        "center_features": False, "patience": None, "backbone": "sage", "epochs": 500,
        "weight_decay": 1e-3}
    # a Cora row only
    runs = get_study("solitude").runs()
    assert {r.dataset for r in runs if r.method == "solitude_authors"} == {"cora"}
