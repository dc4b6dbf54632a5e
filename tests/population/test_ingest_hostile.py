"""Ingestion against hostile or careless senders: bits padded with whitespace, records that
claim another user, sybil ids, wrong collections passed to received_graph, and refusals
that can be traced back to their record."""

import json
import secrets
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from skldp.device import Device, Directory
from skldp.device._kinds import ReportError, plan
from skldp.mechanisms import (
    EdgeRR,
    LabelRandomizedResponse,
    MultiBitMechanism,
    OneBitMechanism,
    SetValuedMechanism,
)
from skldp.population import (
    BudgetExceededError,
    _ingest,
    collection_spec,
    read_reports,
    received_graph,
)

N, D = 12, 10
IDS = [f"user{i}" for i in range(N)]
_rng = np.random.default_rng(0)
X = (_rng.random((N, D)) < 0.3).astype(float)
Y = _rng.integers(0, 3, N)


def _answers(spec, data=X):
    return [Device(user=u).answer(spec, data[i]) for i, u in enumerate(IDS)]


def _labels():
    spec = collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1, 2]))
    return spec, [Device(user=u).answer(spec, int(Y[i])) for i, u in enumerate(IDS)]


def _edges(symmetrize="or"):
    A = sp.random(N, N, density=0.3, random_state=0, format="csr")
    A = sp.csr_matrix(((A + A.T) > 0).astype(float))
    A.setdiag(0)
    A.eliminate_zeros()
    spec = collection_spec(EdgeRR(4.0, symmetrize=symmetrize), node_ids=IDS)
    directory = Directory(IDS)
    return spec, [Device(user=u).answer(spec, [IDS[j] for j in A[i].indices],
                                        directory=directory) for i, u in enumerate(IDS)]


def _with_bits(rec, bits):
    return dict(rec, report=dict(rec["report"], b=bits))


BIT_MECHANISMS = [OneBitMechanism(1.0, feature_range=(0, 1)),
                  MultiBitMechanism(1.0, m=2, feature_range=(0, 1)),
                  SetValuedMechanism(1.0, oracle="oue")]


@pytest.mark.parametrize("mech", BIT_MECHANISMS, ids=lambda m: type(m).__name__)
def test_bits_padded_with_whitespace_are_refused_per_record(mech):
    # bytes.fromhex skips whitespace: "62  " once passed the length check and read as
    # fewer bits, which crashed the batch (np.stack) or changed the graph's width
    spec = collection_spec(mech, n_features=D)
    recs = _answers(spec)
    v = recs[0]["report"]["b"]
    for bad in (v[:-2] + "  ", "\t\t" + v[:-2], v[:-2] + "\n\n", " " * len(v)):
        with pytest.raises(ReportError, match="in hex") as e:
            plan(spec).check(_with_bits(recs[0], bad)["report"])
        assert e.value.reason == "malformed"
        got = read_reports([_with_bits(recs[0], bad)] + recs[1:], spec, users=IDS)
        assert len(got) == N - 1 and got.refused == {"malformed": 1}, repr(bad)
        # every record short the same way: all refused, no graph of the wrong width
        short = read_reports([_with_bits(r, r["report"]["b"][:-2] + "  ") for r in recs],
                             spec, users=IDS)
        assert len(short) == 0 and short.refused == {"malformed": N}
    upper = read_reports([_with_bits(r, r["report"]["b"].upper()) for r in recs], spec,
                         users=IDS)
    assert len(upper) == N   # hex digits in either case are hex
    G, _ = received_graph(features=upper, node_ids=IDS)
    assert G.features.shape == (N, D)


def test_a_report_of_the_wrong_shape_is_refused_not_stacked(monkeypatch):
    # defence in depth: a check that let a wrong shape through must cost one record
    spec = collection_spec(OneBitMechanism(1.0, feature_range=(0, 1)), n_features=D)
    recs = _answers(spec)
    real = plan(spec)

    class Leaky:
        def field_specs(self):
            return real.field_specs()

        def check(self, report):
            out = real.check(report)
            return {"b": out["b"][:-2]} if report is recs[3]["report"] else out

    monkeypatch.setattr(_ingest, "plan", lambda spec: Leaky())
    got = read_reports(recs, spec, users=IDS)
    assert len(got) == N - 1 and got.refused == {"malformed": 1}
    assert got.reports["b"].shape == (N - 1, D)
    assert got.refused_records[0].index == 3 and "shape" in got.refused_records[0].message


