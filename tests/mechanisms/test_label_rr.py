"""Tests of the k-ary randomized response label mechanism."""

import pickle

import numpy as np
import pytest

from skldp import GraphData
from skldp.exceptions import PrivacyLeakWarning
from skldp.mechanisms import LabelRandomizedResponse


def _rates(eps, c, n_per_class, seed=0):
    rr = LabelRandomizedResponse(eps, classes=np.arange(c), random_state=seed).fit()
    y = np.repeat(np.arange(c), n_per_class)
    z = rr.randomize(y, np.arange(len(y)))
    M = np.zeros((c, c))
    np.add.at(M, (y, z), 1.0)
    return rr, M / n_per_class


@pytest.mark.parametrize("eps,c", [(0.5, 2), (1.0, 4), (3.0, 7)])
def test_flip_rates_match_p_and_q(eps, c):
    n = 20000
    rr, M = _rates(eps, c, n)
    p = np.exp(eps) / (np.exp(eps) + c - 1)
    q = 1 / (np.exp(eps) + c - 1)
    assert rr.p_ == pytest.approx(p) and rr.q_ == pytest.approx(q)
    T = np.where(np.eye(c, dtype=bool), p, q)
    np.testing.assert_allclose(rr.transition_matrix_, T)
    np.testing.assert_allclose(rr.transition_matrix_.sum(axis=1), 1.0)
    se = np.sqrt(T * (1 - T) / n)
    assert np.all(np.abs(M - T) <= 5 * se)


@pytest.mark.parametrize("eps,c", [(1.0, 3), (2.0, 5)])
def test_empirical_ldp_ratio(eps, c):
    n = 40000
    _, M = _rates(eps, c, n, seed=1)
    # P(report j | i) / P(report j | i') <= e^eps; the ratio of two binomial
    # proportions has relative standard error ~ sqrt((1-a)/(n a) + (1-b)/(n b)).
    q = 1 / (np.exp(eps) + c - 1)
    rel_se = np.sqrt(2 * (1 - q) / (n * q))
    ratio = M[:, None, :] / M[None, :, :]
    assert ratio.max() <= np.exp(eps) * (1 + 5 * rel_se)
    assert ratio.max() >= np.exp(eps) * (1 - 5 * rel_se)  # the bound is attained


def test_deterministic_per_node_key():
    rr = LabelRandomizedResponse(0.5, classes=[0, 1, 2], random_state=3).fit()
    y = np.arange(300) % 3
    keys = np.arange(1000, 1300, dtype=np.uint64)
    z = rr.randomize(y, keys)
    np.testing.assert_array_equal(rr.randomize(y, keys), z)
    perm = np.random.default_rng(0).permutation(300)[:100]
    np.testing.assert_array_equal(rr.randomize(y[perm], keys[perm]), z[perm])
    z2 = pickle.loads(pickle.dumps(rr)).randomize(y, keys)
    np.testing.assert_array_equal(z2, z)
    other = LabelRandomizedResponse(0.5, classes=[0, 1, 2], random_state=4).fit()
    assert np.any(other.randomize(y, keys) != z)


def test_graphdata_keys_and_string_labels():
    G = GraphData(np.zeros((50, 1)), node_ids=[f"user{i}" for i in range(50)])
    y = np.array(["a", "b"])[np.arange(50) % 2]
    rr = LabelRandomizedResponse(1.0, classes=["a", "b"], random_state=0).fit()
    z_view = rr.randomize(y[10:20], G[10:20])
    z_all = rr.randomize(y, G)
    np.testing.assert_array_equal(z_view, z_all[10:20])
    assert set(z_all) <= {"a", "b"}
    # the collection belongs to G's users: bare keys (other users) are refused
    with pytest.raises(ValueError, match="other users"):
        rr.randomize(y, G.node_keys)


def test_unbiased_frequency_estimate():
    c, eps, n = 4, 1.0, 40000
    f = np.array([0.1, 0.2, 0.3, 0.4])
    y = np.random.default_rng(0).choice(c, size=n, p=f)
    rr = LabelRandomizedResponse(eps, classes=np.arange(c), random_state=0).fit()
    z = rr.randomize(y, GraphData(np.zeros((n, 1))))
    est = rr.estimate_frequencies(z)
    true = np.bincount(y, minlength=c) / n
    p, q = rr.p_, rr.q_
    # Wang et al. (USENIX Sec. 2017), variance of the k-RR frequency estimator.
    var = q * (1 - q) / (n * (p - q) ** 2) + true * (1 - p - q) / (n * (p - q))
    assert np.all(np.abs(est - true) <= 5 * np.sqrt(var))
    assert est.sum() == pytest.approx(1.0)
    # the raw noisy frequencies are biased towards uniform
    raw = np.bincount(z, minlength=c) / n
    assert np.abs(raw - true).max() > 10 * np.sqrt(var).max()


