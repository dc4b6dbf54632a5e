"""What a population remembers of the answers it received (compact, across batches, copies
and pickles), records refused for their content charged wherever they come, user ids that
are numpy integers, and report files of mixed types written whole or not at all."""

import copy
import json
import os
import pickle
import secrets
import tracemalloc

import numpy as np
import pytest

from skldp.device import Device
from skldp.device._random import ids_to_keys
from skldp.mechanisms import LabelRandomizedResponse
from skldp.population import (
    Population,
    collection_spec,
    read_reports,
    received_graph,
    write_reports,
)
from skldp.population._ingest import _records

IDS = ["a", "b", "c", "d"]


@pytest.fixture(scope="module")
def sy():
    return collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))


def _batch(spec, v, ids=IDS, answer_ids=True):
    recs = [Device(u).answer(spec, v) for u in ids]
    return recs if answer_ids else [{k: x for k, x in r.items() if k != "answer"}
                                    for r in recs]


def _spent(G):
    return G.ledger.spent(G.node_keys).tolist()


# ------------------------------------------------------------ the memory of answers
def test_the_answers_received_take_16_bytes_per_user_and_collection(sy):
    n = 20_000
    ids = [f"user{i}" for i in range(n)]
    recs = [{"collection": sy.id, "user": u, "answer": secrets.token_hex(8),
             "report": {"y": i % 3}} for i, u in enumerate(ids)]
    got = read_reports(recs, sy, users=ids)
    G, _ = received_graph(labels=got, node_ids=ids)
    memory = G.population._answer_digests
    data = pickle.dumps(memory)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        rebuilt = pickle.loads(data)
        in_memory = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    del rebuilt
    # (about 340 bytes per user in memory and 25 pickled as dicts of sets of ints)
    assert in_memory < 20 * n and len(data) < 20 * n
    assert len(pickle.dumps(G.population.__getstate__()["_answer_digests"])) < 20 * n
    # the same answers again are free, new ones are charged, also after pickling
    P = pickle.loads(pickle.dumps(G.population))
    again, _ = received_graph(labels=read_reports(recs[:100], sy, users=ids), node_ids=ids,
                              population=P)
    assert max(_spent(again)) == 1.0
    new = [dict(r, answer=secrets.token_hex(8)) for r in recs[:3]]
    again, _ = received_graph(labels=read_reports(new, sy, users=ids), node_ids=ids,
                              population=P)
    assert _spent(again)[:4] == [2.0, 2.0, 2.0, 1.0]


def test_a_population_pickled_with_the_older_memory_still_knows_its_answers(sy):
    first = _batch(sy, 0)
    G, _ = received_graph(labels=read_reports(first, sy, users=IDS), node_ids=IDS)
    state = G.population.__getstate__()
    pairs = state["_answer_digests"][sy.id]
    # before: {collection id: {node key: set of digests}}
    state["_answer_digests"] = {sy.id: {int(k): {int(d)} for k, d in
                                        zip(pairs["key"].tolist(), pairs["digest"].tolist(),
                                            strict=True)}}
    P = Population.__new__(Population)
    P.__setstate__(state)
    G2, _ = received_graph(labels=read_reports(first, sy, users=IDS), node_ids=IDS,
                           population=P)
    assert _spent(G2) == [1.0] * 4                      # resends: free
    G3, _ = received_graph(labels=read_reports(_batch(sy, 1), sy, users=IDS),
                           node_ids=IDS, population=P)
    assert _spent(G3) == [2.0] * 4                      # new answers: charged


def test_a_batch_a_copy_received_is_not_taken_for_the_originals(sy):
    # the copy received the first answers (its ledger is the original's): the original's
    # later batch holds other answers of the same users, each charged
    P = Population(simulated=False)
    Q = copy.deepcopy(P)
    received_graph(labels=read_reports(_batch(sy, 0), sy, users=IDS), node_ids=IDS,
                   population=Q)
    G, _ = received_graph(labels=read_reports(_batch(sy, 1), sy, users=IDS), node_ids=IDS,
                          population=P)
    assert _spent(G) == [2.0] * 4


