"""A plain scipy CSR input may store a cell more than once: its value is the sum of its
stored entries (what ``toarray`` reads). Mechanisms check, clip and perturb that value.

Before, each stored entry was clipped on its own: a cell stored as ten entries 1.0 (value
10) passed ``feature_range=(0, 1)`` unclipped and the device program read 10, outside
the public bounds (one-bit printed epsilon 2 against an audit lower bound of 8.88).
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from skldp.mechanisms import (
    HDSMechanism,
    LaplaceMechanism,
    MultiBitMechanism,
    OneBitMechanism,
    PiecewiseMechanism,
    SetValuedMechanism,
    group_features,
)

MECHANISMS = [
    lambda: OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0),
    lambda: MultiBitMechanism(eps=1.0, m=2, feature_range=(0, 1), random_state=0),
    lambda: LaplaceMechanism(eps=1.0, feature_range=(0, 1), random_state=0),
    lambda: PiecewiseMechanism(eps=1.0, k=2, feature_range=(0, 1), random_state=0),
    lambda: HDSMechanism(eps=1.0, k=2, feature_range=(0, 1), random_state=0),
]


def _duplicated(n=200, copies=3):
    """Even rows store 0.6 ``copies`` times in column 0 (value 1.8, outside (0, 1)), odd
    rows 0.2 twice in column 1 (value 0.4, inside); no row is canonical."""
    data, indices = [], []
    for i in range(n):
        data += [0.6] * copies if i % 2 == 0 else [0.2, 0.2]
        indices += [0] * copies if i % 2 == 0 else [1, 1]
    indptr = np.r_[0, np.cumsum([copies if i % 2 == 0 else 2 for i in range(n)])]
    X = sp.csr_matrix((np.array(data), np.array(indices), indptr), shape=(n, 3))
    assert not X.has_canonical_format
    return X


def _reports(mech, X):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Z = mech.fit(X).transform(X)
    clipped = [str(w.message) for w in caught if "clipped" in str(w.message)]
    return (Z.toarray() if sp.issparse(Z) else np.asarray(Z)), clipped


@pytest.mark.parametrize("make", MECHANISMS,
                         ids=["one_bit", "multi_bit", "laplace", "piecewise", "hds"])
def test_duplicate_entries_give_the_reports_of_the_summed_matrix(make):
    """The reports of a CSR input with duplicates are those of its canonical (summed) and
    dense forms, clipped and warned as they are; the caller's matrix is left unchanged."""
    X = _duplicated()
    saved = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    Z, warned = _reports(make(), X)
    canonical = X.copy()
    canonical.sum_duplicates()
    Z_canonical, warned_canonical = _reports(make(), canonical)
    Z_dense, warned_dense = _reports(make(), X.toarray())
    np.testing.assert_array_equal(Z, Z_canonical)
    np.testing.assert_array_equal(Z, Z_dense)
    # the 100 cells of value 1.8 are clipped to 1, and said so, as in the dense form
    assert warned and warned == warned_canonical == warned_dense
    assert "100 feature values" in warned[0]
    for a, b in zip((X.data, X.indices, X.indptr), saved, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not X.has_canonical_format


def test_set_valued_reads_the_summed_cells():
    """A cell stored as [1, 1] is a 2, refused as not binary; with ``binarize=0.5`` one
    stored as [0.3, 0.3] (0.6) is in the set, as in the dense row."""
    X = sp.csr_matrix((np.array([1.0, 1.0]), np.array([0, 0]), np.array([0, 2])), shape=(1, 3))
    with pytest.raises(ValueError, match="binary features"):
        SetValuedMechanism(eps=1.0, ell=2, random_state=0).fit(X)
    X = sp.csr_matrix((np.array([0.3, 0.3]), np.array([0, 0]), np.array([0, 2])), shape=(1, 3))
    mech = SetValuedMechanism(eps=1.0, ell=1, binarize=0.5, random_state=0).fit(X)
    np.testing.assert_array_equal(mech.mean(X), [[1.0, 0.0, 0.0]])
    np.testing.assert_array_equal(mech.mean(X), mech.mean(X.toarray()))


def test_group_features_leaves_the_callers_matrix_unchanged():
    """``group_features`` groups the cells' values without editing the caller's arrays
    (scipy's ``abs`` summed the duplicates in place on arrays it shared)."""
    X = sp.csr_matrix((np.array([1.0, -1.0, 2.0]), np.array([2, 0, 0]), np.array([0, 3])),
                      shape=(1, 4))
    saved = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    np.testing.assert_array_equal(group_features(X, 2), group_features(X.toarray(), 2))
    for a, b in zip((X.data, X.indices, X.indptr), saved, strict=True):
        np.testing.assert_array_equal(a, b)
