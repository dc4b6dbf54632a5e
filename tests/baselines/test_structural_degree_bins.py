"""StructuralFeatures: the degree block bins the degree by powers of two.

test_degree_block clips every node of its dense graph into the last bin, so it does not
see where the bin boundaries are. Here the degrees run from 0 to 20 and no bin is
clipped: bin ``i`` holds the degrees ``2^i - 1 <= d < 2^(i+1) - 1`` (log2 of ``1 + d``).
"""

import numpy as np
import scipy.sparse as sp

from skldp import GraphData
from skldp.baselines import StructuralFeatures


def _degrees_0_to(k):
    # node i (i = 1..k) is joined to i hubs among k + 1.. 2k + 1: degrees 0..k on 0..k
    n = 2 * k + 1
    A = np.zeros((n, n))
    for i in range(1, k + 1):
        A[i, k + 1:k + 1 + i] = 1
    A = np.maximum(A, A.T)
    return GraphData(np.zeros((n, 1)), sp.csr_array(A)), A.sum(1)


def test_log2_degree_bins_without_clipping():
    G, deg = _degrees_0_to(20)
    Z = np.asarray(StructuralFeatures(degree_bins=8, n_eigenvectors=0,
                                      n_components=0).fit_transform(G))
    bins = Z[:, :8].argmax(1)
    np.testing.assert_array_equal(Z[:, :8].sum(1), 1.0)
    assert np.all(2.0 ** bins - 1 <= deg) and np.all(deg < 2.0 ** (bins + 1) - 1)
    np.testing.assert_array_equal(bins[:8], [0, 1, 1, 2, 2, 2, 2, 3])
