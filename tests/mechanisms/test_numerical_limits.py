"""Budgets and ranges at the edges of floating point (2026-11-29 fixes)."""

import dataclasses
import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from skldp.device import CollectionSpec
from skldp.device._errors import SpecError
from skldp.device._kinds import (
    MIN_EPS_PER_COORDINATE,
    laplace_grid,
    plan,
    pm_estimate_map,
    pm_grid,
    square_wave_grid,
)
from skldp.mechanisms import (
    GRRFSMechanism,
    HDSMechanism,
    LabelRandomizedResponse,
    LaplaceMechanism,
    MultiBitMechanism,
    OneBitMechanism,
    PiecewiseMechanism,
    SetValuedMechanism,
)
from skldp.population import collection_spec, mechanism_from_spec
from skldp.utils.validation import MIN_RANGE_WIDTH


def _exact_moments(grid, i):
    """E[j], Var[j] of the grid's cell at lattice index ``i``, in rational arithmetic."""
    po = Fraction(grid.p_outside)
    nb, no = grid.n_band, grid.n_out
    s, D = i * grid.cells_per_step, no + nb
    b1 = Fraction(nb * s) + Fraction(nb * (nb - 1), 2)
    b2 = Fraction((s + nb - 1) * (s + nb) * (2 * (s + nb) - 1) - (s - 1) * s * (2 * s - 1), 6)
    a1, a2 = Fraction(D * (D - 1), 2), Fraction((D - 1) * D * (2 * D - 1), 6)
    m1 = (1 - po) * b1 / nb + po * (a1 - b1) / no
    m2 = (1 - po) * b2 / nb + po * (a2 - b2) / no
    return m1, m2 - m1 * m1


@pytest.mark.parametrize("eps", [MIN_EPS_PER_COORDINATE, 1e-8, 1e-6, 0.1, 1.0, 20.0, 50.0])
@pytest.mark.parametrize("which", ["pm", "hds"])
def test_grid_moments_exact(eps, which):
    grid = pm_grid(eps) if which == "pm" else square_wave_grid(eps)[0]
    for i in (0, 5_000_000, grid.n_steps):
        mean, var = grid.moments(i / grid.n_steps)
        m_ex, v_ex = _exact_moments(grid, i)
        assert mean == pytest.approx(float(m_ex), rel=1e-14)
        assert var == pytest.approx(float(v_ex), rel=1e-12)


@pytest.mark.parametrize("eps", [MIN_EPS_PER_COORDINATE, 1e-8, 1e-6, 1e-3, 1.0, 20.0])
def test_piecewise_estimate_unbiased_at_small_eps(eps):
    # was E[report | x=1] = 1.0016 at eps 1e-6, 1.342 at 1e-8, NaN at 1e-10
    grid = pm_grid(eps)
    c0, c1 = pm_estimate_map(grid)
    for i, t in [(0, -1.0), (grid.n_steps, 1.0)]:
        m_ex, _ = _exact_moments(grid, i)
        assert float(Fraction(c0) + Fraction(c1) * m_ex) == pytest.approx(t, abs=1e-6)


def test_piecewise_variance_at_small_eps():
    # was 1.8x off at eps 1e-8
    eps = 1e-8
    mech = PiecewiseMechanism(eps, feature_range=(0, 1)).fit(np.zeros((2, 1)))
    grid = pm_grid(eps)
    _, c1 = pm_estimate_map(grid)
    _, v_ex = _exact_moments(grid, grid.n_steps)
    expected = (c1 ** 2 * float(v_ex) + 1.0 - 1.0) / 4.0   # (Delta/2)^2 (c1^2 Var[j]) at x=1
    assert mech.variance(1.0)[0] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("make", [
    lambda e: LaplaceMechanism(e, feature_range=(0, 1)),
    lambda e: PiecewiseMechanism(e, feature_range=(0, 1)),
    lambda e: HDSMechanism(e, feature_range=(0, 1)),
    lambda e: OneBitMechanism(e, feature_range=(0, 1)),
    lambda e: MultiBitMechanism(e, feature_range=(0, 1)),
    lambda e: SetValuedMechanism(e),
    lambda e: GRRFSMechanism(e, domain_sizes=2),
])
def test_tiny_eps_refused(make):
    X = np.array([[0.0], [1.0]])
    with pytest.raises(ValueError, match="below 2\\^-30"):
        make(1e-17).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Z = make(MIN_EPS_PER_COORDINATE).fit(X).transform(X)
    Z = Z.toarray() if sp.issparse(Z) else Z
    assert np.all(np.isfinite(Z))