def test_refused_records_say_which_record_and_why():
    spec, recs = _labels()
    bad = [dict(recs[0], report={"y": 7}),                 # out of domain
           dict(recs[1], user="mallory"),                  # unknown user
           "not json",
           dict(recs[2], collection="ffffffffffffffff")]
    got = read_reports(bad + recs, spec, users=IDS)
    assert got.refused == {"out of domain": 1, "unknown user": 1, "malformed": 1,
                           "other collection": 1}
    by_index = {r.index: r for r in got.refused_records}
    assert set(by_index) == {0, 1, 2, 3}
    assert by_index[0].user == "user0" and by_index[0].answer == recs[0]["answer"]
    assert by_index[0].reason == "out of domain" and "0..2" in by_index[0].message
    assert by_index[1].user == "mallory" and by_index[1].reason == "unknown user"
    assert by_index[2].user is None and by_index[2].reason == "malformed"
    # duplicates too: the genuine answer that came after a forged one is traceable
    again = read_reports(recs + [recs[0], dict(recs[1], answer="0" * 16)], spec, users=IDS)
    dup = {r.index: r for r in again.refused_records}
    assert set(dup) == {len(recs), len(recs) + 1}
    assert "resend" in dup[len(recs)].message and dup[len(recs)].reason == "duplicate"
    assert "further answer" in dup[len(recs) + 1].message
    # bounded: a flood of bad records does not grow the result without end
    flood = [dict(recs[0], report={"y": 9})] * 250
    got = read_reports(flood, spec, users=IDS)
    assert got.refused == {"out of domain": 250} and len(got.refused_records) == 100
    assert [r.index for r in got.refused_records] == list(range(100))


@pytest.mark.parametrize("argument,part", [("features", "labels"), ("labels", "features"),
                                           ("edges", "features"), ("features", "edges"),
                                           ("labels", "edges")])
def test_received_graph_says_which_collection_an_argument_expects(argument, part):
    if part == "edges":
        spec, recs = _edges()
    elif part == "labels":
        spec, recs = _labels()
    else:
        spec = collection_spec(OneBitMechanism(1.0, feature_range=(0, 1)), n_features=D)
        recs = _answers(spec)
    got = read_reports(recs, spec, users=IDS)
    with pytest.raises(ValueError, match=f"{argument}= expects the reports of a collection "
                                         f"that protects {argument}.*pass them as {part}="):
        received_graph(node_ids=IDS, **{argument: got})


def test_reading_without_users_warns_that_any_id_becomes_a_user():
    spec, recs = _labels()
    sybils = [{"collection": spec.id, "user": f"sybil{i}", "answer": secrets.token_hex(8),
               "report": {"y": 2}} for i in range(50)]
    with pytest.warns(UserWarning, match="any id a record claims becomes a user.*users="):
        got = read_reports(recs + sybils, spec)
    assert len(got) == N + 50
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = read_reports(recs + sybils, spec, users=IDS)
    assert len(got) == N and got.refused == {"unknown user": 50}


def test_senders_refuse_a_record_that_claims_another_user():
    spec, recs = _labels()
    forged = [{"collection": spec.id, "user": "user1", "answer": secrets.token_hex(8),
               "report": {"y": 2}} for _ in range(20)]
    sources = forged + recs
    senders = ["user5"] * 20 + IDS
    got = read_reports(sources, spec, users=IDS, senders=senders)
    assert len(got) == N and got.refused == {"sender mismatch": 20}
    # user1 is not charged; user5 sent those 20 reports, each under a new answer id
    assert got.again == {"user5": 20}
    assert got.refused_records[0].user == "user1"
    assert "user5" in got.refused_records[0].message
    # without senders, the forged records win and charge their victim
    trusted = read_reports(sources, spec, users=IDS)
    assert trusted.again == {"user1": 20}
    with pytest.raises(ValueError, match="1 records"):
        read_reports(recs[:1], spec, users=IDS, senders=IDS[:2])
    with pytest.raises(TypeError, match="list or tuple"):
        read_reports(iter(recs), spec, users=IDS, senders=IDS)


def test_a_record_cut_short_is_charged_to_its_authenticated_sender():
    # a line cut in transit names no user, but the server holds most of its report: with
    # senders=, its sender is charged (it was charged to no one)
    spec, recs = _labels()
    line = json.dumps(recs[0])
    cut = [line[:-5], json.dumps(recs[1]), {"collection": spec.id, "report": {"y": 1}}]
    got = read_reports(cut, spec, users=IDS, senders=IDS[:3])
    assert got.users == [IDS[1]] and got.refused == {"malformed": 2}
    assert got.again == {IDS[0]: 1, IDS[2]: 1}
    assert "authenticated sender" in got.refused_records[0].message
    # a record of another collection is not charged here; without senders, nobody
    other = {"collection": "0" * 16, "report": {"y": 1}}
    assert not read_reports([other], spec, users=IDS, senders=IDS[:1]).again
    assert not read_reports(cut, spec, users=IDS).again
    G, _ = received_graph(labels=got, node_ids=IDS)
    assert G.ledger.spent(G.node_keys)[:3].tolist() == [spec.epsilon] * 3


