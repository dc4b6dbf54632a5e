"""A device's state (one file shared by several Device objects, validated on load), the
answer id a resend repeats, and specs refused when they are read (before any allocation)."""

import hashlib
import json
import pickle
import re
import threading
import warnings
from contextlib import contextmanager

import numpy as np
import pytest

from skldp.device import AlreadyAnswered, Device, SpecError, encode, read_spec
from skldp.device._spec import spec_version
from skldp.mechanisms import (
    FeatureGrouper,
    FeatureHashing,
    HDSMechanism,
    LabelRandomizedResponse,
    SetValuedMechanism,
)
from skldp.population import collection_spec
from skldp.population._spec import device_step_spec


@contextmanager
def warnings_as_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


@pytest.fixture
def hds_spec():
    return collection_spec(HDSMechanism(2.0, k=2, feature_range=(0, 1)), n_features=4)


def _reid(d):
    """A hand-made spec with the id its content gives (what anyone can compute)."""
    d = dict(d)
    d.pop("id", None)
    text = json.dumps(d, sort_keys=True).encode()
    d["id"] = hashlib.blake2b(text, digest_size=8, person=b"skldp-spec-id").hexdigest()
    return d


X = np.array([0.0, 1.0, 0.5, 0.2])


# ------------------------------------------------------------------------- answer ids
def test_an_answer_carries_an_answer_id_that_a_resend_repeats(hds_spec, tmp_path):
    path = str(tmp_path / "state.json")
    dev = Device("alice", path=path)
    first = dev.answer(hds_spec, X)
    assert set(first) == {"collection", "user", "answer", "report"}
    assert re.fullmatch("[0-9a-f]{16}", first["answer"])
    assert dev.answer(hds_spec, X) == first                     # a resend
    assert Device("alice", path=path).answer(hds_spec, X) == first   # after a restart
    # a caller that changes the returned record does not change the device's answer
    first["report"]["i"] = [9, 9]
    assert dev.answer(hds_spec, X)["report"]["i"] != [9, 9]
    # each answer draws its own id: two devices, two ids
    other = Device("bob").answer(hds_spec, X)
    assert other["answer"] != dev.answer(hds_spec, X)["answer"]


def test_a_state_written_before_answer_ids_is_read(hds_spec, tmp_path):
    path = tmp_path / "old.json"
    rec = {"collection": hds_spec.id, "user": "alice", "report": {"i": [0, 1], "c": [1, 2]}}
    old = {hds_spec.id: {"input": "x", "record": rec, "epsilon": 2.0}}
    path.write_text(json.dumps(old))
    dev = Device("alice", path=str(path))
    assert dev.spent == 2.0
    with pytest.warns(AlreadyAnswered):
        assert dev.answer(hds_spec, X) == rec   # its input digest differs: resent


def test_the_state_file_holds_nothing_of_the_data(tmp_path):
    # It held sha256(user, data): a label or a 16-bit 0/1 row came back by brute force.
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))
    path = tmp_path / "state.json"
    dev = Device("alice", path=str(path))
    rec = dev.answer(spec, 2)
    (entry,) = json.loads(path.read_text()).values()
    assert entry == {"record": rec, "epsilon": 1.0}
    for guess in (0, 1, 2):   # what a reader of the file could test
        h = hashlib.sha256(repr("alice").encode())
        h.update(np.float64(guess).tobytes())
        assert h.hexdigest() not in path.read_text()
    # the object that answered still warns about changed data (its memory), a copy does not
    # carry the hash, and a device started later warns once it saw the data
    with pytest.warns(AlreadyAnswered):
        assert dev.answer(spec, 0) == rec
    assert pickle.loads(pickle.dumps(dev))._inputs == {}
    later = Device("alice", path=str(path))
    with warnings_as_errors():
        assert later.answer(spec, 1) == rec      # a resend: it cannot tell, and says nothing
    with pytest.warns(AlreadyAnswered):
        assert later.answer(spec, 2) == rec      # other data than it saw


def test_an_older_state_loses_its_hashes_at_the_next_answer(hds_spec, tmp_path):
    path = tmp_path / "old.json"
    rec = {"collection": "0" * 16, "user": "alice", "answer": "ab" * 8, "report": {"y": 0}}
    path.write_text(json.dumps({"0" * 16: {"input": "x", "record": rec, "epsilon": 0.5}}))
    dev = Device("alice", path=str(path))
    dev.answer(hds_spec, X)
    state = json.loads(path.read_text())
    assert all("input" not in entry for entry in state.values()) and len(state) == 2
    assert dev.spent == 2.5


