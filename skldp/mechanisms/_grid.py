"""Noise on a fixed grid: floating-point-safe versions of continuous mechanisms.

Mironov (CCS 2012) showed that textbook floating-point noise leaks: ``x + Lap(b)``
computed in floats can take values that no other input can produce, so some
outputs identify ``x`` (epsilon = inf on them). The continuous mechanisms of
skldp therefore draw an *integer* and map it to a value by a fixed affine map,
the same for every input (post-processing):

* the input is first moved to a lattice by unbiased randomized rounding (the
  rounded input is a randomised function of ``x``; a mixture of epsilon-LDP
  distributions is epsilon-LDP for every pair of inputs);
* :func:`discrete_laplace` adds two-sided geometric noise (the discrete
  Laplace distribution) to an integer in ``0..N``;
* :class:`TwoLevelGrid` is a piecewise-constant distribution over integer
  cells, a band of cells that moves with the input and has ``e^eps`` times the
  probability of every other cell: the square wave and the piecewise
  mechanism on a grid.

Floating point is still used to *sample* (inverse CDFs of uniforms), so the
probability of each integer is that of the exact mechanism up to a tiny
relative error, never zero where it should not be: the supports are the same
for every input, which is what Mironov's attack exploits. The error bounds are
stated where each sampler is defined.

References
----------
I. Mironov. On significance of the least significant bits for differential
privacy. ACM CCS 2012. C. Canonne, G. Kamath, T. Steinke. The discrete
Gaussian for differential privacy. NeurIPS 2020 (discrete noise on integers).
"""

import numpy as np

# The samplers run on the devices too: one implementation, numpy only.
from ..device._grid import (  # noqa: F401
    MAX_EPS_PER_COORDINATE,
    TwoLevelGrid,
    discrete_laplace,
    randomized_round,
)
from ..device._kinds import MIN_EPS_PER_COORDINATE

__all__ = ["randomized_round", "discrete_laplace", "discrete_laplace_variance",
           "TwoLevelGrid"]


def discrete_laplace_variance(scale):
    """Variance of :func:`discrete_laplace`: ``2 q / (1 - q)^2`` with ``q = e^(-1/scale)``."""
    q = np.exp(-1.0 / scale)
    one_minus_q = -np.expm1(-1.0 / scale)
    return 2.0 * q / one_minus_q ** 2


def check_eps_per_coordinate(eps, what="eps per coordinate", owner="This mechanism",
                             limit=MAX_EPS_PER_COORDINATE):
    """Refuse a finite budget per coordinate outside ``[MIN_EPS_PER_COORDINATE, limit]``.

    Above ``limit`` (:data:`MAX_EPS_PER_COORDINATE` by default), an output's
    probability ``e^-eps`` is below what floating-point uniforms can resolve, so
    the sampler would never produce it for one input while another input does:
    the guarantee would be infinite, not ``eps``. Below
    :data:`~skldp.device._kinds.MIN_EPS_PER_COORDINATE` (``2^-30``) the discrete
    Laplace sampler leaves its exact range and ``e^eps`` is too close to 1 for
    the estimates that divide by ``p - q`` (``p == q`` in floating point at
    ``eps < 1.1e-16``).
    """
    eps = float(eps)
    if 0 < eps < MIN_EPS_PER_COORDINATE:   # eps <= 0 is the ledger's to refuse
        raise ValueError(
            f"{owner}: {what} is {eps:.6g}, below 2^-30 (about "
            f"{MIN_EPS_PER_COORDINATE:.3g}), the smallest budget per coordinate the "
            "samplers and estimates are accurate for. Such a budget gives reports "
            "that carry no usable information: use a larger eps (or fewer features "
            "per report).")
    if np.isfinite(eps) and eps > limit:
        raise ValueError(
            f"{owner}: {what} is {eps:.6g}, above {limit:g}. Output "
            f"probabilities of e^-{eps:.6g} cannot be sampled in floating point, so the "
            "mechanism would not be eps-LDP (some outputs would be impossible for some "
            "inputs). Such a budget protects nothing in practice: use a smaller eps, or "
            "eps=np.inf for no noise (the non-private baseline drops the mechanism).")
    return eps
