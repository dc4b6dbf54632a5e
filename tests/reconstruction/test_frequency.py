"""Tests of FrequencyReconstructor (paper 001 Algorithm 1, eq. (5))."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData, InvalidParameterError
from skldp.mechanisms import GRRFSMechanism
from skldp.reconstruction import FrequencyReconstructor, mean_propagation_matrix


def _sbm(n=400, d=6, seed=0):
    """Two communities; binary features with P(1) = 0.8 in community 1, 0.2 in community 0."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    P = np.where(y[:, None] == y[None, :], 0.05, 0.002)
    A = np.triu(rng.random((n, n)) < P, 1)
    A = sp.csr_matrix((A | A.T).astype(float))
    X = (rng.random((n, d)) < np.where(y[:, None] == 1, 0.8, 0.2)).astype(float)
    return GraphData(X, A), X, y


def test_matches_eq5_on_neighbourhood_proportions():
    G, X, _ = _sbm()
    mech = GRRFSMechanism(1.0, m=2, domain_sizes=2, random_state=0).fit(G)
    R = mech.transform(G)
    rec = FrequencyReconstructor(1.0, 2, domain_sizes=2, hops=1, clip=False).fit(R)
    Z = np.asarray(rec.transform(R))
    P = mean_propagation_matrix(G.adjacency)
    codes = np.asarray(R)
    for j in range(X.shape[1]):
        lam1 = P @ (codes[:, j] == 1)
        expected = mech.invert_observed(np.c_[1 - lam1, lam1], j)[:, 1]
        np.testing.assert_allclose(Z[:, j], expected, atol=1e-12)


def test_multi_valued_features_get_the_most_probable_code():
    # complete graph: every node sees all reports, so each gets the global mode
    rng = np.random.default_rng(0)
    n = 300
    X = rng.choice(4, size=(n, 3), p=[0.1, 0.6, 0.2, 0.1]).astype(float)
    A = sp.csr_matrix(np.ones((n, n)) - np.eye(n))
    G = GraphData(X, A)
    for eps, m in [(2.0, 1), (3.0, 3)]:
        mech = GRRFSMechanism(eps, m=m, domain_sizes=4, random_state=1).fit(G)
        R = mech.transform(G)
        Z = np.asarray(FrequencyReconstructor.from_mechanism(mech, hops=1).fit(R).transform(R))
        modes = [np.argmax(np.bincount(np.asarray(R)[:, j].astype(int))) for j in range(3)]
        np.testing.assert_array_equal(Z, np.broadcast_to(modes, Z.shape))
    assert np.all(Z == 1)  # little noise: the true mode


def test_reconstruction_beats_raw_reports_and_improves_with_hops():
    G, X, y = _sbm(seed=1)
    mech = GRRFSMechanism(1.0, m=2, domain_sizes=2, random_state=3).fit(G)
    R = mech.transform(G)
    mu = np.where(y[:, None] == 1, 0.8, 0.2)  # each node's true feature probability
    raw_err = np.mean(np.abs(np.asarray(R) - mu))
    errs = []
    for hops in (0, 1, 2):
        Z = np.asarray(FrequencyReconstructor(1.0, 2, domain_sizes=2, hops=hops).fit(R)
                       .transform(R))
        assert Z.min() >= 0 and Z.max() <= 1
        errs.append(np.mean(np.abs(Z - mu)))
    assert errs[1] < errs[0] and errs[2] < errs[1]
    assert errs[2] < 0.7 * raw_err


def test_output_is_a_view_and_memoised():
    G, _, _ = _sbm(n=60)
    mech = GRRFSMechanism(1.0, m=2, domain_sizes=2, random_state=0).fit(G)
    R = mech.transform(G)
    rec = FrequencyReconstructor(1.0, 2, domain_sizes=2).fit(R)
    full = np.asarray(rec.transform(R))
    np.testing.assert_array_equal(np.asarray(rec.transform(R[[5, 1]])), full[[5, 1]])
    assert rec.transform(R[[5]]).n_nodes == 60