def test_a_resend_through_another_copy_of_the_population_is_free(sy):
    # copies share one journal: the answers one received are known to the others
    P = Population(simulated=False)
    Q = copy.deepcopy(P)
    first = _batch(sy, 0)
    received_graph(labels=read_reports(first, sy, users=IDS), node_ids=IDS, population=Q)
    G, _ = received_graph(labels=read_reports(first, sy, users=IDS), node_ids=IDS,
                          population=P)
    assert _spent(G) == [1.0] * 4
    G, _ = received_graph(labels=read_reports(_batch(sy, 1), sy, users=IDS), node_ids=IDS,
                          population=Q)
    assert _spent(G) == [2.0] * 4


def test_reports_over_the_budget_are_charged_though_refused(sy):
    # the server received them: the ledger records what users sent, used or not
    from skldp.population import BudgetExceededError
    flood = [dict(Device("a").answer(sy, 1), report={"y": 9}) for _ in range(3)]
    records = _batch(sy, 0) + flood
    P = Population(2.0, simulated=False)
    with pytest.raises(BudgetExceededError, match="'a'.*3 further answer.*the ledger "
                                                  "charges them"):
        received_graph(labels=read_reports(records, sy, users=IDS), node_ids=IDS,
                       population=P)
    keys = ids_to_keys(np.asarray(IDS))
    assert P.ledger.spent(keys).tolist() == [4.0, 1.0, 1.0, 1.0]
    P.set_budget(4.0)   # the retry charges nothing more
    G, _ = received_graph(labels=read_reports(records, sy, users=IDS), node_ids=IDS,
                          population=P)
    assert _spent(G) == [4.0, 1.0, 1.0, 1.0]
    # a whole collection above the cap
    s2 = collection_spec(LabelRandomizedResponse(1.5, classes=[0, 1, 2]))
    Q = Population(1.0, simulated=False)
    records = read_reports(_batch(s2, 1), s2, users=IDS)
    with pytest.raises(BudgetExceededError, match="above this population's budget"):
        received_graph(labels=records, node_ids=IDS, population=Q)
    assert Q.ledger.local_epsilon == 1.5 and len(Q.ledger) == 1
    # the same call again (the same budget): refused again, nothing charged twice; a
    # population made by the call is on the error, to raise its budget and retry
    for population in (Q, None):
        with pytest.raises(BudgetExceededError) as refused:
            received_graph(labels=records, node_ids=IDS, population=population, budget=1.0)
        assert refused.value.population.ledger.local_epsilon == 1.5
        # (Q: charged at the first call; nothing is new now)
        assert ("in reports received earlier" in str(refused.value)) == (population is Q)
    assert BudgetExceededError("a simulated refusal").population is None
    refused.value.population.set_budget(2.0)
    G, _ = received_graph(labels=records, node_ids=IDS, population=refused.value.population)
    assert _spent(G) == [1.5] * 4


def test_the_same_reports_without_answer_ids_are_charged_once(sy):
    # each record without an answer id is a new answer at each read, but the same read
    # given again is the same records
    got = read_reports(_batch(sy, 0, answer_ids=False), sy, users=IDS)
    G1, _ = received_graph(labels=got, node_ids=IDS)
    G2, _ = received_graph(labels=got, node_ids=IDS, population=G1)
    assert _spent(G2) == [1.0] * 4
    G3, _ = received_graph(labels=read_reports(_batch(sy, 0, answer_ids=False), sy,
                                               users=IDS), node_ids=IDS, population=G1)
    assert _spent(G3) == [2.0] * 4


