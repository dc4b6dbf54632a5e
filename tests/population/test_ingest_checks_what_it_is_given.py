"""read_reports and received_graph check what they are given, also reports changed after
read_reports: users or node_ids that are not the edge collection's directory (same size,
other ids), node_ids that repeat a user (refused before anything is charged), directed lists
read as sent, lists that name their own user, kept users dropped by hand (their answers then
charged as new), and further answers counted by hand."""

import numpy as np
import pytest

from skldp.device import Device, Directory
from skldp.device._random import ids_to_keys
from skldp.mechanisms import EdgeRR, LabelRandomizedResponse
from skldp.population import Population, collection_spec, read_reports, received_graph

IDS = ["a", "b", "c", "d"]
LISTS = {"a": ["b"], "b": ["a", "c"], "c": ["b"], "d": []}


def _edges(senders=IDS):
    se = collection_spec(EdgeRR(2.0, symmetrize="or"), node_ids=IDS)
    directory = Directory(IDS)
    recs = [Device(u).answer(se, LISTS[u], directory=directory) for u in senders]
    return read_reports(recs, se, users=IDS)


def _spent(G):
    return G.ledger.spent(G.node_keys).tolist()


def test_users_that_are_not_the_directory_are_refused_though_of_its_size():
    se = collection_spec(EdgeRR(2.0, symmetrize="or"), node_ids=IDS)
    recs = [Device(u).answer(se, LISTS[u], directory=Directory(IDS)) for u in IDS[:3]]
    with pytest.raises(ValueError, match="not the directory"):
        read_reports(recs, se, users=["a", "b", "c", "e"])
    assert len(read_reports(recs, se, users=IDS)) == 3


def test_node_ids_that_are_not_the_directory_are_refused_though_every_sender_is_in_them():
    got = _edges(senders=IDS[:3])          # "d" sent no list
    with pytest.raises(ValueError, match="not the directory"):
        received_graph(edges=got, node_ids=["a", "b", "c", "e"], missing_lists="empty")
    G, _ = received_graph(edges=got, node_ids=IDS, missing_lists="empty")
    assert G.n_nodes == 4


def test_a_list_naming_its_own_user_is_refused_by_received_graph():
    got = _edges()
    keys = ids_to_keys(np.asarray(IDS))
    own = int(np.searchsorted(np.sort(keys), keys[0]))
    got.reports["l"][0] = np.sort(np.append(got.reports["l"][0], own))   # changed by hand
    with pytest.raises(ValueError, match="name their own user"):
        received_graph(edges=got, node_ids=IDS)


def test_users_dropped_by_hand_are_charged_and_the_rest_as_new_answers():
    sy = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))
    recs = [Device(u).answer(sy, 1) for u in IDS]
    got = read_reports(recs, sy, users=IDS)
    got.users = got.users[:3]                            # "d" dropped after reading
    got.reports["y"] = got.reports["y"][:3]
    G, y = received_graph(labels=got, node_ids=IDS)
    assert _spent(G) == [1.0, 1.0, 1.0, 0.0] and y[3] == -1
    # its digests no longer match its users: a later batch's resends are charged as new
    again, _ = received_graph(labels=read_reports(recs, sy, users=IDS), node_ids=IDS,
                              population=G)
    assert _spent(again) == [2.0, 2.0, 2.0, 1.0]


def test_further_answers_counted_by_hand_are_charged_as_counted():
    sy = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))
    recs = [Device(u).answer(sy, 1) for u in IDS] + [Device("a").answer(sy, 1)]
    got = read_reports(recs, sy, users=IDS)
    assert got.again == {"a": 1}
    got.again["b"] += 2                                  # counted by hand: charged so
    G, _ = received_graph(labels=got, node_ids=IDS)
    assert _spent(G) == [2.0, 3.0, 1.0, 1.0]


def test_node_ids_that_repeat_a_user_are_refused_before_anything_is_charged():
    sy = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))
    got = read_reports([Device(u).answer(sy, 1) for u in IDS[:2]], sy, users=IDS)
    P = Population(simulated=False)
    with pytest.raises(ValueError, match="unique"):
        received_graph(labels=got, node_ids=["a", "b", "a"], population=P)
    assert P.ledger.entries() == []                      # a call refused for its arguments


def test_directed_lists_are_read_as_sent():
    se = collection_spec(EdgeRR(2.0, symmetrize="directed"), node_ids=IDS)
    keys = ids_to_keys(np.asarray(IDS))
    pos = {u: int(np.searchsorted(np.sort(keys), k)) for u, k in zip(IDS, keys, strict=True)}
    # lists written by hand (any list of other users is a valid report): "a" names "b" only
    lists = {"a": [pos["b"]], "b": [], "c": [pos["d"]], "d": [pos["c"]]}
    recs = [{"collection": se.id, "user": u, "report": {"l": sorted(v)}}
            for u, v in lists.items()]
    got = read_reports(recs, se, users=IDS)
    assert len(got) == 4 and not got.refused
    G, _ = received_graph(edges=got, node_ids=IDS)
    A = G.adjacency.toarray()
    assert A[0, 1] == 1 and A[1, 0] == 0                 # not symmetrized
    assert A[2, 3] == A[3, 2] == 1 and A.sum() == 3


