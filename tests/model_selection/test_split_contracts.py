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


def _reference_split(y, fraction, n_classes, seed):
    """scikit-learn's draw: stratified when every class can be on both sides."""
    from sklearn.model_selection import train_test_split
    n, n_val = len(y), int(np.ceil(fraction * len(y)))
    stratify = y if np.bincount(y).min() >= 2 and min(n_val, n - n_val) >= n_classes else None
    return train_test_split(np.arange(n), test_size=fraction, random_state=seed % 2**31,
                            stratify=stratify)


def _random_labels(rng):
    n, c = int(rng.integers(3, 300)), int(rng.integers(2, 10))
    y = rng.choice(c, size=n, p=rng.dirichlet(np.full(c, 0.5)))
    return np.searchsorted(np.unique(y), y)


def test_every_class_of_the_fit_rows_keeps_a_training_row():
    """A class with one row (or all of whose few rows an unstratified draw held out)
    would be in ``classes_`` but never in the loss: each class keeps a training row,
    and the other draws are scikit-learn's, unchanged."""
    rng = np.random.default_rng(0)
    repaired = unchanged = 0
    for _ in range(1500):
        y = _random_labels(rng)
        if len(np.unique(y)) < 2:
            continue
        fraction, seed = float(rng.choice([0.1, 0.2, 0.5])), int(rng.integers(0, 2**62))
        n_classes = int(y.max()) + 1
        owner = type("Owner", (), {"classes_": np.arange(n_classes)})()
        tr, va = validation_split(None, y, validation=None, early_stopping=True,
                                  validation_fraction=fraction, seed=seed, owner=owner)
        assert set(y[tr].tolist()) == set(y.tolist())
        ref_tr, ref_va = _reference_split(y, fraction, n_classes, seed)
        if set(y[ref_tr].tolist()) == set(y.tolist()):
            np.testing.assert_array_equal(tr, ref_tr)
            np.testing.assert_array_equal(va, ref_va)
            unchanged += 1
        else:
            repaired += 1
            assert va is None or (len(np.intersect1d(tr, va)) == 0
                                  and len(tr) + len(va) == len(y))
    assert repaired > 100 and unchanged > 1000


@pytest.mark.parametrize("seed", range(12))
def test_a_single_row_class_trains_and_the_others_stay_stratified(seed):
    """50, 30 and 1 rows: the lone row always trains; the held-out rows keep the
    other classes' proportions (floor or ceil of their share)."""
    y = np.r_[np.zeros(50, int), np.ones(30, int), [2]]
    y = y[np.random.default_rng(seed).permutation(len(y))]
    tr, va = _split(y, 0.1, seed=seed)
    assert 2 in y[tr]
    ref_tr, ref_va = _reference_split(y, 0.1, 2, seed)   # (_Owner: two classes)
    if 2 in y[ref_tr]:   # scikit-learn's draw kept it in training: that draw
        np.testing.assert_array_equal(va, ref_va)
        return
    n_val = int(np.ceil(0.1 * len(y)))
    for k, count in ((0, 50), (1, 30)):
        assert abs(int((y[va] == k).sum()) - count * n_val / len(y)) < 1


def test_when_every_row_is_needed_to_train_nothing_validates():
    """Three classes of one row each: holding any out takes a class out of training."""
    tr, va = _split([0, 1, 2], 0.1)
    assert va is None
    np.testing.assert_array_equal(tr, [0, 1, 2])


def test_a_large_validation_share_leaves_each_class_a_training_row():
    """A stratified draw can hold out both rows of a small class when the validation
    share is large (0.9 of 98 + 2 rows): that class keeps one."""
    y = np.r_[np.zeros(98, int), np.ones(2, int)]
    ref_tr, _ = _reference_split(y, 0.9, 2, 0)
    assert 1 not in y[ref_tr]
    tr, va = _split(y, 0.9)
    assert (int((y[tr] == 1).sum()), int((y[va] == 1).sum())) == (1, 1)
    assert len(tr) + len(va) == 100
