"""SolitudeClassifier's ``selection``: what early stopping watches on the validation nodes."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.mechanisms import EdgeRR
from skldp.models import SolitudeClassifier


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n, k = 120, 3
    y = np.repeat(np.arange(k), n // k)
    A = np.triu(rng.random((n, n)) < np.where(y[:, None] == y[None, :], 0.1, 0.01), 1)
    X = rng.normal(size=(k, 8))[y] + 2.0 * rng.normal(size=(n, 8))
    G = EdgeRR(3.0, symmetrize="or", random_state=0).fit_transform(
        GraphData(X, sp.csr_matrix((A | A.T).astype(float))))
    fit = np.arange(n) % 4 != 3       # three quarters fitted, a third of them validating
    val = np.flatnonzero(fit)[::3]
    return G, y, np.flatnonzero(fit), val


def _fit(data, **kw):
    G, y, rows, val = data
    clf = SolitudeClassifier(epochs=25, patience=None, validation=val, feature_steps=1,
                             random_state=0, device="cpu", **kw)
    return clf.fit(G[rows], y[rows])


def test_accuracy_keeps_the_first_epoch_of_the_best_validation_accuracy(data):
    G, y, _, val = data
    clf = _fit(data, selection="accuracy")
    err = np.asarray(clf.validation_scores_)
    # error rates of the validation nodes: steps of 1 / n_val, not losses
    np.testing.assert_allclose(err * len(val), np.round(err * len(val)), atol=1e-9)
    assert clf.best_epoch_ == int(np.argmin(err))
    # the kept model and learned graph are those of that epoch
    assert clf.score(G[val], y[val]) == pytest.approx(1.0 - err.min())


def test_default_is_the_accuracy():
    # as the docstring says
    assert SolitudeClassifier().selection == "accuracy"


def test_both_and_auto(data):
    loss = _fit(data, selection="loss")
    assert np.ndim(loss.validation_scores_[0]) == 0
    both = _fit(data, selection="both")
    pairs = np.asarray(both.validation_scores_)
    assert pairs.shape == (25, 2)
    np.testing.assert_allclose(pairs[:, 0], loss.validation_scores_, rtol=1e-6)
    np.testing.assert_allclose(pairs[:, 1], _fit(data, selection="accuracy").validation_scores_)
    # "auto" with validation nodes is "both"
    np.testing.assert_array_equal(_fit(data, selection="auto").validation_scores_, pairs)
