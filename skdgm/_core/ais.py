"""Annealed importance sampling (Neal 2001), one engine for every model with a ``log Z``.

A model plugs in three things:

``log_density(state, beta)``
    log of the unnormalised density ``f_beta`` at inverse temperature ``beta``,
    one value per run (shape ``(n_runs, ...)``). ``f_0`` must be the base
    distribution's unnormalised density, whose log normaliser is ``log_z0``.
``transition(state, beta, rng)``
    a Markov move that leaves ``f_beta`` invariant; returns the new state.
``sample_base(n_runs, rng)``
    exact draws from ``f_0``, the leading axis indexing runs.

The state may carry extra axes after the run axis, for example one annealing
path per data point (state ``(n_runs, n_points, n_hidden)``, log densities
``(n_runs, n_points)``); the estimate is then one ``log Z`` per point.

The weights are accumulated *before* each transition: with
``x_1 ~ f_0`` and ``x_k = T_{k-1}(x_{k-1})``,
``log w = sum_k [log f_{beta_k}(x_k) - log f_{beta_{k-1}}(x_k)]``, and
``log Z = log Z_0 + log mean exp(log w)`` over runs.
"""

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from .chains import even_chunks, run_chains
from .mcmc import effective_sample_size, importance_std_err

__all__ = ["AISResult", "ais_log_weights", "annealed_importance_sampling", "beta_schedule",
           "log_mean_exp"]


class AISResult(NamedTuple):
    """What :func:`annealed_importance_sampling` returns.

    Attributes
    ----------
    log_z : float or ndarray
        ``log Z_0 + log mean exp(log_weights)``, per trailing index.
    std_err : float or ndarray
        Delta-method standard error of ``log_z``: ``sd(w) / (sqrt(n) mean(w))``.
    log_weights : ndarray of shape (n_runs, ...)
        The runs' log importance weights (without ``log Z_0``).
    ess : float or ndarray
        Effective sample size of the weights, ``(sum w)^2 / sum w^2``.
    """

    log_z: object
    std_err: object
    log_weights: np.ndarray
    ess: object


def beta_schedule(n_betas, kind="linear"):
    """Inverse temperatures from 0 to 1 (``n_betas`` values including both ends).

    ``"linear"`` spaces them evenly; ``"sigmoid"`` packs them near both ends, where
    the weights change fastest for most models (Grosse et al. 2013).
    """
    n_betas = int(n_betas)
    if n_betas < 2:
        raise ValueError(f"n_betas must be at least 2, got {n_betas}")
    if kind == "linear":
        return np.linspace(0.0, 1.0, n_betas)
    if kind == "sigmoid":
        s = 1.0 / (1.0 + np.exp(-np.linspace(-4.0, 4.0, n_betas)))
        return (s - s[0]) / (s[-1] - s[0])
    raise ValueError(f"unknown beta schedule {kind!r}; use 'linear' or 'sigmoid'")


def log_mean_exp(a, axis=0):
    """``log(mean(exp(a), axis))`` without overflow."""
    a = np.asarray(a, dtype=float)
    return logsumexp(a, axis=axis) - np.log(a.shape[axis])


def ais_log_weights(n_runs, rng, *, log_density, transition, sample_base, betas,
                    return_state=False, state=None):
    """One group of AIS runs in this process; returns their log weights.

    See the module docstring for the three callables. ``betas`` must start at 0
    and end at 1 (or at the target's inverse temperature).

    With ``return_state=True`` the runs also make one transition at the last
    ``beta`` and the final states are returned, ``(log_w, state)``: the
    importance-weighted states then estimate expectations under the target
    (Neal 2001), as an annealed negative phase needs. ``state`` replaces the
    draw from ``sample_base`` (the caller already has base samples).
    """
    betas = np.asarray(betas, dtype=float)
    if state is None:
        state = sample_base(n_runs, rng)
    log_w = 0.0
    f_prev = log_density(state, betas[0])
    last = len(betas) - 1
    for k in range(1, len(betas)):
        f_cur = log_density(state, betas[k])
        log_w = log_w + (f_cur - f_prev)
        if k < last:
            state = transition(state, betas[k], rng)
            f_prev = log_density(state, betas[k])
    log_w = np.asarray(log_w, dtype=float)
    if return_state:
        return log_w, transition(state, betas[last], rng)
    return log_w


def check_schedule(betas, n_runs, n_groups=None, kind="linear"):
    """Validate an annealing schedule and split ``n_runs`` into groups of runs.

    ``betas`` is a schedule or a count (then :func:`beta_schedule` of that
    ``kind``); it must be non-decreasing, 1-D and hold at least 2 values. The runs
    are split into ``n_groups`` (default ``min(n_runs, 8)``) groups whose sizes
    depend on ``n_runs`` and ``n_groups`` only, never on ``n_jobs``.

    Returns
    -------
    betas : ndarray of float
    sizes : list of int
        Runs per group.
    """
    if np.isscalar(betas):
        betas = beta_schedule(int(betas), kind)
    betas = np.asarray(betas, dtype=float)
    if betas.ndim != 1 or len(betas) < 2 or np.any(np.diff(betas) < 0):
        raise ValueError("betas must be a non-decreasing 1-D schedule of at least 2 values")
    n_runs = int(n_runs)
    if n_runs < 1:
        raise ValueError(f"n_runs must be >= 1, got {n_runs}")
    if n_groups is None:
        n_groups = min(n_runs, 8)
    return betas, [s.stop - s.start for s in even_chunks(n_runs, n_groups)]


def _ais_group(n_runs, rng, **kwargs):
    return ais_log_weights(n_runs, rng, **kwargs)


def annealed_importance_sampling(log_density, transition, sample_base, log_z0, betas,
                                 n_runs, *, n_groups=None, random_state=None, n_jobs=None):
    """Estimate ``log Z`` of ``f_1`` by annealed importance sampling.

    Parameters
    ----------
    log_density, transition, sample_base : callable
        The model, as in the module docstring. They must be picklable (module
        functions, or bound methods / ``functools.partial`` of picklable objects)
        when the runs go to process or Dask workers.
    log_z0 : float or ndarray
        Log normaliser of the base ``f_0`` (per trailing index if the state has
        extra axes).
    betas : int or array-like
        The inverse-temperature schedule, or a count for a linear one.
    n_runs : int
        Number of independent annealing runs.
    n_groups : int, optional
        Runs are split into this many groups, each vectorised in one worker with
        its own stream. The split depends only on ``n_runs`` and ``n_groups``, so
        the estimate is identical for every ``n_jobs`` and backend. Default:
        ``min(n_runs, 8)``.
    random_state : None, int, SeedSequence, Generator or RandomState
    n_jobs : int, optional
        Workers for the groups (see :func:`skdgm._core.chains.run_chains`).

    Returns
    -------
    result : AISResult
    """
    betas, sizes = check_schedule(betas, n_runs, n_groups)
    parts = run_chains(
        _ais_group, sizes, random_state=random_state, n_jobs=n_jobs,
        log_density=log_density, transition=transition, sample_base=sample_base,
        betas=betas,
    )
    log_w = np.concatenate(parts, axis=0)
    std_err = importance_std_err(log_w)
    ess = effective_sample_size(np.exp(log_w - np.max(log_w, axis=0)))
    log_z = np.asarray(log_z0) + log_mean_exp(log_w, axis=0)
    return AISResult(log_z[()], std_err[()], log_w, ess[()])
