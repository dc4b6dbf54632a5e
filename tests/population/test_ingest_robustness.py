"""Ingestion that charges every further answer (whatever its report holds), reads an edge
collection against its directory, and refuses one bad report without losing the batch."""

import json
import os

import numpy as np
import pytest
import scipy.sparse as sp

from skldp.accounting import privacy_report
from skldp.device import Device, Directory
from skldp.device._random import ids_to_keys
from skldp.mechanisms import EdgeRR, LabelRandomizedResponse, SetValuedMechanism
from skldp.population import collection_spec, read_reports, received_graph, write_reports


def _lost_state_fleet(spec, ids, y, tmp_path):
    """Every device answers, loses its state (an app reinstalled) and answers again."""
    recs = []
    for i, u in enumerate(ids):
        path = str(tmp_path / f"dev_{i}.json")
        recs.append(Device(u, path=path).answer(spec, int(y[i])))
        os.remove(path)
        recs.append(Device(u, path=path).answer(spec, int(y[i])))
        os.remove(path)
    return recs


def test_two_answers_that_coincide_are_both_charged(tmp_path):
    # eps = 8 and two classes: the two independent answers are nearly always equal; each
    # still costs eps (a mechanism's cost does not depend on its output)
    ids = [f"u{i}" for i in range(60)]
    spec = collection_spec(LabelRandomizedResponse(8.0, classes=[0, 1]))
    y = np.arange(60) % 2
    recs = _lost_state_fleet(spec, ids, y, tmp_path)
    got = read_reports(recs, spec, users=ids)
    assert got.refused == {"duplicate": 60} and got.again == {u: 1 for u in ids}
    G, _ = received_graph(labels=got, node_ids=ids)
    assert np.all(G.ledger.spent(G.node_keys) == 16.0)
    assert privacy_report(G).epsilon_for("labels") == 16.0


def test_a_resend_is_free_and_every_other_further_record_is_charged():
    ids = ["a", "b", "c", "d"]
    spec = collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1, 2]))
    devices = {u: Device(u) for u in ids}
    recs = [devices[u].answer(spec, 1) for u in ids]
    a, b, c, d = recs
    further = [
        devices["a"].answer(spec, 1),                  # a resend (the device's own): free
        dict(a),                                       # the same record relayed again: free
        dict(b, report={"y": (b["report"]["y"] + 1) % 3}),   # same id, other report
        dict(c, answer="0123456789abcdef"),            # same report, another answer id
        {k: v for k, v in d.items() if k != "answer"},  # no answer id: cannot be told apart
        {k: v for k, v in d.items() if k != "answer"},  # ... each one is charged
    ]
    got = read_reports(recs + further, spec, users=ids)
    assert got.refused == {"duplicate": 6}
    assert got.again == {"b": 1, "c": 1, "d": 2}
    # a resend of a further answer is free too (it repeats that record's id and report)
    got = read_reports(recs + further[3:4] * 3, spec, users=ids)
    assert got.again == {"c": 1}
    # records of older devices, without answer ids: every further one is an answer
    old = [{k: v for k, v in r.items() if k != "answer"} for r in recs]
    got = read_reports(old + old[:1] + old[:1], spec, users=ids)
    assert len(got) == 4 and got.again == {"a": 2}


def test_answer_ids_are_checked():
    spec = collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1, 2]))
    rec = Device("a").answer(spec, 1)
    for bad in (5, None, "xyz", "0123456789ABCDEF", "0123456789abcdef0", ["0" * 16]):
        got = read_reports([dict(rec, answer=bad)], spec, users=["a"])
        assert len(got) == 0 and got.refused == {"malformed": 1}, bad


@pytest.mark.parametrize("ext", ["jsonl", "parquet", "arrow"])
def test_answer_ids_travel_through_every_format(tmp_path, ext):
    if ext != "jsonl":
        pytest.importorskip("pyarrow")
    ids = ["a", "b", "c"]
    spec = collection_spec(LabelRandomizedResponse(8.0, classes=[0, 1]))
    recs = [Device(u).answer(spec, 1) for u in ids]
    old = {k: v for k, v in recs[2].items() if k != "answer"}   # a device without ids
    path = str(tmp_path / f"r.{ext}")
    write_reports(recs + [recs[0], old, old], path)
    if ext == "jsonl":
        with open(path) as fh:
            assert json.loads(fh.readline())["answer"] == recs[0]["answer"]
    got = read_reports(path, spec, users=ids)
    assert len(got) == 3 and got.refused == {"duplicate": 3} and got.again == {"c": 2}


def _edge_fleet(n=40):
    ids = [f"user{i}" for i in range(n)]
    A = sp.random(n, n, density=0.15, random_state=1, format="csr")
    A = ((A + A.T) > 0).astype(float)
    A.setdiag(0)
    A.eliminate_zeros()
    spec = collection_spec(EdgeRR(2.0, symmetrize="or"), node_ids=ids)
    recs = [Device(u).answer(spec, [ids[j] for j in A[i].indices], directory=Directory(ids))
            for i, u in enumerate(ids)]
    return ids, spec, recs


def test_an_edge_collection_is_read_with_its_directory():
    ids, spec, recs = _edge_fleet()
    got = read_reports(recs, spec, users=ids[::-1])       # any order: the same directory
    assert len(got) == len(ids) and got.n_refused == 0
    # a subset is not the directory: a clear error, not honest reports refused in silence
    allowed = [u for u in ids if u not in ids[::5]]
    with pytest.raises(ValueError, match="not the directory of edge collection"):
        read_reports(recs, spec, users=allowed)
    with pytest.raises(ValueError, match="not the directory"):
        read_reports(recs, spec, users=ids + ["mallory"])
    # a list naming its own sender is refused (positions in the directory)
    own = int(np.searchsorted(Directory(ids).keys, ids_to_keys(np.asarray(["user3"]))[0]))
    evil = {"collection": spec.id, "user": "user3", "report": {"l": [own]}}
    got = read_reports([evil], spec, users=ids)
    assert got.refused == {"out of domain": 1}


@pytest.mark.parametrize("value", [10**20, -10**20, 2**63, -(2**63) - 1])
def test_one_huge_integer_is_one_refused_report(value):
    ids = [f"u{i}" for i in range(5)]
    sv = collection_spec(SetValuedMechanism(1.0, ell=1, oracle="grr"), n_features=6)
    recs = [Device(u).answer(sv, [1, 0, 0, 1, 0, 0]) for u in ids[1:]]
    bad = {"collection": sv.id, "user": "u0", "report": {"v": value}}
    got = read_reports(recs + [bad], sv, users=ids)
    assert len(got) == 4 and got.refused == {"out of domain": 1}
    ly = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))
    recs = [Device(u).answer(ly, 1) for u in ids[1:]]
    got = read_reports(recs + [{"collection": ly.id, "user": "u0", "report": {"y": value}}],
                       ly, users=ids)
    assert len(got) == 4 and got.refused == {"out of domain": 1}


def test_a_line_nested_too_deep_is_one_malformed_report():
    ly = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))
    recs = [json.dumps(Device(u).answer(ly, 1)) for u in ("a", "b")]
    got = read_reports(recs + ["[" * 100_000 + "]" * 100_000], ly, users=["a", "b"])
    assert len(got) == 2 and got.refused == {"malformed": 1}
