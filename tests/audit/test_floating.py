"""Floating-point checks: a fixed output grid, finite supports, additive noise (Mironov 2012)."""

import warnings

import numpy as np
import pytest

from skldp import GraphData
from skldp.audit import GridCheckResult, additive_support_check, check_output_grid
from skldp.device._kinds import piecewise_encode, pm_grid
from skldp.mechanisms import (
    EdgeRR,
    GRRFSMechanism,
    HDSMechanism,
    LabelRandomizedResponse,
    LaplaceMechanism,
    MultiBitMechanism,
    OneBitMechanism,
    PiecewiseMechanism,
)
from skldp.utils import node_uniforms

FR = (0.0, 1.0)
INPUTS = [[0.0, 0.0], [1.0, 1.0], [0.3, 0.7]]  # the bounds and a point inside


# ------------------------------------------------ continuous mechanisms: a declared grid
# These need the mechanisms to sample on a fixed grid and declare output_grid_.
@pytest.mark.parametrize("mech", [
    LaplaceMechanism(1.0, feature_range=FR, random_state=0),
    PiecewiseMechanism(1.0, k=1, feature_range=FR, random_state=0),
    PiecewiseMechanism(2.0, k=2, feature_range=FR, random_state=0),
    HDSMechanism(1.0, k=1, feature_range=FR, random_state=0),
    HDSMechanism(2.0, k=2, feature_range=FR, random_state=0),
    # grid indices up to 1e10, a grid finer than the floats, a decode in another order
    LaplaceMechanism(2.0**-10, feature_range=FR, random_state=0),
    LaplaceMechanism(2.0**-15, feature_range=(-3.7, 11.2), random_state=0),
    LaplaceMechanism(1.0, feature_range=(1e12, 1e12 + 1), random_state=0),
    PiecewiseMechanism(50.0, k=1, feature_range=FR, random_state=0),
], ids=["Laplace", "Piecewise-k1", "Piecewise-kd", "HDS-k1", "HDS-kd", "Laplace-small-eps",
        "Laplace-range", "Laplace-far-range", "Piecewise-eps50"])
def test_continuous_mechanisms_report_on_a_fixed_grid(mech):
    lo, hi = mech.feature_range
    inputs = [[lo, lo], [hi, hi], [0.7 * lo + 0.3 * hi, 0.3 * lo + 0.7 * hi]]
    res = check_output_grid(mech, inputs, n_samples=5000)
    assert isinstance(res, GridCheckResult)
    assert res.kind == "grid", res.message
    assert res.passed, res.message
    assert res.fraction_off_grid == 0.0


def test_laplace_reports_of_one_input_are_reachable_from_the_other():
    # Mironov's attack on x + Laplace noise in float64: for x = 0 about 40% of the reports
    # (scale 1) are floats that x = 1 plus any noise cannot produce. The grid reports
    # (multiples of 2^-20) all are 1 + (r - 1) exactly.
    n = 20_000
    G = GraphData(np.zeros((n, 1)), node_ids=np.arange(n))
    mech = LaplaceMechanism(1.0, feature_range=FR, random_state=0).fit(G)
    Z = mech.transform(G)
    R = Z.features[Z.rows] if isinstance(Z, GraphData) else np.asarray(Z)
    assert additive_support_check(R, 0.0, 1.0) == 0.0
    # but the mechanism does not release fl(x + z): against x1 = 0.3 (off the grid's
    # floats) the additive check does not apply and its share means nothing
    assert additive_support_check(R, 0.0, 0.3) > 0.05
    assert check_output_grid(mech, [[0.0], [0.3]], n_samples=2000).passed


