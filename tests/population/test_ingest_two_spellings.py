"""Two spellings of one id (the int 3 and the text "3" a relay writes, or two ids of one
key). read_reports without users= keeps each record's id as sent; received_graph decides:
with node_ids the caller names the users; without, an id its population knows is that user,
one it knows only by the other spelling is that user, and two spellings it does not tell
apart may be one person's answers: refused before anything is charged (read them again with
users=, or pass node_ids). A user is never split into two charged one answer each, and two
users the population holds apart are never merged."""

import warnings

import numpy as np
import pytest

from skldp.accounting import privacy_report
from skldp.device import Device
from skldp.device._random import ids_to_keys
from skldp.mechanisms import HDSMechanism, LabelRandomizedResponse
from skldp.population import (
    ReceivedReports,
    collection_spec,
    read_reports,
    received_graph,
    write_reports,
)

EPS = 2.0
ONE = "two ids of one user.*Nothing was charged"


@pytest.fixture(scope="module")
def spec():
    return collection_spec(LabelRandomizedResponse(EPS, classes=[0, 1]))


@pytest.fixture(autouse=True)
def _no_users_warning():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="read_reports of collection")
        yield


def _spent(G, ids):
    keys = ids_to_keys(np.array(ids, dtype=object))
    return G.population.ledger.spent(keys).tolist()


def _answered_twice(spec, second="3"):
    """Users 0..4 answer; user 3's device lost its state and answers again, its record
    relayed with the id ``second``."""
    recs = [Device(u).answer(spec, 1) for u in range(5)]
    recs.append(dict(Device(3).answer(spec, 0), user=second))
    return recs


def _apart(spec):
    """A population that holds 3 and "3" apart (its directory had both)."""
    G, _ = received_graph(labels=read_reports([Device(3).answer(spec, 1),
                                               Device("3").answer(spec, 1)], spec,
                                              users=[3, "3"]))
    return G


@pytest.mark.parametrize("node_ids", [None, list(range(5))])
def test_an_id_and_its_text_no_population_knows_are_refused(spec, node_ids):
    # read_reports merged "3" into 3 at read time (and, before, two nodes charged one
    # answer each: printed 2, sent 4); a population that knows neither cannot tell
    recs = _answered_twice(spec)
    r = read_reports(recs, spec)
    assert r.users == [0, 1, 2, 3, 4, "3"] and not r.again   # each id as sent
    G0, _ = received_graph(labels=read_reports([Device(9).answer(spec, 1)], spec))
    with pytest.raises(ValueError, match=ONE if node_ids is None else "one user of node_ids"):
        received_graph(labels=r, node_ids=node_ids, population=G0)
    assert _spent(G0, [3, "3", 9]) == [0.0, 0.0, EPS]
    # read again with the directory: 3 sent two answers, its first kept
    G, y = received_graph(labels=read_reports(recs, spec, users=range(5)))
    assert _spent(G, [0, 3]) == [EPS, 2 * EPS] and privacy_report(G).local_epsilon == 2 * EPS
    assert y[3] == recs[3]["report"]["y"]   # (classes [0, 1]: a report is its label)


