"""Label reconstruction at the edges of floating point: a transition matrix too close to
uniform to invert, and simplex projections of large estimates."""

import warnings

import numpy as np
import pytest

from skldp.reconstruction import project_simplex, unbiased_label_distribution


def test_singular_transition_matrix_gives_a_clear_error():
    T = np.full((3, 3), 1 / 3)   # GRR's at eps=1e-17 in floating point (now refused there)
    with pytest.raises(ValueError, match="transition matrix T is singular.*budget is too small"):
        unbiased_label_distribution(np.array([[0.5, 0.3, 0.2]]), T)


@pytest.mark.parametrize("row, expected", [
    ([1e16, 0.0, 0.0], [1.0, 0.0, 0.0]),
    ([1e300, -1e300, 1e300], [0.5, 0.0, 0.5]),
    ([1e308, -1e308, 1e308], [0.5, 0.0, 0.5]),   # the shift overflows to -inf: a 0
    ([-1e16, -1e16 - 4.0, 3e7], [0.0, 0.0, 1.0]),
    ([2e7, 2e7 + 0.5, 0.0], [0.25, 0.75, 0.0]),
])
def test_large_rows_are_projected_onto_the_simplex(row, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        W = project_simplex([row])
    np.testing.assert_allclose(W, [expected], atol=1e-12)
    assert W.sum() == pytest.approx(1.0) and W.min() >= 0


def test_ordinary_rows_are_unchanged_bit_for_bit():
    # the reference: the sort-based algorithm as written before large rows were shifted
    V = np.random.default_rng(0).uniform(-10, 10, (5000, 6))
    U = -np.sort(-V, axis=1)
    css = np.cumsum(U, axis=1) - 1.0
    cond = U - css / np.arange(1, 7) > 0
    rho = 6 - np.argmax(cond[:, ::-1], axis=1)
    theta = css[np.arange(len(U)), rho - 1] / rho
    assert np.array_equal(project_simplex(V), np.maximum(V - theta[:, None], 0.0))


@pytest.mark.parametrize("V, match", [
    (np.full((2, 2, 2), 0.5), "1-D or 2-D.*got shape \\(2, 2, 2\\)"),
    (3.0, "1-D or 2-D.*got a scalar"),
    (np.zeros((2, 0)), "at least one column"),
])
def test_project_simplex_refuses_other_shapes(V, match):
    # a 3-D array came back 4-D (rows of its second axis projected along its third,
    # shaped (2, 2, 2, 2)), a scalar as a (1, 1) array: "the same shape" as neither;
    # no column raised numpy's "attempt to get argmax of an empty sequence"
    with pytest.raises(ValueError, match=match):
        project_simplex(V)


def test_project_simplex_keeps_the_shape_of_rows_and_of_no_row():
    assert project_simplex([0.8, 0.6, -0.4]).shape == (3,)
    assert project_simplex(np.zeros((0, 3))).shape == (0, 3)
    np.testing.assert_allclose(project_simplex([[3.0], [-2.0]]), [[1.0], [1.0]])
