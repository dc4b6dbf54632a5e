"""Tests of RGNNClassifier (paper 001 Algorithms 2-3, eq. (15))."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.exceptions import PrivacyLeakWarning
from skldp.mechanisms import GRRFSMechanism, LabelRandomizedResponse
from skldp.models import RGNNClassifier
from skldp.reconstruction import FrequencyReconstructor, reconstruct_labels


@pytest.fixture
def graph(binary_sbm):
    """3-community SBM with binary features, 150 nodes."""
    return binary_sbm(n=150, d=8, p_in=0.15, p_out=0.005, base=0.1, lift=0.7)


def _fit(G, y, **kw):
    params = dict(eps_y=2.0, hops_y=2, n_clusters=6, epochs=25, classes=[0, 1, 2],
                  random_state=0)
    params.update(kw)
    if params.get("alpha", 1.0) > 0:
        pytest.importorskip("pymetis")  # the label-proportion term partitions with METIS
    rows = np.arange(0, len(y), 2)
    return RGNNClassifier(**params).fit(G[rows], y[rows]), rows


@pytest.mark.parametrize("backbone", ["sage", "gcn", pytest.param("gat", marks=pytest.mark.slow)])
def test_backbones_learn(graph, backbone):
    G, y = graph
    clf, rows = _fit(G, y, backbone=backbone)
    test = np.setdiff1d(np.arange(len(y)), rows)
    assert clf.score(G[test], y[test]) > 0.8
    assert clf.predict_proba(G[test]).shape == (len(test), 3)


def test_label_mechanism_budget_and_targets(graph):
    G, y = graph
    clf, rows = _fit(G, y, eps_y=0.5)
    mech = clf.label_mechanism_
    assert mech.epsilon_ == 0.5 and mech.protects_ == ("labels",)
    assert clf.cluster_proportions_.shape == (6, 3)
    assert len(np.unique(clf.clusters_)) == 6
    report = privacy_report(clf)
    assert report.epsilon_for("labels") == 0.5
    # labels are randomised per node id: same noisy labels for the same seed
    noisy = mech.randomize_encoded(y[rows], G[rows])
    assert 0 < np.mean(noisy != y[rows]) < 0.8
    clf2, _ = _fit(G, y, eps_y=0.5)
    np.testing.assert_array_equal(clf2.label_mechanism_.randomize_encoded(y[rows], G[rows]),
                                  noisy)


def test_clear_labels_are_reported_at_infinite_epsilon(graph):
    # eps_y = inf randomises nothing: the report lists the label step at inf, so the
    # total says the labels are unprotected (docs/privacy.rst, "what privacy_report counts").
    G, y = graph
    clf, _ = _fit(G, y, eps_y=np.inf, epochs=5)
    report = privacy_report(clf)
    assert [s.protects for s in report.spends if s.model == "local"] == [("labels",)]
    assert np.isinf(report.local_epsilon) and np.isinf(report.epsilon_for("labels"))


def test_soft_targets_are_more_accurate_than_noisy_labels(graph):
    # Algorithm 2 on this homophilous graph: the reconstructed targets' argmax
    # agrees with the true labels more often than the noisy labels do.
    G, y = graph
    rows = np.arange(0, len(y), 2)
    gains = []
    for seed in range(40):   # the mean gain is about 0.125 (sd over seeds 0.09)
        mech = LabelRandomizedResponse(0.5, classes=[0, 1, 2], random_state=seed).fit()
        noisy = mech.randomize_encoded(y[rows], G[rows])
        soft = reconstruct_labels(G.adjacency, rows, noisy, mech.transition_matrix_, hops=2)
        gains.append(np.mean(soft.argmax(1) == y[rows]) - np.mean(noisy == y[rows]))
    assert np.mean(gains) > 0.1


def test_pipeline_with_grrfs_and_reconstructor(graph):
    pytest.importorskip("pymetis")
    G, y = graph
    pipe = Pipeline([("grrfs", GRRFSMechanism(2.0, m=4, domain_sizes=2, random_state=0)),
                     ("rec", FrequencyReconstructor(2.0, 4, domain_sizes=2, hops=2)),
                     ("clf", RGNNClassifier(eps_y=2.0, n_clusters=6, epochs=25,
                                            classes=[0, 1, 2], random_state=0))])
    rows = np.arange(0, len(y), 2)
    pipe.fit(G[rows], y[rows])
    test = np.arange(1, len(y), 2)
    assert pipe.score(G[test], y[test]) > 0.6
    report = privacy_report(pipe)
    assert report.epsilon_for("labels") == 2.0
    # GRR-FS's sound per-user budget m * eps = 4 * 2 (not Theorem 1's ln(1 + (m/d)(e^8 - 1)))
    assert report.epsilon_for("features") == pytest.approx(8.0)
    again = pickle.loads(pickle.dumps(pipe))
    np.testing.assert_array_equal(again.predict(G[test]), pipe.predict(G[test]))


def test_classes_none_warns_and_alpha0_skips_metis(graph):
    G, y = graph
    with pytest.warns(PrivacyLeakWarning):
        clf, _ = _fit(G, y, classes=None, alpha=0.0, epochs=5)
    assert clf.clusters_ is None and not hasattr(clf, "_llp_state")


def test_metis_runs_once_per_graph_and_seed(graph, monkeypatch):
    import skldp.models._rgnn as rgnn
    calls, metis = [], rgnn.metis_clusters
    monkeypatch.setattr(rgnn, "metis_clusters",
                        lambda *a, **kw: calls.append(kw) or metis(*a, **kw))
    G, y = graph
    a, _ = _fit(G, y, epochs=2)
    b, _ = _fit(G, y, epochs=2, lr=0.02)        # another setting of the model, same seed
    assert len(calls) == 1 and np.array_equal(a.clusters_, b.clusters_)
    a.clusters_[:] = -1                          # the fitted attribute is the model's own
    c, _ = _fit(G, y, epochs=2, random_state=1)  # another seed partitions again
    assert len(calls) == 2 and c.clusters_.min() == 0
    assert np.array_equal(_fit(G, y, epochs=2)[0].clusters_, b.clusters_)


def test_without_pymetis_the_default_asks_for_it(graph, monkeypatch):
    # The default alpha > 0 needs METIS (the metis extra): a clear error, no silent
    # change of method; alpha=0 trains without the label-proportion term.
    import sys
    monkeypatch.setitem(sys.modules, "pymetis", None)  # "import pymetis" fails
    G, y = graph
    rows = np.arange(0, len(y), 2)
    with pytest.raises(ImportError, match=r"skldp\[metis\].*alpha=0"):
        RGNNClassifier(n_clusters=6, epochs=2, classes=[0, 1, 2]).fit(G[rows], y[rows])
    clf = RGNNClassifier(alpha=0.0, epochs=2, classes=[0, 1, 2]).fit(G[rows], y[rows])
    assert clf.clusters_ is None


def test_bad_input(graph):
    G, y = graph
    rows = np.arange(10)
    with pytest.raises(ValueError, match=r"The 'eps_y' parameter of RGNNClassifier must be a "
                                         r"float in the range \(0.0, inf\]"):
        RGNNClassifier(eps_y=0).fit(G[rows], y[rows])
    with pytest.raises(ValueError, match="n_clusters=200 exceeds the number of nodes"):
        RGNNClassifier(n_clusters=200, classes=[0, 1, 2]).fit(G[rows], y[rows])
    # without the LLP term there are no clusters: n_clusters is not checked
    RGNNClassifier(n_clusters=200, alpha=0.0, epochs=2, classes=[0, 1, 2]).fit(G[rows], y[rows])
    with pytest.raises(ValueError, match="not in classes"):
        RGNNClassifier(classes=[0, 1], epochs=2).fit(G[rows], np.r_[y[:9], 2])
    with pytest.raises(ValueError, match="-1"):
        RGNNClassifier(classes=[0, 1, 2]).fit(G[rows], np.r_[y[:9], -1])
    with pytest.raises(ValueError, match="backbone"):
        RGNNClassifier(backbone="mlp").fit(G[rows], y[rows])
    with pytest.raises(ValueError, match="alpha"):
        RGNNClassifier(alpha=-1).fit(G[rows], y[rows])
    with pytest.raises(TypeError, match="GraphData"):
        RGNNClassifier().fit(np.zeros((3, 2)), [0, 1, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError, match="needs the graph"):
            RGNNClassifier().fit(GraphData(np.zeros((3, 2))), [0, 1, 0])
