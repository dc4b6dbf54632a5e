"""The spec a device reads (validation on load) and the device's behaviour (answers once,
secret randomness, its own budget cap)."""

import json
import warnings

import numpy as np
import pytest

from skldp.device import AlreadyAnswered, Device, Directory, SpecError, encode, plan, read_spec
from skldp.mechanisms import (
    EdgeRR,
    GRRFSMechanism,
    HDSMechanism,
    LabelRandomizedResponse,
    MultiBitMechanism,
)
from skldp.population import collection_spec


@pytest.fixture
def hds_spec():
    return collection_spec(HDSMechanism(1.0, k=2, feature_range=(0, 1)), n_features=6)


def _edit(spec, **changes):
    d = spec.to_dict()
    for path, value in changes.items():
        target = d
        *head, last = path.split("__")
        for h in head:
            target = target[h]
        if value is None:
            del target[last]
        else:
            target[last] = value
    return d


def test_spec_is_public_json_and_round_trips(hds_spec):
    text = hds_spec.to_json()
    data = json.loads(text)
    assert data["version"] == 4 and data["kind"] == "skldp.mechanisms.HDSMechanism"
    assert data["public_state"]["k"] == 2 and len(data["public_state"]["feature_min"]) == 6
    assert "random_state" not in data["params"] and "seed" not in text
    assert read_spec(text) == hds_spec
    # two specs of the same request are two collections (ids from the OS's entropy)
    other = collection_spec(HDSMechanism(1.0, k=2, feature_range=(0, 1)), n_features=6)
    assert other.id != hds_spec.id and other.body() == hds_spec.body()


@pytest.mark.parametrize("change,msg", [
    ({"version": 1}, "version 1 is not supported"),
    ({"kind": "skldp.mechanisms.Unknown"}, "unknown mechanism kind"),
    ({"public_state__feature_min": None}, "lacks public_state\\['feature_min'\\]"),
    ({"public_state__feature_max": [1.0] * 5}, "n_features=6"),
    ({"public_state__feature_max": [0.0] * 6}, "feature_min < feature_max"),
    # the server refuses to decode it: answered, its reports would be charged to no one
    ({"public_state__feature_max": [1e-300] * 6}, "grid steps would underflow"),
    ({"epsilon": 0.5}, "spend 1 per user"),
    ({"epsilon": "nan"}, "epsilon must be a number >= 0"),   # a NaN passes every cap
    ({"epsilon": -1.0}, "epsilon must be a number >= 0"),
    ({"epsilon": 10**400}, "epsilon' must be a number"),   # past float's range: no OverflowError
    ({"params__eps": 10**400}, "'eps' must be a number"),
    ({"public_state__feature_max": [10**400] * 6}, "arrays of numbers"),
    ({"delta": "nan"}, "delta must be in \\[0, 1\\]"),
    ({"params__eps": "inf"}, "protects nothing"),
    ({"params__eps": -1}, "must be > 0"),
    ({"public_state__k": 7}, "outside 1..6"),
    ({"id": None}, "lacks \\['id'\\]"),
    ({"extra_field": 1}, "unknown fields"),
    ({"device_steps": [{"kind": "sklearn.preprocessing.StandardScaler", "params": {}}]},
     "do not run"),
])
def test_invalid_specs_are_refused_on_load(hds_spec, change, msg):
    with pytest.raises(SpecError, match=msg):
        read_spec(_edit(hds_spec, **change))


@pytest.mark.parametrize("edges", [[float("nan"), 0.5], [0.5, 0.2], [0.2, 0.2],
                                   [0.2, float("inf")]])
def test_grrfs_spec_with_edges_that_are_not_increasing_finite_numbers_is_refused(edges):
    # a device binned [nan, 0.5] and [0.5, 0.2] (np.digitize reads decreasing edges
    # backwards) where the mechanism refuses them
    spec = collection_spec(GRRFSMechanism(1.0, domain_sizes=[3], bin_edges=[[0.2, 0.5]]),
                           n_features=1)
    read_spec(spec.to_dict())
    with pytest.raises(SpecError, match="strictly increasing 1-D finite edges"):
        read_spec(_edit(spec, params__bin_edges=[edges]))


def test_read_spec_refuses_none():
    # None was opened as a file named 'None' (FileNotFoundError)
    with pytest.raises(TypeError, match="read_spec reads a CollectionSpec"):
        read_spec(None)


def test_edge_answer_refuses_data_that_is_no_neighbour_list():
    # None raised "'NoneType' object is not iterable"; a string was read as its characters
    ids = np.arange(5)
    spec = collection_spec(EdgeRR(2.0), node_ids=ids)
    for bad in (None, "12", 3):
        with pytest.raises(TypeError, match="this user's neighbours, a list of user ids"):
            Device(0).answer(spec, bad, directory=Directory(ids))
    assert "l" in Device(0).answer(spec, [], directory=Directory(ids))["report"]


