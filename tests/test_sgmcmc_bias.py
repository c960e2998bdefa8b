"""The unadjusted SG-MCMC updates: the bias shrinks with the step size (issue 12, item 6).

Each update runs, as its estimator calls it, on a conjugate model whose posterior is
known in closed form, with full-data gradients (no minibatch noise), so the measured
bias is the discretisation bias alone (``tests/_sgmcmc_bias.py`` has the models and
the runners). For each update, at steps ``h`` from large to small:

* the bias at the largest step is resolved (more than 5 Monte-Carlo SEs), so the
  comparison below can see something;
* the bias at the smallest step is smaller than at the largest by more than 3 joint
  SEs, and no step's bias exceeds the previous (larger) step's by more than 3 joint SEs;
* the bias at the smallest step is below a stated bound (the figures quoted in the
  user guide's correctness page), and, where the stationary law is known exactly
  (linear updates on a Gaussian), the measured bias equals it within 4 SEs.

Biases of the mean are in posterior standard deviations, biases of the variance are
relative; the worst coordinate is reported. Each update also has a negative control: a
deliberately broken variant (too hot noise, a wrong target, SGNHT's former thermostat
target) run through the same check must fail it.
"""

import numpy as np
import pytest

import _sgmcmc_bias as B
from skdgm._core import sgmcmc


def _assert_shrinks(steps, biases, ses, bound, what):
    """``biases`` (worst coordinate) at decreasing ``steps`` shrink and end below ``bound``."""
    b, se = np.abs(np.asarray(biases)), np.asarray(ses)
    table = ", ".join(f"h={h:g}: {x:+.4f} ({s:.4f})" for h, x, s in zip(steps, biases, ses))
    assert b[0] > 5 * se[0], f"{what}: bias at the largest step not resolved: {table}"
    joint = 3 * np.sqrt(se[0] ** 2 + se[-1] ** 2)
    assert b[-1] + joint < b[0], f"{what}: bias does not shrink: {table}"
    for i in range(len(b) - 1):
        assert b[i + 1] < b[i] + 3 * np.hypot(se[i], se[i + 1]), \
            f"{what}: bias grows as the step shrinks: {table}"
    assert b[-1] < bound, f"{what}: bias at the smallest step above {bound}: {table}"


def _assert_small(steps, biases, ses, bound, what):
    """An unresolved bias: within 4 SEs of zero, and below ``bound``, at every step."""
    table = ", ".join(f"h={h:g}: {x:+.4f} ({s:.4f})" for h, x, s in zip(steps, biases, ses))
    for x, s in zip(biases, ses):
        assert abs(x) < max(4 * s, bound), f"{what}: {table}"


def _check(steps, results, *, mean_bound, var_bound, unbiased_mean=False):
    """The variance's bias must shrink; so must the mean's where the largest step
    resolves it clearly (10 SEs), otherwise it must stay below ``mean_bound``."""
    worst = np.array([r.worst() for r in results])
    if unbiased_mean or abs(worst[0, 0]) < 10 * worst[0, 1]:
        _assert_small(steps, worst[:, 0], worst[:, 1], mean_bound, "mean")
    else:
        _assert_shrinks(steps, worst[:, 0], worst[:, 1], mean_bound, "mean")
    _assert_shrinks(steps, worst[:, 2], worst[:, 3], var_bound, "variance")


def _lengths(h, burn=15, keep=100):
    """Run lengths in units of the relaxation time ``~1/h`` steps."""
    return {"n_burn": int(burn / h), "n_keep": max(int(keep / h), 1000)}


# --------------------------------------------------------------------------
# SGHMC and SGNHT on a Gaussian mean (skdgm/_core/sgmcmc.py)
# --------------------------------------------------------------------------

SG_STEPS = (0.3, 0.1, 0.03)


def test_sghmc_bias_shrinks_and_matches_the_exact_discrete_law():
    res = [B.run_sgmcmc("sghmc", h, seed=1) for h in SG_STEPS]
    _check(SG_STEPS, res, mean_bound=0.01, var_bound=0.02, unbiased_mean=True)
    for h, r in zip(SG_STEPS, res):
        exact = B.sghmc_exact_variance(h, 0.1) - 1.0
        assert abs(r.var[0] - exact) < 4 * r.var_se[0], (h, r.var[0], exact)


