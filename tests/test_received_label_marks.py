"""Labels marked by hand as the reports of a collection received from real devices
(``LabelReports(y, collection_id)``) are checked against what those users sent: the server
holds those reports, so the check tells it nothing. Other labels under the mark are clean
labels (epsilon inf, refused under a budget); the right ones, reloaded and marked again,
stay free. For simulated collections the mark is still the caller's word
(tests/test_clean_label_reads.py)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_selection import SelectKBest
from sklearn.linear_model import LogisticRegression

from skldp import GraphData, NodeWise
from skldp.accounting import privacy_report
from skldp.baselines import CorrectAndSmooth
from skldp.device import Device
from skldp.mechanisms import LabelRandomizedResponse
from skldp.models import MLPHead
from skldp.population import (
    BudgetExceededError,
    LabelReports,
    collection_spec,
    read_reports,
    received_graph,
)

N = 40
IDS = [f"u{i}" for i in range(N)]
Y = np.arange(N) % 2

FITS = {
    "MLPHead": lambda: MLPHead(epochs=1, random_state=0),
    "NodeWise": lambda: NodeWise(SelectKBest(k=1)),
    "CorrectAndSmooth": lambda: CorrectAndSmooth(LogisticRegression()),
}


def _received(budget=None):
    """The users' devices send their labels (eps=1); the graph, its labels as received."""
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))
    recs = [Device(u).answer(spec, int(Y[i])) for i, u in enumerate(IDS)]
    G0, y_sent = received_graph(labels=read_reports(recs, spec, users=IDS), node_ids=IDS,
                                budget=budget)
    rng = np.random.default_rng(0)
    X = rng.random((N, 3))
    A = np.triu(rng.random((N, N)) < 0.2, 1)
    A = sp.csr_array((A | A.T).astype(float))   # taken as given: no edge collection
    G = GraphData(X, A, node_ids=IDS, population=G0).with_features(X, source="public")
    return G, y_sent


def _fit(name, G, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        FITS[name]().fit(G, y)
    return [str(w.message) for w in caught if "differ from what" in str(w.message)]


@pytest.mark.parametrize("name", sorted(FITS))
def test_only_the_labels_they_sent_pass_as_their_reports(name):
    # other labels under the mark of a received collection were read as the reports:
    # clean labels trained on, the report printing the collection's epsilon (1, not inf)
    G, y_sent = _received()
    rows = np.random.default_rng(1).permutation(N)[:30]   # y[train]: a subset, reordered
    reloaded = LabelReports(np.array(y_sent), y_sent.collection)   # np.save / np.load
    assert _fit(name, G[rows], reloaded[rows]) == []
    assert privacy_report(G).epsilon_for("labels") == 1.0
    other = np.array(y_sent)[rows]
    other[7] = 1 - other[7]   # one user's label is not what it sent
    warned = _fit(name, G[rows], LabelReports(other, y_sent.collection))
    assert len(warned) == 1 and "1 of these 30 users" in warned[0]   # (C&S warned twice)
    assert privacy_report(G).epsilon_for("labels") == np.inf


def test_other_labels_under_the_mark_are_refused_under_a_budget():
    G, y_sent = _received(budget=5.0)
    forged = np.array(y_sent)
    forged[0] = 1 - forged[0]   # (the clean labels may all equal the random reports)
    forged = LabelReports(forged, y_sent.collection)
    with pytest.warns(UserWarning, match="differ from what"), \
            pytest.raises(BudgetExceededError, match="clean labels"):
        MLPHead(epochs=1).fit(G, forged)
    assert privacy_report(G).epsilon_for("labels") == 1.0


def test_a_report_a_later_batch_replaced_is_still_one_the_user_sent():
    # the server keeps a user's latest report: batch 1's labels, compared with it, would
    # be clean labels though each was sent (and charged); a label no batch holds is not
    import pickle

    spec = collection_spec(LabelRandomizedResponse(0.5, classes=[0, 1, 2]))

    def batch(population=None):
        recs = [Device(u).answer(spec, int(Y[i])) for i, u in enumerate(IDS)]
        return received_graph(labels=read_reports(recs, spec, users=IDS), node_ids=IDS,
                              population=population)

    G1, y1 = batch()
    _, y2 = batch(G1)   # every device answers again (lost state)
    changed = np.flatnonzero(np.asarray(y1) != np.asarray(y2))
    assert len(changed)
    X = np.zeros((N, 1))
    G = GraphData(X, node_ids=IDS, population=G1).with_features(X, source="public")
    G = pickle.loads(pickle.dumps(G))   # (a copy, as a search's worker holds)
    assert _fit("MLPHead", G, y1) == [] and _fit("MLPHead", G, y2) == []
    assert privacy_report(G).epsilon_for("labels") == 1.0   # two answers of 0.5
    neither = np.array(y1)
    i = changed[0]
    neither[i] = 3 - y1[i] - y2[i]
    assert _fit("MLPHead", G, LabelReports(neither, y1.collection))
    assert privacy_report(G).epsilon_for("labels") == np.inf


def test_a_simulated_population_stays_provenance_only():
    # Population.receive on a simulated population listed its collection as received:
    # the marked clean labels were compared with the reports, the warning counting the
    # flipped labels (which a charge must not reveal)
    G = GraphData(np.zeros((N, 1)), node_ids=IDS).with_features(np.zeros((N, 1)),
                                                               source="public")
    rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0).fit()
    assert (np.asarray(rr.randomize(Y, G)) != Y).any()   # (fixed by the seed)
    G.population.receive(rr.collection_, np.zeros(0, np.uint64))
    assert G.population.simulated and rr.collection_ in G.population.collected()
    assert _fit("MLPHead", G, LabelReports(Y, rr.collection_.id)) == []
    assert privacy_report(G).epsilon_for("labels") == 1.0
