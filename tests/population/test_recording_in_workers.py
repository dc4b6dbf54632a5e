"""A recording sees the reports that copies of the population send from worker processes
(an ensemble or a search with n_jobs): Correct and Smooth propagates the labels the users
sent, an audit sees every report, and a report counts the workers' ledger copies once."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.ensemble import VotingClassifier
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.baselines import CorrectAndSmooth
from skldp.mechanisms import LabelRandomizedResponse, OneBitMechanism
from skldp.models import GCNClassifier


def _graph(n=120, seed=0):
    rng = np.random.default_rng(seed)
    return GraphData(rng.random((n, 2)), sp.csr_matrix((n, n))), rng.integers(0, 2, n)


def _randomize_labels(G, y):
    rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0).fit()
    return rr.randomize(y, G)


def _send_features(G):
    return OneBitMechanism(0.5, feature_range=(0, 1), random_state=0).fit_transform(G).shape


@pytest.mark.long
def test_a_recording_receives_the_reports_of_worker_processes():
    G, y = _graph()
    with G.population.recording() as everything, \
            G.population.recording(protects=("labels",)) as labels:
        (sent,) = Parallel(n_jobs=2)(delayed(_randomize_labels)(G, y) for _ in range(1))
        Parallel(n_jobs=2)(delayed(_send_features)(G) for _ in range(1))
    assert [s.protects for s, _, _ in everything] == [("labels",), ("features",)]
    ((spec, keys, reports),) = labels
    np.testing.assert_array_equal(keys, G.node_keys)
    np.testing.assert_array_equal(np.asarray(spec.public_state["classes"])[reports], sent)
    with G.population.recording() as later:   # a recording that ended receives nothing more
        pass
    Parallel(n_jobs=2)(delayed(_send_features)(G) for _ in range(1))
    assert later == [] and len(everything) == 2


def _base():
    return Pipeline([
        ("bit", OneBitMechanism(0.5, feature_range=(0, 1), split_eps=True, random_state=0)),
        ("gcn", GCNClassifier(epochs=5, random_state=0, device="cpu",
                              label_mechanism=LabelRandomizedResponse(1.0, classes=[0, 1],
                                                                      random_state=0)))])


@pytest.mark.long
def test_correct_and_smooth_propagates_the_labels_sent_from_a_worker_process():
    # The base model's label randomiser ran in a worker: C&S propagated the clean labels
    # (audit lower bound 5.98 against the printed 1.5).
    G, y = _graph()
    fits = {}
    for n_jobs in (1, 2):
        users = G.new_simulation()
        cs = CorrectAndSmooth(VotingClassifier([("g", _base())], voting="soft",
                                               n_jobs=n_jobs)).fit(users, y)
        fits[n_jobs] = cs, privacy_report(cs)
    (one, rep1), (two, rep2) = fits[1], fits[2]
    assert not np.array_equal(one.classes_[one.train_labels_], y)   # randomized labels
    np.testing.assert_array_equal(two.train_labels_, one.train_labels_)
    # the worker's copy of the ledger is the same population's: counted once
    assert rep2.local_epsilon == pytest.approx(rep1.local_epsilon) == pytest.approx(1.5)
    assert len(rep2.spends) == len(rep1.spends) == 2


def test_a_copy_sending_reports_to_a_recording_still_reads_the_others_spends():
    # The forwarded write moved the copy's offset past what other copies wrote while it
    # encoded: their collections never reached its budget check (a user reached 2 of 1.5).
    from skldp.population import BudgetExceededError, CollectionSpec, Population

    def spec(i):
        return CollectionSpec(id="", kind=f"skldp.test.K{i}", protects=("features",),
                              epsilon=0.5).with_nonce(str(i))

    main = Population(budget=1.5)
    keys, digests = np.arange(1, 6, dtype=np.uint64), np.zeros(5, np.uint64)
    with main.recording():
        a = pickle.loads(pickle.dumps(main))      # two copies, as two workers hold
        b = pickle.loads(pickle.dumps(main))

        def encode_while_b_collects(report_keys):
            b.collect(spec(2), keys, digests, lambda r: np.zeros(len(r)))
            return np.zeros(len(report_keys))

        a.collect(spec(1), keys, digests, encode_while_b_collects)
        assert a.ledger.local_epsilon == pytest.approx(1.0)
        a.collect(spec(3), keys, digests, lambda r: np.zeros(len(r)))
        with pytest.raises(BudgetExceededError):
            a.collect(spec(4), keys, digests, lambda r: np.zeros(len(r)))
    assert main.ledger.local_epsilon == pytest.approx(1.5)


def test_a_copy_that_cannot_collect_still_records():
    # a GraphData loaded after its original ended cannot reach the journal: recording on
    # it raised, so a Correct and Smooth whose base model collects nothing failed to fit
    import gc
    G, _ = _graph()
    _send_features(G)
    saved = pickle.dumps(G)
    del G
    gc.collect()
    copy = pickle.loads(saved)
    with copy.population.recording() as records:
        pass
    assert records == []
