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


@pytest.mark.parametrize("extra", [1e-12, 52.0])
def test_a_feature_share_outside_the_mechanisms_range_is_no_crash(extra):
    # B just above the label's saturation leaves features 1e-12 (below 2^-30 per
    # coordinate), and B far above it leaves one feature 52 (above 50): the signal-to-
    # noise is the variance formula's, not a fit of MultiBitMechanism that refuses both; the
    # recommendation caps the features at 50 (test_budget_split_limits)
    c = 2
    saturated = np.log((0.9 * (c - 1) + 1) / 0.1)
    s = recommend_budget_split(saturated + extra, n_nodes=100, n_features=1, n_classes=c,
                               labelled_fraction=1.0, mean_degree=3.0)
    assert s.eps_features + s.eps_labels == saturated + extra
    eps = s.eps_features if s.eps_features > 0 else extra
    var = 0.25 / np.tanh(eps / 2.0) ** 2   # (d/m) (1/2)^2 c^2 at the middle, d = m = 1
    if s.eps_features > 0:
        assert s.feature_snr == pytest.approx(4.0 / var)
    else:
        assert 4.0 / var < 1.0 and s.feature_snr == 0.0
