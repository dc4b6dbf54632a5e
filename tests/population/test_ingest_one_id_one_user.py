"""One user id, one user: ingest finds a record's user, its sender and a graph's node by
their key (as the ledger and GraphData do), and refuses what names no user (booleans,
Decimal, missing ids, a string given for the list of users)."""

import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from skldp import GraphData
from skldp.device import Device, Directory
from skldp.device._random import ids_to_keys
from skldp.mechanisms import EdgeRR, LabelRandomizedResponse
from skldp.population import collection_spec, read_reports, received_graph


@pytest.fixture(scope="module")
def spec():
    return collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))


def _spent(G, ids):
    keys = GraphData(np.zeros((len(ids), 0)), node_ids=ids, population=G).node_keys
    return G.population.ledger.spent(keys).tolist()


def test_a_boolean_id_is_refused_everywhere(spec):
    # users=["a", True] took Device(1)'s record (1 == True) and charged the key of "True"
    with pytest.raises(TypeError, match="boolean True"):
        read_reports([Device(1).answer(spec, 1)], spec, users=["a", True])
    with pytest.raises(TypeError, match="boolean True"):
        read_reports([Device(1).answer(spec, 1)], spec, users=["a", 1], senders=[True])
    with pytest.raises(TypeError, match="boolean True"):
        received_graph(node_ids=["a", True])
    with pytest.raises(TypeError, match="boolean False"):
        GraphData(np.zeros((3, 0)), node_ids=[False, -1, 2**63 + 1])
    with pytest.raises(TypeError, match="boolean"):
        GraphData(np.zeros((2, 0)), node_ids=np.array([True, False]))


@pytest.mark.parametrize("odd", [Decimal("5"), Fraction(5), 5 + 0j])
def test_numbers_other_than_integers_and_floats_are_no_ids(spec, odd):
    # Decimal("5") == 5 was keyed as the text "5": Device(5)'s charge went to no node
    for make in (lambda: ids_to_keys(np.array([odd, 7], dtype=object)),
                 lambda: GraphData(np.zeros((2, 0)), node_ids=[odd, 7]),
                 lambda: read_reports([], spec, users=[odd, 7]),
                 lambda: Directory([odd, 7])):
        with pytest.raises(TypeError, match="neither an integer nor a float"):
            make()


def test_one_string_is_no_list_of_users(spec):
    # users="u17" was read as the users "u", "1" and "7"
    with pytest.raises(TypeError, match="single str"):
        read_reports([], spec, users="u17")
    with pytest.raises(TypeError, match="single str"):
        Directory("u17")


@pytest.mark.parametrize("missing", [None, float("nan"), np.nan])
def test_a_missing_id_is_refused_in_directories_and_neighbour_lists(missing):
    # a NaN neighbour named the text user "nan"; Directory([None, 1]) was accepted
    with pytest.raises(ValueError, match="missing id"):
        Directory([missing, 1])
    ids = [1, 5, 7]
    se = collection_spec(EdgeRR(1.0), node_ids=ids)
    with pytest.raises(ValueError, match="the neighbour list has a missing id"):
        Device(5).answer(se, [7, missing], directory=ids)
    pd = pytest.importorskip("pandas")
    with pytest.raises(ValueError, match="missing id"):
        Directory(np.array([pd.NA, 1], dtype=object))


def test_the_text_of_an_integer_id_is_that_user_in_every_branch(spec):
    warnings.simplefilter("ignore")
    good = [Device(5).answer(spec, 0), Device(7).answer(spec, 1)]
    bad = dict(Device(5).answer(spec, 1), user="5", report={"y": 99})   # relayed as text
    # read without users=: the refused record of "5" was charged to the key of "5"
    G, _ = received_graph(labels=read_reports(good + [bad], spec), node_ids=[5, 7])
    assert _spent(G, [5, 7]) == [2.0, 1.0]
    # a record id read as a float (5.0) for the text user "5" was held under the key 5
    good = [Device("5").answer(spec, 1), Device("7").answer(spec, 0)]
    rr = read_reports(good + [dict(Device(5).answer(spec, 1), user=5.0)], spec,
                      users=["5", "7"])
    G, _ = received_graph(labels=rr, node_ids=["5", "7"])
    assert _spent(G, ["5", "7"]) == [2.0, 1.0]