# ------------------------------------------------------------ finite output sets
@pytest.mark.parametrize("mech, inputs", [
    (OneBitMechanism(1.0, feature_range=FR, random_state=0), INPUTS),
    (MultiBitMechanism(2.0, m=1, feature_range=FR, random_state=0), INPUTS),
    (GRRFSMechanism(1.0, m=1, domain_sizes=3, random_state=0), [[0, 0], [2, 2], [1, 0]]),
    (LabelRandomizedResponse(1.0, classes=[0, 1, 2], random_state=0), [[0], [1], [2]]),
    (EdgeRR(1.0, random_state=0), [[0], [1]]),
], ids=["OneBit", "MultiBit", "GRRFS", "LabelRR", "EdgeRR"])
def test_finite_output_mechanisms_have_input_independent_supports(mech, inputs):
    res = check_output_grid(mech, inputs, n_samples=2000)
    assert res.kind == "finite"
    assert res.passed, res.flagged
    assert np.isnan(res.fraction_off_grid)


# ------------------------------------------------------------ the checks can fail
def _continuous(X, keys):
    return X + node_uniforms(7, keys, X.shape[1])


def test_continuous_output_without_grid_fails():
    res = check_output_grid(_continuous, [[0.0], [1.0]], n_samples=2000)
    assert not res.passed
    assert res.kind == "continuous"
    assert "continuous floating-point output with no fixed grid" in res.message


def test_off_grid_outputs_are_counted():
    def half_snapped(X, keys):
        u = node_uniforms(7, keys, X.shape[1])
        on = np.round(u * 8) / 8
        return np.where(X > 0.5, u, on)  # input 1 reports off the grid of step 1/8

    half_snapped.output_grid_ = (np.zeros(1), np.full(1, 0.125))
    res = check_output_grid(half_snapped, [[0.0], [1.0]], n_samples=2000)
    assert res.kind == "grid"
    assert not res.passed
    assert 0.45 < res.fraction_off_grid < 0.55  # all of input 1's reports, none of input 0's
    assert res.flagged and all(i == 1 for i, _, _ in res.flagged)


def _naive_laplace(offset, step):
    """x + Laplace(1) noise in float64 (Mironov's leak), declaring a grid it is not on."""
    def mech(X, keys):
        u = node_uniforms(3, keys, X.shape[1]) - 0.5
        return X - np.sign(u) * np.log1p(-2.0 * np.abs(u))
    mech.epsilon_, mech.output_grid_ = 1.0, (np.array([offset]), np.array([step]))
    return mech


@pytest.mark.parametrize("offset, step", [(-2.0**10, 2.0**-20), (-2.0**20, 2.0**-20),
                                          (-1e3, 2.0**-40)])
def test_a_far_offset_or_a_fine_step_does_not_hide_off_grid_reports(offset, step):
    # the tolerance used to grow with the grid index k: 1e-9 |k| steps passed all of these
    res = check_output_grid(_naive_laplace(offset, step), [[0.0], [1.0]], n_samples=2000)
    assert not res.passed and res.fraction_off_grid > 0.99, res.message


def test_input_dependent_finite_support_is_flagged():
    def leaky_bit(X, keys):
        # rectified bit whose "high" value is computed from x: 1.0 for x = 0, 1 + 2^-40 for 1
        u = node_uniforms(7, keys, X.shape[1])
        return np.where(u < 0.5, 1.0 + X * 2.0**-40, 0.0)

    leaky_bit.epsilon_ = 1.0
    res = check_output_grid(leaky_bit, [[0.0], [1.0]], n_samples=2000)
    assert res.kind == "finite"
    assert not res.passed
    assert {(v, a, b) for _, v, a, b, _ in res.flagged} == {(1.0, 0, 1), (1.0 + 2.0**-40, 1, 0)}


def test_rare_values_are_not_flagged():
    # a value seen a few times for one input may legitimately be missing for the other
    def rare(X, keys):
        u = node_uniforms(7, keys, 1)[:, 0]
        return np.where(u < 0.002, 2.0, np.where(u < 0.5, 1.0, 0.0))[:, None] * (X > -1)

    rare.epsilon_ = 1.0
    assert check_output_grid(rare, [[0.0], [1.0]], n_samples=1000).passed


