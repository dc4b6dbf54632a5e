"""A mechanism rebuilt from its collection's spec decodes as the original.

``mechanism_from_spec`` restores the public state a server needs to read reports
(no secret). Its report probabilities must be those of the devices' program:
set-valued GRR/OUE over ``d + 1`` items (the ``d`` features and the dummy item of
padding-and-sampling, Qin et al., CCS 2016; Wang et al., IEEE S&P 2018), and k-ary
randomized response with ``p = e^eps q``.
"""

import numpy as np
import pytest

from skldp.mechanisms import LabelRandomizedResponse, SetValuedMechanism
from skldp.population import collection_spec, mechanism_from_spec


@pytest.mark.parametrize("oracle", ["grr", "oue"])
def test_set_valued_rebuilt_uses_d_plus_one_items(oracle):
    eps, d = 1.0, 6
    X = (np.random.default_rng(0).random((30, d)) < 0.3).astype(float)
    mech = SetValuedMechanism(eps, ell=2, oracle=oracle, random_state=0).fit(X)
    rebuilt = mechanism_from_spec(mech.collection_)
    e = np.exp(eps)
    p, q = (e / (e + d), 1 / (e + d)) if oracle == "grr" else (0.5, 1 / (e + 1))
    assert (rebuilt.p_, rebuilt.q_) == pytest.approx((p, q))
    for a, b in zip(rebuilt.output_grid_, mech.output_grid_, strict=True):
        np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(rebuilt.variance(X[:5]), mech.variance(X[:5]))


def test_label_rr_rebuilt_transition_matrix():
    eps, c = 1.5, 4
    rr = LabelRandomizedResponse(eps, classes=np.arange(c), random_state=0).fit()
    spec = collection_spec(LabelRandomizedResponse(eps, classes=np.arange(c)))
    rebuilt = mechanism_from_spec(spec)
    q = 1 / (np.exp(eps) + c - 1)
    T = np.where(np.eye(c, dtype=bool), np.exp(eps) * q, q)
    np.testing.assert_allclose(rebuilt.transition_matrix_, T)
    np.testing.assert_allclose(rebuilt.transition_matrix_.sum(axis=1), 1.0)
    y_noisy = np.repeat(np.arange(c), [10, 20, 30, 40])
    np.testing.assert_allclose(rebuilt.estimate_frequencies(y_noisy),
                               rr.estimate_frequencies(y_noisy))
