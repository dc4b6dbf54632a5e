"""``feature_range`` must give every feature a non-empty interval, lo < hi.

A mechanism scales each feature by ``hi - lo``: an empty range (lo == hi) would divide
by zero and send NaN or infinite reports, or a report that says nothing while epsilon_
states a cost. It is refused at fit, before any user answers.
"""

import numpy as np
import pytest

from skldp import GraphData
from skldp.mechanisms import LaplaceMechanism, OneBitMechanism
from skldp.utils.validation import resolve_feature_range


@pytest.mark.parametrize("bounds", [(1.0, 1.0), (0.0, [1.0, 0.0]), ([0.0, 2.0], 2.0)])
def test_an_empty_range_is_refused(bounds):
    X = np.full((3, 2), 0.5)
    with pytest.raises(ValueError, match="lo < hi"):
        resolve_feature_range(bounds, X)


@pytest.mark.parametrize("mech", [LaplaceMechanism, OneBitMechanism])
def test_a_mechanism_with_an_empty_range_is_refused_before_anyone_answers(mech):
    G = GraphData(np.full((4, 1), 0.5), node_ids=np.arange(4))
    with pytest.raises(ValueError, match="lo < hi"):
        mech(1.0, feature_range=(0.5, 0.5), random_state=0).fit(G)
    assert len(G.ledger.entries()) == 0


def test_a_narrow_but_non_empty_range_is_accepted():
    lo, hi = resolve_feature_range((0.0, [1e-9, 1.0]), np.zeros((2, 2)))
    np.testing.assert_array_equal(lo, [0.0, 0.0])
    assert np.all(hi > lo)


def test_bounds_read_from_a_constant_large_column_are_a_range():
    # lo + 1 rounds to lo at 1e17: the bounds read from the data were refused as "lo < hi",
    # a range the user never passed
    X = np.array([[1e17, 0.0], [1e17, 1.0]])
    with pytest.warns(Warning, match="feature_range was not given"):
        lo, hi = resolve_feature_range(None, X)
    assert (hi > lo).all() and hi[1] == 1.0 and lo[0] == 1e17