# ---------------------------------------------------- records refused for their content
def test_a_refused_report_is_charged_wherever_it_comes(sy):
    good = {u: Device(u).answer(sy, 1) for u in IDS}
    bad = dict(Device("a").answer(sy, 1), report={"y": 7})      # out of domain
    rest = [good[u] for u in IDS[1:]]
    for order in ([good["a"], bad], [bad, good["a"]], [bad, good["a"], bad]):
        got = read_reports(order + rest, sy, users=IDS)
        assert got.users[0] == "a" and got.again == {"a": 1}, order
        G, _ = received_graph(labels=got, node_ids=IDS)
        assert _spent(G) == [2.0, 1.0, 1.0, 1.0], order
    assert "Charged" in got.refused_records[0].message
    assert "resend" in got.refused_records[-1].message
    # a user whose every record was refused sent a report: charged, not a user of the
    # reports; records that name no user of this collection charge no one
    odd = [dict(good["b"], report={"y": "1"}),                   # malformed
           dict(good["c"], collection="f" * 16, report={"y": 9}),
           dict(good["c"], user="mallory", report={"y": 9}),
           {k: v for k, v in good["d"].items() if k != "report"}]
    got = read_reports([good["a"]] + odd, sy, users=IDS)
    assert got.users == ["a"] and got.again == {"b": 1}
    G, _ = received_graph(labels=got, node_ids=IDS)
    assert _spent(G) == [1.0, 1.0, 0.0, 0.0]
    got = read_reports([good["a"], dict(good["b"], report={"y": 9})], sy, users=IDS,
                       senders=["a", "c"])                        # sender mismatch
    assert got.again == {"c": 1} and got.refused == {"sender mismatch": 1}   # c sent it
    # a later batch: the same refused record again is free, another one is charged
    G2, _ = received_graph(labels=read_reports([good["a"], bad], sy, users=IDS),
                           node_ids=IDS)
    G3, _ = received_graph(labels=read_reports([bad, good["a"]], sy, users=IDS),
                           node_ids=IDS, population=G2)
    assert _spent(G3)[0] == 2.0
    other = dict(bad, answer=secrets.token_hex(8))
    G4, _ = received_graph(labels=read_reports([other], sy, users=IDS), node_ids=IDS,
                           population=G3, missing_features="zero")
    assert _spent(G4)[0] == 3.0


# ------------------------------------------------------------------------- user ids
def test_numpy_integer_user_ids_read_as_the_equal_int(sy):
    ids = [0, 1, 2]
    recs = [Device(u).answer(sy, 1) for u in ids]
    as_numpy = [dict(r, user=t(r["user"])) for r, t in
                zip(recs, (np.int64, np.uint8, np.int32), strict=True)]
    got = read_reports(as_numpy, sy, users=np.arange(3))
    assert got.users == [0, 1, 2] and all(type(u) is int for u in got.users)
    assert got.n_refused == 0
    got = read_reports(as_numpy, sy, users=ids, senders=[np.int64(0), 1, 2])
    assert len(got) == 3
    for bad in (np.bool_(True), True, 1.0, np.float64(1.0), np.array([1]), None):
        got = read_reports([dict(recs[1], user=bad)], sy, users=ids)
        assert len(got) == 0 and got.refused == {"malformed": 1}, repr(bad)
    G, y = received_graph(labels=read_reports(as_numpy, sy, users=ids), node_ids=ids)
    assert _spent(G) == [1.0] * 3


# ------------------------------------------------------------------------ report files
def _read_back(path):
    """The records of a file as JSON text (1, 1.0 and true differ), in order."""
    return [json.dumps(r, sort_keys=True) for _, r in _records(path, None)]


def _as_json(records):
    return [json.dumps(json.loads(json.dumps(r)), sort_keys=True) for r in records]


@pytest.mark.parametrize("ext", ["jsonl", "parquet", "arrow"])
def test_records_of_mixed_types_are_written_and_read_back_as_they_were(sy, tmp_path, ext):
    if ext != "jsonl":
        pytest.importorskip("pyarrow")
    ids = ["a", "b", 3, 2**70]
    recs = [Device(u).answer(sy, 1) for u in ids]
    records = recs + [dict(recs[0], report={"y": "1"}),            # another type
                      dict(recs[1], report={"y": 1.0}),
                      dict(recs[1], report={"y": True}),
                      dict(recs[0], answer=None),                  # a field set to null
                      dict(recs[2], report={"y": None}),
                      dict(recs[2], report=[1]),
                      dict(recs[3], report={"y": 1, "meta": {}}),  # an empty object
                      {"collection": sy.id, "user": "a"}]
    path = str(tmp_path / f"r.{ext}")
    write_reports(records, path)
    assert _read_back(path) == _as_json(records)
    got = read_reports(path, sy, users=ids)
    assert got.users == ids and got.refused == {"malformed": 8}
    # numpy scalars are written as the equal numbers
    write_reports([dict(recs[2], user=np.int64(3), report={"y": np.int8(1)})], path)
    assert _read_back(path) == _as_json([dict(recs[2], user=3, report={"y": 1})])


