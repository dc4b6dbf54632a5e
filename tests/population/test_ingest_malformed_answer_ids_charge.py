"""A record refused for its answer id (malformed) is charged to its user only when that user
may be charged: an enrolled user who is its authenticated sender. A forged record never
charges the user it names, and a stranger is never charged."""

import numpy as np

from skldp.mechanisms import LabelRandomizedResponse
from skldp.population import collection_spec, read_reports

USERS = ["a", "b"]


def _record(spec, user, answer="not-an-answer-id"):
    return {"collection": spec.id, "user": user, "answer": answer, "report": {"y": 1}}


def _spec():
    return collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))


def test_a_bad_answer_id_from_the_authenticated_user_is_charged():
    spec = _spec()
    got = read_reports([_record(spec, "a")], spec, users=USERS, senders=["a"])
    assert got.refused == {"malformed": 1} and got.again == {"a": 1}


def test_a_forged_record_with_a_bad_answer_id_charges_no_one():
    # "b" sends a record naming "a": refused, and "a" (the victim) is not charged for it
    spec = _spec()
    got = read_reports([_record(spec, "a")], spec, users=USERS, senders=["b"])
    assert got.refused == {"malformed": 1} and got.again == {}
    assert got.users == []


def test_a_bad_answer_id_from_a_stranger_charges_no_one():
    spec = _spec()
    got = read_reports([_record(spec, "mallory"), _record(spec, "a", "0" * 16)], spec,
                       users=USERS)
    assert got.refused == {"malformed": 1} and got.again == {}
    assert got.users == ["a"]
    assert np.array_equal(got.reports["y"], [1])


def test_a_user_id_read_as_a_float_is_charged_to_that_user():
    # user 0's second answer as {"user": 0.0} (a relay, a table with gaps) keys as user 0:
    # it was refused and charged to no one (audit lower bound 1.9 against the printed 1)
    spec = _spec()
    first = {"collection": spec.id, "user": 0, "answer": "0" * 16, "report": {"y": 1}}
    second = {"collection": spec.id, "user": 0.0, "answer": "1" * 16, "report": {"y": 2}}
    got = read_reports([first, second], spec, users=[0, 1])
    assert got.refused == {"malformed": 1} and got.again == {0: 1}
    for odd in (0.5, float("nan"), float("inf")):    # no user's id: charged to no one
        got = read_reports([first, dict(second, user=odd)], spec, users=[0, 1])
        assert got.refused == {"malformed": 1} and got.again == {}
    got = read_reports([first, dict(second, user=7.0)], spec, users=[0, 1])
    assert got.again == {}                           # 7 is no user of the collection


def test_a_user_id_in_the_other_type_names_that_user():
    # a relay writing ids as text sends user 0's answer as {"user": "0"}: it was refused as
    # an unknown user and charged to no one
    spec = _spec()
    first = {"collection": spec.id, "user": 0, "answer": "0" * 16, "report": {"y": 1}}
    second = dict(first, user="0", answer="1" * 16, report={"y": 2})
    got = read_reports([second], spec, users=[0, 1])
    assert got.users == [0] and got.refused == {} and got.again == {}
    got = read_reports([first, second], spec, users=[0, 1])      # a further answer
    assert got.refused == {"duplicate": 1} and got.again == {0: 1}
    got = read_reports([first, dict(first, user="0")], spec, users=[0, 1])   # a resend: free
    assert got.users == [0] and got.again == {}
    got = read_reports([dict(second, user="7")], spec, users=["a", 7])
    assert got.users == [7]
    got = read_reports([dict(second, user=7)], spec, users=["a", "7"])
    assert got.users == ["7"]
    for odd in ("00", "+0", "0.0", " 0", "0_0", "2", "-0", "\uff10"):   # not an id of users
        got = read_reports([first, dict(second, user=odd)], spec, users=[0, 1])
        assert got.refused == {"unknown user": 1} and got.again == {}
    got = read_reports([second], spec, users=[0, "0"])    # both are users: its own
    assert got.users == ["0"] and got.refused == {}
    # with senders=, a sender "0" that is no user of users sends the records of user 0
    # (read_reports' docstring), its record "0" too; a sender "2" names no user
    got = read_reports([second], spec, users=[0, 1], senders=["0"])
    assert got.users == [0] and got.refused == {}
    got = read_reports([dict(second, user="2")], spec, users=[0, 1], senders=["2"])
    assert got.users == [] and got.refused == {"unknown user": 1}
