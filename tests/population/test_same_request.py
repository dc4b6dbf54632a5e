"""A budget written as an integer or as a float is the same request: one collection,
the same answers, charged once (the spec writes real-valued parameters as floats)."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.mechanisms import EdgeRR, LabelRandomizedResponse, MultiBitMechanism, OneBitMechanism
from skldp.population._spec import public_params


def _graph():
    rng = np.random.default_rng(0)
    n = 40
    A = sp.random(n, n, density=0.1, random_state=1, format="csr")
    A = ((A + A.T) > 0).astype(float)
    A.setdiag(0)
    A.eliminate_zeros()
    return GraphData(rng.random((n, 5)), A), rng.integers(0, 3, n)


@pytest.mark.parametrize("make", [
    lambda eps: MultiBitMechanism(eps=eps, m=2, feature_range=(0, 1), random_state=0),
    lambda eps: OneBitMechanism(eps=eps, feature_range=(0, 1), random_state=0),
    lambda eps: LabelRandomizedResponse(eps=eps, classes=[0, 1, 2], random_state=0),
    lambda eps: EdgeRR(eps=eps, random_state=0),
])
def test_integer_and_float_budgets_are_one_collection(make):
    G, y = _graph()
    a, b = make(2).fit(G), make(2.0).fit(G)
    assert a.collection_.id == b.collection_.id
    if a.protects_ == ("labels",):
        np.testing.assert_array_equal(a.randomize(y, G), b.randomize(y, G))
        assert privacy_report(G).local_epsilon == pytest.approx(2.0)
        return
    ra, rb = a.transform(G), b.transform(G)
    if a.protects_ == ("edges",):
        assert (ra.adjacency != rb.adjacency).nnz == 0
    else:
        np.testing.assert_array_equal(ra.features, rb.features)
    assert privacy_report(G).local_epsilon == pytest.approx(a.epsilon_)   # not twice


def test_only_real_valued_parameters_become_floats():
    params = public_params(MultiBitMechanism(eps=3, m=2, feature_range=(0, 1)))
    assert type(params["eps"]) is float and params["eps"] == 3.0
    assert type(params["m"]) is int                      # a count stays a count
    assert params["feature_range"] == [0, 1]
