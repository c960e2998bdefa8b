"""Sandwich bounds on an SBN's ``log p(x)`` for data simulated from it (bidirectional Monte Carlo).

The sigmoid belief net is directed, so ancestral sampling (Gan et al. 2015,
Sec. 2.3) gives exact pairs ``(x, h)``: ``h`` is then an exact draw from the
posterior ``p(h | x)``, the normalised target of the AIS path
``p(h) p(x | h)^beta`` whose normaliser is ``p(x)`` (:func:`._model.log_marginal_ais`).
Forward AIS from the prior gives a stochastic lower bound on each simulated
``log p(x)``; reverse AIS from the generating ``h`` a stochastic upper bound
(Grosse, Ghahramani & Adams 2015; Grosse et al. 2016). Both go
through :func:`skdgm._core.bdmc.bidirectional_monte_carlo`.

Every reverse run of a point starts from the same generating ``h`` (one exact
posterior draw per simulated point, as in the paper); the runs separate after
their first moves, and each run's weight is unbiased for ``1 / p(x)`` on its own.
"""

from functools import partial

import numpy as np

from .._core.bdmc import BDMCResult, average_over_points, bidirectional_monte_carlo
from .._core.bdmc import choose_n_betas
from .._core.exact import MAX_EXACT_UNITS
from .._core.random import as_generator, seed_for
from . import _model

__all__ = ["generating_hidden", "log_likelihood_bounds", "log_likelihood_bounds_search"]


def generating_hidden(n_runs, rng, *, hidden):
    """The generating hidden layers, repeated over the runs: ``(n_runs, n_points, K_l)`` each."""
    return [np.broadcast_to(h, (int(n_runs),) + h.shape).copy() for h in hidden]


def log_likelihood_bounds(params, n_samples, *, n_betas, n_runs, transition=None,
                          random_state=None, n_jobs=None, average=True):
    """BDMC bounds on ``log p(x)`` of ``n_samples`` points simulated from the SBN.

    Parameters
    ----------
    params : SBNParams
    n_samples : int
        Points simulated by ancestral sampling.
    n_betas : int or array-like
        Sigmoid-spaced schedule length (as the estimator's AIS), or a schedule.
    n_runs : int
        Runs per point and direction.
    transition : callable, optional
        ``transition(state, beta, rng, *, params, X)``, default the exact sweep
        :func:`._model.ais_transition` (the estimator passes the Pólya-Gamma
        sweep it scores with).
    random_state, n_jobs
        The simulation uses the first child of ``random_state``'s
        ``SeedSequence``, the annealing runs the second.
    average : bool, default=True
        Average over the points (else per-point arrays).

    Returns
    -------
    result : skdgm._core.bdmc.BDMCResult
        ``target="log_likelihood"``; ``exact`` holds the enumerated mean
        ``log p(x)`` of the simulated points when the hidden layers have at most
        ``MAX_EXACT_UNITS`` units.
    """
    transition = _model.ais_transition if transition is None else transition
    sim_seed, run_seed = seed_for(random_state).spawn(2)
    layers = _model.sample_ancestral(params, int(n_samples), as_generator(sim_seed))
    X, hidden = layers[0], layers[1:]
    small = sum(_model.layer_sizes(params)[1:]) <= MAX_EXACT_UNITS
    exact = _model.log_marginal_exact(params, X) if small else None
    if not hidden:
        # the fully visible SBN: log p(x) is a closed form, both bounds are exact
        lp = _model.log_conditional(params, [X], 0)
        zero = np.zeros_like(lp)
        res = BDMCResult(lp, lp, zero, zero, zero, zero, n_betas=0, exact_start=True,
                         target="log_likelihood", exact=lp, n_samples=len(lp))
    else:
        res = bidirectional_monte_carlo(
            partial(_model.ais_log_density, params=params, X=X),
            partial(transition, params=params, X=X),
            partial(_model.ais_sample_base, params=params, n_points=len(X)),
            partial(generating_hidden, hidden=hidden),
            0.0, n_betas, n_runs, n_groups=min(int(n_runs), 2), exact_start=True,
            target="log_likelihood", exact=exact, random_state=run_seed, n_jobs=n_jobs)
    return average_over_points(res) if average else res


def log_likelihood_bounds_search(params, n_samples, *, n_betas, n_runs, tol, seed,
                                 transition=None, n_jobs=None, what="BayesianSBN"):
    """:func:`log_likelihood_bounds` at ``n_betas``, or at the count ``"auto"`` finds.

    ``n_betas="auto"`` doubles the schedule from 100 (up to 12,800) until
    ``|gap| + 2 std err < tol`` (:func:`skdgm._core.bdmc.choose_n_betas`, which
    warns naming ``what`` when the cap stops it); every trial reuses ``seed``.
    """
    def run(n):
        return log_likelihood_bounds(params, n_samples, n_betas=n, n_runs=n_runs,
                                     transition=transition, random_state=seed, n_jobs=n_jobs)

    if n_betas == "auto":
        return choose_n_betas(run, tol, what=what)
    return run(n_betas)
