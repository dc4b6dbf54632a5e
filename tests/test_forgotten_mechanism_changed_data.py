"""A mechanism saved without its secret serves its users' saved reports only for the data
they are about: changed features or adjacency lists are refused (they were served the old
data's reports), in the process that holds the population and in a copy cut off from it."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline

from skldp import GraphData, NodeWise
from skldp.mechanisms import EdgeRR, LaplaceMechanism
from skldp.privacy import forget_secrets


def _graph(n=8):
    rng = np.random.default_rng(0)
    X = rng.random((n, 3))
    A = np.triu(rng.random((n, n)) < 0.5, 1)
    return GraphData(X, (A | A.T).astype(float), node_ids=np.arange(n))


def _forgotten(step, G):
    step.fit(G).transform(G)
    forget_secrets(step, G)
    return step


def _cut_off(step, G):
    """``step`` and ``G`` as a new process loads them once the one that saved them ended."""
    step, G = pickle.loads(pickle.dumps((step, G)))
    G.population._reachable = False   # (no journal to read: as if it had been removed)
    G.population._secret = None
    return step, G


def test_changed_features_are_refused_unchanged_ones_served():
    G = _graph()
    m = _forgotten(LaplaceMechanism(eps=np.inf, feature_range=(0, 1), random_state=0), G)
    saved = np.asarray(m.transform(G))
    entries = len(G.ledger.entries())
    # the same data on another store (a copy of the rows), a view in any order, repeats
    same = G.with_features(G.features.copy(), source="users")
    np.testing.assert_array_equal(np.asarray(m.transform(same)), saved)
    np.testing.assert_array_equal(np.asarray(m.transform(G[[5, 1, 1]])), saved[[5, 1, 1]])
    assert len(G.ledger.entries()) == entries   # served free: nothing sent or charged
    changed = G.with_features(1 - G.features, source="users")
    with pytest.raises(ValueError, match=r"saved without its secret.*8 user\(s\) of this "
                                         r"GraphData hold other feature rows now"):
        m.transform(changed)
    with pytest.raises(ValueError, match="hold other feature rows"):
        m.transform(changed[[0]])   # (a view: the rows it serves come from the whole graph)


def test_changed_adjacency_is_refused_unchanged_served():
    G = _graph()
    e = _forgotten(EdgeRR(eps=np.inf, random_state=0), G)
    saved = e.transform(G).adjacency
    same = G.with_adjacency(G.adjacency.copy(), source="users")
    assert abs(e.transform(same).adjacency - saved).nnz == 0
    complement = sp.csr_matrix(1 - np.eye(G.n_nodes) - G.adjacency.toarray())
    with pytest.raises(ValueError, match="hold other adjacency lists now"):
        e.transform(G.with_adjacency(complement, source="users"))


def test_a_copy_cut_off_from_the_devices_serves_the_saved_graph_only():
    G = _graph()
    m, G2 = _cut_off(_forgotten(
        LaplaceMechanism(eps=np.inf, feature_range=(0, 1), random_state=0), G), G)
    saved = np.asarray(m.transform(G2))
    np.testing.assert_array_equal(np.asarray(m.transform(G2[[3, 0]])), saved[[3, 0]])
    # another adjacency keeps the features: still the data the reports are about
    other = G2.with_adjacency(sp.csr_matrix((G2.n_nodes, G2.n_nodes)), source="users")
    np.testing.assert_array_equal(np.asarray(m.transform(other)), saved)
    with pytest.raises(ValueError, match=r"cannot ask these users' devices.*set anew"):
        m.transform(G2.with_features(1 - G2.features, source="users"))

    e, G3 = _cut_off(_forgotten(EdgeRR(eps=np.inf, random_state=0), G), G)
    e.transform(G3[[1, 2]])
    with pytest.raises(ValueError, match=r"cannot ask these users' devices.*adjacency"):
        e.transform(G3.with_adjacency(G3.adjacency.copy(), source="users"))


def test_a_copy_cut_off_follows_the_features_through_on_device_steps():
    G = _graph()
    pipe = Pipeline([("fill", NodeWise(SimpleImputer(strategy="constant"), on_device=True)),
                     ("lap", LaplaceMechanism(eps=np.inf, feature_range=(0, 1),
                                              random_state=0))]).fit(G)
    saved = np.asarray(pipe.transform(G))
    forget_secrets(pipe, G)
    pipe, G2 = _cut_off(pipe, G)
    np.testing.assert_array_equal(np.asarray(pipe.transform(G2)), saved)
    with pytest.raises(ValueError, match="set anew"):
        pipe.transform(G2.with_features(1 - G2.features, source="users"))


def test_a_loaded_pipeline_of_edge_and_feature_mechanisms_serves_its_graph():
    # unpickled, the store's arrays were writeable: the store after EdgeRR wrapped the
    # features in a read-only view, which the mechanism after it took for features the
    # server computed (it refused the saved graph)
    G = _graph()
    pipe = Pipeline([("edges", EdgeRR(eps=np.inf, random_state=0)),
                     ("lap", LaplaceMechanism(eps=np.inf, feature_range=(0, 1),
                                              random_state=0))]).fit(G)
    saved = np.asarray(pipe.transform(G))
    forget_secrets(pipe, G)
    pipe, G2 = _cut_off(pipe, G)
    assert not G2.features.flags.writeable and not G2.adjacency.data.flags.writeable
    np.testing.assert_array_equal(np.asarray(pipe.transform(G2[[4, 2]])), saved[[4, 2]])


def test_a_graph_pickled_before_the_lineage_gets_one_of_its_own():
    """A store unpickled from a file written before the lineage existed has none; a
    mechanism forgotten on it must still check it in a cut-off copy."""
    G = _graph()
    state = G._store.__getstate__()
    del state["feature_source"], state["adjacency_source"]
    old = object.__new__(type(G._store))
    old.__setstate__(state)
    assert old.feature_source is not None and old.adjacency_source is not None
    old.population = G._store.population        # (the same users, for the fit below)
    G = GraphData._from_store(old, G.rows)
    m = _forgotten(LaplaceMechanism(eps=1.0, feature_range=(0, 1), random_state=0), G)
    m, G = _cut_off(m, G)
    assert np.asarray(m.transform(G[[2, 1]])).shape == (2, 3)
    with pytest.raises(ValueError, match="set anew"):
        m.transform(G.with_features(1 - G.features, source="users"))


def test_an_identity_on_device_step_keeps_the_users_data_and_lineage():
    """An on-device step that returns its input array itself: the next mechanism reads the
    users' raw data (it was refused at fit as features set on the server), and a copy cut
    off from the devices serves the saved graph."""
    from sklearn.preprocessing import FunctionTransformer

    G = _graph()
    pipe = Pipeline([("id", NodeWise(FunctionTransformer(), on_device=True)),
                     ("lap", LaplaceMechanism(eps=1.0, feature_range=(0, 1), random_state=0))])
    saved = np.asarray(pipe.fit(G).transform(G))
    forget_secrets(pipe, G)
    pipe, G = _cut_off(pipe, G)
    np.testing.assert_array_equal(np.asarray(pipe.transform(G)), saved)
