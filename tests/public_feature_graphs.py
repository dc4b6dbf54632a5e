"""A small graph whose features are public: only its edges and labels are the users'."""

import numpy as np
import scipy.sparse as sp

from skldp import GraphData


def public_feature_graph(budget=None, n=30, seed=0):
    rng = np.random.default_rng(seed)
    A = np.triu(rng.random((n, n)) < 0.2, 1)
    A = sp.csr_array((A | A.T).astype(float))
    return GraphData(rng.random((n, 3)), A, budget=budget).with_features(
        rng.random((n, 3)), source="public")
