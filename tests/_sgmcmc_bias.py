"""Discretisation bias of the unadjusted SG-MCMC updates on models with a known posterior.

The approximate updates of the library (SGHMC and SGNHT in :mod:`skdgm._core.sgmcmc`;
TLASGR, TLFSGR, SGRLD and the ``r`` step in :mod:`skdgm.deep_lda._global`; the
unadjusted Langevin and Gibbs-Langevin moves in :mod:`skdgm.grbm._samplers`) have no
Metropolis test, so their stationary law is not the posterior: it is off by a bias that
should vanish as the step size goes to zero. This module runs each update, exactly as
the estimators call it, on a conjugate model whose posterior is known in closed form:

* Gaussian mean with a Gaussian prior (SGHMC, SGNHT);
* Dirichlet-multinomial for a topic column ``phi_k`` with fixed counts ``x_{:k}``, posterior
  ``Dir(eta + x_{:k})`` (TLASGR, TLFSGR, SGRLD; Cong et al. 2017, Eq. 15 and Eq. 5);
* Gamma-Poisson for the top-layer shapes ``r_k``, posterior
  ``Gam(gamma0 / K + x_k, c0 + q)`` (Cong et al. 2017, Eq. 17 against Eq. 7);
* the GRBM conditional ``v | h ~ N(mu + W^T h, sigma^2)`` (the Langevin inner loop of
  Gibbs-Langevin, Liao et al. 2022, Eq. 29) and a GRBM small enough that its marginal
  ``p(v)``, a mixture of ``2^M`` Gaussians, is enumerated (Langevin on the free
  energy, Alg. 1; unadjusted Gibbs-Langevin, Alg. 2).

Each run moves many independent replicates of the same chain in one array (columns of
``phi``, coordinates of ``theta``, rows of ``v``), standardises every draw by the exact
posterior mean and standard deviation, and records, at every kept step, the replicate
average of ``z`` and of ``z**2`` for each distinct coordinate. The bias of the mean is
then ``E[z]`` (in posterior standard deviations) and the bias of the variance is
``Var[z] - 1`` (relative to the posterior variance); their Monte-Carlo standard errors
come from batch means over time, which also absorbs any correlation between the
replicates (SGNHT couples them through its thermostat).

The gradients are the full-data ones unless ``batch_size`` is given, so what is
measured is the discretisation bias alone. Used by ``tests/test_sgmcmc_bias.py`` and
``benchmarks/bench_sgmcmc_bias.py``.
"""

from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_discrete_lyapunov

from skdgm._core.sgmcmc import SGHMCState
from skdgm.deep_lda import _global
from skdgm.grbm import _samplers
from skdgm.grbm._model import GRBMParams, exact_moments

__all__ = [
    "Bias",
    "GaussianMean",
    "summarise",
    "run_sgmcmc",
    "sghmc_exact_variance",
    "run_simplex",
    "run_r_step",
    "run_langevin_inner",
    "langevin_inner_exact_variance",
    "small_grbm",
    "run_grbm_chain",
]


# --------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------

@dataclass
class Bias:
    """Bias of the stationary mean and variance, each with its Monte-Carlo SE.

    Arrays have one entry per distinct coordinate; ``mean`` is in posterior standard
    deviations, ``var`` is the relative error of the variance.
    """

    mean: np.ndarray
    mean_se: np.ndarray
    var: np.ndarray
    var_se: np.ndarray

    def worst(self):
        """``(mean, mean_se, var, var_se)`` at the coordinates with the largest |bias|."""
        i = int(np.argmax(np.abs(self.mean)))
        j = int(np.argmax(np.abs(self.var)))
        return (float(self.mean[i]), float(self.mean_se[i]),
                float(self.var[j]), float(self.var_se[j]))


