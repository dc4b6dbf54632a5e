"""The moments of a fitted mechanism describe its reports, whatever its parameters became.

``transform`` refuses parameters changed since fit (the reports are those of the fitted
collection); ``mean`` and ``variance`` answered for the new ``eps`` instead, values that
no report of the fitted mechanism has (HDS and set-valued read ``eps`` anew; the other
feature mechanisms read their fitted budget).
"""

import numpy as np
import pytest

from skldp.mechanisms import HDSMechanism, MultiBitMechanism, SetValuedMechanism


@pytest.mark.parametrize("new_eps", [8.0, np.inf])
def test_hds_moments_are_those_of_the_fitted_budget(new_eps):
    X = np.random.default_rng(0).random((30, 4))
    mech = HDSMechanism(1.0, k=2, feature_range=(0, 1), random_state=0).fit(X)
    x = np.array([0.9, 0.1, 0.5, 0.3])
    var, mean = mech.variance(x), mech.mean(x)
    mech.set_params(eps=new_eps)
    np.testing.assert_array_equal(mech.variance(x), var)
    np.testing.assert_array_equal(mech.mean(x), mean)


@pytest.mark.parametrize("new_eps", [4.0, np.inf])
def test_set_valued_moments_are_those_of_the_fitted_budget(new_eps):
    S = (np.random.default_rng(0).random((30, 5)) > 0.5).astype(float)
    mech = SetValuedMechanism(1.0, ell=2, random_state=0).fit(S)
    var, mean = mech.variance(S[:3]), mech.mean(S[:3])
    mech.set_params(eps=new_eps)
    np.testing.assert_array_equal(mech.variance(S[:3]), var)
    np.testing.assert_array_equal(mech.mean(S[:3]), mean)


def test_the_other_mechanisms_already_did():
    X = np.random.default_rng(0).random((30, 4))
    mech = MultiBitMechanism(1.0, m=2, feature_range=(0, 1), random_state=0).fit(X)
    var = mech.variance(0.5)
    mech.set_params(eps=8.0)
    np.testing.assert_array_equal(mech.variance(0.5), var)