# --------------------------------------------------------------- one file, many devices
def test_two_devices_on_one_state_file_share_it(hds_spec, tmp_path):
    path = str(tmp_path / "state.json")
    a, b = Device("u", path=path, max_epsilon=3), Device("u", path=path, max_epsilon=3)
    ra = a.answer(hds_spec, X)
    assert b.answer(hds_spec, X) == ra                 # b sees a's answer: a resend
    assert a.spent == b.spent == 2.0
    other = collection_spec(HDSMechanism(2.0, k=2, feature_range=(0, 1)), n_features=4)
    with pytest.raises(SpecError, match="above its cap"):
        b.answer(other, X)                             # 2 + 2 > 3, whoever answered first
    with pytest.warns(AlreadyAnswered):
        assert b.answer(hds_spec, 1 - X) == ra
    # no answer is lost: each writes the file again from what it holds under the lock
    path2 = str(tmp_path / "state2.json")
    a, b = Device("u", path=path2, max_epsilon=5), Device("u", path=path2, max_epsilon=5)
    a.answer(hds_spec, X)
    rb = b.answer(other, X)
    with open(path2) as fh:
        assert set(json.load(fh)) == {hds_spec.id, other.id}
    assert Device("u", path=path2).answer(other, X) == rb


def test_concurrent_devices_on_one_file_stay_under_the_cap(tmp_path):
    path = str(tmp_path / "state.json")
    specs = [collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1])) for _ in range(12)]
    barrier = threading.Barrier(len(specs))
    results = []

    def run(spec):
        dev = Device("u", path=path, max_epsilon=5)
        barrier.wait()
        try:
            results.append(dev.answer(spec, 1)["collection"])
        except SpecError:
            results.append(None)

    threads = [threading.Thread(target=run, args=(s,)) for s in specs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    answered = [r for r in results if r is not None]
    assert len(answered) == 5
    with open(path) as fh:
        assert sorted(json.load(fh)) == sorted(answered)
    assert Device("u", path=path).spent == 5.0


# --------------------------------------------------------------------- corrupted state
@pytest.mark.parametrize("content,why", [
    ("", "not JSON"),
    ("{", "not JSON"),
    ("[]", "JSON object is expected, got list"),
    ("null", "JSON object is expected, got NoneType"),
    ('{"x": 1}', "lacks its record or epsilon"),
    ('{"x": {"input": "a", "record": {}, "epsilon": 1}}', "fields of a record"),
    ('{"x": {"input": 1, "record": {}, "epsilon": 1}}', "input is not a string"),
    ('{"x": {"input": "a", "record": {"collection": "x", "user": "u", "report": {}}, '
     '"epsilon": "1"}}', "epsilon is not a number"),
    ('{"x": {"input": "a", "record": {"collection": "x", "user": "u", "report": {}}, '
     '"epsilon": NaN}}', "epsilon is not a number"),
    pytest.param('{"x": {"input": "a", "record": {"collection": "x", "user": "u", '
                 '"report": {}}, "epsilon": 1' + "0" * 400 + '}}', "epsilon is not a number",
                 id="epsilon-past-float-range"),
    ('{"x": {"input": "a", "record": {"collection": "y", "user": "u", "report": {}}, '
     '"epsilon": 1}}', "not of its collection"),
    ('{"x": {"input": "a", "record": {"collection": "x", "user": "v", "report": {}}, '
     '"epsilon": 1}}', "another user's"),
    ('{"x": {"input": "a", "record": {"collection": "x", "user": "u", "answer": 5, '
     '"report": {}}, "epsilon": 1}}', "answer id"),
])
def test_a_corrupted_state_is_an_error_never_a_reset(hds_spec, tmp_path, content, why):
    from skldp.device._errors import DeviceStateError
    path = tmp_path / "state.json"
    path.write_text(content)
    with pytest.raises(DeviceStateError, match=why) as info:
        Device("u", path=str(path))
    assert "answering their collections again would spend" in str(info.value)
    # corrupted after the device was made: answer() reads it again, and refuses
    path.write_text("{}")
    dev = Device("u", path=str(path))
    path.write_text(content)
    with pytest.raises(DeviceStateError):
        dev.answer(hds_spec, X)
    with pytest.raises(DeviceStateError):
        _ = dev.spent
    assert path.read_text() == content                 # left as it was, for its owner


# --------------------------------------------------------------------- device inputs
def test_a_sparse_row_is_a_row(hds_spec):
    sp = pytest.importorskip("scipy.sparse")
    ref = encode(hds_spec, X, seed=1, key=2)
    for fmt in (sp.csr_matrix, sp.coo_matrix, sp.csr_array):
        assert encode(hds_spec, fmt(X[None, :]), seed=1, key=2) == ref
    with pytest.raises(ValueError, match="one row .*sparse matrix of shape \\(2, 4\\)"):
        encode(hds_spec, sp.csr_matrix(np.vstack([X, X])), seed=1, key=2)
    # the device's memory of what it answered about reads the row's values
    sv = collection_spec(SetValuedMechanism(1.0, ell=1, oracle="oue"), n_features=3000)
    a = np.zeros(3000)
    a[1:12] = 1
    b = a.copy()
    b[10], b[2999] = 0, 1
    dev = Device("u")
    first = dev.answer(sv, sp.csr_matrix(a))
    assert dev.answer(sv, a) == first
    with pytest.warns(AlreadyAnswered):
        assert dev.answer(sv, sp.csr_matrix(b)) == first


def test_a_label_outside_the_classes_is_answered_and_not_echoed():
    # a refusal would tell the server that the label is outside its classes
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))
    with pytest.warns(UserWarning, match="outside the collection's public domain") as info:
        record = Device("u").answer(spec, "secret-diagnosis")
    assert record["report"]["y"] in (0, 1)
    assert "secret" not in str(info[0].message)


