"""LabelPropagationClassifier: the conjugate-gradient solve and the noise correction.

The closed-form test of test_label_propagation.py uses a tight ``tol`` and the default
``max_iter``, no label mechanism and a connected graph: it does not see how many
steps the solver takes, a class that no training node reports, the prior of nodes
that no label reaches under noise correction, or negative corrected scores. These
tests check those against Zhou et al.'s formula and CG's finite termination.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from skldp import GraphData
from skldp.baselines import LabelPropagationClassifier
from skldp.mechanisms import LabelRandomizedResponse


def _complete(n=5):
    return GraphData(np.zeros((n, 1)), sp.csr_array(np.ones((n, n)) - np.eye(n)))


def _dense_sym(A):
    A = np.asarray(A.todense(), dtype=float)
    d = A.sum(1)
    dinv = np.where(d > 0, 1 / np.sqrt(np.where(d > 0, d, 1)), 0.0)
    return dinv[:, None] * A * dinv[None, :]


def test_cg_terminates_in_as_many_steps_as_distinct_eigenvalues():
    # On K_n, I - a S has two distinct eigenvalues: CG is exact after two steps, so
    # max_iter=2 must converge (no warning) and give the closed form; one step cannot.
    G, a = _complete(), 0.9
    lp = LabelPropagationClassifier(alpha=a, tol=1e-8, max_iter=2).fit(G[[0, 1]], [0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        P = lp.predict_proba(G)
    S = _dense_sym(G.adjacency)
    F = np.linalg.solve(np.eye(5) - a * S, np.eye(5)[:, :2])
    np.testing.assert_allclose(P, F / F.sum(1, keepdims=True), atol=1e-10)
    one = LabelPropagationClassifier(alpha=a, tol=1e-8, max_iter=1).fit(G[[0, 1]], [0, 1])
    with pytest.warns(ConvergenceWarning):
        one.predict_proba(G)


def test_isolated_nodes_give_no_numpy_warning(small_graph):
    A, X, y = small_graph
    A = sp.block_diag([A, sp.csr_array((2, 2))], format="csr")   # two isolated nodes
    G = GraphData(np.zeros((62, 1)), A)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = LabelPropagationClassifier().fit(G[::3], np.r_[y, 0, 1][::3]).predict_proba(G)
    assert np.all(np.isfinite(P))


def test_public_class_that_no_training_node_reports():
    # classes [0, 1, 2] are public, nobody reports 2 (eps=50 flips no label): its column
    # of Y is zero, CG must return zero scores for it, not NaN
    G = _complete(6)
    rr = LabelRandomizedResponse(50.0, classes=[0, 1, 2], random_state=0)
    lp = LabelPropagationClassifier(label_mechanism=rr).fit(G[[0, 1, 2]], [0, 1, 1])
    np.testing.assert_array_equal(lp.train_labels_, [0, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = lp.predict_proba(G)
    Y = np.zeros((6, 3))
    Y[[0, 1, 2], [0, 1, 1]] = 1.0
    F = np.linalg.solve(np.eye(6) - 0.9 * _dense_sym(G.adjacency), Y)
    np.testing.assert_allclose(P, F / F.sum(1, keepdims=True), atol=1e-6)
    np.testing.assert_array_equal(P[:, 2], 0.0)


@pytest.mark.parametrize("alpha", [0.0, 0.9])
def test_noise_correction_matches_dense_backward_correction(small_graph, alpha):
    # F = (1 - a)(I - a S)^-1 Y times T^-1, clipped at 0, rows normalised; rows without
    # mass (isolated nodes) get the corrected class frequencies of the noisy labels
    A, X, y = small_graph
    A = sp.block_diag([A, sp.csr_array((2, 2))], format="csr")
    G = GraphData(np.zeros((62, 1)), A)
    train = np.arange(0, 60, 2)
    rr = LabelRandomizedResponse(0.5, classes=[0, 1], random_state=1)
    lp = LabelPropagationClassifier(alpha=alpha, label_mechanism=rr, tol=1e-12)
    lp.fit(G[train], y[train])
    P = lp.predict_proba(G)
    Tinv = np.linalg.inv(lp.label_mechanism_.transition_matrix_)
    Y = np.zeros((62, 2))
    Y[train, lp.train_labels_] = 1.0
    F = (1 - alpha) * np.linalg.solve(np.eye(62) - alpha * _dense_sym(A), Y)
    F = np.maximum(F @ Tinv, 0.0)
    prior = np.maximum(np.bincount(lp.train_labels_, minlength=2) @ Tinv, 0.0)
    prior /= prior.sum()
    s = F.sum(1, keepdims=True)
    expected = np.where(s > 0, F / np.where(s > 0, s, 1.0), prior)
    np.testing.assert_allclose(P, expected, atol=1e-8)
    assert P.min() >= 0.0


def test_a_training_node_listed_twice_counts_twice(small_graph):
    # label_matrix sums repeated nodes: listing node 0 twice weighs its label twice
    A, X, y = small_graph
    G = GraphData(X, A)
    rows, labels = np.array([0, 0, 40, 45]), np.array([0, 0, 1, 1])
    lp = LabelPropagationClassifier(alpha=0.8, tol=1e-12).fit(G[rows], labels)
    Y = np.zeros((60, 2))
    np.add.at(Y, (rows, labels), 1.0)
    F = np.linalg.solve(np.eye(60) - 0.8 * _dense_sym(A), Y)
    np.testing.assert_allclose(lp.predict_proba(G), F / F.sum(1, keepdims=True), atol=1e-8)
