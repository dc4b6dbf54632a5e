"""Statistical conformance of the device encoder: its reports, drawn with the device's own
entropy, have the mechanism's distribution and stay within its budget (skldp.audit run on the
encoder itself, as a callable)."""

import secrets

import numpy as np
import pytest

from skldp.audit import audit_mechanism, audit_pair
from skldp.device import Device, plan
from skldp.mechanisms import (
    HDSMechanism,
    LabelRandomizedResponse,
    MultiBitMechanism,
    OneBitMechanism,
    SetValuedMechanism,
)
from skldp.population import collection_spec


def encoder(spec, seed=None):
    """The device program as a callable ``f(X, keys) -> reports`` for skldp.audit, drawing
    its seed from the OS's entropy as a device does, or from ``seed`` (an audit whose claim
    is tight exceeds it by chance at its confidence level: a fixed seed keeps CI's run the
    one checked)."""
    p = plan(spec)
    seeds = np.random.default_rng(seed) if seed is not None else None

    def f(X, keys):
        data = X[:, 0] if p.protects == "labels" else X
        drawn = secrets.randbits(63) if seeds is None else int(seeds.integers(2**63))
        batch = p.encode(p.prepare(data), drawn, keys)
        return np.column_stack([np.asarray(v).reshape(len(X), -1) for v in batch.values()])

    f.epsilon_ = spec.epsilon
    f.__name__ = spec.kind.rsplit(".", 1)[-1]
    return f


@pytest.mark.parametrize("mech,x0,x1,low", [
    (OneBitMechanism(1.0, feature_range=(0, 1)), [0.0], [1.0], 0.85),
    (MultiBitMechanism(1.0, m=1, feature_range=(0, 1)), [0.0], [1.0], 0.85),
    (LabelRandomizedResponse(1.0, classes=[0, 1, 2]), [0], [1], 0.85),
    (SetValuedMechanism(1.0, ell=1, oracle="grr"), [1.0, 0.0], [0.0, 1.0], 0.85),
])
def test_encoder_audit_reaches_but_never_exceeds_its_budget(mech, x0, x1, low):
    kw = {} if isinstance(mech, LabelRandomizedResponse) else {"n_features": len(x0)}
    spec = collection_spec(mech, **kw)
    res = audit_mechanism(encoder(spec, seed=0), x0, x1, n_samples=40_000, outputs="joint",
                          events="values", random_state=0)
    assert res.epsilon_claimed == spec.epsilon == 1.0
    assert low < res.epsilon_lower <= 1.0 + 1e-9, res


def test_hds_encoder_audit_stays_below_its_budget():
    spec = collection_spec(HDSMechanism(1.0, k=1, feature_range=(0, 1)), n_features=1)
    res = audit_mechanism(encoder(spec, seed=0), [0.0], [1.0], n_samples=40_000,
                          outputs="joint", events="cells", random_state=0)
    assert 0.5 < res.epsilon_lower <= 1.0


def test_encoder_distribution_matches_the_mechanism():
    """Label RR: P(report = y) = p and each other label q, within sampling error."""
    spec = collection_spec(LabelRandomizedResponse(1.5, classes=[0, 1, 2, 3]))
    f = encoder(spec)
    n = 50_000
    keys = np.frombuffer(secrets.token_bytes(8 * n), dtype="<u8").astype(np.uint64)
    got = f(np.full((n, 1), 2), keys)[:, 0]
    rr = LabelRandomizedResponse(1.5, classes=[0, 1, 2, 3]).fit()
    expected = rr.transition_matrix_[2]
    freq = np.bincount(got, minlength=4) / n
    assert np.all(np.abs(freq - expected) < 4.5 * np.sqrt(expected * (1 - expected) / n))


@pytest.mark.slow
def test_devices_one_by_one_pass_the_audit():
    """Each report from its own Device (fresh entropy, one answer per device)."""
    spec = collection_spec(OneBitMechanism(1.0, feature_range=(0, 1)), n_features=1)
    n = 20_000
    r0 = [Device(user=i).answer(spec, [0.0])["report"]["b"] for i in range(n)]
    r1 = [Device(user=i).answer(spec, [1.0])["report"]["b"] for i in range(n)]
    res = audit_pair(np.array([int(b, 16) for b in r0]), np.array([int(b, 16) for b in r1]),
                     events="values")
    assert 0.8 < res.epsilon_lower <= 1.0
