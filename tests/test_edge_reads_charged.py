"""A graph step fitted on collected edges (EdgeRR's output) and
then given the users' true graph reads their edges in the clear: the ledger charges it."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.mechanisms import EdgeRR
from skldp.population import BudgetExceededError
from skldp.propagation import KProp


def _graph(n=30, seed=0):
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.15, random_state=seed, format="csr")
    A = ((A + A.T) > 0).astype(float)
    A.setdiag(0)
    A.eliminate_zeros()
    return GraphData(rng.normal(size=(n, 3)), sp.csr_matrix(A))


def test_true_edges_given_after_a_fit_on_collected_edges_are_charged():
    G = _graph()
    noisy = EdgeRR(2.0, random_state=0).fit_transform(G)
    step = KProp(steps=1).fit(noisy)
    before = privacy_report(G).epsilon_for("edges")
    assert np.isfinite(before)
    step.transform(G)   # the users' true adjacency
    assert privacy_report(G).epsilon_for("edges") == float("inf")


# ------------------------------------- classifiers that propagate over the graph they get
def _lp():
    from skldp.baselines import LabelPropagationClassifier
    return LabelPropagationClassifier()


def _dpgnn():
    from skldp.central import DPGNNClassifier
    return DPGNNClassifier(max_degree=2, classes=[0, 1], batch_size=4, n_steps=2,
                           noise_multiplier=5.0, hidden_size=4, device="cpu", random_state=0)


@pytest.mark.parametrize("make", [_lp, _dpgnn], ids=["LabelPropagation", "DPGNN"])
def test_a_classifier_fitted_on_collected_edges_is_charged_for_true_edges_at_predict(make):
    # LabelPropagationClassifier and DPGNNClassifier read the graph they are given at
    # predict (propagation, full neighbourhoods) and were charged nothing for the true one
    G = _graph()
    y = np.arange(30) % 2
    noisy = EdgeRR(2.0, random_state=0).fit_transform(G)
    clf = make().fit(noisy[:20], y[:20])
    clf.predict_proba(noisy[20:])   # the collected graph: its reports, nothing more
    assert privacy_report(clf).epsilon_for("edges") == pytest.approx(2.0)
    clf.predict_proba(G[20:])       # the users' true adjacency
    line = f"{type(clf).__name__} read the users' edges in the clear: epsilon=inf (30 users)"
    for report in (privacy_report(clf), privacy_report(G)):
        assert report.epsilon_for("edges") == np.inf and line in str(report)


@pytest.mark.parametrize("make", [_lp, _dpgnn], ids=["LabelPropagation", "DPGNN"])
def test_a_budget_refuses_the_true_edges_to_a_classifier_fitted_on_collected_ones(make):
    G = _graph()
    G = GraphData(G.features, G.adjacency, budget=50.0)
    y = np.arange(30) % 2
    clf = make().fit(EdgeRR(2.0, random_state=0).fit_transform(G)[:20], y[:20])
    with pytest.raises(BudgetExceededError, match=r"would read the edges of 30 user\(s\) in "
                                                  r"the clear"):
        clf.predict_proba(G[20:])
    assert privacy_report(G).epsilon_for("edges") == pytest.approx(2.0)


@pytest.mark.parametrize("make", [_lp, _dpgnn], ids=["LabelPropagation", "DPGNN"])
def test_a_classifier_fitted_on_the_true_graph_reads_nothing_more_at_predict(make):
    # the graph is taken as given when no mechanism collected it (docs/privacy.rst)
    G = _graph()
    G = GraphData(G.features, G.adjacency, budget=50.0)
    y = np.arange(30) % 2
    make().fit(G[:20], y[:20]).predict_proba(G[20:])
    assert privacy_report(G).epsilon_for("edges") == 0.0
