"""Whether a device answers never depends on its data: a label, category or 0/1 feature
outside the public domain is replaced by a uniformly random one, a neighbour outside the
directory is left out, and changed data is answered with the first answer. A server could
otherwise choose a domain (or a directory) and learn from who answers."""

import warnings

import numpy as np
import pytest

from skldp.device import AlreadyAnswered, Device, encode
from skldp.mechanisms import (
    EdgeRR,
    GRRFSMechanism,
    LabelRandomizedResponse,
    SetValuedMechanism,
)
from skldp.population import collection_spec

N = 6000


def _reports(spec, value, field, n=N):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return np.array([np.ravel(encode(spec, value, seed=11, key=k)[field])[0]
                         for k in range(n)])


def test_a_label_outside_the_classes_is_reported_as_a_uniform_class():
    eps, c = 1.0, 3
    spec = collection_spec(LabelRandomizedResponse(eps, classes=[0, 1, 2]))
    out = np.bincount(_reports(spec, 7, "y"), minlength=c) / N
    np.testing.assert_allclose(out, 1 / c, atol=5 * np.sqrt(1 / c / N))
    # against an in-domain label, every output stays within the spec's epsilon
    inside = np.bincount(_reports(spec, 0, "y"), minlength=c) / N
    p = np.exp(eps) / (np.exp(eps) + c - 1)
    np.testing.assert_allclose(inside, [p, (1 - p) / 2, (1 - p) / 2], atol=0.02)
    assert np.all(np.abs(np.log(out / inside)) <= eps + 0.1)
    with pytest.warns(UserWarning, match="1 value\\(s\\) outside"):
        encode(spec, None, seed=1, key=1)


def test_a_category_outside_the_domain_is_reported_as_a_uniform_category():
    mech = GRRFSMechanism(1.0, m=1, categories=[[0, 1, 2], [0, 1]])
    spec = collection_spec(mech, n_features=2)
    # feature 0's code: its randomized response when sampled, a uniform code otherwise;
    # both uniform for a value drawn uniformly
    out = np.bincount(_reports(spec, [7.0, 1.0], "c"), minlength=3) / N
    np.testing.assert_allclose(out, 1 / 3, atol=5 * np.sqrt(1 / 3 / N))
    with pytest.warns(UserWarning, match="2 value\\(s\\) outside"):
        encode(spec, [99.0, 0.5], seed=1, key=1)
    with pytest.raises(ValueError, match="not in its categories"):   # the server: an error
        mech.fit(np.array([[7.0, 1.0], [1.0, 0.0]]))


def test_a_feature_that_is_not_0_or_1_is_answered():
    spec = collection_spec(SetValuedMechanism(1.0, ell=1, oracle="grr"), n_features=4)
    with pytest.warns(UserWarning, match="1 value\\(s\\) outside"):
        report = encode(spec, [1.0, 0.0, 0.5, 0.0], seed=1, key=1)
    assert 0 <= report["v"] <= 4
    binarized = collection_spec(SetValuedMechanism(1.0, ell=1, oracle="grr", binarize=0.5),
                                n_features=4)
    with pytest.warns(UserWarning, match="2 value\\(s\\) outside"):
        report = encode(binarized, [np.inf, 0.0, np.nan, 0.7], seed=1, key=1)
    assert 0 <= report["v"] <= 4


def test_neighbours_outside_the_directory_are_left_out():
    ids = list(range(8))
    spec = collection_spec(EdgeRR(2.0), node_ids=ids)
    for seed in range(20):
        with pytest.warns(UserWarning, match="2 neighbour\\(s\\) are not in the directory"):
            with_outsiders = encode(spec, [1, 99, 3, -5], seed=seed, key=seed, user=0,
                                    directory=ids)
        assert with_outsiders == encode(spec, [1, 3], seed=seed, key=seed, user=0,
                                        directory=ids)


def test_changed_data_is_answered_with_the_first_answer():
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))
    dev = Device("u", max_epsilon=1.0)
    first = dev.answer(spec, 0)
    with pytest.warns(AlreadyAnswered, match="resends that answer"):
        assert dev.answer(spec, 2) == first
    assert dev.spent == 1.0


def test_missing_and_infinite_features_are_answered():
    from skldp.mechanisms import HDSMechanism
    spec = collection_spec(HDSMechanism(1.0, k=2, feature_range=(0, 1)), n_features=3)
    with pytest.warns(UserWarning, match="1 value\\(s\\) outside"):
        report = encode(spec, [np.nan, np.inf, 0.5], seed=1, key=1)
    assert len(report["i"]) == 2
    gr = collection_spec(GRRFSMechanism(1.0, m=2, domain_sizes=[3, 2]), n_features=2)
    with pytest.warns(UserWarning, match="2 value\\(s\\) outside"):
        encode(gr, [np.nan, -np.inf], seed=1, key=1)


def test_a_label_that_does_not_compare_is_answered_and_a_label_array_refused():
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))
    for missing in (float("nan"), None):
        with pytest.warns(UserWarning, match="outside"):
            assert encode(spec, missing, seed=1, key=1)["y"] in (0, 1, 2)
    pd = pytest.importorskip("pandas")
    with pytest.warns(UserWarning, match="outside"):
        assert encode(spec, pd.NA, seed=1, key=1)["y"] in (0, 1, 2)   # ("ambiguous")
    with pytest.raises(TypeError, match="one label"):    # a port's slicing: not data
        encode(spec, np.array([2]), seed=1, key=1)


def test_neighbours_left_out_are_counted_in_a_warning():
    ids = [f"user{i}" for i in range(8)]
    spec = collection_spec(EdgeRR(2.0), node_ids=ids)
    with pytest.warns(UserWarning, match="3 neighbour\\(s\\) are not in the directory.*"
                                         "not by positions"):
        Device("user0").answer(spec, [1, 2, 3], directory=ids)   # positions, not ids


def test_devices_in_threads_leave_the_warning_filters_alone():
    # the check of changed data ran under catch_warnings, which is not thread-safe: it left
    # ("ignore", UserWarning) behind, which silenced PrivacyLeakWarning in the process
    import threading
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))
    devices = [Device(f"u{i}") for i in range(16)]
    for d in devices:
        d.answer(spec, 0)
    before = list(warnings.filters)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AlreadyAnswered)
        inner = list(warnings.filters)
        threads = [threading.Thread(target=lambda d=d: [d.answer(spec, 1) for _ in range(20)])
                   for d in devices]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert warnings.filters == inner
    assert warnings.filters == before


def test_warned_after_the_answer_is_kept():
    # with warnings turned into errors the device raises once, but its answer is kept and
    # resent when asked again (no refusal that would depend on the data)
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1]))
    dev = Device("u")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="outside"):
            dev.answer(spec, 5)
        record = dev.answer(spec, 5)
    assert dev.spent == 1.0 and record["report"]["y"] in (0, 1)
