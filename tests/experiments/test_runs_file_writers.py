"""The runs file as several writers and a killed one leave it: whole lines, each key once,
the right line numbers, every record on disk before append returns."""

import fcntl
import json
import os
import threading
import time

import pytest

from skldp.experiments import RunsFile, RunsFileError, _runs, load_runs


def _rec(key, acc=0.5, study="t"):
    return {"study": study, "key": key, "metrics": {"accuracy": acc}}


def _line(rec):
    return (json.dumps(rec) + "\n").encode()


def test_two_writers_on_one_file_record_a_key_once(tmp_path):
    # each sweep has its own RunsFile on the shared file: the second one must see, under
    # the file lock, that the first one has recorded the key meanwhile
    path = tmp_path / "t_runs.jsonl"
    a, b = RunsFile(path, "t"), RunsFile(path, "t")
    assert a.append({"key": "k", "metrics": {"accuracy": 0.1}})
    assert not b.append({"key": "k", "metrics": {"accuracy": 0.2}})
    assert "k" in b and [r["metrics"]["accuracy"] for r in b.records] == [0.1]
    assert b.append({"key": "j", "metrics": {"accuracy": 0.3}})
    assert not a.append({"key": "j", "metrics": {"accuracy": 0.4}})
    assert [(r["key"], r["metrics"]["accuracy"]) for r in load_runs(path, "t")] == [
        ("k", 0.1), ("j", 0.3)]
    assert len(path.read_bytes().splitlines()) == 2


def test_a_line_being_written_by_another_process_is_left_for_later(tmp_path):
    path = tmp_path / "t_runs.jsonl"
    path.write_bytes(_line(_rec("a")))
    rf = RunsFile(path, "t")
    whole = _line(_rec("b"))
    with open(path, "ab") as f:          # another writer, half way through its line
        f.write(whole[:10])
    assert rf.refresh() == [] and "b" not in rf
    with open(path, "ab") as f:
        f.write(whole[10:])
    assert [r["key"] for r in rf.refresh()] == ["b"] and len(rf) == 2


def test_append_writes_a_whole_line_after_a_cut_one(tmp_path):
    # a writer killed mid-line leaves no newline: the next record must not be glued to it
    path = tmp_path / "t_runs.jsonl"
    rf = RunsFile(path, "t")
    assert rf.append({"key": "a", "metrics": {"accuracy": 0.5}})
    with open(path, "ab") as f:
        f.write(_line(_rec("b"))[:15])   # killed writer: no newline
    # refresh() leaves a partial last line alone, so the append goes on
    assert rf.append({"key": "c", "metrics": {"accuracy": 0.5}})
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and json.loads(lines[-2])["key"] == "c"
    assert lines[1] == _line(_rec("b"))[:15]
    with pytest.raises(RunsFileError, match=r"t_runs.jsonl:2: not a JSON record"):
        load_runs(path, "t")


def test_errors_after_appends_name_the_right_line(tmp_path):
    path = tmp_path / "t_runs.jsonl"
    path.write_bytes(_line(_rec("a")))
    rf = RunsFile(path, "t")
    for key in ("b", "c"):
        assert rf.append({"key": key, "metrics": {"accuracy": 0.5}})
    other = RunsFile(path, "t")
    assert other.append({"key": "d", "metrics": {"accuracy": 0.5}})
    assert [r["key"] for r in rf.refresh()] == ["d"]
    assert [r["key"] for r in rf.refresh()] == []        # nothing read twice
    with open(path, "ab") as f:
        f.write(b'{"study": "t", "key": "e"}\n')          # line 5: no metrics
    with pytest.raises(RunsFileError, match=r"t_runs.jsonl:5: record 'e' has no 'metrics'"):
        rf.refresh()
    with pytest.raises(RunsFileError, match=r"t_runs.jsonl:5: record 'e'"):
        other.refresh()


def test_refresh_skips_a_key_already_recorded(tmp_path):
    # a key recorded twice (by a tool that bypassed the lock) counts once, as load_runs does
    path = tmp_path / "t_runs.jsonl"
    path.write_bytes(_line(_rec("a", 0.1)))
    rf = RunsFile(path, "t")
    with open(path, "ab") as f:
        f.write(_line(_rec("a", 0.9)) + _line(_rec("b")))
    assert [r["key"] for r in rf.refresh()] == ["b"]
    assert [(r["key"], r["metrics"]["accuracy"]) for r in rf.records] == [("a", 0.1),
                                                                          ("b", 0.5)]


def test_append_syncs_the_record_to_disk(tmp_path, monkeypatch):
    synced = []
    fsync = os.fsync

    def spy(fd):
        synced.append(os.fstat(fd).st_size)
        fsync(fd)

    monkeypatch.setattr(_runs.os, "fsync", spy)
    rf = RunsFile(tmp_path / "t_runs.jsonl", "t")
    assert rf.append({"key": "a", "metrics": {"accuracy": 0.5}})
    assert synced == [rf.path.stat().st_size]     # after the line was written


