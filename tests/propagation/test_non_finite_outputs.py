"""Finite features near float32's limit pass the input checks, but a propagation step's
sums over neighbours can overflow: the step refuses its non-finite output with advice."""

import numpy as np
import pytest

from skldp import GraphData
from skldp.propagation import FeatureSmoothing, GCNAggregation, KProp, PPRPropagation


def _steps():
    return {"KProp": KProp(steps=2, normalization=None),
            "GCNAggregation": GCNAggregation(normalization=None),
            "PPRPropagation": PPRPropagation()}   # (its Chebyshev solver's sums)


@pytest.mark.parametrize("name", sorted(_steps()))
def test_an_overflowing_step_refuses_its_output(name, small_graph):
    # Before: KProp, GCNAggregation and PPR returned inf/NaN features from finite ones
    A, X, _ = small_graph
    G = GraphData(np.abs(X) / np.abs(X).max() * 3e38, A)   # |x| <= 3e38 < float32's 3.4e38
    step = _steps()[name]
    with pytest.raises(ValueError, match=rf"{name}'s output holds NaN or "
                       r"infinite values although its input features are finite.*Scale"):
        step.fit_transform(G)
    # the same features scaled: finite outputs, as before
    out = np.asarray(step.fit_transform(GraphData(np.asarray(G.features) / 3e38, A)))
    assert np.isfinite(out).all()


def test_a_mean_never_overflows(small_graph):
    A, X, _ = small_graph
    G = GraphData(np.abs(X) / np.abs(X).max() * 3e38, A)
    assert np.isfinite(np.asarray(FeatureSmoothing().fit_transform(G))).all()
