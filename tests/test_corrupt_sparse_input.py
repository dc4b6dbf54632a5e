"""A sparse matrix whose index arrays do not fit its shape is refused, never read.

scipy builds a matrix from the caller's arrays without a full check: an index past the
last column or below 0, or an index pointer that decreases, reached its conversions,
which read (and wrote) outside the arrays: the graph silently got other edges (an index
7 of 3 columns became an edge to column 1), or the process aborted ("double free").
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.central import degree_bounded_sample


def _corrupt(kind):
    A = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=float))
    if kind == "csr-column-past-the-end":
        A.indices[0] = 7
    elif kind == "csr-negative-column":
        A.indices[0] = -1
    elif kind == "csr-decreasing-indptr":
        A.indptr[:] = [0, 2, 1, 2]
    elif kind == "csc-row-past-the-end":
        A = A.tocsc()
        A.indices[0] = 5
    elif kind == "coo-row-past-the-end":
        A = A.tocoo()
        A.row[0] = 7
    return A


KINDS = ["csr-column-past-the-end", "csr-negative-column", "csr-decreasing-indptr",
         "csc-row-past-the-end", "coo-row-past-the-end"]


@pytest.mark.parametrize("kind", KINDS)
def test_graph_data_refuses_a_corrupt_adjacency(kind):
    A = _corrupt(kind)
    with pytest.raises(ValueError, match="adjacency is not a valid sparse"):
        GraphData(np.ones((3, 2)), A)


@pytest.mark.parametrize("kind", KINDS)
def test_graph_data_refuses_corrupt_sparse_features(kind):
    with pytest.raises(ValueError, match="features are not a valid sparse"):
        GraphData(_corrupt(kind))


@pytest.mark.parametrize("kind", KINDS)
def test_degree_bounded_sample_refuses_a_corrupt_adjacency(kind):
    with pytest.raises(ValueError, match="adjacency is not a valid sparse"):
        degree_bounded_sample(_corrupt(kind), 1, random_state=0)


@pytest.mark.parametrize("kind", KINDS)
def test_metis_clusters_refuses_a_corrupt_adjacency(kind):
    from skldp.reconstruction import metis_clusters
    with pytest.raises(ValueError, match="A is not a valid sparse"):
        metis_clusters(_corrupt(kind), 2)


def test_valid_matrices_pass_unchanged():
    A = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=float))
    for M in (A, A.tocsc(), A.tocoo(), A.tobsr()):
        kept = [a.copy() for a in (M.data, getattr(M, "indices", M.data))]
        G = GraphData(np.ones((3, 2)), M)
        assert (G.adjacency != A).nnz == 0
        assert np.array_equal(kept[0], M.data)   # the caller's matrix is left as it was
