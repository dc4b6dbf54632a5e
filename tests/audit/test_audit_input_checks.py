"""Audit arguments that were accepted and silently ignored."""

import pytest

from skldp.audit import audit_collections, audit_mechanism
from skldp.mechanisms import OneBitMechanism


def _bit():
    return OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)


@pytest.mark.parametrize("batch_size", ["abc", -5, 0, 2.5, True])
def test_batch_size_is_checked_without_an_edge_mechanism(batch_size):
    # only an edge mechanism is fitted in batches: a bad batch_size was ignored otherwise
    with pytest.raises(ValueError, match="batch_size"):
        audit_mechanism(_bit(), [0.0], [1.0], n_samples=100, batch_size=batch_size)
    with pytest.raises(ValueError, match="batch_size"):
        audit_collections([_bit()], [0.0], [1.0], n_samples=100, batch_size=batch_size)


def test_a_valid_batch_size_leaves_a_feature_audit_unchanged():
    a = audit_mechanism(_bit(), [0.0], [1.0], n_samples=200)
    b = audit_mechanism(_bit(), [0.0], [1.0], n_samples=200, batch_size=10)
    assert a.epsilon_lower == b.epsilon_lower


@pytest.mark.parametrize("sparse", [False, True])
def test_audit_pair_refuses_reports_without_outputs(sparse):
    # shape (n, 0): "epsilon >= 0" with an empty event, whatever was meant to be audited
    import numpy as np
    import scipy.sparse as sp

    from skldp.audit import audit_pair
    r0, r1 = np.zeros((10, 0)), np.zeros((10, 0))
    if sparse:
        r0, r1 = sp.csr_matrix(r0), sp.csr_matrix(r1)
    with pytest.raises(ValueError, match="at least one output"):
        audit_pair(r0, r1)


def test_audit_collections_refuses_a_mechanism_that_reports_nothing():
    import numpy as np

    def nothing(X, keys):
        return np.zeros((len(X), 0))
    nothing.epsilon_ = 1.0
    with pytest.raises(ValueError, match="at least one output"):
        audit_collections([nothing], [0.0], [1.0], n_samples=50, outputs="joint")


@pytest.mark.parametrize("y0, y1, classes", [(1, 0, [0, 2]), (0, 5, [0, 1, 2])])
def test_audit_ledger_refuses_labels_outside_the_classes(y0, y1, classes):
    # classes is the public label domain: a label outside it was accepted, and a
    # prediction of it was coded as the position of another class (searchsorted)
    from skldp.audit import audit_ledger
    with pytest.raises(ValueError, match="classes"):
        audit_ledger(_bit(), [0.0], [1.0], y0=y0, y1=y1, classes=classes, n_samples=40)


@pytest.mark.parametrize("random_state", [True, 1.5, None])
def test_audit_ledger_refuses_a_random_state_that_is_not_an_integer(random_state):
    from skldp.audit import audit_ledger
    with pytest.raises(TypeError, match="random_state"):
        audit_ledger(_bit(), [0.0], [1.0], y0=0, y1=1, n_samples=40,
                     random_state=random_state)