def test_sghmc_negative_control_too_hot_noise_fails():
    def hot(state, theta, g, eta, rng):
        new, aux = state.step([theta], [g], step_size=eta, rng=rng, temperature=1.1)
        state.commit(aux)
        return new[0]

    res = [B.run_sgmcmc("sghmc", h, seed=1, update=hot) for h in SG_STEPS]
    with pytest.raises(AssertionError, match="variance"):
        _check(SG_STEPS, res, mean_bound=0.01, var_bound=0.02, unbiased_mean=True)


def test_sgnht_is_unbiased_on_a_gaussian_at_every_step():
    # With exact gradients the thermostat settles at the diffusion A and SGNHT is
    # SGHMC with its friction; on a Gaussian the thermostat's target makes even the
    # O(h) term vanish (measured: |bias| < 0.003 at h = 0.3, 0.1, 0.03).
    res = [B.run_sgmcmc("sgnht", h, seed=1) for h in SG_STEPS]
    w = np.array([r.worst() for r in res])
    _assert_small(SG_STEPS, w[:, 0], w[:, 1], 0.01, "mean")
    _assert_small(SG_STEPS, w[:, 2], w[:, 3], 0.015, "variance")


def test_sgnht_former_thermostat_target_is_biased_at_every_step(monkeypatch):
    # The negative control, and the regression test of the fix: the continuous-time
    # target E[v^2] = eta (Ding et al.) left the variance ~5 % too small at A = 0.1,
    # whatever the step.
    orig = sgmcmc.sgnht_update

    def former(params, momenta, thermostat, grads, *, step_size, diffusion, rng,
               temperature=1.0):
        p, v, xi = orig(params, momenta, thermostat, grads, step_size=step_size,
                        diffusion=diffusion, rng=rng, temperature=temperature)
        target = step_size * temperature / (1.0 - 0.5 * thermostat)
        return p, v, xi + target - step_size * temperature

    monkeypatch.setattr(sgmcmc, "sgnht_update", former)
    res = [B.run_sgmcmc("sgnht", h, seed=1) for h in SG_STEPS]
    w = np.array([r.worst() for r in res])
    with pytest.raises(AssertionError, match="variance"):
        _assert_small(SG_STEPS, w[:, 2], w[:, 3], 0.015, "variance")
    assert np.all(w[:, 2] < -0.04)


# --------------------------------------------------------------------------
# TLASGR, TLFSGR, SGRLD on a Dirichlet-multinomial; r on a Gamma-Poisson
# (skdgm/deep_lda/_global.py)
# --------------------------------------------------------------------------

SIMPLEX_STEPS = (0.3, 0.1, 0.03)


@pytest.mark.parametrize("kind", ["tlasgr", "tlfsgr"])
def test_reduced_mean_simplex_bias_shrinks(kind):
    res = [B.run_simplex(kind, h, seed=2, **_lengths(h)) for h in SIMPLEX_STEPS]
    _check(SIMPLEX_STEPS, res, mean_bound=0.05, var_bound=0.07)


def test_reduced_mean_simplex_negative_control_fails():
    from skdgm.deep_lda._global import simplex_step

    def hot(phi, rate, xbar, rho, eta, noise):
        return simplex_step(phi, rate, xbar, rho, eta, 1.1 * noise)

    res = [B.run_simplex("tlasgr", h, seed=2, step=hot, **_lengths(h))
           for h in SIMPLEX_STEPS]
    with pytest.raises(AssertionError, match="variance"):
        _check(SIMPLEX_STEPS, res, mean_bound=0.05, var_bound=0.07)


# SGRLD's phi relaxes at the rate eps (x_.k + S_k) / S_k per step, with
# S_k = sum_v phihat_vk ~ Gam(V eta, 1): up to ~15 times slower than h for the quieter
# column kind, so its runs are longer and its smallest default step larger.
SGRLD_STEPS = (0.3, 0.1)