# ------------------------------------------------------------------ specs refused on read
@pytest.mark.parametrize("where,name,value", [
    ("public_state", "n_features", float("inf")),
    ("public_state", "n_features", float("nan")),
    ("public_state", "k", float("inf")),
    ("public_state", "k", float("nan")),
    ("public_state", "k", "2"),
])
def test_non_finite_integers_are_spec_errors(hds_spec, where, name, value):
    d = hds_spec.to_dict()
    d[where][name] = value
    with pytest.raises(SpecError, match=f"{name} must be an integer"):
        read_spec(json.dumps(_reid(d)))


def test_a_local_collection_has_delta_zero(hds_spec):
    for spec in (hds_spec, collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))):
        d = spec.to_dict()
        d["delta"] = 0.5
        with pytest.raises(SpecError, match="delta=0.5; a local collection"):
            read_spec(_reid(d))
        with pytest.raises(SpecError, match="delta"):
            Device("u").answer(_reid(d), 1 if "Label" in spec.kind else X)


@pytest.mark.parametrize("classes,msg", [
    ([-1, 1], "must not contain -1"),
    ([0, -1.0], "must not contain -1"),
    ([0, -2], "another negative number"),     # an unlabelled node's marker too
    ([None, "a"], "not null"),
    (["a", "nan", float("nan")], "not null, NaN"),
    ([[1], [2]], "not null, NaN or a list"),
    ([0, 1, 1], "duplicates"),
])
def test_a_label_domain_without_the_no_report_marker(classes, msg):
    d = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1])).to_dict()
    d["params"]["classes"] = d["public_state"]["classes"] = classes
    with pytest.raises(SpecError, match=msg):
        read_spec(_reid(d))


def _with_steps(spec, steps):
    d = spec.to_dict()
    d["device_steps"] = steps
    d["version"] = spec_version(steps)
    return _reid(d)


def _hashing(n, clip=1.0, random_state=0, w=10, **extra):
    shipped = {"columns": [j % int(n) for j in range(w)], "signs": [(-1) ** j for j in range(w)]}
    return {"kind": "skldp.mechanisms.FeatureHashing", "n_features_in": w,
            "params": {"n_components": n, "clip": clip, "random_state": random_state, **extra},
            "public_state": shipped}


def _grouper(g, w=10):
    return {"kind": "skldp.mechanisms.FeatureGrouper", "params": {"group_size": g},
            "n_features_in": w}


