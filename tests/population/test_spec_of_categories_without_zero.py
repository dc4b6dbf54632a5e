"""A GRR-FS spec whose categories leave out 0: the server makes it (fitted or not), a
device answers it as the server's mechanism reports, and its reports keep to the
claimed epsilon."""

import numpy as np

from skldp import GraphData
from skldp.audit import audit_collections
from skldp.device import Device
from skldp.mechanisms import GRRFSMechanism
from skldp.population import collection_spec

CATEGORIES = [[1, 2, 3], [5, 7]]   # no feature has the value 0
EPS = 1.0


def _mechanism(m=1, **kw):
    return GRRFSMechanism(EPS, m=m, categories=CATEGORIES, **kw)


def _device_codes(spec, rows, first_user=0):
    """What one fresh device per row sends: the reported codes."""
    return np.array([Device(user=first_user + i).answer(spec, row)["report"]["c"]
                     for i, row in enumerate(rows)], dtype=np.float64)


def test_the_spec_of_an_unfitted_mechanism_is_made():
    spec = collection_spec(_mechanism(), n_features=2)
    assert spec.public_state["domain_sizes"] == [3, 2]
    assert spec.epsilon == EPS


def test_the_spec_of_a_fitted_mechanism_is_made():
    mech = _mechanism().fit(GraphData(np.array([[1.0, 5.0], [3.0, 7.0], [2.0, 5.0]])))
    spec = collection_spec(mech)
    assert spec.public_state["domain_sizes"] == [3, 2]
    assert spec.epsilon == EPS


def test_a_device_answers_with_the_distribution_of_the_server_mechanism():
    n = 3000
    row = [3.0, 5.0]   # codes 2 and 0
    spec = collection_spec(_mechanism(), n_features=2)
    device = _device_codes(spec, [row] * n)
    server = _mechanism(random_state=0).fit_transform(GraphData(np.tile(row, (n, 1))))
    server = np.asarray(server.features if isinstance(server, GraphData) else server)
    for j, cats in enumerate(CATEGORIES):
        for code in range(len(cats)):
            p1, p2 = np.mean(device[:, j] == code), np.mean(server[:, j] == code)
            pooled = (p1 + p2) / 2
            z = (p1 - p2) / np.sqrt(2 * pooled * (1 - pooled) / n)
            assert abs(z) < 4.5, (j, code, p1, p2)
    # and both are what GRR-FS states: the true code of feature 0 at r*p + (1-r)/c
    mech = collection_spec(_mechanism(), n_features=2)
    assert mech.epsilon == EPS
    fitted = _mechanism().fit(GraphData(np.array([row])))
    expected = fitted.report_probabilities(np.eye(3)[2], 0)[2]
    assert abs(np.mean(device[:, 0] == 2) - expected) < 4.5 * np.sqrt(expected / n)


def test_an_audit_of_the_device_reports_keeps_to_the_claimed_epsilon():
    # m = d: both features are reported by GRR, the joint report reaches the claim
    spec = collection_spec(_mechanism(m=2), n_features=2)
    calls = []

    def device(X, keys):
        calls.append(len(X))
        return _device_codes(spec, X, first_user=10**6 * len(calls))

    res = audit_collections([device], [1.0, 5.0], [3.0, 7.0], n_samples=6000,
                            epsilon_claimed=spec.epsilon)
    assert spec.epsilon == 2 * EPS
    assert res.epsilon_lower <= spec.epsilon
    assert res.epsilon_lower > 1.0   # the audit can see the reports' loss at all


def test_a_binned_column_whose_categories_leave_out_its_first_bin():
    # bin_edges first: the categories list bin codes, here 1 and 2 (values >= 0.5)
    mech = GRRFSMechanism(EPS, categories=[[1, 2], [5, 7]], bin_edges=[[0.5, 1.5], None])
    spec = collection_spec(mech, n_features=2)
    assert spec.public_state["domain_sizes"] == [2, 2]