def summarise(z, z2, n_batches=25):
    """Biases from traces of replicate means ``z`` and ``z**2``, shape ``(T, S)``.

    The variance estimate of each batch is ``mean(z2) - mean(z)**2`` over the batch;
    the standard errors are the spread of the batch estimates over ``sqrt(n_batches)``.
    """
    z = np.asarray(z, dtype=float)
    z2 = np.asarray(z2, dtype=float)
    size = z.shape[0] // n_batches
    if size < 2:
        raise ValueError(f"need at least {2 * n_batches} kept steps")
    zb = z[: size * n_batches].reshape(n_batches, size, -1).mean(axis=1)
    z2b = z2[: size * n_batches].reshape(n_batches, size, -1).mean(axis=1)
    vb = z2b - zb**2
    mean = zb.mean(axis=0)
    var = z2b.mean(axis=0) - mean**2 - 1.0
    return Bias(mean, zb.std(axis=0, ddof=1) / np.sqrt(n_batches),
                var, vb.std(axis=0, ddof=1) / np.sqrt(n_batches))


class _Recorder:
    """Keeps the replicate means of ``z`` and ``z**2`` per distinct coordinate."""

    def __init__(self, mean, sd, groups):
        self.mean, self.sd, self.groups = mean, sd, groups
        self.z, self.z2 = [], []

    def __call__(self, x):
        z = (x - self.mean) / self.sd
        self.z.append(self.groups(z))
        self.z2.append(self.groups(z * z))

    def result(self, n_batches=25):
        return summarise(np.array(self.z), np.array(self.z2), n_batches)


# --------------------------------------------------------------------------
# SGHMC / SGNHT on a Gaussian mean
# --------------------------------------------------------------------------

@dataclass
class GaussianMean:
    """``theta ~ N(m0, s0^2)``, ``y_i | theta ~ N(theta, sigma^2)``, ``i < N``.

    Posterior ``N(m_N, s_N^2)`` with ``1/s_N^2 = 1/s0^2 + N/sigma^2`` and
    ``m_N = s_N^2 (m0/s0^2 + sum(y)/sigma^2)``.
    """

    y: np.ndarray
    m0: float = 0.0
    s0: float = 2.0
    sigma: float = 1.0

    @classmethod
    def simulate(cls, n=100, seed=0, **kw):
        rng = np.random.default_rng(seed)
        return cls(1.0 + kw.get("sigma", 1.0) * rng.standard_normal(n), **kw)

    @property
    def post_var(self):
        return 1.0 / (1.0 / self.s0**2 + self.y.size / self.sigma**2)

    @property
    def post_mean(self):
        return self.post_var * (self.m0 / self.s0**2 + self.y.sum() / self.sigma**2)

    def grad(self, theta, rng=None, batch_size=None):
        """``grad log p(theta | y)``; with ``batch_size``, the unbiased estimate
        ``prior + (N / |B|) sum_B`` from one minibatch per coordinate (with replacement)."""
        n = self.y.size
        if batch_size is None:
            ysum = self.y.sum()
        else:
            idx = rng.integers(n, size=(np.size(theta), batch_size))
            ysum = self.y[idx].sum(axis=1) * (n / batch_size)
        return (self.m0 - theta) / self.s0**2 + (ysum - n * theta) / self.sigma**2

    def grad_noise_var(self, batch_size):
        """Variance of the minibatch gradient's error (it does not depend on theta)."""
        n = self.y.size
        return n**2 * self.y.var() / (batch_size * self.sigma**4)


def sghmc_exact_variance(h, friction, noise_var=0.0, post_var=1.0):
    """Stationary ``Var[theta] / s_N^2`` of :func:`~skdgm._core.sgmcmc.sghmc_update` on a
    Gaussian target, with ``eta = h s_N^2`` and gradient noise of variance ``noise_var``.

    The update is linear, ``x' = x + v'`` and ``v' = (1 - xi) v - h x + e`` in the
    standardised ``x = (theta - m_N) / s_N`` (``v`` likewise), with the same ``e`` in
    both, so the stationary covariance solves a discrete Lyapunov equation.
    """
    A = np.array([[1.0 - h, 1.0 - friction], [-h, 1.0 - friction]])
    # injected noise 2 xi eta, plus eta^2 noise_var from the gradient, over s_N^2
    q = 2.0 * friction * h + (h * post_var) ** 2 * noise_var / post_var
    Q = q * np.ones((2, 2))
    return float(solve_discrete_lyapunov(A, Q)[0, 0])


