"""Noise on a fixed grid (Mironov, CCS 2012): the samplers the devices run.

See :mod:`skldp.mechanisms._grid` for why the continuous mechanisms draw integers.
Everything here is numpy only; the server's mechanisms call the same functions.
"""

import numpy as np

__all__ = ["randomized_round", "discrete_laplace", "TwoLevelGrid", "MAX_EPS_PER_COORDINATE"]

# The largest budget of one coordinate (one bit, one value) that the samplers can
# honour: its smallest output probability, about e^-eps, must be resolved by the
# full-precision uniforms (resolution 2^-105) to a small relative error.
MAX_EPS_PER_COORDINATE = 50.0


def randomized_round(v, u):
    """``floor(v)`` or ``floor(v) + 1`` with probabilities making it unbiased.

    Returns int64 values whose mean is ``v`` given uniforms ``u``.
    """
    lo = np.floor(v)
    return (lo + (u < (v - lo))).astype(np.int64)


def discrete_laplace(scale, u1, u2):
    """Two-sided geometric noise ``G1 - G2`` with ``P(z) ∝ exp(-|z| / scale)``.

    Each ``G = floor(-ln(U) * scale)`` is geometric with ``P(G >= k) = q^k``,
    ``q = exp(-1/scale)``. ``u1``, ``u2`` must come from
    :func:`skldp.utils._random.node_uniforms_fine` (full relative precision), so
    the floating-point evaluation changes the probability of an integer by a
    relative error of at most about ``|ln U| * scale * 2^-50`` (below 1e-5 for
    ``scale <= 2^30`` and ``U > e^-50``); the caller keeps ``scale <= 2^30``.
    """
    g1 = np.floor(-np.log(u1) * scale)
    g2 = np.floor(-np.log(u2) * scale)
    return (g1 - g2).astype(np.int64)


class TwoLevelGrid:
    """A band of ``n_band`` cells with ``e^eps`` times the probability of the others.

    The output domain has ``n_band + n_steps * cells_per_step`` integer cells.
    An input ``t`` in [0, 1] is rounded (unbiasedly) to a lattice index ``i`` in
    ``0..n_steps``; the band then covers cells ``i*cells_per_step ..
    i*cells_per_step + n_band - 1`` and the ``n_out = n_steps * cells_per_step``
    other cells are the outside. Every band cell has probability
    ``pi / n_band`` and every outside cell ``(1 - pi) / n_out`` with
    ``pi = e^eps n_band / (n_out + e^eps n_band)``, so their ratio is exactly
    ``e^eps`` and any two inputs give distributions within a factor ``e^eps``:
    the output is eps-LDP (a randomized rounding of ``t`` is a mixture of such
    distributions). This is the square wave (Li et al., SIGMOD 2020) and the
    piecewise mechanism (Wang et al., ICDE 2019) with their continuous ranges
    cut into cells.

    Sampling: the piece from a full-precision uniform compared with ``1 - pi``
    (:func:`skldp.utils.node_uniforms_fine`: the probability of the outside is
    exact up to a relative error below 1e-12 for ``1 - pi >= e^-50``), the cell
    within the piece as ``floor(u * size)`` of a 53-bit uniform (relative error
    below ``size * 2^-53 <= 2^-27`` per cell).

    Parameters
    ----------
    eps : float
        Budget of one coordinate.
    n_steps : int
        Lattice intervals of the input.
    cells_per_step : int
        Cells the band moves per lattice step.
    n_band : int
        Cells of the band (at least 1).
    """

    def __init__(self, eps, n_steps, cells_per_step, n_band):
        self.eps = float(eps)
        self.n_steps = int(n_steps)
        self.cells_per_step = int(cells_per_step)
        self.n_band = max(1, int(n_band))
        self.n_out = self.n_steps * self.cells_per_step
        self.n_cells = self.n_out + self.n_band
        # 1 - pi = n_out / (n_out + e^eps n_band) = 1 / (1 + e^z), z = eps + ln(n_band / n_out).
        z = self.eps + np.log(self.n_band / self.n_out)
        self.p_outside = float(1.0 / (1.0 + np.exp(z)))

    def sample(self, t, u_round, u_piece, u_pos):
        """Integer cells for inputs ``t`` in [0, 1] (any shape) from three uniforms."""
        i = randomized_round(t * self.n_steps, u_round)
        start = i * self.cells_per_step
        band = start + np.minimum((u_pos * self.n_band).astype(np.int64), self.n_band - 1)
        out = np.minimum((u_pos * self.n_out).astype(np.int64), self.n_out - 1)
        out = out + self.n_band * (out >= start)
        return np.where(u_piece < self.p_outside, out, band)

    def _moments_at(self, i):
        """E[j], E[j^2] of the cell given lattice index ``i`` (exact sums)."""
        s = i * float(self.cells_per_step)
        B, D = float(self.n_band), float(self.n_cells)

        def sums(a, b):  # sum and sum of squares of the integers a..b-1
            s1 = (b * (b - 1) - a * (a - 1)) / 2.0
            s2 = ((b - 1) * b * (2 * b - 1) - (a - 1) * a * (2 * a - 1)) / 6.0
            return s1, s2

        b1, b2 = sums(s, s + B)
        a1, a2 = sums(0.0, D)
        po = self.p_outside
        m1 = (1 - po) * b1 / B + po * (a1 - b1) / self.n_out
        m2 = (1 - po) * b2 / B + po * (a2 - b2) / self.n_out
        return m1, m2

    def affine_mean(self):
        """``(A, B)`` with ``E[j | i] = A + B i`` (the mean is affine in the lattice index)."""
        m0, _ = self._moments_at(np.float64(0.0))
        m1, _ = self._moments_at(np.float64(1.0))
        return m0, m1 - m0

    def moments(self, t):
        """``E[j]`` and ``Var[j]`` for inputs ``t`` in [0, 1], rounding included."""
        v = np.asarray(t, dtype=np.float64) * self.n_steps
        i0 = np.floor(v)
        f = v - i0
        m1a, m2a = self._moments_at(i0)
        m1b, m2b = self._moments_at(i0 + 1)
        mean = (1 - f) * m1a + f * m1b
        second = (1 - f) * m2a + f * m2b
        return mean, second - mean ** 2
