"""Paper splits: random 50/25/25 over labelled nodes, n per class, Planetoid, LabelledKFold."""

import numpy as np
import pytest

from skldp.datasets import load_cora, load_dataset
from skldp.model_selection import (
    LabelledKFold,
    per_class_node_split,
    planetoid_split,
    random_node_split,
)


def _labels():
    y = np.repeat([0, 1, 2], [50, 30, 20])
    y[::7] = -1
    return y


def test_random_node_split_sizes_and_disjointness():
    y = _labels()
    lab = int((y >= 0).sum())
    tr, va, te = random_node_split(y, random_state=0)
    assert tr.sum() == int(np.floor(0.5 * lab)) and va.sum() == int(np.floor(0.75 * lab)) - \
        int(np.floor(0.5 * lab))
    assert tr.sum() + va.sum() + te.sum() == lab
    assert not (tr & va).any() and not (tr & te).any() and not (va & te).any()
    assert not ((tr | va | te) & (y == -1)).any()  # unlabelled nodes are in no part


def test_random_node_split_determinism_and_variation():
    y = _labels()
    a = random_node_split(y, random_state=3)
    b = random_node_split(y, random_state=3)
    c = random_node_split(y, random_state=4)
    for m1, m2 in zip(a, b, strict=True):
        np.testing.assert_array_equal(m1, m2)
    assert not np.array_equal(a[0], c[0])


def test_random_node_split_stratified():
    y = _labels()
    tr, va, te = random_node_split(y, 0.5, 0.25, 0.25, stratify=True, random_state=0)
    for c in range(3):
        n_c = int((y == c).sum())
        assert abs(int((tr & (y == c)).sum()) - n_c / 2) <= 1
    assert tr.sum() + va.sum() + te.sum() == (y >= 0).sum()


def test_random_node_split_stratified_keeps_the_part_sizes():
    # flooring per class put the rounding in the last parts: 50 classes of 3 gave (50, 50, 50)
    y = np.repeat(np.arange(50), 3)
    tr, va, te = random_node_split(y, 0.5, 0.25, 0.25, stratify=True, random_state=0)
    assert (tr.sum(), va.sum(), te.sum()) == (75, 37, 38)
    assert not (tr & va).any() and not (tr & te).any() and not (va & te).any()
    assert np.all(np.bincount(y[tr]) >= 1)      # every class of 3 trains on 1 or 2 nodes
    # same part sizes as the unstratified split, and a singleton class can train
    y = np.repeat([0, 1], [1, 99])
    trained = 0
    for seed in range(20):
        tr, va, te = random_node_split(y, 0.5, 0.25, 0.25, stratify=True, random_state=seed)
        assert (tr.sum(), va.sum(), te.sum()) == (50, 25, 25)
        assert (tr | va | te)[y == 0].all()
        trained += int(tr[y == 0].sum())
    assert 0 < trained < 20


def test_random_node_split_none_fraction_is_the_rest():
    # None gave a RuntimeWarning and an empty test part, 25 labelled nodes in no part
    y = np.repeat([0, 1], 50)
    for stratify in (False, True):
        tr, va, te = random_node_split(y, 0.5, 0.25, None, stratify=stratify, random_state=0)
        assert (tr.sum(), va.sum(), te.sum()) == (50, 25, 25)
        tr, va, te = random_node_split(y, None, 0.2, 0.1, stratify=stratify, random_state=0)
        assert (tr.sum(), va.sum(), te.sum()) == (70, 20, 10)
    tr, va, te = random_node_split(np.arange(10**6) % 3, 0.7, 0.2, None, random_state=0)
    assert tr.sum() + va.sum() + te.sum() == 10**6     # no node lost to float rounding
    with pytest.raises(ValueError, match="at most one split fraction may be None"):
        random_node_split(y, 0.5, None, None)
    for bad in (np.nan, np.inf, "0.5"):
        with pytest.raises(ValueError, match="test_size must be a finite fraction"):
            random_node_split(y, 0.5, 0.25, bad)


def test_random_node_split_partial_and_errors():
    y = _labels()
    tr, va, te = random_node_split(y, 0.1, 0.1, 0.1, random_state=0)
    assert tr.sum() + va.sum() + te.sum() < (y >= 0).sum()
    with pytest.raises(ValueError, match="sum to at most 1"):
        random_node_split(y, 0.6, 0.3, 0.3)
    with pytest.raises(ValueError, match=">= 0"):
        random_node_split(y, -0.1, 0.5, 0.5)
    with pytest.raises(ValueError, match="no labelled node"):
        random_node_split(-np.ones(5, int))


def test_planetoid_split():
    tr, va, te = planetoid_split(load_cora())
    assert (tr.sum(), va.sum(), te.sum()) == (140, 500, 1000)
    y = load_cora().target
    assert np.all(np.bincount(y[tr]) == 20)  # 20 per class
    with pytest.raises(ValueError, match="no public split"):
        planetoid_split(load_dataset("german"))
    with pytest.raises(TypeError, match="bunch must be a dataset"):   # was "not iterable"
        planetoid_split(None)


