"""CorrectAndSmooth refuses base-model probabilities it cannot propagate."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin

from skldp import GraphData
from skldp.baselines import CorrectAndSmooth


class _Base(ClassifierMixin, BaseEstimator):
    """A base model whose predict_proba is off in the way ``bad`` says."""

    def __init__(self, bad=None):
        self.bad = bad

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        P = np.tile([0.6, 0.4], (len(X), 1))
        if self.bad == "nan":
            P[0] = np.nan
        elif self.bad == "inf":
            P[0, 0] = np.inf
        elif self.bad == "columns":
            P = P[:, :1]
        elif self.bad == "rows":
            P = P[1:]
        return P


def _graph():
    A = sp.csr_array(np.array([[0, 1, 0, 0], [1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 0]],
                              dtype=float))
    return GraphData(np.zeros((4, 1)), A)


@pytest.mark.parametrize("bad, match", [("nan", "NaN or infinite"),
                                        ("inf", "NaN or infinite"),
                                        ("columns", r"shape \(4, 1\)"),
                                        ("rows", r"shape \(3, 2\)")])
def test_base_probabilities_it_cannot_propagate_are_refused(bad, match):
    # a NaN of the base model at node 0 spread to every node within n_iter hops, and
    # normalising the rows turned them into uniform probabilities: [0.5, 0.5] at node 1
    # too, without a word; a wrong number of columns or rows raised numpy's IndexError
    G = _graph()
    cs = CorrectAndSmooth(_Base(bad)).fit(G[[2, 3]], [0, 1])
    with pytest.raises(ValueError, match=match):
        cs.predict_proba(G[[0, 1]])


def test_valid_base_probabilities_propagated():
    G = _graph()
    P = CorrectAndSmooth(_Base()).fit(G[[2, 3]], [0, 1]).predict_proba(G[[0, 1]])
    assert np.isfinite(P).all()
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