def test_two_kept_ids_of_one_node_are_refused(spec):
    # read without users=, 5 and "5" are both kept as sent: one node of node_ids=[5, 7]
    # with two kept answers (tests/population/test_ingest_two_spellings.py)
    warnings.simplefilter("ignore")
    recs = [Device(5).answer(spec, 0), dict(Device(6).answer(spec, 1), user="5")]
    with pytest.raises(ValueError, match="are one user of node_ids"):
        received_graph(labels=read_reports(recs, spec), node_ids=[5, 7])


def test_text_senders_of_integer_users_are_those_users(spec):
    # every record was refused as a "sender mismatch" (5 != "5") and held under "5"
    recs = [Device(5).answer(spec, 1), Device(7).answer(spec, 0)]
    rr = read_reports(recs, spec, users=[5, 7], senders=["5", "7"])
    assert rr.users == [5, 7] and rr.refused == {}
    G, _ = received_graph(labels=rr, node_ids=[5, 7])
    assert _spent(G, [5, 7]) == [1.0, 1.0]
    # a sender that is a user of its own is not retyped: another user's record is refused
    rr = read_reports(recs[:1], spec, users=[5, "5"], senders=["5"])
    assert rr.refused == {"sender mismatch": 1}


def test_a_signed_and_an_unsigned_id_of_one_key_are_one_user():
    # the device of 2**64 - 1 (the server's -1, one key) was refused as an unknown user
    server_ids = np.array([-1, 7, 9], dtype=np.int64)
    se = collection_spec(EdgeRR(4.0), node_ids=server_ids)
    app_ids = [2**64 - 1, 7, 9]
    nbrs = {2**64 - 1: [7], 7: [2**64 - 1, 9], 9: [7]}
    recs = [Device(u).answer(se, nbrs[u], directory=app_ids) for u in app_ids]
    rr = read_reports(recs, se, users=server_ids)
    assert rr.refused == {} and rr.users == [-1, 7, 9]
    G, _ = received_graph(edges=rr, node_ids=server_ids)
    assert G.population.ledger.spent(G.node_keys).tolist() == [4.0, 4.0, 4.0]


@pytest.mark.parametrize("first, second, other", [
    ([2**53], [2**53 + 1], True),        # read as float64: one number
    ([-1], [2**64 - 1], False),          # one key: the same neighbour
])
def test_the_device_compares_neighbours_by_key(first, second, other):
    from skldp.device import AlreadyAnswered
    ids = [-1, 5, 2**53, 2**53 + 1]
    se = collection_spec(EdgeRR(1.0), node_ids=ids)
    device = Device(5)
    device.answer(se, first, directory=ids)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        device.answer(se, second, directory=ids)
    assert any(issubclass(w.category, AlreadyAnswered) for w in caught) == other


def test_a_directory_may_be_a_set():
    # documented "in any order" (its keys are sorted) but refused as a set of rows
    assert Directory({7, 1, 5}).keys.tolist() == [1, 5, 7]
    se = collection_spec(EdgeRR(1.0), node_ids=[1, 5, 7])
    assert Device(5).answer(se, [7], directory={1, 5, 7})["user"] == 5


def test_text_records_of_int_users_are_found_without_keying(spec, monkeypatch):
    # _Users.get keyed every text record twice: 50k of them 0.58 -> 1.5 s
    import skldp.population._ingest as ingest
    recs = [dict(Device(u).answer(spec, 1), user=str(u)) for u in (1, 5, 7)]
    monkeypatch.setattr(ingest, "_key", lambda u: pytest.fail(f"keyed {u!r}"))
    assert sorted(read_reports(recs, spec, users=[1, 5, 7]).users) == [1, 5, 7]


def test_a_refused_answer_resent_under_both_names_is_charged_once(spec):
    # read without users=, 5 and "5" were merged into one user by _charge_again, but the
    # resend was counted once per name: one refused answer charged twice (3 eps for 2)
    kept = Device(5).answer(spec, 0)
    bad = dict(Device(5).answer(spec, 1), report={"y": 99})   # refused: out of domain
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = read_reports([kept, bad, dict(bad, user="5")], spec)
        G, _ = received_graph(labels=r, node_ids=[5])
    assert _spent(G, [5]) == [2 * spec.epsilon]


