"""Noise on a fixed grid (Mironov, CCS 2012): the samplers the devices run.

See :mod:`skldp.mechanisms._grid` for why the continuous mechanisms draw integers.
Everything here is numpy only; the server's mechanisms call the same functions.
"""

import numpy as np

__all__ = ["randomized_round", "discrete_laplace", "TwoLevelGrid", "MAX_EPS_PER_COORDINATE",
           "MIN_RANGE_WIDTH"]

# The largest budget of one coordinate (one bit, one value) that the samplers can
# honour: its smallest output probability, about e^-eps, must be resolved by the
# full-precision uniforms (resolution 2^-105) to a small relative error.
MAX_EPS_PER_COORDINATE = 50.0
#: The narrowest feature range (hi - lo) a spec may state: the report grids split the width
#: into up to 2^24 steps, which stay normal floats (full precision) with 2^40 to spare;
#: narrower widths give subnormal or zero steps (reports of fewer values, or all lo).
MIN_RANGE_WIDTH = float(np.finfo(np.float64).tiny) * 2.0 ** 64


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

    def slope(self):
        """``B`` of ``E[j | s] = A + B s`` at band start ``s`` (closed form: subtracting
        the sums of order ``n_cells^3`` that give it loses its digits at small ``eps``)."""
        nb = float(self.n_band)
        return nb * np.expm1(self.eps) / (self.n_out + np.exp(self.eps) * nb)

    def affine_mean(self):
        """``(A, B)`` with ``E[j | i] = A + B i`` (the mean is affine in the lattice index)."""
        nb, no = float(self.n_band), float(self.n_out)
        return (nb - 1.0) / 2.0 + self.p_outside * (no + nb) / 2.0, \
            self.slope() * self.cells_per_step

    def _variance_at(self, i):
        """``Var[j | i]`` as a sum of non-negative terms (band, outside, between them)."""
        nb, no = float(self.n_band), float(self.n_out)
        s = i * float(self.cells_per_step)
        po = self.p_outside
        r = (no - s) / no   # share of the outside cells above the band
        var_band = (nb * nb - 1.0) / 12.0
        var_out = (no * no - 1.0) / 12.0 + nb * nb * r * (1.0 - r) + nb * r * s
        gap = s + (nb - 1.0) / 2.0 - ((no - 1.0) / 2.0 + nb * r)   # band mean - outside mean
        return (1.0 - po) * var_band + po * var_out + (1.0 - po) * po * gap * gap

    def moments(self, t):
        """``E[j]`` and ``Var[j]`` for inputs ``t`` in [0, 1], rounding included."""
        v = np.asarray(t, dtype=np.float64) * self.n_steps
        i0 = np.floor(v)
        f = v - i0
        A, B = self.affine_mean()
        var = (1 - f) * self._variance_at(i0) + f * self._variance_at(i0 + 1) \
            + B * B * f * (1 - f)   # the randomized rounding's share
        return A + B * v, var
