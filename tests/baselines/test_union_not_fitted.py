"""An unfitted GraphFeatureUnion raises scikit-learn's NotFittedError, whatever its input."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from skldp import GraphData
from skldp.baselines import GraphFeatureUnion, StructuralFeatures


def _union():
    return GraphFeatureUnion([("raw", "passthrough"),
                              ("s", StructuralFeatures(degree_bins=2, n_eigenvectors=0,
                                                       n_components=0))])


def test_unfitted_union_given_an_array_raises_not_fitted():
    # the input check ran first: a TypeError ("needs the graph") hid that it was unfitted
    with pytest.raises(NotFittedError):
        _union().transform(np.zeros((3, 2)))


def test_unfitted_union_given_a_graph_raises_not_fitted():
    with pytest.raises(NotFittedError):
        _union().transform(GraphData(np.eye(3)))


def test_fitted_union_given_an_array_still_asks_for_the_graph():
    G = GraphData(np.eye(3), sp.csr_array(np.ones((3, 3)) - np.eye(3)))
    union = _union().fit(G)
    with pytest.raises(TypeError, match="needs the graph"):
        union.transform(np.zeros((3, 3)))
