"""A mechanism's collection belongs to the users it was fitted on: other data are other
users, whose reports it neither keeps nor shares its random numbers with."""

import numpy as np
import pytest

from skldp import GraphData
from skldp.mechanisms import LaplaceMechanism
from skldp.privacy import forget_secrets


def test_forget_secrets_refuses_the_graph_of_other_users():
    rng = np.random.default_rng(0)
    G1, G2 = GraphData(rng.random((12, 3))), GraphData(rng.random((12, 3)))
    mech = LaplaceMechanism(1.0, feature_range=(0, 1), random_state=0).fit(G1)
    Z = mech.transform(G1)
    # G2's users never were asked this collection: their reports must not be kept as
    # if they were G1's (both graphs key their nodes by position)
    with pytest.raises(ValueError, match="other users"):
        forget_secrets(mech, G2)
    forget_secrets(mech, G1)
    np.testing.assert_array_equal(mech.transform(G1), Z)


def test_rows_of_two_arrays_are_different_users_with_independent_noise():
    rng = np.random.default_rng(1)
    X1 = rng.random((20, 3))
    X2 = X1.copy()
    X2[-1] = 1.0 - X2[-1]          # another array: its rows are other users
    make = lambda: LaplaceMechanism(1.0, feature_range=(0, 1), random_state=0)  # noqa: E731
    Z1, Z1b, Z2 = make().fit_transform(X1), make().fit_transform(X1), make().fit_transform(X2)
    np.testing.assert_array_equal(Z1, Z1b)      # same request, same users: same collection
    # same request, same values in rows 0..18, but other users: no report is shared
    assert not np.any(np.all(Z1[:-1] == Z2[:-1], axis=1))
