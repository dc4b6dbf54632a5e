"""The budget left that a report prints is never negative float noise."""

import numpy as np

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.mechanisms import LaplaceMechanism


def test_a_budget_spent_in_float_steps_leaves_zero_not_a_negative_amount():
    # 0.1 + 0.1 + 0.1 = 0.30000000000000004: the ledger admits it under a cap of 0.3
    # (sums of floats), and the report printed "at least -5.552e-17 left to each user"
    G = GraphData(np.random.default_rng(0).random((20, 1)), budget=0.3)
    for seed in range(3):
        mech = LaplaceMechanism(0.1, feature_range=(0, 1), random_state=seed).fit(G)
        mech.transform(G)
    text = str(privacy_report(mech))
    assert "budget: 0.3 per user; at least 0 left to each user" in text
    assert "-" not in text.split("budget:")[1]


def test_a_cap_is_never_printed_above_itself():
    # a cap of 0.123456 printed as 0.1235 (rounded to nearest): more than the users allowed
    G = GraphData(np.random.default_rng(0).random((20, 1)), budget=0.123456)
    mech = LaplaceMechanism(0.1, feature_range=(0, 1), random_state=0).fit(G)
    mech.transform(G)
    text = str(privacy_report(mech))
    assert "budget: 0.1234 per user; at least 0.02345 left to each user" in text
