"""CorrectAndSmooth: improves weak bases, private bases and labels, sklearn conventions."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier
from skldp.mechanisms import HDSMechanism, LabelRandomizedResponse
from skldp.models import GCNClassifier, MLPHead
from skldp.propagation import PPRPropagation


@pytest.fixture(scope="module")
def _weak():
    """A homophilous 3-block SBM whose features are nearly noise (a weak base)."""
    rng = np.random.default_rng(0)
    n = 300
    y = np.repeat([0, 1, 2], n // 3)
    P = np.where(y[:, None] == y[None, :], 0.08, 0.005)
    A = np.triu(rng.random((n, n)) < P, 1)
    A = sp.csr_array((A | A.T).astype(float))
    X = rng.normal(size=(n, 4))
    X[:, 0] += 0.6 * (y == 1)
    X[:, 1] += 0.6 * (y == 2)
    G = GraphData(X, A)
    train = np.zeros(n, bool)
    train[rng.permutation(n)[:90]] = True
    return G, y, train


@pytest.fixture
def weak(_weak):
    """The same graph held by new simulated users for each test (an empty ledger)."""
    G, y, train = _weak
    return G.new_simulation(), y, train


def test_correct_and_smooth_improves_a_weak_base(weak):
    G, y, train = weak
    test = ~train
    base = LogisticRegression().fit(np.asarray(G[train]), y[train])
    base_acc = base.score(np.asarray(G[test]), y[test])
    cs = CorrectAndSmooth(LogisticRegression()).fit(G[train], y[train])
    acc = cs.score(G[test], y[test])
    assert base_acc < 0.7 and acc > 0.9 and acc > base_acc + 0.2, (base_acc, acc)
    np.testing.assert_allclose(cs.predict_proba(G).sum(1), 1.0)
    # the correction alone (no smoothing) already helps: alpha2 = 0 keeps the corrected Z
    only_correct = CorrectAndSmooth(LogisticRegression(), alpha2=0.0).fit(G[train], y[train])
    assert only_correct.score(G[test], y[test]) > base_acc + 0.1
    # n_iter = 0: the base's predictions on unlabelled nodes are unchanged
    none = CorrectAndSmooth(LogisticRegression(), n_iter=0).fit(G[train], y[train])
    np.testing.assert_allclose(none.predict_proba(G[test]),
                               base.predict_proba(np.asarray(G[test])), atol=1e-12)


def test_fdiff_scale_and_training_rows(weak):
    G, y, train = weak
    cs = CorrectAndSmooth(LogisticRegression(), scale=1.0).fit(G[train], y[train])
    assert cs.score(G[~train], y[~train]) > 0.85
    # smoothing starts from the training labels: they are recovered on the training rows
    assert cs.score(G[train], y[train]) > 0.95


def test_around_label_propagation(weak):
    G, y, train = weak
    lp = LabelPropagationClassifier().fit(G[train], y[train])
    cs = CorrectAndSmooth(LabelPropagationClassifier()).fit(G[train], y[train])
    assert cs.score(G[~train], y[~train]) >= lp.score(G[~train], y[~train]) - 0.02


def test_private_feature_pipeline_base_and_report(weak):
    """Post-processing a private-feature model with label propagation (issue part 2)."""
    G, y, train = weak
    private = Pipeline([("hds", HDSMechanism(2.0, feature_range=(-3, 3), random_state=0)),
                        ("ppr", PPRPropagation(alpha=0.2)),
                        ("clf", MLPHead(epochs=40, early_stopping=False, random_state=0))])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*clipped", category=UserWarning)
        base = clone(private).fit(G[train], y[train])
        cs = CorrectAndSmooth(private).fit(G[train], y[train])
        base_acc = base.score(G[~train], y[~train])
        acc = cs.score(G[~train], y[~train])
    assert acc > 0.9 and acc >= base_acc, (base_acc, acc)
    rep = privacy_report(cs)
    assert [s.step for s in rep.spends] == ["estimator.hds"]
    assert rep.local_epsilon == 2.0


def test_label_mechanism_on_the_meta_estimator(weak):
    G, y, train = weak
    rr = LabelRandomizedResponse(2.0, classes=[0, 1, 2], random_state=0)
    cs = CorrectAndSmooth(LogisticRegression(), label_mechanism=rr).fit(G[train], y[train])
    noisy = cs.label_mechanism_.randomize(y[train], G[train])
    assert np.any(noisy != y[train])
    np.testing.assert_array_equal(cs.classes_[cs.train_labels_], noisy)
    rep = privacy_report(cs)
    assert rep.epsilon_for("labels") == 2.0
    # the logistic regression read the raw features (a plain array): in the clear
    assert [s.model for s in rep.spends] == ["local", "clear"]
    assert np.isinf(rep.epsilon_for("features"))
    assert cs.score(G[~train], y[~train]) > 0.8


def test_base_label_mechanism_noisy_labels_are_reused(weak):
    G, y, train = weak
    rr = LabelRandomizedResponse(1.0, classes=[0, 1, 2], random_state=0)
    base = LabelPropagationClassifier(label_mechanism=rr)
    cs = CorrectAndSmooth(base).fit(G[train], y[train])
    # C&S uses the base's own noisy reports, never the clean labels
    np.testing.assert_array_equal(cs.train_labels_, cs.estimator_.train_labels_)
    assert np.any(cs.classes_[cs.train_labels_] != y[train])
    rep = privacy_report(cs)
    assert rep.epsilon_for("labels") == 1.0 and len(rep.spends) == 1
    # both randomize: the same collection asked about the already-noisy labels is refused,
    # another collection is refused by C&S (two collections of each user's label)
    with pytest.raises(ValueError, match="again about other data"):
        CorrectAndSmooth(base, label_mechanism=rr).fit(G[train], y[train])
    with pytest.raises(ValueError, match="Both"):
        CorrectAndSmooth(base, label_mechanism=clone(rr).set_params(random_state=9)).fit(
            G.new_simulation()[train], y[train])


def test_gnn_base_with_label_mechanism(weak):
    G, y, train = weak
    rr = LabelRandomizedResponse(2.0, classes=[0, 1, 2], random_state=1)
    gcn = GCNClassifier(epochs=20, early_stopping=False, random_state=0, label_mechanism=rr)
    cs = CorrectAndSmooth(gcn).fit(G[train], y[train])
    expected = cs.estimator_.label_mechanism_.randomize(y[train], G[np.flatnonzero(train)])
    np.testing.assert_array_equal(cs.classes_[cs.train_labels_], expected)
    assert privacy_report(cs).epsilon_for("labels") == 2.0


def test_sklearn_conventions(weak):
    G, y, train = weak
    cs = CorrectAndSmooth(LabelPropagationClassifier(alpha=0.5), alpha1=0.7, n_iter=10)
    params = cs.get_params()
    assert params["estimator__alpha"] == 0.5 and params["alpha1"] == 0.7
    c2 = clone(cs).set_params(estimator__alpha=0.8, alpha2=0.5)
    assert c2.estimator.alpha == 0.8 and c2.alpha2 == 0.5 and cs.estimator.alpha == 0.5
    search = GridSearchCV(cs, {"alpha2": [0.0, 0.8], "estimator__alpha": [0.5, 0.9]}, cv=3)
    search.fit(G[train], y[train])
    assert search.score(G[~train], y[~train]) > 0.9
    fitted = search.best_estimator_
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_allclose(restored.predict_proba(G), fitted.predict_proba(G))
    # changing a parameter after fit changes the memoised result
    p1 = fitted.predict_proba(G[~train])
    fitted.set_params(alpha2=0.3)
    assert not np.allclose(fitted.predict_proba(G[~train]), p1)


def test_errors(weak):
    G, y, train = weak
    with pytest.raises(TypeError, match="predict_proba"):
        CorrectAndSmooth(object()).fit(G, y)
    with pytest.raises(ValueError, match="alpha1"):
        CorrectAndSmooth(LogisticRegression(), alpha1=1.5).fit(G, y)
    with pytest.raises(TypeError, match="scale"):
        CorrectAndSmooth(LogisticRegression(), scale="fixed").fit(G, y)
    with pytest.raises(ValueError, match="scale"):
        CorrectAndSmooth(LogisticRegression(), scale=-1.0).fit(G, y)
    with pytest.raises(TypeError, match="GraphData"):
        CorrectAndSmooth(LogisticRegression()).fit(np.asarray(G), y)


class _UnsortedClasses(LogisticRegression):
    """A base model whose classes_ are not sorted ([2, 0, 1]): its columns follow them."""

    _order = np.array([2, 0, 1])

    def fit(self, X, y):
        super().fit(np.asarray(X), y)
        self._sorted = self.classes_
        self.classes_ = self._sorted[self._order]
        return self

    def predict_proba(self, X):
        return super().predict_proba(np.asarray(X))[:, self._order]


def test_a_base_model_with_unsorted_classes(weak):
    # the training labels were looked up in classes_ as if sorted: "The base model's
    # classes_ do not contain every training label" (or wrong positions, hence columns)
    G, y, train = weak
    ref = CorrectAndSmooth(LogisticRegression()).fit(G[train], y[train])
    cs = CorrectAndSmooth(_UnsortedClasses()).fit(G[train], y[train])
    np.testing.assert_array_equal(cs.classes_, [2, 0, 1])
    np.testing.assert_array_equal(cs.classes_[cs.train_labels_], y[train])
    np.testing.assert_allclose(cs.predict_proba(G[~train]),
                               ref.predict_proba(G[~train])[:, [2, 0, 1]], atol=1e-12)
    np.testing.assert_array_equal(cs.predict(G[~train]), ref.predict(G[~train]))


@pytest.mark.parametrize("base", [LogisticRegression(), LabelPropagationClassifier()])
def test_unlabelled_rows_are_refused(weak, base):
    # -2 (unlabelled for skldp.model_selection) was learnt as a class
    G, y, _ = weak
    y = y.copy()
    y[:2] = -2
    with pytest.raises(ValueError, match="unlabelled.*fit only on labelled"):
        CorrectAndSmooth(base).fit(G, y)
