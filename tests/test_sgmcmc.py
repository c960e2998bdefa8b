"""Shared SG-MCMC updates (``skdgm._core.sgmcmc``) and Adam (``skdgm._core.optim``)."""

import numpy as np
import pytest
from scipy.linalg import solve_discrete_lyapunov

from skdgm._core.diagnostics import effective_sample_size
from skdgm._core.optim import Adam
from skdgm._core.sgmcmc import (
    SGHMCState,
    per_datum_step_size,
    sghmc_update,
    sgnht_update,
)

MU = np.array([1.0, -2.0])
SD = np.array([1.0, 3.0])
ETA, XI = 0.01, 0.1


def _run(method, *, grad_noise=0.0, n_chains=100, n_steps=3000, seed=0):
    """Vectorised independent chains on N(MU, diag(SD^2)); returns (draws, chains, dim)."""
    rng = np.random.default_rng(seed)
    theta = [np.tile(MU, (n_chains, 1))]
    state = SGHMCState(theta, method=method, friction=XI)
    trace = []
    for _ in range(n_steps):
        g = [-(theta[0] - MU) / SD**2 + grad_noise * rng.standard_normal(theta[0].shape)]
        theta, aux = state.step(theta, g, step_size=ETA, rng=rng)
        state.commit(aux)
        trace.append(theta[0])
    return np.asarray(trace)[n_steps // 4:]


def _exact_stationary_variance(var):
    # The discretised SGHMC on a Gaussian is a linear AR(2) in (theta, v); its exact
    # stationary variance solves a discrete Lyapunov equation. The gap to ``var`` is
    # the discretisation bias, which the tolerance below must allow for.
    a = 1.0 / var
    A = np.array([[1 - ETA * a, 1 - XI], [-ETA * a, 1 - XI]])
    Q = 2 * XI * ETA * np.ones((2, 2))
    return solve_discrete_lyapunov(A, Q)[0, 0]


def test_sghmc_exact_gradients_reproduce_gaussian_mean_and_variance():
    trace = _run("sghmc")
    for d in range(2):
        x = trace[:, :, d].T                      # (chains, draws)
        var_exact = _exact_stationary_variance(SD[d] ** 2)
        assert abs(var_exact - SD[d] ** 2) < 0.005 * SD[d] ** 2   # small step: tiny bias
        # Tolerances: 4 Monte Carlo standard errors, each from the chains' own ESS
        # (for the variance, the ESS of the squared deviations), plus the exact bias.
        se_mean = np.sqrt(x.var() / effective_sample_size(x))
        sq = (x - MU[d]) ** 2
        se_var = np.sqrt(sq.var() / effective_sample_size(sq))
        assert abs(x.mean() - MU[d]) < 4 * se_mean
        assert abs(sq.mean() - SD[d] ** 2) < 4 * se_var + abs(var_exact - SD[d] ** 2)


def test_sghmc_overheats_with_noisy_gradients_and_sgnht_does_not():
    # Gradient noise of sd 3 adds ETA^2 * 9 / (2 XI ETA) = 0.45 to the temperature of
    # the fixed-friction sampler; the thermostat raises the friction to absorb it.
    hot = _run("sghmc", grad_noise=3.0, n_steps=2000)
    cool = _run("sgnht", grad_noise=3.0, n_steps=2000)
    v_hot = ((hot[:, :, 0] - MU[0]) ** 2).mean()
    v_cool = ((cool[:, :, 0] - MU[0]) ** 2).mean()
    assert v_hot > 1.3
    assert abs(v_cool - 1.0) < 0.12


def test_updates_return_new_arrays_and_zero_temperature_is_deterministic():
    rng = np.random.default_rng(0)
    p, v = [np.ones(3)], [np.zeros(3)]
    g = [np.full(3, 2.0)]
    p2, v2 = sghmc_update(p, v, g, step_size=0.1, friction=0.5, rng=rng, temperature=0.0)
    np.testing.assert_allclose(v2[0], 0.2)
    np.testing.assert_allclose(p2[0], 1.2)
    assert p[0][0] == 1.0 and v[0][0] == 0.0
    p3, v3, xi = sgnht_update(p, v, 0.5, g, step_size=0.1, diffusion=0.5, rng=rng,
                              temperature=0.0)
    np.testing.assert_allclose(p3[0], 1.2)
    assert xi == pytest.approx(0.5 + 0.04)


def test_per_datum_step_size_and_bad_method():
    assert per_datum_step_size(0.02, 100) == pytest.approx(2e-4)
    with pytest.raises(ValueError, match="positive"):
        per_datum_step_size(0.1, 0)
    with pytest.raises(ValueError, match="unknown SG-MCMC"):
        SGHMCState([np.zeros(2)], method="sgld")


def test_adam_minimises_and_maximises_a_quadratic():
    target = np.array([3.0, -1.0])
    for maximize in (False, True):
        x = [np.zeros(2)]
        opt = Adam(x, learning_rate=0.05, maximize=maximize)
        for _ in range(2000):
            g = x[0] - target                      # gradient of 0.5 |x - t|^2
            x = opt.step(x, [-g if maximize else g])
        np.testing.assert_allclose(x[0], target, atol=1e-3)


def test_adam_step_equals_the_textbook_expressions_bit_for_bit():
    """The allocation-saving Adam step computes Kingma and Ba's Alg. 1 to the same bits."""
    from skdgm._core.optim import Adam
    rng = np.random.default_rng(0)
    params = [rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=4)]
    opt = Adam(params, maximize=True)
    m = [np.zeros_like(p, dtype=float) for p in params]
    v = [np.zeros_like(p, dtype=float) for p in params]
    for t in range(1, 4):
        # float32 and float64 gradients: each keeps its dtype in the expressions
        grads = [rng.normal(size=p.shape).astype(p.dtype) for p in params]
        got = opt.step(params, grads, learning_rate=0.01)
        lr_t = 0.01 * np.sqrt(1.0 - 0.999**t) / (1.0 - 0.9**t)
        for i, (p, g) in enumerate(zip(params, grads)):
            m[i] = 0.9 * m[i] + (1.0 - 0.9) * g
            v[i] = 0.999 * v[i] + (1.0 - 0.999) * (g * g)
            want = p + 1.0 * lr_t * m[i] / (np.sqrt(v[i]) + 1e-8)
            np.testing.assert_array_equal(got[i], want)
            np.testing.assert_array_equal(opt.m[i], m[i])
            np.testing.assert_array_equal(opt.v[i], v[i])
        params = got


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("maximize", [False, True])
def test_fused_adam_difference_step_equals_the_numpy_step_bit_for_bit(dtype, maximize):
    """``step_difference`` (the Cython kernel) against its twin ``step`` on the
    float64 differences, with and without clipping, over several steps."""
    rng = np.random.default_rng(1)
    shapes = [(7, 5), (5,), (7,)]
    params = [rng.normal(size=s).astype(dtype) for s in shapes]
    fused, twin = Adam(params, maximize=maximize), Adam(params, maximize=maximize)
    p_fused = p_twin = params
    for t, scale in enumerate([1.0, 0.37, 1.0, 2.5]):
        pos = [rng.normal(size=s).astype(dtype) for s in shapes]
        neg = [rng.normal(size=s).astype(dtype) for s in shapes]
        p_fused = fused.step_difference(p_fused, pos, neg, scale=scale, learning_rate=0.01)
        grads = [np.subtract(a, b, dtype=np.float64) * scale for a, b in zip(pos, neg)]
        p_twin = [c.astype(dtype) for c in twin.step(p_twin, grads, learning_rate=0.01)]
        for a, b, ma, mb, va, vb in zip(p_fused, p_twin, fused.m, twin.m, fused.v, twin.v):
            assert a.dtype == dtype
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(ma, mb)
            np.testing.assert_array_equal(va, vb)


