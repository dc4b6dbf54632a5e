"""A device's user id is a string or an integer (as the server reads it), whatever its
numpy type; its state file is resolved once (a change of directory or a link does not make
a second state), and the kind's name opens the device's messages."""

import json
import os
import warnings

import numpy as np
import pytest

from skldp.device import Device, Directory, SpecError, encode
from skldp.mechanisms import EdgeRR, LabelRandomizedResponse
from skldp.population import collection_spec, read_reports


@pytest.fixture(scope="module")
def spec():
    return collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1, 2]))


@pytest.mark.parametrize("user", [5.0, np.float64(5.0), True, None, (1, 2)])
def test_ids_the_server_would_refuse_are_refused_by_the_device(user):
    # a float id passed: the server refused every record as malformed and charged no one
    with pytest.raises(TypeError, match="a string or an integer"):
        Device(user)


@pytest.mark.parametrize("where", ["neighbours", "user", "directory"])
@pytest.mark.parametrize("boolean", [True, np.True_])
def test_an_edge_device_refuses_boolean_ids_wherever_they_are(where, boolean):
    # True beside an integer was keyed as the integer 1 ([True, 7] is an integer array),
    # but hashed as the text "True" beside text or alone: one id, two users
    ids = [1, 5, 7, "a"]
    spec = collection_spec(EdgeRR(1.0), node_ids=ids)
    args = {"neighbours": ([boolean, 7], 5, ids), "user": ([7], boolean, ids),
            "directory": ([7], 5, [*ids, boolean])}[where]
    with pytest.raises(TypeError, match="boolean True, which is no user id"):
        encode(spec, args[0], seed=1, key=2, user=args[1], directory=args[2])
    if where == "directory":
        with pytest.raises(TypeError, match="no user id"):
            Directory(np.array([0, 1], dtype=bool))


def test_an_id_of_a_numpy_type_is_the_same_user(spec, tmp_path):
    path = str(tmp_path / "s.json")
    first = Device(np.int64(7), path=path).answer(spec, 1)
    assert first["user"] == 7 and type(first["user"]) is int
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # the same data: a plain resend, no warning
        assert Device(7, path=path).answer(spec, 1) == first
    got = read_reports([first], spec, users=[7])
    assert got.users == [7] and not got.refused


def test_a_relative_state_path_is_resolved_once(spec, tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    monkeypatch.chdir(a)
    dev = Device("alice", path="state.json", max_epsilon=3.0)
    first = dev.answer(spec, 0)
    monkeypatch.chdir(b)
    assert dev.spent == 2.0 and dev.path == str(a / "state.json")
    with pytest.warns(UserWarning, match="resends that answer"):
        assert dev.answer(spec, 2) == first
    other = collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1, 2]))
    with pytest.raises(SpecError, match="above its cap"):
        dev.answer(other, 0)
    assert not (b / "state.json").exists()


def test_a_linked_state_file_stays_one_state(spec, tmp_path):
    # writing through a link replaced the link by a file: the real state then missed the
    # answer, and a device opened on it answered that collection again
    real, link = tmp_path / "real.json", tmp_path / "link.json"
    Device("alice", path=str(real)).answer(spec, 0)
    os.symlink(real, link)
    other = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))
    second = Device("alice", path=str(link), max_epsilon=3.0).answer(other, 1)
    assert link.is_symlink()
    assert sorted(json.loads(real.read_text())) == sorted([spec.id, other.id])
    assert Device("alice", path=str(real)).answer(other, 1) == second


def test_messages_open_with_the_kind(spec):
    d = spec.to_dict()
    d["epsilon"] = 1.0
    with pytest.raises(SpecError, match=r"^LabelRandomizedResponse spec states epsilon=1 but"):
        Device("a").answer(d, 1)
