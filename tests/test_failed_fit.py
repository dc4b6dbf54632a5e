"""A fit that fails leaves no fitted attribute it set: scikit-learn's check_is_fitted passed
on a mechanism whose transform then said it was not fitted."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from skldp import GraphData
from skldp.mechanisms import GRRFSMechanism, LaplaceMechanism
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


def test_a_failed_refit_leaves_the_step_as_it_was():
    # the refit overwrote the bounds before it was refused: with the parameters set back,
    # transform answered the earlier collection again (free) with the failed fit's bounds,
    # and the two answers together gave the noise away
    X = np.random.default_rng(0).random((50, 2))
    m = LaplaceMechanism(eps=1.0, feature_range=(0, 1), random_state=0).fit(X)
    first = m.transform(X)
    state = dict(vars(m))
    with pytest.raises(ValueError, match="overflow to inf"):
        m.set_params(feature_range=(-1e300, 1e300)).fit(X)
    assert m.feature_min_ is state["feature_min_"] and m.feature_max_ is state["feature_max_"]
    assert {k: v for k, v in vars(m).items() if k != "feature_range"} == \
        {k: v for k, v in state.items() if k != "feature_range"}
    np.testing.assert_array_equal(m.set_params(feature_range=(0, 1)).transform(X), first)
