"""Collections never share random numbers; plain arrays never share noise between users.

Each test here failed on the first release, where the per-user generator was keyed by
``random_state`` alone and plain-array rows by their position in any array.
"""

import numpy as np
import pytest
from scipy.stats import binomtest

from skldp import GraphData
from skldp.mechanisms import (
    EdgeRR,
    HDSMechanism,
    LabelRandomizedResponse,
    LaplaceMechanism,
    MultiBitMechanism,
    OneBitMechanism,
    PiecewiseMechanism,
)

N = 40_000


def _users(x, n=N, offset=0):
    X = np.tile(np.asarray(x, dtype=np.float64), (n, 1))
    return GraphData(X, node_ids=np.arange(offset, offset + n))


def test_two_one_bit_reports_at_two_eps_are_independent():
    # Same random_state, eps = 1 and eps = 2: the reports used to be thresholds of one
    # uniform, so (first high, second low) was impossible for x = 1 (it revealed x).
    G = _users([1.0])
    r1 = OneBitMechanism(1.0, feature_range=(0, 1), random_state=0).fit(G).transform(G)
    r2 = OneBitMechanism(2.0, feature_range=(0, 1), random_state=0).fit(G).transform(G)
    hi1, lo2 = r1.features[:, 0] > 0.5, r2.features[:, 0] < 0.5
    expected = hi1.mean() * lo2.mean()      # independent collections
    assert expected > 0.01
    test = binomtest(int(np.sum(hi1 & lo2)), N, expected)
    assert test.pvalue > 1e-4


def test_label_randomiser_is_independent_of_the_feature_mechanism():
    # LPGNN's case: a multi-bit mechanism and a label randomiser with the same
    # random_state. The label used to be kept exactly when the (public) sampled column
    # was below p * d; now keeping is independent of the column.
    d = 10
    G = _users(np.full(d, 0.5))
    mb = MultiBitMechanism(1.0, m=1, feature_range=(0, 1), random_state=3).fit(G)
    R = mb.transform(G).features
    col = np.argmax(np.abs(np.asarray(R.todense() if hasattr(R, "todense") else R) - 0.5),
                    axis=1)
    rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=3).fit()
    kept = rr.randomize(np.zeros(N, dtype=int), G) == 0
    low = col < rr.p_ * d
    assert abs(kept[low].mean() - kept[~low].mean()) < 5 * np.sqrt(2 * 0.25 / (N / 2))
    assert abs(kept.mean() - rr.p_) < 5 * np.sqrt(rr.p_ * (1 - rr.p_) / N)


def test_edge_and_feature_collections_do_not_share_draws():
    n = 400
    A = np.zeros((n, n))
    A[0, 1:] = A[1:, 0] = 1
    G = GraphData(np.full((n, 1), 0.5), A, node_ids=np.arange(n))
    pm = PiecewiseMechanism(1.0, feature_range=(0, 1), random_state=5).fit(G)
    er = EdgeRR(1.0, random_state=5).fit(G)
    assert pm.seed_ != er.seed_


@pytest.mark.parametrize("make", [
    lambda rs: HDSMechanism(1.0, k=1, feature_range=(0, 1), random_state=rs),
    lambda rs: LaplaceMechanism(1.0, feature_range=(0, 1), random_state=rs),
])
def test_same_collection_same_reports_other_parameters_other_draws(make):
    G = _users([0.2, 0.7], n=50)
    a = make(1).fit(G).transform(G).features
    b = make(1).fit(G).transform(G).features     # a user answers once
    def as_dense(M):
        return M.toarray() if hasattr(M, "toarray") else M

    np.testing.assert_array_equal(as_dense(a), as_dense(b))
    other = make(1).set_params(eps=2.0).fit(G).transform(G).features
    assert not np.array_equal(as_dense(other) != 0, as_dense(a) != 0) or \
        not np.allclose(as_dense(other), as_dense(a))


def test_plain_arrays_refuse_other_users():
    rng = np.random.default_rng(0)
    X1, X2 = rng.random((20, 3)), rng.random((20, 3))
    mech = LaplaceMechanism(1.0, feature_range=(0, 1), random_state=0).fit(X1)
    mech.transform(X1)                              # the fitted users: fine
    with pytest.raises(ValueError, match="another array"):
        mech.transform(X2)                          # row i is another user
    with pytest.raises(ValueError, match="another array"):
        mech.transform(X1[:5])
    # the same values stored sparse are the same users
    import scipy.sparse as sp
    np.testing.assert_array_equal(mech.transform(sp.csr_matrix(X1)), mech.transform(X1))