def test_a_record_under_another_id_is_charged_to_its_authenticated_sender():
    # A second install of user0's app under a mistyped id answered about user0's label
    # again, over user0's channel: refused as a sender mismatch and charged to no one,
    # while the server held two independent answers of user0 (printed 2.0, truth 4.0).
    spec, recs = _labels()
    second = Device(user="USER0").answer(spec, int(Y[0]))
    got = read_reports([recs[0], second] + recs[1:], spec, users=IDS,
                       senders=[IDS[0], IDS[0]] + IDS[1:])
    assert got.refused == {"sender mismatch": 1} and got.again == {IDS[0]: 1}
    G, _ = received_graph(labels=got, node_ids=IDS)
    assert G.ledger.spent(G.node_keys)[:2].tolist() == [2 * spec.epsilon, spec.epsilon]
    # a resend of it is free; a record of another collection charges nobody here
    again = read_reports([recs[0], second, second] + recs[1:], spec, users=IDS,
                         senders=[IDS[0]] * 3 + IDS[1:])
    assert again.again == {IDS[0]: 1}
    other = dict(second, collection="0" * 16)
    assert not read_reports([other], spec, users=IDS, senders=IDS[:1]).again


def test_an_item_of_several_lines_is_as_many_records():
    # a relay's chunk of two answers in one item was one malformed record, charged once
    spec, recs = _labels()
    chunk = json.dumps(recs[0]) + "\n" + json.dumps(dict(recs[0], answer="0" * 16,
                                                           report={"y": 1}))
    got = read_reports([chunk] + recs[1:], spec, users=IDS, senders=IDS)
    assert got.users[0] == IDS[0] and got.refused == {"duplicate": 1}
    assert got.again == {IDS[0]: 1}
    # CRLF lines, and bytes, read the same
    for item in (chunk.replace("\n", "\r\n"), chunk.encode()):
        assert read_reports([item] + recs[1:], spec, users=IDS).again == {IDS[0]: 1}


def test_a_budget_refused_for_further_answers_names_their_users():
    spec, recs = _labels()
    flood = [{"collection": spec.id, "user": "user1", "answer": secrets.token_hex(8),
              "report": {"y": 0}} for _ in range(30)]
    got = read_reports(recs + flood, spec, users=IDS)
    with pytest.raises(BudgetExceededError, match=r"'user1'.*30 further answer.*"
                                                  r"impersonation.*senders="):
        received_graph(labels=got, node_ids=IDS, budget=10.0)


def test_users_without_a_list_are_counted_in_a_warning():
    spec, recs = _edges()
    got = read_reports(recs[:6], spec, users=IDS)
    with pytest.warns(UserWarning, match="6 of the 12 users .* sent no adjacency list"):
        received_graph(edges=got, node_ids=IDS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        G, _ = received_graph(edges=got, node_ids=IDS, missing_lists="empty")
        received_graph(edges=read_reports(recs, spec, users=IDS), node_ids=IDS)
    assert G.adjacency.shape == (N, N)
    with pytest.raises(ValueError, match="sent no adjacency list"):
        received_graph(edges=got, node_ids=IDS, missing_lists="error")
    with pytest.raises(ValueError, match="missing_lists must be"):
        received_graph(edges=got, node_ids=IDS, missing_lists="ignore")


def test_one_record_or_json_text_as_source_says_what_to_pass():
    spec, recs = _labels()
    with pytest.raises(TypeError, match="wrap a single record in a list"):
        read_reports(recs[0], spec, users=IDS)
    with pytest.raises(TypeError, match="bytes"):
        read_reports(b'{"collection": 1}', spec, users=IDS)
    for text in (json.dumps(recs[0]), json.dumps(recs[:2]), "  " + json.dumps(recs[0])):
        with pytest.raises(ValueError, match="looks like JSON text"):
            read_reports(text, spec, users=IDS)


def test_records_that_python_cannot_compare_are_refused_not_raised():
    # records passed as dicts can hold what JSON cannot: keys of mixed types, an array
    ly = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))
    recs = [Device(u).answer(ly, 1) for u in IDS[:2]]
    recs.append({"collection": ly.id, "user": IDS[2], "report": {"y": 1, 3: 4}})
    recs.append({"collection": np.array([1, 2]), "user": IDS[3], "report": {"y": 1}})
    got = read_reports(recs, ly, users=IDS)
    assert len(got) == 2 and got.refused == {"malformed": 1, "other collection": 1}