def test_a_short_write_is_completed_or_undone(tmp_path, monkeypatch):
    # a write may take part of a line (a disk nearly full, a file-size limit): the rest was
    # dropped, the run counted as recorded and the next opening found a damaged line
    path = tmp_path / "t_runs.jsonl"
    rf = RunsFile(path, "t")
    assert rf.append(_rec("a"))
    write = os.write
    monkeypatch.setattr(_runs.os, "write", lambda fd, data: write(fd, bytes(data[:7])))
    assert rf.append(_rec("b"))                    # seven bytes at a time, to the end
    full = []

    def then_full(fd, data):
        if full:
            raise OSError(28, "No space left on device")
        full.append(1)
        return write(fd, bytes(data[:7]))

    monkeypatch.setattr(_runs.os, "write", then_full)
    with pytest.raises(OSError, match="No space"):
        rf.append(_rec("c"))
    monkeypatch.setattr(_runs.os, "write", write)
    assert path.read_bytes() == _line(_rec("a")) + _line(_rec("b"))   # cut back
    assert "c" not in rf and len(rf) == 2
    assert rf.append(_rec("c")) and rf.refresh() == []                # offset kept right
    assert [r["key"] for r in load_runs(path, "t")] == ["a", "b", "c"]


def test_append_waits_for_the_file_lock(tmp_path):
    path = tmp_path / "t_runs.jsonl"
    path.write_bytes(_line(_rec("a")))
    rf = RunsFile(path, "t")
    done = []
    with open(path, "ab") as other:               # another process is writing
        fcntl.flock(other, fcntl.LOCK_EX)
        t = threading.Thread(target=lambda: done.append(
            rf.append({"key": "b", "metrics": {"accuracy": 0.5}})))
        t.start()
        time.sleep(0.3)
        assert not done and path.read_bytes() == _line(_rec("a"))
        other.write(_line(_rec("b", 0.7)))        # it records the same key, then unlocks
        other.flush()
        fcntl.flock(other, fcntl.LOCK_UN)
    t.join(10)
    assert done == [False]
    assert [(r["key"], r["metrics"]["accuracy"]) for r in load_runs(path, "t")] == [
        ("a", 0.5), ("b", 0.7)]


@pytest.mark.parametrize("record, message", [
    ({"key": "a", "metrics": {"accuracy": True}}, "metric 'accuracy' is True, not a number"),
    ({"key": "", "metrics": {"accuracy": 0.5}}, "the record's 'key' is '', not a non-empty"),
])
def test_a_bool_metric_or_an_empty_key_is_refused(tmp_path, record, message):
    rf = RunsFile(tmp_path / "t_runs.jsonl", "t")
    with pytest.raises(RunsFileError, match=message):
        rf.append(record)
    assert not rf.path.exists()
    rf.path.write_bytes(_line({"study": "t", **record}))
    with pytest.raises(RunsFileError, match=f"t_runs.jsonl:1: .*{message}"):
        load_runs(rf.path, "t")


def test_load_runs_of_a_file_not_written_yet(tmp_path):
    assert load_runs(tmp_path / "none_runs.jsonl", "none") == []
    assert len(RunsFile(tmp_path / "none_runs.jsonl", "none")) == 0


def _wait_in_thread(fn):
    """Start ``fn`` in a thread; its result (or exception) lands in the returned list."""
    out = []

    def target():
        try:
            out.append(fn())
        except Exception as exc:  # noqa: BLE001 - handed to the test
            out.append(exc)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, out


def test_opening_waits_for_a_line_another_process_is_writing(tmp_path):
    # was "t_runs.jsonl:2: not a JSON record ... delete this line": the file was read
    # without the lock while another process was half way through its line
    path = tmp_path / "t_runs.jsonl"
    path.write_bytes(_line(_rec("a")))
    whole = _line(_rec("b"))
    with open(path, "ab") as other:               # another process is writing
        fcntl.flock(other, fcntl.LOCK_EX)
        other.write(whole[:10])
        other.flush()
        t, out = _wait_in_thread(lambda: RunsFile(path, "t"))
        time.sleep(0.3)
        assert not out                             # waits; no error
        other.write(whole[10:])
        other.flush()
        fcntl.flock(other, fcntl.LOCK_UN)
    t.join(10)
    assert isinstance(out[0], RunsFile) and [r["key"] for r in out[0].records] == ["a", "b"]


def test_opening_still_reports_a_line_cut_by_a_killed_writer(tmp_path):
    path = tmp_path / "t_runs.jsonl"
    path.write_bytes(_line(_rec("a")) + _line(_rec("b"))[:10])   # no lock held: damage
    with pytest.raises(RunsFileError, match=r"t_runs.jsonl:2: not a JSON record"):
        RunsFile(path, "t")


