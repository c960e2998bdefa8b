"""Joint-distribution (Geweke 2004) tests of the GRBM samplers (issue 12).

The GRBM has no parameter prior, so the joint under test is the model's own
``p(v, h)`` on a tiny model (2 visible, 2 hidden units), where it is exact:

* the *marginal-conditional* simulator enumerates the 4 hidden states,
  draws ``h ~ p(h)`` (Eq. 2 with ``v`` integrated out) and ``v | h ~ N(mu + W^T h,
  sigma^2)`` (Eq. 3); ``theta`` is ``v`` and the "data" ``y`` is ``h``, drawn
  from ``p(h | v)`` (Eq. 4);
* the *successive-conditional* simulator alternates one step of the library's
  sampler, :func:`skdgm.grbm._samplers.run_chain` with ``n_steps=1`` (the
  transition ``v -> v'`` of a chain), with a fresh exact draw ``h ~ p(h | v)``.

``run_chain`` starts every call from ``v`` alone (it draws its own ``h_0 ~ p(h | v)``
inside, the same law as ``y``), so each step must leave the model's marginal
``p(v)`` invariant; a kernel that does not moves the successive means of the
statistics away from the exact ones. The statistics are the first and second
moments of ``v``, ``h`` and their cross terms ``h_j v_i`` (12 in all).

Each passing test has a negative control through :func:`assert_geweke_fails` with
the same sizes and seed: the unadjusted version of each Metropolis-adjusted
kernel (Gibbs-Langevin at its default and at a large step, Langevin at a large
step), and the Gibbs kernel run with every variance 25 % too large. 20,000
iterations take about 1-3 CPU-seconds per test.
"""

import numpy as np
import pytest
from _geweke import assert_geweke_fails, assert_geweke_passes
from scipy.special import expit, logsumexp

from skdgm.grbm._model import GRBMParams
from skdgm.grbm._samplers import run_chain

N_ITER = 20_000

# A small model with some structure: the four component means
# mu + W^T h are well apart (|W| ~ 1 against sigma ~ 0.7-0.8), so p(v) is
# bimodal and h depends strongly on v, but the chains still cross between modes.
PARAMS = GRBMParams(
    W=np.array([[1.1, -0.6], [0.4, 0.9]]),
    b=np.array([-0.3, 0.2]),
    mu=np.array([-0.4, 0.1]),
    log_var=np.log(np.array([0.5, 0.6])),
)
_H = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])


def _hidden_marginal(p):
    """``p(h)`` over the 4 states: ``b^T h + sum_i ((mu + W^T h)_i^2 - mu_i^2) / (2 var_i)``."""
    m = p.mu + _H @ p.W
    logp = _H @ p.b + 0.5 * np.sum((m * m - p.mu ** 2) / p.var, axis=1)
    return np.exp(logp - logsumexp(logp))


_CDF = np.cumsum(_hidden_marginal(PARAMS))
_SD = np.sqrt(PARAMS.var)


def sample_prior(rng):
    """``v ~ p(v)`` exactly: ``h ~ p(h)`` by enumeration, then ``v | h`` (Eq. 3)."""
    k = min(int(np.searchsorted(_CDF, rng.random())), 3)
    return PARAMS.mu + _H[k] @ PARAMS.W + _SD * rng.standard_normal(2)


def sample_data(v, rng):
    """``h ~ p(h | v)`` (Eq. 4)."""
    p = expit(PARAMS.W @ (v / PARAMS.var) + PARAMS.b)
    return (rng.random(2) < p).astype(float)


def statistics(v, h):
    return np.array([v[0], v[1], v[0] ** 2, v[1] ** 2, v[0] * v[1], h[0], h[1], h[0] * h[1],
                     h[0] * v[0], h[0] * v[1], h[1] * v[0], h[1] * v[1]])


NAMES = ["v0", "v1", "v0^2", "v1^2", "v0 v1", "h0", "h1", "h0 h1",
         "h0 v0", "h0 v1", "h1 v0", "h1 v1"]


