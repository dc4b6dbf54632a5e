"""Sparse inputs are clipped to ``feature_range`` on both sides.

A sparse input whose range holds 0 stays sparse, and its stored values are clipped
to ``[lo, hi]`` per column. A value below ``lo`` left unclipped would reach the
device program outside the public bounds: one-bit's probability of a 1 would drop
below ``1 / (1 + e^eps)`` and the report would no longer be ``eps``-LDP.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.mechanisms import OneBitMechanism, PiecewiseMechanism
from skldp.utils.validation import clip_to_range


def _sparse_with_values_outside(n=300):
    """A CSR matrix over range (-1, 1) with values below -1 and above 1 in every row."""
    rng = np.random.default_rng(0)
    X = np.zeros((n, 4))
    X[:, 0] = -5.0                             # below lo
    X[:, 1] = 7.0                              # above hi
    X[:, 2] = rng.uniform(-1.0, 1.0, size=n)   # inside
    return sp.csr_matrix(X)


def test_clip_to_range_clips_sparse_values_below_lo_and_above_hi():
    """Every stored value of the result lies in [lo, hi] of its column."""
    X = _sparse_with_values_outside()
    lo, hi = np.full(4, -1.0), np.full(4, 1.0)
    with pytest.warns(UserWarning, match="clipped"):
        C = clip_to_range(X, lo, hi)
    C = C.toarray() if sp.issparse(C) else np.asarray(C)
    np.testing.assert_array_equal(C, np.clip(X.toarray(), lo, hi))


@pytest.mark.parametrize("make", [
    lambda: OneBitMechanism(eps=1.0, feature_range=(-1.0, 1.0), random_state=0),
    lambda: PiecewiseMechanism(eps=2.0, k=4, feature_range=(-1.0, 1.0), random_state=0),
])
def test_sparse_reports_are_those_of_the_clipped_values(make):
    """Out-of-range sparse values give exactly the reports of their clipped values."""
    X = _sparse_with_values_outside()
    ids = np.arange(X.shape[0]) + 100
    G = GraphData(X, node_ids=ids)
    mech = make()
    with pytest.warns(UserWarning, match="clipped"):
        Z = mech.fit(G).transform(G).features
    # the same users with their values clipped: the devices answer about the same input
    G_clipped = GraphData(np.clip(X.toarray(), -1.0, 1.0), node_ids=ids, population=G)
    Z_clipped = mech.transform(G_clipped).features
    Z = Z.toarray() if sp.issparse(Z) else np.asarray(Z)
    Z_clipped = Z_clipped.toarray() if sp.issparse(Z_clipped) else np.asarray(Z_clipped)
    np.testing.assert_array_equal(Z, Z_clipped)


def test_hds_mean_and_variance_clip_raw_values_to_the_range():
    """HDS's ``mean`` and ``variance`` take raw values clipped to ``feature_range`` (as
    ``transform`` does), so a value beyond a bound has the moments of the bound."""
    from skldp.mechanisms import HDSMechanism

    mech = HDSMechanism(eps=2.0, k=2, feature_range=(0.0, 1.0), random_state=0)
    mech.fit(np.zeros((2, 3)))
    raw = np.array([[3.0, -2.0, 0.25]])
    clipped = np.array([[1.0, 0.0, 0.25]])
    np.testing.assert_allclose(mech.mean(raw), mech.mean(clipped))
    np.testing.assert_allclose(mech.variance(raw), mech.variance(clipped))
    # the mean of the upper bound is C * 1 = -(mean of the lower bound): C x is odd in x
    m = mech.mean(clipped)[0]
    assert m[0] > 0 and m[0] == pytest.approx(-m[1])
