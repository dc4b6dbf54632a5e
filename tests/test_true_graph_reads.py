"""A server step that reads the users' true graph is charged a read of their edges in the
clear (epsilon inf) when an edge mechanism collects those users' edges, before or after
the read; without an edge collection the graph is taken as given (nothing charged)."""

import os
import pickle
import warnings

import numpy as np
import pytest
from public_feature_graphs import public_feature_graph

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.mechanisms import EdgeRR
from skldp.model_selection import PairData, random_edge_split, sample_non_edges
from skldp.models import GCNClassifier, HadamardLinkPredictor
from skldp.population import BudgetExceededError
from skldp.propagation import KProp


def _gcn(G):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return GCNClassifier(epochs=1, random_state=0).fit(G, np.arange(G.n_nodes) % 2)


def _edges(G):
    return privacy_report(G).epsilon_for("edges")


def _reads(G):
    """The kinds charged a read of the edges in the clear."""
    return sorted(e.spec.kind.rsplit(".", 1)[-1] for e in G.ledger.entries()
                  if e.spec.model == "clear" and "edges" in e.spec.protects)


READS = {
    "GCNClassifier": _gcn,
    "KProp": lambda G: KProp(1).fit_transform(G),
    "random_edge_split": lambda G: random_edge_split(G, random_state=0),
    "sample_non_edges": lambda G: sample_non_edges(G, 5, random_state=0),
}


@pytest.mark.parametrize("read", sorted(READS))
@pytest.mark.parametrize("edgerr_first", [True, False])
def test_a_true_graph_read_counts_once_the_edges_are_collected(read, edgerr_first):
    # Before: EdgeRR(1) printed edges 1 whatever read the true graph (a GCN fitted on it
    # too: audit lower bound 4.07 against the printed 1)
    G = public_feature_graph()
    steps = [lambda: EdgeRR(1.0, random_state=0).fit_transform(G), lambda: READS[read](G)]
    for step in steps if edgerr_first else steps[::-1]:
        step()
    assert _edges(G) == np.inf
    assert _reads(G) == [read]


def test_without_an_edge_collection_the_graph_is_taken_as_given():
    G = public_feature_graph(budget=1.0)
    for read in READS.values():
        read(G)
    assert len(G.ledger) == 0 and _edges(G) == 0
    # a model on the collected graph reads no true edge
    G = public_feature_graph(budget=8.0)
    Gc = EdgeRR(8.0, random_state=0).fit_transform(G)
    _gcn(Gc)
    random_edge_split(Gc, random_state=0)
    assert _edges(G) == 8.0


@pytest.mark.parametrize("edgerr_first", [True, False])
def test_a_budget_refuses_the_second_of_the_two(edgerr_first):
    G = public_feature_graph(budget=1.0)
    if edgerr_first:
        EdgeRR(1.0, random_state=0).fit_transform(G)
        with pytest.raises(BudgetExceededError, match="true graph.*GCNClassifier|"
                           "GCNClassifier would read the true graph.*new_simulation"):
            _gcn(G)
    else:
        _gcn(G)
        with pytest.raises(BudgetExceededError,
                           match=r"already read \(GCNClassifier\).*new_simulation"):
            EdgeRR(1.0, random_state=0).fit_transform(G)
    assert _edges(G) == (1.0 if edgerr_first else 0.0)


def _label_models():
    from skldp.baselines import LabelPropagationClassifier
    from skldp.mechanisms import LabelRandomizedResponse
    from skldp.models import LPGNNClassifier, RGNNClassifier
    lrr = LabelRandomizedResponse(2.0, classes=[0, 1], random_state=0)
    return {"GCNClassifier": GCNClassifier(epochs=1, label_mechanism=lrr, random_state=0),
            "LPGNNClassifier": LPGNNClassifier(2.0, classes=[0, 1], epochs=1, random_state=0),
            "RGNNClassifier": RGNNClassifier(eps_y=2.0, classes=[0, 1], n_clusters=2,
                                             epochs=1, random_state=0),
            "LabelPropagationClassifier": LabelPropagationClassifier(label_mechanism=lrr)}