def test_labelled_kfold():
    y = _labels()
    cv = LabelledKFold(4, random_state=0)
    assert cv.get_n_splits() == 4
    seen = []
    for tr, te in cv.split(np.zeros((len(y), 1)), y):
        assert np.all(y[tr] >= 0) and np.all(y[te] >= 0)
        assert not set(tr) & set(te)
        seen.extend(te)
    np.testing.assert_array_equal(np.sort(seen), np.flatnonzero(y >= 0))
    folds1 = [te for _, te in LabelledKFold(4, random_state=1).split(None, y)]
    folds1b = [te for _, te in LabelledKFold(4, random_state=1).split(None, y)]
    for a, b in zip(folds1, folds1b, strict=True):
        np.testing.assert_array_equal(a, b)
    unshuffled = [te for _, te in LabelledKFold(4, shuffle=False).split(None, y)]
    assert len(unshuffled) == 4


def test_labelled_kfold_says_no_row_is_labelled():
    # scikit-learn's "Found array with 0 sample(s)" before
    with pytest.raises(ValueError, match="no labelled row among the 6 rows"):
        list(LabelledKFold(3).split(np.zeros((6, 1)), -np.ones(6)))


@pytest.mark.parametrize("n_splits", ["a", 1, 2.5, None])
def test_labelled_kfold_get_n_splits_validates_n_splits_as_split_does(n_splits):
    # get_n_splits returned n_splits unchecked ("a"), while split refused it
    y = _labels()
    cv = LabelledKFold(n_splits)
    with pytest.raises(ValueError) as from_split:
        list(cv.split(None, y))
    with pytest.raises(ValueError) as from_get:
        cv.get_n_splits()
    assert str(from_get.value) == str(from_split.value)
    assert str(n_splits) in str(from_get.value)
    assert LabelledKFold(np.int64(3)).get_n_splits() == 3


def test_per_class_node_split_sizes_per_class_and_disjointness():
    y = np.repeat([0, 1, 2], [120, 75, 60])
    y[::9] = -1     # unlabelled nodes are in no part
    tr, va, te = per_class_node_split(y, 20, 30, random_state=0)
    for c in range(3):
        assert (tr & (y == c)).sum() == 20 and (va & (y == c)).sum() == 30
        assert (te & (y == c)).sum() == (y == c).sum() - 50   # every other labelled node
    assert not (tr & va).any() and not (tr & te).any() and not (va & te).any()
    assert np.array_equal(tr | va | te, y >= 0)


def test_per_class_node_split_is_determined_by_its_seed():
    y = np.repeat(np.arange(4), 80)
    a = per_class_node_split(y, random_state=7)
    b = per_class_node_split(y, random_state=np.random.RandomState(7))
    c = per_class_node_split(y, random_state=8)
    assert all(np.array_equal(m, n) for m, n in zip(a, b, strict=True))
    assert not np.array_equal(a[0], c[0]) and not np.array_equal(a[1], c[1])


def test_per_class_node_split_small_class_raises_or_shrinks():
    y = np.repeat([0, 1, 2], [100, 50, 16])   # 50 = n_train + n_val: no test node left
    with pytest.raises(ValueError, match=r"class\(es\) \[1, 2\] have \[50, 16\].*at least "
                                         r"n_train \+ n_val \+ 1 = 51"):
        per_class_node_split(y, 20, 30, random_state=0)
    tr, va, te = per_class_node_split(y, 20, 30, small_classes="shrink", random_state=0)
    assert [(tr & (y == c)).sum() for c in range(3)] == [20, 16, 5]
    assert [(va & (y == c)).sum() for c in range(3)] == [30, 16, 5]
    assert [(te & (y == c)).sum() for c in range(3)] == [50, 18, 6]
    # exactly one node to spare is enough
    tr, va, te = per_class_node_split(np.repeat([0, 1], 51), 20, 30, random_state=0)
    assert te.sum() == 2


@pytest.mark.parametrize("m, n_train, n_val, want", [
    (60, 1, 100, (1, 20, 39)),   # a third would be 20 > n_train = 1 training nodes
    (30, 2, 40, (2, 10, 18)),
    (25, 20, 5, (8, 5, 12)),     # n_val caps the validation nodes
    (16, 20, 30, (5, 5, 6)),
    (3, 20, 30, (1, 1, 1)),
    (2, 20, 30, (1, 0, 1)),      # a class of 2 got no training node
    (1, 20, 30, (1, 0, 0)),
    (1, 0, 30, (0, 0, 1)),
])
def test_per_class_node_split_shrink_never_exceeds_the_request(m, n_train, n_val, want):
    y = np.repeat([0, 1], [200, m])
    tr, va, te = per_class_node_split(y, n_train, n_val, small_classes="shrink",
                                      random_state=0)
    assert (tr[y == 1].sum(), va[y == 1].sum(), te[y == 1].sum()) == want
    assert (tr[y == 0].sum(), va[y == 0].sum()) == (n_train, n_val)


