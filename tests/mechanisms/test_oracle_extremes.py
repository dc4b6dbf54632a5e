"""Frequency-oracle probabilities and the HDS variance at budgets where e^eps overflows
(or is infinite): finite limits, and the ordinary budgets' values bit for bit."""

import warnings

import numpy as np
import pytest

from skldp.mechanisms import (
    frequency_oracle_probabilities,
    hds_estimator_variance,
    set_valued_variance,
)
from skldp.mechanisms._grr import grr_probabilities

# the budgets the mechanisms accept (2^-30..50), and a few beyond
ORDINARY = np.r_[np.geomspace(1e-6, 50, 400), [1.0, 2.0, 50.0, 300.0, 709.0]]


def test_ordinary_budgets_keep_the_device_programs_probabilities():
    # the sampling of GRR, set-valued and GRR-FS reports reads these: not one bit moves
    for eps in ORDINARY:
        e = np.exp(eps)
        for D in (2, 3, 11, 1000):
            assert frequency_oracle_probabilities(eps, D, "grr") == \
                (e / (e + D - 1.0), 1.0 / (e + D - 1.0))
        assert frequency_oracle_probabilities(eps, 5, "oue") == (0.5, 1.0 / (e + 1.0))
        c = np.array([2.0, 5.0, 40.0])
        p, q = grr_probabilities(eps, c)
        assert np.array_equal(p, e / (e + c - 1.0)) and np.array_equal(q, 1.0 / (e + c - 1.0))


@pytest.mark.parametrize("eps", [709.8, 710.0, 1000.0, 1e300])
def test_grr_beyond_exp_overflow_is_finite(eps):
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no overflow or invalid-value warning either
        p, q = frequency_oracle_probabilities(eps, 4, "grr")
        assert p == 1.0 and 0.0 <= q <= 1e-300
        assert frequency_oracle_probabilities(eps, 4, "oue") == (0.5, 0.0)
        P, Q = grr_probabilities(eps, [2, 7])
        np.testing.assert_array_equal(P, [1.0, 1.0])
        assert np.all((Q >= 0) & (Q <= 1e-300))
        v = set_valued_variance(eps, 10, 2, "grr")
        assert np.isfinite(v) and 0.0 <= v <= 1e-300
    # the same as just below the overflow: the limit, continuously
    assert frequency_oracle_probabilities(709.0, 4, "grr")[0] == 1.0


def test_hds_variance_without_noise_is_the_samplings():
    # eps = inf: C = k/d, so Var[report / C] = (d/k - 1) E[x^2]
    assert hds_estimator_variance(np.inf, 1, 10) == pytest.approx(3.0)
    np.testing.assert_allclose(hds_estimator_variance(np.inf, [1, 5, 10], 10, x2=0.5),
                               [4.5, 0.5, 0.0])
    # per budget, among finite ones (which keep their values)
    v = hds_estimator_variance(np.array([1.0, np.inf, 50.0]), 2, 10)
    assert v[1] == pytest.approx(4 / 3)
    np.testing.assert_array_equal(v[[0, 2]], hds_estimator_variance(np.array([1.0, 50.0]), 2, 10))
    # the finite budgets tend to it
    assert hds_estimator_variance(1e4, 1, 10) == pytest.approx(3.0, rel=1e-3)


@pytest.mark.parametrize("k", [11, 0, [1, 20], 2.5])
def test_hds_variance_refuses_k_outside_1_to_d(k):
    with pytest.raises(ValueError, match=r"k must be an integer in 1\.\.10 \(n_features=10\)"):
        hds_estimator_variance(1.0, k, 10)
