"""User keys of ids in every form that names the same user: tuples of numpy scalars,
floats beyond 2**53, lists of Python ints beyond int64."""

import datetime
import hashlib

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.device._random import _as_id_array, ids_to_keys
from skldp.mechanisms import EdgeRR, LaplaceMechanism
from skldp.population import collection_spec, read_reports, received_graph


def _objects(ids):
    out = np.empty(len(ids), dtype=object)
    out[:] = list(ids)
    return out


def _text_key(text):
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def test_tuples_of_numpy_scalars_key_as_the_equal_plain_tuples():
    # numpy 2 writes (np.int64(0), np.int64(0)): the user (0, 0) got a second key, so
    # it answered a collection twice and its budget was charged apart
    plain = [(0, 0), (0, 1), ("a", 2.5), ((1, "b"), True), (2**70, -3)]
    numpy_ = [(np.int64(0), np.int64(0)), (np.int32(0), np.uint8(1)),
              (np.str_("a"), np.float64(2.5)), ((np.int16(1), np.str_("b")), np.bool_(True)),
              (2**70, np.int64(-3))]
    keys = ids_to_keys(_objects(plain))
    # the keys of plain tuples are as they were: the digest of their text
    assert keys.tolist() == [_text_key(str(t)) for t in plain]
    np.testing.assert_array_equal(ids_to_keys(_objects(numpy_)), keys)
    # beside numbers (the loop over mixed ids) too
    np.testing.assert_array_equal(ids_to_keys(_objects([7, *numpy_]))[1:], keys)
    assert ids_to_keys(_objects([7, *numpy_]))[0] == 7


def test_plain_tuple_ids_are_keyed_without_a_look_into_each_id(monkeypatch):
    # tuples of Python ints and strings (most networkx nodes): str(id) is their text and
    # none holds a date, so neither the numpy-scalar rewrite nor the date check looks
    # into each tuple (keying 200,000 of them took 5x the time of as many texts)
    from skldp.device import _random
    looked = []
    for name in ("_id_text", "_is_time", "_plain_element"):
        real = getattr(_random, name)
        monkeypatch.setattr(_random, name,
                            lambda v, real=real, name=name: looked.append(name) or real(v))
    ids = [(i % 3, f"u{i}") for i in range(40)]
    G = GraphData(np.zeros((40, 1)), node_ids=ids)
    assert G.node_keys.tolist() == [_text_key(str(t)) for t in ids]
    assert looked == []
    # a tuple holding a numpy scalar, or a date in a nested tuple, is still looked into
    ids[5] = (np.int64(2), "u5")
    assert GraphData(np.zeros((40, 1)), node_ids=ids).node_keys[5] == _text_key("(2, 'u5')")
    assert "_id_text" in looked
    ids[5] = (1, (datetime.date(2020, 1, 1),))
    with pytest.raises(ValueError, match="dates, times or durations"):
        GraphData(np.zeros((40, 1)), node_ids=ids)


def test_networkx_tuple_nodes_of_numpy_ints_are_the_same_users():
    g = nx.grid_2d_graph(2, 2)
    ids_py = list(g.nodes)
    ids_np = [tuple(r) for r in np.array(ids_py)]
    X = np.random.default_rng(0).random((4, 2))
    G = GraphData(X, g, node_ids=ids_py)
    G2 = GraphData(X, g, node_ids=ids_np, population=G)
    np.testing.assert_array_equal(G2.node_keys, G.node_keys)
    # a graph whose nodes are themselves tuples of numpy ints
    g_np = nx.relabel_nodes(g, dict(zip(ids_py, ids_np, strict=True)))
    G3 = GraphData(X, g_np, node_ids=list(g_np.nodes), population=G)
    np.testing.assert_array_equal(G3.node_keys, G.node_keys)
    # one collection, one answer per user: the second view gets the same reports
    m = LaplaceMechanism(eps=1.0, feature_range=(0, 2), random_state=7).fit(G)
    np.testing.assert_array_equal(np.asarray(m.transform(G2)), np.asarray(m.transform(G)))
    np.testing.assert_array_equal(G.ledger.spent(G.node_keys), np.ones(4))
    # a second collection past the budget is refused for these users
    Gb = GraphData(X, g, node_ids=ids_py, budget=1.5)
    LaplaceMechanism(eps=1.0, feature_range=(0, 2), random_state=7).fit(Gb).transform(Gb)
    Gb2 = GraphData(X, g, node_ids=ids_np, population=Gb)
    with pytest.raises(ValueError, match="budget"):
        LaplaceMechanism(eps=1.0, feature_range=(0, 2), random_state=8).fit(Gb2).transform(Gb2)