def run_sgmcmc(method, h, *, model=None, n_chains=1000, n_burn=1000, n_keep=4000,
               friction=0.1, batch_size=None, seed=0, n_batches=25, update=None):
    """Stationary bias of SGHMC or SGNHT (``method``) at step ``eta = h s_N^2``.

    ``n_chains`` coordinates of one parameter array, each with the same posterior;
    they move through one :class:`~skdgm._core.sgmcmc.SGHMCState`, as
    ``BayesianSBN``'s DSGHMC engine does. ``update`` replaces the library's update for
    negative controls: ``update(state, theta, grad, eta, rng) -> theta``.
    """
    model = GaussianMean.simulate() if model is None else model
    rng = np.random.default_rng(seed)
    m, s = model.post_mean, np.sqrt(model.post_var)
    eta = h * model.post_var
    theta = m + s * rng.standard_normal(n_chains)
    state = SGHMCState([theta], method=method, friction=friction)
    rec = _Recorder(m, s, lambda z: np.array([z.mean()]))
    for t in range(n_burn + n_keep):
        g = model.grad(theta, rng, batch_size)
        if update is None:
            new, aux = state.step([theta], [g], step_size=eta, rng=rng)
            state.commit(aux)
            theta = new[0]
        else:
            theta = update(state, theta, g, eta, rng)
        if t >= n_burn:
            rec(theta)
    return rec.result(n_batches)


# --------------------------------------------------------------------------
# TLASGR / TLFSGR / SGRLD on a Dirichlet-multinomial, and the r step on a Gamma-Poisson
# --------------------------------------------------------------------------

#: Two kinds of topic column: their counts x_{:k} (V = 4 words), so that TLFSGR's
#: shared rate differs from TLASGR's per-topic rates. Columns of one kind are replicates.
SIMPLEX_COUNTS = np.array([[40, 120], [15, 45], [4, 12], [1, 3]], dtype=float)
SIMPLEX_ETA = 0.5


def dirichlet_moments(alpha):
    """Mean and standard deviation of each coordinate of ``Dir(alpha)`` (columns)."""
    a0 = alpha.sum(axis=0)
    mean = alpha / a0
    return mean, np.sqrt(mean * (1.0 - mean) / (a0 + 1.0))


def simplex_step_size(kind, h, counts=SIMPLEX_COUNTS):
    """The library's ``eps_t`` for a dimensionless step ``h``.

    TLASGR's rate ``eps / M_k`` with ``M_k = x_{.k}`` moves column ``k`` by the fraction
    ``~eps`` of the way to its mean, and so does TLFSGR's shared rate on average:
    ``eps = h``. SGRLD's drift has the coefficient ``eps (x_{.k} + phihat_{.k})``, so
    ``eps = h / max_k x_{.k}`` gives the busiest column the same fraction ``h``.
    """
    return h / counts.sum(axis=0).max() if kind == "sgrld" else h


