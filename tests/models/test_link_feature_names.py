"""The link predictors record the node features' names at fit (``feature_names_in_``)
and refuse other names when scoring, before any read is noted, as the node classifiers
do: they recorded nothing, and scored a graph with its columns in another order."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.model_selection import PairData, random_edge_split
from skldp.models import HadamardLinkPredictor, VGAELinkPredictor

N = 40
MODELS = {
    "VGAE": VGAELinkPredictor,
    "Hadamard": HadamardLinkPredictor,
}


def _graph(names, budget=None, X=None):
    rng = np.random.default_rng(0)
    A = np.triu(rng.random((N, N)) < 0.2, 1)
    X = rng.normal(size=(N, 3)) if X is None else X
    return GraphData(X, sp.csr_array((A | A.T).astype(float)), feature_names=names,
                     budget=budget)


def _fitted(model, names):
    G = _graph(names)
    P_tr, _, P_te, y_tr, _, y_te = random_edge_split(G, val_size=0.2, test_size=0.2,
                                                     random_state=0)
    est = MODELS[model](epochs=2, early_stopping=False, device="cpu", random_state=0)
    return est.fit(P_tr, y_tr), P_te, y_te


@pytest.mark.parametrize("model", sorted(MODELS))
def test_names_are_recorded(model):
    est, _, _ = _fitted(model, ["a", "b", "c"])
    np.testing.assert_array_equal(est.feature_names_in_, ["a", "b", "c"])
    assert est.feature_names_in_.dtype == object
    est, _, _ = _fitted(model, None)
    assert not hasattr(est, "feature_names_in_")


@pytest.mark.parametrize("how", ["decision_function", "predict_proba", "predict", "score"])
@pytest.mark.parametrize("budget", [None, 5.0])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_other_names_are_refused_before_any_read(model, budget, how):
    est, P_te, y_te = _fitted(model, ["a", "b", "c"])
    G = _graph(["c", "b", "a"], budget=budget)   # the same graph, columns renamed
    P = PairData(G, P_te.pairs)
    args = (P, y_te) if how == "score" else (P,)
    with pytest.raises(ValueError, match="feature names should match"):
        getattr(est, how)(*args)
    assert len(G.ledger) == 0


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_same_names_are_scored(model):
    est, P_te, y_te = _fitted(model, ["a", "b", "c"])
    assert 0 <= est.score(P_te, y_te) <= 1
