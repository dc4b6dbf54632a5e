"""A fit that fails leaves no fitted attribute it set: scikit-learn's check_is_fitted passed
on a mechanism whose transform then said it was not fitted."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from skldp import GraphData
from skldp.mechanisms import GRRFSMechanism, OneBitMechanism
from skldp.propagation import KProp


def test_a_failed_first_fit_leaves_the_step_unfitted():
    G = GraphData(np.random.default_rng(0).random((10, 3)))     # not categorical
    m = GRRFSMechanism(eps=1.0, domain_sizes=[3, 3, 3], random_state=0)
    with pytest.raises(ValueError, match="not categorical"):
        m.fit(G)
    assert not hasattr(m, "n_features_in_")
    with pytest.raises(NotFittedError):
        check_is_fitted(m)
    k = KProp()
    with pytest.raises(ValueError, match="NaN"):
        k.fit(GraphData(np.array([[np.nan], [1.0]]), np.eye(2)))   # after n_features_in_
    with pytest.raises(NotFittedError):
        check_is_fitted(k)


def test_a_failed_refit_keeps_what_the_first_fit_set_and_drops_what_it_added():
    X = np.random.default_rng(0).random((10, 2))
    m = OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0).fit(X)
    fitted = {k for k in vars(m) if k.endswith("_") and not k.startswith("_")}
    with pytest.raises(ValueError, match="overflow to inf"):
        m.set_params(feature_range=(0, 1e308)).fit(X)
    assert {k for k in vars(m) if k.endswith("_") and not k.startswith("_")} <= fitted
    check_is_fitted(m)
