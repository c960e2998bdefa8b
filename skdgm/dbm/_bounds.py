"""Sandwich bounds on a DBM's ``log Z`` (bidirectional Monte Carlo).

The path is the AIS path of :func:`._model.ais_log_partition`: from a factorised
base model with biases ``c`` to the DBM, ``f_beta ∝ exp(-beta E + (1 - beta)
sum_l c_l^T x_l)``, the state being the odd layers with the even ones summed out.
Forward AIS gives a stochastic lower bound on ``log Z``, reverse AIS from draws of
the model a stochastic upper bound (Grosse, Ghahramani & Adams 2015,
through :func:`skdgm._core.bdmc.bidirectional_monte_carlo`).

The reverse runs need draws of the odd layers from the model. With at most
``MAX_EXACT_UNITS`` odd units they are exact: one categorical draw over the
enumerated configurations, weighted by their marginal ``sum_even exp(-E)``
(:func:`._model.log_marginal_odd`). Above that they are the odd layers after
``n_chain_steps`` blocked Gibbs sweeps from the base model, and the upper bound is
only approximate.
"""

from functools import partial

import numpy as np
from scipy.special import expit, logsumexp

from .._core.bdmc import bidirectional_monte_carlo, bounds_at
from .._core.exact import MAX_EXACT_UNITS
from .._core.mcmc import bernoulli
from .._core.numerics import softplus
from . import _model

__all__ = ["bdmc_log_partition", "chain_odd_draws", "estimate_log_partition",
           "exact_odd_draws", "log_partition_bounds"]


def exact_odd_draws(n, rng, *, coefs, intercepts):
    """``n`` exact draws of the odd layers (side by side), by enumeration."""
    sizes = _model._odd_sizes(intercepts)
    logp = []
    configs = []
    for cfg in _model._enumerate(sizes):
        logp.append(_model.log_marginal_odd(cfg, coefs, intercepts))
        configs.append(np.hstack(cfg))
    logp = np.concatenate(logp)
    configs = np.concatenate(configs)
    p = np.exp(logp - logsumexp(logp))
    return configs[rng.choice(configs.shape[0], size=int(n), p=p / p.sum())]


def chain_odd_draws(n, rng, *, coefs, intercepts, base_intercepts, n_steps):
    """``n`` approximate draws of the odd layers: ``n_steps`` Gibbs sweeps from the base model."""
    n_layers = len(intercepts)
    layers = [bernoulli(np.broadcast_to(expit(c), (int(n), c.shape[0])).copy(), rng)
              for c in base_intercepts]
    for _ in range(int(n_steps)):
        _model.gibbs_sweep(layers, coefs, intercepts, rng)
    return np.hstack([layers[l] for l in _model.odd_layers(n_layers)])


def log_partition_bounds(coefs, intercepts, *, n_betas, n_runs, base_intercepts=None,
                         exact_start=None, n_chain_steps=1000, random_state=None,
                         n_jobs=None):
    """BDMC bounds on ``log Z`` of a DBM.

    Parameters
    ----------
    coefs, intercepts : list of ndarray
    n_betas : int or array-like
        Sigmoid-spaced schedule length (as the estimator's AIS), or a schedule.
    n_runs : int
        Runs per direction.
    base_intercepts : list of ndarray, optional
        Biases ``c`` of the base model (default the model's own).
    exact_start : bool, optional
        Start the reverse runs from exact draws (enumeration, at most
        ``MAX_EXACT_UNITS`` odd units) or from ``n_chain_steps`` Gibbs sweeps.
        Default: exact when the model is small enough.
    n_chain_steps : int, default=1000
    random_state, n_jobs
        As for :func:`skdgm._core.bdmc.bidirectional_monte_carlo`.

    Returns
    -------
    result : skdgm._core.bdmc.BDMCResult
        ``target="log_partition"``; ``exact`` holds the enumerated ``log Z`` when
        the model is small enough.
    """
    coefs = [np.asarray(W, float) for W in coefs]
    intercepts = [np.asarray(b, float) for b in intercepts]
    base = intercepts if base_intercepts is None else [np.asarray(b, float)
                                                       for b in base_intercepts]
    small = sum(_model._odd_sizes(intercepts)) <= MAX_EXACT_UNITS
    if exact_start is None:
        exact_start = small
    if exact_start and not small:
        raise ValueError(f"exact draws need at most {MAX_EXACT_UNITS} units in the odd "
                         f"layers, got {sum(_model._odd_sizes(intercepts))}")
    kw = dict(coefs=coefs, intercepts=intercepts, base_intercepts=base)
    if exact_start:
        sample_target = partial(exact_odd_draws, coefs=coefs, intercepts=intercepts)
    else:
        sample_target = partial(chain_odd_draws, n_steps=n_chain_steps, **kw)
    log_z0 = float(sum(softplus(b).sum() for b in base))
    return bidirectional_monte_carlo(
        partial(_model.ais_log_density, **kw), partial(_model.ais_transition, **kw),
        partial(_model.ais_sample_base, intercepts=intercepts, base_intercepts=base),
        sample_target, log_z0, n_betas, n_runs, exact_start=exact_start,
        target="log_partition",
        exact=_model.exact_log_partition(coefs, intercepts) if small else None,
        random_state=random_state, n_jobs=n_jobs)


