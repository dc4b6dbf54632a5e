"""A claimed epsilon is a number >= 0; with no claim, the audit gives no verdict."""

import numpy as np
import pytest

from skldp.audit import AuditResult, audit_collections, audit_mechanism
from skldp.utils import node_uniforms


def _rr(claim=...):
    """Randomized response at eps = 3 on the bit x, claiming ``claim`` (none by default)."""
    p = np.exp(3) / (1 + np.exp(3))

    def f(X, keys):
        return np.where(node_uniforms(1, keys, 1)[:, 0] < p, X[:, 0], 1 - X[:, 0])
    if claim is not ...:
        f.epsilon_ = claim
    return f


def test_no_claim_gives_no_verdict():
    res = audit_mechanism(_rr(), [0.0], [1.0], n_samples=500)
    assert res.epsilon_claimed is None and res.epsilon_lower > 1.0
    with pytest.raises(ValueError, match="no claimed epsilon"):
        _ = res.exceeds_claim
    assert "claimed" not in res.summary()
    # one of two collections without epsilon_: the sum is unknown, not the other's claim
    res = audit_collections([_rr(), _rr(0.5)], [0.0], [1.0], n_samples=500)
    assert res.epsilon_claimed is None
    with pytest.raises(ValueError, match="no claimed epsilon"):
        _ = res.exceeds_claim
    # while an infinite claim is a claim (never exceeded)
    res = audit_collections([_rr()], [0.0], [1.0], n_samples=500, epsilon_claimed=np.inf)
    assert res.epsilon_claimed == np.inf and res.exceeds_claim is False
    assert audit_mechanism(_rr(np.float32(1.0)), [0.0], [1.0], n_samples=500).exceeds_claim


@pytest.mark.parametrize("bad", [float("nan"), -1.0, "1", True, [1.0]])
def test_a_claim_must_be_a_number_at_least_zero(bad):
    with pytest.raises(ValueError, match="epsilon_ of mechanism 0:f must be a number >= 0"):
        audit_mechanism(_rr(bad), [0.0], [1.0], n_samples=500)

    def never_called(X, keys):
        raise AssertionError("the claim is checked before any report is drawn")
    with pytest.raises(ValueError, match="epsilon_claimed must be a number >= 0"):
        audit_collections([never_called], [0.0], [1.0], n_samples=500, epsilon_claimed=bad)
    with pytest.raises(ValueError, match="epsilon_claimed must be a number >= 0"):
        AuditResult(1.0, 1.0, None, (10, 10), 0.95, "values", epsilon_claimed=bad)