def test_check_output_grid_errors():
    with pytest.raises(ValueError, match="x_values"):
        check_output_grid(_continuous, np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="n_samples"):
        check_output_grid(_continuous, [[0.0]], n_samples=0)

    def bad_grid(X, keys):
        return X

    bad_grid.output_grid_ = (np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match="output_grid_"):
        check_output_grid(bad_grid, [[0.0], [1.0]], n_samples=10)

    def no_eps(X, keys):
        return X > 0.5

    with pytest.raises(ValueError, match="epsilon"):
        check_output_grid(no_eps, [[0.0], [1.0]], n_samples=10)


@pytest.mark.parametrize("kwargs", [
    {"epsilon": float("nan")}, {"epsilon": -50.0}, {"epsilon": "1"}, {"epsilon": True},
    {"min_expected": float("nan")}, {"min_expected": 0.0}, {"min_expected": -1.0},
    {"min_expected": float("inf")}, {"min_expected": "10"},
], ids=str)
def test_check_output_grid_refuses_a_bad_epsilon_or_min_expected(kwargs):
    # a NaN used to make every expected count NaN, so a leaky mechanism passed; a negative
    # epsilon or min_expected <= 0 flagged values any mechanism may miss
    def leaky_bit(X, keys):
        u = node_uniforms(7, keys, X.shape[1])
        return np.where(u < 0.5, 1.0 + X * 2.0**-40, 0.0)

    leaky_bit.epsilon_ = 1.0
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=name):
        check_output_grid(leaky_bit, [[0.0], [1.0]], n_samples=50, **kwargs)


# ------------------------------------------------------------ additive noise in float64
def _laplace_float(x, b, n, seed=0):
    u = np.random.default_rng(seed).random(n) - 0.5
    return x + -b * np.sign(u) * np.log1p(-2.0 * np.abs(u))


def test_additive_support_check_finds_mironovs_leak():
    r0 = _laplace_float(0.0, 1.0, 50_000)
    frac, mask = additive_support_check(r0, 0.0, 1.0, return_mask=True)
    assert 0.35 < frac < 0.45
    assert mask.shape == (50_000,) and mask.mean() == frac
    # 1 + z' is exact or coarser than z for z' near -1, so only reports below 0.5 can be
    # out of reach (above it, fl(1 + (r - 1)) == r)
    assert r0[mask].max() < 0.5
    # the reverse direction: 1 + z is coarser than 0 + z, so every report is reachable
    assert additive_support_check(_laplace_float(1.0, 1.0, 50_000), 1.0, 0.0) == 0.0


@pytest.mark.parametrize("reports", [np.zeros(0), np.zeros((0, 2))], ids=["1-D", "2-D"])
def test_additive_support_check_refuses_no_reports(reports):
    # was a share of 0.0: "no report reveals the input", from no evidence at all
    with pytest.raises(ValueError, match="no report"):
        additive_support_check(reports, 0.0, 1.0)


def test_additive_support_check_passes_on_a_grid():
    r0 = np.round(_laplace_float(0.0, 1.0, 50_000) * 2**20) / 2**20
    assert additive_support_check(r0, 0.0, 1.0) == 0.0
    R = np.column_stack([r0, _laplace_float(0.0, 1.0, 50_000, seed=1)])
    assert additive_support_check(R, [0.0, 0.0], [1.0, 1.0]) > 0.3  # second column leaks


def test_additive_support_check_refuses_non_additive_reports():
    with pytest.raises(ValueError, match="does not add noise"):
        additive_support_check(np.array([1e-30]), 1.0, 0.0)
    with pytest.raises(ValueError, match="finite"):
        additive_support_check(np.array([np.nan]), 0.0, 1.0)


def test_finite_check_silences_no_warning_of_its_own():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_output_grid(OneBitMechanism(1.0, feature_range=FR, random_state=0),
                          [[0.0], [1.0]], n_samples=500)


