"""The feature signal-to-noise of a budget split averages the
reports of a node and its neighbours (1 + mean degree of them)."""

import numpy as np
import pytest

from skldp import GraphData
from skldp.accounting import recommend_budget_split
from skldp.mechanisms import MultiBitMechanism


@pytest.mark.parametrize("deg", [0.0, 3.9, 20.0])
def test_feature_snr_is_one_plus_degree_over_the_multibit_variance(deg):
    s = recommend_budget_split(12.0, n_nodes=1000, n_features=4, n_classes=2,
                               labelled_fraction=0.5, mean_degree=deg)
    assert s.eps_features > 0
    mech = MultiBitMechanism(s.eps_features, feature_range=(0, 1)).fit(
        GraphData(np.full((1, 4), 0.5)))
    var = float(mech.variance(0.5)[0])
    assert s.feature_snr == pytest.approx((1.0 + deg) / var)
