"""Audits of every mechanism of skldp.mechanisms, alone and as collections on the same users.

Each audit draws 10k-20k reports per input with fixed seeds, so the results are
deterministic. The joint tests (same ``random_state`` for two collections) fail
on code where two collections draw from the same random numbers (before commit
a51b6b6): the joint output then reveals the input with certainty.
"""

import warnings

import numpy as np
import pytest

from skldp.audit import AuditResult, audit_collections, audit_mechanism
from skldp.mechanisms import (
    EdgeRR,
    GRRFSMechanism,
    HDSMechanism,
    LabelRandomizedResponse,
    LaplaceMechanism,
    MultiBitMechanism,
    OneBitMechanism,
    PiecewiseMechanism,
    SetValuedMechanism,
)

D = 2
LO, HI = np.zeros(D), np.ones(D)
FR = (0.0, 1.0)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


# ------------------------------------------------------------------- (b) each mechanism alone
FEATURE_MECHANISMS = {
    "OneBit": lambda: OneBitMechanism(eps=1.0, feature_range=FR, random_state=0),
    "OneBit-split": lambda: OneBitMechanism(eps=2.0, feature_range=FR, split_eps=True,
                                            random_state=0),
    "MultiBit": lambda: MultiBitMechanism(eps=1.0, feature_range=FR, random_state=0),
    "MultiBit-m2": lambda: MultiBitMechanism(eps=2.0, m=2, feature_range=FR, random_state=0),
    "Laplace": lambda: LaplaceMechanism(eps=1.0, feature_range=FR, random_state=0),
    "Piecewise-k1": lambda: PiecewiseMechanism(eps=1.0, k=1, feature_range=FR,
                                               random_state=0),
    "Piecewise-kd": lambda: PiecewiseMechanism(eps=2.0, k=D, feature_range=FR,
                                               random_state=0),
    "HDS-k1": lambda: HDSMechanism(eps=1.0, k=1, feature_range=FR, random_state=0),
    "HDS-kd": lambda: HDSMechanism(eps=2.0, k=D, feature_range=FR, random_state=0),
}


@pytest.mark.parametrize("name", list(FEATURE_MECHANISMS))
def test_feature_mechanism_alone_at_the_bounds(name):
    mech = FEATURE_MECHANISMS[name]()
    res = _quiet(audit_mechanism, mech, LO, HI, n_samples=20_000)
    assert isinstance(res, AuditResult)
    # OneBit without split_eps spends eps on each feature
    claimed = mech.eps * (D if name == "OneBit" else 1)
    assert res.epsilon_claimed == claimed
    assert res.epsilon_lower <= res.epsilon_claimed, res.summary()
    assert not res.exceeds_claim
    # the audit is not vacuous: at the bounds these mechanisms come close to their budget
    assert res.epsilon_lower > 0.6 * res.epsilon_claimed, res.summary()
    names = [c.output for c in res.components]
    assert names == [f"0:{type(mech).__name__}[{j}]" for j in range(D)] \
        + [f"0:{type(mech).__name__}"]


def test_one_bit_per_feature_budget_is_reached_jointly():
    # split_eps=False: eps per feature, epsilon_ = d * eps, reached only by the joint output
    res = audit_mechanism(OneBitMechanism(eps=1.0, feature_range=FR, random_state=0), LO, HI,
                          n_samples=20_000)
    assert res.epsilon_claimed == 2.0
    assert res.output == "0:OneBitMechanism"
    assert 1.8 < res.epsilon_lower <= 2.0
    assert max(c.epsilon_lower for c in res.components[:D]) <= 1.0


def test_grrfs_alone():
    mech = GRRFSMechanism(eps=1.0, m=1, domain_sizes=3, random_state=0)
    res = audit_mechanism(mech, [0, 0], [2, 2], n_samples=20_000)
    assert res.epsilon_lower <= res.epsilon_claimed
    assert res.epsilon_lower > 0.7


def test_grrfs_exceeds_the_papers_theorem_1():
    # d = 2, m = 1, eps = 2, domain 2, inputs that differ in every feature: the report
    # (0, 0) has probability p/2 for x = (0, 0) and q/2 for (1, 1), a ratio e^eps = e^(m eps).
    # Theorem 1 of Bhaila et al. (SDM 2024) claims ln(1 + (m/d)(e^(m eps) - 1)) = 1.43.
    mech = GRRFSMechanism(eps=2.0, m=1, domain_sizes=2, random_state=0)
    res = audit_mechanism(mech, [0, 0], [1, 1], n_samples=20_000)
    paper = np.log1p(0.5 * np.expm1(2.0))
    assert paper == pytest.approx(1.4338, abs=1e-4)
    assert res.epsilon_lower > paper, res.summary()
    assert res.epsilon_lower <= res.epsilon_claimed, res.summary()


