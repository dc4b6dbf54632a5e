"""A device's answer is encode() drawn with a seed and a key from its entropy (both used),
and an edge collection is answered only with its own directory: a directory of the same
size but other users is refused; the record it returns is a copy: changing it leaves the
answer the device resends as it was."""

import secrets

import pytest

from skldp.device import Device, Directory, encode
from skldp.mechanisms import EdgeRR, OneBitMechanism
from skldp.population import collection_spec

SEED, KEY = 0x1234_5678_9ABC_DEF, 0xFEDC_BA98_7654_3210


def test_an_answer_is_encode_with_a_seed_and_a_key_from_entropy(monkeypatch):
    spec = collection_spec(OneBitMechanism(1.0, feature_range=(0, 1)), n_features=64)
    row = [i % 2 for i in range(64)]

    def randbits(k):
        return {63: SEED, 64: KEY}[k]

    monkeypatch.setattr(secrets, "randbits", randbits)
    record = Device("u").answer(spec, row)
    assert record["report"] == encode(spec, row, seed=SEED, key=KEY)
    # (either number alone fixed at 0 gives another report: both are drawn)
    assert record["report"] != encode(spec, row, seed=0, key=KEY)
    assert record["report"] != encode(spec, row, seed=SEED, key=0)


def test_a_directory_of_other_users_of_the_same_size_is_refused():
    ids = ["a", "b", "c", "d"]
    spec = collection_spec(EdgeRR(2.0), node_ids=ids)
    with pytest.raises(ValueError, match="directory does not match"):
        Device("a").answer(spec, ["b"], directory=Directory(["a", "b", "c", "e"]))
    with pytest.raises(ValueError, match="directory does not match"):
        Device("a").answer(spec, ["b"], directory=["a", "b", "c", "e"])
    assert "l" in Device("a").answer(spec, ["b"], directory=Directory(ids))["report"]


def test_changing_a_returned_record_leaves_the_resend_as_it_was(tmp_path):
    from skldp.mechanisms import LabelRandomizedResponse
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))
    for device in (Device("u"), Device("u", path=tmp_path / "state.json")):
        record = device.answer(spec, 1)
        kept = {**record, "report": dict(record["report"])}
        record["report"]["y"] = 99
        record["answer"] = "0" * 16
        assert device.answer(spec, 1) == kept
