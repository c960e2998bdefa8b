"""Pólya-Gamma draws against the closed-form mean and variance (issue 12, item 1).

``E[PG(b, z)] = b tanh(z/2) / (2z)`` and ``Var = b (2 tanh(z/2) - z sech^2(z/2)) / (4 z^3)``.
Each check is a z-score: the sample mean's error over its Monte-Carlo standard error
``sd / sqrt(N)``, and the sample variance's error over ``sqrt((m4 - s^4) / N)`` (``m4`` the
sample fourth central moment). 5 standard errors over the ~100 checks of this file is a
family-wise false-alarm rate below 1e-4; the seeds are fixed.
"""

import numpy as np
import pytest

from skdgm.sbn._gibbs import draw_polya_gamma
from skdgm.sbn._polya_gamma import pg_mean_var

Z_GRID = np.array([0.0, 1e-3, 1.0, 10.0, 50.0, 200.0, 500.0, 1000.0])
N_DRAWS = 100_000


def _z_scores(x, b, z):
    """(z-score of the mean, z-score of the variance) of draws ``x`` of ``PG(b, z)``."""
    mean, var = pg_mean_var(z, b)
    n = x.size
    d = x - x.mean()
    s2 = np.mean(d * d)
    m4 = np.mean(d ** 4)
    z_mean = (x.mean() - mean) / np.sqrt(var / n)
    z_var = (x.var(ddof=1) - var) / np.sqrt(max(m4 - s2 * s2, 1e-300) / n)
    return float(z_mean), float(z_var)


@pytest.mark.parametrize("b", [1.0, 2.0, 3.5])
def test_scalar_z_matches_closed_forms(b):
    """One z per call (an array of equal activations), every z of the grid."""
    rng = np.random.default_rng(12)
    bad = []
    for z in Z_GRID:
        for sign in (1.0, -1.0):
            x = draw_polya_gamma(np.full(N_DRAWS // 2, sign * z), rng, b)
            zm, zv = _z_scores(x, b, z)
            if abs(zm) > 5 or abs(zv) > 5:
                bad.append((sign * z, round(zm, 1), round(zv, 1)))
    assert not bad, f"b={b}: (z, mean z-score, variance z-score) beyond 5: {bad}"


@pytest.mark.parametrize("b", [1.0, 2.0, 3.5])
def test_mixed_vector_matches_closed_forms(b):
    """All z interleaved in one (n, J) array with random signs, as the sweep passes them."""
    rng = np.random.default_rng(34)
    n = N_DRAWS
    psi = np.tile(Z_GRID, (n, 1)) * rng.choice([-1.0, 1.0], size=(n, Z_GRID.size))
    x = draw_polya_gamma(psi, rng, b)
    assert x.shape == psi.shape
    bad = []
    for j, z in enumerate(Z_GRID):
        zm, zv = _z_scores(x[:, j], b, z)
        if abs(zm) > 5 or abs(zv) > 5:
            bad.append((z, round(zm, 1), round(zv, 1)))
    assert not bad, f"b={b}: (z, mean z-score, variance z-score) beyond 5: {bad}"


@pytest.mark.parametrize("b", [0.01, 0.1, 0.5, 0.97])
def test_fractional_b_matches_closed_forms(b):
    """AIS passes b = beta, any value in (0, 1]: the fractional path is right too.

    (Below b ~ 0.01 the draws are almost all ~0 with rare large ones, and 1e5 draws
    cannot estimate the variance; :func:`test_edge_values` covers tiny b.)
    """
    rng = np.random.default_rng(56)
    psi = np.tile(Z_GRID, (N_DRAWS, 1))
    x = draw_polya_gamma(psi, rng, b)
    bad = []
    for j, z in enumerate(Z_GRID):
        zm, zv = _z_scores(x[:, j], b, z)
        if abs(zm) > 5 or abs(zv) > 5:
            bad.append((z, round(zm, 1), round(zv, 1)))
    assert not bad, f"b={b}: (z, mean z-score, variance z-score) beyond 5: {bad}"


def test_edge_values():
    rng = np.random.default_rng(0)
    psi = np.array([0.0, 3.0, -np.inf, np.inf, 1e15, -1e300])
    assert np.all(draw_polya_gamma(psi, rng, 0.0) == 0.0)
    for b in (1e-300, 1e-12, 1.0, 2.5):
        x = draw_polya_gamma(psi, rng, b)
        assert x.shape == psi.shape and np.all(np.isfinite(x)) and np.all(x >= 0)
        assert x[2] == 0.0 and x[3] == 0.0
        # far beyond z = 1e10: mean b / (2|z|), relative sd sqrt(2 / |z|)
        assert abs(x[4] / (b / 2e15) - 1) < 1e-5 or b < 1e-10
    assert draw_polya_gamma(np.empty((0, 3)), rng).shape == (0, 3)
    assert draw_polya_gamma(2.0, rng).shape == ()


def test_far_range_moments():
    """Beyond |z| = 1e10 the moment-matched sum takes over: mean and variance still exact."""
    rng = np.random.default_rng(3)
    for b in (1.0, 2.5):
        z = 3e11
        x = draw_polya_gamma(np.full(N_DRAWS, z), rng, b)
        zm, zv = _z_scores(x, b, z)
        assert abs(zm) < 5 and abs(zv) < 5, (b, zm, zv)


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf])
def test_bad_shape_raises(bad):
    with pytest.raises(ValueError, match="shape b"):
        draw_polya_gamma(np.zeros(3), np.random.default_rng(0), bad)


def test_nan_argument_raises():
    with pytest.raises(ValueError, match="NaN"):
        draw_polya_gamma(np.array([0.0, np.nan]), np.random.default_rng(0))


def test_closed_forms_are_stable():
    """The Taylor branch and the direct formula agree where both are accurate."""
    z = np.array([0.0099, 0.0101])
    u = z / 2
    m, v = pg_mean_var(z)
    np.testing.assert_allclose(m, np.tanh(u) / (2 * z), rtol=1e-12)
    np.testing.assert_allclose(v, (2 * np.tanh(u) - z / np.cosh(u) ** 2) / (4 * z ** 3),
                               rtol=1e-6)
    m, v = pg_mean_var(np.array([0.0, np.inf, 1e300]), 2.0)
    np.testing.assert_allclose(m, [0.5, 0.0, 1e-300])
    np.testing.assert_allclose(v, [1 / 12, 0.0, 0.0])
