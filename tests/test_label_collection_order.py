"""A model that collects labels notes its reads of the graph between the checks of that
collection and its sending: a refused read spends no label (2a301d3), and a refused
collection (a label outside the domain, the budget) leaves no read of the true graph
behind. Correct and Smooth refuses, before its labels are sent, the read of a true graph
its propagation will make."""

import warnings

import numpy as np
import pytest
from public_feature_graphs import public_feature_graph

from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier
from skldp.mechanisms import EdgeRR, LabelRandomizedResponse
from skldp.models import GCNClassifier, LPGNNClassifier, RGNNClassifier
from skldp.population import BudgetExceededError


def _models(eps=2.0):
    def lrr():
        return LabelRandomizedResponse(eps, classes=[0, 1], random_state=0)
    return {"GCNClassifier": lambda: GCNClassifier(epochs=1, label_mechanism=lrr(),
                                                   random_state=0),
            "LPGNNClassifier": lambda: LPGNNClassifier(eps, classes=[0, 1], epochs=1,
                                                       random_state=0),
            # (alpha=0: no METIS clusters, pymetis being optional)
            "RGNNClassifier": lambda: RGNNClassifier(eps_y=eps, classes=[0, 1], alpha=0.0,
                                                     epochs=1, random_state=0),
            "LabelPropagationClassifier": lambda: LabelPropagationClassifier(
                label_mechanism=lrr())}


@pytest.mark.parametrize("name", sorted(_models()))
def test_a_label_outside_the_domain_leaves_no_read_of_the_true_graph(name):
    # Before: the fit failed on label 2, but its read of the true graph was noted: a later
    # EdgeRR(1) on these users charged their edges inf
    G = public_feature_graph()
    with warnings.catch_warnings(), pytest.raises(ValueError, match="not in classes"):
        warnings.simplefilter("ignore")
        _models()[name]().fit(G[:20], np.arange(20) % 3)
    assert len(G.ledger) == 0
    EdgeRR(1.0, random_state=0).fit_transform(G)
    assert G.ledger.epsilon_for("edges") == 1.0


@pytest.mark.parametrize("name", sorted(_models()))
def test_a_refused_label_collection_leaves_no_read_of_the_true_graph(name):
    # Before: budget 3, labels at eps 5 refused; then EdgeRR(1) was refused too ("the
    # server already read the true graph")
    G = public_feature_graph(budget=3.0)
    with warnings.catch_warnings(), pytest.raises(BudgetExceededError, match="above this"):
        warnings.simplefilter("ignore")
        _models(eps=5.0)[name]().fit(G[:20], np.arange(20) % 2)
    assert len(G.ledger) == 0
    Gr = EdgeRR(1.0, random_state=0).fit_transform(G)
    assert G.ledger.epsilon_for("edges") == 1.0
    with warnings.catch_warnings():   # on the collected graph, within the budget: the
        warnings.simplefilter("ignore")   # checked collection is sent once
        _models(eps=2.0)[name]().fit(Gr[:20], np.arange(20) % 2)
    assert G.ledger.epsilon_for("labels") == 2.0 and len(G.ledger) == 2


def test_a_bad_parameter_leaves_no_read_and_spends_no_label():
    # _setup_fit's checks come before the reads are noted and the labels sent
    G = public_feature_graph()
    gcn = GCNClassifier(epochs=1, early_stopping=True, validation_fraction=1.0,
                        label_mechanism=LabelRandomizedResponse(2.0, classes=[0, 1]))
    with pytest.raises(ValueError, match="validation_fraction"):
        gcn.fit(G[:20], np.arange(20) % 2)
    assert len(G.ledger) == 0
    EdgeRR(1.0, random_state=0).fit_transform(G)
    assert G.ledger.epsilon_for("edges") == 1.0


def test_correct_and_smooth_refuses_the_true_graph_before_its_labels_are_sent():
    # Before: budget 5 after EdgeRR(1); C&S(label_mechanism=LRR(2)) collected the labels
    # (spend 1 -> 3), then its base GCN was refused the true graph: no model
    G = public_feature_graph(budget=5.0)
    Gr = EdgeRR(1.0, random_state=0).fit_transform(G)
    spent = G.ledger.spent(G.node_keys).copy()
    cs = CorrectAndSmooth(GCNClassifier(epochs=1, random_state=0),
                          label_mechanism=LabelRandomizedResponse(2.0, classes=[0, 1],
                                                                  random_state=0))
    with pytest.raises(BudgetExceededError, match="CorrectAndSmooth would read the true"):
        cs.fit(G[:20], np.arange(20) % 2)
    np.testing.assert_array_equal(G.ledger.spent(G.node_keys), spent)
    assert len(G.ledger) == 1
    cs.fit(Gr[:20], np.arange(20) % 2)   # on the collected graph: its labels are sent
    assert cs.predict(Gr[20:]).shape == (10,)
    assert G.ledger.epsilon_for("labels") == 2.0
