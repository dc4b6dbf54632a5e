"""A classifier fitted on the clean labels of a GraphData's users is charged a read of their
labels in the clear (epsilon inf) when a label mechanism collects those users' labels,
before or after the fit; without a label collection the labels are taken as given. Labels
the users sent are known by their provenance (:class:`~skldp.population.LabelReports`),
never by their values: else a charge or a refusal would tell which labels were flipped."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_selection import SelectKBest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline

from skldp import GraphData, NodeWise
from skldp.accounting import privacy_report
from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier
from skldp.mechanisms import LabelRandomizedResponse
from skldp.models import GCNClassifier, LPGNNClassifier, MLPHead, SolitudeClassifier
from skldp.population import (
    BudgetExceededError,
    LabelReports,
    collection_spec,
    read_reports,
    received_graph,
)
from skldp.propagation import KProp

N = 30
Y = np.arange(N) % 2


def _graph(budget=None, seed=0):
    rng = np.random.default_rng(seed)
    A = np.triu(rng.random((N, N)) < 0.2, 1)
    A = sp.csr_array((A | A.T).astype(float))
    return GraphData(rng.random((N, 3)), A, budget=budget).with_features(
        rng.random((N, 3)), source="public")


FITS = {
    "GCNClassifier": lambda: GCNClassifier(epochs=1, random_state=0),
    "MLPHead": lambda: MLPHead(epochs=1, weight_decay=0.0, random_state=0),
    "LPGNNClassifier": lambda: LPGNNClassifier(eps_y=np.inf, classes=[0, 1], epochs=1,
                                               random_state=0),
    "SolitudeClassifier": lambda: SolitudeClassifier(epochs=1, random_state=0),
    "LabelPropagationClassifier": LabelPropagationClassifier,
    "CorrectAndSmooth": lambda: CorrectAndSmooth(LogisticRegression()),
}


def _fit(G, y=None, name="GCNClassifier"):
    """Fit ``name`` on the rows of ``G`` with ``y`` (their clean labels by default)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return FITS[name]().fit(G, Y[G.rows] if y is None else y)


def _collect(G, eps=1.0):
    """The users of the view ``G`` send their labels (randomized response)."""
    rr = LabelRandomizedResponse(eps, classes=[0, 1], random_state=0).fit()
    return rr.randomize(Y[G.rows], G)


def _charged(G):
    """Positions of the users charged an infinite epsilon for their labels."""
    users, eps = G.ledger.per_user("labels")
    return sorted(np.flatnonzero(np.isin(G.node_keys, users[np.isinf(eps)])).tolist())


def _reads(G):
    return sorted(e.spec.kind.rsplit(".", 1)[-1] for e in G.ledger.entries()
                  if e.spec.model == "clear" and "labels" in e.spec.protects)


@pytest.mark.parametrize("name", sorted(FITS))
@pytest.mark.parametrize("collect_first", [True, False])
def test_a_clean_label_fit_counts_once_the_labels_are_collected(name, collect_first):
    # Before: LabelRandomizedResponse(1) then a GCN on the clean labels printed labels 1
    G = _graph()
    steps = [lambda: _collect(G[10:]), lambda: _fit(G[:20], name=name)]
    for step in steps if collect_first else steps[::-1]:
        step()
    # only the users both read (fit rows 0-19) and collected (10-29)
    assert _charged(G) == list(range(10, 20))
    assert privacy_report(G).epsilon_for("labels") == np.inf
    assert name in _reads(G)


@pytest.mark.parametrize("collect_first", [True, False])
def test_a_budget_refuses_the_second_of_the_two(collect_first):
    G = _graph(budget=2.0)
    if collect_first:
        _collect(G)
        n = len(G.ledger.entries())
        with pytest.raises(BudgetExceededError,
                           match="GCNClassifier would read the clean labels.*new_simulation"):
            _fit(G)
    else:
        _fit(G)
        n = len(G.ledger.entries())
        with pytest.raises(BudgetExceededError,
                           match=r"collect the labels.*already read \(GCNClassifier\)"):
            _collect(G)
    assert len(G.ledger.entries()) == n   # nothing recorded
    assert privacy_report(G).epsilon_for("labels") == (1.0 if collect_first else 0.0)