@pytest.mark.parametrize("ids", [
    np.array([1234567890123456800, 5], dtype=np.float64),
    [1234567890123456800.0, 5.0],
    np.array([1234567890123456800.0, 5], dtype=object),
    np.array([np.float64(-2.0 ** 53), "a"], dtype=object),
    np.array([2.0 ** 60, 1.5], dtype=np.float32),
], ids=["float64", "list", "object", "object-text", "float32"])
def test_float_ids_beyond_2_53_are_refused(ids):
    # user ...800 read from a float column is ...768: it was charged as another user
    with pytest.raises(ValueError, match=r"float(64|32) of magnitude 2\*\*(53|24) or more.*"
                                         r"Read the id column as integers"):
        GraphData(np.zeros((2, 1)), node_ids=ids)
    with pytest.raises(ValueError, match=r"2\*\*(53|24) or more"):
        ids_to_keys(np.asarray(ids))


def test_float32_ids_beyond_2_24_are_refused():
    # users 16777217 and 16777216 read from a float32 column are one float: one key
    with pytest.raises(ValueError, match=r"float32 of magnitude 2\*\*24 or more"):
        GraphData(np.zeros((2, 1)), node_ids=np.array([2**24 + 1, 5], dtype=np.float32))
    with pytest.raises(ValueError, match=r"float32 of magnitude 2\*\*24"):
        ids_to_keys(np.array([np.float32(2**24), "a"], dtype=object))
    below = np.array([2**24 - 1, 7], dtype=np.float32)
    np.testing.assert_array_equal(ids_to_keys(below), np.array([2**24 - 1, 7], np.uint64))


def test_float_ids_below_2_53_are_the_integers():
    ids = np.array([2.0 ** 53 - 1, -(2.0 ** 53 - 1), 7.0])
    expected = np.array([2**53 - 1, -(2**53 - 1), 7], dtype=np.int64).astype(np.uint64)
    np.testing.assert_array_equal(GraphData(np.zeros((3, 1)), node_ids=ids).node_keys,
                                  expected)
    np.testing.assert_array_equal(ids_to_keys(ids.astype(object)), expected)
    # inf (no integer) keeps its key: the digest of its text
    assert ids_to_keys(np.array([np.inf, 1.5]))[0] == ids_to_keys(["inf"])[0]


def test_a_record_of_a_float_id_beyond_2_53_is_charged_to_no_one():
    from skldp.device import Device
    from skldp.mechanisms import LabelRandomizedResponse
    from skldp.population import collection_spec, read_reports, received_graph
    ids = np.array([1234567890123456768, 1234567890123456800, 5], dtype=np.int64)
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))
    rec = Device(user=1234567890123456800).answer(spec, 1)
    bad = dict(rec, user=float(rec["user"]))     # its id column read as float
    good = Device(user=1234567890123456768).answer(spec, 0)
    rr = read_reports([good, bad], spec, users=ids.tolist())
    assert dict(rr.refused) == {"malformed": 1} and not any(rr.again.values())
    G, _ = received_graph(labels=rr, node_ids=ids)
    np.testing.assert_array_equal(G.ledger.spent(G.node_keys), [1.0, 0.0, 0.0])
    # with senders=, the refused record is its authenticated sender's
    rr = read_reports([good, bad], spec, users=ids.tolist(),
                      senders=[1234567890123456768, 1234567890123456800])
    assert dict(rr.again) == {1234567890123456800: 1}
    # a float id below 2**53 still reads as that user (refused, charged to it)
    small = Device(user=2**53 - 1).answer(spec, 1)
    rr = read_reports([dict(small, user=float(2**53 - 1))], spec, users=[2**53 - 1])
    assert dict(rr.again) == {2**53 - 1: 1}


def test_lists_of_integers_beyond_int64_stay_exact():
    # numpy holds [2**63 + 1, 5] as float64: user 2**63 + 1 was keyed as user 2**63
    a, b = 2**63 + 1, 2**63 + 3
    G = GraphData(np.full((3, 1), 0.5), node_ids=[a, b, 2**63])
    H = GraphData(np.full((2, 1), 0.5), population=G, node_ids=[a, 5])
    assert H.all_node_ids.dtype == np.uint64 and H.all_node_ids.tolist() == [a, 5]
    assert H.node_keys.tolist() == [a, 5]
    m = LaplaceMechanism(eps=1.0, feature_range=(0, 1), random_state=4).fit(G)
    r1, r2 = np.asarray(m.transform(G)), np.asarray(m.transform(H))
    np.testing.assert_array_equal(r2[0], r1[0])   # the same user: the same report
    for ids, keys in (([np.uint64(a), np.int64(5)], [a, 5]),
                      ((a, 5.0), [a, 5]),
                      ([2**60 + 1, 2.5], [2**60 + 1, int(ids_to_keys(["2.5"])[0])]),
                      ([-1, 2**64 - 1, 2.5], None)):
        if keys is None:   # -1 and 2**64 - 1 are one key: refused, not rounded
            with pytest.raises(ValueError, match="same user key"):
                GraphData(np.zeros((len(ids), 1)), node_ids=ids)
            continue
        assert GraphData(np.zeros((len(ids), 1)), node_ids=ids).node_keys.tolist() == keys
    # ids that numpy holds exactly keep numpy's array, dtype included
    for ids, dtype in (([1.0, 2.5], np.float64),
                       ([1, 2], np.int64), ([2**63, 1], np.uint64)):
        assert GraphData(np.zeros((2, 1)), node_ids=ids).all_node_ids.dtype == dtype


