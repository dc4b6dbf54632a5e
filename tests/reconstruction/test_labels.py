"""Tests of label reconstruction (paper 001 §IV-B, eq. (14), Algorithm 2)."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp.device._kinds import MIN_EPS_PER_COORDINATE
from skldp.exceptions import InvalidParameterError
from skldp.mechanisms import LabelRandomizedResponse
from skldp.reconstruction import (
    grr_transition_matrix,
    project_simplex,
    reconstruct_labels,
    unbiased_label_distribution,
)


def _bisection_projection(v):
    """Reference: find theta with sum(max(v - theta, 0)) = 1 by bisection."""
    lo, hi = v.min() - 1, v.max()
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.maximum(v - mid, 0).sum() > 1:
            lo = mid
        else:
            hi = mid
    return np.maximum(v - (lo + hi) / 2, 0)


def test_project_simplex_matches_reference():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(200, 5)) * 2
    W = project_simplex(V)
    assert np.all(W >= 0)
    np.testing.assert_allclose(W.sum(axis=1), 1)
    ref = np.array([_bisection_projection(v) for v in V])
    np.testing.assert_allclose(W, ref, atol=1e-9)
    # points already on the simplex are fixed
    P = rng.dirichlet(np.ones(4), size=10)
    np.testing.assert_allclose(project_simplex(P), P, atol=1e-12)
    with pytest.raises(ValueError, match="finite"):
        project_simplex([np.nan, 1.0])


def test_transition_matrix_and_eq14_unbiased():
    T = grr_transition_matrix(1.0, 3)
    e = np.e
    np.testing.assert_allclose(np.diag(T), e / (e + 2))
    np.testing.assert_allclose(T.sum(axis=1), 1)
    assert np.array_equal(grr_transition_matrix(np.inf, 3), np.eye(3))
    pi = np.array([0.5, 0.3, 0.2])
    observed = pi @ T          # expected noisy distribution
    np.testing.assert_allclose(unbiased_label_distribution(observed, T), pi)


def test_reconstruction_recovers_neighbourhood_distribution():
    # one clique of labelled nodes (self loops): after propagation every node sees the
    # noisy distribution of all; eq. (14) recovers their true proportions. R draws of
    # the noisy labels of the same users: mean and spread against the formula.
    rng = np.random.default_rng(0)
    n, c, eps, R = 400, 3, 1.0, 300
    y = rng.choice(c, size=n, p=[0.6, 0.3, 0.1])
    A = sp.csr_matrix(np.ones((n, n)) - np.eye(n))
    labelled = np.arange(n)
    est = []
    for s in range(R):
        rr = LabelRandomizedResponse(eps, classes=[0, 1, 2], random_state=s).fit()
        noisy = rr.randomize_encoded(y, np.arange(n, dtype=np.uint64))
        soft = reconstruct_labels(A, labelled, noisy, rr.transition_matrix_, hops=1,
                                  project=False)
        np.testing.assert_allclose(soft, np.broadcast_to(soft[0], soft.shape), atol=1e-9)
        est.append(soft[0])
    est = np.array(est)
    truth = np.bincount(y, minlength=c) / n
    T = rr.transition_matrix_
    # covariance of the observed distribution for these users (each label randomized
    # once: sum of their own multinomial covariances), through T^-1
    cov = sum(truth[k] * (np.diag(T[k]) - np.outer(T[k], T[k])) for k in range(c)) / n
    Tinv = np.linalg.inv(T.T)
    var = np.diag(Tinv @ cov @ Tinv.T)
    m, v = est.mean(axis=0), est.var(axis=0, ddof=1)
    assert np.all(np.abs(m - truth) < 4 * np.sqrt(var / R)), (m, truth)
    se_v = np.sqrt((np.mean((est - m) ** 4, axis=0) - v ** 2) / R)
    assert np.all(np.abs(v - var) < 4 * se_v), (v, var)
    # inside the simplex, the projection changes nothing
    np.testing.assert_allclose(reconstruct_labels(A, labelled, noisy, T, hops=1), soft,
                               atol=1e-12)


def test_masked_propagation_ignores_unlabelled_nodes_and_hops0():
    # path 0 - 1 - 2; only 0 and 2 labelled. Node 1 carries no label mass.
    A = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    T = grr_transition_matrix(np.inf, 2)
    soft = reconstruct_labels(A, [0, 2], [0, 1], T, hops=2)
    # D^-1 (A + I) twice: node 0 gets label mass (5/12, 1/6) over a labelled
    # mass of 7/12 (node 1 contributes nothing), i.e. (5/7, 2/7); node 2 mirrors it.
    np.testing.assert_allclose(soft, [[5 / 7, 2 / 7], [2 / 7, 5 / 7]])
    soft0 = reconstruct_labels(A, [0, 2], [0, 1], grr_transition_matrix(1.0, 2), hops=0)
    np.testing.assert_allclose(soft0, [[1, 0], [0, 1]])  # projection of T^-1 e_k
    raw = reconstruct_labels(A, [0], [0], grr_transition_matrix(1.0, 2), hops=0, project=False)
    assert raw[0, 0] > 1 and raw[0, 1] < 0     # the unbiased estimate leaves the simplex
    with pytest.raises(ValueError, match="hops"):
        reconstruct_labels(A, [0], [0], T, hops=-1)


@pytest.mark.parametrize("eps, c, match", [
    (np.nan, 3, "eps must be a positive real number, got NaN"),   # was all NaN
    (-1.0, 3, "eps must be > 0"),                    # was a valid-looking inverted matrix
    ("1", 3, "eps must be a positive real number"),
    (1.0, 0, "n_classes must be an integer >= 2"),   # was a (0, 0) matrix
    (1.0, 1, "n_classes must be an integer >= 2"),
    (1.0, 2.5, "n_classes must be an integer"),
])
def test_transition_matrix_refuses_bad_budgets_and_domains(eps, c, match):
    with pytest.raises(InvalidParameterError, match=match):
        grr_transition_matrix(eps, c)


def test_transition_matrix_refuses_the_label_mechanisms_tiny_budgets():
    # below 2^-30 p - q was off (by 11 % at eps=1e-15) and the estimates biased
    # silently, where LabelRandomizedResponse refuses the budget
    for make in (lambda e: grr_transition_matrix(e, 2),
                 lambda e: LabelRandomizedResponse(e, classes=[0, 1]).fit()):
        with pytest.raises(ValueError, match="below 2\\^-30"):
            make(1e-15)
    T = grr_transition_matrix(MIN_EPS_PER_COORDINATE, 2)   # the floor: accurate p - q
    assert T[0, 0] - T[0, 1] == pytest.approx(np.tanh(MIN_EPS_PER_COORDINATE / 2), rel=1e-6)


def test_a_node_listed_twice_weighs_twice_in_label_and_mask():
    # Path 0 - 1 - 2, node 0 listed twice (a bootstrap view, as RGNN passes G.rows): its
    # label and its labelled mass both count twice, so the shares still sum to 1. Before,
    # the labels were summed but the mask set once: node 0 got (10/7, 2/7), projected to (1, 0).
    A = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    T = grr_transition_matrix(np.inf, 2)
    raw = reconstruct_labels(A, [0, 0, 2], [0, 0, 1], T, hops=2, project=False)
    np.testing.assert_allclose(raw.sum(axis=1), 1.0)
    # by hand: D^-1 (A + I) twice gives node 0 masses 5/12 (itself) and 1/6 (node 2),
    # node 2 the mirror; node 0 weighs 2
    np.testing.assert_allclose(raw, [[5 / 6, 1 / 6], [5 / 6, 1 / 6], [4 / 9, 5 / 9]])
    np.testing.assert_allclose(reconstruct_labels(A, [0, 0, 2], [0, 0, 1], T, hops=2), raw)


def test_reconstruct_labels_names_bad_codes_positions_and_shapes():
    # codes outside 0..c-1 (or -1) gave scipy's index errors, a position >= n too
    A = sp.csr_matrix(np.ones((6, 6)) - np.eye(6))
    T = grr_transition_matrix(1.0, 3)
    idx = np.arange(4)
    for bad in ([0, 1, 3, 0], [0, -1, 2, 0], [0, 1.5, 2, 0]):
        with pytest.raises(ValueError, match=r"noisy_labels must hold integers in 0\.\.2"):
            reconstruct_labels(A, idx, np.array(bad), T)
    with pytest.raises(ValueError, match=r"labelled must hold integers in 0\.\.5"):
        reconstruct_labels(A, [0, 1, 2, 6], [0, 1, 2, 0], T)
    with pytest.raises(ValueError, match="one entry per labelled node"):
        reconstruct_labels(A, idx, [0, 1, 2], T)
    with pytest.raises(ValueError, match="transition matrix T must have shape"):
        reconstruct_labels(A, idx, [0, 1, 2, 0], T[:2])
    with pytest.raises(ValueError, match="A must be an adjacency matrix"):
        reconstruct_labels(None, idx, [0, 1, 2, 0], T)
    assert reconstruct_labels(A, idx, [0, 1, 2, 0], T).shape == (4, 3)


def test_unbiased_label_distribution_names_a_transition_of_another_size():
    # a (3, 3) T with 2 columns of proportions raised numpy's gufunc error
    T = grr_transition_matrix(1.0, 3)
    with pytest.raises(ValueError, match=r"T must have shape \(2, 2\), one row per column"):
        unbiased_label_distribution(np.full((4, 2), 0.5), T)
    with pytest.raises(ValueError, match="NaN or infinite"):
        unbiased_label_distribution(np.full((4, 3), 1 / 3), np.full((3, 3), np.nan))


def test_a_node_listed_twice_with_two_labels_is_refused():
    # node 0 listed with labels 0 and 1: its shares mixed the two reports (0.5, 0.5)
    A = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    T = grr_transition_matrix(np.inf, 2)
    with pytest.raises(ValueError, match="node 0 more than once with different noisy"):
        reconstruct_labels(A, [0, 2, 0], [0, 1, 1], T, hops=0)
    # the same label twice (a bootstrap view) is still accepted
    assert reconstruct_labels(A, [0, 2, 0], [1, 1, 1], T, hops=0).shape == (3, 2)