@pytest.mark.parametrize("kwargs, match", [
    ({"n_train": -1}, "n_train"), ({"n_val": 2.5}, "n_val"), ({"n_train": True}, "n_train"),
    ({"small_classes": "drop"}, "small_classes")])
def test_per_class_node_split_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        per_class_node_split(np.repeat([0, 1], 100), **kwargs)
    with pytest.raises(ValueError, match="no labelled node"):
        per_class_node_split(-np.ones(10, dtype=int))


def _string_labels():
    """``_labels()`` with class names; ``None`` (object array) marks the unlabelled nodes."""
    y = _labels()
    names = np.array(["ant", "bee", "cat"], dtype=object)[np.maximum(y, 0)]
    names[y == -1] = None
    return y, names


def test_random_node_split_string_labels_same_split_as_numeric():
    y = _labels()
    # fixed-width strings: every node is labelled, the split is that of labels >= 0
    s = np.array(["a", "b", "c"])[np.repeat([0, 1, 2], [50, 30, 20])]
    for stratify in (False, True):
        got = random_node_split(s, stratify=stratify, random_state=0)
        want = random_node_split(np.repeat([0, 1, 2], [50, 30, 20]), stratify=stratify,
                                 random_state=0)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
    # None (or NaN, pandas' missing value) marks an unlabelled node: in no part
    y, names = _string_labels()
    for missing in (None, np.nan):
        names[y == -1] = missing
        for stratify in (False, True):
            got = random_node_split(names, stratify=stratify, random_state=0)
            want = random_node_split(y, stratify=stratify, random_state=0)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, w)
            assert not (got[0] | got[1] | got[2])[y == -1].any()
    assert [m.tolist() for m in random_node_split(["a", "b", "a"], random_state=0)] == \
        [m.tolist() for m in random_node_split([0, 1, 0], random_state=0)]
    with pytest.raises(ValueError, match="no labelled node.*None, NaN or pd.NA for non-numeric"):
        random_node_split(np.array([None, None], dtype=object))
    with pytest.raises(ValueError, match="1d array"):
        random_node_split(np.zeros((4, 2)))


def test_per_class_node_split_and_labelled_kfold_string_labels():
    y, names = _string_labels()
    got = per_class_node_split(names, 5, 5, random_state=0)
    want = per_class_node_split(y, 5, 5, random_state=0)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    for (tr, te), (tr0, te0) in zip(LabelledKFold(3, random_state=0).split(None, names),
                                    LabelledKFold(3, random_state=0).split(None, y),
                                    strict=True):
        np.testing.assert_array_equal(tr, tr0)
        np.testing.assert_array_equal(te, te0)


def test_pandas_na_marks_an_unlabelled_node():
    # pd.NA raised "boolean value of NA is ambiguous" in all three splitters
    pd = pytest.importorskip("pandas")
    y, names = _string_labels()
    s = pd.Series(names, dtype="string")      # None becomes pd.NA
    assert s.isna().sum() == (y == -1).sum()
    for stratify in (False, True):
        got = random_node_split(s, stratify=stratify, random_state=0)
        want = random_node_split(y, stratify=stratify, random_state=0)
        assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    got = per_class_node_split(s, 5, 5, random_state=0)
    want = per_class_node_split(y, 5, 5, random_state=0)
    assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    for (tr, te), (tr0, te0) in zip(LabelledKFold(3, random_state=0).split(None, s),
                                    LabelledKFold(3, random_state=0).split(None, y),
                                    strict=True):
        np.testing.assert_array_equal(tr, tr0)
        np.testing.assert_array_equal(te, te0)


def test_labelled_kfold_prints_its_parameters():
    # it printed as <... object at 0x...>, inside a search's repr too
    from sklearn.model_selection import GridSearchCV
    from sklearn.tree import DecisionTreeClassifier
    cv = LabelledKFold(3, shuffle=False)
    assert repr(cv) == "LabelledKFold(n_splits=3, random_state=None, shuffle=False)"
    assert "cv=LabelledKFold(n_splits=3" in repr(GridSearchCV(DecisionTreeClassifier(), {},
                                                               cv=cv))


@pytest.mark.parametrize("split", [
    lambda r: random_node_split(_labels(), random_state=r),
    lambda r: random_node_split(_labels(), stratify=True, random_state=r),
    lambda r: per_class_node_split(_labels(), 5, 5, random_state=r),
    lambda r: list(LabelledKFold(3, random_state=r).split(None, _labels())),
], ids=["random", "stratified", "per_class", "kfold"])
def test_a_numpy_generator_is_refused_naming_random_state(split):
    # it met check_random_state's "Generator(PCG64) at 0x... cannot be used to seed a
    # numpy.random.RandomState instance", naming neither the parameter nor what it accepts
    with pytest.raises(ValueError, match=r"random_state must be an int, a "
                                         r"numpy RandomState or None.*Generator"):
        split(np.random.default_rng(0))