def test_tiny_eps_refused_labels():
    with pytest.raises(ValueError, match="below 2\\^-30"):
        LabelRandomizedResponse(1e-17, classes=[0, 1]).fit()
    est = LabelRandomizedResponse(MIN_EPS_PER_COORDINATE, classes=[0, 1]).fit() \
        .estimate_frequencies([0, 1, 1, 1])
    assert np.all(np.isfinite(est)) and est.sum() == pytest.approx(1.0, rel=1e-6)


def test_grrfs_estimates_accurate_at_min_eps():
    X = np.array([[0], [1], [1], [1]], float)
    g = GRRFSMechanism(MIN_EPS_PER_COORDINATE, domain_sizes=2, random_state=0).fit(X)
    f = g.estimate_frequencies(g.transform(X))[0]
    assert np.all(np.isfinite(f)) and f.sum() == pytest.approx(1.0, rel=1e-6)


def _spec(kind, eps, d=1, **state):
    return CollectionSpec(id="test", kind=f"skldp.mechanisms.{kind}", model="local", epsilon=eps,
                          protects=("features",), params={"eps": eps},
                          public_state={"n_features": d, **state})


def test_laplace_tiny_eps_refused_by_device_and_mechanism():
    # below 2^-30 the scale exceeded 2^30 cells and the parity of the report revealed x
    with pytest.raises(ValueError, match="below 2\\^-30"):
        LaplaceMechanism(1e-17, feature_range=(0, 1)).fit(np.zeros((2, 1)))
    with pytest.raises(SpecError, match="below 2\\^-30"):
        plan(_spec("LaplaceMechanism", 1e-17, feature_min=[0.0], feature_max=[1.0]))
    with pytest.raises(ValueError):
        laplace_grid(1e-17)
    N, s, _ = laplace_grid(MIN_EPS_PER_COORDINATE)
    assert N == 1 and s <= 2.0 ** 30


def test_laplace_large_eps_refused():
    # the clamp at max(1, 50 - eps/d) scales biased the reports (+0.0037 at eps 49)
    with pytest.raises(ValueError, match="above 30"):
        LaplaceMechanism(49.0, feature_range=(0, 1)).fit(np.zeros((2, 1)))
    with pytest.raises(SpecError, match="above 30"):
        plan(_spec("LaplaceMechanism", 49.0, feature_min=[0.0], feature_max=[1.0]))
    mech = LaplaceMechanism(60.0, feature_range=(0, 1)).fit(np.zeros((2, 2)))   # 30 each
    assert mech.epsilon_per_feature_ == 30.0
    N, s, margin = laplace_grid(30.0)
    assert margin >= 20 * s


def test_laplace_clamp_negligible_at_max_eps():
    n = 200_000
    X = np.r_[np.zeros(n), np.ones(n)][:, None]
    mech = LaplaceMechanism(30.0, feature_range=(0, 1), random_state=0).fit(X)
    Z = mech.transform(X)[:, 0]
    for x, z in [(0.0, Z[:n]), (1.0, Z[n:])]:
        se = np.sqrt(mech.variance(x)[0] / n)
        assert abs(z.mean() - x) < 5 * se
        assert z.var() == pytest.approx(mech.variance(x)[0], rel=0.02)


