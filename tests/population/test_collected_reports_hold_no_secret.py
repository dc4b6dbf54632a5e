"""A mechanism fitted on the reports real devices sent holds no secret.

It adopts their collection (``collected_``) and passes the reports on: a seed kept
from an earlier fit on simulated users would be a secret of another collection,
saved with the model and able to invert those users' simulated reports. Fitted again
on the users' own data, it makes a new collection and perturbs again.
"""

import numpy as np

from skldp import GraphData
from skldp.device import Device
from skldp.mechanisms import HDSMechanism
from skldp.population import collection_spec, read_reports, received_graph


def _received(X, ids, mech):
    spec = collection_spec(mech, n_features=X.shape[1])
    reports = [Device(user=u).answer(spec, X[i]) for i, u in enumerate(ids)]
    return received_graph(features=read_reports(reports, spec, users=ids))[0]


def test_a_fit_on_collected_reports_drops_the_seed_of_an_earlier_fit():
    rng = np.random.default_rng(0)
    X = (rng.random((12, 4)) < 0.5).astype(float)
    ids = list(range(100, 112))
    mech = HDSMechanism(2.0, k=2, feature_range=(0, 1), random_state=0)
    mech.fit(GraphData(X, node_ids=ids))
    assert hasattr(mech, "seed_")
    Gr = _received(X, ids, HDSMechanism(2.0, k=2, feature_range=(0, 1)))
    mech.fit(Gr)
    assert mech.collected_ and not hasattr(mech, "seed_")
    out = mech.transform(Gr)
    np.testing.assert_array_equal(np.asarray(out.features.todense()
                                             if hasattr(out.features, "todense") else out.features),
                                  np.asarray(Gr.features.todense()
                                             if hasattr(Gr.features, "todense") else Gr.features))
    # fitted again on the users' own data: a new collection, perturbed with a secret
    G2 = GraphData(X, node_ids=ids)
    mech.fit(G2)
    assert hasattr(mech, "seed_") and not getattr(mech, "collected_", False)
    assert mech.transform(G2).shape == X.shape
