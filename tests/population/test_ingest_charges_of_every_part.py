"""What received_graph charges, whatever part of the graph the reports are: further answers
to an edge collection, a budget given with the population of earlier batches, a central
training counted with the reports refused earlier, authenticated senders who are not users
of the collection, and a sender outside node_ids whose every record was refused."""


import numpy as np
import pytest
from central_specs import central_spec

from skldp.device import Device, Directory
from skldp.mechanisms import EdgeRR, LabelRandomizedResponse
from skldp.population import (
    BudgetExceededError,
    collection_spec,
    read_reports,
    received_graph,
)

IDS = ["a", "b", "c", "d"]
LISTS = {"a": ["b"], "b": ["a", "c"], "c": ["b"], "d": []}


def _labels():
    return collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))


def _central(eps):
    return central_spec(eps, n_train=4)


def _spent(G):
    return G.ledger.spent(G.node_keys).tolist()


def test_a_further_answer_to_an_edge_collection_is_charged():
    se = collection_spec(EdgeRR(2.0, symmetrize="or"), node_ids=IDS)
    directory = Directory(IDS)
    recs = [Device(u).answer(se, LISTS[u], directory=directory) for u in IDS]
    # "a" answered again on a second device: a further, independent answer
    recs.append(Device("a").answer(se, LISTS["a"], directory=directory))
    got = read_reports(recs, se, users=IDS)
    assert got.again == {"a": 1}
    G, _ = received_graph(edges=got, node_ids=IDS, missing_lists="empty")
    assert _spent(G) == [4.0, 2.0, 2.0, 2.0]
    assert G.ledger.epsilon_for("edges") == 4.0
    # under a budget that one answer fits and two do not, the graph is refused
    with pytest.raises(BudgetExceededError, match="further answer"):
        received_graph(edges=read_reports(recs, se, users=IDS), node_ids=IDS,
                       missing_lists="empty", budget=3.0)


def test_a_budget_given_with_an_earlier_population_caps_it():
    sy = _labels()
    first = [Device(u).answer(sy, 1) for u in IDS]
    G, _ = received_graph(labels=read_reports(first, sy, users=IDS), node_ids=IDS)
    assert G.population.budget is None
    # a second collection of the same users, under a budget of 1.5: 1 + 1 > 1.5
    sy2 = _labels()
    second = [Device(u).answer(sy2, 2) for u in IDS]
    with pytest.raises(BudgetExceededError):
        received_graph(labels=read_reports(second, sy2, users=IDS), node_ids=IDS,
                       population=G, budget=1.5)
    assert G.population.budget == 1.5


def test_reports_refused_earlier_count_with_the_central_trainings():
    sy = _labels()
    recs = [Device(u).answer(sy, 1) for u in IDS]
    G, _ = received_graph(labels=read_reports(recs, sy, users=IDS), node_ids=IDS,
                          budget=3.0)
    pop = G.population
    pop.record_training(_central(1.0), len(IDS))        # 1 (local) + 1 (central)
    # "a" answers again: 2 + 1 = 3, at the cap; then once more: 4 > 3, refused but charged
    recs.append(Device("a").answer(sy, 1))
    received_graph(labels=read_reports(recs, sy, users=IDS), node_ids=IDS, population=pop)
    recs.append(Device("a").answer(sy, 1))
    with pytest.raises(BudgetExceededError):
        received_graph(labels=read_reports(recs, sy, users=IDS), node_ids=IDS,
                       population=pop)
    assert _spent(G) == [3.0, 1.0, 1.0, 1.0]             # local only; central 1 more
    # the same records again (resends, nothing new is charged): "a" spent 3 + 1 > 3
    with pytest.raises(BudgetExceededError, match="received earlier"):
        received_graph(labels=read_reports(recs, sy, users=IDS), node_ids=IDS,
                       population=pop)


def test_an_authenticated_sender_who_is_not_a_user_is_charged_nothing():
    sy = _labels()
    recs = [Device(u).answer(sy, 0) for u in IDS[:2]]
    forged = dict(Device("mallory").answer(sy, 0), user="a")
    cut = {k: v for k, v in Device("mallory").answer(sy, 0).items()}
    cut["user"] = 1.5                                    # its user id garbled: malformed
    got = read_reports(recs + [forged, cut], sy, users=IDS,
                       senders=IDS[:2] + ["mallory", "mallory"])
    assert got.refused == {"sender mismatch": 1, "malformed": 1}
    assert got.again == {} and got.users == IDS[:2]
    G, _ = received_graph(labels=got, node_ids=IDS)
    assert _spent(G) == [1.0, 1.0, 0.0, 0.0]
    keys, _ = G.ledger.per_user()
    assert np.isin(keys, G.node_keys).all()             # no one outside the graph is charged
    assert "mallory" not in got.again


def test_a_sender_outside_node_ids_whose_every_record_was_refused_is_charged_itself():
    sy = _labels()
    recs = [Device(u).answer(sy, 0) for u in IDS]
    bad = dict(Device("z").answer(sy, 0), report={"y": 7})     # out of domain
    with pytest.warns(UserWarning, match="without users="):
        got = read_reports(recs + [bad], sy)
    assert got.refused == {"out of domain": 1} and got.again == {"z": 1}
    G, _ = received_graph(labels=got, node_ids=IDS)
    assert _spent(G) == [1.0, 1.0, 1.0, 1.0]            # not "a" (row 0): "z" sent it
    keys, eps = G.ledger.per_user()
    (z,) = np.setdiff1d(keys, G.node_keys)
    assert eps[keys == z].tolist() == [1.0]
