"""A graph step fitted on collected edges (EdgeRR's output) and
then given the users' true graph reads their edges in the clear: the ledger charges it."""

import numpy as np
import scipy.sparse as sp

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.mechanisms import EdgeRR
from skldp.propagation import KProp


def _graph(n=30, seed=0):
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.15, random_state=seed, format="csr")
    A = ((A + A.T) > 0).astype(float)
    A.setdiag(0)
    A.eliminate_zeros()
    return GraphData(rng.normal(size=(n, 3)), sp.csr_matrix(A))


def test_true_edges_given_after_a_fit_on_collected_edges_are_charged():
    G = _graph()
    noisy = EdgeRR(2.0, random_state=0).fit_transform(G)
    step = KProp(steps=1).fit(noisy)
    before = privacy_report(G).epsilon_for("edges")
    assert np.isfinite(before)
    step.transform(G)   # the users' true adjacency
    assert privacy_report(G).epsilon_for("edges") == float("inf")