def test_huge_eps_refused_and_tiny_flip_probabilities_sampled():
    # A flip probability of e^-50 cannot be sampled with 53-bit uniforms; the check
    # refuses budgets beyond what the full-precision sampler resolves.
    with pytest.raises(ValueError, match="above 50"):
        LabelRandomizedResponse(1e6, classes=[0, 1]).fit()
    rr = LabelRandomizedResponse(20.0, classes=[0, 1], random_state=0).fit()
    assert rr.q_ == pytest.approx(1 / (np.exp(20.0) + 1)) and rr.p_ + rr.q_ == pytest.approx(1)


def test_infinite_eps_is_identity():
    rr = LabelRandomizedResponse(np.inf, classes=[0, 1], random_state=0).fit()
    y = np.arange(100) % 2
    np.testing.assert_array_equal(rr.randomize(y, np.arange(100)), y)
    np.testing.assert_array_equal(rr.transition_matrix_, np.eye(2))
    assert rr.epsilon_ == np.inf and rr.protects_ == ("labels",)


def test_attributes():
    rr = LabelRandomizedResponse(2.0, classes=[2, 0, 1], random_state=0).fit()
    np.testing.assert_array_equal(rr.classes_, [0, 1, 2])
    assert rr.epsilon_ == 2.0 and rr.protects_ == ("labels",)


def test_classes_from_data_warns():
    y = np.array([0, 1, 2, 1])
    with pytest.warns(PrivacyLeakWarning):
        rr = LabelRandomizedResponse(1.0, random_state=0).fit(GraphData(np.zeros((4, 1))), y)
    np.testing.assert_array_equal(rr.classes_, [0, 1, 2])
    with pytest.raises(ValueError, match="public label domain"):
        LabelRandomizedResponse(1.0).fit()


@pytest.mark.parametrize("eps", [0, -1.0, np.nan])
def test_bad_eps(eps):
    with pytest.raises(ValueError):
        LabelRandomizedResponse(eps, classes=[0, 1]).fit()


def test_bad_eps_type():
    with pytest.raises(TypeError):
        LabelRandomizedResponse("1", classes=[0, 1]).fit()


def test_bad_labels():
    rr = LabelRandomizedResponse(1.0, classes=[0, 1, 2], random_state=0).fit()
    with pytest.raises(ValueError, match="unlabelled"):
        rr.randomize(np.array([0, -1, 2]), np.arange(3))
    with pytest.raises(ValueError, match="not in classes"):
        rr.randomize(np.array([0, 5, 2]), np.arange(3))
    # labels carry no user ids: keys are required (positions would give user i of two
    # label arrays the same noise)
    with pytest.raises(ValueError, match="keys"):
        rr.randomize(np.array([0, 1, 2]), None)
    with pytest.raises(ValueError, match="keys"):
        rr.randomize(np.array([0, 1]), np.arange(3, dtype=np.uint64))
    with pytest.raises(ValueError, match="unlabelled"):
        LabelRandomizedResponse(1.0).fit(y=np.array([0, -1, 1]))
    with pytest.raises(ValueError, match="two classes"):
        LabelRandomizedResponse(1.0, classes=[1]).fit()
    with pytest.raises(ValueError, match="-1"):
        LabelRandomizedResponse(1.0, classes=[-1, 0, 1]).fit()
    with pytest.raises(ValueError, match="duplicates"):
        LabelRandomizedResponse(1.0, classes=[0, 1, 1]).fit()


@pytest.mark.parametrize("y, match", [
    ([0, -2, 1, 2], "unlabelled"),            # any negative number marks "unlabelled"
    ([0.5, 1.5, 2.25, 0.75], "continuous"),   # no classes
    (np.array([1, "a", 1, "a"], dtype=object), "Unknown label type"),
])
def test_labels_a_classifier_refuses_are_no_classes_of_the_mechanism(y, match):
    # the domain read from such labels took -2 for a class, or one class per float
    with pytest.raises(ValueError, match=match):   # before the domain is read
        LabelRandomizedResponse(1.0).fit(y=np.asarray(y))
    with pytest.raises(ValueError, match="negative number"):
        LabelRandomizedResponse(1.0, classes=[-2, 0, 1]).fit()


