"""EdgeRR's expected edge count for ``symmetrize='and'`` and its budget cap.

With ``symmetrize='and'`` an edge is kept when both endpoints keep it, with
probability ``(1 - q)^2``, and a non-edge appears when both flip it, with
probability ``q^2`` (``q = 1 / (1 + e^eps)``, Lin et al., IEEE TIFS 2022, eq. 5).
EdgeRR refuses ``eps > 20`` (docs/privacy.rst: its flips use 53-bit uniforms).
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.mechanisms import EdgeRR


def _graph(n, p, seed=0):
    rng = np.random.default_rng(seed)
    A = sp.triu(sp.random(n, n, density=p, random_state=rng, format="csr"), 1)
    A.data[:] = 1.0
    A = (A + A.T).tocsr()
    return GraphData(np.zeros((n, 1)), A), A


def test_expected_n_edges_and_follows_the_both_endpoints_formula():
    """The closed form, and a dense graph at small eps where the two terms differ most."""
    n, eps = 300, 0.5
    G, A = _graph(n, 0.3, seed=1)
    m = A.nnz // 2
    mech = EdgeRR(eps, symmetrize="and", random_state=3).fit(G)
    q = 1.0 / (1.0 + np.exp(eps))
    pairs = n * (n - 1) / 2
    expected = 2 * (m * (1 - q) ** 2 + (pairs - m) * q ** 2)
    assert mech.expected_n_edges(n, m) == pytest.approx(expected)
    R = mech.transform(G).adjacency
    # entries come in symmetric pairs: Var(nnz) = 4 sum p(1 - p) <= 2 * mean
    assert abs(R.nnz - expected) < 5 * np.sqrt(2 * expected)


def test_eps_above_20_is_refused():
    G, _ = _graph(50, 0.1)
    with pytest.raises(ValueError, match="above 20"):
        EdgeRR(25.0, random_state=0).fit(G)
    EdgeRR(20.0, random_state=0).fit(G)   # the cap itself is allowed


@pytest.mark.parametrize("n_edges", [-5, 46, np.nan, np.inf, "3", True, None])
def test_expected_n_edges_refuses_an_edge_count_no_graph_of_n_nodes_has(n_edges):
    """``n_edges`` is a count of undirected edges, ``0..n (n - 1) / 2``: a negative, too
    large, non-finite or non-numeric one gave a number (negative edges 37.3, 100 edges
    of 10 nodes 134.3, NaN), or ``"3"`` was read as 3."""
    from skldp.exceptions import InvalidParameterError
    with pytest.raises(InvalidParameterError, match="n_edges"):
        EdgeRR(1.0).expected_n_edges(10, n_edges)


def test_expected_n_edges_accepts_every_count_of_the_range():
    """0, every pair (45 of 10 nodes), numpy numbers, and half an edge (a directed list
    entry without its reverse, ``symmetrize='directed'``)."""
    for mode in ("or", "and", "directed"):
        mech = EdgeRR(1.0, symmetrize=mode)
        for m in (0, 45, np.int64(7), 7.5):
            assert np.isfinite(mech.expected_n_edges(10, m))
    assert EdgeRR(np.inf, symmetrize="directed").expected_n_edges(10, 45) == 90
