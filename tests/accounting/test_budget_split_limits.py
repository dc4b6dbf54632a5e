"""A recommended split is one the mechanisms accept: at most 50 per coordinate
for the multi-bit features and for the label's randomized response."""

import math

import numpy as np
import pytest

from skldp import GraphData
from skldp.accounting import recommend_budget_split
from skldp.mechanisms import LabelRandomizedResponse, MultiBitMechanism

CORA = {"n_nodes": 2708, "n_features": 1433, "n_classes": 7, "labelled_fraction": 0.5,
        "mean_degree": 3.9}


@pytest.mark.parametrize("budget, d, deg", [(60.0, 1433, 3.9), (150.0, 2, 3.0),
                                            (55.0, 1, 3.0), (100.0, 1, 3.0),
                                            (100.0 - 1e-9, 1, 0.0)])
def test_both_shares_are_accepted_by_their_mechanisms(budget, d, deg):
    s = recommend_budget_split(budget, **{**CORA, "n_features": d, "mean_degree": deg})
    assert s.eps_features + s.eps_labels == pytest.approx(budget)
    assert s.eps_labels <= 50.0 and s.eps_features <= 50.0 * d
    if s.eps_features > 0:
        MultiBitMechanism(s.eps_features, feature_range=(0, 1)).fit(
            GraphData(np.full((1, d), 0.5)))
    LabelRandomizedResponse(s.eps_labels, classes=np.arange(7)).fit()


def test_a_budget_no_split_can_spend_is_refused():
    with pytest.raises(ValueError, match="total_budget"):
        recommend_budget_split(50.0 * 3 + 1.0, **{**CORA, "n_features": 2})
    # just at the limit it is spent in full
    s = recommend_budget_split(50.0 * 3, **{**CORA, "n_features": 2})
    assert (s.eps_features, s.eps_labels) == (100.0, 50.0)
    assert math.isclose(s.label_signal, 1.0)
