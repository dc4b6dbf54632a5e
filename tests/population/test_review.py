"""A second adversarial review of the boundary: each problem it found, reproduced and fixed."""

import pickle

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from skldp.accounting import privacy_report
from skldp.baselines import CorrectAndSmooth, GraphFeatureUnion, LabelPropagationClassifier
from skldp.mechanisms import HDSMechanism, LabelRandomizedResponse, OneBitMechanism
from skldp.models import MLPHead
from skldp.population._digest import feature_digests
from skldp.privacy import forget_secrets
from skldp.propagation import KProp, PPRPropagation


@pytest.fixture
def sbm(binary_sbm):
    return binary_sbm(n=90, d=6)


def test_digests_of_binary_rows_do_not_collide(binary_sbm):
    # 0/1 rows once kept only 12 bits: swapping two words left the digest unchanged
    rng = np.random.default_rng(0)
    X = (rng.random((50_000, 30)) < 0.3).astype(float)
    rows = np.unique(X, axis=0)
    assert len(np.unique(feature_digests(rows))) == len(rows)
    x = np.zeros((1, 1433))
    y = x.copy()
    x[0, [3, 7]] = 1
    y[0, [3, 9]] = 1
    assert feature_digests(x)[0] != feature_digests(y)[0]


def test_correct_and_smooth_in_a_search_propagates_the_labels_sent(sbm):
    # the refit asks for the same collection again (free, no new ledger entry): C&S must
    # still propagate the reports, not the clean labels
    G, y = sbm
    cs = CorrectAndSmooth(LabelPropagationClassifier(
        label_mechanism=LabelRandomizedResponse(0.5, classes=[0, 1, 2], random_state=0)))
    search = GridSearchCV(cs, {"alpha1": [0.5, 0.9]}, cv=2).fit(G, y)
    best = search.best_estimator_
    assert np.mean(best.classes_[best.train_labels_] == y) < 0.8
    again = CorrectAndSmooth(cs.estimator).fit(G, y)           # a second fit: the same
    np.testing.assert_array_equal(again.train_labels_, best.train_labels_)


def test_central_trainings_on_plain_arrays_are_all_counted():
    from skldp.central import DPMLPClassifier
    from skldp.population import default_population
    rng = np.random.default_rng(0)
    X, y = rng.random((120, 4)), rng.integers(0, 2, 120)
    ledger = default_population().ledger
    before = {e.spec.id for e in ledger.entries()}
    clf = DPMLPClassifier(classes=[0, 1], batch_size=20, n_steps=3, noise_multiplier=1.0,
                          delta=1e-3, accountant="hypergeometric", random_state=0)
    search = GridSearchCV(clf, {"lr": [0.01, 0.1]}, cv=2).fit(X, y)
    new = [e for e in ledger.entries() if e.spec.id not in before]
    # 2 candidates x 2 folds + the refit: each fold is another array, all are counted
    assert len(new) == 5 and all(e.spec.model == "central" for e in new)
    rep = privacy_report(search)
    assert rep.central_epsilon >= sum(e.spec.epsilon for e in new) - 1e-9
    assert rep.central_delta >= 5e-3 - 1e-12


def test_a_union_of_server_steps_cannot_feed_a_mechanism(sbm):
    G, y = sbm
    pipe = Pipeline([("u", GraphFeatureUnion([("prop", KProp(1, self_loops=False))])),
                     ("bit", OneBitMechanism(1.0, feature_range=(0, 1), random_state=0)),
                     ("clf", MLPHead(epochs=2))])
    with pytest.raises(ValueError, match="no device can compute"):
        pipe.fit(G, y)


def test_raw_features_read_on_the_server_are_charged_in_full(sbm):
    G, y = sbm
    union = GraphFeatureUnion([("bit", OneBitMechanism(0.1, feature_range=(0, 1),
                                                       split_eps=True, random_state=0)),
                               ("raw", "passthrough")])
    pipe = Pipeline([("u", union), ("clf", MLPHead(epochs=2))]).fit(G, y)
    rep = privacy_report(pipe)
    assert np.isinf(rep.local_epsilon) and np.isinf(rep.epsilon_for("features"))
    assert "MLPHead read the users' features in the clear" in str(rep)
    # the same head on the reports alone reads nothing in the clear
    G2 = G.new_simulation()
    Pipeline([("bit", OneBitMechanism(0.1, feature_range=(0, 1), split_eps=True,
                                      random_state=0)),
              ("ppr", PPRPropagation()), ("clf", MLPHead(epochs=2))]).fit(G2, y)
    assert G2.ledger.local_epsilon == pytest.approx(0.1)


