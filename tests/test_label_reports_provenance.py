"""A fit reads the labels the users sent only when they come marked with their collection
(:class:`~skldp.population.LabelReports`): whether a fit is charged must not depend on the
values of clean labels (else a charge or a refusal tells which labels the mechanism
flipped)."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier
from skldp.mechanisms import LabelRandomizedResponse
from skldp.models import GCNClassifier, LPGNNClassifier, MLPHead
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


def _collect(G, eps=1.0):
    rr = LabelRandomizedResponse(eps, classes=[0, 1], random_state=0).fit()
    return rr.randomize(Y[G.rows], G)


def _fit(G, y, est=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (est or LabelPropagationClassifier()).fit(G, y)


def _fit_one(G, i):
    """Fit on the clean label of user ``i`` alone (the reviewer's oracle)."""
    return _fit(G[i:i + 1], Y[i:i + 1], LPGNNClassifier(
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
    _fit(G[train], y_sent[train])
    _fit(G, pickle.loads(pickle.dumps(y_sent)))
    pipe = Pipeline([("prop", KProp(1)), ("mlp", MLPHead(epochs=1, random_state=0))])
    _fit(G, y_sent, pipe)
    _fit(G, y_sent, CorrectAndSmooth(LabelPropagationClassifier()))
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
    _fit(G, y, GCNClassifier(epochs=1, random_state=0))
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
        _fit(G, LabelReports(values, y_sent.collection))
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
    _fit(G[keep], y_sent[keep])
    assert _clear_reads(G) == []
    _fit(G[keep], np.asarray(y_sent[keep]))   # the same values, unmarked
    assert privacy_report(G).epsilon_for("labels") == np.inf


def test_label_reports_behave_as_arrays():
    y = LabelReports([0, 1, 1], "c")
    assert repr(y) == "LabelReports([0, 1, 1])" and str(y) == "[0 1 1]"
    assert type(y == 1) is np.ndarray and type(y + 0) is np.ndarray
    assert type(np.unique(y)) is np.ndarray and y.sum() == 2
    assert y[1:].collection == y[[2]].collection == "c"
    assert y.copy().collection is None and np.asarray(y).__class__ is np.ndarray