def test_one_hot_is_sparse():
    G, _, _ = _sbm(n=60)
    with pytest.warns(UserWarning, match="raw features"):
        rec = FrequencyReconstructor(1.0, 2, domain_sizes=2, hops=0).fit(G)
    codes = np.asarray(G).astype(np.int64)
    L = rec.propagated_proportions(codes, G.adjacency, np.full(6, 2), np.arange(6))
    np.testing.assert_array_equal(L.sum(axis=1), np.full(60, 6))
    np.testing.assert_array_equal(L[:, 1::2], codes)


def test_bad_input():
    G, _, _ = _sbm(n=30)
    with pytest.raises(InvalidParameterError,
                       match=r"The 'eps' parameter of FrequencyReconstructor must be a float "
                             r"in the range \(0.0, inf\]"):
        FrequencyReconstructor(0.0, 1).fit(G)
    with pytest.raises(ValueError, match="m must be"):
        FrequencyReconstructor(1.0, 7).fit(G)
    with pytest.raises(ValueError, match="hops"):
        FrequencyReconstructor(1.0, 1, hops=-1).fit(G)
    with pytest.raises(ValueError, match="domain size"):
        FrequencyReconstructor(1.0, 1, domain_sizes=1).fit(G)
    with pytest.raises(TypeError, match="GraphData"):
        FrequencyReconstructor(1.0, 1).fit(np.zeros((3, 2)))
    bad = G.with_features(np.full((30, 6), 0.5))
    with pytest.raises(ValueError, match="integer codes"), \
            pytest.warns(UserWarning, match="not GRR-FS|set on the server"):
        FrequencyReconstructor(1.0, 1).fit(bad).transform(bad)
    with pytest.raises(ValueError, match="needs the graph"):
        FrequencyReconstructor(1.0, 1).fit(GraphData(np.zeros((3, 2))))


def test_non_finite_reports_are_refused():
    G, X, _ = _sbm(n=40, d=3)
    X = X.copy()
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"FrequencyReconstructor contain NaN or infinite "
                                         r"values \(first at row 2, column 1\)"):
        FrequencyReconstructor(1.0, 1).fit(GraphData(X, G.adjacency))


def test_no_self_loops_node_without_neighbours_uses_own_report():
    # an isolated node got an all-zero proportion row and a confident code 0
    n = 6
    X = np.array([[1, 3]] * n, dtype=float)
    A = sp.lil_matrix((n, n))
    A[1, 2] = A[2, 1] = 1.0
    G = GraphData(X, A.tocsr())
    mech = GRRFSMechanism(np.inf, m=2, domain_sizes=[2, 4], random_state=0).fit(G)
    R = mech.transform(G)
    for hops in (1, 2):
        rec = FrequencyReconstructor.from_mechanism(mech, hops=hops, self_loops=False)
        np.testing.assert_array_equal(rec.fit_transform(R).features, X)


def test_no_self_loops_partial_mass_renormalised():
    # node 0 -> {1, 2}; node 1 is a sink: with two hops node 0 reaches only node 2's path
    X = np.array([[0], [1], [1]], dtype=float)
    A = sp.csr_matrix(np.array([[0, 1, 1], [0, 0, 0], [1, 0, 0]], dtype=float))
    G = GraphData(X, A)
    mech = GRRFSMechanism(np.inf, m=1, domain_sizes=2, random_state=0).fit(G)
    rec = FrequencyReconstructor.from_mechanism(mech, hops=2, self_loops=False)
    Z = rec.fit_transform(mech.transform(G)).features
    assert np.all((Z >= 0) & (Z <= 1))
    assert Z[1, 0] == 1.0          # the sink: its own report
    # the proportions themselves: a row that lost mass is renormalised over what it
    # reaches, an empty one takes its own report, a whole one is unchanged
    from skldp.reconstruction._frequency import _own_where_lost
    lam = np.array([[0.5, 0.0], [0.0, 0.0], [0.2, 0.8], [0.1, 0.3]])
    got = _own_where_lost(lam, np.array([1, 1, 0, 0]), 2)
    np.testing.assert_allclose(got, [[1.0, 0.0], [0.0, 1.0], [0.2, 0.8], [0.25, 0.75]])
    # a small loss as well: a node of 2,000 out-neighbours, one of them a sink, keeps
    # 1 - 1/2000 of its mass at two hops, and is renormalised all the same
    small = _own_where_lost(np.array([[0.3, 0.6995]]), np.array([0]), 2)
    np.testing.assert_allclose(small.sum(axis=1), 1.0, rtol=1e-12)