def test_label_and_edge_specs_refuse_on_device_steps():
    # devices run FeatureHashing / FeatureGrouper before feature mechanisms only: a label
    # or an edge spec with such a step asks for what no device program does
    step = {"kind": "skldp.mechanisms.FeatureHashing", "params": {"n_features": 4}}
    for spec in (collection_spec(LabelRandomizedResponse(2.0, classes=["a", "b"])),
                 collection_spec(EdgeRR(2.0), node_ids=np.arange(5))):
        with pytest.raises(SpecError, match="do not run"):
            read_spec(_edit(spec, device_steps=[step]))


def test_label_and_edge_specs_validate():
    spec = collection_spec(LabelRandomizedResponse(2.0, classes=["a", "b", "c"]))
    assert spec.public_state == {"classes": ["a", "b", "c"]}
    with pytest.raises(SpecError, match="at least two"):
        read_spec(_edit(spec, public_state__classes=["a"]))
    with pytest.raises(ValueError, match="needs the public label domain"):
        collection_spec(LabelRandomizedResponse(2.0))
    ids = np.arange(10) * 3
    espec = collection_spec(EdgeRR(2.0), node_ids=ids)
    assert espec.public_state["n_users"] == 10 and len(espec.public_state["directory"]) == 32
    with pytest.raises(ValueError, match="node_ids"):
        collection_spec(EdgeRR(2.0))
    with pytest.raises(ValueError, match="n_features"):
        collection_spec(HDSMechanism(1.0, feature_range=(0, 1)))
    with pytest.raises(ValueError, match="public value"):
        collection_spec(HDSMechanism(1.0), n_features=3)   # bounds from the placeholder


def test_encode_is_pure_and_keys_change_it(hds_spec):
    x = np.linspace(0, 1, 6)
    a = encode(hds_spec, x, seed=5, key=9)
    assert a == encode(hds_spec.to_json(), x.tolist(), seed=5, key=9)
    reports = {json.dumps(encode(hds_spec, x, seed=5, key=k)) for k in range(50)}
    assert len(reports) > 10
    plan(hds_spec).check(a)


def test_device_answers_once_and_resends_about_changed_data(hds_spec, tmp_path):
    path = str(tmp_path / "answers.json")
    dev = Device(user="alice", path=path)
    x = np.linspace(0, 1, 6)
    first = dev.answer(hds_spec, x)
    assert first["user"] == "alice" and first["collection"] == hds_spec.id
    assert dev.answer(hds_spec, x) == first                  # asked again: the same report
    assert dev.spent == 1.0
    # about changed data: the first answer again (a refusal would tell the server that
    # the data changed), with a warning on the device; nothing spent
    with pytest.warns(AlreadyAnswered, match="resends that answer.*new collection"):
        assert dev.answer(hds_spec, x[::-1]) == first
    assert dev.spent == 1.0
    # input the spec cannot take: its own error, also after an answer (it said "other data")
    with pytest.raises(ValueError, match="rows of 6 features, got shape \\(1, 5\\)"):
        dev.answer(hds_spec, x[:5])
    with pytest.raises(ValueError, match="one row .*shape \\(2, 6\\)"):   # said (1, 12)
        Device(user="bob").answer(hds_spec, np.zeros((2, 6)))
    # the answers survive a restart; the secret seed is not stored
    again = Device(user="alice", path=path)
    assert again.answer(hds_spec, x) == first
    assert "seed" not in open(path).read()
    # a fresh device (fresh entropy) answers differently, with high probability
    reports = {json.dumps(Device(user=i).answer(hds_spec, x)["report"]) for i in range(30)}
    assert len(reports) > 5


def test_device_budget_cap(hds_spec):
    dev = Device(user=1, max_epsilon=1.5)
    dev.answer(hds_spec, np.zeros(6))
    other = collection_spec(MultiBitMechanism(1.0, m=1, feature_range=(0, 1)), n_features=6)
    with pytest.raises(SpecError, match="above its cap"):
        dev.answer(other, np.zeros(6))
    for bad in (float("nan"), -1.0):
        with pytest.raises(ValueError, match="max_epsilon must be a number >= 0"):
            Device(user=1, max_epsilon=bad)


def test_device_answers_a_neighbour_set_in_any_order():
    ids = ["u0", "u1", "u2", "u3"]
    spec = collection_spec(EdgeRR(2.0, symmetrize="or"), node_ids=ids)
    dev = Device("u0")
    first = dev.answer(spec, ["u1", "u2"], directory=Directory(ids))
    # the same neighbours, reordered or repeated: the same report, nothing spent again
    assert dev.answer(spec, ["u2", "u1", "u2"], directory=Directory(ids)) == first
    assert dev.spent == 2.0
    with pytest.warns(AlreadyAnswered):
        assert dev.answer(spec, ["u1", "u3"], directory=Directory(ids)) == first


