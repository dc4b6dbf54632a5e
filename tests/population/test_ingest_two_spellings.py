"""Two spellings of one user (the int 3 and the text "3" a relay writes, or two ids of one
key) are one user on every path into the ledger: read_reports without users=, with
senders=, received_graph with or without node_ids, a batch received into an existing
population, Parquet files. Each user is charged every answer it sent, never split into
two users charged one answer each."""

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


@pytest.mark.parametrize("node_ids", [None, list(range(5))])
def test_an_id_and_its_text_are_one_user_charged_twice(spec, node_ids):
    # read without users=: nodes [0, 1, 2, 3, 4, '3'], each charged once (printed 2, sent
    # 4); with node_ids=range(5) refused. As read with users=range(5): 3 sent two answers
    r = read_reports(_answered_twice(spec), spec)
    assert r.users == [0, 1, 2, 3, 4] and dict(r.again) == {3: 1}
    assert r.refused == {"duplicate": 1}
    G, y = received_graph(labels=r, node_ids=node_ids)
    assert G.node_ids.tolist() == [0, 1, 2, 3, 4] and y[3] == 1   # its first answer is kept
    assert _spent(G, [3]) == [2 * EPS] and privacy_report(G).local_epsilon == 2 * EPS
    G2, _ = received_graph(labels=read_reports(_answered_twice(spec), spec,
                                               users=range(5)))
    assert _spent(G2, [0, 3]) == _spent(G, [0, 3])


def test_the_text_first_is_the_user_and_a_resend_under_the_other_is_free(spec):
    a = dict(Device(3).answer(spec, 1), user="3")
    r = read_reports([a, dict(Device(3).answer(spec, 0), user=3)], spec)
    assert r.users == ["3"] and dict(r.again) == {"3": 1}
    assert _spent(received_graph(labels=r)[0], ["3"]) == [2 * EPS]
    # the same record again under the other spelling: a resend, free (two nodes before)
    r = read_reports([a, dict(a, user=3)], spec)
    assert r.users == ["3"] and not r.again
    assert _spent(received_graph(labels=r)[0], ["3"]) == [EPS]


def test_two_ids_of_one_key_are_one_user(spec):
    # -1 and 2**64 - 1 (one key) were two users of the read: received_graph refused them
    recs = [Device(-1).answer(spec, 1), dict(Device(-1).answer(spec, 0), user=2**64 - 1),
            Device(7).answer(spec, 1)]
    r = read_reports(recs, spec)
    assert r.users == [-1, 7] and dict(r.again) == {-1: 1}
    G, _ = received_graph(labels=r)
    assert _spent(G, [-1, 7]) == [2 * EPS, EPS]


def test_senders_without_users_name_one_user(spec):
    # authenticated senders 3 and "3" (a header read as text): two users before
    recs = _answered_twice(spec)
    r = read_reports(recs, spec, senders=[rec["user"] for rec in recs])
    assert r.users == [0, 1, 2, 3, 4] and dict(r.again) == {3: 1}
    assert _spent(received_graph(labels=r)[0], [3]) == [2 * EPS]


def test_refused_records_under_the_other_spelling_charge_the_user(spec):
    # a refused record (out of domain) of "3" after a kept one of 3: that user's answer
    recs = _answered_twice(spec)
    recs[-1] = dict(recs[-1], report={"y": 9})
    r = read_reports(recs, spec)
    assert r.users == [0, 1, 2, 3, 4] and dict(r.again) == {3: 1}
    G, _ = received_graph(labels=r)
    assert G.node_ids.tolist() == [0, 1, 2, 3, 4] and _spent(G, [3]) == [2 * EPS]


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
    # a population that knows both spellings keeps them apart
    G3, _ = received_graph(labels=read_reports([dict(Device(3).answer(spec, 1), user=3),
                                                Device("3").answer(spec, 1)], spec,
                                               users=[3, "3"]))
    G4, _ = received_graph(labels=read_reports([dict(Device("3").answer(spec, 0))], spec),
                           population=G3)
    assert G4.node_ids.tolist() == ["3"] and _spent(G4, [3, "3"]) == [EPS, 2 * EPS]


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_a_file_with_both_spellings_reads_as_one_user(spec, tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    path = tmp_path / f"reports{suffix}"
    write_reports(_answered_twice(spec), path)   # ints and text: one JSON column
    r = read_reports(path, spec)
    assert r.users == [0, 1, 2, 3, 4] and dict(r.again) == {3: 1}
    assert _spent(received_graph(labels=r)[0], [3]) == [2 * EPS]


def test_two_kept_spellings_are_refused_before_anything_is_charged(spec):
    # ReceivedReports built by hand (or read before) with 3 and "3" both kept: without
    # node_ids two nodes charged once each; with node_ids, the features were charged
    # before the labels were refused
    labels = ReceivedReports(spec, users=[3, "3"], reports={"y": np.array([1, 0])})
    with pytest.raises(ValueError, match="are one user of node_ids.*Nothing was charged"):
        received_graph(labels=labels)
    sx = collection_spec(HDSMechanism(1.0, k=1, feature_range=(0, 1)), n_features=2)
    G0, _ = received_graph(labels=read_reports([Device(9).answer(spec, 1)], spec))
    features = read_reports([Device(3).answer(sx, [0.5, 0.5])], sx, users=[3])
    with pytest.raises(ValueError, match="Nothing was charged"):
        received_graph(features=features, labels=labels, node_ids=[3], population=G0)
    assert _spent(G0, [3, "3", 9]) == [0.0, 0.0, EPS]