def test_shared_off_grid_constant_is_tolerated_but_not_an_input_specific_one():
    def fill(value_for_1):
        def mech(X, keys):
            u = node_uniforms(7, keys, 2)
            on = np.round(u[:, :1] * 8) / 8
            const = np.where(X[:, :1] > 0.5, value_for_1, 0.3)
            return np.where(u[:, 1:] < 0.5, on, const)  # "unsampled" half: a fill value
        mech.output_grid_ = (np.zeros(1), np.full(1, 0.125))
        return mech

    ok = check_output_grid(fill(0.3), [[0.0], [1.0]], n_samples=2000)
    assert ok.passed and "not counted" in ok.message
    bad = check_output_grid(fill(0.31), [[0.0], [1.0]], n_samples=2000)
    assert not bad.passed
    assert 0.45 < bad.fraction_off_grid < 0.55  # neither fill value is shared any more


def test_check_output_grid_needs_two_inputs():
    # one input passed (passed=True) having compared nothing
    mech = OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)
    with pytest.raises(ValueError, match="at least 2 inputs"):
        check_output_grid(mech, [[0.0]], n_samples=100)
    with pytest.raises(ValueError, match="max_values must be an integer >= 1"):
        check_output_grid(mech, [[0.0], [1.0]], n_samples=100, max_values=0)



@pytest.mark.parametrize("eps", [1.0, 10.0])
def test_piecewise_far_from_zero_passes(eps):
    # decoded as mid + (Delta/2) t_hat: 1 ulp from offset + c step, a step of 20-60 ulps
    # (the slack was allowed only under 2^-10 of a step: 18-37 % "off the grid")
    lo, hi = 1e6, 1e6 + 1
    mech = PiecewiseMechanism(eps, k=1, feature_range=(lo, hi), random_state=0)
    res = check_output_grid(mech, [[lo, lo], [hi, hi], [lo + 1 / 3, hi]], n_samples=1000)
    assert res.passed and res.fraction_off_grid == 0.0, res.message


# (lo, hi, eps, k): steps of 13, 2.2, 2.3 and 0.9 ulps of |offset|; before the decode was
# declared, the first three were 43 %, 43 % and 23 % "off the grid" (1 ulp from
# fl(offset + c step), with the 4-ulp slack over a quarter step); the last needs the index
# next to the nearest (the nearest is not the cell for a third of the reports)
_NARROW_FAR = [(1e8, 1e8 + 3, 10.0, 2), (1e8 - 0.25, 1e8 + 0.25, 10.0, 2),
               (1e6 - 5e-4, 1e6 + 5e-4, 1.0, 1), (1e8 - 0.1, 1e8 + 0.1, 10.0, 2)]


@pytest.mark.parametrize("lo, hi, eps, k", _NARROW_FAR)
def test_piecewise_on_narrow_ranges_far_from_zero_passes(lo, hi, eps, k):
    # each report is the declared decode of its cell, bit for bit, for every input
    mech = PiecewiseMechanism(eps, k=k, feature_range=(lo, hi), random_state=0)
    inputs = [[lo, lo], [hi, hi], [lo + (hi - lo) / 3, hi], [(lo + hi) / 2] * 2]
    res = check_output_grid(mech, inputs, n_samples=1000)
    assert res.passed and res.fraction_off_grid == 0.0, res.message


class _TwoDecodes(PiecewiseMechanism):
    """Decodes the cells of x = hi as fl(offset + c step), the others as the declared decode:
    1 ulp apart for ~40 % of the cells on a narrow range far from 0, so the float tells hi."""

    def _perturb(self, X, keys):
        report = piecewise_encode(X, self.feature_min_, self.feature_max_, self.k_,
                                  pm_grid(self.epsilon_per_feature_), self.seed_, keys)
        offset, step = self.output_grid_[:2]
        return np.where(X == self.feature_max_, offset + report["c"] * step,
                        self._decode(report))


class _NudgedPiecewise(PiecewiseMechanism):
    """Moves every report of x = hi 1 ulp up."""

    def _perturb(self, X, keys):
        out = super()._perturb(X, keys)
        return np.where(X == self.feature_max_, np.nextafter(out, np.inf), out)