def test_label_randomized_response_alone():
    rr = LabelRandomizedResponse(1.5, classes=[0, 1, 2], random_state=0)
    res = audit_mechanism(rr, [0], [2], n_samples=20_000)
    assert res.epsilon_claimed == 1.5
    assert 1.3 < res.epsilon_lower <= 1.5


@pytest.mark.parametrize("x1", [0.5, 1.9, 3.0])
def test_label_input_that_is_not_a_class_is_refused(x1):
    # was cast to the class dtype: 0.5 audited as 0 (0 vs 0, bound 0), 1.9 as 1
    rr = LabelRandomizedResponse(1.0, classes=[0, 1, 2], random_state=0)
    with pytest.raises(ValueError, match="must be one of its classes"):
        audit_mechanism(rr, [0.0], [x1], n_samples=10)


def test_edge_rr_alone_one_bit_of_a_list():
    res = audit_mechanism(EdgeRR(1.0, random_state=0), [0], [1], n_samples=10_000)
    assert res.epsilon_claimed == 1.0
    assert 0.85 < res.epsilon_lower <= 1.0
    # the bound comes from the bit towards the partner; the count of others carries nothing
    by_name = {c.output: c for c in res.components}
    assert by_name["0:EdgeRR[1]"].epsilon_lower < 0.2


# ------------------------------------------------------- (c) collections sharing random_state
def test_one_bit_at_two_budgets_with_the_same_random_state():
    # Two collections from one uniform u: bit1 = [u < p1(x)], bit2 = [u < p2(x)]. For x = 0
    # (first high, second low) has probability ~0.15, for x = 1 it is impossible.
    pair = [OneBitMechanism(eps=1.0, feature_range=FR, random_state=0),
            OneBitMechanism(eps=2.0, feature_range=FR, random_state=0)]
    res = audit_collections(pair, [0.0], [1.0], n_samples=20_000)
    assert res.epsilon_claimed == 3.0
    assert res.epsilon_lower <= res.epsilon_claimed, res.summary()
    assert res.epsilon_lower > 2.5  # independent collections: the joint reaches eps1 + eps2


def test_features_and_labels_with_the_same_random_state():
    # LPGNN: multi-bit features (m = 1 of 2) and label RR given the same random_state.
    mechs = [(MultiBitMechanism(1.0, m=1, feature_range=FR, random_state=0), [0, 1]),
             (LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0), [2])]
    res = audit_collections(mechs, [0.0, 0.0, 0], [1.0, 1.0, 1], n_samples=20_000)
    assert res.epsilon_claimed == 2.0
    assert res.epsilon_lower <= res.epsilon_claimed, res.summary()
    assert res.output == "joint"


def test_set_valued_and_labels_with_the_same_random_state():
    # Set-valued features (one item of {0, 1} reported by GRR) and label RR, same random_state:
    # independent collections reach eps1 + eps2 jointly and never exceed it.
    mechs = [(SetValuedMechanism(1.0, ell=1, random_state=0), [0, 1]),
             (LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0), [2])]
    res = audit_collections(mechs, [1.0, 0.0, 0], [0.0, 1.0, 1], n_samples=20_000)
    assert res.epsilon_claimed == 2.0
    assert res.epsilon_lower <= res.epsilon_claimed, res.summary()
    assert res.epsilon_lower > 1.5, res.summary()


def test_set_valued_at_two_budgets_with_the_same_random_state():
    pair = [SetValuedMechanism(1.0, ell=1, random_state=0),
            SetValuedMechanism(2.0, ell=1, random_state=0)]
    res = audit_collections(pair, [1.0, 0.0], [0.0, 1.0], n_samples=20_000)
    assert res.epsilon_claimed == 3.0
    assert res.epsilon_lower <= res.epsilon_claimed, res.summary()
    assert res.epsilon_lower > 2.5, res.summary()


def test_features_and_edges_with_the_same_random_state():
    # PiecewiseMechanism and EdgeRR on the same users with the same random_state.
    mechs = [(PiecewiseMechanism(1.0, feature_range=FR, random_state=0), [0]),
             (EdgeRR(1.0, random_state=0), [1])]
    res = audit_collections(mechs, [0.0, 0], [1.0, 1], n_samples=10_000)
    assert res.epsilon_claimed == 2.0
    assert res.epsilon_lower <= res.epsilon_claimed, res.summary()
    assert res.epsilon_lower > 1.0


