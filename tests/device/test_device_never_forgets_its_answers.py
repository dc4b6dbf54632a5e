"""A Device with a state file never forgets the answers it has seen: a file deleted, or
restored from an older copy, while it runs got a fresh answer (new answer id, fresh
randomness) and its max_epsilon restarted. Also: AlreadyAnswered is warned once per
collection (as an error it blocked every resend), an old file's input hashes are dropped
when it is first read, and a state write flushes its folder."""

import json
import os
import shutil
import stat
import warnings

import pytest

from skldp.device import AlreadyAnswered, Device, DeviceStateError, SpecError
from skldp.mechanisms import LabelRandomizedResponse
from skldp.population import collection_spec


def _spec():
    return collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1, 2]))


def test_a_deleted_state_file_is_written_back_and_the_cap_holds(tmp_path):
    path = tmp_path / "state.json"
    dev = Device("u1", path=str(path), max_epsilon=3.0)
    spec = _spec()
    first = dev.answer(spec, 1)
    os.remove(path)
    assert dev.spent == 2.0                       # read 0.0
    assert dev.answer(spec, 1) == first          # a resend, not a new answer id
    assert json.loads(path.read_text())[spec.id]["record"] == first   # put back
    with pytest.raises(SpecError, match="above its cap"):   # 2 + 2 > 3: it answered
        dev.answer(_spec(), 1)
    assert Device("u1", path=str(path)).spent == 2.0


def test_a_state_file_rolled_back_under_a_running_device_does_not_answer_again(tmp_path):
    path = tmp_path / "state.json"
    dev = Device("u2", path=str(path))
    dev.answer(_spec(), 0)
    shutil.copy(path, tmp_path / "backup.json")
    spec2 = _spec()
    second = dev.answer(spec2, 0)
    shutil.copy(tmp_path / "backup.json", path)   # an older copy restored while it runs
    assert dev.answer(spec2, 0) == second
    assert dev.spent == 4.0 and len(json.loads(path.read_text())) == 2


def test_a_state_file_holding_another_answer_to_a_seen_collection_is_refused(tmp_path):
    path = tmp_path / "state.json"
    dev = Device("u3", path=str(path))
    spec = _spec()
    dev.answer(spec, 0)
    state = json.loads(path.read_text())
    rec = state[spec.id]["record"]
    rec["answer"] = "0" * 16 if rec["answer"] != "0" * 16 else "1" * 16
    path.write_text(json.dumps(state))            # another answer, sent by another device
    with pytest.raises(DeviceStateError, match=f"another answer to collection {spec.id}"):
        dev.answer(spec, 0)
    with pytest.raises(DeviceStateError):
        assert dev.spent is None


def test_already_answered_as_an_error_still_lets_the_app_resend():
    spec = _spec()
    dev = Device("u4")
    first = dev.answer(spec, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AlreadyAnswered):
            dev.answer(spec, 2)
        assert dev.answer(spec, 2) == first      # raised on every attempt
        assert dev.answer(spec, 1) == first
    with warnings.catch_warnings(record=True) as caught:   # warned once per collection
        warnings.simplefilter("always")
        other = _spec()
        dev.answer(other, 0)
        for y in (1, 2, 1):
            dev.answer(other, y)
    assert sum(issubclass(w.category, AlreadyAnswered) for w in caught) == 1


def test_an_old_files_input_hashes_are_dropped_when_first_read(tmp_path):
    # a file written before 2026-11-30 held sha256(user, label): three resends kept it
    path = tmp_path / "state.json"
    spec = _spec()
    Device("u5", path=str(path)).answer(spec, 2)
    state = json.loads(path.read_text())
    state[spec.id]["input"] = "ab" * 32
    path.write_text(json.dumps(state))
    dev = Device("u5", path=str(path))
    assert "input" not in path.read_text()        # before any answer
    with pytest.warns(AlreadyAnswered):           # the hash, kept in memory only
        dev.answer(spec, 1)
    assert "input" not in path.read_text()


@pytest.mark.skipif(not hasattr(os, "O_DIRECTORY"), reason="folders open on POSIX only")
def test_a_state_write_flushes_its_folder(tmp_path, monkeypatch):
    synced = []
    fsync = os.fsync

    def spy(fd):
        synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
        fsync(fd)
    monkeypatch.setattr(os, "fsync", spy)
    Device("u6", path=str(tmp_path / "state.json")).answer(_spec(), 0)
    assert synced == [False, True]                # the file, then its folder (the rename)


def test_a_state_in_a_folder_it_cannot_write_is_still_read(tmp_path, monkeypatch):
    # (permissions stubbed: the suite may run as root, whom a read-only folder does not stop)
    from skldp.device import _device
    path = tmp_path / "state.json"
    Device("u9", path=str(path)).answer(_spec(), 1)
    real_open = os.open

    def no_writes(name, flags, *args):
        if str(name).endswith(".lock"):
            raise PermissionError(13, "Permission denied", name)
        return real_open(name, flags, *args)
    monkeypatch.setattr(_device.os, "open", no_writes)
    assert Device("u9", path=str(path)).spent == 2.0   # raised at the lock's creation


def test_a_folder_it_may_write_but_not_read_does_not_stop_an_answer(tmp_path, monkeypatch):
    # the state is renamed into place before the folder is flushed: a folder that cannot
    # be opened (mode 0o300) must not turn every new answer into an error
    from skldp.device import _device
    real_open = os.open

    def no_folder(name, flags, *args):
        if flags & getattr(os, "O_DIRECTORY", 0):
            raise PermissionError(13, "Permission denied", name)
        return real_open(name, flags, *args)
    monkeypatch.setattr(_device.os, "open", no_folder)
    dev = Device("u10", path=str(tmp_path / "state.json"))
    dev.answer(_spec(), 1)
    dev.answer(collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2])), 2)
    assert dev.spent == 3.0