def test_locked_reads_every_record_and_keeps_writers_out(tmp_path):
    # a sweep that read the file before another appended its last run wrote its page
    # last, one record short: the page is written under the lock, from the whole file
    path = tmp_path / "t_runs.jsonl"
    a, b = RunsFile(path, "t"), RunsFile(path, "t")
    assert a.append(_rec("a")) and b.append(_rec("b"))
    assert [r["key"] for r in a.records] == ["a"]          # a's snapshot is stale
    with a.locked() as records:
        assert [r["key"] for r in records] == ["a", "b"]
        with open(path, "rb") as f, pytest.raises(BlockingIOError):
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        t, out = _wait_in_thread(lambda: b.append(_rec("c")))
        time.sleep(0.3)
        assert not out and [r["key"] for r in load_runs(path, "t")] == ["a", "b"]
        with pytest.raises(RuntimeError, match="append within locked"):
            a.append(_rec("d"))
    t.join(10)
    assert out == [True]
    with a.locked() as records:
        assert [r["key"] for r in records] == ["a", "b", "c"]
    assert a.append(_rec("d"))                     # released: appends again


def test_locked_on_a_file_not_written_yet(tmp_path):
    rf = RunsFile(tmp_path / "t_runs.jsonl", "t")
    with rf.locked() as records:
        assert records == []
    assert not rf.path.exists()


def test_load_runs_leaves_out_a_line_another_process_is_writing(tmp_path):
    # was "t_runs.jsonl:2: not a JSON record": load_runs read without looking at the lock
    path = tmp_path / "t_runs.jsonl"
    path.write_bytes(_line(_rec("a")))
    whole = _line(_rec("b"))
    with open(path, "ab") as other:               # another process is writing
        fcntl.flock(other, fcntl.LOCK_EX)
        other.write(whole[:10])
        other.flush()
        assert [r["key"] for r in load_runs(path, "t")] == ["a"]
        other.write(whole[10:])
        other.flush()
        fcntl.flock(other, fcntl.LOCK_UN)
    assert [r["key"] for r in load_runs(path, "t")] == ["a", "b"]


def test_a_rewrite_is_seen_by_every_reader_and_writer(tmp_path):
    path = tmp_path / "t_runs.jsonl"
    a, b = RunsFile(path, "t"), RunsFile(path, "t")
    for key in "xyz":
        assert a.append(_rec(key))
    assert a.rewrite(lambda r: None if r["key"] == "y" else r) == 1
    assert [r["key"] for r in a.records] == ["x", "z"]
    assert [r["key"] for r in b.refresh()] == ["x", "z"]         # read again from its start
    assert [r["key"] for r in b.records] == ["x", "z"] and "y" not in b
    assert b.append(_rec("y", 0.9))                              # a new record of the key
    assert a.rewrite(lambda r: r) == 0                           # nothing changed: untouched
    assert [(r["key"], r["metrics"]["accuracy"]) for r in load_runs(path, "t")] == [
        ("x", 0.5), ("z", 0.5), ("y", 0.9)]


def test_an_append_waiting_for_a_rewrite_goes_to_the_new_file(tmp_path):
    # the appender opened the file before it was replaced: its record must not go to the
    # replaced file, which no one reads any more
    path = tmp_path / "t_runs.jsonl"
    path.write_bytes(_line(_rec("a")) + _line(_rec("b")))
    rf = RunsFile(path, "t")
    with open(path, "rb") as old:                 # a rewrite in progress holds the lock
        fcntl.flock(old, fcntl.LOCK_EX)
        t, out = _wait_in_thread(lambda: rf.append(_rec("c")))
        time.sleep(0.3)
        assert not out
        new = tmp_path / "new"
        new.write_bytes(_line(_rec("b")))
        os.replace(new, path)                     # the new file, without "a"
        fcntl.flock(old, fcntl.LOCK_UN)
    t.join(10)
    assert out == [True]
    assert [r["key"] for r in load_runs(path, "t")] == ["b", "c"]
    assert [r["key"] for r in rf.records] == ["b", "c"]


def test_a_rewrite_that_fails_leaves_the_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "t_runs.jsonl"
    rf = RunsFile(path, "t")
    assert rf.append(_rec("a")) and rf.append(_rec("b"))
    before = path.read_bytes()

    def full(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_runs, "_write_all", full)
    with pytest.raises(OSError, match="No space"):
        rf.rewrite(lambda r: None if r["key"] == "a" else r)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["t_runs.jsonl"]   # no temporary file
    monkeypatch.undo()
    with open(path, "ab") as f:
        f.write(_line(_rec("c"))[:12])            # a line cut by a killed writer
    with pytest.raises(RunsFileError, match=r":3: not a JSON record"):
        rf.rewrite(lambda r: r)
    assert path.read_bytes() == before + _line(_rec("c"))[:12]      # reported, not rewritten
