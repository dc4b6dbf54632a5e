"""audit_ledger's family-wise confidence and maximum, and
the threshold of check_output_grid's finite-support test."""
import numpy as np
import pytest
from scipy.stats import beta
from sklearn.pipeline import Pipeline

from skldp.audit import audit_ledger, check_output_grid
from skldp.baselines import LabelPropagationClassifier
from skldp.mechanisms import LabelRandomizedResponse, OneBitMechanism


def test_ledger_components_share_the_confidence_and_the_result_is_their_maximum():
    pipe = Pipeline([("bit", OneBitMechanism(1.0, feature_range=(0, 1), split_eps=True,
                                             random_state=0)),
                     ("clf", LabelPropagationClassifier(label_mechanism=LabelRandomizedResponse(
                         1.0, classes=[0, 1], random_state=0)))])
    res = audit_ledger(pipe, [0.0, 0.0], [1.0, 1.0], y0=0, y1=1, n_samples=2000,
                       confidence=0.9)
    m = len(res.components)
    assert m >= 3   # two feature coordinates, the feature collection, labels, joint...
    for c in res.components:
        assert c.confidence == pytest.approx(1 - 0.1 / m)
    assert res.confidence == 0.9
    assert res.epsilon_lower == max(c.epsilon_lower for c in res.components)
    assert res.epsilon_claimed == pytest.approx(2.0)   # 1 (features) + 1 (labels)


def _rare_value_for_x0(X, keys):
    # input 0 reports 1 on exactly every 10th of its users, input 1 never does
    first_block = np.arange(len(X)) < len(X) // 2
    return ((X[:, 0] == 0) & first_block & (np.arange(len(X)) % 10 == 0)).astype(float)


def test_finite_support_flag_threshold_is_exp_minus_eps():
    # A value seen k = 100 times in n = 1000 reports of x0 and never for x1 is flagged
    # when an eps-LDP mechanism would give it an expected count >= 10 under x1:
    # CP_lower(k / n, 1e-3) e^-eps n >= 10. Just below / above the threshold eps*:
    n, k = 1000, 100
    eps_star = np.log(beta.ppf(1e-3, k, n - k + 1) * n / 10.0)
    assert 1.5 < eps_star < 2.5
    below = check_output_grid(_rare_value_for_x0, [[0.0], [1.0]], n_samples=n,
                              epsilon=eps_star - 0.05)
    above = check_output_grid(_rare_value_for_x0, [[0.0], [1.0]], n_samples=n,
                              epsilon=eps_star + 0.05)
    assert below.kind == above.kind == "finite"
    assert not below.passed and below.flagged == ((0, 1.0, 0, 1, k),)
    assert above.passed and above.flagged == ()