@pytest.mark.parametrize("ext", ["parquet", "arrow"])
def test_a_cell_that_is_not_json_text_is_refused_and_its_user_charged(sy, tmp_path, ext):
    # a file from another tool may hold a broken cell in a JSON column: the record is
    # refused, but a report of its user was sent, so that user is charged
    pa = pytest.importorskip("pyarrow")
    import pyarrow.feather as feather
    import pyarrow.parquet as pq
    records = _batch(sy, 1)
    records[1] = dict(records[1], report={"y": "1"})    # makes report a JSON column
    path = str(tmp_path / f"r.{ext}")
    write_reports(records, path)
    table = pq.read_table(path) if ext == "parquet" else feather.read_table(path)
    report = table.column("report").to_pylist()
    report[0] = '{"y": 1'                               # cut short
    table = table.set_column(table.schema.get_field_index("report"), "report",
                             pa.array(report, pa.string()))
    pq.write_table(table, path) if ext == "parquet" else feather.write_feather(table, path)
    got = read_reports(path, sy, users=IDS)
    assert got.users == ["c", "d"] and got.refused == {"malformed": 2}
    assert got.again == {"a": 1, "b": 1}
    assert "not JSON text" in got.refused_records[0].message
    assert "Charged to its user" in got.refused_records[0].message
    # a broken user cell names nobody: refused, nobody charged
    table = table.set_column(table.schema.get_field_index("user"), "user",
                             pa.array(['"a"', '"b"', '"c', '"d"'], pa.string()))
    meta = dict(table.schema.metadata)
    meta[b"skldp.json_columns"] = json.dumps(["report", "user"]).encode()
    table = table.replace_schema_metadata(meta)
    pq.write_table(table, path) if ext == "parquet" else feather.write_feather(table, path)
    got = read_reports(path, sy, users=IDS)
    assert got.refused == {"malformed": 3} and "c" not in got.again


def test_two_broken_cells_of_one_answer_id_are_two_answers(sy, tmp_path):
    # a broken cell was compared by its text cut to 40 characters: a second, different one
    # under the same answer id passed as a free resend
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    rec = _batch(sy, 1)[0]
    records = [rec, dict(rec, report={"y": "1"}), dict(rec)]   # report: a JSON column
    path = str(tmp_path / "r.parquet")
    write_reports(records, path)
    table = pq.read_table(path)
    broken = '{"y": 1, "padding": "' + "x" * 60
    cells = [table.column("report").to_pylist()[0], broken + "A", broken + "B"]
    table = table.set_column(table.schema.get_field_index("report"), "report",
                             pa.array(cells, pa.string()))
    pq.write_table(table, path)
    got = read_reports(path, sy, users=IDS)
    assert got.users == ["a"] and got.again == {"a": 2}
    # the same broken cell twice is one resend
    cells[2] = cells[1]
    pq.write_table(table.set_column(table.schema.get_field_index("report"), "report",
                                    pa.array(cells, pa.string())), path)
    assert read_reports(path, sy, users=IDS).again == {"a": 1}


@pytest.mark.parametrize("ext", ["parquet", "arrow"])
def test_an_empty_object_in_a_report_is_written(sy, tmp_path, ext):
    pytest.importorskip("pyarrow")
    # Arrow types {} as a struct without fields, which Parquet cannot write
    records = _batch(sy, 1)[:3] + [dict(_batch(sy, 1)[3], report={"y": 1, "meta": {}})]
    path = str(tmp_path / f"r.{ext}")
    write_reports(records, path)
    assert _read_back(path) == _as_json(records)