def test_the_labels_the_users_sent_are_free():
    G = _graph(budget=2.0)
    y_sent = _collect(G)
    assert not np.array_equal(y_sent, Y)   # (some labels flipped)
    for name in ("GCNClassifier", "LabelPropagationClassifier", "CorrectAndSmooth"):
        _fit(G, y_sent, name)
    assert _reads(G) == [] and privacy_report(G).epsilon_for("labels") == 1.0
    with pytest.raises(BudgetExceededError, match="clean labels"):
        _fit(G)   # their clean labels are not


def test_a_classifier_with_its_own_label_mechanism_pays_its_epsilon_only():
    G = _graph(budget=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        GCNClassifier(epochs=1, random_state=0, label_mechanism=LabelRandomizedResponse(
            1.0, classes=[0, 1], random_state=0)).fit(G, Y)
        CorrectAndSmooth(LabelPropagationClassifier(), label_mechanism=LabelRandomizedResponse(
            0.5, classes=[0, 1], random_state=1)).fit(G, Y)
    assert _reads(G) == [] and privacy_report(G).epsilon_for("labels") == 1.5
    with pytest.raises(BudgetExceededError, match="clean labels"):
        _fit(G)   # a fit on the clean labels is a read of them


def test_without_a_label_collection_the_labels_are_taken_as_given():
    G = _graph(budget=1.0)
    for name in FITS:
        _fit(G, name=name)
    assert len(G.ledger) == 0
    with pytest.raises(BudgetExceededError, match="already read"):
        _collect(G)   # until the labels are collected


def test_new_simulation_separates_the_clean_labels_from_the_collection():
    G = _graph(budget=1.0)
    _collect(G)
    other = G.new_simulation()
    _fit(other)
    assert privacy_report(G).epsilon_for("labels") == 1.0
    assert privacy_report(other).epsilon_for("labels") == 0
    with pytest.raises(BudgetExceededError, match="new_simulation"):
        _fit(G)   # on the same simulation: refused


def test_the_pending_read_survives_pickling():
    G = _graph()
    _fit(G)
    copy = pickle.loads(pickle.dumps(G))
    _collect(copy)
    assert _charged(copy) == _charged(G) == list(range(N))


def test_a_read_in_a_forked_child_counts(run_in_forked_child):
    G = _graph()
    pickle.dumps(G)   # the journal is open before the fork
    assert run_in_forked_child(lambda: _fit(G[:5], name="LabelPropagationClassifier"))
    _collect(G)
    assert _charged(G) == list(range(5))


# ------------------------------------------------ labels the users sent: provenance
def _fit_with(G, y, est=None):
    """Fit ``est`` (label propagation by default) on ``y`` as given."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (est or LabelPropagationClassifier()).fit(G, y)


def _fit_one(G, i):
    """Fit on the clean label of user ``i`` alone (the reviewer's oracle)."""
    return _fit_with(G[i:i + 1], Y[i:i + 1], LPGNNClassifier(
        eps_y=np.inf, classes=[0, 1], epochs=1, early_stopping=False, random_state=0))


def _clear_reads(G):
    return [e for e in G.ledger.entries()
            if e.spec.model == "clear" and "labels" in e.spec.protects]


def test_a_clean_label_fit_is_refused_whatever_its_value():
    # Before: refused only where the clean label differed from the report; reading
    # "refused or not" against the report recovered every clean label (audit 4.18 vs 1)
    G = _graph(budget=2.0)
    reports = _collect(G)
    same = np.flatnonzero(reports == Y)
    assert 0 < len(same) < N
    for i in range(N):
        with pytest.raises(BudgetExceededError, match="clean labels"):
            _fit_one(G, i)
    assert privacy_report(G).epsilon_for("labels") == 1.0


def test_without_a_budget_every_user_read_clean_is_charged():
    # Before: the per-user ledger showed inf exactly where the label flipped
    G = _graph()
    _collect(G)
    for i in range(N):
        _fit_one(G, i)
    users, eps = G.ledger.per_user("labels")
    assert len(users) == N and np.isinf(eps).all()


def test_the_reports_stay_free_through_indexing_pickling_and_pipelines():
    G = _graph(budget=2.0)
    y_sent = _collect(G)
    assert isinstance(y_sent, LabelReports) and not y_sent.flags.writeable
    train = np.arange(0, N, 2)
    _fit_with(G[train], y_sent[train])
    _fit_with(G, pickle.loads(pickle.dumps(y_sent)))
    pipe = Pipeline([("prop", KProp(1)), ("mlp", MLPHead(epochs=1, random_state=0))])
    _fit_with(G, y_sent, pipe)
    _fit_with(G, y_sent, CorrectAndSmooth(LabelPropagationClassifier()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cross_val_score(LabelPropagationClassifier(), G, y_sent, cv=3)
    assert _clear_reads(G) == []
    assert privacy_report(G).epsilon_for("labels") == 1.0


@pytest.mark.slow
def test_the_reports_stay_free_in_a_search_in_worker_processes():
    G = _graph(budget=2.0)
    y_sent = _collect(G)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        GridSearchCV(MLPHead(epochs=1, random_state=0), {"lr": [0.01, 0.1]}, cv=2,
                     n_jobs=2, error_score="raise").fit(G, y_sent)
    assert _clear_reads(G) == []
    with pytest.raises(BudgetExceededError, match="clean labels"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            GridSearchCV(MLPHead(epochs=1, random_state=0), {"lr": [0.01, 0.1]}, cv=2,
                         n_jobs=2, error_score="raise").fit(G, np.asarray(y_sent))


@pytest.mark.parametrize("edit", [lambda y: y + 0, lambda y: np.array(list(y)),
                                  np.asarray, lambda y: y.copy()])
def test_an_edited_or_computed_copy_counts_as_clean_labels(edit):
    # the same values as the reports, but not marked: read as clean labels
    G = _graph()
    y_sent = _collect(G)
    y = edit(y_sent)
    np.testing.assert_array_equal(y, y_sent)
    _fit_with(G, y, GCNClassifier(epochs=1, random_state=0))
    assert len(_clear_reads(G)) == 1
    assert privacy_report(G).epsilon_for("labels") == np.inf


def test_reports_cannot_be_edited_in_place():
    y_sent = _collect(_graph())
    for y in (y_sent, y_sent[:5], y_sent[[0, 1, 2]]):
        with pytest.raises(ValueError, match="read-only"):
            y[0] = 1 - y[0]


def test_the_charge_never_depends_on_the_values_behind_a_mark():
    # Before, a marked array was also compared with the reports: labels written into its
    # memory (through torch, or its base) were charged exactly when they differed from
    # the reports, which told those labels (audit lower bound 2.96 against a printed 1).
    G = _graph(budget=3.0)
    y_sent = _collect(G)
    for values in (y_sent, 1 - np.asarray(y_sent)):   # the user's word, as for any y
        _fit_with(G, LabelReports(values, y_sent.collection))
    assert _clear_reads(G) == [] and privacy_report(G).epsilon_for("labels") == 1.0
    with pytest.raises(ValueError, match="read-only"):   # its memory too, not only the view
        y_sent.base[0] = 1 - y_sent[0]


def test_the_labels_received_from_real_devices_are_free():
    from skldp.device import Device
    ids = [f"u{i}" for i in range(N)]
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))
    recs = [Device(user=u, max_epsilon=10).answer(spec, int(Y[i])) for i, u in enumerate(ids)]
    G0, y_sent = received_graph(labels=read_reports(recs, spec, users=ids), node_ids=ids)
    assert isinstance(y_sent, LabelReports) and y_sent.collection == spec.id
    X = np.random.default_rng(0).random((N, 3))
    G = GraphData(X, _graph()._store.adjacency, node_ids=ids, population=G0).with_features(
        X, source="public")
    keep = y_sent >= 0
    _fit_with(G[keep], y_sent[keep])
    assert _clear_reads(G) == []
    _fit_with(G[keep], np.asarray(y_sent[keep]))   # the same values, unmarked
    assert privacy_report(G).epsilon_for("labels") == np.inf


def test_label_reports_behave_as_arrays():
    y = LabelReports([0, 1, 1], "c")
    assert repr(y) == "LabelReports([0, 1, 1])" and str(y) == "[0 1 1]"
    assert type(y == 1) is np.ndarray and type(y + 0) is np.ndarray
    assert type(np.unique(y)) is np.ndarray and y.sum() == 2
    assert y[1:].collection == y[[2]].collection == "c"
    assert y.copy().collection is None and np.asarray(y).__class__ is np.ndarray


def _dpmlp(G):
    from skldp.central import DPMLPClassifier
    return DPMLPClassifier(classes=[0, 1], batch_size=5, n_steps=2, noise_multiplier=5.0,
                           accountant="hypergeometric", hidden_size=4, device="cpu",
                           random_state=0).fit(G, Y[G.rows])


@pytest.mark.parametrize("budget", [None, 50.0])
@pytest.mark.parametrize("dpmlp_first", [True, False])
def test_a_central_training_that_protects_the_labels_counts_as_their_collection(
        dpmlp_first, budget):
    # Before: DP-MLP then a label propagation on the same clean labels printed the DP-MLP's
    # epsilon for labels (central) and nothing more; under a budget both ran
    G = _graph(budget)
    steps = [lambda: _dpmlp(G[:20]), lambda: _fit(G, name="LabelPropagationClassifier")]
    first, second = steps if dpmlp_first else steps[::-1]
    first()
    if budget is None:
        second()
        assert _charged(G) == list(range(20)) and _reads(G) == ["LabelPropagationClassifier"]
    else:
        with pytest.raises(BudgetExceededError, match="central DP training protects|"
                           r"already read \(LabelPropagationClassifier\).*trained"):
            second()
        assert _charged(G) == []


def test_a_copy_of_the_graph_counts_the_central_training():
    G = _graph()
    _dpmlp(G[:20])
    copy = pickle.loads(pickle.dumps(G))
    _fit(copy, name="LabelPropagationClassifier")
    assert _charged(copy) == _charged(G) == list(range(20))


def test_labels_another_population_sent_are_refused():
    """Labels randomized for the users of one GraphData, fitted with another population's
    graph: the second graph's report would count no label (its users sent none)."""
    from skldp.accounting import privacy_report
    from skldp.baselines import LabelPropagationClassifier
    from skldp.mechanisms import LabelRandomizedResponse
    from skldp.models import MLPHead

    rng = np.random.default_rng(0)
    X, y = rng.random((30, 3)), np.tile([0, 1, 2], 10)
    A = np.eye(30, k=1) + np.eye(30, k=-1)
    sent_by, other = GraphData(X, A), GraphData(X, A)
    y_sent = LabelRandomizedResponse(eps=1.0, classes=[0, 1, 2], random_state=0).fit() \
        .randomize(y, sent_by)
    for model in (MLPHead(), LabelPropagationClassifier()):
        with pytest.raises(ValueError, match="another population"):
            model.fit(other, y_sent)
        model.fit(sent_by, y_sent)      # the users who sent them: free
    assert privacy_report(sent_by).epsilon_for("labels") == 1.0
    assert other.ledger.entries() == []
    same = GraphData(X, A, population=sent_by)
    MLPHead().fit(same, y_sent)
    # a model with its own label mechanism would randomize them again as true labels
    gcn = GCNClassifier(epochs=2, label_mechanism=LabelRandomizedResponse(
        eps=1.0, classes=[0, 1, 2], random_state=1))
    with pytest.raises(ValueError, match="another population"):
        gcn.fit(other, y_sent)
    with pytest.raises(ValueError, match="another population"):
        NodeWise(SelectKBest(k=2)).fit(other, y_sent)   # a supervised transformer
    from skldp.central import DPGNNClassifier, DPMLPClassifier

    for trainer in (DPMLPClassifier(classes=[0, 1, 2], epochs=1, batch_size=8,
                                    accountant="hypergeometric"),
                    DPGNNClassifier(2, classes=[0, 1, 2], epochs=1, batch_size=8)):
        with pytest.raises(ValueError, match="another population"):   # placed by id
            trainer.fit(other, y_sent)
    assert other.ledger.entries() == []