def test_a_received_population_in_another_process_says_how_to_rebuild_its_ledger(tmp_path):
    # its ledger is not saved: the advice for simulations (new_simulation, collect before
    # sending) does not apply to reports that real devices sent
    import subprocess
    import sys
    spec, recs = _labels()
    (tmp_path / "records.json").write_text(json.dumps([spec.to_json(), recs]))
    head = ("import json, pickle\n"
            "from skldp.device import read_spec\n"
            "from skldp.population import read_reports, received_graph\n"
            f"spec, recs = json.loads(open({str(tmp_path / 'records.json')!r}).read())\n"
            "spec = read_spec(spec)\n")
    save = head + (f"G, _ = received_graph(labels=read_reports(recs[:3], spec, users={IDS!r}),\n"
                   f"                      node_ids={IDS!r})\n"
                   f"open({str(tmp_path / 'g.pkl')!r}, 'wb').write(pickle.dumps(G))\n")
    load = head + (f"G = pickle.loads(open({str(tmp_path / 'g.pkl')!r}, 'rb').read())\n"
                   "try:\n"
                   f"    received_graph(labels=read_reports(recs, spec, users={IDS!r}),\n"
                   f"                   node_ids={IDS!r}, population=G)\n"
                   "except RuntimeError as e:\n"
                   "    print(e)\n")
    for code in (save, load):   # the first process has ended when the second starts
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 0, run.stderr
    assert "real devices sent to another process" in run.stdout
    assert "read them all again" in run.stdout and "new_simulation" not in run.stdout
    # the advice works: every batch read again gives the ledger of the batches
    again, _ = received_graph(labels=read_reports(recs, spec, users=IDS), node_ids=IDS)
    assert again.ledger.spent(again.node_keys).tolist() == [spec.epsilon] * len(IDS)


def test_a_line_that_names_a_field_twice_with_two_values_is_refused():
    # JSON with a repeated name is ambiguous: Python reads the last, a relay or an audit
    # log may read the first. A line claiming two users (or holding two reports) was read
    # as its last one, silently; now it is malformed, and with senders= charged to its
    # sender. The same value twice (a relay that writes the user its channel
    # authenticated before the device's own, equal field) is read as usual.
    spec, recs = _labels()
    body = json.dumps(recs[1])[:-1]
    two_users = body + ', "user": "user2"}'
    two_reports = body + ', "report": {"y": %d}}' % ((recs[1]["report"]["y"] + 1) % 3)
    same_user = '{"user": "user1", ' + json.dumps(recs[1])[1:]
    for line in (two_users, two_reports):
        got = read_reports([line] + recs[2:], spec, users=IDS)
        assert got.users == IDS[2:] and got.refused == {"malformed": 1}
        assert "twice" in got.refused_records[0].message
        assert not got.again
        sent = read_reports([line] + recs[2:], spec, users=IDS, senders=IDS[1:])
        assert sent.again == {"user1": 1}
    alone = read_reports([two_users], spec, users=IDS)   # (a record: not "no record")
    assert alone.refused == {"malformed": 1}
    got = read_reports([same_user] + recs[2:], spec, users=IDS)
    assert got.users == IDS[1:] and got.n_refused == 0


def _write_table(table, path, ext):
    """Write ``table`` as a Parquet or Arrow (IPC) file."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    if ext == "parquet":
        pq.write_table(table, path)
    else:
        with pa.OSFile(path, "wb") as fh, pa.ipc.new_file(fh, table.schema) as w:
            w.write_table(table)

@pytest.mark.parametrize("ext", ["parquet", "arrow"])
def test_a_table_with_two_columns_of_one_name_is_refused_as_a_whole(tmp_path, ext):
    # Arrow allows two columns of one name: to_pylist kept the last "user" column (an
    # Arrow file read as the second user's reports, silently), and Parquet raised pyarrow's
    # "Multiple matches for FieldRef". As a JSON line naming a field twice: which column
    # it means depends on the reader. Refused before any record is read: nobody charged.
    pa = pytest.importorskip("pyarrow")
    spec, recs = _labels()
    table = pa.table([pa.array([spec.id] * N), pa.array(IDS),
                      pa.array([json.dumps(r["report"]) for r in recs]),
                      pa.array(IDS[1:] + IDS[:1])],
                     names=["collection", "user", "report", "user"])
    table = table.replace_schema_metadata({b"skldp.json_columns": b'["report"]'})
    path = str(tmp_path / f"r.{ext}")
    _write_table(table, path, ext)
    with pytest.raises(ValueError, match="two columns named 'user'.*Nothing was read"):
        read_reports(path, spec, users=IDS)
    # two fields of one name in a struct column (pyarrow's own error, before)
    report = pa.StructArray.from_arrays([pa.array([0] * N), pa.array([1] * N)],
                                        names=["y", "y"])
    table = pa.table([pa.array([spec.id] * N), pa.array(IDS), report],
                     names=["collection", "user", "report"])
    _write_table(table, path, ext)
    with pytest.raises(ValueError, match="two fields named 'report.y'"):
        read_reports(path, spec, users=IDS)
