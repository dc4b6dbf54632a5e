"""Public data and new_simulation(): the refusal's advice does not route reports into a new
simulation; public data set before any collection are held as they were then (a caller's
buffer written afterwards does not change them); setting public data in a copy cut off
from its ledger does not need the ledger (new_simulation then refuses them: what the
users sent meanwhile is unknown)."""

import os
import pickle
import shutil

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.mechanisms import EdgeRR, PiecewiseMechanism


def _graph(n=20, budget=None):
    A = sp.csr_array(np.eye(n, k=1) + np.eye(n, k=-1))
    return GraphData(np.random.default_rng(1).random((n, 3)), A, budget=budget)


def test_the_refusal_says_reports_are_collected_again_not_set_on_the_new_simulation():
    # Before: "set them on the graph new_simulation() returns instead": reports of the old
    # simulation set as public on the new one passed, and a model on them printed 0
    G = _graph()
    R = EdgeRR(1.0, symmetrize="directed", random_state=0).fit_transform(G).adjacency
    with pytest.raises(ValueError, match="made in this simulation") as info:
        G.with_adjacency(R.maximum(R.T), source="public").new_simulation()
    msg = str(info.value)
    assert "set them on the graph new_simulation() returns instead" not in msg
    assert "truly public" in msg and "collected again in the new simulation" in msg


@pytest.mark.parametrize("sparse", [False, True])
def test_public_data_set_before_a_collection_are_not_the_callers_buffer(sparse):
    # Before: the store kept a view of the caller's array: reports written into it after
    # the collection passed new_simulation() as public data (features epsilon 0 there)
    n = 20
    G = _graph(n)
    buf = sp.csr_matrix(np.full((n, 3), 0.5)) if sparse else np.full((n, 3), 0.5)
    P = G.with_features(buf, source="public")   # the ledger is empty: passes new_simulation
    R = PiecewiseMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(G)
    if sparse:
        buf.data[:] = R.features.ravel()
    else:
        buf[:] = R.features
    assert not np.array_equal(np.asarray(sp.csr_matrix(P.features).todense())
                              if sparse else P.features, R.features)
    S = P.new_simulation()
    assert np.all(np.asarray(sp.csr_matrix(S.features).todense()) == 0.5 if sparse
                  else S.features == 0.5)
    if not sparse:   # memory no one can write (bytes) is not copied
        X = np.frombuffer(np.full((n, 3), 0.5).tobytes()).reshape(n, 3)
        assert np.shares_memory(_graph(n).with_features(X, source="public").features, X)
        # an array that owns its memory can be made writeable again: copied
        Y = np.full((n, 3), 0.5)
        Y.flags.writeable = False
        P = _graph(n).with_features(Y, source="public")
        Y.flags.writeable = True
        Y[:] = 7.0
        assert np.all(P.features == 0.5)


def test_setting_public_data_in_a_copy_cut_off_from_its_ledger():
    # Before: with_features(source="public") read the ledger and raised RuntimeError in a
    # copy whose original had ended (its journal removed)
    G = _graph()
    copy = pickle.loads(pickle.dumps(G))   # opens the journal
    shutil.rmtree(os.path.dirname(G.population._journal))   # ... and the original ends
    noise = np.random.default_rng(0).random(copy.shape)
    P = copy.with_features(noise, source="public")
    np.testing.assert_array_equal(P.features, noise)
    with pytest.raises(ValueError, match="unknown"):   # what was sent meanwhile is unknown
        P.new_simulation()
    S = copy.new_simulation().with_features(noise, source="public")   # the way round
    assert S.new_simulation().ledger.local_epsilon == 0