# Appended to the spawn key of an int seed: the BDMC streams never meet training's.
BDMC_SEED_PURPOSE = 0xBD3C


def bdmc_log_partition(coefs, intercepts, base_intercepts, *, n_samples, n_betas, tol,
                       random_state, n_jobs=None, name="DBMCAST"):
    """:func:`log_partition_bounds` at ``n_betas`` temperatures, or ``"auto"``.

    ``"auto"`` doubles the temperatures from 100 up to 12,800 until
    ``|gap| + 2 std err < tol`` (:func:`skdgm._core.bdmc.choose_n_betas`, which
    warns naming ``name`` and the gap reached when the cap stops it). Every round
    uses the same stream, ``seed_for(random_state, BDMC_SEED_PURPOSE)`` (a
    ``Generator`` is advanced once, after the arguments are checked).

    Raises
    ------
    ValueError
        For an invalid ``n_samples``, ``n_betas`` or ``tol``.
    """
    def run(n, seed):
        return log_partition_bounds(coefs, intercepts, n_betas=n, n_runs=n_samples,
                                    base_intercepts=base_intercepts, random_state=seed,
                                    n_jobs=n_jobs)

    return bounds_at(run, n_samples=n_samples, n_betas=n_betas, tol=tol,
                     random_state=random_state, purpose=BDMC_SEED_PURPOSE, what=name)


def estimate_log_partition(coefs, intercepts, base_intercepts, *, exact, n_betas, n_runs,
                           random_state, bounds_random_state, tol, n_jobs=None,
                           name="DBMCAST", verbose=False, n_groups=None):
    """``(log Z, standard error)``: enumerated, AIS, or the forward half of BDMC.

    ``exact=None`` enumerates the odd layers (even layers summed out) when they
    hold at most ``MAX_EXACT_UNITS`` units, as ``exact=True`` always does. AIS
    (:func:`._model.log_partition_estimate`, seeded by ``random_state``) runs on
    the path from the factorised base model with biases ``base_intercepts``
    (Salakhutdinov & Hinton 2009, Sec. 4); with ``n_betas="auto"`` the forward
    runs of :func:`bdmc_log_partition`'s last round (seeded from
    ``bounds_random_state``, target gap ``tol``) are the estimate. ``n_groups``:
    the AIS runs' groups (:func:`skdgm._core.ais.check_schedule`; 1 vectorises
    a few runs in one go, which is what a cheap repeated estimate wants).
    """
    exact = exact or (exact is None and _model.n_odd_units(intercepts) <= MAX_EXACT_UNITS)
    if not exact and n_betas == "auto":
        res = bdmc_log_partition(coefs, intercepts, base_intercepts, n_samples=n_runs,
                                 n_betas="auto", tol=tol, random_state=bounds_random_state,
                                 n_jobs=n_jobs, name=name)
        return float(res.lower), float(res.lower_std_err)
    return _model.log_partition_estimate(
        coefs, intercepts, base_intercepts, exact=exact, n_betas=n_betas, n_runs=n_runs,
        random_state=random_state, n_jobs=n_jobs, verbose_name=name if verbose else None,
        n_groups=n_groups)
