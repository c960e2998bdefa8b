"""Bidirectional Monte Carlo: a stochastic sandwich around ``log Z`` (one engine for every model).

Grosse, Ghahramani & Adams (2015), "Sandwiching the marginal likelihood using
bidirectional Monte Carlo"; Grosse et al. (2016) for its use on deep generative
models. Two annealing runs on one path ``f_0 -> f_1`` (the same three callables as
:mod:`skdgm._core.ais`, plus ``sample_target``):

* **forward** AIS from exact draws of the base ``f_0``. Its weights ``w`` satisfy
  ``E[w] = Z_1 / Z_0``, so by Jensen ``E[log Z_0 + log mean w] <= log Z_1``: a
  *stochastic lower bound* (the usual AIS estimate);
* **reverse** AIS, the same path walked from ``beta = 1`` down to ``beta = 0``,
  started from an *exact* draw of the target ``f_1 / Z_1``. It is AIS from
  ``f_1`` to ``f_0``, so its weights ``u`` satisfy ``E[u] = Z_0 / Z_1`` and
  ``log Z_0 - log mean u`` is a *stochastic upper bound* on ``log Z_1``.

Both bounds tighten as the number of inverse temperatures grows, so the gap
``upper - lower`` bounds the error of either estimate (in expectation) and tells
the user whether the chosen schedule is long enough.

An exact target draw is what a model rarely gives for real data, hence the
paper's device: simulate the data from the model itself. For a directed model
(the sigmoid belief net) ancestral sampling yields exact pairs ``(x, h)`` and
``h`` is an exact draw from the posterior ``p(h | x)``, the target of the path
whose normaliser is ``p(x)``. For an undirected model the target is the model's
``log Z``, and its exact draws come from enumeration on small models; otherwise
from a long Markov chain, which makes the upper bound approximate (flagged by
``exact_start=False`` in the result).

Reverse AIS needs Markov moves that leave each intermediate ``f_beta``
invariant, as forward AIS does, so both directions use the model's one
``transition``. Every annealing group runs through
:func:`skdgm._core.chains.run_chains` with its own ``SeedSequence`` child, so the
result is identical for any ``n_jobs`` and joblib backend.
"""

import numbers
import warnings
from typing import NamedTuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .ais import ais_log_weights, check_schedule, log_mean_exp
from .chains import run_chains
from .mcmc import importance_std_err
from .random import seed_for

__all__ = [
    "AUTO_MAX_BETAS",
    "AUTO_START_BETAS",
    "BDMCResult",
    "average_over_points",
    "bidirectional_monte_carlo",
    "bounds_at",
    "check_bounds_args",
    "choose_n_betas",
    "reverse_ais_log_weights",
]

#: ``n_betas="auto"`` starts here and doubles ...
AUTO_START_BETAS = 100
#: ... up to here (the 8th doubling), then warns.
AUTO_MAX_BETAS = 12800


class BDMCResult(NamedTuple):
    """What :func:`bidirectional_monte_carlo` and the estimators' ``log_likelihood_bounds`` return.

    Attributes
    ----------
    lower, upper : float or ndarray
        Stochastic lower and upper bounds on ``target`` (forward and reverse
        AIS), one per trailing index of the state (e.g. per simulated point) in
        the raw engine output, averaged over points in the estimators' results.
    gap : float or ndarray
        ``upper - lower``: an estimate of how far either bound may be from the
        truth at this many temperatures. Negative values are Monte-Carlo noise.
    lower_std_err, upper_std_err, gap_std_err : float or ndarray
        Delta-method standard errors from the run-to-run spread of the importance
        weights (:func:`skdgm._core.mcmc.importance_std_err`); the two directions
        use independent streams, so the gap's is ``hypot`` of the two.
    n_betas : int
        Inverse temperatures of the path (both directions).
    exact_start : bool
        True when the reverse runs started from exact draws of the target, so
        ``upper`` is a true stochastic upper bound; False when they came from a
        long Markov chain (undirected models too large to enumerate): ``upper`` is
        then only approximately an upper bound.
    target : str
        What is bounded: ``"log_likelihood"`` (mean ``log p(x)`` over data
        simulated from the model) or ``"log_partition"`` (``log Z``).
    exact : float or None
        The exact value of ``target`` when the model is small enough to
        enumerate (a reference for tests and users), else ``None``.
    n_samples : int
        Simulated points (1 for ``"log_partition"``).
    converged : bool
        False when ``n_betas="auto"`` stopped at its cap with the gap above
        ``tol`` (a ``ConvergenceWarning`` was issued); True otherwise.
    """

    lower: object
    upper: object
    gap: object
    lower_std_err: object
    upper_std_err: object
    gap_std_err: object
    n_betas: int
    exact_start: bool = True
    target: str = "log_partition"
    exact: object = None
    n_samples: int = 1
    converged: bool = True


