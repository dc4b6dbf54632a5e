"""``check_eps``: a privacy budget is a real number > 0; NaN, 0, negatives and booleans
are refused, and ``inf`` (no privacy) only where it is allowed.

Steps that take ``eps`` outside of scikit-learn's parameter checks (``EdgeRR``'s
``expected_n_edges``, callable before fit) rely on it: an eps of 0 or NaN would give
a flip probability of 1/2 or NaN, and an expected count with no meaning.
"""

import numpy as np
import pytest

from skldp.exceptions import InvalidParameterError
from skldp.mechanisms import EdgeRR
from skldp.utils.validation import check_eps


@pytest.mark.parametrize("eps", [0, 0.0, -1.0, float("nan"), np.nan, True, False, "1", None])
def test_check_eps_refuses_what_is_no_budget(eps):
    with pytest.raises(InvalidParameterError):
        check_eps(eps)


def test_check_eps_returns_a_float_and_allows_inf_only_when_asked():
    assert check_eps(2) == 2.0 and isinstance(check_eps(np.float32(0.5)), float)
    assert check_eps(np.inf) == np.inf
    with pytest.raises(InvalidParameterError, match="finite"):
        check_eps(np.inf, allow_inf=False)
    assert check_eps(1e-6, allow_inf=False) == 1e-6


@pytest.mark.parametrize("eps", [0.0, float("nan"), -2.0])
def test_expected_edge_count_refuses_a_budget_that_is_none(eps):
    with pytest.raises(InvalidParameterError):
        EdgeRR(eps).expected_n_edges(10, 5)
    assert np.isfinite(EdgeRR(1.0).expected_n_edges(10, 5))