def test_ledgers_of_several_populations_add_up():
    X = np.random.default_rng(3).random((40, 2))
    ct = ColumnTransformer([("a", OneBitMechanism(1.0, feature_range=(0, 1), split_eps=True,
                                                  random_state=0), [0]),
                            ("b", OneBitMechanism(1.0, feature_range=(0, 1), split_eps=True,
                                                  random_state=0), [0, 1])])
    ct.fit_transform(X)
    # two column blocks are two arrays (two ledgers) of the same people: 1 + 1
    assert privacy_report(ct).local_epsilon == pytest.approx(2.0)


def test_a_pickled_graph_carries_no_secret(sbm):
    G, y = sbm
    Z = OneBitMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(G)
    secret = G.population._secret
    state = G.population.__getstate__()
    assert "_secret" not in state and "_answers" not in state
    blob = pickle.dumps(Z)
    assert secret.to_bytes(8, "little").rstrip(b"\0") not in blob   # pickle's int bytes
    # a copy on this machine reads them from the journal's private folder
    assert pickle.loads(blob).population._secret == secret


def test_the_collection_id_does_not_reveal_an_integer_random_state(sbm):
    G, _ = sbm
    a = HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit(G)
    b = HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit(G.new_simulation())
    assert a.seed_ == b.seed_                        # the same simulation ...
    assert a.collection_.id != b.collection_.id      # ... but ids keyed by each population
    assert a.collection_.id == a.collection_.content_id()


@pytest.mark.parametrize("wrap", ["column_transformer", "search_in_pipeline"])
def test_forget_secrets_reaches_nested_containers(sbm, wrap):
    G, y = sbm
    X = np.asarray(G)
    if wrap == "column_transformer":
        est = Pipeline([("ct", ColumnTransformer([("m", OneBitMechanism(
            1.0, feature_range=(0, 1), random_state=0), [0, 1])])),
            ("clf", LabelPropagationClassifier())])
        est = Pipeline([("ct", est.steps[0][1])]).fit(X)
        est.transform(X)
        arg = X
    else:
        inner = Pipeline([("hds", HDSMechanism(1.0, feature_range=(0, 1), random_state=0)),
                          ("clf", MLPHead(epochs=2))])
        est = Pipeline([("s", GridSearchCV(inner, {"clf__lr": [0.01]}, cv=2))]).fit(G, y)
        arg = G
    forget_secrets(est, arg)
    blob = pickle.dumps(est)
    restored = pickle.loads(blob)
    from skldp.privacy import _estimators
    assert not any(hasattr(e, "seed_") for e in _estimators(restored))


def test_a_budget_set_after_a_copy_was_made_holds_in_the_copy(sbm):
    G, _ = sbm
    copy = pickle.loads(pickle.dumps(G))            # e.g. sent to a worker
    G.population.set_budget(1.0)
    from skldp.population import BudgetExceededError
    with pytest.raises(BudgetExceededError):
        HDSMechanism(2.0, feature_range=(0, 1), random_state=0).fit_transform(copy)
    assert G.ledger.local_epsilon == 0.0


def test_a_budget_a_copy_set_is_the_original_s_budget(sbm):
    # the cap held, but the original's attribute still read the old value
    G, _ = sbm
    copy = pickle.loads(pickle.dumps(G))            # e.g. a worker's
    copy.population.set_budget(2.5)
    assert G.population.budget == 2.5
    assert G.population.remaining(G.node_keys[:1]) == pytest.approx([2.5])
    assert privacy_report(G).budget == 2.5
    with pytest.raises(AttributeError):
        G.population.budget = 9.0                   # only set_budget writes the journal


def test_without_a_cap_a_user_read_in_the_clear_has_budget_left(sbm):
    # remaining() gave inf - inf = NaN once a step read the features in the clear
    from sklearn.linear_model import LogisticRegression
    G, y = sbm
    LogisticRegression().fit(G, y)                  # np.asarray(G): read in the clear
    assert G.ledger.local_epsilon == np.inf
    assert np.all(G.population.remaining(G.node_keys) == np.inf)
    H, _ = sbm
    H = H.new_simulation(budget=2.0)
    HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(H)
    assert H.population.remaining(H.node_keys[:2]) == pytest.approx([1.0, 1.0])


def test_a_saved_ledger_stays_current_while_its_journal_is_there(sbm):
    G, _ = sbm
    mech = HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit(G)
    mech.transform(G)
    saved = pickle.loads(pickle.dumps(mech))        # e.g. returned by a worker
    HDSMechanism(4.0, feature_range=(0, 1), random_state=0).fit_transform(G)
    assert privacy_report(saved).local_epsilon == pytest.approx(5.0)