@pytest.mark.parametrize("lo, hi, eps, k", _NARROW_FAR[:2])
@pytest.mark.parametrize("leaky, share", [(_TwoDecodes, 0.1), (_NudgedPiecewise, 0.5)])
def test_an_input_dependent_decode_on_a_narrow_far_range_is_flagged(lo, hi, eps, k, leaky,
                                                                    share):
    # the declared decode is exact: a float off it (1 ulp, a step of 2 ulps or more) is flagged
    mech = leaky(eps, k=k, feature_range=(lo, hi), random_state=0)
    res = check_output_grid(mech, [[lo, lo], [hi, hi]], n_samples=1000)
    assert not res.passed and res.fraction_off_grid >= share, res.message
    assert all(i == 1 for i, _, _ in res.flagged)   # only x = hi's reports


def test_a_declared_decode_must_be_a_function_of_the_index_of_the_right_shape():
    def mech(X, keys):
        return np.floor(node_uniforms(7, keys, 1) * 8) / 8

    mech.epsilon_ = 1.0
    mech.output_grid_ = (np.zeros(1), np.full(1, 0.125), 0, "k / 8")
    with pytest.raises(ValueError, match="decode callable"):
        check_output_grid(mech, [[0.0], [1.0]], n_samples=10)
    mech.output_grid_ = (np.zeros(1), np.full(1, 0.125), 0, lambda k: k.ravel() / 8)
    with pytest.raises(ValueError, match="same shape"):
        check_output_grid(mech, [[0.0], [1.0]], n_samples=10)
    mech.output_grid_ = (np.zeros(1), np.full(1, 0.125), 0, lambda k: k / 8)
    assert check_output_grid(mech, [[0.0], [1.0]], n_samples=100).passed


def test_grid_index_decoded_to_two_floats_is_flagged():
    # within a few ulps of offset + k step, but the float of an index depends on the input
    # index m: fl(fl(offset + m step) + n step) (audit_pair finds eps >= 8 on these floats)
    off, step = np.array([0.1]), np.array([0.1 / 3])

    def two_step(X, keys):
        u = node_uniforms(5, keys, 2)
        n = np.floor(np.log(u[:, :1]) / np.log(0.5)) - np.floor(np.log(u[:, 1:]) / np.log(0.5))
        return (off + np.rint((X - off) / step) * step) + n * step
    two_step.epsilon_ = 1.0

    for grid in [(off, step), (off, step, 4)]:  # exact; a declared slack of 4 ulps
        two_step.output_grid_ = grid
        res = check_output_grid(two_step, [[0.1], [0.1 + 7 * step[0]]], n_samples=2000)
        assert not res.passed and res.fraction_off_grid > 0.05, res.message
    assert "more than one float" in res.message   # on the grid within the slack


class _LeakyLaplace(LaplaceMechanism):
    """Moves every report of an input at the upper bound 1 ulp up."""

    def _perturb(self, X, keys):
        out = super()._perturb(X, keys)
        return np.where(X == self.feature_max_, np.nextafter(out, np.inf), out)


@pytest.mark.parametrize("lo", [0.0, 1e8])
def test_a_one_ulp_leak_is_flagged_where_the_decode_is_exact(lo):
    # the grid is exact by default: a 4-ulp slack let every report of x = hi pass
    mech = _LeakyLaplace(2.0, feature_range=(lo, lo + 1), random_state=0)
    res = check_output_grid(mech, [[lo], [lo + 1]], n_samples=500)
    assert not res.passed and res.fraction_off_grid == 0.5, res.message


