"""What a device sends, by rate: each kind's report follows its mechanism's stated
probabilities (p for the true value, q for each other), computed from the spec alone."""

import numpy as np

from skldp.device import plan
from skldp.mechanisms import LaplaceMechanism, SetValuedMechanism
from skldp.population import collection_spec

N_USERS = 4000
SEED = 20240611


def _keys(n=N_USERS):
    return np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)


def _within(count, n, prob, z=5.0):
    """Whether ``count`` of ``n`` Bernoulli(prob) draws is within ``z`` standard errors."""
    return abs(count - n * prob) <= z * np.sqrt(n * prob * (1 - prob)) + 1


def test_oue_set_valued_sets_the_true_item_at_one_half_and_others_at_q():
    eps, d = 2.0, 5
    spec = collection_spec(SetValuedMechanism(eps, ell=1, oracle="oue"), n_features=d)
    p = plan(spec)
    S = np.zeros((N_USERS, d), dtype=bool)
    S[:, 2] = True                                      # every user holds item 2 only
    bits = p.encode(S, SEED, _keys())["b"]
    q = 1.0 / (np.exp(eps) + 1.0)
    assert _within(int(bits[:, 2].sum()), N_USERS, 0.5)
    for j in (0, 1, 3, 4):
        assert _within(int(bits[:, j].sum()), N_USERS, q)


def test_a_non_binary_set_feature_is_replaced_by_a_fair_bit():
    # a value outside {0, 1} is replaced by a uniformly random one (0 or 1), never refused
    spec = collection_spec(SetValuedMechanism(1.0, ell=1, oracle="oue"), n_features=3)
    p = plan(spec)
    rows = np.tile([0.5, 1.0, 0.0], (N_USERS, 1))
    S, n = p.prepare_on_device(rows, np.random.default_rng(0))
    assert n == N_USERS
    assert S[:, 1].all() and not S[:, 2].any()          # in-domain values are kept
    assert _within(int(S[:, 0].sum()), N_USERS, 0.5)


def test_a_missing_feature_is_drawn_uniformly_between_the_public_bounds():
    spec = collection_spec(LaplaceMechanism(1.0, feature_range=(2.0, 6.0)), n_features=2)
    p = plan(spec)
    rows = np.tile([np.nan, 5.0], (N_USERS, 1))
    X, n = p.prepare_on_device(rows, np.random.default_rng(1))
    assert n == N_USERS
    assert np.all(X[:, 1] == 5.0)
    x = X[:, 0]
    assert x.min() >= 2.0 and x.max() <= 6.0
    # Uniform(2, 6): mean 4, a quarter of the draws in each unit interval
    assert abs(x.mean() - 4.0) < 5 * np.sqrt(16 / 12 / N_USERS)
    counts = np.histogram(x, bins=[2, 3, 4, 5, 6])[0]
    assert all(_within(int(c), N_USERS, 0.25) for c in counts)


def test_laplace_reports_are_clamped_to_the_domain_the_server_accepts(monkeypatch):
    # whatever the noise, a device's report is one the server's check accepts
    import skldp.device._kinds as kinds

    spec = collection_spec(LaplaceMechanism(1.0, feature_range=(0, 1)), n_features=2)
    p = plan(spec)
    big = 10 * (p.N + p.margin)
    monkeypatch.setattr(kinds, "discrete_laplace",
                        lambda s, u1, u2: np.tile(np.array([big, -big]), (len(u1), 1)))
    cells = p.encode(np.array([[1.0, 0.0]]), SEED, _keys(1))["c"]
    assert cells.tolist() == [[p.N + p.margin, -p.margin]]
    p.check(p.row({"c": cells}, 0))                     # inside the field's domain


def test_a_threshold_sets_the_items_strictly_above_it_as_the_server_does():
    # binarize=t: the set is {j : x_j > t} (SetValuedMechanism's docstring); a value equal
    # to t is not in the set, on the device as in the simulation
    mech = SetValuedMechanism(1.0, ell=1, oracle="oue", binarize=2.0)
    p = plan(collection_spec(mech, n_features=4))
    rows = np.array([[2.0, 2.5, 0.0, 7.0], [1.9, 2.0, 3.0, 2.0]])
    S, _ = p.prepare_on_device(rows, np.random.default_rng(0))
    np.testing.assert_array_equal(np.asarray(S, dtype=bool), rows > 2.0)
    np.testing.assert_array_equal(mech._sets(rows).toarray() == 1, rows > 2.0)