@pytest.mark.parametrize("suffix", ["list", ".jsonl", ".parquet"])
def test_every_path_refuses_them(spec, tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    recs = _answered_twice(spec)
    source = recs
    if suffix != "list":
        source = tmp_path / f"reports{suffix}"
        write_reports(recs, source)   # ints and text: one JSON column
    with pytest.raises(ValueError, match=ONE):
        received_graph(labels=read_reports(source, spec))
    # authenticated senders 3 and "3" (a header read as text): the same
    with pytest.raises(ValueError, match=ONE):
        received_graph(labels=read_reports(recs, spec, senders=[x["user"] for x in recs]))
    # a refused record (out of domain) of "3": an answer of that id all the same
    recs[-1] = dict(recs[-1], report={"y": 9})
    r = read_reports(recs, spec)
    assert dict(r.again) == {"3": 1}
    with pytest.raises(ValueError, match=ONE):
        received_graph(labels=r)


def test_two_ids_of_one_key_are_refused_unless_the_directory_names_them(spec):
    recs = [Device(-1).answer(spec, 1), dict(Device(-1).answer(spec, 0), user=2**64 - 1),
            Device(7).answer(spec, 1)]
    r = read_reports(recs, spec)
    assert r.users == [-1, 2**64 - 1, 7]
    with pytest.raises(ValueError, match=ONE):
        received_graph(labels=r)
    G, _ = received_graph(labels=read_reports(recs, spec, users=[-1, 7]))
    assert _spent(G, [-1, 7]) == [2 * EPS, EPS]


def test_a_population_that_holds_them_apart_charges_each_its_own(spec):
    # a later batch with both, read without users=, was merged at read time: 3 charged
    # "3"'s answer (printed max below what "3" spent)
    G = _apart(spec)
    G, _ = received_graph(labels=read_reports([Device("3").answer(spec, 1)], spec,
                                              users=[3, "3"]), population=G)
    recs = [Device(3).answer(spec, 1), Device("3").answer(spec, 0)]
    for node_ids in (None, [3, "3"]):
        G, y = received_graph(labels=read_reports(recs, spec), population=G,
                              node_ids=node_ids)
        assert G.node_ids.tolist() == [3, "3"]
        assert y.tolist() == [rec["report"]["y"] for rec in recs]   # "3"'s label kept
        # (the second time a resend: free)
        assert _spent(G, [3, "3"]) == [2 * EPS, 3 * EPS]
        assert privacy_report(G).local_epsilon == 3 * EPS


def test_an_id_it_knows_is_never_the_node_of_its_other_spelling(spec):
    # labels from "3", features from 3 only: "3"'s label was charged to 3 (a node by
    # retyping), though the population holds "3" apart
    sx = collection_spec(HDSMechanism(1.0, k=1, feature_range=(0, 1)), n_features=2)
    G0 = _apart(spec)
    features = read_reports([Device(3).answer(sx, [0.5, 0.5])], sx)
    labels = read_reports([Device("3").answer(spec, 1)], spec)
    for node_ids in (None, [3]):
        with pytest.raises(ValueError, match="'3' sent a report.*not in node_ids"):
            received_graph(features=features, labels=labels, node_ids=node_ids,
                           population=G0)
    assert _spent(G0, [3, "3"]) == [EPS, EPS]
    # a further answer of "3" with 3's kept one: charged to "3"
    recs = [Device(3).answer(spec, 1), dict(Device("3").answer(spec, 1), report={"y": 9})]
    G, _ = received_graph(labels=read_reports(recs, spec), population=G0)
    assert G.node_ids.tolist() == [3] and _spent(G, [3, "3"]) == [2 * EPS, 2 * EPS]


def test_a_later_batch_in_the_other_spelling_is_the_same_user(spec):
    # batch 2 relayed as text, read without users= and node_ids: "3" became a new user of
    # the population, charged once, though 3 had answered in batch 1 (printed 2, sent 4)
    G1, _ = received_graph(labels=read_reports([Device(u).answer(spec, 1)
                                                for u in range(5)], spec))
    again = [dict(Device(3).answer(spec, 0), user="3"), dict(Device(9).answer(spec, 0),
                                                             user="9")]
    G2, _ = received_graph(labels=read_reports(again, spec), population=G1)
    assert G2.node_ids.tolist() == [3, "9"]   # 9 is new: its id as sent
    assert _spent(G2, [3, "3", "9"]) == [2 * EPS, 0.0, EPS]
    assert privacy_report(G2).local_epsilon == 2 * EPS
    # both spellings in batch 3: one user with two kept answers, refused; a kept answer
    # and a refused one (out of domain) are two answers of 3
    both = [dict(Device(3).answer(spec, 1), user="3"), Device(3).answer(spec, 0)]
    with pytest.raises(ValueError, match=ONE):
        received_graph(labels=read_reports(both, spec), population=G2)
    both[1] = dict(both[1], report={"y": 9})
    G3, _ = received_graph(labels=read_reports(both, spec), population=G2)
    assert G3.node_ids.tolist() == [3] and _spent(G3, [3, "3"]) == [4 * EPS, 0.0]


def test_a_refusal_charges_nothing_and_sets_no_budget(spec):
    # ReceivedReports built by hand with 3 and "3" both kept; with node_ids, the features
    # were charged before the labels were refused; a refused call set the budget
    labels = ReceivedReports(spec, users=[3, "3"], reports={"y": np.array([1, 0])})
    G0, _ = received_graph(labels=read_reports([Device(9).answer(spec, 1)], spec))
    with pytest.raises(ValueError, match="Nothing was charged"):
        received_graph(labels=labels, population=G0, budget=3 * EPS)
    with pytest.raises(ValueError, match="needs node_ids"):
        received_graph(population=G0, budget=3 * EPS)
    assert G0.population.budget is None
    sx = collection_spec(HDSMechanism(1.0, k=1, feature_range=(0, 1)), n_features=2)
    features = read_reports([Device(3).answer(sx, [0.5, 0.5])], sx, users=[3])
    with pytest.raises(ValueError, match="Nothing was charged"):
        received_graph(features=features, labels=labels, node_ids=[3], population=G0)
    assert _spent(G0, [3, "3", 9]) == [0.0, 0.0, EPS] and G0.population.budget is None


def test_a_directory_that_lists_both_names_the_one_that_answered(spec):
    # the population knows "3" only; a directory [3, "3"] where 3 alone answers: 3's answer
    # was charged to node "3" (the ids that answered were checked, not the directory's)
    G0, _ = received_graph(labels=read_reports([Device("3").answer(spec, 1)], spec,
                                               users=["3"]))
    r = read_reports([Device(3).answer(spec, 1)], spec, users=[3, "3"])
    G, _ = received_graph(labels=r, population=G0)
    assert G.node_ids.tolist() == [3] and _spent(G, [3, "3"]) == [EPS, EPS]


def test_an_id_retyped_at_read_is_the_user_the_population_knows(spec):
    # read_reports(users=["3"]) retyped a record of 3 to "3": received_graph charged "3" for
    # what 3 sent (printed 1 x EPS for 3, who sent 2 x EPS)
    G0, _ = received_graph(labels=read_reports([Device(3).answer(spec, 1)], spec, users=[3]))
    r = read_reports([Device(3).answer(spec, 0)], spec, users=["3"])
    assert r.users == ["3"]   # (the directory's id: a relay's text is its user's)
    # (node "3" is new where 3 is known: maybe one person, refused before the rows)
    with pytest.raises(ValueError, match="other type, e.g. '3'.*Nothing was charged"):
        received_graph(labels=r, node_ids=["3"], population=G0)
    assert _spent(G0, [3, "3"]) == [EPS, 0.0]
    G, _ = received_graph(labels=r, population=G0)
    assert G.node_ids.tolist() == [3] and _spent(G, [3, "3"]) == [2 * EPS, 0.0]
    # a population that holds 3 and "3" apart; both answer a directory of "3" (3 first)
    G0 = _apart(spec)
    r = read_reports([Device(3).answer(spec, 1), Device("3").answer(spec, 0)], spec,
                     users=["3"])
    assert r.users == ["3"] and dict(r.again) == {"3": 1}
    G, _ = received_graph(labels=r, population=G0)
    assert _spent(G, [3, "3"]) == [2 * EPS, 2 * EPS]
    assert privacy_report(G).local_epsilon == 2 * EPS


def test_two_spellings_are_checked_across_the_parts_of_a_call(spec):
    # features under 3 and labels under "3" (each part one spelling) were one node: if they
    # are two persons and a later call names both, one is charged the other's answer
    sx = collection_spec(HDSMechanism(1.0, k=1, feature_range=(0, 1)), n_features=2)
    features = read_reports([Device(3).answer(sx, [0.5, 0.5])], sx)
    labels = read_reports([Device("3").answer(spec, 1)], spec)
    G0, _ = received_graph(labels=read_reports([Device(9).answer(spec, 1)], spec))
    with pytest.raises(ValueError, match=ONE):
        received_graph(features=features, labels=labels, population=G0)
    assert _spent(G0, [3, "3", 9]) == [0.0, 0.0, EPS]
    # the caller names the user: one node, each answer charged to it
    G, _ = received_graph(features=features, labels=labels, node_ids=[3], population=G0)
    assert _spent(G, [3, "3"]) == [1.0 + EPS, 0.0]


@pytest.mark.parametrize("bad", [None, float("nan"), True, 3.5])
def test_further_answers_of_no_user_id_are_refused_before_any_charge(spec, bad):
    # a hand-built again={None: 1} with node_ids: both users charged, then refused
    from collections import Counter
    r = ReceivedReports(spec, users=[1, 2], reports={"y": np.array([1, 0])},
                        again=Counter({bad: 1}))
    G0, _ = received_graph(labels=read_reports([Device(9).answer(spec, 1)], spec))
    with pytest.raises(ValueError, match="no user id.*Nothing was charged"):
        received_graph(labels=r, node_ids=[1, 2], population=G0)
    assert _spent(G0, [1, 2, 9]) == [0.0, 0.0, EPS]


def test_reports_keep_only_what_the_directory_tells_apart(spec):
    # each ReceivedReports kept read_reports' whole directory: a 24 MB pickle for 1M users
    import pickle
    n = 200_000
    r = read_reports([Device(u).answer(spec, 1) for u in range(3)], spec, users=range(n))
    assert len(pickle.dumps(r)) < n   # (the directory alone is several bytes a user)
    # a directory that lists 3 and "3" still names each as it lists it
    G0, _ = received_graph(labels=read_reports([Device("3").answer(spec, 1)], spec,
                                               users=["3"]))
    r = pickle.loads(pickle.dumps(read_reports([Device(3).answer(spec, 1)], spec,
                                               users=[3, "3", *range(4, n)])))
    G, _ = received_graph(labels=r, population=G0)
    assert G.node_ids.tolist() == [3] and _spent(G, [3, "3"]) == [EPS, EPS]
    # one pickled before the directory was kept (a bool) is read as before
    r._directory = True
    G, _ = received_graph(labels=r)
    assert G.node_ids.tolist() == [3]


def test_an_id_the_directory_lists_apart_is_never_the_node_of_its_other_spelling(spec):
    # users=[3, "3"], "3" alone answers, node_ids=[3]: "3"'s answer was charged to node 3
    r = read_reports([Device("3").answer(spec, 1)], spec, users=[3, "3"])
    G0, _ = received_graph(labels=read_reports([Device(9).answer(spec, 1)], spec))
    with pytest.raises(ValueError, match="user '3' sent a report.*Nothing was charged"):
        received_graph(labels=r, node_ids=[3], population=G0)
    assert _spent(G0, [3, "3", 9]) == [0.0, 0.0, EPS]
    G, _ = received_graph(labels=r, node_ids=[3, "3"], population=G0)
    assert _spent(G, [3, "3"]) == [0.0, EPS]


def test_an_id_retyped_at_read_is_the_node_that_names_it_as_sent(spec):
    # users=[3] retyped "3"'s record to 3; node_ids=[3, "3"] (two users): 3 was charged
    r = read_reports([Device("3").answer(spec, 1)], spec, users=[3])
    assert r.users == [3]
    G, _ = received_graph(labels=r, node_ids=[3, "3"])
    assert _spent(G, [3, "3"]) == [0.0, EPS]
    G, _ = received_graph(labels=r, node_ids=[3])   # (a relay's text: the directory's user)
    assert _spent(G, [3, "3"]) == [EPS, 0.0]


def test_a_directory_that_lists_a_key_and_its_text_names_each_by_key(spec):
    # users=[-1, "18446744073709551615"]: two users, -1 of the key 2**64 - 1 and that key's
    # text; both answering were refused as two ids of one user (-1 was checked by its own
    # text "-1", which the directory does not list)
    text = str(2**64 - 1)
    recs = [Device(-1).answer(spec, 1), Device(text).answer(spec, 0)]
    G, y = received_graph(labels=read_reports(recs, spec, users=[-1, text]))
    assert G.node_ids.tolist() == [-1, text]
    assert y.tolist() == [rec["report"]["y"] for rec in recs]   # (each its own label)
    assert _spent(G, [-1, text]) == [EPS, EPS]
    # a record of 2**64 - 1 (the key of -1) read without users= is that user, not the text's
    sx = collection_spec(HDSMechanism(1.0, k=1, feature_range=(0, 1)), n_features=2)
    features = read_reports([Device(2**64 - 1).answer(sx, [0.5, 0.5]),
                             Device(text).answer(sx, [0.5, 0.5])], sx)
    labels = read_reports(recs, spec, users=[-1, text])
    G, _ = received_graph(features=features, labels=labels)
    assert G.node_ids.tolist() == [2**64 - 1, text]
    assert _spent(G, [-1, text]) == [1.0 + EPS, 1.0 + EPS]
    # but two spellings no directory tells apart are still refused
    with pytest.raises(ValueError, match=ONE):
        received_graph(labels=read_reports(recs, spec))


def test_further_answers_of_an_id_are_charged_to_the_user_its_other_spelling_names(spec):
    # the population knows "3"; 3 (no node, unknown) sent two answers, both refused: they
    # were charged to 3's own key while naming and held answers use "3" (printed 2 x EPS
    # for a person who, as "3" and 3, sent 3 x EPS)
    G0, _ = received_graph(labels=read_reports([Device(str(u)).answer(spec, 1)
                                                for u in range(5)], spec))
    later = collection_spec(LabelRandomizedResponse(EPS, classes=[0, 1]))
    recs = [Device(str(u)).answer(later, 1) for u in (0, 1, 2, 4)]
    for y in (5, 7):   # out of the domain: refused, and charged (they were sent)
        rec = Device(3).answer(later, 1)
        del rec["answer"]
        recs.append(dict(rec, report={"y": y}))
    r = read_reports(recs, later)
    assert dict(r.again) == {3: 2} and r.users == ["0", "1", "2", "4"]
    G, _ = received_graph(labels=r, node_ids=["0", "1", "2", "4"], population=G0)
    assert _spent(G, [3, "3"]) == [0.0, 3 * EPS]
    assert privacy_report(G).local_epsilon == 3 * EPS
