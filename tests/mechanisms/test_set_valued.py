"""Tests of the set-valued mechanism (padding-and-sampling + GRR / OUE frequency oracle)."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from plain_array_checks import EXPECTED_FAILED_PLAIN_ARRAY
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.audit import audit_mechanism
from skldp.exceptions import InvalidParameterError, PrivacyLeakWarning
from skldp.mechanisms import (
    SetValuedMechanism,
    frequency_oracle_probabilities,
    set_valued_variance,
)
from skldp.models import MLPHead
from skldp.propagation import PPRPropagation


def _users(x, n, offset=0):
    """``n`` users holding the binary row ``x``, each with its own node id."""
    X = np.tile(np.asarray(x, dtype=float), (n, 1))
    return GraphData(sp.csr_matrix(X), node_ids=np.arange(offset, offset + n))


# ---------------------------------------------------------------- moments
@pytest.mark.parametrize("oracle,eps", [("grr", 1.0), ("oue", 1.0), ("grr", 4.0), ("oue", 0.5)])
@pytest.mark.parametrize("ell,x", [
    (1, [1, 0, 0, 1, 0, 0]),            # |S| = 2 > ell: truncation, E = x / |S|
    (4, [1, 0, 1, 0, 0, 0]),            # |S| = 2 < ell: padding, E = x (unbiased)
    (3, [1, 1, 1, 1, 1, 1]),            # |S| = 6 > ell: E = ell x / 6
    (2, [0, 0, 0, 0, 0, 0]),            # empty set: always the dummy, E = 0
])
def test_mean_and_variance_match_the_formula(oracle, eps, ell, x):
    n = 40_000
    x = np.asarray(x, dtype=float)
    G = _users(x, n)
    mech = SetValuedMechanism(eps, ell=ell, oracle=oracle, random_state=3).fit(G)
    R = mech.transform(G).features
    R = np.asarray(R.toarray() if sp.issparse(R) else R)
    s = x.sum()
    share = x / max(s, ell)
    np.testing.assert_allclose(mech.mean(x[None]), ell * share[None], rtol=1e-12)
    var = mech.variance(x[None])[0]
    np.testing.assert_allclose(var, set_valued_variance(eps, 6, ell, oracle, share), rtol=1e-12)
    # unbiased for x whenever |S| <= ell
    if s <= ell:
        np.testing.assert_allclose(mech.mean(x[None])[0], x)
    m_hat, v_hat = R.mean(axis=0), R.var(axis=0, ddof=1)
    se_m = np.sqrt(var / n)
    assert np.all(np.abs(m_hat - ell * share) <= 5 * se_m), (m_hat, ell * share, se_m)
    mu4 = np.mean((R - m_hat) ** 4, axis=0)
    se_v = np.sqrt((mu4 - v_hat ** 2) / n)
    assert np.all(np.abs(v_hat - var) <= 5 * se_v + 1e-12), (v_hat, var, se_v)


def test_variance_formula_closed_forms():
    # noise floor of a coordinate the user does not hold (ell = 1):
    # GRR (e^eps + D - 2) / (e^eps - 1)^2, OUE 4 e^eps / (e^eps - 1)^2 (Wang et al. 2017)
    eps, d = 1.5, 20
    e, D = np.exp(eps), d + 1
    assert set_valued_variance(eps, d, 1, "grr") == pytest.approx((e + D - 2) / (e - 1) ** 2)
    assert set_valued_variance(eps, d, 1, "oue") == pytest.approx(4 * e / (e - 1) ** 2)
    assert set_valued_variance(eps, d, 3, "oue") == pytest.approx(9 * 4 * e / (e - 1) ** 2)
    p, q = frequency_oracle_probabilities(eps, D, "grr")
    assert p / q == pytest.approx(e) and p + (D - 1) * q == pytest.approx(1.0)
    p, q = frequency_oracle_probabilities(eps, D, "oue")
    assert p * (1 - q) / ((1 - p) * q) == pytest.approx(e)
    with pytest.raises(ValueError, match="oracle"):
        frequency_oracle_probabilities(eps, D, "olh")


@pytest.mark.parametrize("eps,d", [(1.0, 8), (1.0, 10), (4.0, 200), (0.5, 1433), (8.0, 1433)])
def test_auto_oracle_is_grr_iff_domain_small(eps, d):
    X = np.zeros((3, d))
    X[0, 0] = 1.0
    mech = SetValuedMechanism(eps, random_state=0).fit(X)
    # GRR has the smaller noise floor iff D - 2 < 3 e^eps, D = d + 1 items (with the dummy)
    assert mech.oracle_ == ("grr" if d - 1 < 3 * np.exp(eps) else "oue")


# ---------------------------------------------------------------- privacy
@pytest.mark.parametrize("oracle", ["grr", "oue"])
@pytest.mark.parametrize("x0,x1,ell", [
    ([1, 0, 0], [0, 1, 0], 1),          # two singletons: the oracle's own worst case
    ([0, 0, 0], [1, 1, 1], 1),          # different sizes, empty against full
    ([1, 1, 0], [0, 0, 1], 2),          # padded against unpadded
])
def test_audited_epsilon_never_exceeds_eps(oracle, x0, x1, ell):
    eps = 1.0
    mech = SetValuedMechanism(eps, ell=ell, oracle=oracle, random_state=0)
    res = audit_mechanism(mech, x0, x1, n_samples=60_000, outputs="joint")
    assert res.epsilon_claimed == eps
    assert not res.exceeds_claim
    assert res.epsilon_lower <= eps
    if ell == 1 and sum(x0) == 1:
        # tight: two singletons reach the oracle's e^eps
        assert res.epsilon_lower > 0.8 * eps, res.epsilon_lower


def test_privacy_report_and_search_spend_one_budget():
    rng = np.random.default_rng(0)
    n, d = 120, 15
    X = sp.csr_matrix((rng.random((n, d)) < 0.2).astype(float))
    A = sp.random(n, n, density=0.05, random_state=0, format="csr")
    G = GraphData(X, ((A + A.T) > 0).astype(float), node_ids=np.arange(n))
    y = rng.integers(0, 2, n)
    pipe = Pipeline([("sv", SetValuedMechanism(2.0, random_state=1)),
                     ("ppr", PPRPropagation()), ("clf", MLPHead(epochs=5, random_state=0))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = GridSearchCV(pipe, {"ppr__alpha": [0.1, 0.2]}, cv=2).fit(G, y)
    rep = privacy_report(search)
    # one collection (fixed seed, public ell) for every fold and the refit
    assert rep.local_epsilon == pytest.approx(2.0) and len(rep.spends) == 1
    # no seed: each fit is a new collection, and the users pay for each (4 folds + refit)
    pipe.set_params(sv__random_state=None)
    G = G.new_simulation()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = GridSearchCV(pipe, {"ppr__alpha": [0.1, 0.2]}, cv=2).fit(G, y)
    assert privacy_report(search).local_epsilon == pytest.approx(2.0 * 5)


# ---------------------------------------------------------------- output format
def test_reports_lie_on_the_output_grid_and_are_dense():
    rng = np.random.default_rng(0)
    X = (rng.random((200, 30)) < 0.1).astype(float)
    for oracle in ("grr", "oue"):
        mech = SetValuedMechanism(1.0, ell=3, oracle=oracle, random_state=0).fit(X)
        R = mech.transform(X)
        assert isinstance(R, np.ndarray) and R.shape == X.shape
        off, step = mech.output_grid_
        i = (R - off) / step
        np.testing.assert_allclose(i, np.round(i), atol=1e-9)
        assert set(np.unique(np.round(i))) <= {0.0, 1.0}
        # GRR: at most one item seen per user
        if oracle == "grr":
            assert np.all(np.round(i).sum(axis=1) <= 1)


def test_eps_inf_reports_the_sampled_item():
    X = np.array([[1, 0, 1, 0], [0, 0, 0, 0], [0, 1, 0, 0]], dtype=float)
    mech = SetValuedMechanism(np.inf, ell=1, random_state=0).fit(X)
    R = mech.transform(X)
    assert mech.epsilon_ == np.inf and mech.output_grid_ is None
    assert R[0].sum() == 1 and set(np.flatnonzero(R[0])) <= {0, 2}
    np.testing.assert_array_equal(R[1], 0)          # the empty set reports the dummy
    np.testing.assert_array_equal(R[2], X[2])


def test_sparse_and_dense_inputs_give_the_same_reports():
    rng = np.random.default_rng(1)
    X = (rng.random((50, 12)) < 0.3).astype(float)
    a = SetValuedMechanism(1.0, ell=2, random_state=4).fit(X).transform(X)
    Xs = sp.csr_matrix(X)
    b = SetValuedMechanism(1.0, ell=2, random_state=4).fit(Xs).transform(Xs)
    np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- ell
def test_ell_auto_uses_public_bound_or_warns():
    X = np.zeros((4, 6))
    X[0, :5] = 1.0
    X[1, 0] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        mech = SetValuedMechanism(1.0, ell="auto", max_set_size=3, random_state=0).fit(X)
    assert mech.ell_ == 3 and mech.feature_range == (0.0, 1.0)
    with pytest.warns(PrivacyLeakWarning, match="max_set_size"):
        mech = SetValuedMechanism(1.0, ell="auto", random_state=0).fit(X)
    assert mech.ell_ == 5 and mech.feature_range is None
    # a fixed ell ignores max_set_size
    assert SetValuedMechanism(1.0, ell=2, max_set_size=9, random_state=0).fit(X).ell_ == 2


# ---------------------------------------------------------------- determinism
@pytest.fixture
def graph():
    rng = np.random.default_rng(0)
    n, d = 60, 25
    X = (rng.random((n, d)) < 0.2).astype(float)
    ids = rng.permutation(1000)[:n] + 17
    return GraphData(sp.csr_matrix(X), node_ids=ids)


def test_same_report_for_subsets_orders_and_after_pickle(graph):
    mech = SetValuedMechanism(1.0, ell=2, random_state=0).fit(graph[np.arange(0, 60, 2)])
    full = np.asarray(mech.transform(graph).features)
    rows = np.array([31, 3, 44, 8])
    np.testing.assert_array_equal(np.asarray(mech.transform(graph[rows])), full[rows])
    mech2 = pickle.loads(pickle.dumps(mech))
    np.testing.assert_array_equal(np.asarray(mech2.transform(graph[rows[::-1]])),
                                  full[rows[::-1]])
    perm = np.random.default_rng(1).permutation(60)
    G2 = GraphData(graph.features[perm], node_ids=graph.all_node_ids[perm], population=graph)
    np.testing.assert_array_equal(np.asarray(mech.transform(G2)), full[perm])


def test_different_random_state_or_ell_different_collections(graph):
    def rep(**kw):
        return np.asarray(SetValuedMechanism(1.0, **kw).fit(graph).transform(graph))
    r0 = rep(ell=2, random_state=0)
    assert np.array_equal(r0, rep(ell=2, random_state=0))
    assert not np.array_equal(r0, rep(ell=2, random_state=1))
    assert not np.array_equal(r0 / 2, rep(ell=1, random_state=0))


def test_other_users_refused():
    X = np.eye(4)
    mech = SetValuedMechanism(1.0, random_state=0).fit(X)
    with pytest.raises(ValueError, match="another array"):
        mech.transform(np.eye(4)[::-1])


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("eps,err", [(0, ValueError), (-1.0, ValueError),
                                     (float("nan"), ValueError), ("1", TypeError)])
def test_bad_eps(eps, err):
    with pytest.raises(err):
        SetValuedMechanism(eps).fit(np.eye(3))


@pytest.mark.parametrize("X,match", [
    (np.array([[0.0, 2.0], [1.0, 0.0]]), "binary"),
    (np.array([[0.0, -1.0], [1.0, 0.0]]), "binary"),
    (np.array([[0.0, 0.5], [1.0, 0.0]]), "binary"),
    (np.array([[0.0, np.nan], [1.0, 0.0]]), "NaN"),
    (np.array([[0.0, np.inf], [1.0, 0.0]]), "NaN or infinite"),
])
def test_bad_features(X, match):
    with pytest.raises(ValueError, match=match):
        SetValuedMechanism(1.0, random_state=0).fit(X)
    mech = SetValuedMechanism(1.0, random_state=0).fit(np.eye(2))
    with pytest.raises(ValueError, match=match):
        mech._device_input(X)


def test_binarize_threshold():
    X = np.array([[0.0, 3.0, 0.2], [1.0, 0.0, 0.0]])
    mech = SetValuedMechanism(np.inf, ell=1, binarize=0.5, random_state=0).fit(X)
    np.testing.assert_array_equal(mech.transform(X), [[0, 1, 0], [1, 0, 0]])
    with pytest.raises(ValueError, match="binarize"):
        SetValuedMechanism(1.0, binarize=-0.5).fit(X)
    with pytest.raises(ValueError, match="binarize"):
        SetValuedMechanism(1.0, binarize=float("nan")).fit(X)


@pytest.mark.parametrize("kw,match", [({"ell": 0}, "'ell' parameter"),
                                      ({"ell": 1.5}, "'ell' parameter"),
                                      ({"ell": "big"}, "'ell' parameter"),
                                      ({"oracle": "olh"}, "oracle"),
                                      ({"ell": "auto", "max_set_size": 0}, "max_set_size")])
def test_bad_parameters(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        SetValuedMechanism(1.0, **kw).fit(np.eye(3))


def test_unfitted_moments_raise():
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        SetValuedMechanism().mean(np.eye(3))


# ---------------------------------------------------------------- sklearn
@parametrize_with_checks([SetValuedMechanism(1.0, binarize=0.0, random_state=0),
                          SetValuedMechanism(4.0, ell=2, oracle="oue", binarize=0.5,
                                             random_state=0)],
                         expected_failed_checks=lambda est: EXPECTED_FAILED_PLAIN_ARRAY)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)


def test_feature_range_docstring_names_the_warning():
    # it claimed privacy_report reads the property; the PrivacyLeakWarning of fit flags it
    doc = SetValuedMechanism.feature_range.__doc__
    assert "PrivacyLeakWarning" in doc and "does not read" in doc
    with pytest.warns(PrivacyLeakWarning):
        SetValuedMechanism(1.0, ell="auto").fit(np.eye(4))


def test_ell_read_from_the_data_is_a_read_in_the_clear():
    from skldp.population import BudgetExceededError
    X = np.zeros((20, 6))
    X[:, 0] = 1.0
    X[3, :5] = 1.0                                 # one user's set fixes the public ell
    line = ("SetValuedMechanism(ell='auto', max_set_size=None) read the users' features "
            "in the clear: epsilon=inf (20 users)")
    G = GraphData(X)
    with pytest.warns(PrivacyLeakWarning, match=r"max_set_size.*charges.*epsilon=inf"):
        mech = SetValuedMechanism(1.0, ell="auto", random_state=0).fit(G)
    assert mech.ell_ == 5
    mech.transform(G)
    for rep in (privacy_report(G), privacy_report(mech)):
        assert np.isinf(rep.local_epsilon) and line in str(rep)
    pipe = Pipeline([("sv", SetValuedMechanism(1.0, ell="auto", random_state=0)),
                     ("clf", MLPHead(epochs=1, early_stopping=False, random_state=0))])
    with pytest.warns(PrivacyLeakWarning, match="max_set_size"):
        pipe.fit(X[:, ::-1].copy(), np.arange(20) % 2)   # a plain array: its own users
    rep = privacy_report(pipe)
    assert np.isinf(rep.local_epsilon) and line in str(rep)
    capped = GraphData(X, budget=10.0)
    mech = SetValuedMechanism(1.0, ell="auto", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(BudgetExceededError, match=r"ell='auto', max_set_size=None\).*"
                                                      r"Pass a public bound max_set_size="):
            mech.fit(capped)
    assert capped.ledger.entries() == [] and not hasattr(mech, "ell_")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        SetValuedMechanism(1.0, ell="auto", max_set_size=5, random_state=0).fit_transform(capped)
        SetValuedMechanism(1.0, ell=2, random_state=0).fit_transform(capped)
    assert privacy_report(capped).local_epsilon == 2.0


@pytest.mark.parametrize("eps, D, match", [
    (1.0, 0, "domain_size must be an integer >= 2"),   # was p = 1.58
    (1.0, 1, "domain_size must be an integer >= 2"),
    (1.0, 2.0, "domain_size must be an integer"),
    (np.nan, 3, "eps must be a positive real number, got NaN"),   # was nan
    (-1.0, 3, "eps must be > 0"),
    (0.0, 3, "eps must be > 0"),
])
def test_oracle_probabilities_refuse_bad_budgets_and_domains(eps, D, match):
    with pytest.raises(InvalidParameterError, match=match):
        frequency_oracle_probabilities(eps, D, "grr")


@pytest.mark.parametrize("kwargs, match", [
    ({"ell": 0}, "ell must be an integer >= 1"),                 # was 0.0
    ({"n_features": 0}, "n_features must be an integer >= 1"),
    ({"share": 2.0}, r"share must be a probability in \[0, 1\]"),   # was accepted
    ({"share": np.array([0.5, np.nan])}, "share must be a probability"),
    ({"share": -0.1}, "share must be a probability"),
    ({"eps": np.nan}, "eps must be a positive real number"),
])
def test_set_valued_variance_refuses_bad_padding_and_shares(kwargs, match):
    args = {"eps": 1.0, "n_features": 10, "ell": 1, "oracle": "grr"} | kwargs
    with pytest.raises(InvalidParameterError, match=match):
        set_valued_variance(**args)
    # the limits of share are valid
    assert set_valued_variance(1.0, 10, 2, "oue", np.array([0.0, 1.0])).shape == (2,)


def test_a_numpy_generator_seeds_the_collection_reproducibly():
    # the docstring said "int, RandomState instance or None": a Generator gives the seed
    # of one draw from it, so two fresh Generators of one seed give the same reports
    X = (np.random.default_rng(1).random((50, 12)) < 0.3).astype(float)
    a, b = (SetValuedMechanism(1.0, ell=2, random_state=np.random.default_rng(7))
            .fit_transform(X) for _ in range(2))
    np.testing.assert_array_equal(a, b)
    assert "Generator" in SetValuedMechanism.__doc__.split("random_state :")[1].splitlines()[0]