def test_collections_read_big_integer_and_tuple_ids_as_graph_data_does():
    from skldp.mechanisms import EdgeRR
    from skldp.population import collection_spec, read_reports, received_graph
    for ids in ([2**63 + 1, 2**63 + 3, 5], [(0, 0), (0, 1), ("x", 2)]):
        keys = GraphData(np.zeros((3, 1)), node_ids=ids).node_keys
        spec = collection_spec(EdgeRR(2.0), node_ids=ids)
        assert len(read_reports([], spec, users=ids)) == 0   # users= is its directory
        G, _ = received_graph(node_ids=ids)
        np.testing.assert_array_equal(G.node_keys, keys)


def test_devices_read_directories_and_neighbours_as_graph_data_does():
    # a device's directory and lists went through np.asarray: [2**63 + 1, 5] became
    # floats (neighbour 2**63 + 1 was user 2**63), and tuple ids rows of a 2-D array
    from skldp.device import Device, Directory
    from skldp.mechanisms import EdgeRR
    from skldp.population import collection_spec, read_reports, received_graph
    tuples = [(0, 0), (0, 1), ("x", 2), (1, 1)]   # (a device's user is an int or a str)
    assert Directory(tuples).digest == \
        collection_spec(EdgeRR(2.0), node_ids=tuples).public_state["directory"]
    ids = [2**63 + 1, 2**63 + 3, 5, 2**63]
    spec = collection_spec(EdgeRR(20.0), node_ids=ids)   # (flips: 1e-9)
    assert Directory(ids).digest == spec.public_state["directory"]
    exact = Directory(np.array(ids, dtype=np.uint64))
    recs = [Device(ids[1]).answer(spec, [ids[0], ids[2]], directory=exact)]
    G, _ = received_graph(edges=read_reports(recs, spec, users=ids), node_ids=ids,
                          missing_lists="empty")
    assert G.adjacency[1].nonzero()[1].tolist() == [0, 2]


def test_every_numpy_scalar_in_a_tuple_keys_as_its_plain_value():
    # np.bytes_ and np.complex128 were left as they are: (np.bytes_(b"a"), 1) is the user
    # (b"a", 1) for GraphData ("node_ids must be unique"), but had another key
    for odd, plain in ((np.bytes_(b"a"), b"a"), (np.complex128(1 + 2j), 1 + 2j)):
        np.testing.assert_array_equal(ids_to_keys(_as_id_array([(odd, 1)])),
                                      ids_to_keys(_as_id_array([(plain, 1)])))


def test_a_bool_among_ids_is_refused():
    # False was the integer 0 beside integers but the text "False" beside text: one id,
    # two users (and True == 1 let the user 1 take True's place at ingest)
    for ids in ([False, -1, 2**63 + 1], [False, -1, 5], [False, "a"], np.array([False])):
        with pytest.raises(TypeError, match="boolean False, which is no user id"):
            ids_to_keys(_as_id_array(ids))


def test_a_pandas_index_of_ids_is_one_directory_everywhere():
    # collection_spec and read_reports read an Index as a list, GraphData as an array: the
    # placeholder spec must be the same directory (once a DatetimeIndex, now refused)
    pd = pytest.importorskip("pandas")
    idx = pd.MultiIndex.from_arrays([["a", "a", "b", "b"], [1, 2, 1, 2]])
    G = GraphData(np.zeros((4, 0)), sp.csr_array((4, 4)), node_ids=idx)
    placeholder = collection_spec(EdgeRR(2.0), node_ids=idx)
    assert placeholder.public_state["directory"] == \
        collection_spec(EdgeRR(2.0).fit(G)).public_state["directory"]
    rr = read_reports([], placeholder, users=idx)
    received_graph(edges=rr, node_ids=idx)


