"""The boundary's principles: what users send is recorded once, charged each time it changes,
capped before it is sent, and known to the parent of every worker process."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.exceptions import PrivacyLeakWarning
from skldp.mechanisms import HDSMechanism, LabelRandomizedResponse, OneBitMechanism
from skldp.models import MLPHead
from skldp.population import BudgetExceededError, CollectionSpec, Ledger, Population
from skldp.propagation import PPRPropagation


@pytest.fixture
def sbm(binary_sbm):
    return binary_sbm(n=90, d=6)


def _pipe(eps=1.0, random_state=0):
    return Pipeline([("hds", HDSMechanism(eps, feature_range=(0, 1),
                                          random_state=random_state)),
                     ("ppr", PPRPropagation()),
                     ("clf", MLPHead(epochs=2, early_stopping=False, random_state=0))])


def _summary(ledger):
    # ids differ between populations (their nonce is keyed by the devices' secret)
    return sorted((e.spec.kind, e.spec.epsilon, e.n_users, e.n_answers)
                  for e in ledger.entries())


def test_a_second_collection_is_charged_and_the_same_request_is_free(sbm):
    G, _ = sbm
    a = OneBitMechanism(1.0, feature_range=(0, 1), split_eps=True, random_state=0)
    Z = np.asarray(a.fit_transform(G).features)
    # the same request again (refit, another view, a clone with the same seed): free
    np.testing.assert_array_equal(np.asarray(a.fit(G).transform(G[::-1]).features), Z)
    OneBitMechanism(1.0, feature_range=(0, 1), split_eps=True, random_state=0).fit_transform(G)
    assert len(G.ledger) == 1 and G.ledger.local_epsilon == pytest.approx(1.0)
    # another collection of the same users: charged
    OneBitMechanism(0.5, feature_range=(0, 1), split_eps=True, random_state=0).fit_transform(G)
    assert len(G.ledger) == 2 and G.ledger.local_epsilon == pytest.approx(1.5)
    users, eps = G.ledger.per_user()
    assert len(users) == G.n_nodes and np.allclose(eps, 1.5)


def test_fitting_sends_nothing_transforming_does(sbm):
    G, _ = sbm
    mech = HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit(G)
    assert len(G.ledger) == 0 and mech.collection_.epsilon == 1.0
    mech.transform(G[:5])        # the whole graph answers (the server perturbs every node)
    assert G.ledger.entries()[0].n_users == G.n_nodes


@pytest.mark.parametrize("before", [PPRPropagation(), HDSMechanism(1.0, feature_range=(0, 1),
                                                                    random_state=1)],
                         ids=["propagation", "another mechanism"])
def test_steps_computed_on_the_server_cannot_feed_a_mechanism(sbm, before):
    G, y = sbm
    pipe = Pipeline([("before", before),
                     ("bit", OneBitMechanism(1.0, feature_range=(-5, 5), random_state=0)),
                     ("clf", MLPHead(epochs=2, early_stopping=False))])
    with pytest.raises(ValueError, match="no device can compute"):
        pipe.fit(G, y)


def test_a_capped_budget_refuses_before_anything_is_sent(sbm, monkeypatch):
    G, y = sbm
    G = GraphData(G.features, G.adjacency, budget=1.5)
    _pipe(1.0).fit(G, y)
    calls = []
    perturb = HDSMechanism._perturb
    monkeypatch.setattr(HDSMechanism, "_perturb",
                        lambda self, X, keys: calls.append(1) or perturb(self, X, keys))
    with pytest.raises(BudgetExceededError, match="budget of 1.5"):
        _pipe(1.0, random_state=1).fit(G, y)
    assert calls == [] and len(G.ledger) == 1          # no report computed, none recorded
    _pipe(0.5, random_state=1).fit(G, y)                 # exactly the cap: allowed
    assert G.ledger.local_epsilon == pytest.approx(1.5)
    rep = privacy_report(G)
    assert rep.budget == 1.5 and "0 left" in str(rep)
    # labels count against the same cap
    with pytest.raises(BudgetExceededError):
        LabelRandomizedResponse(0.1, classes=[0, 1, 2], random_state=0).fit().randomize(y, G)


def test_the_same_users_under_another_graph_share_the_ledger(sbm):
    G, _ = sbm
    mech = HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit(G)
    mech.transform(G)
    copy = pickle.loads(pickle.dumps(G))               # e.g. sent to a worker and back
    assert copy.population.id == G.population.id
    HDSMechanism(2.0, feature_range=(0, 1), random_state=0).fit_transform(copy)
    assert G.ledger.local_epsilon == pytest.approx(3.0)   # the original read the journal


@pytest.mark.long
def test_search_in_worker_processes_gives_the_sequential_ledger(sbm):
    G, y = sbm
    grid = {"hds__eps": [0.5, 2.0], "ppr__alpha": [0.1, 0.2]}
    G1, G2 = G.new_simulation(), G.new_simulation()
    GridSearchCV(_pipe(), grid, cv=2).fit(G1, y)
    GridSearchCV(_pipe(), grid, cv=2, n_jobs=2).fit(G2, y)
    assert _summary(G2.ledger) == _summary(G1.ledger)
    assert G2.ledger.local_epsilon == pytest.approx(2.5)


def _private_fit_on_a_plain_array(seed):
    from skldp.mechanisms import LaplaceMechanism
    X = np.random.default_rng(seed).random((20, 3))
    return LaplaceMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(X).shape


@pytest.mark.long
def test_a_plain_array_private_step_is_refused_in_a_worker_process():
    # its users are known to one process only: a worker's spends would reach neither the
    # caller's report nor its cap (a search with n_jobs=2 reported the refit alone)
    from joblib import Parallel, delayed
    assert _private_fit_on_a_plain_array(0) == (20, 3)   # in this process: fine
    with pytest.raises(RuntimeError, match="worker process.*GraphData.*n_jobs=1"):
        Parallel(n_jobs=2)(delayed(_private_fit_on_a_plain_array)(i) for i in range(2))
    from skldp.population import default_population
    with pytest.raises(RuntimeError, match="bare keys ran in a worker process"):
        Parallel(n_jobs=2)(delayed(default_population)() for _ in range(2))


@pytest.mark.slow  # starts a Dask LocalCluster
def test_search_on_a_dask_cluster_gives_the_sequential_ledger(sbm):
    pytest.importorskip("distributed")
    from dask.distributed import Client, LocalCluster
    from joblib import parallel_backend
    G, y = sbm
    grid = {"hds__eps": [0.5, 2.0]}
    G1, G2 = G.new_simulation(), G.new_simulation()
    GridSearchCV(_pipe(), grid, cv=2).fit(G1, y)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster), \
            parallel_backend("dask"):
        GridSearchCV(_pipe(), grid, cv=2, n_jobs=2).fit(G2, y)
    assert _summary(G2.ledger) == _summary(G1.ledger)


def test_an_unreachable_ledger_refuses_to_collect(sbm, tmp_path):
    G, _ = sbm
    blob = pickle.dumps(G)
    copy = pickle.loads(blob)
    copy.population._reachable = False        # as on another machine
    with pytest.raises(RuntimeError, match="would not be counted"):
        HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(copy)
    fresh = copy.new_simulation()               # a separate simulation is fine
    HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(fresh)
    assert fresh.ledger.local_epsilon == 1.0


def test_a_copy_outlives_its_original_in_the_same_process(sbm):
    # the original removed the journal's folder when it was collected: the copy's ledger
    # and collections raised a bare FileNotFoundError
    import gc
    G, _ = sbm
    G = G.new_simulation(budget=3.0)
    HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(G)
    copy = pickle.loads(pickle.dumps(G))
    del G
    gc.collect()
    assert copy.ledger.local_epsilon == 1.0
    HDSMechanism(1.5, feature_range=(0, 1), random_state=0).fit_transform(copy)
    assert copy.ledger.local_epsilon == 2.5
    with pytest.raises(BudgetExceededError):   # the cap holds
        HDSMechanism(1.0, feature_range=(0, 1), random_state=1).fit_transform(copy)


def test_a_saved_model_predicts_on_its_saved_raw_graph_once_every_holder_ended(sbm):
    # the model charged its read of the raw features at fit; reading them again at predict
    # asked the unreachable ledger and raised
    import gc
    G, y = sbm
    G = G.new_simulation()
    model = MLPHead(epochs=2, random_state=0).fit(G[:60], y[:60])
    expected = model.predict(G[60:])
    blob = pickle.dumps((model, G))
    del model, G
    gc.collect()
    model, G = pickle.loads(blob)
    np.testing.assert_array_equal(model.predict(G[60:]), expected)
    with pytest.raises(RuntimeError, match="would not be counted"):   # a new read: refused
        HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(G)


def test_the_report_keeps_the_cap_after_pickling_and_once_the_graph_is_gone(sbm):
    # the report read the cap through the population only: a saved pipeline's report, or
    # one made once the GraphData was collected, had no budget line
    import gc
    G, y = sbm
    G = G.new_simulation(budget=2.0)
    mech = HDSMechanism(1.0, feature_range=(0, 1), random_state=0)
    mech.fit_transform(G)
    assert privacy_report(mech).budget == 2.0
    assert privacy_report(pickle.loads(pickle.dumps(mech))).budget == 2.0
    G.population.set_budget(1.5)
    assert privacy_report(pickle.loads(pickle.dumps(mech))).budget == 1.5
    del G
    gc.collect()
    report = privacy_report(mech)
    assert report.budget == 1.5 and "budget: 1.5 per user" in str(report)


def test_a_copy_loaded_after_every_holder_ended_refuses_to_collect(sbm):
    # as a pipeline saved with its graph and loaded once the saving process has ended:
    # it raised a TypeError (no secret) instead of the documented error
    import gc
    G, _ = sbm
    G = G.new_simulation()
    blob = pickle.dumps(G)
    del G
    gc.collect()
    copy = pickle.loads(blob)
    assert copy.ledger.local_epsilon == 0.0   # what it knew when it was saved
    with pytest.raises(RuntimeError, match="would not be counted"):
        HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(copy)


def test_the_spec_is_public_json_and_the_ledger_keeps_no_secret(sbm):
    G, _ = sbm
    mech = HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit(G)
    mech.transform(G)
    spec = mech.collection_
    again = CollectionSpec.from_json(spec.to_json())
    assert again == spec
    assert "random_state" not in spec.params and str(mech.seed_) not in spec.to_json()
    with pytest.raises(ValueError, match="version"):
        CollectionSpec.from_dict({**spec.to_dict(), "version": 99})
    blob = pickle.dumps(G.ledger)
    assert str(G.population._secret).encode() not in blob
    ledger = pickle.loads(blob)
    assert isinstance(ledger, Ledger) and ledger.local_epsilon == 1.0


def test_a_population_can_be_built_and_capped_directly():
    pop = Population(budget=2.0)
    X = np.random.default_rng(0).random((10, 3))
    G = GraphData(X, node_ids=np.arange(10), population=pop)
    assert G.population is pop and G.ledger is pop.ledger
    with pytest.raises(ValueError, match="population= says"):   # whose users are rows 0..9?
        GraphData(X, population=pop)
    with pytest.raises(ValueError, match="budget"):
        pop.set_budget(0)
    np.testing.assert_allclose(pop.remaining(G.node_keys), 2.0)


def test_a_cap_is_a_number_that_neither_a_view_nor_a_lower_cap_can_move():
    X = np.random.default_rng(0).random((30, 4))
    for bad in ("10", True, float("nan")):
        with pytest.raises(ValueError, match="budget must be a number"):
            GraphData(X, budget=bad)
    G = GraphData(X, budget=1.0)
    OneBitMechanism(0.25, feature_range=(0, 1), random_state=0).fit_transform(G)   # 1 in all
    # the same users' updated data shares their cap; it cannot bring another one
    with pytest.raises(ValueError, match="already has a budget of 1"):
        GraphData(X, population=G, budget=100)
    assert GraphData(X, population=G, budget=1.0).population.budget == 1.0
    with pytest.raises(ValueError, match="below what a user has already spent"):
        G.population.set_budget(0.5)
    assert G.population.set_budget(3.0).budget == 3.0   # raised explicitly: allowed
    # a read in the clear: no budget admits it, and the error says what to do instead
    capped = GraphData(X, budget=2.0)
    with pytest.raises(BudgetExceededError, match="no budget admits.*Put a mechanism"):
        MLPHead(epochs=1).fit(capped, np.arange(30) % 2)


def test_a_public_per_user_map_may_run_on_the_device(sbm):
    from sklearn.impute import SimpleImputer

    from skldp import NodeWise
    G, y = sbm
    X = G.features.copy()
    X[0, 0] = np.nan                            # a user who skipped a question
    G = G.with_features(X, source="users")
    pipe = Pipeline([("impute", NodeWise(SimpleImputer(strategy="constant", fill_value=0.0),
                                         on_device=True)),
                     ("bit", OneBitMechanism(1.0, feature_range=(0, 1), random_state=0)),
                     ("clf", MLPHead(epochs=2, early_stopping=False))])
    pipe.fit(G, y)
    (spec,) = [e.spec for e in G.ledger.entries()]
    assert spec.device_steps[0]["kind"] == "skldp.base.NodeWise"
    assert spec.device_steps[0]["params"]["estimator"]["params"]["strategy"] == "constant"
    # the same imputer fitted on the users' rows is a server step: refused
    pipe.set_params(impute__on_device=False)
    with pytest.raises(ValueError, match="no device can compute"):
        pipe.fit(G, y)


# ------------------------------------------- public bounds read from the users' data
_BOUNDED = [("LaplaceMechanism", {}), ("MultiBitMechanism", {}), ("OneBitMechanism", {}),
            ("PiecewiseMechanism", {}), ("HDSMechanism", {"k": 2})]


def _bounded(name, kw, **extra):
    import skldp.mechanisms as mechanisms
    return getattr(mechanisms, name)(1.0, random_state=0, **kw, **extra)


@pytest.mark.parametrize("name, kw", _BOUNDED)
def test_bounds_read_from_the_data_are_a_read_in_the_clear(name, kw):
    # feature_range=None published one user's exact maximum in the spec, while the ledger
    # and the report showed the mechanism's eps alone
    X = np.random.default_rng(0).random((50, 3))
    X[17, 2] = 123.456
    G = GraphData(X)
    with pytest.warns(PrivacyLeakWarning, match=r"feature_range.*charges.*epsilon=inf"):
        mech = _bounded(name, kw).fit(G)
    mech.transform(G)
    line = f"{name}(feature_range=None) read the users' features in the clear: epsilon=inf"
    for rep in (privacy_report(G), privacy_report(mech)):
        assert np.isinf(rep.local_epsilon) and np.isinf(rep.epsilon_for("features"))
        assert f"{line} (50 users)" in str(rep)
    # a pipeline on a plain array: its rows are the users of that array's ledger
    Xa = X + 1e-3
    pipe = Pipeline([("mech", _bounded(name, kw)),
                     ("clf", MLPHead(epochs=1, early_stopping=False, random_state=0))])
    with pytest.warns(PrivacyLeakWarning, match="feature_range"):
        pipe.fit(Xa, np.arange(50) % 2)
    rep = privacy_report(pipe)
    assert np.isinf(rep.local_epsilon) and f"{line} (50 users)" in str(rep)


@pytest.mark.parametrize("name, kw", _BOUNDED)
def test_a_budget_refuses_bounds_read_from_the_data(name, kw):
    X = np.random.default_rng(1).random((40, 3))
    G = GraphData(X, budget=5.0)
    mech = _bounded(name, kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(BudgetExceededError,
                           match=rf"{name}\(feature_range=None\) reads the feature bounds .* 40 "
                                 r"user\(s\).*Pass feature_range=\(lo, hi\) from public"):
            mech.fit(G)
    assert G.ledger.entries() == []                 # nothing charged, nothing collected
    assert not hasattr(mech, "feature_max_") and not hasattr(mech, "collection_")
    # public bounds: the same budget admits the collection, which is charged eps alone
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        pub = _bounded(name, kw, feature_range=(0, 1)).fit(G)
        pub.transform(G)
    assert [e.spec.model for e in G.ledger.entries()] == ["local"]
    assert privacy_report(G).local_epsilon == pub.epsilon_ < 5.0


@pytest.mark.parametrize("name, kw", _BOUNDED)
def test_public_bounds_keep_their_collection(name, kw):
    # the spec and the seed of a collection with public bounds (recorded runs depend on
    # them): the values of the release before bounds read from the data were charged
    from skldp.device._spec import body_digest
    X = np.random.default_rng(2).random((20, 3))
    mech = _bounded(name, kw, feature_range=(0, 1)).fit(GraphData(X))
    assert mech.collection_.public_state["feature_max"] == [1.0, 1.0, 1.0]
    # (the request as spec version 3 wrote it: version 4 changed the format only)
    body = mech.collection_.seed_identity()
    assert mech.collection_.version == 4
    assert (mech.seed_, body_digest(body)) == _PUBLIC_BOUNDS[name]


_PUBLIC_BOUNDS = {
    "LaplaceMechanism": (6449312152857507519, "e5c80cc1082e08be1b7dbd3a5ab166df"),
    "MultiBitMechanism": (4363772283766256661, "e1bfa6d98e63ed92156c17d6e16c0a09"),
    "OneBitMechanism": (6515564647032421291, "7fb5a416f8cf6094d5626cff2b1b961b"),
    "PiecewiseMechanism": (237465710570215996, "01d183a8c4d5e11c414d1de0684e8b2c"),
    "HDSMechanism": (1674017825138103187, "0bea53af1b378a16903dd4bfb33a6776"),
}


def test_sum_by_key_of_counts_in_any_order_is_the_stable_sums():
    from skldp.population._ledger import _sum_by_key
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**63, 500, dtype=np.int64).astype(np.uint64)
    keys = np.r_[keys, keys[:200], keys[:50]]   # repeats, as answers to several chunks
    counts = rng.integers(1, 4, len(keys))
    fast, slow = _sum_by_key(keys, counts, exact=True), _sum_by_key(keys, counts)
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(a, b)
    want_keys, inverse = np.unique(keys, return_inverse=True)
    np.testing.assert_array_equal(fast[0], want_keys)
    np.testing.assert_array_equal(fast[1], np.bincount(inverse, weights=counts).astype(int))


def test_reads_share_one_sorted_sum_until_an_answer_arrives_here_or_in_the_journal():
    X = np.random.default_rng(0).random((40, 2))
    G = GraphData(X, budget=10.0)
    OneBitMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(G)
    copy = pickle.loads(pickle.dumps(G.ledger))   # a saved ledger, reading the journal
    users, eps = G.ledger.per_user()
    again = G.ledger.per_user()
    assert again[0] is users and again[1] is eps   # kept, not sorted and summed again
    assert not eps.flags.writeable                 # (shared by every caller)
    assert copy.local_epsilon == pytest.approx(2.0)
    LabelRandomizedResponse(0.5, classes=[0, 1], random_state=0).fit().randomize(
        np.zeros(10, int), G[np.arange(10)])   # ten users' labels
    for ledger in (G.ledger, copy):   # the copy reads the new answers from the journal
        assert ledger.local_epsilon == pytest.approx(2.5)
        np.testing.assert_allclose(ledger.spent(G.node_keys), [2.5] * 10 + [2.0] * 30)
    np.testing.assert_allclose(G.population.remaining(G.node_keys[9:11]), [7.5, 8.0])


def test_a_ledger_prints_its_spends_rounded_up():
    # a spend of 1.00006 printed "epsilon=1": below what the users spent
    from skldp.device._spec import significant
    assert significant(1.00006) == "1.001" and significant(0.1 + 0.2) == "0.3"
    assert significant(7.71049, up=False) == "7.71" and significant(float("inf")) == "inf"
    from skldp.mechanisms import LabelRandomizedResponse
    rr = LabelRandomizedResponse(1.00006, classes=[0, 1], random_state=0).fit()
    G = GraphData(np.zeros((5, 1)))
    rr.randomize(np.zeros(5, int), G)
    assert "epsilon=1.001" in str(G.ledger) and "one user: 1.001" in str(G.ledger)
    assert "local epsilon 1.001" in repr(G.ledger)