def reverse_ais_log_weights(n_runs, rng, *, log_density, transition, sample_target, betas):
    """One group of reverse AIS runs in this process; returns their log weights.

    The runs start from ``sample_target(n_runs, rng)`` (exact draws of ``f_1``
    normalised) and anneal from ``beta = 1`` to ``beta = 0`` with the same
    transitions as forward AIS. The weights accumulate
    ``log f_{beta_{k-1}}(x) - log f_{beta_k}(x)`` before each move, so
    ``mean exp(log_w)`` estimates ``Z_0 / Z_1`` without bias (Grosse et al. 2015:
    it is forward AIS on the reversed path).

    Parameters
    ----------
    n_runs : int
    rng : numpy.random.Generator
    log_density, transition : callable
        As in :mod:`skdgm._core.ais`.
    sample_target : callable
        ``sample_target(n_runs, rng)``: draws of the target, leading axis runs.
    betas : array-like
        The *forward* schedule (0 to 1); it is walked backwards here.

    Returns
    -------
    log_w : ndarray of shape (n_runs, ...)
    """
    betas = np.asarray(betas, dtype=float)
    state = sample_target(n_runs, rng)
    return ais_log_weights(n_runs, rng, log_density=log_density, transition=transition,
                           sample_base=None, betas=betas[::-1], state=state)


def _bdmc_group(task, rng, *, log_density, transition, sample_base, sample_target, betas):
    direction, n_runs = task
    if direction == "forward":
        return ais_log_weights(n_runs, rng, log_density=log_density, transition=transition,
                               sample_base=sample_base, betas=betas)
    return reverse_ais_log_weights(n_runs, rng, log_density=log_density,
                                   transition=transition, sample_target=sample_target,
                                   betas=betas)


def bidirectional_monte_carlo(log_density, transition, sample_base, sample_target, log_z0,
                              betas, n_runs, *, n_groups=None, exact_start=True,
                              target="log_partition", exact=None, random_state=None,
                              n_jobs=None):
    """Stochastic lower and upper bounds on ``log Z`` of ``f_1`` (forward and reverse AIS).

    Parameters
    ----------
    log_density, transition, sample_base : callable
        The model, as for :func:`skdgm._core.ais.annealed_importance_sampling`
        (picklable when the runs go to other processes).
    sample_target : callable
        ``sample_target(n_runs, rng)``: exact draws of the normalised target
        ``f_1 / Z_1`` (or the best available approximation; see ``exact_start``),
        leading axis runs. Called once per reverse group with that group's
        generator.
    log_z0 : float or ndarray
        Log normaliser of ``f_0`` (per trailing index).
    betas : int or array-like
        The forward schedule, or a count for a sigmoid-spaced one (the estimators'
        AIS schedule).
    n_runs : int
        Runs in *each* direction (with one run there is no spread to estimate:
        the standard errors read 0).
    n_groups : int, optional
        Groups per direction, each vectorised in one worker with its own stream;
        default ``min(n_runs, 8)``. The split depends on ``n_runs`` and
        ``n_groups`` only.
    exact_start : bool, default=True
        Whether ``sample_target`` is exact (recorded in the result).
    target : str, default="log_partition"
        Recorded in the result.
    exact : float or ndarray, optional
        The exact value, when known (recorded in the result).
    random_state : None, int, SeedSequence, Generator or RandomState
    n_jobs : int, optional
        Workers (the result does not depend on it).

    Returns
    -------
    result : BDMCResult
        ``lower``, ``upper``, ... per trailing index of the state.
    """
    betas, sizes = check_schedule(betas, n_runs, n_groups, kind="sigmoid")
    tasks = [("forward", n) for n in sizes] + [("reverse", n) for n in sizes]
    # seed_for: a SeedSequence is a seed (copied, not advanced), as in the estimators
    parts = run_chains(_bdmc_group, tasks, random_state=seed_for(random_state), n_jobs=n_jobs,
                       log_density=log_density, transition=transition,
                       sample_base=sample_base, sample_target=sample_target, betas=betas)
    log_w = np.concatenate(parts[:len(sizes)], axis=0)
    log_u = np.concatenate(parts[len(sizes):], axis=0)
    log_z0 = np.asarray(log_z0, dtype=float)
    lower = log_z0 + log_mean_exp(log_w, axis=0)
    upper = log_z0 - log_mean_exp(log_u, axis=0)
    se_l = importance_std_err(log_w)
    se_u = importance_std_err(log_u)
    return BDMCResult(lower=lower[()], upper=upper[()], gap=(upper - lower)[()],
                      lower_std_err=se_l[()], upper_std_err=se_u[()],
                      gap_std_err=np.hypot(se_l, se_u)[()], n_betas=len(betas),
                      exact_start=bool(exact_start), target=target,
                      exact=None if exact is None else np.asarray(exact)[()],
                      n_samples=int(np.size(lower)))


def average_over_points(result):
    """The mean over points of a per-point :class:`BDMCResult`.

    The points' paths use independent random numbers, so the standard error of a
    mean is ``sqrt(sum se_i^2) / n``.
    """
    lower = np.atleast_1d(result.lower)
    n = lower.size

    def mean(a):
        return float(np.mean(np.atleast_1d(a)))

    def se(a):
        return float(np.sqrt(np.sum(np.square(np.atleast_1d(a)))) / n)

    exact = None if result.exact is None else mean(result.exact)
    return result._replace(lower=mean(result.lower), upper=mean(result.upper),
                           gap=mean(result.gap), lower_std_err=se(result.lower_std_err),
                           upper_std_err=se(result.upper_std_err),
                           gap_std_err=se(result.gap_std_err), exact=exact, n_samples=n)


