"""Split contracts that round-5 mutants of ``skldp/model_selection`` got past.

The held-out share of ``validation_fraction`` (rounded up, stratified, seeded), the
row count from which ``early_stopping="auto"`` validates, a boolean validation mask
read at the rows of a view, the shuffling of ``random_edge_split``'s positives among
its negatives.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.model_selection import random_edge_split
from skldp.model_selection._validation import AUTO_MIN_ROWS, validation_split


class _Owner:
    classes_ = np.arange(2)


def _split(y, fraction, seed=0, early_stopping=True, X=None, validation=None):
    return validation_split(X, np.asarray(y), validation=validation,
                            early_stopping=early_stopping, validation_fraction=fraction,
                            seed=seed, owner=_Owner())


def test_validation_fraction_is_rounded_up():
    """``ceil(fraction * n)`` rows validate: 0.25 of 10 rows is 3, 0.05 of 21 is 2."""
    for n, fraction, k in ((10, 0.25, 3), (21, 0.05, 2), (40, 0.1, 4)):
        y = np.arange(n) % 2
        tr, va = _split(y, fraction)
        assert (len(va), len(tr)) == (k, n - k)
        assert sorted(np.r_[tr, va].tolist()) == list(range(n))


@pytest.mark.parametrize("seed", range(8))
def test_validation_fraction_keeps_the_class_proportions(seed):
    """A stratified share: 10 % of 80 edges and 20 non-edges is 8 and 2, whatever the
    seed (an unstratified draw of 10 rows misses this for most seeds)."""
    y = np.r_[np.ones(80, dtype=int), np.zeros(20, dtype=int)]
    rng = np.random.default_rng(seed)
    y = y[rng.permutation(100)]
    tr, va = _split(y, 0.1, seed=seed)
    assert (int(y[va].sum()), int((y[va] == 0).sum())) == (8, 2)
    assert (int(y[tr].sum()), int((y[tr] == 0).sum())) == (72, 18)


def test_validation_fraction_depends_on_the_seed():
    y = np.arange(200) % 2
    draws = {tuple(np.sort(_split(y, 0.1, seed=s)[1])) for s in range(5)}
    assert len(draws) == 5
    np.testing.assert_array_equal(_split(y, 0.1, seed=3)[1], _split(y, 0.1, seed=3)[1])


def test_auto_early_stopping_validates_from_auto_min_rows_on():
    for n, validates in ((AUTO_MIN_ROWS - 1, False), (AUTO_MIN_ROWS, True)):
        y = np.arange(n) % 2
        tr, va = _split(y, 0.1, early_stopping="auto")
        assert (va is not None) == validates
        assert len(tr) == (n - int(np.ceil(0.1 * n)) if validates else n)


def test_a_boolean_validation_mask_is_read_at_the_rows_of_the_view():
    """The mask is over all nodes of the graph; a view's fit rows are its own (not the
    first ones): row i of ``G[rows]`` validates iff ``mask[rows[i]]``."""
    n = 12
    rng = np.random.default_rng(0)
    A = sp.csr_array((rng.random((n, n)) < 0.3).astype(float))
    G = GraphData(rng.random((n, 2)), A.maximum(A.T))
    rows = np.array([1, 3, 4, 7, 8, 10, 11])
    mask = np.zeros(n, dtype=bool)
    mask[[3, 10, 0, 2]] = True   # 0 and 2 are not fit rows
    tr, va = _split(np.arange(len(rows)) % 2, 0.1, X=G[rows], validation=mask)
    np.testing.assert_array_equal(va, [1, 5])
    np.testing.assert_array_equal(tr, [0, 2, 3, 4, 6])


def test_random_edge_split_shuffles_positives_among_negatives():
    """Each part's edges and non-edges come shuffled together: a split of the pairs in
    their order (a cross-validation without shuffling) sees both classes in each fold."""
    rng = np.random.default_rng(0)
    n = 60
    A = np.triu(rng.random((n, n)) < 0.15, 1)
    G = GraphData(rng.random((n, 3)), sp.csr_array((A | A.T).astype(float)))
    for y in random_edge_split(G, val_size=0.2, test_size=0.2, random_state=0)[3:]:
        assert len(y) >= 20
        assert 0 < y[: len(y) // 2].mean() < 1 and 0 < y[len(y) // 2:].mean() < 1


def test_validation_naming_a_node_past_the_last_is_refused():
    """Position ``n`` is no node of an ``n``-node graph: refused (for nodes and pairs),
    not silently matched to nothing."""
    from skldp.model_selection import PairData
    n = 6
    A = sp.csr_array(np.eye(n, k=1) + np.eye(n, k=-1))
    G = GraphData(np.ones((n, 2)), A)
    y = np.arange(n) % 2
    with pytest.raises(ValueError, match="outside 0..5"):
        _split(y, 0.1, X=G, validation=np.array([0, n]))
    P = PairData(G, [[0, 2], [1, 3], [2, 4], [0, 3]])
    with pytest.raises(ValueError, match="outside 0..5"):
        _split(np.array([1, 0, 1, 0]), 0.1, X=P, validation=np.array([[0, 2], [1, n]]))