def test_a_text_sender_charges_its_int_user_for_what_it_sent(spec):
    # a sender "5" (a header read as text) of int user 5: a record claiming another user,
    # or one whose id is lost, was held under the text "5" and never charged to user 5
    a1, a5, a7 = (Device(u).answer(spec, 1) for u in (1, 5, 7))
    forged = dict(Device(5).answer(spec, 0), user=7)
    cut = dict(Device(5).answer(spec, 0), user=None)
    for extra in (forged, cut):
        r = read_reports([a1, a5, a7, extra], spec, users=[1, 5, 7], senders=[1, "5", 7, "5"])
        assert dict(r.again) == {5: 1}
        G, _ = received_graph(labels=r, node_ids=[1, 5, 7])
        assert _spent(G, [5]) == [2 * spec.epsilon]


def test_a_text_sender_and_a_text_record_name_the_int_user(spec):
    # header and record both written "5" for int user 5: refused as unknown and held
    recs = [Device(1).answer(spec, 1), dict(Device(5).answer(spec, 0), user="5")]
    r = read_reports(recs, spec, users=[1, 5, 7], senders=[1, "5"])
    assert r.users == [1, 5] and not r.refused
    G, _ = received_graph(labels=r, node_ids=[1, 5, 7])
    assert _spent(G, [5]) == [spec.epsilon]
    # but not a text record whose sender names no user, even retyped
    r = read_reports([dict(Device(4).answer(spec, 0), user="4")], spec, users=[1, 5, 7],
                     senders=["4"])
    assert dict(r.refused) == {"unknown user": 1}


def test_a_text_id_held_is_charged_to_the_int_node_of_the_same_call(spec):
    # "5" held (read with users=[1, 7]) was kept under the text's key: node 5 of the
    # graph received in the same call was never charged for it
    good = [Device(1).answer(spec, 1), Device(7).answer(spec, 1)]
    rec = read_reports(good + [dict(Device(5).answer(spec, 0), user="5")], spec,
                       users=[1, 7])
    G, _ = received_graph(labels=rec, node_ids=[1, 5, 7])
    assert _spent(G, [5]) == [spec.epsilon]


def _held_five(spec):
    # user 5's answer relayed as text "5", read with users=[1, 7]: held; graph of 1 and 7
    good = [Device(1).answer(spec, 1), Device(7).answer(spec, 1)]
    rec = read_reports(good + [dict(Device(5).answer(spec, 0), user="5")], spec,
                       users=[1, 7])
    G, _ = received_graph(labels=rec, node_ids=[1, 7])
    return G


def test_a_text_id_held_is_charged_once_when_the_int_user_joins_later(spec):
    # "5" was held under the text's key only: the int user 5 joining later was never charged
    G = _held_five(spec)
    G2 = GraphData(np.zeros((3, 0)), node_ids=[1, 5, 7], population=G)
    assert _spent(G2, [5]) == [spec.epsilon]
    # then the text "5" joining alone is refused (it may be 5 again), nothing charged
    with pytest.raises(ValueError, match="other type, e.g. '5'"):
        GraphData(np.zeros((1, 0)), node_ids=["5"], population=G)
    assert _spent(G2, ["5", 5]) == [0.0, spec.epsilon]
    # a new answer of 5 is charged on top of the held one
    later = read_reports([Device(5).answer(spec, 1)], spec, users=[1, 5, 7])
    G4, _ = received_graph(labels=later, node_ids=[1, 5, 7], population=G)
    assert _spent(G4, [5]) == [2 * spec.epsilon]
    # both joining at once: charged once, to its own user "5" first
    G = _held_five(spec)
    G2 = GraphData(np.zeros((2, 0)), node_ids=["5", 5], population=G)
    assert _spent(G2, ["5", 5]) == [spec.epsilon, 0.0]
    G3 = GraphData(np.zeros((1, 0)), node_ids=[5], population=G)
    assert _spent(G3, ["5", 5]) == [spec.epsilon, 0.0]
