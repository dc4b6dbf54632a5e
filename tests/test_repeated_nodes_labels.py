"""A node listed twice in a fit's view (``G[[0, 0, 1]]``) with two different labels is
refused, naming the node and its labels, before anything is read or sent; repeated with
the same label it is kept (each row counts, its user answers once)."""

import warnings

import numpy as np
import pytest
from public_feature_graphs import public_feature_graph

from skldp import GraphData
from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier
from skldp.central import DPGNNClassifier, DPMLPClassifier
from skldp.mechanisms import LabelRandomizedResponse
from skldp.models import (
    GATClassifier,
    GCNClassifier,
    LPGNNClassifier,
    MLPHead,
    RGNNClassifier,
    SAGEClassifier,
    SolitudeClassifier,
)

ROWS = np.r_[0:20, 3]   # node 3 twice


def _rr():
    return LabelRandomizedResponse(2.0, classes=[0, 1], random_state=0)


def _classifiers():
    return {
        "MLPHead": lambda: MLPHead(epochs=1),
        "GCNClassifier": lambda: GCNClassifier(epochs=1),
        "GCNClassifier+RR": lambda: GCNClassifier(epochs=1, label_mechanism=_rr()),
        "SAGEClassifier": lambda: SAGEClassifier(epochs=1),
        "GATClassifier": lambda: GATClassifier(epochs=1),
        "LPGNNClassifier": lambda: LPGNNClassifier(2.0, classes=[0, 1], epochs=1),
        "LPGNNClassifier(eps_y=inf)": lambda: LPGNNClassifier(np.inf, classes=[0, 1], epochs=1),
        "RGNNClassifier": lambda: RGNNClassifier(eps_y=2.0, classes=[0, 1], alpha=0.0,
                                                 epochs=1),
        "SolitudeClassifier": lambda: SolitudeClassifier(epochs=1),
        "DPGNNClassifier": lambda: DPGNNClassifier(epochs=1, classes=[0, 1], batch_size=5),
        "DPMLPClassifier": lambda: DPMLPClassifier(epochs=1, classes=[0, 1], batch_size=5,
                                                   accountant="hypergeometric"),
        "LabelPropagationClassifier": lambda: LabelPropagationClassifier(),
        "LabelPropagationClassifier+RR": lambda: LabelPropagationClassifier(
            label_mechanism=_rr()),
        "CorrectAndSmooth": lambda: CorrectAndSmooth(LabelPropagationClassifier()),
        "CorrectAndSmooth+RR": lambda: CorrectAndSmooth(LabelPropagationClassifier(),
                                                        label_mechanism=_rr()),
    }


@pytest.mark.parametrize("name", sorted(_classifiers()))
def test_a_node_twice_with_two_labels_is_refused_naming_it(name):
    # Before: most fitted silently on both labels; with a label mechanism the refusal said
    # the users would answer again about other data, to fit with random_state=None
    # (which gave the same refusal)
    G = public_feature_graph(budget=10.0)
    y = np.r_[np.arange(20) % 2, 0]   # node 3 (label 1) listed again with label 0
    with warnings.catch_warnings(), pytest.raises(
            ValueError, match=r"the same node appears twice in this call with different "
            r"labels: node 3 \(rows 3 and 20\) is labelled 1 and 0\. A node has one label"):
        warnings.simplefilter("ignore")
        _classifiers()[name]().fit(G[ROWS], y)
    assert len(G.ledger) == 0   # nothing read, nothing sent


def test_string_labels_and_unlabelled_markers():
    G = public_feature_graph()
    y = np.array(["a", "b"] * 10 + ["a"], dtype=object)   # node 3 was "b"
    with pytest.raises(ValueError, match=r"node 3 \(rows 3 and 20\) is labelled 'b' and 'a'"):
        GCNClassifier(epochs=1).fit(G[ROWS], y)
    # a repeat marked unlabelled is the unlabelled marker's error, not a conflict
    y = np.r_[np.arange(20) % 2, -1]
    with pytest.raises(ValueError, match="unlabelled"):
        GCNClassifier(epochs=1).fit(G[ROWS], y)


def test_the_label_mechanism_says_a_user_is_twice_in_this_call():
    G = public_feature_graph()
    y = np.r_[np.arange(20) % 2, 0]
    for call in ("randomize", "check_randomize"):
        with pytest.raises(ValueError, match=r"LabelRandomizedResponse: the same user appears "
                           r"twice in this call with different labels: node 3"):
            getattr(_rr().fit(), call)(y, G[ROWS])
    # users named by their keys: the population's refusal says the same, not "again"
    with pytest.raises(ValueError, match=r"1 user\(s\) appear twice in this call with "
                       "different data") as info:
        _rr().fit().randomize(y, G.node_keys[ROWS])
    assert "random_state=None" not in str(info.value)
    assert len(G.ledger) == 0


def test_a_node_twice_with_the_same_label_answers_once():
    # kept as before: its user answers once (one report for both rows, charged once)
    G = public_feature_graph()
    y = np.r_[np.arange(20) % 2, 1]
    noisy = _rr().fit().randomize(y, G[ROWS])
    assert noisy[3] == noisy[20]
    assert G.ledger.entries()[0].n_users == 20
    clf = GCNClassifier(epochs=1, random_state=0).fit(G[ROWS], y)
    assert list(clf.classes_) == [0, 1]


@pytest.mark.parametrize("y_last", [0, -1])   # node 3 with another label; unlabelled
def test_a_torch_head_refuses_bad_labels_before_reading_raw_features(y_last, small_graph):
    # Before: MLPHead noted its read of the raw features (epsilon inf) first, then refused
    A, X, _ = small_graph
    G = GraphData(X, A)
    y = np.r_[np.arange(20) % 2, y_last]
    with pytest.raises(ValueError, match="appears twice|unlabelled"):
        MLPHead(epochs=1).fit(G[ROWS], y)
    assert len(G.ledger) == 0
    MLPHead(epochs=1).fit(G[ROWS], np.r_[np.arange(20) % 2, 1])   # a valid fit reads them
    assert G.ledger.epsilon_for("features") == np.inf
