"""recommend_budget_split: known answers, the split adds up, bad input."""

import math

import pytest

from skldp.accounting import BudgetSplit, recommend_budget_split

CORA = {"n_nodes": 2708, "n_features": 1433, "n_classes": 7, "labelled_fraction": 0.5,
        "mean_degree": 3.9}


@pytest.mark.parametrize("budget", [0.5, 1.0, 2.0, 4.0, 8.0])
def test_cora_like_data_put_everything_on_the_label(budget):
    s = recommend_budget_split(budget, **CORA)
    assert isinstance(s, BudgetSplit)
    assert (s.eps_features, s.eps_labels, s.share, s.feature_snr) == (0.0, budget, 0.0, 0.0)
    gap = (math.exp(budget) - 1) / (math.exp(budget) + 6)
    assert s.label_signal == pytest.approx(gap)
    assert s.effective_labels == pytest.approx(1354 * gap ** 2)


def test_below_saturation_the_reason_is_the_label():
    # 7 classes: randomized response keeps 90 % of the signal from ln(6.4 / 0.1) = 4.16
    assert "4.16" in recommend_budget_split(4.0, **CORA).reason
    # above it, the 1,433 sparse features at eps 3.84 are noise
    assert "noise" in recommend_budget_split(8.0, **CORA).reason


def test_few_dense_features_and_many_neighbours_get_what_the_label_does_not_need():
    s = recommend_budget_split(8.0, n_nodes=1000, n_features=10, n_classes=2,
                               labelled_fraction=0.5, mean_degree=20.0)
    assert s.eps_labels == pytest.approx(math.log(19.0))     # 0.9 of the signal, 2 classes
    assert s.eps_features == pytest.approx(8.0 - math.log(19.0))
    assert s.eps_features + s.eps_labels == pytest.approx(8.0)
    assert s.label_signal == pytest.approx(0.9)
    assert s.effective_labels == pytest.approx(500 * 0.81)
    assert s.feature_snr >= 1.0 and 0 < s.share < 1
    # the same data with no neighbour to average over: the features stay noise
    alone = recommend_budget_split(8.0, n_nodes=1000, n_features=10, n_classes=2,
                                   labelled_fraction=0.5, mean_degree=0.0)
    assert alone.eps_features == 0.0 and "noise" in alone.reason
    # more classes need more label budget
    more = recommend_budget_split(8.0, n_nodes=1000, n_features=10, n_classes=20,
                                  labelled_fraction=0.5, mean_degree=20.0)
    assert more.eps_labels > s.eps_labels


@pytest.mark.parametrize("name, value, error", [
    ("total_budget", 0.0, ValueError), ("total_budget", math.inf, ValueError),
    ("total_budget", math.nan, ValueError), ("total_budget", "2", TypeError),
    ("n_nodes", 0, ValueError), ("n_nodes", 10.5, TypeError), ("n_features", True, TypeError),
    ("n_classes", 1, ValueError), ("labelled_fraction", 0.0, ValueError),
    ("labelled_fraction", 1.5, ValueError), ("mean_degree", -1.0, ValueError)])
def test_bad_input_is_refused(name, value, error):
    kwargs = {"total_budget": 2.0, **CORA, name: value}
    budget = kwargs.pop("total_budget")
    with pytest.raises(error, match=name):
        recommend_budget_split(budget, **kwargs)


def test_no_label_sender_is_refused():
    with pytest.raises(ValueError, match="no user sends a label"):
        recommend_budget_split(2.0, **{**CORA, "n_nodes": 10, "labelled_fraction": 0.05})


@pytest.mark.parametrize("deg", [100.0, 1e30])
def test_a_mean_degree_above_the_other_users_is_refused(deg):
    # 100 users have at most 99 neighbours each; 1e30 used to credit 1e-12 of budget per
    # feature (below the 2^-30 MultiBitMechanism accepts) with a signal-to-noise of 1e6
    with pytest.raises(ValueError, match="mean_degree"):
        recommend_budget_split(3.0, n_nodes=100, n_features=1, n_classes=2,
                               labelled_fraction=1.0, mean_degree=deg)
    s = recommend_budget_split(3.0, n_nodes=100, n_features=1, n_classes=2,
                               labelled_fraction=1.0, mean_degree=99.0)
    assert s.eps_features + s.eps_labels == pytest.approx(3.0)
