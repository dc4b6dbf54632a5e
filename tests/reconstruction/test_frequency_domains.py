"""FrequencyReconstructor: the domain sizes of the reports.

``domain_sizes=None`` reads ``max report + 1`` and at least 2: a binary feature
that nobody reported as 1 is still binary (eq. (5) with c = 2, a probability, not
the code 0). With explicit sizes, a code outside ``0..c-1`` in any column (not only
the last, whose overflow the sparse one-hot matrix catches) is refused.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.reconstruction import FrequencyReconstructor


def _ring(X):
    n = len(X)
    A = sp.csr_array((np.ones(n), (np.arange(n), (np.arange(n) + 1) % n)), shape=(n, n))
    return GraphData(np.asarray(X, dtype=float), A + A.T)


def test_a_binary_column_without_ones_stays_binary():
    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 2, 12), np.zeros(12)]
    G = _ring(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # raw features, not GRR-FS reports
        auto = np.asarray(FrequencyReconstructor(1.0, 1, clip=False).fit_transform(G))
        two = np.asarray(FrequencyReconstructor(1.0, 1, domain_sizes=2,
                                                clip=False).fit_transform(G))
    np.testing.assert_allclose(auto, two)
    # eq. (5) with lambda = 0, r = m / d = 1/2: (0 - r q - (1 - r) / 2) / (r (p - q)) < 0
    p, q = np.e / (np.e + 1), 1 / (np.e + 1)
    np.testing.assert_allclose(auto[:, 1], (-0.5 * q - 0.25) / (0.5 * (p - q)))


def test_a_code_outside_the_domain_is_refused_in_any_column():
    X = np.zeros((6, 2))
    X[3, 0] = 2           # domain_sizes=2: codes 0..1
    G = _ring(X)
    rec = FrequencyReconstructor(np.inf, 2, domain_sizes=[2, 2])   # raw codes, no warning
    with pytest.raises(ValueError, match="column 0 holds codes outside 0..1"):
        rec.fit(G).transform(G)
