"""A link predictor's fit refuses its parameters, its input's kind and number of labels,
and its ``validation`` pairs before it notes any read: it noted the reads of the raw
features and edges (epsilon inf) first, and under a budget a refused parameter met
BudgetExceededError instead of its ValueError."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.model_selection import random_edge_split
from skldp.models import HadamardLinkPredictor, VGAELinkPredictor

N = 40
MODELS = {
    "VGAE": lambda **kw: VGAELinkPredictor(**kw),
    "Hadamard": lambda **kw: HadamardLinkPredictor(**kw),
    "Hadamard mlp": lambda **kw: HadamardLinkPredictor(head="mlp", **kw),
}


def _split(budget):
    rng = np.random.default_rng(0)
    A = np.triu(rng.random((N, N)) < 0.2, 1)
    G = GraphData(rng.normal(size=(N, 3)), sp.csr_array((A | A.T).astype(float)),
                  budget=budget)
    return G, random_edge_split(G, val_size=0.2, test_size=0.2, random_state=0)


CASES = {   # (parameters, the fit's arguments from the split, the error)
    "validation without early stopping": (
        dict(early_stopping=False), "validation", "only used for early stopping"),
    "validation of one column": (dict(), "one column", "shape"),
    "validation outside the fit pairs": (dict(), "outside", "none of the"),
    "validation of all the fit pairs": (dict(), "all", "all .* pairs"),
    "validation_fraction 1": (dict(validation_fraction=1.0), "plain", "validation_fraction"),
    "labels of another number": (dict(), "short y", "rows"),
    "a graph, not pairs": (dict(), "graph", "PairData"),
}


def _arguments(how, G, split):
    P_tr, P_va, _, y_tr, y_va, _ = split
    P, y = P_tr.concat(P_va), np.r_[y_tr, y_va]
    return {
        "validation": (P, y, dict(validation=P_va.pairs)),
        "one column": (P, y, dict(validation=P_va.pairs[:, 0])),
        "outside": (P_tr, y_tr, dict(validation=P_va.pairs)),
        "all": (P, y, dict(validation=P.pairs)),
        "plain": (P, y, {}),
        "short y": (P, y[:-1], {}),
        "graph": (G, np.arange(N) % 2, {}),
    }[how]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("budget", [None, 5.0])
def test_a_refused_fit_charges_nothing(model, case, budget):
    params, how, error = CASES[case]
    G, split = _split(budget)
    X, y, more = _arguments(how, G, split)
    est = MODELS[model](epochs=2, device="cpu", random_state=0,
                        **{"early_stopping": True, **params, **more})
    with pytest.raises((ValueError, TypeError), match=error):
        est.fit(X, y)
    assert len(G.ledger) == 0


@pytest.mark.parametrize("budget", [None, 5.0])
def test_a_refused_hidden_layer_size_charges_nothing(budget):
    G, (P_tr, _, _, y_tr, _, _) = _split(budget)
    est = HadamardLinkPredictor(head="mlp", hidden_layer_sizes=(8, 0), epochs=2,
                                device="cpu", random_state=0)
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        est.fit(P_tr, y_tr)
    assert len(G.ledger) == 0


@pytest.mark.parametrize("model", sorted(MODELS))
def test_a_fit_that_is_not_refused_notes_its_reads(model):
    """(the reads are still noted: the ledger above is empty for the refusal's sake)"""
    G, (P_tr, _, _, y_tr, _, _) = _split(None)
    MODELS[model](epochs=2, device="cpu", random_state=0).fit(P_tr, y_tr)
    assert len(G.ledger) > 0


@pytest.mark.parametrize("bad", ["short y", "short sample_weight"])
@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("budget", [None, 5.0])
def test_a_refused_score_charges_nothing(model, bad, budget):
    """score compares the numbers of pairs, labels and weights (the call's own arguments)
    before the scoring notes its reads of another graph's raw features and edges."""
    _, (P_tr, _, _, y_tr, _, _) = _split(None)
    est = MODELS[model](epochs=2, early_stopping=False, device="cpu",
                        random_state=0).fit(P_tr, y_tr)
    G, (_, _, P_te, _, _, y_te) = _split(budget)   # a graph of other users
    y, w = (y_te[:-1], None) if bad == "short y" else (y_te, np.ones(len(y_te) - 1))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        est.score(P_te, y, sample_weight=w)
    assert len(G.ledger) == 0