def test_device_input_checks(hds_spec):
    with pytest.raises(ValueError, match="rows of 6 features"):
        encode(hds_spec, np.zeros(5), seed=1, key=1)
    with pytest.warns(UserWarning, match="6 value\\(s\\) outside"):   # missing: answered
        encode(hds_spec, [np.nan] * 6, seed=1, key=1)
    ids = list(range(8))
    espec = collection_spec(EdgeRR(2.0), node_ids=ids)
    with pytest.raises(ValueError, match="directory does not match"):
        encode(espec, [1], seed=1, key=1, user=0, directory=ids[:-1])
    with pytest.raises(ValueError, match="user is not in the directory"):
        encode(espec, [1], seed=1, key=1, user=99, directory=ids)
    # its own id is left out as a stranger is, never a refusal (that would depend on the data)
    with pytest.warns(UserWarning, match="or are the user itself, and were left out"):
        own = encode(espec, [0, 1], seed=1, key=1, user=0, directory=ids)
    assert own == encode(espec, [1], seed=1, key=1, user=0, directory=ids)


def test_a_feature_that_is_no_number_is_missing_never_a_refusal(hds_spec):
    # "n/a" raised ValueError and 10**400 OverflowError: whether a device answers depended
    # on its data. A word is missing (drawn in the bounds), a huge integer is clipped.
    row = [0.5, "n/a", None, 10**400, -(10**400), 0.25]
    with pytest.warns(UserWarning, match=r"2 value\(s\) outside"):
        got = encode(hds_spec, row, seed=1, key=1)
    with pytest.warns(UserWarning, match=r"2 value\(s\) outside"):
        same = encode(hds_spec, [0.5, np.nan, np.nan, np.inf, -np.inf, 0.25], seed=1, key=1)
    assert got == same


def test_report_sizes_are_stated(hds_spec):
    assert plan(hds_spec).n_bytes() == 2 * 1 + 2 * 4    # 2 indices < 256, 2 cells < 2^32
    onebit = collection_spec(
        __import__("skldp.mechanisms", fromlist=["OneBitMechanism"]).OneBitMechanism(
            1.0, feature_range=(0, 1)), n_features=20)
    assert plan(onebit).n_bytes() == 3                    # 20 bits


def test_a_spec_changed_after_it_was_made_is_refused(hds_spec):
    data = json.loads(hds_spec.to_json())
    data["epsilon"] = data["epsilon"] * 4            # a larger budget than the server set
    with pytest.raises(SpecError, match="does not match its content"):
        read_spec(data)
    assert hds_spec.content_id() == hds_spec.id


def test_a_spec_object_changed_after_an_answer_is_answered_as_it_was_read():
    # the frozen spec's lists were the caller's: a class appended after a first answer
    # reached the cached plan, and a label outside the 2-class domain was sent as itself
    from skldp.mechanisms import LabelRandomizedResponse
    spec = read_spec(collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1])).to_json())
    Device("a").answer(spec, 0)
    spec.public_state["classes"].append(7)
    with pytest.raises(SpecError, match="does not match its content"):
        read_spec(spec)
    with pytest.warns(UserWarning):   # 7 is outside the domain read: a random label
        ys = {Device(f"u{i}").answer(spec, 7)["report"]["y"] for i in range(200)}
    assert ys == {0, 1}
    # a spec read, or written out, shares no list with the data it came from
    data = spec.to_dict()
    data["public_state"]["classes"].append(9)
    assert spec.public_state["classes"] == [0, 1, 7]
    fresh = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1])).to_dict()
    read = read_spec(fresh)
    fresh["public_state"]["classes"].append(5)
    assert read.public_state["classes"] == [0, 1]


def test_a_fitted_mechanism_with_bounds_from_the_data_gives_no_spec():
    from skldp.exceptions import PrivacyLeakWarning
    from skldp.mechanisms import OneBitMechanism
    X = np.array([[3.7, 120.0], [5.1, 80.0]])          # private rows
    with pytest.warns(PrivacyLeakWarning):
        leaky = OneBitMechanism(0.5).fit(X)             # its bounds are X's extremes
    with pytest.raises(ValueError, match="reads a public value"):
        collection_spec(leaky)
    rows = np.random.default_rng(0).random((5, 3))
    public = HDSMechanism(1.0, k=1, feature_range=(0, 1)).fit(rows)
    assert collection_spec(public).id == public.collection_.id   # its own collection


def test_an_infinite_number_in_public_bounds_is_clipped_as_encode_says():
    # encode's docstring said an infinite feature is replaced by a random one: a number in
    # public bounds is clipped to its bound (no warning), as the device spec states; a
    # 0/1 or categorical feature that is infinite is replaced (a warning)
    from skldp.mechanisms import OneBitMechanism, SetValuedMechanism
    spec = collection_spec(OneBitMechanism(1.0, feature_range=(0, 1)), n_features=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = encode(spec, [np.inf, -np.inf, 0.5], seed=1, key=1)
    assert got == encode(spec, [1.0, 0.0, 0.5], seed=1, key=1)
    sets = collection_spec(SetValuedMechanism(1.0, oracle="oue"), n_features=3)
    with pytest.warns(UserWarning, match=r"1 value\(s\) outside"):
        encode(sets, [np.inf, 0, 1], seed=1, key=1)
    doc = " ".join(encode.__doc__.split())
    assert "a missing or infinite feature) is replaced" not in doc
    assert "infinite one is clipped to its bound" in doc
