"""One person, two spellings of their id in GraphData(population=...): the int 1000 and the
text "1000" (ids read back from a CSV as text) are two keys, so a graph of the text ids
joined to a population that knows the ints made each person two users, each charged apart
(printed 1.0 while each sent 2.0, a cap of 1.5 passed without refusal). A new id whose
other spelling the population knows, and whose own key it does not, is refused before
anything is sent."""

import pickle
import warnings

import numpy as np
import pytest

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.device import Device
from skldp.device._random import ids_to_keys
from skldp.mechanisms import LabelRandomizedResponse, MultiBitMechanism
from skldp.population import Population, collection_spec, read_reports, received_graph

TWO = "other type, e.g."
IDS = np.arange(1000, 1010)
TEXT = [str(i) for i in IDS]


def _collect(G):
    MultiBitMechanism(1.0, feature_range=(0, 1), random_state=None).fit_transform(G)


def _X(n=10, seed=0):
    return np.random.default_rng(seed).random((n, 3))


def _spent(population, ids):
    return population.ledger.spent(ids_to_keys(np.array(ids, dtype=object))).tolist()


def test_text_ids_of_users_known_as_ints_are_refused_before_any_collection():
    G = GraphData(_X(), node_ids=IDS, budget=1.5)
    _collect(G)
    with pytest.raises(ValueError, match=f"{TWO} '1000' \\(it knows 1000\\)"):
        GraphData(_X(seed=1), node_ids=TEXT, population=G)
    assert privacy_report(G).local_epsilon == 1.0
    # the ids in the type the population knows: the same users, refused at the cap
    G2 = GraphData(_X(seed=1), node_ids=[int(u) for u in TEXT], population=G)
    with pytest.raises(Exception, match="budget"):
        _collect(G2)


def test_int_ids_of_users_known_as_text_are_refused():
    # the reverse: text first (read from a file), ints later
    G = GraphData(_X(), node_ids=TEXT)
    _collect(G)
    with pytest.raises(ValueError, match=f"{TWO} 1000 \\(it knows '1000'\\)"):
        GraphData(_X(), node_ids=IDS, population=G)
    with pytest.raises(ValueError, match=TWO):   # in an int64 array or one by one
        GraphData(_X(1), node_ids=[1005], population=G.population)


@pytest.mark.parametrize("how", ["graph", "population", "view", "with_features", "pickled",
                                 "new_simulation"])
def test_users_who_sent_nothing_yet_are_known_by_every_way_to_the_population(how):
    G = GraphData(_X(), node_ids=IDS)   # nothing collected: only the graph knows them
    if how == "graph":
        population = G
    elif how == "population":
        population = G.population
    elif how == "view":
        population = G[[0, 1]]
    elif how == "with_features":
        population = G.with_features(_X(seed=2))
    elif how == "pickled":
        population = pickle.loads(pickle.dumps(G)).population
    else:
        population = G.new_simulation()
    with pytest.raises(ValueError, match=TWO):
        GraphData(_X(), node_ids=TEXT, population=population)


def test_a_copy_in_another_process_tells_the_original_whom_it_joined():
    # a copy (a worker) built the graph of the text ids: the original's population knows them
    P = Population()
    copy = pickle.loads(pickle.dumps(P))
    GraphData(_X(), node_ids=TEXT, population=copy)
    with pytest.raises(ValueError, match=TWO):
        GraphData(_X(), node_ids=IDS, population=P)


def test_what_is_not_another_spelling_of_a_known_user_is_accepted():
    G = GraphData(_X(), node_ids=IDS)
    _collect(G)
    for ids in (IDS, ["u1", "u2"], ["7", "8"], ["01000", "+1000", "1000.0"], [1000, "2000"]):
        H = GraphData(_X(len(ids)), node_ids=ids, population=G)
        assert H.population is G.population
    # a graph that lists both spellings says they are two users
    H = GraphData(_X(2), node_ids=[1001, "1001"], population=G)
    _collect(H)
    assert _spent(G.population, [1001, "1001"]) == [2.0, 1.0]
    # and then the population knows both
    GraphData(_X(1), node_ids=["1001"], population=G)


def test_a_negative_id_and_the_text_of_its_key():
    # -1 is the key 2**64 - 1: its text "-1", and the text of 2**64 - 1, name that user
    G = GraphData(_X(2), node_ids=[-1, 5])
    for text in ("-1", str(2**64 - 1)):
        with pytest.raises(ValueError, match=TWO):
            GraphData(_X(1), node_ids=[text], population=G)
    GraphData(_X(1), node_ids=[2**64 - 1], population=G)   # (the same key: that user)


def _received_text_population():
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        G, _ = received_graph(labels=read_reports([Device(u).answer(spec, 1) for u in TEXT],
                                                  spec, users=TEXT))
    return G


def test_a_received_population_refuses_the_other_spelling_in_a_graph_and_in_a_call():
    G = _received_text_population()
    assert not G.population.simulated
    with pytest.raises(ValueError, match=TWO):
        GraphData(_X(), node_ids=IDS, population=G)
    # received_graph with node_ids of the other type: refused before anything is charged
    # (the int keys were charged beside the text ones: printed 2, sent 3 by each person)
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))
    r = read_reports([Device(int(u)).answer(spec, 1) for u in TEXT], spec,
                     users=[int(u) for u in TEXT])
    before = _spent(G.population, [1000, "1000"])
    with pytest.raises(ValueError, match=f"{TWO}.*Nothing was charged"):
        received_graph(labels=r, node_ids=[int(u) for u in TEXT], population=G)
    assert _spent(G.population, [1000, "1000"]) == before == [0.0, 1.0]
    # without node_ids each id names the user the population knows
    G2, _ = received_graph(labels=r, population=G)
    assert G2.node_ids.tolist() == TEXT and _spent(G.population, [1000, "1000"]) == [0.0, 2.0]