@pytest.mark.parametrize("make", [
    lambda: OneBitMechanism(1.0, feature_range=(-1e308, 1e308)),
    lambda: HDSMechanism(1.0, feature_range=(-1e308, 1e308)),
])
def test_overflowing_feature_range_refused(make):
    with pytest.raises(ValueError, match="overflows"):
        make().fit(np.array([[0.0], [1.0]]))


@pytest.mark.parametrize("mech", [LaplaceMechanism, MultiBitMechanism, OneBitMechanism,
                                  PiecewiseMechanism])
def test_bounds_whose_reports_overflow_are_refused(mech):
    # a finite width near float64's maximum passed, and the reports were +-inf (with numpy
    # overflow warnings only); at the limit the reports are finite
    X = np.array([[0.0, 1.0, 0.5], [1.0, 0.0, 0.5]] * 50)
    with pytest.raises(ValueError, match=r"width \(1.8e\+308\) times n_features / eps .* "
                                         "is inf.*overflow to inf"):
        mech(1.0, feature_range=(0, np.finfo(float).max)).fit(X)
    W = 1e300 * 1.0 / 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)   # no overflow on the way
        Z = mech(1.0, feature_range=(0, W), random_state=0).fit_transform(X * W)
    assert np.isfinite(Z).all()
    # a spec of such bounds is refused where its reports are decoded
    spec = collection_spec(mech(1.0, feature_range=(0, W)).fit(X * W))
    big = dataclasses.replace(spec, public_state=dict(spec.public_state,
                                                      feature_max=[1.7e308] * 3))
    big = dataclasses.replace(big, id=big.content_id())
    with pytest.raises(ValueError, match="overflow to inf"):
        mechanism_from_spec(big)


def test_hds_reports_stay_in_its_encoding_whatever_the_width():
    X = np.array([[0.0, 1.0], [1.0, 0.0]])
    Z = HDSMechanism(1.0, feature_range=(0, np.finfo(float).max),
                     random_state=0).fit_transform(X)
    assert np.isfinite(Z).all() and np.abs(Z).max() < 10


@pytest.mark.parametrize("mech", [LaplaceMechanism, MultiBitMechanism, OneBitMechanism,
                                  PiecewiseMechanism, HDSMechanism])
def test_too_narrow_feature_range_refused(mech):
    # width 2e-323: Laplace's grid step width / 2^20 was 0 and every report lo (silently)
    X = np.ones((50, 1))
    with pytest.raises(ValueError, match="width hi - lo is 1.98e-323, below 4.1e-289"):
        mech(1.0, feature_range=(0, 2e-323)).fit(X * 2e-323)
    # at the floor the grid steps are normal floats: the reports are not all lo
    W = MIN_RANGE_WIDTH
    fitted = mech(1.0, feature_range=(0, W), random_state=0).fit(X * W)
    assert len(np.unique(fitted.transform(X * W))) > 1
    # a spec of such bounds is refused where its reports are decoded
    spec = collection_spec(mech(1.0, feature_range=(0, W)).fit(X * W))
    tiny = dataclasses.replace(spec, public_state=dict(spec.public_state,
                                                       feature_max=[2e-323]))
    with pytest.raises(ValueError, match="below 4.1e-289"):
        mechanism_from_spec(dataclasses.replace(tiny, id=tiny.content_id()))


def test_overflowing_bounds_refused_by_device():
    with pytest.raises(SpecError, match="finite"):
        plan(_spec("OneBitMechanism", 1.0, feature_min=[-1e308], feature_max=[1e308]))


