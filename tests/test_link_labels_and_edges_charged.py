"""Link prediction over collected edges: labels read from the users' true graph and true
edges read at scoring are charged, whatever model reads them.

Both were free: a plain scikit-learn model fitted on pairs of the true graph behind an edge
mechanism printed 2 (audit lower bound 4.36 on one training edge), and a Hadamard head
fitted on the collected graph scored pairs of the true graph, its warning telling which
were edges.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.mechanisms import EdgeRR, MultiBitMechanism
from skldp.model_selection import PairData, random_edge_split
from skldp.models import HadamardLinkPredictor
from skldp.population import BudgetExceededError


def _graph(budget=None, n=90, d=6, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    X = (rng.random((n, d)) < 0.1 + 0.5 * (y[:, None] == np.arange(d) % 3)).astype(float)
    A = np.triu(rng.random((n, n)) < np.where(y[:, None] == y[None, :], 0.15, 0.01), 1)
    return GraphData(X, sp.csr_array((A | A.T).astype(float)), budget=budget)


def _pipe(head):
    return Pipeline([("edges", EdgeRR(1.0, random_state=0)),
                     ("mb", MultiBitMechanism(1.0, feature_range=(0, 1), random_state=0)),
                     ("head", head)])


def test_a_plain_model_on_true_pair_labels_behind_an_edge_mechanism_is_charged():
    P_tr, _, _, y_tr, _, _ = random_edge_split(_graph(), random_state=0)   # true labels
    pipe = _pipe(LogisticRegression()).fit(P_tr, y_tr)
    assert privacy_report(pipe).epsilon_for("edges") == np.inf
    P_tr, _, _, y_tr, _, _ = random_edge_split(_graph(budget=5.0), random_state=0)
    with pytest.raises(BudgetExceededError):
        _pipe(LogisticRegression()).fit(P_tr, y_tr)


def test_pairs_labelled_from_the_collected_graph_stay_free_for_a_plain_model():
    G = _graph(budget=5.0)
    noisy = EdgeRR(1.0, random_state=0).fit_transform(G)
    P_tr, _, _, y_tr, _, _ = random_edge_split(noisy, random_state=0)
    mb = MultiBitMechanism(1.0, feature_range=(0, 1), random_state=0)
    LogisticRegression().fit(np.asarray(mb.fit_transform(P_tr)), y_tr)
    assert privacy_report(G).local_epsilon == pytest.approx(2.0)


def test_a_hadamard_head_fitted_on_collected_edges_is_charged_for_true_edges():
    G = _graph(budget=3.0)
    noisy = EdgeRR(1.0, random_state=0).fit_transform(G)
    P_tr, _, _, y_tr, _, _ = random_edge_split(noisy, random_state=0)
    mb = MultiBitMechanism(1.0, feature_range=(0, 1), random_state=0)
    head = HadamardLinkPredictor(epochs=5, random_state=0).fit(mb.fit_transform(P_tr), y_tr)
    assert privacy_report(head).local_epsilon == pytest.approx(2.0)
    u, v = np.argwhere(sp.triu(G.adjacency, 1).toarray())[0]   # a true edge
    with pytest.raises(BudgetExceededError):
        head.decision_function(mb.transform(PairData(G, [[u, v]])))


@pytest.mark.parametrize("model", ["MLPHead", "GCNClassifier", "LabelPropagationClassifier"])
def test_node_classifiers_refuse_node_pairs(model):
    # MLPHead raised scikit-learn's shape error or an IndexError, GCN an IndexError, and
    # label propagation fitted pair labels as node labels
    import skldp.baselines
    import skldp.models
    cls = getattr(skldp.models, model, None) or getattr(skldp.baselines, model)
    P_tr, _, _, y_tr, _, _ = random_edge_split(_graph(), random_state=0)
    with pytest.raises(TypeError, match="classifies nodes, but X is a PairData"):
        cls().fit(P_tr, y_tr)
