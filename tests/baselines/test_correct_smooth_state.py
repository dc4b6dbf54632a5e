"""CorrectAndSmooth: which labels it propagates and which parameters its results follow.

The dense-reference tests fit once on distinct training rows with a base that
randomizes no label more than once. These check the rest of the contract: a node
listed twice is still one-hot, changing ``alpha1`` after ``fit`` changes the
prediction (no stale memo), and with a base that collected labels several times
(a search over the label budget) C&S propagates the labels the refitted base
model was trained on: the latest collection.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.dummy import DummyClassifier
from sklearn.model_selection import GridSearchCV

from skldp import GraphData
from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier
from skldp.mechanisms import LabelRandomizedResponse


def _graph(small_graph):
    A, X, y = small_graph
    return GraphData(X, A), y


def test_a_training_node_listed_twice_is_still_one_hot(small_graph):
    # FDiff-scale with a uniform base: nothing but Y depends on the repetition
    G, y = _graph(small_graph)
    rows = np.arange(0, 60, 4)
    twice = np.r_[rows, rows[:3]]
    kw = dict(alpha1=0.7, alpha2=0.6, n_iter=20, scale=1.0)
    once = CorrectAndSmooth(DummyClassifier(strategy="uniform"), **kw).fit(G[rows], y[rows])
    dup = CorrectAndSmooth(DummyClassifier(strategy="uniform"), **kw).fit(G[twice], y[twice])
    np.testing.assert_allclose(dup.predict_proba(G), once.predict_proba(G), atol=1e-12)


def test_parameters_set_after_fit_are_used_by_predict(small_graph):
    G, y = _graph(small_graph)
    rows = np.arange(0, 60, 3)
    cs = CorrectAndSmooth(DummyClassifier(strategy="prior"), n_iter=20, scale=1.0)
    cs.fit(G[rows], y[rows])
    before = cs.predict_proba(G)
    for name, value in [("alpha1", 0.2), ("alpha2", 0.3), ("n_iter", 5), ("scale", "auto")]:
        cs.set_params(**{name: value})
        fresh = clone(cs).fit(G[rows], y[rows])
        np.testing.assert_allclose(cs.predict_proba(G), fresh.predict_proba(G), atol=1e-12)
    assert not np.allclose(cs.predict_proba(G), before)


def test_labels_of_the_latest_collection_are_propagated():
    # a search over the label budget collects each user's label once per eps; the refit
    # uses the best eps (clearly 5.0, the last), and C&S must propagate those reports
    rng = np.random.default_rng(0)
    n = 90
    y = np.repeat([0, 1, 2], n // 3)
    P = np.where(y[:, None] == y[None, :], 0.2, 0.01)
    A = np.triu(rng.random((n, n)) < P, 1)
    G = GraphData(np.zeros((n, 1)), sp.csr_array((A | A.T).astype(float)))
    rr = LabelRandomizedResponse(1.0, classes=[0, 1, 2], random_state=0)
    search = GridSearchCV(LabelPropagationClassifier(label_mechanism=rr),
                          {"label_mechanism__eps": [0.05, 5.0]}, cv=2)
    cs = CorrectAndSmooth(search).fit(G, y)
    best = cs.estimator_.best_estimator_
    assert cs.estimator_.best_params_ == {"label_mechanism__eps": 5.0}
    np.testing.assert_array_equal(cs.classes_, best.classes_)
    np.testing.assert_array_equal(cs.train_labels_, best.train_labels_)
