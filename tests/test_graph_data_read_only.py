"""A graph's adjacency and features are read-only: its symmetry, degrees and operators
are cached on it, so an edit in place would leave them stale. The caller's arrays keep
their flags, and the library's own paths work on copies."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.propagation import KProp
from skldp.utils._random import array_fingerprint


def _path(n=4):
    A = sp.csr_array(np.eye(n, k=1) + np.eye(n, k=-1))
    return A, np.arange(2.0 * n).reshape(n, 2)


def _arrays(M):
    return (M.data, M.indices, M.indptr)


def test_the_adjacency_is_read_only_and_the_callers_matrix_is_not():
    A, X = _path()
    G = GraphData(X, A)
    before = np.asarray(KProp().fit_transform(G).features)
    assert not any(a.flags.writeable for a in _arrays(G.adjacency))
    with pytest.raises(ValueError, match="read-only"):
        G.adjacency.data[:] = 5.0
    # the cached operator stays right: nothing could change the matrix under it
    np.testing.assert_array_equal(KProp().fit_transform(G).features, before)
    assert all(a.flags.writeable for a in _arrays(A))   # GraphData took a copy
    H = G.with_adjacency(A)
    assert not any(a.flags.writeable for a in _arrays(H.adjacency))
    assert all(a.flags.writeable for a in _arrays(A))


@pytest.mark.parametrize("sparse", [False, True])
def test_the_features_are_read_only_and_the_callers_array_is_not(sparse):
    A, X = _path()
    X = sp.csr_matrix(X) if sparse else X
    G = GraphData(X, A)
    F = G.features
    with pytest.raises(ValueError, match="read-only"):
        if sparse:
            F.data[0] = -1.0
        else:
            F[0, 0] = -1.0
    assert all(a.flags.writeable for a in (_arrays(X) if sparse else (X,)))
    H = G.with_features(X)   # a new view over the caller's array: read-only too
    assert not (H.features.data if sparse else H.features).flags.writeable


def test_the_advice_to_remove_self_loops_works_on_a_read_only_adjacency():
    from skldp.mechanisms import EdgeRR
    A, X = _path()
    A = A + sp.eye(4, format="csr")
    G = GraphData(X, A)
    with pytest.raises(ValueError, match="self loops") as err:
        EdgeRR(eps=1.0, random_state=0).fit_transform(G)
    advice = str(err.value).split("Remove them first, on a copy (the graph's adjacency is "
                                  "shared, read-only by contract): ")[1]
    scope = {"G": G}
    exec(advice.rstrip("."), scope)
    Gr = EdgeRR(eps=1.0, random_state=0).fit_transform(scope["G"])
    assert Gr.adjacency.shape == (4, 4)
    assert G.adjacency.diagonal().all()   # the graph of the error is unchanged


def test_fingerprint_canonicalises_a_copy():
    A, X = _path()
    S = sp.csr_matrix(X)
    S.data[0] = 0.0   # an explicit zero: removed from a copy, not from the caller's matrix
    nnz = S.nnz
    assert array_fingerprint(S) == array_fingerprint(sp.csr_matrix(S.toarray()))
    assert S.nnz == nnz
    G = GraphData(sp.csr_matrix(X), A)
    assert array_fingerprint(G.features) == array_fingerprint(X)
    assert array_fingerprint(G.adjacency) == array_fingerprint(A.toarray())