def test_nan_labels_and_a_single_class_give_plain_messages():
    rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0).fit()
    with pytest.raises(ValueError, match=r"y marks 1 row\(s\) unlabelled .*first at row 1\)"):
        rr.randomize(np.array([0.0, np.nan, 1.0]), np.arange(3))
    with pytest.raises(ValueError, match=r"needs at least two classes, got \[0\]\.$"):
        LabelRandomizedResponse(1.0, classes=[0]).fit()
    with pytest.raises(ValueError, match=r"got \['a'\]\.$"):
        LabelRandomizedResponse(1.0, classes=np.array(["a"])).fit()
    with pytest.raises(ValueError, match="classes must not contain NaN"):
        LabelRandomizedResponse(1.0, classes=[0.0, np.nan]).fit()


def test_classes_read_from_the_labels_are_a_read_in_the_clear():
    import warnings

    from skldp.accounting import privacy_report
    from skldp.population import BudgetExceededError
    y = np.zeros(50, dtype=int)
    y[17] = 9                                      # only user 17 holds class 9
    line = ("LabelRandomizedResponse(classes=None) read the users' labels in the clear: "
            "epsilon=inf (50 users)")
    # the users of y named at fit (their view): charged there, before the domain is derived
    G = GraphData(np.zeros((50, 1)))
    with pytest.warns(PrivacyLeakWarning, match=r"classes.*charges.*epsilon=inf"):
        rr = LabelRandomizedResponse(1.0, random_state=0).fit(G, y)
    assert rr.collection_.public_state["classes"] == [0, 9]
    assert line in str(privacy_report(G))
    rr.randomize(y, G)
    rr.randomize(y, G)                             # charged once
    for rep in (privacy_report(G), privacy_report(rr)):
        assert np.isinf(rep.local_epsilon) and np.isinf(rep.epsilon_for("labels"))
        assert line in str(rep)
    assert sum(s.model == "clear" for s in privacy_report(G).spends) == 1
    # under a budget: refused before any label is sent, with what to pass instead
    capped = GraphData(np.zeros((50, 1)), budget=10.0)
    rr = LabelRandomizedResponse(1.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(BudgetExceededError, match=r"classes=None\) reads the label "
                                                      r"domain.*50 user\(s\).*Pass classes="):
            rr.fit(capped, y)
    assert capped.ledger.entries() == []
    # a public domain: nothing read, no warning, the same budget admits the collection
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        LabelRandomizedResponse(1.0, classes=[0, 9], random_state=0).fit().randomize(y, capped)
    assert privacy_report(capped).local_epsilon == 1.0


def test_classes_read_without_the_users_of_the_labels_is_refused():
    # Before: fit(y=y) deferred the charge to the first randomize's users: randomizing
    # others (or fewer) left the users read free, and a mechanism saved in between held
    # which classes occur, charged to no one.
    y = np.zeros(50, dtype=int)
    y[17] = 9
    G = GraphData(np.zeros((50, 1)))
    for X in (None, G[np.arange(10)]):
        with pytest.raises(ValueError, match=r"classes=None\) reads the label domain from the "
                                             r"labels y: pass X, the GraphData view"):
            LabelRandomizedResponse(1.0, random_state=0).fit(X, y)
    assert G.ledger.entries() == []


def test_a_previous_versions_deferred_read_is_refused():
    # a mechanism saved between fit(y=...) and its first randomize by the previous version
    # held (count, digest) of the labels read: whose they were is not known any more
    rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0).fit()
    rr._classes_read = (50, "0" * 32)
    G = GraphData(np.zeros((10, 1)))
    with pytest.raises(ValueError, match="saved by an older version between fit and its first"):
        rr.randomize(np.zeros(10, dtype=int), G)
    assert G.ledger.entries() == []


