"""A device's user id is a string or an integer (as the server reads it), whatever its
numpy type; its state file is resolved once (a change of directory or a link does not make
a second state), and the kind's name opens the device's messages."""

import json
import os
import warnings

import numpy as np
import pytest

from skldp.device import Device, SpecError
from skldp.mechanisms import LabelRandomizedResponse
from skldp.population import collection_spec, read_reports


@pytest.fixture(scope="module")
def spec():
    return collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1, 2]))


@pytest.mark.parametrize("user", [5.0, np.float64(5.0), True, None, (1, 2)])
def test_ids_the_server_would_refuse_are_refused_by_the_device(user):
    # a float id passed: the server refused every record as malformed and charged no one
    with pytest.raises(TypeError, match="a string or an integer"):
        Device(user)


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
