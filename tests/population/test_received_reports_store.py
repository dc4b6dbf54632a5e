"""The reports the server keeps (labels) are stored as sorted arrays: a user's latest
report is the one read, a user who sent none reads as not found, and a pickle of the
older per-user dict loads."""

import pickle

import numpy as np

from skldp import GraphData
from skldp.mechanisms import LabelRandomizedResponse
from skldp.population._population import _Kept


def test_the_latest_report_of_each_user_is_read_and_others_are_missing():
    G = GraphData(np.zeros((4, 1)), node_ids=[11, 12, 13, 14])
    lrr = LabelRandomizedResponse(1.0, classes=np.arange(7), random_state=0).fit()
    sent = lrr.randomize(np.array([1, 2, 3]), G[:3])
    pop, spec = G.population, lrr.collection_
    reports, found = pop.received(spec.id, G.node_keys)
    np.testing.assert_array_equal(found, [True, True, True, False])
    np.testing.assert_array_equal(reports[:3], lrr.encode(np.asarray(sent)))
    pop.receive(spec, np.array([5, 3, 9], np.uint64), reports=np.array([0, 1, 2]))
    pop.receive(spec, np.array([9, 7], np.uint64), reports=np.array([4, 5]))   # 9 again
    reports, found = pop.received(spec.id, np.array([9, 3, 4, 7, 5], np.uint64))
    np.testing.assert_array_equal(found, [True, True, False, True, True])
    np.testing.assert_array_equal(reports[found], [4, 1, 5, 0])
    assert not pop.received("other", np.array([3], np.uint64))[1].any()
    # a copy reads the same
    reports2, found2 = pickle.loads(pickle.dumps(pop)).received(
        spec.id, np.array([9, 3, 4, 7, 5], np.uint64))
    np.testing.assert_array_equal(found2, found)
    np.testing.assert_array_equal(reports2[found2], reports[found])


def test_kept_reports_read_as_a_dict_of_them_would():
    rng = np.random.default_rng(0)
    kept, want = _Kept(), {}
    for _ in range(5):
        keys = rng.integers(0, 50, 30).astype(np.uint64)
        reports = rng.integers(0, 7, 30)
        kept.add(keys, reports)
        want.update(zip(keys.tolist(), reports.tolist(), strict=True))   # (later wins)
        if rng.random() < 0.5:
            kept.merged()
    keys, reports = kept.merged()
    assert keys.tolist() == sorted(want)
    assert reports.tolist() == [want[k] for k in sorted(want)]
    # the older pickled format: a dict per collection
    old = _Kept.from_state(want)
    np.testing.assert_array_equal(old.merged()[0], keys)
    np.testing.assert_array_equal(old.merged()[1], reports)


def test_reports_added_while_a_merge_runs_are_kept_and_the_callers_arrays_stay_theirs():
    # Before: a merge (under the population's lock) dropped every chunk queued meanwhile
    # by a thread adding outside the lock: 1,000 of 2,000 kept reports were lost
    from skldp.population._population import _Digests

    late = (np.array([7, 8], np.uint64), np.array([3, 4]))

    class AddedDuringTheMerge(list):
        added = False

        def __getitem__(self, i):
            out = list.__getitem__(self, i)
            if isinstance(i, slice) and not self.added:   # the merge has read its chunks
                self.added = True
                self.append(late)
            return out

    kept = _Kept()
    keys, reports = np.array([5, 7], np.uint64), np.array([1, 2])
    kept.add(keys, reports)
    kept.chunks = AddedDuringTheMerge(kept.chunks)
    kept.merged()
    np.testing.assert_array_equal(kept.merged()[0], [5, 7, 8])
    np.testing.assert_array_equal(kept.merged()[1], [1, 3, 4])   # 7's latest report: 3
    reports[:] = 9   # the caller's array: no record of the server's
    keys[:] = 0
    np.testing.assert_array_equal(kept.merged()[1], [1, 3, 4])
    digests = _Digests()
    digests.add(np.array([1], np.uint64), np.array([10], np.uint64))
    digests.chunks = AddedDuringTheMerge(digests.chunks)
    late = digests._pairs(np.array([2], np.uint64), np.array([20], np.uint64))
    digests.merged()
    assert digests.contains(np.array([1, 2], np.uint64), np.array([10, 20], np.uint64)).all()