def _words_in_cell(k, n):
    """Words whose uniform lies in the ``k``-th cell below 1 (``r = 2^53 - k``), with the
    fine part ``v`` on a grid of ``n`` values."""
    w1 = np.full(n, np.uint64((1 << 53) - k) << np.uint64(11))
    w2 = (np.arange(n, dtype=np.uint64) * np.uint64((1 << 52) // n)) << np.uint64(12)
    return w1, w2


@pytest.mark.parametrize("eps", [34.5, 36.0, 40.0, 50.0])
def test_a_bit_with_a_tiny_probability_of_zero_is_sampled_exactly(eps):
    # one-bit and multi-bit compared u < p with p = 1 - 1/(1 + e^eps): near 1 a uniform
    # is a multiple of 2^-53, so the probability of a 0 for an input at the upper bound
    # was rounded to a multiple of 2^-54 (wrong by up to half itself around eps 36: the
    # ratio of a 0's probabilities exceeded e^eps)
    from skldp.device._kinds import _bit_probabilities
    from skldp.device._random import _bernoulli_from_words
    p_one, p_zero = _bit_probabilities(np.array(1.0), eps)
    cells = float(p_zero) * 2.0 ** 53    # P(0) in cells of 2^-53 below 1
    n = 1 << 20
    for k in range(1, int(cells) + 3):
        zeros = ~_bernoulli_from_words(*_words_in_cell(k, n), p_one, p_zero)
        # P(0 | the k-th cell) is the part of that cell within P(0) of 1
        assert zeros.mean() == pytest.approx(np.clip(cells - (k - 1), 0, 1), rel=1e-3,
                                             abs=2.0 / n)


def test_bits_of_ordinary_probabilities_are_those_of_u_below_p():
    from skldp.device._kinds import _bit_probabilities
    from skldp.device._random import _node_words, node_bernoulli_fine, node_uniforms_fine
    keys = np.arange(200_000, dtype=np.uint64)
    unit = np.random.default_rng(0).random((len(keys), 3))
    for eps in (0.1, 1.0, 8.0):
        p_one, p_zero = _bit_probabilities(unit, eps)
        np.testing.assert_array_equal(node_bernoulli_fine(7, keys, 3, 5, p_one, p_zero),
                                      node_uniforms_fine(7, keys, 3, stream=5) < p_one)
    assert _node_words(7, keys[:2], 1, 5).dtype == np.uint64


def test_a_grrfs_flip_never_reports_the_true_code(monkeypatch):
    # the largest uniform times (c - 1) rounds to c - 1: "another code" was x itself
    from skldp.device import _kinds
    top = ((2.0 ** 53 - 1) + 0.5) * 2.0 ** -53
    monkeypatch.setattr(_kinds, "node_uniforms", lambda seed, keys, d, stream: np.full(
        (len(keys), d), top))
    monkeypatch.setattr(_kinds, "node_uniforms_fine", lambda seed, keys, d, stream: np.full(
        (len(keys), d), 1e-300))                    # every sampled code flips
    sizes = np.array([3, 4, 7, 100])
    codes = np.zeros((5, 4), dtype=np.int64)
    out = _kinds.grrfs_encode(codes, sizes, 4, 0.1, 0, np.arange(5, dtype=np.uint64))["c"]
    assert np.all(out != codes)
    assert np.all(out == sizes - 1)                 # the last of the other codes


def test_grr_domains_beyond_2_to_the_24_are_refused():
    # "another value" maps 2^53 equally likely uniforms onto c - 1 values: at c = 2^53 some
    # value got twice the probability of others (up to eps + ln 2 of privacy loss)
    from skldp.device._kinds import MAX_DOMAIN_SIZE
    X = np.zeros((3, 2))
    with pytest.raises(ValueError, match="at most 2\\^24 = 16,777,216; column 0"):
        GRRFSMechanism(1.0, domain_sizes=[MAX_DOMAIN_SIZE + 1, 3]).fit(X)
    spec = collection_spec(GRRFSMechanism(1.0, domain_sizes=[MAX_DOMAIN_SIZE, 3]).fit(X))
    big = dataclasses.replace(spec, public_state=dict(spec.public_state,
                                                      domain_sizes=[1 << 53, 3]))
    with pytest.raises(SpecError, match="domain size"):
        plan(dataclasses.replace(big, id=big.content_id()))