def test_fused_adam_never_writes_the_moments_a_caller_keeps_to_undo():
    rng = np.random.default_rng(2)
    params = [rng.normal(size=(4, 3)).astype(np.float32)]
    opt = Adam(params)
    for step in range(6):
        pos, neg = [rng.normal(size=(4, 3)).astype(np.float32)], [np.zeros((4, 3), np.float32)]
        saved = (list(opt.m), list(opt.v), opt.t)
        kept = (saved[0][0].copy(), saved[1][0].copy())
        params = opt.step_difference(params, pos, neg)
        np.testing.assert_array_equal(saved[0][0], kept[0])
        np.testing.assert_array_equal(saved[1][0], kept[1])
        assert opt.m[0] is not saved[0][0]
        if step % 2:   # a rejected step: undo, as checked_cd_update does
            opt.m, opt.v, opt.t = saved
    # a copy (an estimator's snapshot) carries no scratch buffers
    import copy
    assert copy.deepcopy(opt)._spares == {}


def test_sq_diff_sum_against_its_twin():
    from skdgm._core.optim import sq_diff_sum_numpy, sq_diff_sum_of
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64):
        a = [rng.normal(size=(300, 7)).astype(dtype), rng.normal(size=11).astype(dtype)]
        b = [rng.normal(size=(300, 7)).astype(dtype), rng.normal(size=11).astype(dtype)]
        want = sum(sq_diff_sum_numpy(x, y) for x, y in zip(a, b))
        # a sequential float64 sum against a pairwise one: equal to rounding
        assert sq_diff_sum_of(a, b) == pytest.approx(want, rel=1e-12)
    # mixed dtypes go up to float64, never down
    x32, y64 = np.float32([1.0]), np.float64([1.0 + 1e-12])
    assert sq_diff_sum_of([x32], [y64]) == pytest.approx(1e-24, rel=1e-3)