def test_sgrld_bias_shrinks():
    res = [B.run_simplex("sgrld", h, seed=2, n_rep=300, **_lengths(h, 150, 600))
           for h in SGRLD_STEPS]
    _check(SGRLD_STEPS, res, mean_bound=0.05, var_bound=0.1)


def test_sgrld_negative_control_fails():
    res = [B.run_simplex("sgrld", h, seed=2, n_rep=300, noise_scale=1.1,
                         **_lengths(h, 150, 600)) for h in SGRLD_STEPS]
    with pytest.raises(AssertionError, match="variance"):
        _check(SGRLD_STEPS, res, mean_bound=0.05, var_bound=0.1)


@pytest.mark.slow
def test_sgrld_bias_shrinks_to_small_steps():
    steps = (0.3, 0.1, 0.03)
    res = [B.run_simplex("sgrld", h, seed=2, **_lengths(h, 150, 600)) for h in steps]
    _check(steps, res, mean_bound=0.05, var_bound=0.05)


def test_r_step_bias_shrinks():
    res = [B.run_r_step(h, seed=3, **_lengths(h)) for h in SIMPLEX_STEPS]
    _check(SIMPLEX_STEPS, res, mean_bound=0.03, var_bound=0.04)


def test_r_step_negative_control_fails():
    res = [B.run_r_step(h, seed=3, noise_scale=1.1, **_lengths(h)) for h in SIMPLEX_STEPS]
    with pytest.raises(AssertionError, match="variance"):
        _check(SIMPLEX_STEPS, res, mean_bound=0.03, var_bound=0.04)


# --------------------------------------------------------------------------
# GRBM: the Langevin inner loop on v | h, Langevin and Gibbs-Langevin on p(v)
# (skdgm/grbm/_samplers.py)
# --------------------------------------------------------------------------

INNER_STEPS = (0.4, 0.1, 0.025)


@pytest.mark.parametrize("kernels", ["cython", "numpy"])
def test_langevin_inner_bias_shrinks_and_matches_the_exact_discrete_law(kernels):
    res = [B.run_langevin_inner(a, kernels=kernels, seed=4, n_rep=1000, n_keep=600)
           for a in INNER_STEPS]
    # bound: the exact 0.0127 at alpha = 0.025 plus 4 SEs (~0.004 each)
    _check(INNER_STEPS, res, mean_bound=0.01, var_bound=0.03, unbiased_mean=True)
    for a, r in zip(INNER_STEPS, res):
        exact = B.langevin_inner_exact_variance(np.full(10, a)) - 1.0   # (a/2)/(1-a/2)
        assert np.all(np.abs(r.var - exact) < 4 * r.var_se), (a, r.var, exact)


def test_langevin_inner_negative_control_wrong_scale_fails():
    res = [B.run_langevin_inner(a, seed=4, n_rep=1000, n_keep=600, sigma_scale=1.1)
           for a in INNER_STEPS]
    with pytest.raises(AssertionError, match="variance"):
        _check(INNER_STEPS, res, mean_bound=0.01, var_bound=0.03, unbiased_mean=True)


GRBM_STEPS = (0.4, 0.2, 0.1)


@pytest.mark.parametrize("sampler", ["langevin", "gibbs_langevin"])
def test_grbm_unadjusted_chain_bias_shrinks(sampler):
    res = [B.run_grbm_chain(sampler, a, seed=5, n_rep=1000, **_lengths(a, 10, 100))
           for a in GRBM_STEPS]
    _check(GRBM_STEPS, res, mean_bound=0.01, var_bound=0.07, unbiased_mean=True)


def test_grbm_chain_negative_control_wrong_target_fails():
    # The chain samples a GRBM whose variances are 10 % larger than the one whose
    # exact moments are compared against.
    p = B.small_grbm()
    wrong = p._replace(log_var=p.log_var + np.log(1.1))
    res = [B.run_grbm_chain("langevin", a, params=wrong, exact_params=p, seed=5,
                            n_rep=1000, **_lengths(a, 10, 100)) for a in GRBM_STEPS]
    with pytest.raises(AssertionError):
        _check(GRBM_STEPS, res, mean_bound=0.01, var_bound=0.07, unbiased_mean=True)
