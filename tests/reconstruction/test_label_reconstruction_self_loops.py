"""reconstruct_labels without self-loops.

reconstruct_labels (Bhaila et al., SDM 2024, Alg. 2) propagates the masked noisy labels
over ``D^-1 (A + I)``, or ``D^-1 A`` with ``self_loops=False``.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp.reconstruction import grr_transition_matrix, reconstruct_labels


def _dense_reference(A, labelled, noisy, T, hops, self_loops):
    A = np.asarray(A.todense(), dtype=float) + (np.eye(A.shape[0]) if self_loops else 0)
    P = A / A.sum(1, keepdims=True)
    c = T.shape[0]
    Y = np.zeros((A.shape[0], c + 1))
    Y[labelled, noisy] = 1.0
    Y[labelled, c] = 1.0
    for _ in range(hops):
        Y = P @ Y
    obs = Y[labelled, :c] / Y[labelled, c:]
    return np.linalg.solve(T.T, obs.T).T


@pytest.mark.parametrize("self_loops", [False, True])
def test_matches_dense_masked_propagation(self_loops):
    rng = np.random.default_rng(0)
    n, c = 40, 3
    U = np.triu(rng.random((n, n)) < 0.15, 1)
    U[np.arange(n - 1), np.arange(1, n)] = True     # a path: no isolated node
    A = sp.csr_matrix((U | U.T).astype(float))
    labelled = rng.permutation(n)[:25]
    noisy = rng.integers(0, c, 25)
    T = grr_transition_matrix(2.0, c)
    got = reconstruct_labels(A, labelled, noisy, T, hops=2, self_loops=self_loops,
                             project=False)
    ref = _dense_reference(A, labelled, noisy, T, 2, self_loops)
    np.testing.assert_allclose(got, ref, atol=1e-10)