def step(params=PARAMS, **kwargs):
    """One ``run_chain`` step as a Geweke transition ``(v, y, rng) -> v``."""
    def transition(v, y, rng):
        return run_chain(params, v[None, :], rng, n_steps=1, adjust_after=0, **kwargs).v[0]
    return transition


def run(assertion, transition, seed):
    return assertion(sample_prior, sample_data, transition, statistics, n_iter=N_ITER,
                     rng=np.random.default_rng(seed), names=NAMES)


# --------------------------------------------------------------------------
# Gibbs (Alg. 5)
# --------------------------------------------------------------------------

def test_gibbs_passes():
    run(assert_geweke_passes, step(sampler="gibbs"), seed=0)


def test_gibbs_wrong_conditional_variance_fails():
    """The same Gibbs kernel with every ``sigma^2`` 25 % too large."""
    wide = PARAMS._replace(log_var=PARAMS.log_var + np.log(1.25))
    run(assert_geweke_fails, step(wide, sampler="gibbs"), seed=0)


# --------------------------------------------------------------------------
# Gibbs-Langevin with the Metropolis test (Alg. 2, Eqs. 11-12 / 30-32)
# --------------------------------------------------------------------------
# The estimator's defaults (langevin_step_size 0.5, 10 inner steps: acceptance
# 0.63 here) through the closed form and through the Cython inner loop, and one
# large step (1.5, a single inner step: the proposal overshoots the conditional
# mean, acceptance 0.50, and Var(v | h) without the test is 4 sigma^2).

GL_CASES = [("closed_form", None, 0.5, 10), ("steps", "cython", 0.5, 10),
            ("closed_form", None, 1.5, 1)]
GL_IDS = ["closed_form", "steps_cython", "closed_form_large_step"]


def gibbs_langevin(adjust, inner, kernels, step_size, langevin_steps):
    return step(sampler="gibbs_langevin", metropolis_adjust=adjust, inner=inner, kernels=kernels,
                step_size=step_size, langevin_steps=langevin_steps)


@pytest.mark.parametrize("case", GL_CASES, ids=GL_IDS)
def test_gibbs_langevin_adjusted_passes(case):
    run(assert_geweke_passes, gibbs_langevin(True, *case), seed=1)


@pytest.mark.parametrize("case", GL_CASES, ids=GL_IDS)
def test_gibbs_langevin_unadjusted_fails(case):
    """Without the test ``Var(v | h)`` is 1.126 ``sigma^2`` (defaults) or 4 ``sigma^2``."""
    run(assert_geweke_fails, gibbs_langevin(False, *case), seed=1)


# --------------------------------------------------------------------------
# Langevin with the Metropolis test: MALA on the free energy (Alg. 1, Eqs. 6-7, 21-23)
# --------------------------------------------------------------------------
# n_steps=1 keeps the cosine schedule at its first value, the full step.

def test_mala_passes():
    run(assert_geweke_passes, step(sampler="langevin", step_size=0.8, metropolis_adjust=True),
        seed=2)


def test_unadjusted_langevin_large_step_fails():
    run(assert_geweke_fails, step(sampler="langevin", step_size=0.8, metropolis_adjust=False),
        seed=2)


# --------------------------------------------------------------------------
# Stronger versions: ten times the iterations (about 8-35 CPU-seconds each)
# --------------------------------------------------------------------------

SLOW_KERNELS = {
    "gibbs": step(sampler="gibbs"),
    "gibbs_langevin_closed_form": gibbs_langevin(True, *GL_CASES[0]),
    "gibbs_langevin_steps_cython": gibbs_langevin(True, *GL_CASES[1]),
    "gibbs_langevin_large_step": gibbs_langevin(True, *GL_CASES[2]),
    "mala": step(sampler="langevin", step_size=0.8, metropolis_adjust=True),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW_KERNELS))
def test_kernels_pass_long(name):
    assert_geweke_passes(sample_prior, sample_data, SLOW_KERNELS[name], statistics,
                         n_iter=10 * N_ITER, rng=np.random.default_rng(10), names=NAMES)