def test_callable_collection_that_reuses_uniforms_is_caught():
    # A home-made pair of one-bit reports drawn from the same uniform per user.
    from skldp.utils import node_uniforms

    def two_bits(X, keys):
        u = node_uniforms(12345, keys, 1)[:, 0]
        p1 = np.where(X[:, 0] > 0.5, 0.73, 0.27)
        p2 = np.where(X[:, 0] > 0.5, 0.88, 0.12)
        return np.column_stack([u < p1, u < p2])

    res = audit_collections([two_bits], [0.0], [1.0], n_samples=20_000, epsilon_claimed=3.0)
    assert res.exceeds_claim
    assert res.epsilon_lower > 5
    assert "VIOLATED" in res.summary()


def test_outputs_joint_audits_one_output():
    pair = [OneBitMechanism(eps=1.0, feature_range=FR, random_state=0),
            OneBitMechanism(eps=2.0, feature_range=FR, random_state=1)]
    res = audit_collections(pair, [0.0], [1.0], n_samples=5000, outputs="joint")
    assert [c.output for c in res.components] == ["joint"]
    res = audit_collections(pair, [0.0], [1.0], n_samples=5000, outputs="collections")
    assert [c.output for c in res.components] == ["0:OneBitMechanism", "1:OneBitMechanism",
                                                  "joint"]


def test_audit_is_deterministic_with_fixed_seeds():
    mech = PiecewiseMechanism(eps=1.0, k=1, feature_range=FR, random_state=0)
    a = audit_mechanism(mech, LO, HI, n_samples=5000, random_state=3)
    b = audit_mechanism(mech, LO, HI, n_samples=5000, random_state=3)
    assert a.epsilon_lower == b.epsilon_lower
    assert a.event == b.event


# ------------------------------------------------------------------------------ errors
def test_mechanism_without_public_bounds_is_refused():
    with pytest.raises(ValueError, match="feature_range"):
        audit_mechanism(OneBitMechanism(1.0, random_state=0), LO, HI, n_samples=10)


def test_mechanism_deriving_a_public_parameter_is_refused():
    with pytest.raises(ValueError, match="public parameter"):
        audit_mechanism(GRRFSMechanism(1.0, m=1, random_state=0), [0, 0], [1, 1],
                        n_samples=10)


def test_bad_arguments():
    mech = OneBitMechanism(1.0, feature_range=FR, random_state=0)
    with pytest.raises(ValueError, match="same number"):
        audit_mechanism(mech, [0.0, 0.0], [1.0], n_samples=10)
    with pytest.raises(ValueError, match="n_samples"):
        audit_mechanism(mech, LO, HI, n_samples=0)
    with pytest.raises(ValueError, match="outputs"):
        audit_mechanism(mech, LO, HI, outputs="collections")
    with pytest.raises(ValueError, match="NaN"):
        audit_mechanism(mech, [np.nan, 0], HI, n_samples=10)
    with pytest.raises(ValueError, match="non-empty"):
        audit_collections([], LO, HI)
    with pytest.raises(TypeError, match="callable"):
        audit_collections([3], LO, HI, n_samples=10)
    # a class, not an instance: was "get_params() missing 1 required positional argument"
    with pytest.raises(TypeError, match="class OneBitMechanism, not a mechanism.*instance"):
        audit_mechanism(OneBitMechanism, [0.0], [1.0], n_samples=10)
    with pytest.raises(TypeError, match="class LabelRandomizedResponse"):
        audit_collections([(LabelRandomizedResponse, [0])], LO, HI, n_samples=10)
    with pytest.raises(ValueError, match="one column"):
        audit_collections([LabelRandomizedResponse(1.0, classes=[0, 1])], LO, HI,
                          n_samples=10)
    with pytest.raises(ValueError, match="columns"):
        audit_collections([(mech, [5])], LO, HI, n_samples=10)
    with pytest.raises(ValueError, match="0 or 1"):
        audit_mechanism(EdgeRR(1.0, random_state=0), [0.5], [1], n_samples=10)


def test_identical_inputs_are_refused():
    # the reports of x0 and x1 had the same distribution: a bound of 0.0 whatever the
    # mechanism, read as "no leak found"
    mech = OneBitMechanism(1.0, feature_range=FR, random_state=0)
    with pytest.raises(ValueError, match="x0 and x1 are the same"):
        audit_mechanism(mech, [0.5, 1.0], [0.5, 1.0], n_samples=10)
    with pytest.raises(ValueError, match="x0 and x1 are the same"):
        audit_collections([mech, mech], [0.0], np.array([[0.0]]), n_samples=10)
