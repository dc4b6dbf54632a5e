"""VGAELinkPredictor refuses a directed graph before it notes any read, at fit and at
every scoring path: it noted the read of the raw features (epsilon inf) first, and
under a budget met BudgetExceededError instead of its ValueError. The refusal itself is
charged by the rule of refusals (an answer about the edges once they are protected)."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.mechanisms import EdgeRR
from skldp.model_selection import PairData, random_edge_split
from skldp.models import VGAELinkPredictor

N = 40
PAIRS = np.array([[0, 1], [2, 3], [4, 5], [6, 7]])


def _graph(directed, budget=None):
    rng = np.random.default_rng(0)
    A = np.triu(rng.random((N, N)) < 0.2, 1)
    A = A if directed else A | A.T
    return GraphData(rng.normal(size=(N, 3)), sp.csr_array(A.astype(float)), budget=budget)


@pytest.mark.parametrize("budget", [None, 5.0])
def test_a_directed_graph_refused_at_fit_charges_nothing(budget):
    G = _graph(directed=True, budget=budget)
    est = VGAELinkPredictor(epochs=2, early_stopping=False, device="cpu", random_state=0)
    with pytest.raises(ValueError, match="undirected graph"):
        est.fit(PairData(G, PAIRS), np.array([1, 0, 1, 0]))
    assert len(G.ledger) == 0


@pytest.mark.parametrize("how", ["decision_function", "predict_proba", "predict", "embed",
                                 "score"])
@pytest.mark.parametrize("budget", [None, 5.0])
def test_a_directed_graph_refused_at_scoring_charges_nothing(budget, how):
    P_tr, _, _, y_tr, _, _ = random_edge_split(_graph(directed=False), val_size=0.2,
                                               test_size=0.2, random_state=0)
    est = VGAELinkPredictor(epochs=2, early_stopping=False, device="cpu", random_state=0)
    est.fit(P_tr, y_tr)
    G = _graph(directed=True, budget=budget)
    P = PairData(G, PAIRS)
    args = (P, np.array([1, 0, 1, 0])) if how == "score" else (P,)
    with pytest.raises(ValueError, match="undirected graph"):
        getattr(est, how)(*args)
    assert len(G.ledger) == 0


@pytest.mark.filterwarnings("ignore:EdgeRR")   # (the directed graph's warning)
def test_the_refusal_is_still_charged_when_the_edges_are_protected():
    # whether the graph is directed tells something of the edges: once an edge mechanism
    # collected them, the refusal is charged as a read of the true edges (refusal_is_read)
    G = _graph(directed=True)
    EdgeRR(1.0, symmetrize="directed", random_state=0).fit_transform(G)
    est = VGAELinkPredictor(epochs=2, early_stopping=False, device="cpu", random_state=0)
    with pytest.raises(ValueError, match="undirected graph"):
        est.fit(PairData(G, PAIRS), np.array([1, 0, 1, 0]))
    assert privacy_report(G).epsilon_for("edges") == np.inf
    assert privacy_report(G).epsilon_for("features") == 0
