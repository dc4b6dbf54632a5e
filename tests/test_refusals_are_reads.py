"""A refusal that depends on the values of the users' raw data is charged as a read of
that data (Design page, "Refusals are reads"): refused or answered is a function of the
values that leaves the devices. Features are charged at once (epsilon inf); true edges
and clean labels once a mechanism collects them, as any read of them. Refusals of the
call's own arguments and of public facts stay free."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from public_feature_graphs import public_feature_graph
from sklearn.preprocessing import OneHotEncoder

from skldp import GraphData, NodeWise
from skldp.accounting import privacy_report
from skldp.base import array_node_keys, array_population, population_of
from skldp.baselines import LabelPropagationClassifier
from skldp.central import DPGNNClassifier, DPMLPClassifier
from skldp.mechanisms import (
    EdgeRR,
    FeatureGrouper,
    FeatureHashing,
    GRRFSMechanism,
    LabelRandomizedResponse,
    OneBitMechanism,
    SetValuedMechanism,
)
from skldp.models import LPGNNClassifier, MLPHead
from skldp.population import BudgetExceededError, default_population
from skldp.privacy import forget_secrets
from skldp.propagation import KProp
from skldp.utils._random import array_fingerprint

N = 30
RNG = np.random.default_rng(0)
X = RNG.random((N, 3))
CODES = RNG.integers(0, 3, (N, 2)).astype(float)
Y = np.arange(N) % 2


def _with(values, **changes):
    """``values`` with one entry changed: ``{(row, column): value}``."""
    out = values.copy()
    for where, v in changes["at"].items():
        out[where] = v
    return out


def _fit(est, y):
    """A call that fits a fresh ``est()`` on a graph with the labels ``y``."""
    def fit(G):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return est().fit(G, y)
    return fit


def _graph(features, budget=None):
    return GraphData(features, sp.eye(N, format="csr"), budget=budget)


def _mech_transform_nan(G):
    # the same users' features, one of them NaN: refused by the device input at transform
    mech = OneBitMechanism(1.0, feature_range=(0, 1), random_state=0).fit(G)
    mech.transform(GraphData(_with(X, at={(3, 1): np.nan}), population=G,
                             node_ids=G.all_node_ids))


# (features, the call, the refusal's message; the users' values make it refuse)
FEATURE_REFUSALS = {
    "OneBitMechanism fit, NaN": (
        _with(X, at={(3, 1): np.nan}),
        lambda G: OneBitMechanism(1.0, feature_range=(0, 1)).fit(G), "NaN"),
    "OneBitMechanism transform, NaN": (X, _mech_transform_nan, "NaN"),
    "KProp, infinite": (
        _with(X, at={(3, 1): np.inf}), lambda G: KProp(1).fit_transform(G), "infinite"),
    "GRRFSMechanism, code outside the domain": (
        _with(CODES, at={(4, 0): 5.0}),
        lambda G: GRRFSMechanism(1.0, m=1, domain_sizes=[3, 3]).fit(G), "outside its domain"),
    "GRRFSMechanism, value outside the categories": (
        _with(CODES, at={(4, 0): 7.0}),
        lambda G: GRRFSMechanism(1.0, m=1, categories=[[0, 1, 2]] * 2).fit(G),
        "not in its categories"),
    "SetValuedMechanism, not 0 or 1": (
        _with((X > 0.5).astype(float), at={(2, 2): 0.5}),
        lambda G: SetValuedMechanism(1.0, max_set_size=3).fit(G), "binary"),
    "FeatureGrouper, NaN": (
        _with(X, at={(3, 1): np.nan}), lambda G: FeatureGrouper(2).fit_transform(G), "NaN"),
    "FeatureHashing, NaN": (
        _with(X, at={(3, 1): np.nan}), lambda G: FeatureHashing(4).fit_transform(G), "NaN"),
    "NodeWise(on_device=True), unknown category": (
        _with(CODES, at={(4, 0): 7.0}),
        lambda G: NodeWise(OneHotEncoder(categories=[[0.0, 1.0, 2.0]] * 2, dtype="float64"),
                           on_device=True).fit_transform(G), "unknown categor"),
}


@pytest.mark.parametrize("case", sorted(FEATURE_REFUSALS))
def test_a_refusal_of_the_feature_values_is_a_read_of_them(case):
    # Before: each refusal was free (features epsilon 0 in the report), although it told
    # where a NaN or an unknown value was.
    features, call, error = FEATURE_REFUSALS[case]
    G = _graph(features)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=error):
            call(G)
    assert privacy_report(G).epsilon_for("features") == np.inf
    users, eps = G.ledger.per_user("features")   # every user checked: it does not tell who
    assert len(users) == N and np.all(np.isinf(eps))


@pytest.mark.parametrize("case", sorted(FEATURE_REFUSALS))
def test_a_budget_refuses_such_a_refusal_without_its_message(case):
    features, call, error = FEATURE_REFUSALS[case]
    G = _graph(features, budget=8.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(BudgetExceededError, match="refuses these users'") as info:
            call(G)
    assert info.value.__suppress_context__   # (its message would tell what it found)
    assert error not in str(info.value)
    assert np.all(G.ledger.per_user("features")[1] < np.inf)


def test_a_refusal_of_a_plain_arrays_values_charges_its_users():
    Xn = _with(X, at={(3, 1): np.nan})
    with pytest.raises(ValueError, match="NaN"):
        OneBitMechanism(1.0, feature_range=(0, 1)).fit(Xn)
    ledger = array_population(population_of(Xn)).ledger
    assert ledger.per_user("features")[1].tolist() == [np.inf] * N


def test_a_refusal_of_public_features_or_reports_is_free():
    Xn = _with(X, at={(3, 1): np.nan})
    G = GraphData(X, budget=1.0).with_features(Xn, source="public")
    Gk = GraphData(X, sp.eye(N, format="csr")).with_features(Xn, source="public")
    with pytest.raises(ValueError, match="NaN"):
        KProp(1).fit_transform(Gk)
    with pytest.raises(ValueError, match="NaN"):
        FeatureHashing(4).fit_transform(G)
    assert len(G.ledger) == 0 and len(Gk.ledger) == 0   # (review: Gk's was not checked)


def _collect_edges(G):
    EdgeRR(1.0, symmetrize="directed", random_state=0).fit_transform(G)


def _loop(G):
    A = G.adjacency.tolil()
    A[2, 2] = 1.0
    return G.with_adjacency(A.tocsr(), source="users")


def _weighted(G):
    A = G.adjacency.copy()
    A.data = A.data * 2
    return G.with_adjacency(A, source="users")


EDGE_REFUSALS = {"EdgeRR, a self loop": (_loop, "self loops"),
                 "EdgeRR, a weight other than 1": (_weighted, "0/1 adjacency")}


@pytest.mark.parametrize("collect_first", [True, False])
@pytest.mark.parametrize("case", sorted(EDGE_REFUSALS))
def test_a_refusal_of_the_users_lists_is_a_read_of_their_edges(case, collect_first):
    # Before: free (edges 1 printed after EdgeRR(1)), although it told that a user listed
    # itself, or weighted an edge. Now charged once their edges are collected, before or
    # after, as any read of the true graph.
    change, error = EDGE_REFUSALS[case]
    G = public_feature_graph()
    if collect_first:
        _collect_edges(G)
    with pytest.raises(ValueError, match=error):
        EdgeRR(1.0).fit(change(G))
    if not collect_first:
        assert privacy_report(G).epsilon_for("edges") == 0.0   # taken as given, so far
        _collect_edges(G)
    assert privacy_report(G).epsilon_for("edges") == np.inf


@pytest.mark.parametrize("case", sorted(EDGE_REFUSALS))
def test_under_a_budget_the_refusal_of_collected_edges_is_refused(case):
    change, error = EDGE_REFUSALS[case]
    G = public_feature_graph(budget=2.0)
    _collect_edges(G)
    with pytest.raises(BudgetExceededError, match="refuses these users' edges") as info:
        EdgeRR(1.0).fit(change(G))
    assert error not in str(info.value)
    assert privacy_report(G).epsilon_for("edges") == 1.0


def _collect_labels(G):
    LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0).fit().randomize(Y, G)


Y_UNLABELLED = np.where(np.arange(N) == 4, -1, Y)
LABEL_REFUSALS = {
    "LabelRandomizedResponse, outside classes": (
        lambda G: LabelRandomizedResponse(1.0, classes=[0, 1], random_state=1).fit().randomize(
            np.where(np.arange(N) == 4, 7, Y), G), "not in classes"),
    "LabelRandomizedResponse, one user two labels": (
        lambda G: LabelRandomizedResponse(1.0, classes=[0, 1], random_state=1).fit().randomize(
            np.array([0, 1]), G[[3, 3]]), "twice"),
    "MLPHead, an unlabelled marker": (
        _fit(lambda: MLPHead(epochs=1, random_state=0), Y_UNLABELLED), "unlabelled"),
    "MLPHead, a single class": (
        _fit(lambda: MLPHead(epochs=1, random_state=0), np.zeros(N, int)), "single class"),
    "LabelPropagationClassifier, an unlabelled marker": (
        _fit(LabelPropagationClassifier, Y_UNLABELLED), "unlabelled"),
    "LPGNNClassifier(classes=...), outside classes": (
        _fit(lambda: LPGNNClassifier(eps_y=np.inf, classes=[0, 1], epochs=1, random_state=0),
             np.where(np.arange(N) == 4, 7, Y)), "not in classes"),
    "DPGNNClassifier(classes=...), outside classes": (
        _fit(lambda: DPGNNClassifier(classes=[0, 1], random_state=0),
             np.where(np.arange(N) == 4, 7, Y)), "outside classes"),
}


@pytest.mark.parametrize("case", sorted(LABEL_REFUSALS))
def test_a_refusal_of_clean_labels_is_a_read_of_them(case):
    # Before: free (labels 1 printed after LabelRandomizedResponse(1)), although it told
    # that a user's label was missing or outside the domain.
    call, error = LABEL_REFUSALS[case]
    G = public_feature_graph()
    _collect_labels(G)
    with pytest.raises(ValueError, match=error):
        call(G)
    assert privacy_report(G).epsilon_for("labels") == np.inf


@pytest.mark.parametrize("case", sorted(LABEL_REFUSALS))
def test_under_a_budget_the_refusal_of_collected_labels_is_refused(case):
    call, error = LABEL_REFUSALS[case]
    G = public_feature_graph(budget=2.0)
    _collect_labels(G)
    with pytest.raises(BudgetExceededError, match="refuses these users' labels") as info:
        call(G)
    assert error not in str(info.value)
    assert privacy_report(G).epsilon_for("labels") == 1.0


def test_a_refusal_of_the_labels_the_users_sent_is_free():
    G = public_feature_graph()
    sent = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0).fit().randomize(Y, G)
    rows = np.flatnonzero(sent == sent[0])[:3]   # users who sent one class
    with pytest.raises(ValueError, match="single class"):
        MLPHead(epochs=1, random_state=0).fit(G[rows], sent[rows])
    assert privacy_report(G).epsilon_for("labels") == 1.0


def test_a_refusal_of_changed_data_under_a_budget_does_not_tell_how_many_changed():
    G = GraphData(X, budget=2.0)
    mech = OneBitMechanism(1.0, feature_range=(0, 1), split_eps=True, random_state=0).fit(G)
    mech.transform(G)
    G2 = GraphData(_with(X, at={(0, 0): 0.0, (1, 0): 0.0}), population=G,
                   node_ids=G.all_node_ids)
    with pytest.raises(BudgetExceededError, match="refused for these users' data") as info:
        mech.transform(G2)
    assert "2 user" not in str(info.value) and info.value.__suppress_context__
    assert G.ledger.local_epsilon == 1.0


# (the graph, the call, its error): refused for the call's arguments or public facts
PUBLIC_REFUSALS = {
    "EdgeRR, one node (a public size)": (
        lambda b: GraphData(np.zeros((1, 1)), sp.csr_matrix((1, 1)), budget=b),
        lambda G: EdgeRR(1.0).fit(G), "at least 2 nodes"),
    "KProp, no adjacency (public)": (
        lambda b: GraphData(X, budget=b), lambda G: KProp(1).fit_transform(G),
        "no adjacency"),
    "OneBitMechanism, a bad feature_range": (
        lambda b: GraphData(X, budget=b),
        lambda G: OneBitMechanism(1.0, feature_range=(1, 0)).fit(G), "lo < hi"),
    "GRRFSMechanism, domain_sizes of another length": (
        lambda b: GraphData(CODES, budget=b),
        lambda G: GRRFSMechanism(1.0, m=1, domain_sizes=[3]).fit(G), "one entry per"),
    "MLPHead, labels of another length": (
        lambda b: GraphData(X, budget=b), _fit(lambda: MLPHead(epochs=1), Y[:5]),
        "rows but y has"),
    "LabelRandomizedResponse, labels of another length": (
        lambda b: GraphData(X, budget=b),
        lambda G: LabelRandomizedResponse(1.0, classes=[0, 1]).fit().randomize(Y[:5], G),
        "shape"),
}


@pytest.mark.parametrize("case", sorted(PUBLIC_REFUSALS))
def test_a_refusal_of_the_arguments_or_public_facts_is_free(case):
    make, call, error = PUBLIC_REFUSALS[case]
    G = make(1.0)
    with pytest.raises(ValueError, match=error):
        call(G)
    assert len(G.ledger) == 0


def test_an_unfitted_label_mechanism_is_refused_free():
    # Review: NotFittedError is a ValueError, so randomize on an unfitted mechanism (a fact
    # of the estimator, not of the labels) was charged as a read of the labels (1 -> inf).
    G = public_feature_graph()
    _collect_labels(G)
    with pytest.raises(ValueError, match="not fitted"):
        LabelRandomizedResponse(1.0, classes=[0, 1], random_state=1).randomize(Y, G)
    assert privacy_report(G).epsilon_for("labels") == 1.0


@pytest.mark.parametrize("bin_edges, error", [([[0.5, 0.2], [0.5]], "strictly increasing"),
                                               ([[0.5]] * 3, "for each of the 2")])
def test_a_refusal_of_bad_bin_edges_is_free(bin_edges, error):
    # Review: bin_edges (an argument) were checked inside the block that charges a refusal
    # of the codes, so a bad one charged the features epsilon inf.
    G = GraphData(X[:, :2], budget=1.0)
    with pytest.raises(ValueError, match=error):
        GRRFSMechanism(1.0, m=1, bin_edges=bin_edges).fit(G)
    assert len(G.ledger) == 0


@pytest.mark.parametrize("fit", [
    lambda G: DPGNNClassifier(classes=[0, 1], random_state=0).fit(G, Y),
    lambda G: DPMLPClassifier(classes=[0, 1], random_state=0).fit(G, Y)],
    ids=["DPGNNClassifier", "DPMLPClassifier"])
def test_a_central_trainings_refusal_of_non_finite_features_is_a_read(fit):
    # Review: the central trainers' NaN check (it names the row and column) was free.
    G = _graph(_with(X, at={(3, 1): np.nan}))
    with pytest.raises(ValueError, match="NaN"):
        fit(G)
    assert privacy_report(G).epsilon_for("features") == np.inf
    Gb = _graph(_with(X, at={(3, 1): np.nan}), budget=8.0)
    with pytest.raises(BudgetExceededError, match="refuses these users' features"):
        fit(Gb)
    assert len(Gb.ledger) == 0


def test_a_plain_arrays_refusal_at_a_central_training_charges_its_users():
    Xn = _with(X, at={(3, 1): np.nan})
    with pytest.raises(ValueError, match="NaN"):
        DPMLPClassifier(classes=[0, 1], random_state=0).fit(Xn, Y)
    keys = array_node_keys(array_fingerprint(Xn.astype(np.float32)), N)   # (its rows' keys)
    users, eps = default_population().ledger.per_user("features")
    assert np.all(np.isinf(eps[np.isin(users, keys)])) and np.isin(keys, users).all()


@pytest.mark.parametrize("part", ["features", "edges"])
def test_a_saved_mechanisms_refusal_of_changed_data_is_a_read(part):
    # Review: a mechanism saved without its secret refused changed data saying how many
    # users changed, free (features 3, edges 1 printed), unlike a collection's refusal.
    G = public_feature_graph()
    if part == "features":   # (the users' own features)
        G = GraphData(X, G.adjacency)
        mech = OneBitMechanism(1.0, feature_range=(0, 1), random_state=0).fit(G)
    else:
        mech = EdgeRR(1.0, random_state=0).fit(G)
    mech.transform(G)
    forget_secrets(mech, G)
    before = privacy_report(G).epsilon_for(part)
    if part == "features":
        X2 = G.features.copy()
        X2[:2, 0] = 1 - X2[:2, 0]
        G2 = GraphData(X2, G.adjacency, population=G, node_ids=G.all_node_ids)
    else:
        B = G.adjacency.toarray()
        B[0, 1] = B[1, 0] = 1 - B[0, 1]
        G2 = G.with_adjacency(sp.csr_matrix(B), source="users")
    with pytest.raises(ValueError, match="hold other"):
        mech.transform(G2)
    assert before < np.inf and privacy_report(G).epsilon_for(part) == np.inf
