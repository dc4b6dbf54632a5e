"""random_edge_split on a graph too small for its validation or test fraction warns."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.model_selection import random_edge_split


def _path(n_edges, n_nodes=None):
    """A path of ``n_edges`` undirected edges (and isolated nodes up to ``n_nodes``)."""
    n = n_edges + 1 if n_nodes is None else n_nodes
    i = np.arange(n_edges)
    A = sp.csr_matrix((np.ones(n_edges), (i, i + 1)), shape=(n, n))
    return GraphData(np.zeros((n, 1)), (A + A.T).tocsr())


def test_one_edge_leaves_validation_and_test_empty_with_a_warning():
    with pytest.warns(UserWarning, match=r"the graph has 1 undirected edge, so val_size=0\.05 "
                                         r"gives no validation edge and test_size=0\.1 gives "
                                         r"no test edge"):
        _, P_va, P_te, y_tr, y_va, y_te = random_edge_split(_path(1, 3), random_state=0)
    assert len(P_va) == len(P_te) == len(y_va) == len(y_te) == 0 and y_tr.sum() == 1


def test_only_the_empty_part_is_named():
    # 12 edges: 5% rounds down to no validation edge, 10% gives one test edge
    with pytest.warns(UserWarning, match=r"12 undirected edges, so val_size=0\.05 gives no "
                                         r"validation edge \(") as rec:
        random_edge_split(_path(12), random_state=0)
    assert "test edge" not in str(rec[0].message)


def test_no_warning_when_every_part_is_filled_or_asked_empty():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        random_edge_split(_path(20), random_state=0)              # 1 validation, 2 test
        random_edge_split(_path(4), 0.0, 0.0, random_state=0)     # nothing held out