@pytest.mark.parametrize("name", sorted(_label_models()))
def test_a_refused_read_of_the_true_graph_spends_no_label(name):
    # Before: under a budget, GCNClassifier(label_mechanism=LabelRandomizedResponse(2))
    # on the true graph of users whose edges EdgeRR(1) collected collected their labels,
    # then was refused for the graph: each user's spend went 1 -> 3 for no model
    G = public_feature_graph(budget=5.0)
    EdgeRR(1.0, random_state=0).fit_transform(G)
    spent = G.ledger.spent(G.node_keys).copy()
    with pytest.raises(BudgetExceededError, match=f"{name} would read the true graph"):
        _label_models()[name].fit(G[:20], np.arange(20) % 2)
    np.testing.assert_array_equal(G.ledger.spent(G.node_keys), spent)
    assert len(G.ledger) == 1


def test_a_refused_read_of_raw_features_spends_no_label():
    # Before: the same fit on raw features under a budget spent 2 on the labels, then was
    # refused for reading the features in the clear
    from skldp.mechanisms import LabelRandomizedResponse
    G = public_feature_graph(budget=5.0)
    G = G.with_features(G.features, source="users")
    gcn = GCNClassifier(epochs=1, random_state=0,
                        label_mechanism=LabelRandomizedResponse(2.0, classes=[0, 1]))
    with pytest.raises(BudgetExceededError, match="features of 30 user"):
        gcn.fit(G[:20], np.arange(20) % 2)
    assert len(G.ledger) == 0


def test_only_the_users_whose_edges_were_collected_are_charged():
    G = public_feature_graph()
    _gcn(G)

    def some(users):   # a graph of some of the same users (their own lists among them)
        idx = np.asarray(users)
        return GraphData(G.features[idx], G.adjacency[idx][:, idx], node_ids=idx,
                         population=G)

    EdgeRR(1.0, random_state=0).fit_transform(some(range(10)))
    users, eps = G.ledger.per_user("edges")
    assert set(users[np.isinf(eps)]) == set(G.node_keys[:10])
    EdgeRR(1.0, random_state=0).fit_transform(some(range(10, 30)))   # charged when collected
    assert np.isinf(G.ledger.per_user("edges")[1]).sum() == G.n_nodes


