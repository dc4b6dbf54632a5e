"""Exact support of :class:`TwoLevelGrid.sample`, with no statistics: for every lattice
input, uniforms laid out evenly over [0, 1) hit every band cell equally often and every
outside cell equally often, and no other cell. A cell that can never come out (an
off-by-one in the band or in the skip over it) would make the ratio of two inputs'
probabilities of that cell infinite, breaking eps-LDP."""

import numpy as np
import pytest

from skldp.device._grid import TwoLevelGrid


@pytest.mark.parametrize("n_steps, cps, n_band",
                         [(8, 1, 3), (6, 2, 5), (5, 1, 1), (4, 3, 2), (3, 1, 7)])
def test_every_cell_has_its_exact_mass(n_steps, cps, n_band):
    g = TwoLevelGrid(1.0, n_steps, cps, n_band)
    assert g.n_cells == n_steps * cps + n_band
    # u_pos at the centre of K equal slots: floor(u * size) hits each of `size` cells
    # exactly K / size times when size divides K
    K = g.n_out * g.n_band * 4
    u_pos = (np.arange(K) + 0.5) / K
    for i in range(n_steps + 1):
        t = np.full(K, i / n_steps)
        u_round = np.full(K, 0.5)            # t * n_steps is an integer: no rounding
        start = i * cps
        band_cells = np.arange(start, start + g.n_band)
        out_cells = np.setdiff1d(np.arange(g.n_cells), band_cells)
        assert len(out_cells) == g.n_out
        outside = g.sample(t, u_round, np.zeros(K), u_pos)   # u_piece < p_outside
        band = g.sample(t, u_round, np.ones(K), u_pos)       # u_piece >= p_outside
        np.testing.assert_array_equal(np.bincount(outside, minlength=g.n_cells)[out_cells],
                                      K // g.n_out)
        assert np.isin(outside, out_cells).all()
        np.testing.assert_array_equal(np.bincount(band, minlength=g.n_cells)[band_cells],
                                      K // g.n_band)
        assert np.isin(band, band_cells).all()


def test_band_to_outside_ratio_is_e_eps():
    # each band cell has (1 - p_outside) / n_band, each outside cell p_outside / n_out
    for eps, n_steps, n_band in [(0.5, 8, 3), (2.0, 16, 5)]:
        g = TwoLevelGrid(eps, n_steps, 1, n_band)
        ratio = ((1 - g.p_outside) / n_band) / (g.p_outside / g.n_out)
        assert ratio == pytest.approx(np.exp(eps), rel=1e-12)
