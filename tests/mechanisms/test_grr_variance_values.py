"""GRR-FS's ``frequency_variance`` (Bhaila et al., SDM 2024, eq. (6)):

    Var(f_hat_k) = P(k) (1 - P(k)) / (n ((m/d)(p - q))^2),
    P(k) = (m/d)(q + f_k (p - q)) + (1 - m/d) / c      (eq. (8)),
    p = e^eps / (e^eps + c - 1), q = 1 / (e^eps + c - 1),

pinned to values computed by hand (40-digit mpmath, offline) and to the formula written
out here, and checked by Monte Carlo: the spread of the estimates over many independent
batches of reports matches it."""

import math

import numpy as np
import pytest

from skldp.mechanisms import GRRFSMechanism


def _eq6(eps, m, d, c, f, n):
    # eq. (6) with eq. (8), written out with math (none of the mechanism's helpers)
    e = math.exp(eps)
    p, q, r = e / (e + c - 1), 1 / (e + c - 1), m / d
    P = [r * (q + fk * (p - q)) + (1 - r) / c for fk in f]
    return [Pk * (1 - Pk) / (n * (r * (p - q)) ** 2) for Pk in P]


# (eps, m, d, c, f, n) and eq. (6) by mpmath
CASES = [
    ((1.0, 2, 5, 4, [0.5, 0.3, 0.15, 0.05], 1000),
     [0.013955944148082828783, 0.013183967441213502358, 0.012552484911061507539,
      0.012106496557626844327]),
    ((0.25, 1, 3, 2, [0.9, 0.1], 70), [2.0763191135688268666, 2.0763191135688268666]),
    ((3.0, 4, 4, 5, [0.0, 0.2, 0.2, 0.2, 0.4], 12345),
     [5.1338138950563950651e-6, 2.0641097645137688802e-5, 2.0641097645137688802e-5,
      2.0641097645137688802e-5, 2.966802497561590437e-5]),
]


@pytest.mark.parametrize("case, expected", CASES)
def test_pinned_values(case, expected):
    eps, m, d, c, f, n = case
    mech = GRRFSMechanism(eps, m=m, domain_sizes=c, random_state=0).fit(np.zeros((2, d)))
    var = mech.frequency_variance(np.array(f), 0, n)
    np.testing.assert_allclose(var, expected, rtol=1e-12)
    np.testing.assert_allclose(var, _eq6(*case), rtol=1e-12)


def test_monte_carlo_spread_matches_eq6():
    # R batches of n users; feature 0 drawn i.i.d. from f, so each batch's reports are
    # i.i.d. with probabilities P(k) and eq. (6) is the exact variance of f_hat - f.
    rng = np.random.default_rng(3)
    n, R, eps, c = 20, 20000, 1.0, 3
    f = np.array([0.6, 0.3, 0.1])
    X = np.column_stack([rng.choice(c, size=n * R, p=f),
                         rng.integers(0, c, n * R)]).astype(float)
    mech = GRRFSMechanism(eps, m=1, domain_sizes=c, random_state=4).fit(X)
    codes = mech.transform(X)[:, 0].astype(np.int64).reshape(R, n)
    observed = np.stack([(codes == k).mean(axis=1) for k in range(c)], axis=1)
    est = mech.invert_observed(observed, 0)                       # (R, c)
    var = mech.frequency_variance(f, 0, n)
    # unbiased: mean within 5 standard errors
    assert np.all(np.abs(est.mean(axis=0) - f) < 5 * np.sqrt(var / R))
    # the sample variance of R draws has relative s.e. at most sqrt(2/(R-1)) = 0.010
    # (each count is binomial with P(k) in [0.29, 0.49]: negative excess kurtosis);
    # bound 5 s.e. = 0.05, so a formula off by 10 % (ratio 1/1.1 = 0.91 or 1/0.9 = 1.11)
    # fails by 4 s.e. or more
    emp = est.var(axis=0, ddof=1)
    assert np.all(np.abs(emp / var - 1) < 5 * np.sqrt(2 / (R - 1)))