def test_received_graph_names_a_duplicated_user():
    with pytest.raises(ValueError, match=r"node_ids must be unique, but 1 id\(s\) appear more "
                                         r"than once \(1 extra row\(s\)\): 'a' is at rows 0, 2"):
        received_graph(node_ids=["a", "b", "a"])


def test_sources_that_are_files_but_not_json_lines_are_refused(tmp_path):
    """Several files in a list, a JSON array file, gzip: each line or item would be one
    malformed report, and the ingest would read nothing without an error."""
    import gzip
    import json
    import pathlib

    from skldp.population import write_reports

    spec = collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1]))
    recs = [Device(u).answer(spec, i % 2) for i, u in enumerate(IDS)]
    one, two = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_reports(recs[:2], str(one))
    write_reports(recs[2:], str(two))
    assert len(read_reports(str(one), spec, users=IDS)) == 2
    for files in ([one, two], [open(one), open(two)]):
        with pytest.raises(TypeError, match="own call"):
            read_reports(files, spec, users=IDS)
    with pytest.raises(ValueError, match="own call"):   # paths as text: not one record
        read_reports([str(one), str(two)], spec, users=IDS)
    lines = [json.dumps(r) for r in recs]   # a device's line that names a file is malformed
    assert read_reports(lines + [str(one)], spec, users=IDS).n_refused == 1
    json.dump(recs, open(tmp_path / "all.json", "w"))
    with pytest.raises(ValueError, match="JSON array"):
        read_reports(str(tmp_path / "all.json"), spec, users=IDS)
    with open(tmp_path / "bom.json", "wb") as fh:
        fh.write(b"\xef\xbb\xbf" + json.dumps(recs).encode())
    with pytest.raises(ValueError, match="JSON array"):
        read_reports(str(tmp_path / "bom.json"), spec, users=IDS)
    with gzip.open(tmp_path / "all.jsonl.gz", "wt") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in recs)
    with pytest.raises(ValueError, match="gzip"):
        read_reports(pathlib.Path(tmp_path / "all.jsonl.gz"), spec, users=IDS)


def test_a_first_line_that_is_a_malformed_array_is_one_malformed_report(tmp_path):
    spec = collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1]))
    path = tmp_path / "r.jsonl"
    from skldp.population import write_reports
    write_reports([Device(u).answer(spec, 1) for u in IDS], str(path))
    path.write_text("[1, 2]\n" + path.read_text())
    r = read_reports(str(path), spec, users=IDS)
    assert len(r) == 4 and r.n_refused == 1


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="named pipes")
def test_a_named_pipe_is_read(tmp_path):
    """A path that cannot seek back (a pipe, /dev/stdin) is read from its first line on."""
    import os
    import threading

    spec = collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1]))
    recs = [Device(u).answer(spec, 1) for u in IDS]
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def write():
        import json
        with open(fifo, "w") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in recs)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert len(read_reports(str(fifo), spec, users=IDS)) == 4
    finally:
        writer.join()


@pytest.mark.parametrize("how", ["path", "text stream"])
def test_a_byte_order_mark_does_not_cost_the_first_report(tmp_path, how):
    # a JSON-lines file written with a byte-order mark (Windows tools, "UTF-8 with BOM"):
    # its first record is a record like the others, read and charged
    import io
    import json
    spec = collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1]))
    recs = [Device(u).answer(spec, i % 2) for i, u in enumerate(IDS)]
    text = "\ufeff" + "".join(json.dumps(r) + "\n" for r in recs)
    path = tmp_path / "bom.jsonl"
    path.write_text(text, encoding="utf-8")
    source = str(path) if how == "path" else io.StringIO(text)
    got = read_reports(source, spec, users=IDS)
    assert got.users == IDS and got.n_refused == 0
    G, _ = received_graph(labels=got, node_ids=IDS)
    assert G.ledger.entries()[0].n_users == 4


@pytest.mark.parametrize("kind", [str, bytes])
def test_a_byte_order_mark_on_every_chunk_does_not_cost_their_first_reports(kind):
    # a relay that forwards each device's upload (or each batch, saved by a Windows tool)
    # as one item, each with its own byte-order mark: an item is whole lines (a chunk
    # boundary is a line boundary), so each item's mark is no part of its first record.
    # Only the first item's was stripped: every later chunk lost its first record as
    # "malformed", with no user, and that user was not charged.
    import json
    spec = collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1]))
    recs = [Device(u).answer(spec, i % 2) for i, u in enumerate(IDS)]
    chunks = ["\ufeff" + json.dumps(recs[i]) + "\n" + json.dumps(recs[i + 1]) + "\n"
              for i in (0, 2)]
    chunks = [c.encode() if kind is bytes else c for c in chunks]
    for source in (chunks, iter(chunks)):
        got = read_reports(source, spec, users=IDS)
        assert got.users == IDS and got.n_refused == 0
    G, _ = received_graph(labels=got, node_ids=IDS)
    assert G.ledger.entries()[0].n_users == 4
    # a mark inside an item (not at its start) is still part of its line: malformed
    inside = json.dumps(recs[0]) + "\n\ufeff" + json.dumps(recs[1])
    got = read_reports([inside] + recs[2:], spec, users=IDS)
    assert got.users == ["a", "c", "d"] and got.refused == {"malformed": 1}
