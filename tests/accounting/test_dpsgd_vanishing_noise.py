"""The accountants at a vanishing noise multiplier: never an epsilon of 0.

For ``0 < z`` below about 3e-152, dp-accounting's RDP of the sampled Gaussian comes
out NaN at most orders (an overflow in its sums), and its conversion skips NaN orders:
``compute_dpsgd_epsilon`` returned 0.0, no privacy reported as perfect privacy. Below
about 1e-162 ``z^2`` underflows to 0 and DP-GNN's own bound was NaN (0 / 0 at the
term of no affected example). The RDP of a Gaussian with so little noise is at least
``q`` times that of the Gaussian mechanism alone, ``alpha / (2 z^2)`` (Mironov 2017,
Prop. 7), far above any float: the epsilon must be huge or inf.
"""

import math

import numpy as np
import pytest

from skldp.accounting import dpgnn_rdp


@pytest.mark.parametrize("z", [3e-153, 1e-200, 1e-320])
@pytest.mark.parametrize("max_degree", [0, 3])
def test_dpgnn_rdp_of_a_vanishing_noise_is_infinite_or_huge(z, max_degree):
    rdp = dpgnn_rdp(z, 100, 10, max_degree, 2, orders=np.array([1.5, 2.0, 8.0, 64.0]))
    assert not np.isnan(rdp).any() and (rdp > 1e300).all()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # dp-accounting's overflow
@pytest.mark.parametrize("z", [3e-153, 1e-200])
@pytest.mark.parametrize("bound", ["wor", "combined"])
def test_a_vanishing_noise_multiplier_is_never_reported_as_free(bound, z):
    pytest.importorskip("dp_accounting")
    from skldp.accounting import compute_dpsgd_epsilon, dpsgd_rdp
    eps = compute_dpsgd_epsilon(z, 100, 10, 1, 1e-5, bound=bound)
    assert math.isinf(eps) or eps > 1e300
    _, rdp = dpsgd_rdp(z, 100, 10, 1, bound=bound)
    assert not np.isnan(rdp).any()


@pytest.mark.parametrize("bound", ["wor", "combined"])
def test_a_tiny_noise_multiplier_gives_a_huge_epsilon(bound):
    pytest.importorskip("dp_accounting")
    from skldp.accounting import compute_dpsgd_epsilon
    # still representable (z = 1e-150): the sampled RDP is at least
    # ln(q exp(alpha (alpha - 1) / (2 z^2))) / (alpha - 1) = alpha / (2 z^2) + ln(q) / (alpha - 1),
    # about 5e299 at every order >= 1.01
    eps = compute_dpsgd_epsilon(1e-150, 100, 10, 1, 1e-5, bound=bound)
    assert eps > 1e299