def test_a_hadamard_head_scoring_pairs_of_the_true_graph_is_charged():
    G = public_feature_graph(budget=2.0)
    EdgeRR(1.0, random_state=0).fit_transform(G)
    with pytest.raises(BudgetExceededError, match="random_edge_split"):
        random_edge_split(G, random_state=0)
    G = public_feature_graph()
    P_tr, _, _, y_tr, _, _ = random_edge_split(G, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        head = HadamardLinkPredictor(epochs=1, random_state=0).fit(P_tr, y_tr)
        head.decision_function(PairData(P_tr.graph, [[0, 1]]))
    EdgeRR(1.0, random_state=0).fit_transform(G)
    assert _edges(G) == np.inf
    assert "HadamardLinkPredictor" in _reads(G)


def test_the_pending_read_survives_pickling():
    G = public_feature_graph()
    _gcn(G)
    copy = pickle.loads(pickle.dumps(G))
    EdgeRR(1.0, random_state=0).fit_transform(copy)
    assert _edges(copy) == np.inf and _edges(G) == np.inf


def _fit_gcn(G):
    _gcn(G)
    return True


@pytest.mark.long
def test_a_read_in_a_worker_process_counts():
    from joblib import Parallel, delayed
    G = public_feature_graph()
    assert Parallel(n_jobs=2, backend="loky")(delayed(_fit_gcn)(G) for _ in range(2))
    assert _edges(G) == 0
    EdgeRR(1.0, random_state=0).fit_transform(G)
    assert _edges(G) == np.inf
    assert _reads(G) == ["GCNClassifier"]


def test_a_read_in_a_forked_child_counts(run_in_forked_child):
    G = public_feature_graph()
    pickle.dumps(G)   # the journal is open before the fork
    assert run_in_forked_child(lambda: KProp(1).fit_transform(G))
    EdgeRR(1.0, random_state=0).fit_transform(G)
    assert _reads(G) == ["KProp"]


def test_new_simulation_separates_the_true_graph_from_the_collection():
    G = public_feature_graph(budget=1.0)
    EdgeRR(1.0, random_state=0).fit_transform(G)
    other = G.new_simulation()
    _gcn(other)
    random_edge_split(other, random_state=0)
    assert _edges(G) == 1.0 and _edges(other) == 0
    with pytest.raises(BudgetExceededError, match="new_simulation"):
        _gcn(G)   # on the same simulation: refused


def test_the_operator_of_the_true_graph_is_a_read_of_it():
    # Before: GCNAggregation().propagation_matrix(G) after EdgeRR(1) returned the true
    # graph's operator (878/878 edges of an SBM), charged nothing, under a budget too
    # (audit lower bound 5.46 against the printed 1)
    from skldp.propagation import GCNAggregation
    G = public_feature_graph()
    Gc = EdgeRR(1.0, random_state=0).fit_transform(G)
    GCNAggregation().propagation_matrix(Gc)   # the collected graph: nothing more
    assert _edges(G) == 1.0
    GCNAggregation().propagation_matrix(G)
    assert _edges(G) == np.inf and _reads(G) == ["GCNAggregation"]
    G = public_feature_graph(budget=5.0)
    EdgeRR(1.0, random_state=0).fit_transform(G)
    with pytest.raises(BudgetExceededError, match="GCNAggregation would read the true graph"):
        GCNAggregation().propagation_matrix(G)
    assert _edges(G) == 1.0
    # fitted on the collected graph, then given the true one: read in the clear
    G = public_feature_graph()
    agg = GCNAggregation().fit(EdgeRR(1.0, random_state=0).fit_transform(G))
    agg.propagation_matrix(G)
    assert _edges(G) == np.inf


def test_a_read_is_written_once_per_step_and_graph():
    G = public_feature_graph()
    pickle.dumps(G)   # a shared journal
    size = os.path.getsize(G.population._journal)
    KProp(1).fit_transform(G)
    assert os.path.getsize(G.population._journal) > size   # for copies of the population
    size = os.path.getsize(G.population._journal)
    KProp(1).fit_transform(G[:5])
    KProp(2).fit_transform(G)
    assert os.path.getsize(G.population._journal) == size


def test_the_journal_names_a_graphs_users_once_for_reads_of_several_steps():
    import json

    from skldp.propagation import GCNAggregation
    G = public_feature_graph()
    copy = pickle.loads(pickle.dumps(G))   # a copy sharing the journal
    KProp(1).fit_transform(G)
    GCNAggregation().fit_transform(G)
    with open(G.population._journal) as fh:
        reads = [r for r in map(json.loads, fh) if "true_read" in r]
    assert [("keys" in r, "keys_of" in r) for r in reads] == [(True, False), (False, True)]
    copy.population._sync()   # the copy reads both reads back, with their users
    EdgeRR(1.0, random_state=0).fit_transform(copy)
    assert _reads(copy) == ["GCNAggregation", "KProp"]
    assert np.all(np.isinf(copy.ledger.spent(copy.node_keys)))


def test_a_central_training_and_a_head_that_reads_no_graph_are_not_reads_at_fit():
    # DP-GNN's guarantee covers the graph it trains on; its predictions over the full true
    # neighbourhoods are not covered (a read). MLPHead reads no adjacency.
    from skldp.central import DPGNNClassifier
    from skldp.models import MLPHead
    G = public_feature_graph()
    EdgeRR(1.0, random_state=0).fit_transform(G)
    y = np.arange(G.n_nodes) % 2
    MLPHead(random_state=0).fit(G, y).predict(G)
    dp = DPGNNClassifier(max_degree=2, classes=[0, 1], batch_size=5, n_steps=2,
                         noise_multiplier=5.0, hidden_size=4, device="cpu",
                         random_state=0).fit(G, y)
    assert _reads(G) == []
    dp.predict(G)
    assert _reads(G) == ["DPGNNClassifier"]


def test_a_head_that_reads_no_graph_fitted_on_collected_edges_reads_none_at_predict():
    # Before: note_edge_read charged a step fitted on EdgeRR's output a read of the raw
    # graph's edges in the clear (inf) before it looked whether the step reads an
    # adjacency (MLPHead reads none)
    from skldp.base import note_edge_read
    from skldp.models import MLPHead
    G = public_feature_graph()
    Gc = EdgeRR(1.0, random_state=0).fit_transform(G)
    head = MLPHead(epochs=1, random_state=0).fit(Gc, np.arange(G.n_nodes) % 2)
    head.predict(G)
    note_edge_read(head, G)
    assert _reads(G) == [] and _edges(G) == 1.0


def test_directed_reports_are_told_how_to_symmetrise_them_without_a_true_graph_read():
    # Before: the advice was "Symmetrise it first, e.g. A.maximum(A.T)"; with_adjacency's
    # default source then made the result count as the users' true graph (edges inf).
    from skldp.baselines import LabelPropagationClassifier
    G = public_feature_graph(budget=5.0)
    Gc = EdgeRR(2.0, symmetrize="directed", random_state=0).fit_transform(G)
    y = np.arange(G.n_nodes) % 2
    with pytest.raises(ValueError, match=r"source='public'") as info:
        LabelPropagationClassifier().fit(Gc, y)
    assert "EdgeRR(symmetrize='or')" in str(info.value)
    A = Gc.adjacency
    U = Gc.with_adjacency(A.maximum(A.T), source="public")   # as the message says
    LabelPropagationClassifier().fit(U, y)
    assert _edges(G) == 2.0


def test_a_split_of_the_true_graph_then_a_collection_is_told_to_split_the_collected_one():
    G = public_feature_graph(budget=5.0)
    P_tr = random_edge_split(G, random_state=0)[0]
    with pytest.raises(BudgetExceededError, match=r"split the collected graph instead"):
        EdgeRR(4.0, random_state=0).fit_transform(P_tr.graph)
    Gc = EdgeRR(4.0, random_state=0).fit_transform(G.new_simulation())   # as it says
    random_edge_split(Gc, random_state=0)
    assert _edges(Gc) == 4.0


def _dpgnn(G, random_state=0):
    from skldp.central import DPGNNClassifier
    return DPGNNClassifier(max_degree=2, classes=[0, 1], batch_size=5, n_steps=2,
                           noise_multiplier=5.0, hidden_size=4, device="cpu",
                           random_state=random_state).fit(G, np.arange(G.n_nodes) % 2)


def _central(G):
    return privacy_report(G).central_epsilon


@pytest.mark.parametrize("dpgnn_first", [True, False])
def test_a_central_training_that_protects_the_edges_counts_as_their_collection(dpgnn_first):
    # Before: DP-GNN (epsilon 1) and a label propagation fitted on the same true graph and
    # clean labels printed edges and labels epsilon 1 (the training's, central); the
    # audit's lower bound on the propagation's predictions was 5.98
    G = public_feature_graph()
    steps = [lambda: _dpgnn(G), lambda: _gcn(G)]
    for step in steps if dpgnn_first else steps[::-1]:
        step()
    report = privacy_report(G)
    assert report.epsilon_for("edges") == np.inf and report.epsilon_for("labels") == np.inf
    assert _reads(G) == ["GCNClassifier"] and 0 < _central(G) < np.inf


@pytest.mark.parametrize("dpgnn_first", [True, False])
def test_a_budget_refuses_the_second_of_a_central_training_and_a_true_graph_read(dpgnn_first):
    G = public_feature_graph(budget=50.0)
    if dpgnn_first:
        _dpgnn(G)
        with pytest.raises(BudgetExceededError, match=r"GCNClassifier would read the (true "
                           r"graph|clean labels).*central DP training protects.*new_simulation"):
            _gcn(G)
        assert 0 < _central(G) < np.inf
    else:
        _gcn(G)
        with pytest.raises(BudgetExceededError, match=r"DPGNNClassifier.*would protect the "
                           r"edges and labels.*already read \(GCNClassifier\).*Nothing was "
                           r"trained.*new_simulation"):
            _dpgnn(G)
        assert _central(G) == 0
    assert len(_reads(G)) == 0 and _edges(G) == 0


@pytest.mark.parametrize("where", ["training then copy", "copy then training",
                                   "read in the copy"])
def test_a_central_training_counts_across_pickling(where):
    G = public_feature_graph()
    if where == "training then copy":   # the journal opens after the training
        _dpgnn(G)
        copy = pickle.loads(pickle.dumps(G))
        _gcn(copy)
    elif where == "copy then training":   # the training is written to an open journal
        copy = pickle.loads(pickle.dumps(G))
        _dpgnn(G)
        _gcn(copy)
    else:   # a copy reads; the original trains
        _gcn(pickle.loads(pickle.dumps(G)))
        _dpgnn(G)
        copy = pickle.loads(pickle.dumps(G))
    assert _edges(G) == np.inf and _edges(copy) == np.inf
    assert _reads(G) == ["GCNClassifier"]


def test_a_copy_cut_off_from_the_journal_knows_the_trainings_users(monkeypatch):
    # a copy on another machine (no journal): its ledger names the training's users, so
    # its read of their true graph is a read it cannot record (refused), not a free one
    exists = os.path.exists

    def cut_off(G):
        with monkeypatch.context() as m:
            m.setattr(os.path, "exists", lambda p: not str(p).endswith("secret") and exists(p))
            return pickle.loads(pickle.dumps(G))

    G = public_feature_graph()
    _gcn(cut_off(G))   # no training yet: taken as given
    _dpgnn(G)
    with pytest.raises(RuntimeError, match="cannot reach the ledger"):
        _gcn(cut_off(G))


def test_a_central_training_alone_and_its_own_predictions_read_nothing_in_the_clear():
    G = public_feature_graph(budget=50.0)
    y = np.arange(G.n_nodes) % 2
    dp = _dpgnn(G)
    dp.predict(G)
    dp.score(G[:10], y[:10])
    _dpgnn(G, random_state=1).predict_proba(G)   # another training (a search's)
    assert len(_reads(G)) == 0 and _edges(G) == 0 and 0 < _central(G) < np.inf
    # the plain model on a separate simulation, or on other users, is free
    _gcn(G.new_simulation())
    _gcn(public_feature_graph(budget=50.0, seed=1))
    assert len(_reads(G)) == 0
    with pytest.raises(BudgetExceededError, match="central DP training protects"):
        _gcn(G)   # on the same simulation: refused


def test_central_models_predictions_are_taken_as_given_whatever_their_class():
    # Before: the exemption compared step kinds, so a subclass's predictions and the
    # base class's training charged each other (edges inf; refused under a budget)
    from skldp.central import DPGNNClassifier

    class MyDPGNN(DPGNNClassifier):
        pass

    G = public_feature_graph(budget=50.0)
    y = np.arange(G.n_nodes) % 2
    mine = MyDPGNN(max_degree=2, classes=[0, 1], batch_size=5, n_steps=2,
                   noise_multiplier=5.0, hidden_size=4, device="cpu", random_state=0)
    mine.fit(G, y).predict(G)
    _dpgnn(G).predict(G)
    assert len(_reads(G)) == 0 and _edges(G) == 0 and 0 < _central(G) < np.inf


def test_a_central_models_predictions_over_collected_edges_true_graph_are_charged():
    # the exemption is the trainings' only: edges an edge mechanism collected still count
    G = public_feature_graph()
    EdgeRR(1.0).fit_transform(G)
    _dpgnn(G).predict(G)
    assert _edges(G) == np.inf


def test_a_refused_read_of_a_trainings_users_says_what_to_give_instead():
    G = public_feature_graph(budget=50.0)
    _dpgnn(G)
    with pytest.raises(BudgetExceededError, match=r"Give GCNClassifier what an edge mechanism "
                                                  r"collected from these users instead of the "
                                                  r"true graph"):
        _gcn(G)

