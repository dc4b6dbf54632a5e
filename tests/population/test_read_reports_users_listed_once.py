"""read_reports refuses a directory (users=) that lists a user twice, by id or by key
(-1 and 2**64 - 1), naming the repeated ids: two ids of one key let one person's two
answers be kept as two users' reports; an id listed twice says the directory is wrong."""

import numpy as np
import pytest

from skldp.device import Device
from skldp.mechanisms import EdgeRR, LabelRandomizedResponse
from skldp.population import collection_spec, read_reports


@pytest.fixture(scope="module")
def spec():
    return collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))


def test_an_id_listed_twice_is_refused_by_name(spec):
    recs = [Device(u).answer(spec, 1) for u in ("a", "b")]
    with pytest.raises(ValueError, match=r"users lists 1 user more than once: 'b' \(at "
                                         r"positions 1, 3\)"):
        read_reports(recs, spec, users=["a", "b", "c", "b"])


def test_two_ids_of_one_key_are_refused_by_name(spec):
    # before: both kept, one person's two answers as the reports of two users
    recs = [Device(u).answer(spec, 1) for u in (-1, 2**64 - 1, 3)]
    with pytest.raises(ValueError, match=r"-1 and 18446744073709551615 \(at positions 0, "
                                         r"1; one key\)"):
        read_reports(recs, spec, users=[-1, 2**64 - 1, 3])


def test_every_repeated_user_is_named(spec):
    with pytest.raises(ValueError, match=r"2 users more than once: 5 \(.*\); 7 \(.*\)"):
        read_reports([], spec, users=np.array([5, 7, 5, 7, 7, 9]))


def test_an_id_and_its_text_are_two_users(spec):
    # 5 and "5" are two keys: a directory may list both (tests/population/
    # test_ingest_two_spellings.py)
    rr = read_reports([Device(5).answer(spec, 1), Device("5").answer(spec, 0)], spec,
                      users=[5, "5"])
    assert sorted(map(repr, rr.users)) == ["'5'", "5"]


def test_an_edge_directory_with_a_repeat_is_refused_by_name():
    ids = [1, 2, 3]
    spec = collection_spec(EdgeRR(4.0), node_ids=ids)
    recs = [Device(u).answer(spec, [v for v in ids if v != u], directory=ids) for u in ids]
    with pytest.raises(ValueError, match=r"more than once: 2 \(at positions 1, 3\)"):
        read_reports(recs, spec, users=[1, 2, 3, 2])
