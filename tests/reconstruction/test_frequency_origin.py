"""FrequencyReconstructor checks that its input features are GRR-FS reports, and that its
protocol is that of the collection whose reports real devices sent."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.device import Device
from skldp.mechanisms import GRRFSMechanism, OneBitMechanism
from skldp.population import (
    collection_spec,
    mechanism_from_spec,
    read_reports,
    received_graph,
)
from skldp.propagation import PPRPropagation
from skldp.reconstruction import FrequencyReconstructor


def _graph(n=30, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, (n, d)).astype(float)
    A = sp.csr_matrix(np.ones((n, n)) - np.eye(n))
    return GraphData(X, A, node_ids=np.arange(n) * 3 + 1)


def _received(G, mech):
    """The graph of the reports each user's device sent for ``mech``'s collection."""
    spec = collection_spec(mech, n_features=G.shape[1])
    X = G.features
    sent = [Device(user=int(u)).answer(spec, X[i]) for i, u in enumerate(G.node_ids)]
    R, _ = received_graph(features=read_reports(sent, spec, users=G.node_ids),
                          node_ids=G.node_ids)
    return spec, R.with_adjacency(G.adjacency)


@pytest.mark.parametrize("params, named", [
    (dict(eps=2.0, m=2, domain_sizes=2), r"eps=2.0 \(collection: 1.0\)"),
    (dict(eps=1.0, m=1, domain_sizes=3),
     r"m=1 \(collection: 2\), domain_sizes=\[3, 3, 3, 3\] \(collection: \[2, 2, 2, 2\]\)"),
], ids=["eps", "m-and-sizes"])
def test_collected_reports_with_other_parameters_refused(params, named):
    G = _graph()
    spec, R = _received(G, GRRFSMechanism(1.0, m=2, domain_sizes=2))
    rec = FrequencyReconstructor(**params)
    with pytest.raises(ValueError, match=rf"collection {spec.id} with other parameters: "
                                         rf"{named}\. Copy the collection's with "
                                         r"FrequencyReconstructor\.from_mechanism"):
        rec.fit(R)
    # fitted on other reports, it refuses these at transform
    S = GRRFSMechanism(**params, random_state=0).fit_transform(G)
    with pytest.raises(ValueError, match="with other parameters"):
        rec.fit(S).transform(R)


def test_collected_reports_with_the_collections_parameters_pass():
    G = _graph()
    spec, R = _received(G, GRRFSMechanism(1.0, m=2, domain_sizes=2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = FrequencyReconstructor.from_mechanism(mechanism_from_spec(spec), hops=1) \
            .fit_transform(R).features
        # domain_sizes=None reads the same sizes from the reports
        same = FrequencyReconstructor(1.0, 2, hops=1).fit_transform(R).features
    np.testing.assert_array_equal(got, same)


def test_features_that_are_not_grrfs_reports_warn():
    G = _graph()
    rec = FrequencyReconstructor(1.0, 2, domain_sizes=2, hops=1)
    with pytest.warns(UserWarning, match="its input features are the users' raw features: "
                                         "on other features its output is no frequency"):
        rec.fit(G)
    O = OneBitMechanism(1.0, feature_range=(0, 1), random_state=0).fit_transform(G)
    with pytest.warns(UserWarning, match="are the reports of OneBitMechanism"):
        rec.fit(O)
    P = PPRPropagation().fit_transform(GRRFSMechanism(1.0, m=2, domain_sizes=2,
                                                      random_state=0).fit_transform(G))
    with pytest.warns(UserWarning, match="were computed on the server by PPRPropagation"):
        rec.fit(P)
    # another collection's reports, sent by real devices
    spec, H = _received(G, OneBitMechanism(1.0, feature_range=(0, 1)))
    with pytest.warns(UserWarning, match=f"are the reports of collection {spec.id} "
                                         r"\(OneBitMechanism"):
        rec.fit(H)
    # fitted on reports, transform warns on raw features too
    R = GRRFSMechanism(1.0, m=2, domain_sizes=2, random_state=0).fit_transform(G)
    rec.fit(R)
    with pytest.warns(UserWarning, match="raw features"):
        rec.transform(G)


def test_grrfs_reports_and_the_clear_reference_do_not_warn():
    G = _graph()
    mech = GRRFSMechanism(1.0, m=2, domain_sizes=2, random_state=0).fit(G)
    R = mech.transform(G)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        FrequencyReconstructor.from_mechanism(mech, hops=1).fit_transform(R[[3, 1]])
        # GRR-FS at eps=inf on every feature reports the raw codes
        Z = FrequencyReconstructor(np.inf, 4, domain_sizes=2, hops=0).fit_transform(G)
    np.testing.assert_array_equal(Z.features, G.features)
    with pytest.warns(UserWarning, match="raw features"):   # m < d: a sampling undone
        FrequencyReconstructor(np.inf, 2, domain_sizes=2, hops=0).fit(G)


def test_domain_sizes_read_from_the_codes_say_so():
    # a top code no user reported: the sizes read from the reports are short, and the
    # refusal says why instead of blaming parameters the user never gave
    G = _graph()
    spec, R = _received(G, GRRFSMechanism(20.0, m=4, domain_sizes=3))
    assert R.features.max() < 2
    with pytest.raises(ValueError, match=r"domain_sizes=None reads .* from the largest codes"):
        FrequencyReconstructor(20.0, m=4).fit(R)
    FrequencyReconstructor(20.0, m=4, domain_sizes=3).fit(R)