def test_non_finite_domain_size_refused():
    R = np.array([[0, 1], [1, 0]], float)
    G = GraphData(R, sp.csr_matrix(np.ones((2, 2)) - np.eye(2)))
    with pytest.raises(ValueError, match="domain_sizes must be integers"):
        FrequencyReconstructor(1.0, 1, domain_sizes=np.inf, hops=0).fit(G)


@pytest.mark.parametrize("sizes", [2.5, [2, 2.5]])
def test_non_integer_domain_sizes_refused(sizes):
    R = np.array([[0, 1], [1, 0], [1, 1], [0, 0]], float)
    G = GraphData(R, sp.csr_matrix(np.ones((4, 4)) - np.eye(4)))
    with pytest.raises(ValueError, match="domain_sizes must be integers"):
        FrequencyReconstructor(1.0, 1, domain_sizes=sizes, hops=0).fit_transform(G)


def test_tiny_eps_refused():
    R = np.array([[0, 1], [1, 0]], float)
    G = GraphData(R, sp.csr_matrix(np.ones((2, 2)) - np.eye(2)))
    with pytest.raises(ValueError, match="below 2\\^-30"):
        FrequencyReconstructor(1e-17, 1, domain_sizes=2, hops=0).fit(G)


def test_the_most_frequent_code_does_not_depend_on_the_node_order():
    # Proportions that tie in exact arithmetic differ by one ulp when the neighbours are
    # summed in another order: a node's code flipped from 0 to 3 after a permutation.
    rng = np.random.default_rng(3)
    n, d = 150, 5
    y = rng.integers(0, 3, n)
    X = np.floor(np.clip(rng.random((3, d))[y] + 0.15 * rng.standard_normal((n, d)), 0, 1)
                 * 4).clip(0, 3)
    U = np.triu(rng.random((n, n)) < np.where(y[:, None] == y[None, :], 0.08, 0.01), 1)
    A = sp.csr_matrix((U | U.T).astype(float))
    ids = np.array([f"u{i:04d}" for i in range(n)])
    perm = np.random.default_rng(4).permutation(n)

    def reconstructed(X, A, ids):
        G = GraphData(X, A, node_ids=ids)
        R = GRRFSMechanism(2, m=2, domain_sizes=[4] * d, random_state=0).fit_transform(G)
        return np.asarray(FrequencyReconstructor(2, m=2, domain_sizes=[4] * d)
                          .fit_transform(R))

    Z = reconstructed(X, A, ids)
    Zp = reconstructed(X[perm], A[perm][:, perm], ids[perm])
    np.testing.assert_array_equal(Zp, Z[perm])


def test_propagation_matrix_normalised_once_per_adjacency(monkeypatch):
    # every fit (another eps, as a search over the budget does, or new reports on the
    # same graph) normalised the adjacency again at its transform; it is kept with the
    # adjacency now, and the output is the same
    from skldp.reconstruction import _frequency
    G, _, _ = _sbm()
    R = GRRFSMechanism(1.0, m=2, domain_sizes=2, random_state=0).fit(G).transform(G)
    want = [np.asarray(FrequencyReconstructor(eps, 2, domain_sizes=2, hops=2).fit_transform(R))
            for eps in (1.0, 2.0)]
    built = []
    normalise = _frequency.normalized_adjacency
    monkeypatch.setattr(_frequency, "normalized_adjacency",
                        lambda *a, **k: built.append(1) or normalise(*a, **k))
    R2 = GRRFSMechanism(1.0, m=2, domain_sizes=2, random_state=1).fit(G).transform(G)
    for eps, Z in zip((1.0, 2.0), want, strict=True):
        np.testing.assert_array_equal(
            np.asarray(FrequencyReconstructor(eps, 2, domain_sizes=2, hops=2).fit_transform(R)),
            Z)
        FrequencyReconstructor(eps, 2, domain_sizes=2, hops=2).fit_transform(R2)
    assert built == []