@pytest.mark.parametrize("ext", ["jsonl", "parquet", "arrow"])
def test_a_record_that_cannot_be_written_leaves_no_file(sy, tmp_path, ext):
    if ext != "jsonl":
        pytest.importorskip("pyarrow")
    recs = _batch(sy, 1)
    path = str(tmp_path / f"r.{ext}")
    for bad, where in ((dict(recs[2], report={"y": {1, 2}}), "field 'report' of record 2"
                        if ext != "jsonl" else "record 2"),
                       ("not a record", "record 2")):
        with pytest.raises(TypeError, match=f"{where}.*Nothing was written"):
            write_reports(recs[:2] + [bad] + recs[3:], path)
        assert os.listdir(tmp_path) == []
    write_reports(recs, path)
    with pytest.raises(TypeError, match="record 1"):
        write_reports([recs[0], dict(recs[1], report={"y": object()})], path)
    assert os.listdir(tmp_path) == [f"r.{ext}"]                    # the old file, whole
    assert len(read_reports(path, sy, users=IDS)) == 4


def test_an_integer_id_too_long_for_text_is_one_malformed_record(sy):
    # records given as dicts can hold any int; one that Python cannot write as text (past
    # 4300 digits) crashed the read with senders=, or the graph without users=
    recs = [Device(u).answer(sy, 1) for u in ("a", "b")]
    bad = dict(recs[0], user=10**5000)
    for kw in ({"users": ["a", "b"]}, {"users": ["a", "b"], "senders": ["a", "b"]}):
        got = read_reports([bad, recs[1]], sy, **kw)
        assert got.users == ["b"] and got.refused == {"malformed": 1}
    with pytest.warns(UserWarning, match="without users="):
        got = read_reports([bad, recs[1]], sy)
    G, _ = received_graph(labels=got)
    assert G.node_ids.tolist() == ["b"]


def test_an_edge_collection_reads_its_directory_from_an_iterator():
    from skldp.device import Directory
    from skldp.mechanisms import EdgeRR
    ids = [f"u{i}" for i in range(6)]
    spec = collection_spec(EdgeRR(2.0), node_ids=ids)
    recs = [Device(u).answer(spec, [ids[(i + 1) % 6]], directory=Directory(ids))
            for i, u in enumerate(ids)]
    got = read_reports(recs, spec, users=iter(ids))   # (it was read twice: empty the second)
    assert len(got) == 6 and got.n_refused == 0


@pytest.mark.filterwarnings("ignore:read_reports of collection")
def test_user_ids_of_several_types_keep_their_types(sy):
    recs = [Device(u).answer(sy, 1) for u in ("a", "b", 7)]
    for got, ids in ((read_reports(recs, sy), None),
                     (read_reports(recs, sy, users=["a", "b", 7]), ["a", "b", 7])):
        G, y = received_graph(labels=got, node_ids=ids)
        assert G.node_ids.tolist() == ["a", "b", 7]
        assert y.tolist() == [r["report"]["y"] for r in recs]


def test_a_report_whose_text_cannot_be_written_is_one_malformed_record(sy):
    deep = []
    inner = deep
    for _ in range(5000):
        inner.append([])
        inner = inner[0]
    recs = _batch(sy, 1) + [dict(_batch(sy, 1)[0], report=10**5000),
                            dict(_batch(sy, 1)[1], report=deep)]
    got = read_reports(recs, sy, users=IDS)
    assert got.users == IDS and got.refused == {"malformed": 2}


@pytest.mark.parametrize("ext", ["jsonl", "parquet"])
def test_a_field_name_that_is_not_text_is_refused_before_writing(sy, tmp_path, ext):
    if ext != "jsonl":
        pytest.importorskip("pyarrow")
    recs = _batch(sy, 1)
    path = str(tmp_path / f"r.{ext}")
    with pytest.raises(TypeError, match="record 1 holds a field name that is not text, 1"):
        write_reports([recs[0], dict(recs[1], report={"y": 1, 1: 2})], path)
    assert os.listdir(tmp_path) == []


def test_a_call_that_adds_nothing_writes_nothing_to_the_journal(sy, tmp_path):
    import copy
    records = read_reports(_batch(sy, 0), sy, users=IDS)
    G, _ = received_graph(labels=records, node_ids=IDS)
    copy.deepcopy(G.population)   # copies share a journal
    journal = G.population._journal
    size = os.path.getsize(journal)
    for _ in range(3):
        received_graph(labels=records, node_ids=IDS, population=G)
    assert os.path.getsize(journal) == size