def run_simplex(kind, h, *, counts=SIMPLEX_COUNTS, eta=SIMPLEX_ETA, n_rep=500,
                n_burn=500, n_keep=3000, seed=0, n_batches=25, step=None, noise_scale=1.0):
    """Stationary bias of ``phi_k`` under TLASGR, TLFSGR or SGRLD (``kind``).

    The "minibatch statistics" are the fixed counts ``xbar`` (``rho = 1``), so the
    target is ``Dir(eta + x_{:k})`` exactly (the complete-data conditional). The metric
    is the estimator's Eq. 18 estimate with those counts, ``M_k = x_{.k}``. ``step``
    replaces :func:`skdgm.deep_lda._global.simplex_step` and ``noise_scale`` (not 1)
    makes the injected noise too hot or too cold, for negative controls.
    """
    rng = np.random.default_rng(seed)
    V, C = counts.shape
    xbar = np.repeat(counts, n_rep, axis=1)
    mean, sd = dirichlet_moments(xbar + eta)
    phi = rng.dirichlet(np.ones(V), size=xbar.shape[1]).T  # start away from the target
    M = _global.update_metric(np.zeros(xbar.shape[1]), xbar.sum(axis=0), 1.0, 1.0)
    eps = simplex_step_size(kind, h, counts)
    phihat = phi * rng.gamma(V * eta, size=phi.shape[1])
    simplex = _global.simplex_step if step is None else step
    rec = _Recorder(mean, sd, lambda z: z.reshape(V, C, n_rep).mean(axis=2).ravel())
    for t in range(n_burn + n_keep):
        noise = noise_scale * rng.standard_normal(phi.shape)
        if kind == "sgrld":
            phihat, phi = _global.sgrld_step(phihat, eps, xbar, 1.0, eta, noise)
        else:
            rate = eps / M if kind == "tlasgr" else eps / M.mean()
            phi, _ = simplex(phi, rate, xbar, 1.0, eta, noise)
        if t >= n_burn:
            rec(phi)
    return rec.result(n_batches)


#: Top-layer counts ``x_k`` of two kinds of topic, the sum ``q`` of the top layer's
#: ``log(1 + 1/p)`` terms, ``c0``, and the shape ``gamma0 / K`` per topic.
R_COUNTS = np.array([1.0, 10.0])
R_Q, R_C0, R_SHAPE0 = 2.0, 1.0, 0.5


def run_r_step(h, *, n_rep=1000, n_burn=500, n_keep=3000, seed=0, n_batches=25,
               noise_scale=1.0):
    """Stationary bias of ``r_k`` under :func:`~skdgm.deep_lda._global.r_step`.

    Target ``Gam(gamma0 / K + x_k, rate c0 + q)`` (Eq. 7 with ``rho = 1``); the rate is
    the estimator's ``eps / M`` with ``M = q`` (Eq. 19 with these statistics).
    """
    rng = np.random.default_rng(seed)
    C = R_COUNTS.size
    x = np.repeat(R_COUNTS, n_rep)
    K = x.size
    gamma0 = R_SHAPE0 * K
    shape, rate_b = R_SHAPE0 + x, R_C0 + R_Q
    mean, sd = shape / rate_b, np.sqrt(shape) / rate_b
    r = rng.gamma(1.0, size=K)
    M = float(_global.update_metric(0.0, R_Q, 1.0, 1.0))
    rec = _Recorder(mean, sd, lambda z: z.reshape(C, n_rep).mean(axis=1))
    for t in range(n_burn + n_keep):
        noise = noise_scale * rng.standard_normal(K)
        r, _ = _global.r_step(r, h / M, x, R_Q, 1.0, gamma0, R_C0, noise)
        if t >= n_burn:
            rec(r)
    return rec.result(n_batches)


# --------------------------------------------------------------------------
# GRBM: Langevin on v | h, Langevin on p(v), unadjusted Gibbs-Langevin
# --------------------------------------------------------------------------

#: ``v | h ~ N(m, sigma^2)`` for the inner-loop test: three units of different scales.
INNER_M = np.array([0.5, -1.0, 2.0])
INNER_SIGMA = np.array([0.3, 1.0, 2.0])


