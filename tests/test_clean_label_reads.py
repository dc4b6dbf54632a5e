"""A classifier fitted on the clean labels of a GraphData's users is charged a read of their
labels in the clear (epsilon inf) when a label mechanism collects those users' labels,
before or after the fit; without a label collection the labels are taken as given."""

import os
import pickle
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier
from skldp.mechanisms import LabelRandomizedResponse
from skldp.models import GCNClassifier, LPGNNClassifier, MLPHead, SolitudeClassifier
from skldp.population import BudgetExceededError

N = 30
Y = np.arange(N) % 2


def _graph(budget=None, seed=0):
    rng = np.random.default_rng(seed)
    A = np.triu(rng.random((N, N)) < 0.2, 1)
    A = sp.csr_array((A | A.T).astype(float))
    return GraphData(rng.random((N, 3)), A, budget=budget).with_features(
        rng.random((N, 3)), source="public")


FITS = {
    "GCNClassifier": lambda: GCNClassifier(epochs=1, random_state=0),
    "MLPHead": lambda: MLPHead(epochs=1, weight_decay=0.0, random_state=0),
    "LPGNNClassifier": lambda: LPGNNClassifier(eps_y=np.inf, classes=[0, 1], epochs=1,
                                               random_state=0),
    "SolitudeClassifier": lambda: SolitudeClassifier(epochs=1, random_state=0),
    "LabelPropagationClassifier": LabelPropagationClassifier,
    "CorrectAndSmooth": lambda: CorrectAndSmooth(LogisticRegression()),
}


def _fit(G, y=None, name="GCNClassifier"):
    """Fit ``name`` on the rows of ``G`` with ``y`` (their clean labels by default)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return FITS[name]().fit(G, Y[G.rows] if y is None else y)


def _collect(G, eps=1.0):
    """The users of the view ``G`` send their labels (randomized response)."""
    rr = LabelRandomizedResponse(eps, classes=[0, 1], random_state=0).fit()
    return rr.randomize(Y[G.rows], G)


def _charged(G):
    """Positions of the users charged an infinite epsilon for their labels."""
    users, eps = G.ledger.per_user("labels")
    return sorted(np.flatnonzero(np.isin(G.node_keys, users[np.isinf(eps)])).tolist())


def _reads(G):
    return sorted(e.spec.kind.rsplit(".", 1)[-1] for e in G.ledger.entries()
                  if e.spec.model == "clear" and "labels" in e.spec.protects)


@pytest.mark.parametrize("name", sorted(FITS))
@pytest.mark.parametrize("collect_first", [True, False])
def test_a_clean_label_fit_counts_once_the_labels_are_collected(name, collect_first):
    # Before: LabelRandomizedResponse(1) then a GCN on the clean labels printed labels 1
    G = _graph()
    steps = [lambda: _collect(G[10:]), lambda: _fit(G[:20], name=name)]
    for step in steps if collect_first else steps[::-1]:
        step()
    # only the users both read (fit rows 0-19) and collected (10-29)
    assert _charged(G) == list(range(10, 20))
    assert privacy_report(G).epsilon_for("labels") == np.inf
    assert name in _reads(G)


@pytest.mark.parametrize("collect_first", [True, False])
def test_a_budget_refuses_the_second_of_the_two(collect_first):
    G = _graph(budget=2.0)
    if collect_first:
        _collect(G)
        n = len(G.ledger.entries())
        with pytest.raises(BudgetExceededError,
                           match="GCNClassifier would read the clean labels.*new_simulation"):
            _fit(G)
    else:
        _fit(G)
        n = len(G.ledger.entries())
        with pytest.raises(BudgetExceededError,
                           match=r"collect the labels.*already read \(GCNClassifier\)"):
            _collect(G)
    assert len(G.ledger.entries()) == n   # nothing recorded
    assert privacy_report(G).epsilon_for("labels") == (1.0 if collect_first else 0.0)


def test_the_labels_the_users_sent_are_free():
    G = _graph(budget=2.0)
    y_sent = _collect(G)
    assert not np.array_equal(y_sent, Y)   # (some labels flipped)
    for name in ("GCNClassifier", "LabelPropagationClassifier", "CorrectAndSmooth"):
        _fit(G, y_sent, name)
    assert _reads(G) == [] and privacy_report(G).epsilon_for("labels") == 1.0
    with pytest.raises(BudgetExceededError, match="clean labels"):
        _fit(G)   # their clean labels are not


def test_a_classifier_with_its_own_label_mechanism_pays_its_epsilon_only():
    G = _graph(budget=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        GCNClassifier(epochs=1, random_state=0, label_mechanism=LabelRandomizedResponse(
            1.0, classes=[0, 1], random_state=0)).fit(G, Y)
        CorrectAndSmooth(LabelPropagationClassifier(), label_mechanism=LabelRandomizedResponse(
            0.5, classes=[0, 1], random_state=1)).fit(G, Y)
    assert _reads(G) == [] and privacy_report(G).epsilon_for("labels") == 1.5
    with pytest.raises(BudgetExceededError, match="clean labels"):
        _fit(G)   # a fit on the clean labels is a read of them


def test_without_a_label_collection_the_labels_are_taken_as_given():
    G = _graph(budget=1.0)
    for name in FITS:
        _fit(G, name=name)
    assert len(G.ledger) == 0
    with pytest.raises(BudgetExceededError, match="already read"):
        _collect(G)   # until the labels are collected


def test_new_simulation_separates_the_clean_labels_from_the_collection():
    G = _graph(budget=1.0)
    _collect(G)
    other = G.new_simulation()
    _fit(other)
    assert privacy_report(G).epsilon_for("labels") == 1.0
    assert privacy_report(other).epsilon_for("labels") == 0
    with pytest.raises(BudgetExceededError, match="new_simulation"):
        _fit(G)   # on the same simulation: refused


def test_the_pending_read_survives_pickling():
    G = _graph()
    _fit(G)
    copy = pickle.loads(pickle.dumps(G))
    _collect(copy)
    assert _charged(copy) == _charged(G) == list(range(N))


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin",
                    reason="needs os.fork")
def test_a_read_in_a_forked_child_counts():
    G = _graph()
    pickle.dumps(G)   # the journal is open before the fork
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _fit(G[:5], name="LabelPropagationClassifier")
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    _collect(G)
    assert _charged(G) == list(range(5))
