"""Answers of users not in the directory when they arrived (charged once the user is one of
the population's, as a full re-read would), reports holding numpy values, and the totals a
budget refusal of received_graph states."""

import pickle

import numpy as np
import pytest

from skldp.device import Device
from skldp.device._random import ids_to_keys
from skldp.mechanisms import HDSMechanism, LabelRandomizedResponse
from skldp.population import (
    BudgetExceededError,
    collection_spec,
    read_reports,
    received_graph,
)

IDS = ["a", "b", "c"]
LATE = IDS + ["late"]


@pytest.fixture(scope="module")
def sy():
    return collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))


def _spent(population, user):
    return float(population.ledger.spent(ids_to_keys(np.asarray([user], dtype=object)))[0])


def _base(spec):
    return [Device(u).answer(spec, 1) for u in IDS]


def test_a_user_unknown_then_enrolled_is_charged_as_a_full_reread_charges(sy):
    for resend in (False, True):
        first = Device("late").answer(sy, 1)
        second = first if resend else Device("late").answer(sy, 1)   # same record, or new
        G1, _ = received_graph(labels=read_reports(_base(sy) + [first], sy, users=IDS),
                               node_ids=IDS)
        assert _spent(G1.population, "late") == 0.0   # unknown: nobody's yet
        G2, _ = received_graph(labels=read_reports([second], sy, users=LATE), node_ids=LATE,
                               population=G1)
        full, _ = received_graph(labels=read_reports(_base(sy) + [first, second], sy,
                                                     users=LATE), node_ids=LATE)
        assert _spent(full.population, "late") == (1.0 if resend else 2.0)
        assert _spent(G2.population, "late") == _spent(full.population, "late")


def test_a_held_answer_is_charged_when_its_user_joins_without_answering_again(sy):
    G1, _ = received_graph(labels=read_reports(_base(sy) + [Device("late").answer(sy, 0)],
                                               sy, users=IDS), node_ids=IDS)
    sy2 = collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1]))
    recs = [Device(u).answer(sy2, 0) for u in LATE]
    G2, _ = received_graph(labels=read_reports(recs, sy2, users=LATE), node_ids=LATE,
                           population=G1)
    assert _spent(G2.population, "late") == 3.0   # sy's answer held from batch 1, and sy2's
    # charged once: a later call charges it no more
    G3, _ = received_graph(labels=read_reports(recs, sy2, users=LATE), node_ids=LATE,
                           population=G2)
    assert _spent(G3.population, "late") == 3.0


def test_a_user_removed_from_the_directory_is_charged_for_what_it_sends(sy):
    recs = _base(sy)
    G1, _ = received_graph(labels=read_reports(recs, sy, users=IDS), node_ids=IDS)
    # "c" left the directory; it resends its answer (free) and answers again (charged)
    batch = [recs[2], Device("c").answer(sy, 0)]
    got = read_reports(batch, sy, users=IDS[:2])
    assert got.refused == {"unknown user": 2}
    G2, _ = received_graph(labels=read_reports(recs[:2], sy, users=IDS[:2]),
                           node_ids=IDS[:2], population=G1)
    assert _spent(G2.population, "c") == 1.0
    received_graph(labels=got, node_ids=IDS[:2], population=G2)
    assert _spent(G2.population, "c") == 2.0
    # ids never enrolled are charged nothing (anyone can send records under any id)
    flood = [Device("mallory").answer(sy, 1) for _ in range(3)]
    received_graph(labels=read_reports(flood, sy, users=IDS[:2]), node_ids=IDS[:2],
                   population=G2)
    assert _spent(G2.population, "mallory") == 0.0


def test_held_answers_survive_a_pickle_of_the_population(sy):
    G1, _ = received_graph(labels=read_reports(_base(sy) + [Device("late").answer(sy, 1)],
                                               sy, users=IDS), node_ids=IDS)
    P = pickle.loads(pickle.dumps(G1.population))
    assert sy.id in P._held
    G2, _ = received_graph(labels=read_reports([Device("late").answer(sy, 1)], sy,
                                               users=LATE), node_ids=LATE, population=P)
    assert _spent(G2.population, "late") == 2.0