def test_a_declared_decode_tolerance_is_allowed_and_only_it():
    # a decode 1 ulp from fl(offset + k step) for every k: passes only when the mechanism
    # declares it (output_grid_'s third element, in ulps)
    def rounded(X, keys):
        k = np.floor(node_uniforms(7, keys, 1) * 32) + 32 * X   # (no value shared)
        return np.nextafter(1.0 + k * 0.125, np.inf)

    rounded.epsilon_ = 1.0
    for ulps, passed in [(None, False), (0, False), (1, True), (2.5, True)]:
        rounded.output_grid_ = (np.ones(1), np.full(1, 0.125)) + (() if ulps is None else (ulps,))
        res = check_output_grid(rounded, [[0.0], [1.0]], n_samples=500)
        assert res.passed is passed and res.fraction_off_grid == (0.0 if passed else 1.0)
    rounded.output_grid_ = (np.ones(1), np.full(1, 0.125), -1)
    with pytest.raises(ValueError, match="ulps >= 0"):
        check_output_grid(rounded, [[0.0], [1.0]], n_samples=10)


@pytest.mark.parametrize("ulps", [None, 4])
def test_low_bit_leak_produced_by_every_input_is_flagged(ulps):
    # reports k / 4, 1 ulp up with probability 0.1 for x = 0 and 0.9 for x = 1 (a likelihood
    # ratio of 9): every input produces both floats of every index once n is large enough,
    # which exempted them as "constants produced by every input" (n >= 2000 passed)
    def low_bit(X, keys):
        u = node_uniforms(7, keys, 2)
        v = np.floor(u[:, :1] * 16) / 4
        return np.where(u[:, 1:] < 0.1 + 0.8 * X, np.nextafter(v, np.inf), v)

    low_bit.epsilon_ = 1.0
    low_bit.output_grid_ = (np.zeros(1), np.full(1, 0.25)) + (() if ulps is None else (ulps,))
    res = check_output_grid(low_bit, [[0.0], [1.0]], n_samples=2000)
    assert not res.passed and "not counted" not in res.message, res.message
    # exact grid: the moved reports (half of them); a slack: every report of an index
    # decoded to two floats
    assert res.fraction_off_grid == pytest.approx(0.5 if ulps is None else 1.0, abs=0.03)


def _with_fill(fill_0, fill_1):
    """Reports k / 8, or (half of them) a fill value that depends on the input's sign."""
    def mech(X, keys):
        u = node_uniforms(7, keys, 2)
        return np.where(u[:, 1:] < 0.5, np.floor(u[:, :1] * 8) / 8,
                        np.where(X > 0.5, fill_1, fill_0))
    mech.output_grid_ = (np.zeros(1), np.full(1, 0.125))
    return mech


def test_floats_are_compared_by_their_bits():
    # a NaN fill value produced by every input is a constant (intersect1d dropped NaN)
    ok = check_output_grid(_with_fill(np.nan, np.nan), [[0.0], [1.0]], n_samples=1000)
    assert ok.passed and "not counted" in ok.message, ok.message
    # -0.0 from one input and 0.0 from the other: the sign bit tells them apart
    bad = check_output_grid(_with_fill(-0.0, 0.0), [[0.0], [1.0]], n_samples=1000)
    assert not bad.passed and "more than one float" in bad.message, bad.message


def test_check_output_grid_refuses_inputs_that_are_all_the_same():
    # the identity "mechanism" (a total leak) passed: the same input was compared with itself
    def identity(X, keys):
        return X[:, 0]

    with pytest.raises(ValueError, match="at least 2 different inputs"):
        check_output_grid(identity, [[0.0], [0.0]], n_samples=50, epsilon=1.0)
    res = check_output_grid(identity, [[0.0], [0.0], [1.0]], n_samples=50, epsilon=1.0)
    assert not res.passed      # a repeated input among different ones is only redundant


@pytest.mark.parametrize("x0, x1", [([0.0, 0.0, 0.0], 1.0), (0.0, [[1.0, 1.0]])])
def test_additive_support_check_names_inputs_of_the_wrong_length(x0, x1):
    # numpy's "operands could not be broadcast together with remapped shapes"
    with pytest.raises(ValueError, match="x0 and x1 must be numbers or have one value per "
                                         "report coordinate"):
        additive_support_check(np.zeros((3, 2)), x0, x1)