def langevin_inner_exact_variance(alphas):
    """Stationary ``Var[v_d] / sigma_d^2`` of repeated inner loops with steps ``alphas``.

    One loop is ``v <- beta_0 v + A m + N(0, c sigma^2)`` (Eq. 11 with the library's
    preconditioned steps, :func:`~skdgm.grbm._samplers.gibbs_langevin_proposal`), so the
    stationary variance is ``c / (1 - beta_0^2)``; for ``K`` constant steps ``alpha``
    it is ``1 / (1 - alpha / 2)``.
    """
    beta0, _, c = _samplers.gibbs_langevin_proposal(alphas)
    return c / (1.0 - beta0**2)


def run_langevin_inner(alpha, *, n_inner=10, schedule="constant", kernels="cython", n_rep=2000,
                       n_burn=100, n_keep=1000, seed=0, n_batches=25, sigma_scale=1.0):
    """Stationary bias of :func:`~skdgm.grbm._samplers.langevin_inner` on ``v | h``.

    ``schedule="constant"``: ``n_inner`` steps of ``alpha``; ``"cosine"``: the
    Gibbs-Langevin default, Eq. (22) over the inner steps. One recorded draw per loop.
    ``sigma_scale`` (not 1) hands the kernel a wrong ``sigma``, for negative controls.
    """
    rng = np.random.default_rng(seed)
    N = INNER_M.size
    alphas = (np.full(n_inner, float(alpha)) if schedule == "constant"
              else _samplers.cosine_steps(alpha, n_inner))
    m = np.broadcast_to(INNER_M, (n_rep, N))
    v = rng.standard_normal((n_rep, N))
    rec = _Recorder(INNER_M, INNER_SIGMA, lambda z: z.mean(axis=0))
    for t in range(n_burn + n_keep):
        v = _samplers.langevin_inner(v, m, sigma_scale * INNER_SIGMA, alphas, rng, kernels=kernels)
        if t >= n_burn:
            rec(v)
    return rec.result(n_batches)


def small_grbm(seed=0, n_visible=2, n_hidden=3, scale=0.8):
    """A float64 GRBM small enough for :func:`~skdgm.grbm._model.exact_moments`."""
    rng = np.random.default_rng(seed)
    return GRBMParams(scale * rng.standard_normal((n_hidden, n_visible)),
                      0.5 * rng.standard_normal(n_hidden),
                      0.5 * rng.standard_normal(n_visible),
                      np.log(rng.uniform(0.5, 1.5, n_visible)))


def run_grbm_chain(sampler, alpha, *, params=None, langevin_steps=10, n_rep=2000,
                   n_burn=200, n_keep=2000, seed=0, n_batches=25, exact_params=None,
                   inner="steps"):
    """Stationary bias of the unadjusted ``"langevin"`` (Alg. 1) or ``"gibbs_langevin"``
    (Alg. 2) sampler of :func:`~skdgm.grbm._samplers.run_chain` on the marginal ``p(v)``.

    One call of ``run_chain`` per recorded step: with ``n_steps=1`` the Langevin step is
    the full ``alpha`` (the cosine schedule's first step), and each Gibbs-Langevin step
    runs its ``langevin_steps`` cosine-annealed inner steps, as in training.
    ``inner`` is passed on (``"closed_form"`` is the estimator's default, same law);
    ``exact_params`` (default ``params``) gives the moments compared against.
    """
    params = small_grbm() if params is None else params
    rng = np.random.default_rng(seed)
    Ev, Evv, _ = exact_moments(params if exact_params is None else exact_params)
    sd = np.sqrt(np.diag(Evv) - Ev**2)
    v = Ev + sd * rng.standard_normal((n_rep, Ev.size))
    rec = _Recorder(Ev, sd, lambda z: z.mean(axis=0))
    for t in range(n_burn + n_keep):
        v = _samplers.run_chain(params, v, rng, sampler=sampler, n_steps=1,
                                step_size=alpha, langevin_steps=langevin_steps,
                                metropolis_adjust=False, inner=inner).v
        if t >= n_burn:
            rec(v)
    return rec.result(n_batches)