# ------------------------------------------------------------ numpy values
def test_reports_holding_numpy_values_read_as_their_plain_records():
    spec = collection_spec(HDSMechanism(2.0, k=2, feature_range=(0, 1)), n_features=6)
    X = np.eye(6)[:3]
    recs = [Device(u).answer(spec, X[i]) for i, u in enumerate(IDS)]
    np_recs = [{**r, "user": np.str_(r["user"]), "answer": np.str_(r["answer"]),
                "report": {k: np.asarray(v) for k, v in r["report"].items()}} for r in recs]
    got = read_reports(np_recs, spec, users=IDS)
    plain = read_reports(recs, spec, users=IDS)
    assert len(got) == 3 and not got.refused and not got.again
    for name in plain.reports:
        np.testing.assert_array_equal(got.reports[name], plain.reports[name])
    # the same answers: a batch of the plain records after the numpy ones is all resends
    G, _ = received_graph(features=got, node_ids=IDS)
    G, _ = received_graph(features=plain, node_ids=IDS, population=G)
    assert G.ledger.spent(G.node_keys).tolist() == [2.0] * 3


def test_numpy_values_are_validated_as_their_plain_values(sy):
    rec = Device("a").answer(sy, 1)
    bad = [dict(rec, report={"y": np.bool_(True)}), dict(rec, report={"y": np.int64(7)})]
    got = read_reports(bad, sy, users=IDS)
    assert got.refused == {"malformed": 1, "out of domain": 1}


# ------------------------------------------------------------ budget refusals
def test_a_budget_refusal_states_what_the_whole_call_charged():
    sx = collection_spec(HDSMechanism(2.0, k=2, feature_range=(0, 1)), n_features=4)
    sy = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))
    X = np.eye(4)[:3]
    rx = [Device(u).answer(sx, X[i]) for i, u in enumerate(IDS)] + [Device("a").answer(sx, X[0])]
    ry = [Device(u).answer(sy, 1) for u in IDS]
    with pytest.raises(BudgetExceededError) as refused:
        received_graph(features=read_reports(rx, sx, users=IDS),
                       labels=read_reports(ry, sy, users=IDS), node_ids=IDS, budget=3.5)
    total = _spent(refused.value.population, "a")
    assert total == 5.0   # the labels were charged too: they were received
    message = str(refused.value)
    assert f"up to epsilon={total:.4g} in all" in message
    assert sx.describe() in message and sy.describe() in message


# ------------------------------------------------------------ membership
def test_a_held_answer_is_charged_when_its_user_joins_a_graph_built_by_hand(sy):
    import scipy.sparse as sp

    from skldp import GraphData
    G1, _ = received_graph(labels=read_reports(_base(sy) + [Device("late").answer(sy, 1)],
                                               sy, users=IDS), node_ids=IDS)
    X = np.zeros((4, 2))
    G = GraphData(X, sp.csr_array(np.ones((4, 4)) - np.eye(4)), node_ids=LATE, population=G1)
    assert _spent(G.population, "late") == 1.0   # as a full re-read with "late" charges
    GraphData(X, node_ids=LATE, population=G1)   # joined once: charged once
    assert _spent(G.population, "late") == 1.0


def test_an_answer_of_a_node_of_an_earlier_graph_read_with_a_stale_directory_is_charged(sy):
    G1, _ = received_graph(labels=read_reports(_base(sy), sy, users=LATE), node_ids=LATE)
    assert _spent(G1.population, "late") == 0.0   # a node, nothing sent yet
    late = Device("late").answer(sy, 1)
    received_graph(labels=read_reports([late], sy, users=IDS), node_ids=IDS, population=G1)
    full, _ = received_graph(labels=read_reports(_base(sy) + [late], sy, users=LATE),
                             node_ids=LATE)
    assert _spent(G1.population, "late") == _spent(full.population, "late") == 1.0


def test_members_survive_a_pickle_and_travel_through_the_journal(sy):
    from skldp import GraphData
    G0, _ = received_graph(labels=read_reports(_base(sy), sy, users=IDS), node_ids=IDS)
    P = pickle.loads(pickle.dumps(G0.population))   # a copy (a worker): reads the journal
    GraphData(np.zeros((4, 2)), node_ids=LATE, population=G0)   # "late" joins the original
    late = Device("late").answer(sy, 1)
    received_graph(labels=read_reports([late], sy, users=IDS), node_ids=IDS, population=P)
    assert _spent(P, "late") == 1.0   # the copy knows "late" is one of its users
    assert _spent(G0.population, "late") == 1.0
    Q = pickle.loads(pickle.dumps(G0.population))
    assert np.isin(ids_to_keys(np.asarray(["late"], dtype=object)), Q._members).all()