def test_other_graphs_are_other_users_unless_the_caller_says_otherwise():
    rng = np.random.default_rng(1)
    G1, G2 = GraphData(rng.random((20, 3))), GraphData(rng.random((20, 3)))
    mech = OneBitMechanism(1.0, feature_range=(0, 1), random_state=0).fit(G1)
    mech.transform(G1[[3, 4]])
    with pytest.raises(ValueError, match="other users"):
        mech.transform(G2)
    # explicit ids alone do not make two graphs the same users ...
    G3 = GraphData(G2.features, node_ids=np.arange(100, 120))
    m3 = OneBitMechanism(1.0, feature_range=(0, 1), random_state=0).fit(G3)
    with pytest.raises(ValueError, match="population="):
        m3.transform(GraphData(G1.features, node_ids=np.arange(200, 220)))
    # ... population= does, and what they send is charged to the same ledger
    G4 = GraphData(G1.features, node_ids=np.arange(200, 220), population=G3)
    m3.transform(G3)
    m3.transform(G4)
    assert G3.ledger.per_user()[0].size == 40


def test_random_state_none_uses_os_entropy_not_numpy_global_state():
    G = _users([0.5], n=5)
    np.random.seed(0)
    state = np.random.get_state()[1].copy()
    s1 = OneBitMechanism(1.0, feature_range=(0, 1)).fit(G).seed_
    np.random.seed(0)
    s2 = OneBitMechanism(1.0, feature_range=(0, 1)).fit(G).seed_
    assert s1 != s2                                 # not reproducible from np.random.seed
    np.testing.assert_array_equal(np.random.get_state()[1], state)   # global state untouched


@pytest.mark.parametrize("make", [
    lambda: OneBitMechanism(800.0, feature_range=(0, 1)),
    lambda: MultiBitMechanism(1e6, m=1, feature_range=(0, 1)),
    lambda: PiecewiseMechanism(1e6, k=1, feature_range=(0, 1)),
    lambda: LaplaceMechanism(1e6, feature_range=(0, 1)),
])
def test_budgets_beyond_float_resolution_are_refused(make):
    # These used to overflow: all-NaN reports, or lo for everyone, with epsilon_ printed.
    # (Laplace's limit per feature is 30, where its clamp stops biasing the reports.)
    with pytest.raises(ValueError, match="above (50|30)"):
        make().fit(_users([0.3], n=3))


@pytest.mark.parametrize("mech", [OneBitMechanism(40.0, feature_range=(0, 1), random_state=0),
                                  MultiBitMechanism(40.0, m=1, feature_range=(0, 1),
                                                    random_state=0)])
def test_large_finite_budget_is_computed_stably(mech):
    n, x = 20000, np.array([0.0, 1.0])
    G = _users(x, n=n)
    Z = np.asarray(mech.fit(G).transform(G).features)
    assert np.all(np.isfinite(Z))
    # unbiased: the mean of n reports within 4 s.e. of the mechanism's variance
    se = np.sqrt(mech.variance(x) / n)
    assert np.all(np.abs(Z.mean(axis=0) - x) <= 4 * se + 1e-12), (Z.mean(axis=0), se)


@pytest.mark.parametrize("mech", [
    LaplaceMechanism(2.0, feature_range=(-1, 3), random_state=0),
    PiecewiseMechanism(2.0, k=2, feature_range=(-1, 3), random_state=0),
    HDSMechanism(2.0, k=2, feature_range=(-1, 3), random_state=0),
])
def test_continuous_reports_lie_on_a_grid_that_does_not_depend_on_the_input(mech):
    # Floating-point noise leaks (Mironov 2012): x + Lap(b) for x = -1 takes float values
    # that x = 3 cannot produce. Reports are now offset + integer * step.
    n = 5000
    X = np.vstack([np.full((n, 2), -1.0), np.full((n, 2), 3.0), np.full((n, 2), 0.123)])
    G = GraphData(X, node_ids=np.arange(len(X)))
    Z = mech.fit(G).transform(G).features
    Z = Z.toarray() if hasattr(Z, "toarray") else Z
    offset, step = mech.output_grid_[:2]
    k = (Z - offset) / step
    mid = (mech.feature_min_ + mech.feature_max_) / 2
    reported = ~np.isclose(Z, mid) if isinstance(mech, PiecewiseMechanism) else \
        np.ones(Z.shape, dtype=bool)
    assert np.all(np.abs(k - np.rint(k))[reported] <= 1e-9 * np.maximum(1.0, np.abs(k))[reported])
    assert len(np.unique(Z)) > 100                  # a fine grid, not a few values
