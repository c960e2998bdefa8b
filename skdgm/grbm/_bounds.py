"""Sandwich bounds on a GRBM's ``log Z`` (bidirectional Monte Carlo).

The path is the AIS path of :mod:`._model` (weights scaled by ``beta``, base
``N(mu, sigma^2)`` visibles and ``Bernoulli(sigmoid(b))`` hiddens), walked forward
for a stochastic lower bound and backward, from draws of the model, for a
stochastic upper bound (Grosse, Ghahramani & Adams 2015, through
:func:`skdgm._core.bdmc.bidirectional_monte_carlo`).

The reverse runs need draws of ``v`` from the model itself. With at most
``EXACT_MAX_HIDDEN`` hidden units they are exact: ``h`` from its enumerated
marginal ``p(h) ∝ exp(_log_unnorm_hidden(h))`` (Eq. 2 after integrating ``v``
out), then ``v | h ~ N(mu + W^T h, sigma^2)`` (Eq. 3). Above that they are the
end states of ``n_chain_steps`` Gibbs sweeps (Eq. 3-4) started from the base, and
the upper bound is only approximate.
"""

from functools import partial

import numpy as np
from scipy.special import logsumexp

from .._core.bdmc import bidirectional_monte_carlo, bounds_at
from .._core.exact import iter_binary_states
from .._core.random import seed_for
from ._train import log_partition_estimate
from ._model import (
    EXACT_MAX_HIDDEN,
    _log_unnorm_hidden,
    ais_callables,
    ais_transition,
    exact_log_partition,
)

__all__ = ["bdmc_log_partition", "estimate_log_partition", "exact_model_draws",
           "chain_model_draws", "log_partition_bounds"]


def exact_model_draws(n, rng, *, params):
    """``n`` exact draws of ``v`` from a GRBM with at most ``EXACT_MAX_HIDDEN`` hidden units."""
    p64 = params.astype(np.float64)
    h = np.concatenate(list(iter_binary_states(p64.W.shape[0], 4096)))
    logp = _log_unnorm_hidden(h, p64)
    p = np.exp(logp - logsumexp(logp))
    idx = rng.choice(h.shape[0], size=int(n), p=p / p.sum())
    mean = p64.mu + h[idx] @ p64.W
    return mean + np.sqrt(p64.var) * rng.standard_normal(mean.shape)


def chain_model_draws(n, rng, *, params, n_steps):
    """``n`` approximate draws of ``v``: ``n_steps`` Gibbs sweeps from the base ``N(mu, sigma^2)``."""
    p64 = params.astype(np.float64)
    v = p64.mu + np.sqrt(p64.var) * rng.standard_normal((int(n), p64.mu.shape[0]))
    for _ in range(int(n_steps)):
        v = ais_transition(v, 1.0, rng, p64)
    return v


def log_partition_bounds(params, *, n_betas, n_runs, exact_start=None, n_chain_steps=1000,
                         random_state=None, n_jobs=None):
    """BDMC bounds on ``log Z`` of a GRBM.

    Parameters
    ----------
    params : GRBMParams
    n_betas : int or array-like
        Sigmoid-spaced schedule length (as the estimator's AIS), or a schedule.
    n_runs : int
        Runs per direction.
    exact_start : bool, optional
        Start the reverse runs from exact draws (enumeration; needs
        ``n_components <= EXACT_MAX_HIDDEN``) or from ``n_chain_steps`` Gibbs
        sweeps. Default: exact when the model is small enough.
    n_chain_steps : int, default=1000
        Gibbs sweeps per approximate draw.
    random_state, n_jobs
        As for :func:`skdgm._core.bdmc.bidirectional_monte_carlo`.

    Returns
    -------
    result : skdgm._core.bdmc.BDMCResult
        ``target="log_partition"``; ``exact`` holds the enumerated ``log Z`` when
        the model is small enough.
    """
    small = params.W.shape[0] <= EXACT_MAX_HIDDEN
    if exact_start is None:
        exact_start = small
    if exact_start and not small:
        raise ValueError(f"exact draws need n_components <= {EXACT_MAX_HIDDEN}, got "
                         f"{params.W.shape[0]}")
    p64 = params.astype(np.float64)
    log_density, transition, sample_base, log_z0 = ais_callables(p64)
    if exact_start:
        sample_target = partial(exact_model_draws, params=p64)
    else:
        sample_target = partial(chain_model_draws, params=p64, n_steps=n_chain_steps)
    return bidirectional_monte_carlo(
        log_density, transition, sample_base, sample_target, log_z0, n_betas, n_runs,
        exact_start=exact_start, target="log_partition",
        exact=exact_log_partition(p64) if small else None,
        random_state=random_state, n_jobs=n_jobs)


# Appended to the spawn key of an int seed, so that the BDMC and the AIS streams
# never coincide with the training streams of the same seed.
BDMC_SEED_PURPOSE = 0xBD3C
AIS_SEED_PURPOSE = 0x5C0E


def bdmc_log_partition(params, *, n_samples, n_betas, tol, random_state, n_jobs=None,
                       name="GaussianBernoulliRBM"):
    """:func:`log_partition_bounds` at ``n_betas`` temperatures, or ``"auto"``.

    ``"auto"`` doubles the temperatures from 100 up to 12,800 until
    ``|gap| + 2 std err < tol`` (:func:`skdgm._core.bdmc.choose_n_betas`, which
    warns naming ``name`` and the gap reached when the cap stops it). Every round
    uses the stream ``seed_for(random_state, BDMC_SEED_PURPOSE)`` (a ``Generator``
    is advanced once, after the arguments are checked).

    Raises
    ------
    ValueError
        For an invalid ``n_samples``, ``n_betas`` or ``tol``.
    """
    def run(n, seed):
        return log_partition_bounds(params, n_betas=n, n_runs=n_samples, random_state=seed,
                                    n_jobs=n_jobs)

    return bounds_at(run, n_samples=n_samples, n_betas=n_betas, tol=tol,
                     random_state=random_state, purpose=BDMC_SEED_PURPOSE, what=name)


def estimate_log_partition(params, *, exact, n_runs, n_betas, tol, random_state,
                           n_jobs=None, name="GaussianBernoulliRBM", verbose=False):
    """``(log Z, standard error)``: enumerated, AIS, or the forward half of BDMC.

    ``exact`` sums the hidden units out of every enumerated hidden configuration
    (Gaussian integrals over ``v``); otherwise AIS from the factorised Gaussian
    base (:func:`._train.log_partition_estimate`, seeded by
    ``seed_for(random_state, AIS_SEED_PURPOSE)``), or with ``n_betas="auto"`` the
    forward runs of :func:`bdmc_log_partition`'s last round.
    """
    if not exact and n_betas == "auto":
        res = bdmc_log_partition(params, n_samples=n_runs, n_betas="auto", tol=tol,
                                 random_state=random_state, n_jobs=n_jobs, name=name)
        return float(res.lower), float(res.lower_std_err)
    return log_partition_estimate(
        params, exact=exact, n_runs=n_runs, n_betas=n_betas,
        random_state=None if exact else seed_for(random_state, AIS_SEED_PURPOSE),
        n_jobs=n_jobs, verbose_name=name if verbose else None)