def _date_ids():
    pd = pytest.importorskip("pandas")
    d = pd.date_range("2020-01-01", periods=3, freq="D")
    return {"datetime64[us]": d.as_unit("us"), "datetime64[ns]": d.as_unit("ns"),
            "datetime64[s] beyond ns": np.array(["2020-01-01", "2500-01-01", "3000-01-01"],
                                                dtype="datetime64[s]"),
            "Timestamps": d.tolist(), "tz-aware": d.tz_localize("UTC"),
            "datetime": list(d.to_pydatetime()), "date": [v.date() for v in d],
            "timedelta64": np.array([1, 2, 3], dtype="timedelta64[s]"),
            "timedelta64 objects": _objects(np.array([1, 2, 3], dtype="timedelta64[ms]")),
            "Timedelta": pd.to_timedelta([1, 2, 3], unit="D").tolist(),
            "tuples": [("u", v) for v in d], "mixed": ["a", d[0], 3]}


@pytest.mark.parametrize("kind", list(_date_ids()))
def test_dates_and_durations_are_refused_as_ids(kind):
    # the same instant in another unit (or as a Timestamp) was hashed as another text:
    # the same users in two graphs of one population were two keys each, charged apart
    ids = _date_ids()[kind]
    with pytest.raises(ValueError, match="cannot be dates, times or durations"):
        GraphData(np.zeros((3, 1)), node_ids=ids)
    with pytest.raises(ValueError, match="cannot be dates, times or durations"):
        ids_to_keys(_as_id_array(list(ids)))


def test_the_same_dates_in_two_units_cannot_be_two_users():
    pd = pytest.importorskip("pandas")
    d = pd.date_range("2020-01-01", periods=5, freq="D")
    G1 = GraphData(np.zeros((5, 1)), node_ids=d.as_unit("ns").asi8, budget=1.5)
    with pytest.raises(ValueError, match="cannot be dates"):
        GraphData(np.zeros((5, 1)), node_ids=d.as_unit("us"), population=G1)
    # the conversion the message advises is one key per instant, whatever the unit
    np.testing.assert_array_equal(GraphData(np.zeros((5, 1)), node_ids=d.as_unit(
        "s").as_unit("ns").asi8).node_keys, G1.node_keys)
    with pytest.raises(ValueError, match="cannot be dates"):   # the devices' paths too
        collection_spec(EdgeRR(2.0), node_ids=d)
    with pytest.raises(ValueError, match="cannot be dates"):
        received_graph(edges=read_reports([], collection_spec(EdgeRR(2.0), node_ids=range(5)),
                                          users=range(5)), node_ids=d)


def test_population_accepts_a_frame_of_the_default_ids_in_order():
    # G.to_pandas() of a graph of default ids is indexed 0..n-1: the same users, in order
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(0).random((5, 2))
    G = GraphData(X)
    frame = pd.DataFrame(X, index=pd.Index(np.arange(5), name="node_id"))
    assert GraphData(frame, population=G).population is G.population
    with pytest.raises(TypeError, match="population must be a GraphData or a Population"):
        GraphData(X, population=3.0)


def test_string_dtype_and_structured_ids_key_without_a_crash():
    # numpy's StringDType (kind "T") and structured arrays crashed in the refusal of
    # missing ids (len(None)); text keys as the same text does in a '<U' array
    text = np.array(["a", "b", "c"], dtype=np.dtypes.StringDType())
    np.testing.assert_array_equal(ids_to_keys(text), ids_to_keys(np.array(["a", "b", "c"])))
    G = GraphData(np.zeros((3, 0)), node_ids=text)
    np.testing.assert_array_equal(G.node_keys, ids_to_keys(np.array(["a", "b", "c"])))
    assert len(ids_to_keys(np.array([(1,), (2,)], dtype=[("a", int)]))) == 2


def test_a_list_of_arrays_is_refused_by_its_shape():
    # node_ids=[array, array, array] (a 2-D mistake) crashed on "truth value ... ambiguous"
    with pytest.raises(ValueError, match=r"length 3.*shape \(3, 2\)"):
        GraphData(np.zeros((3, 0)), node_ids=[np.array([1, 2]), np.array([3, 4]),
                                              np.array([5, 6])])


def test_ids_of_plain_types_are_not_looked_at_one_by_one(monkeypatch):
    # 1M ids as a list of np.int64 or floats took 0.7 s in a per-value Python loop
    import skldp.device._random as rnd
    calls = []
    monkeypatch.setattr(rnd, "_is_missing", lambda v: calls.append(v) or False)
    GraphData(np.zeros((3, 0)), node_ids=list(np.arange(3)))
    GraphData(np.zeros((3, 0)), node_ids=[1.0, 2.0, 3.0])
    assert calls == []
    # and what is missing is still found: NaN among floats, None beside np.int64
    monkeypatch.undo()
    with pytest.raises(ValueError, match="missing id, nan at position 1"):
        GraphData(np.zeros((3, 0)), node_ids=[1.0, float("nan"), np.float32("nan")])
    with pytest.raises(ValueError, match="missing id, None at position 2"):
        GraphData(np.zeros((3, 0)), node_ids=[np.int64(1), "a", None])