def _gap_limit(res):
    return abs(float(res.gap)) + 2.0 * float(res.gap_std_err)


def choose_n_betas(run, tol, *, start=None, max_betas=None, what=""):
    """Double the temperature count until the BDMC gap is below ``tol`` nats.

    The test is ``|gap| + 2 * gap_std_err < tol``: the gap's estimate is noisy,
    so the count is accepted only when a two-standard-error interval around it
    lies within ``(-tol, tol)``. A gap well below zero is not convergence: the
    bounds contradict each other (heavy-tailed weights whose standard errors are
    unreliable, or reverse runs not started from the target), and it keeps the
    search going like a large positive one.

    Parameters
    ----------
    run : callable
        ``run(n_betas) -> BDMCResult`` with scalar fields (e.g. averaged over
        simulated points).
    tol : float
        The gap to reach, in nats (``gap < tol``).
    start, max_betas : int, optional
        First count, and the cap (the last count tried is ``max_betas``); default
        :data:`skdgm._core.bdmc.AUTO_START_BETAS` and
        :data:`skdgm._core.bdmc.AUTO_MAX_BETAS`.
    what : str
        Who asks, for the warning.

    Returns
    -------
    result : BDMCResult
        The last run (``converged`` False when the cap was hit).

    Warns
    -----
    ConvergenceWarning
        When ``|gap| + 2 * gap_std_err`` is still ``>= tol`` at ``max_betas``
        temperatures, naming the gap reached.
    """
    tol = float(tol)
    if not tol > 0:
        raise ValueError(f"tol must be a positive number of nats, got {tol!r}")
    start = AUTO_START_BETAS if start is None else int(start)
    max_betas = AUTO_MAX_BETAS if max_betas is None else int(max_betas)
    if not 2 <= start <= max_betas:
        raise ValueError(f"need 2 <= start <= max_betas, got start={start}, "
                         f"max_betas={max_betas}")
    n = start
    while True:
        res = run(n)
        if _gap_limit(res) < tol:
            return res._replace(converged=True)
        if n >= max_betas:
            break
        n = min(2 * n, max_betas)
    who = f"{what}: " if what else ""
    warnings.warn(
        f"{who}the BDMC gap is still {float(res.gap):.3g} nats (standard error "
        f"{float(res.gap_std_err):.2g}; |gap| + 2 std err = {_gap_limit(res):.3g}) at the "
        f"cap of {n} inverse temperatures, not below tol={tol:g}; the AIS estimate may "
        f"be off by up to about that much. Raise the cap or tol, or use more runs.",
        ConvergenceWarning, stacklevel=3)
    return res._replace(converged=False)


def check_bounds_args(n_samples, n_betas, tol):
    """Validate the arguments of the estimators' ``log_likelihood_bounds``.

    Raises a ``ValueError`` naming the argument: ``n_samples`` must be a
    positive int, ``n_betas`` an int >= 2 or ``"auto"``, ``tol`` a positive
    number of nats.
    """
    def is_int(v):
        return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))

    if not is_int(n_samples) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive int, got {n_samples!r}")
    if not (n_betas == "auto" if isinstance(n_betas, str) else is_int(n_betas) and n_betas >= 2):
        raise ValueError(f"n_betas must be an int >= 2 or 'auto', got {n_betas!r}")
    if (not isinstance(tol, numbers.Real) or isinstance(tol, (bool, np.bool_))
            or not np.isfinite(tol) or tol <= 0):
        raise ValueError(f"tol must be a positive number of nats, got {tol!r}")


def bounds_at(run, *, n_samples, n_betas, tol, random_state, purpose, what=""):
    """Validate, seed, and run a wing's BDMC at ``n_betas`` temperatures or ``"auto"``.

    The part of every estimator's ``log_likelihood_bounds`` that knows no model:
    :func:`check_bounds_args`, one stream ``seed_for(random_state, purpose)`` (a
    ``Generator`` is advanced once, after the arguments are checked) used by every
    round, and :func:`choose_n_betas` for ``"auto"``.

    Parameters
    ----------
    run : callable
        ``run(n_betas, seed) -> BDMCResult``: the wing's sandwich at ``n_betas``
        temperatures with ``n_samples`` runs each way.
    n_samples, n_betas, tol
        As the estimators' ``log_likelihood_bounds``.
    random_state : None, int, SeedSequence, Generator or RandomState
    purpose : int
        Appended to the spawn key of an int seed, so that these streams never
        coincide with the estimator's training streams.
    what : str
        Named in the warning when ``"auto"`` stops at its cap.

    Returns
    -------
    result : BDMCResult
    """
    check_bounds_args(n_samples, n_betas, tol)
    seed = seed_for(random_state, purpose)
    if n_betas == "auto":
        return choose_n_betas(lambda n: run(n, seed), tol, what=what)
    return run(n_betas, seed)
