"""Aggregation operators of graphs with very large or very small edge weights."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.propagation import FeatureSmoothing, GCNAggregation, KProp, smooth_features


@pytest.mark.parametrize("weight", [2e38, 1e-39])
@pytest.mark.parametrize("make", [
    lambda dtype: KProp(1, self_loops=False, dtype=dtype),
    lambda dtype: KProp(2, normalization="sym", dtype=dtype),
    lambda dtype: GCNAggregation(self_loops=False, dtype=dtype),
    lambda dtype: FeatureSmoothing(1, dtype=dtype),
])
def test_float32_operator_of_extreme_weights(weight, make):
    # the degrees were summed in float32: node 0's (two edges of 2e38) overflowed to inf
    # and its row of the operator became zeros (a silent wrong output), and 1 / degree of
    # weights 1e-39 overflowed (a "sums overflowed" error on finite features); float64
    # and PPRPropagation were right. Any finite weight GraphData accepts is normalised.
    w = weight
    A = sp.csr_array(np.array([[0, w, w], [w, 0, 0], [w, 0, 0]]))
    G = GraphData(np.array([[0.0], [3.0], [6.0]]), A)
    want = np.asarray(make("float64").fit_transform(G).features)
    got = np.asarray(make("float32").fit_transform(G).features)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.abs(want).max() > 1.0   # not a row of zeros


@pytest.mark.parametrize("weight", [2e38, 1e-39])
def test_smooth_features_float32_extreme_weights(weight):
    A = sp.csr_array(np.array([[0, weight, weight], [weight, 0, 0], [weight, 0, 0]]))
    X = np.array([[0.0], [3.0], [6.0]])
    np.testing.assert_allclose(smooth_features(X, A, 1, dtype="float32").ravel(),
                               [4.5, 0.0, 0.0], rtol=1e-6)