def test_on_device_steps_are_checked_when_the_spec_is_read(hds_spec):
    import tracemalloc
    # the step's width must be what the mechanism reads: refused before any allocation
    tracemalloc.start()
    with pytest.raises(SpecError, match="n_components=200000000 columns, but the step after "
                                        "it reads 4"):
        read_spec(json.dumps(_with_steps(hds_spec, [_hashing(200_000_000)])))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50e6
    bad = [([_hashing(4, random_state=-1)], "random_state must be an integer >= 0"),
           ([_hashing(4, random_state=True)], "random_state must be an integer >= 0"),
           ([_hashing(4, random_state=None)], "random_state must be an integer >= 0"),
           ([_hashing(4.0)], "n_components must be an integer >= 1"),
           ([_hashing(4, clip=0)], "clip must be a finite number > 0"),
           ([_hashing(4, clip="inf")], "clip must be a finite number > 0"),
           ([_hashing(4, evil=1)], "has the parameters n_components, clip and random_state"),
           ([_hashing(5)], "n_components=5 columns"),
           ([{"kind": "skldp.mechanisms.FeatureHashing", "params": [4]}], "an on-device step"),
           ([_grouper(0)], "group_size must be an integer >= 1"),
           # a grouper of 2 writes 4 columns from 7..8: a hashing to 9 does not fit
           ([_hashing(9), _grouper(2)], "reads 7..8"),
           ([_hashing(6), _grouper(2)], "reads 7..8"),
           # a grouper that does not fix the width: the hashing is capped all the same
           ([_hashing(200_000_000), _grouper(100_000_000)], "n_components=200000000")]
    for steps, msg in bad:
        with pytest.raises(SpecError, match=msg):
            read_spec(_with_steps(hds_spec, steps))
    for steps in ([_hashing(4)], [_hashing(8), _grouper(2, w=8)],
                  [_hashing(7), _grouper(2, w=7)], [_grouper(3)], [_grouper(2), _hashing(4, w=5)]):
        spec = read_spec(_with_steps(hds_spec, steps))
        Device("u").answer(spec, np.ones(10))


def test_a_spec_with_steps_made_by_the_server_is_read():
    raw = np.zeros((1, 30))
    hashing = FeatureHashing(8, clip=1.0, random_state=3).fit(raw)
    grouper = FeatureGrouper(group_size=2).fit(np.zeros((1, 8)))
    spec = collection_spec(HDSMechanism(2.0, k=2, feature_range=(0, 1)), n_features=4)
    d = _with_steps(spec, [device_step_spec(hashing, 30), device_step_spec(grouper, 8)])
    assert read_spec(d).device_steps[0]["params"]["n_components"] == 8
    Device("u").answer(d, np.ones(30))


def test_two_devices_on_one_file_exclude_each_other_without_fcntl(tmp_path, monkeypatch):
    # where fcntl is missing (Windows) each object held its own lock only: both answered
    # past max_epsilon and the file kept one of the two answers
    import time

    import skldp.device._device as device_module
    monkeypatch.setattr(device_module, "fcntl", None)
    encode = device_module.encode

    def encode_slowly(*args, **kwargs):
        time.sleep(0.2)
        return encode(*args, **kwargs)

    monkeypatch.setattr(device_module, "encode", encode_slowly)
    specs = [collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1])).to_json()
             for _ in range(2)]
    path = tmp_path / "state.json"
    devices = [Device(7, path=path, max_epsilon=1.5) for _ in range(2)]
    outcomes = []

    def answer(device, spec):
        try:
            outcomes.append(device.answer(spec, 1))
        except SpecError:
            outcomes.append(None)

    threads = [threading.Thread(target=answer, args=(d, s))
               for d, s in zip(devices, specs, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(o is not None for o in outcomes) == 1          # the cap held
    assert Device(7, path=path).spent == pytest.approx(1.0)   # and the file kept the answer


def test_a_device_copies_only_with_its_state_file(hds_spec, tmp_path):
    # pickling failed on the thread lock; an in-memory copy would answer again and
    # spend max_epsilon again, so it is refused with the way out
    import copy
    import pickle

    with pytest.raises(TypeError, match="path="):
        pickle.dumps(Device("alice", max_epsilon=4))
    with pytest.raises(TypeError, match="path="):
        copy.deepcopy(Device("alice"))
    dev = Device("alice", path=str(tmp_path / "state.json"), max_epsilon=3)
    first = dev.answer(hds_spec, X)
    twin = pickle.loads(pickle.dumps(dev))
    assert twin.answer(hds_spec, X) == first and twin.spent == dev.spent == 2.0
    other = collection_spec(HDSMechanism(2.0, k=2, feature_range=(0, 2)), n_features=4)
    with pytest.raises(SpecError, match=r"take this device to epsilon=4, above its cap of 3"):
        twin.answer(other, X)   # the copy shares the original's spend