def test_forged_answers_of_a_removed_user_do_not_block_the_graph_of_the_others(sy):
    import secrets
    recs = _base(sy)
    G1, _ = received_graph(labels=read_reports(recs, sy, users=IDS), node_ids=IDS, budget=3.0)
    forged = [dict(recs[0], user="c", answer=secrets.token_hex(8)) for _ in range(5)]
    with pytest.warns(UserWarning, match=r"\('c'\) sent 5 answer\(s\).*not users of this graph"):
        G2, _ = received_graph(labels=read_reports(forged, sy, users=IDS[:2]),
                               node_ids=IDS[:2], population=G1)
    assert list(G2.node_ids) == IDS[:2]
    assert _spent(G2.population, "c") == 6.0   # charged all the same: they were sent


def test_a_features_only_refusal_names_the_held_collection_it_charged(sy):
    late = Device("late").answer(sy, 1)
    G1, _ = received_graph(labels=read_reports(_base(sy) + [late], sy, users=IDS), node_ids=IDS,
                           budget=1.5)
    sx = collection_spec(HDSMechanism(1.0, k=2, feature_range=(0, 1)), n_features=4)
    rx = [Device(u).answer(sx, np.eye(4)[i]) for i, u in enumerate(LATE)]
    with pytest.raises(BudgetExceededError) as refused:
        received_graph(features=read_reports(rx, sx, users=LATE), node_ids=LATE,
                       population=G1)
    charged = str(refused.value).split("charged (", 1)[1].split(", further answers")[0]
    assert sx.describe() in charged and sy.describe() in charged


def test_a_replayed_flood_is_journaled_once(sy):
    import os
    import secrets
    flood = [dict(_base(sy)[0], user=f"m{i}", answer=secrets.token_hex(8)) for i in range(50)]
    G, _ = received_graph(labels=read_reports(_base(sy), sy, users=IDS), node_ids=IDS)
    pickle.dumps(G.population)   # opens its journal
    sizes = []
    for _ in range(2):
        received_graph(labels=read_reports(flood, sy, users=IDS), node_ids=IDS, population=G)
        sizes.append(os.path.getsize(G.population._journal))
    assert sizes[0] == sizes[1]
    assert _spent(G.population, "m0") == 0.0   # never joined: charged nothing


def test_a_graph_that_fails_to_build_does_not_join_its_users(sy):
    # Before: the users joined (and their held answers were charged) before the checks.
    import scipy.sparse as sp

    from skldp import GraphData
    G, _ = received_graph(labels=read_reports(_base(sy) + [Device("x").answer(sy, 1)], sy,
                                              users=IDS), node_ids=IDS)
    A = sp.csr_array(np.triu(np.ones((4, 4)), 1))
    with pytest.raises(ValueError, match="not symmetric"):
        GraphData(np.zeros((4, 1)), A, node_ids=IDS + ["x"], population=G, symmetric=True)
    assert _spent(G.population, "x") == 0.0
    GraphData(np.zeros((4, 1)), node_ids=IDS + ["x"], population=G)   # valid: joins
    assert _spent(G.population, "x") == 1.0


def test_a_saved_graph_builds_graphs_of_new_users_when_nothing_is_held_for_them(sy, tmp_path):
    # Before: a copy saved by a process that has ended (cut off from its journal) refused
    # any GraphData naming a user it did not know as a member, nothing held for them.
    import subprocess
    import sys

    from skldp import GraphData
    path = tmp_path / "G.pkl"
    code = (
        "import pickle, warnings\n"
        "from skldp.device import Device\n"
        "from skldp.mechanisms import LabelRandomizedResponse\n"
        "from skldp.population import collection_spec, read_reports, received_graph\n"
        "warnings.simplefilter('ignore')\n"
        "ids = ['a', 'b', 'c']\n"
        "sy = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))\n"
        "G, y = received_graph(labels=read_reports([Device(u).answer(sy, 1) for u in ids],"
        " sy, users=ids), node_ids=ids)\n"
        f"pickle.dump(G, open({str(path)!r}, 'wb'))\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    with open(path, "rb") as fh:
        G = pickle.load(fh)
    assert not G.population._reachable
    H = GraphData(np.zeros((4, 1)), node_ids=IDS + ["d"], population=G)
    assert H.n_nodes == 4