def test_received_labels_with_classes_none_take_the_collections_domain():
    # Before: classes=None on a received graph never matched the collection (its spec
    # states the classes), so every classifier with a label mechanism refused it.
    import warnings

    from skldp.device import Device
    from skldp.models import LPGNNClassifier
    from skldp.population import collection_spec, read_reports, received_graph
    n = 30
    ids = [f"u{i}" for i in range(n)]
    y = np.arange(n) % 3                                # class 3 is in the domain, unsent
    spec = collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1, 2, 3]))
    recs = [Device(user=u, max_epsilon=10).answer(spec, int(y[i])) for i, u in enumerate(ids)]
    G0, y_sent = received_graph(labels=read_reports(recs, spec, users=ids), node_ids=ids)
    G = GraphData(np.ones((n, 1)), np.eye(n, k=1) + np.eye(n, k=-1), node_ids=ids,
                  population=G0)
    keep = y_sent >= 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LPGNNClassifier(eps_y=2.0, epochs=1, random_state=0).fit(G[keep], y_sent[keep])
    assert clf.label_mechanism_.classes_.tolist() == [0, 1, 2, 3]
    assert clf.label_mechanism_.collection_.id == spec.id
    assert G.ledger.epsilon_for("labels") == 2.0   # (the features: raw, read in the clear)


def test_received_labels_are_matched_to_the_collection_these_users_answered():
    # Before: of two received label collections of one budget, classes=None refused both
    # and an explicit domain took the last one, which these users had not answered.
    import warnings

    from skldp.device import Device
    from skldp.models import LPGNNClassifier
    from skldp.population import collection_spec, read_reports, received_graph

    def collect(users, classes, population=None):
        spec = collection_spec(LabelRandomizedResponse(2.0, classes=classes))
        recs = [Device(user=u, max_epsilon=100).answer(spec, i % 3)
                for i, u in enumerate(users)]
        G0, y_sent = received_graph(labels=read_reports(recs, spec, users=users),
                                    node_ids=users, population=population)
        return spec, G0, y_sent

    ids = [f"u{i}" for i in range(30)]
    first, G0, y_sent = collect(ids, [0, 1, 2, 3])
    collect([f"v{i}" for i in range(30)], [0, 1, 2, 3], population=G0)   # other users
    G = GraphData(np.ones((30, 1)), np.eye(30, k=1) + np.eye(30, k=-1), node_ids=ids,
                  population=G0)
    keep = y_sent >= 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for classes in (None, [0, 1, 2, 3]):
            clf = LPGNNClassifier(eps_y=2.0, classes=classes, epochs=1, random_state=0)
            clf.fit(G[keep], y_sent[keep])
            assert clf.label_mechanism_.collection_.id == first.id


def test_a_refit_on_received_labels_and_rounds_with_the_same_reports():
    # Before: a refit kept collected_ and read its new (unanswered) collection; two rounds
    # giving these users the same labels were refused as ambiguous.
    from skldp.device import Device
    from skldp.population import collection_spec, read_reports, received_graph
    ids = [f"u{i}" for i in range(20)]
    y = np.arange(20) % 3
    spec = collection_spec(LabelRandomizedResponse(50.0, classes=[0, 1, 2]))
    recs = [Device(user=u, max_epsilon=1000).answer(spec, int(y[i])) for i, u in enumerate(ids)]
    G, y1 = received_graph(labels=read_reports(recs, spec, users=ids), node_ids=ids)
    spec2 = collection_spec(LabelRandomizedResponse(50.0, classes=[0, 1, 2]), node_ids=ids)
    recs2 = [Device(user=u, max_epsilon=1000).answer(spec2, int(y[i]))
             for i, u in enumerate(ids)]
    received_graph(labels=read_reports(recs2, spec2, users=ids), node_ids=ids, population=G)
    rr = LabelRandomizedResponse(50.0, classes=[0, 1, 2])
    for _ in range(2):                              # fitted twice
        np.testing.assert_array_equal(rr.fit(G, y1).randomize(y1, G), y1)


@pytest.mark.parametrize("classes", [[[0, 1], [2, 3]], np.arange(4).reshape(2, 2),
                                     [[0], [1]]])
def test_classes_that_are_not_one_dimensional_are_refused(classes):
    # a 2-D domain was flattened into its entries: [[0, 1], [2, 3]] gave 4 classes
    with pytest.raises(ValueError, match="1-D"):
        LabelRandomizedResponse(1.0, classes=classes).fit()
    with pytest.raises(ValueError, match="1-D"):   # a ragged one too (numpy's error before)
        LabelRandomizedResponse(1.0, classes=[[0, 1], [2]]).fit()


def test_frequency_estimate_of_no_reports_is_refused():
    # it returned zeros, which do not sum to 1 as the estimate does (GRR-FS refuses too)
    rr = LabelRandomizedResponse(1.0, classes=[0, 1, 2], random_state=0).fit()
    with pytest.raises(ValueError, match="at least one report"):
        rr.estimate_frequencies([])
    with pytest.raises(ValueError, match="at least one report"):
        rr.estimate_frequencies(np.array([], dtype=np.int64))
